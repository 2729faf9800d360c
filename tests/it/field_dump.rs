//! `simulate --dump-fields --vtk`: the field magnitudes parse as a VTK
//! rectilinear grid on the mesh, are finite, and show the TE10 shape across a
//! waveguide (|E| ~ sin(pi x / a)); and the CUDA field DFT kernel on the CPU
//! emulation of the device agrees with the CPU engine (where g++ exists).

use crate::common::skip;

use std::path::Path;
use std::process::Command;

fn emvolve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve")).args(args).output().expect("runs");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn data(node: roxmltree::Node, name: &str) -> Vec<f64> {
    let n = node.descendants().find(|n| n.has_tag_name("DataArray") && n.attribute("Name") == Some(name)).unwrap_or_else(|| panic!("no {name}"));
    n.text().unwrap_or("").split_whitespace().map(|t| t.parse().unwrap()).collect()
}

#[test]
fn dumped_fields_parse_and_show_the_te10_profile_across_the_guide() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, vtk) = (tmp.path().join("run"), tmp.path().join("vtk"));
    let design = "tests/fixtures/uniform/wr28_iris_filter.ron";
    let (ok, text) = emvolve(&["simulate", design, "--backend", "cpu", "--out", out.to_str().unwrap(), "--dump-fields", "31.5GHz,27e9", "--vtk", vtk.to_str().unwrap()]);
    assert!(ok, "{text}");
    for f in ["wr28_iris_filter_fields.vtm", "wr28_iris_filter.vtr", "E_slice_31.5GHz.png", "E_slice_27GHz.png"] {
        assert!(vtk.join(f).is_file(), "{f} missing: {text}");
    }
    let vtm = std::fs::read_to_string(vtk.join("wr28_iris_filter_fields.vtm")).unwrap();
    let doc = roxmltree::Document::parse(&vtm).unwrap();
    let files: Vec<&str> = doc.descendants().filter_map(|n| n.attribute("file")).collect();
    assert_eq!(files, ["wr28_iris_filter_fields.vtr", "wr28_iris_filter_sheets.vtp", "wr28_iris_filter_ports.vtp"]);
    assert!(files.iter().all(|f| vtk.join(f).is_file()));
    let vtr = std::fs::read_to_string(vtk.join(files[0])).unwrap();
    let doc = roxmltree::Document::parse(&vtr).unwrap();
    let grid = doc.descendants().find(|n| n.has_tag_name("RectilinearGrid")).unwrap();
    let ext: Vec<usize> = grid.attribute("WholeExtent").unwrap().split(' ').map(|t| t.parse().unwrap()).collect();
    let n = [ext[1], ext[3], ext[5]];
    let (x, y, z) = (data(grid, "x"), data(grid, "y"), data(grid, "z"));
    assert_eq!([x.len(), y.len(), z.len()], [n[0] + 1, n[1] + 1, n[2] + 1]);
    let cells = n[0] * n[1] * n[2];
    for name in ["E_mag_31.5GHz", "H_mag_31.5GHz", "E_mag_27GHz", "H_mag_27GHz", "material"] {
        let v = data(grid, name);
        assert_eq!(v.len(), cells, "{name}");
        assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0), "{name}");
    }
    // In the pass band the resonators ring: at the row across the guide (along x,
    // the broad wall; the one cell along y spans the narrow wall) where |E| peaks,
    // the field is the TE10 mode's sin(pi x / a), a = 7.112 mm.
    let e = data(grid, "E_mag_31.5GHz");
    let row = |k: usize| -> Vec<f64> { (0..n[0]).map(|i| e[k * n[0] * n[1] + i]).collect() };
    let k = (0..n[2]).max_by(|&a, &b| row(a).iter().sum::<f64>().total_cmp(&row(b).iter().sum::<f64>())).unwrap();
    let r = row(k);
    let a = x[n[0]] - x[0];
    assert!((a - 7.112e-3).abs() < 1e-6, "guide width {a}");
    let s: Vec<f64> = (0..n[0]).map(|i| (std::f64::consts::PI * (0.5 * (x[i] + x[i + 1]) - x[0]) / a).sin()).collect();
    let amp = r.iter().zip(&s).map(|(p, q)| p * q).sum::<f64>() / s.iter().map(|q| q * q).sum::<f64>();
    let peak = r.iter().copied().fold(0.0, f64::max);
    assert!(peak > 0.0);
    let worst = r.iter().zip(&s).map(|(p, q)| (p - amp * q).abs()).fold(0.0, f64::max) / peak;
    assert!(worst < 0.03, "row {k} (z = {:.2} mm) differs from TE10 by {worst:.3} of its peak: {r:?}", 0.5e3 * (z[k] + z[k + 1]));
    // Bad requests are named.
    let (ok, text) = emvolve(&["simulate", design, "--backend", "cpu", "--out", out.to_str().unwrap(), "--dump-fields", "50GHz", "--vtk", vtk.to_str().unwrap()]);
    assert!(!ok && text.contains("outside the design's band"), "{text}");
    let (ok, text) = emvolve(&["simulate", design, "--backend", "cpu", "--dump-fields", "30GHz"]);
    assert!(!ok && text.contains("--vtk"), "{text}");
}

/// The CUDA FDTD kernels (with `fdtd_dft`) built as C++ for the CPU emulation
/// of the device, every check job carrying three field DFT monitors: the
/// monitors, fields and traces must match the CPU engine.
#[test]
fn cuda_field_dft_on_the_emulated_device_matches_the_cpu() {
    if Command::new("g++").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        skip::skipped("cuda_field_dft_on_the_emulated_device_matches_the_cpu", "no g++ to build the kernel emulation (scripts/kernel-emu.sh runs it elsewhere)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("libfdtdemu.so");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let st = Command::new("g++")
        .args(["-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-Wno-unknown-pragmas", "-DEMV_TX=8", "-DEMV_TY=4", "-DEMV_NS=4", "-o"])
        .arg(&lib)
        .arg(root.join("scripts/kernel-emu/lib.cpp"))
        .status()
        .unwrap();
    assert!(st.success(), "building the emulation library failed");
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve-lab")).args(["kernel-emu", "--lib", lib.to_str().unwrap(), "--steps", "5"]).output().expect("runs");
    let (ok, text) = (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    assert!(ok, "{text}");
    assert!(text.contains("DFT 0.0e0") && text.contains("kernel-emu PASS"), "{text}");
}
