//! What an RF engineer gets from `simulate`, `sweep` and `export`: Touchstone
//! files that read back to the same numbers with the reference impedance they
//! were computed with, `--params` re-simulating a saved point, a sweep whose
//! points agree with single simulations, and VTK files that parse.

use std::path::Path;
use std::process::Command;

use emvolve::analysis::touchstone_read;

fn emvolve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve")).args(args).output().expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

const FILTER: &str = "designs/wr28_iris_filter.ron";
const POINT: [&str; 8] = ["--set", "w1=3.5", "--set", "w2=2.5", "--set", "l1=5.3", "--set", "l2=5.9"];

/// `sparams.csv` as (header, rows of numbers).
fn csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head = lines.next().unwrap().split(',').map(String::from).collect();
    (head, lines.map(|l| l.split(',').map(|t| t.parse().unwrap()).collect()).collect())
}

#[test]
fn waveguide_touchstone_reads_back_with_its_wave_impedance_and_params_resimulate() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let mut args = vec!["simulate", FILTER, "--backend", "cpu", "--out", a.to_str().unwrap()];
    args.extend(POINT);
    let (ok, text) = emvolve(&args);
    assert!(ok, "{text}");
    for f in ["sparams.png", "phase.png", "smith.png", "impedance.png", "sparams.csv"] {
        assert!(a.join(f).is_file(), "{f} missing: {text}");
    }
    let net = touchstone_read::read(&a.join("wr28_iris_filter.s2p")).unwrap();
    assert_eq!(net.ports, vec!["in", "out"]);
    assert_eq!(net.freqs.len(), 241);
    // The reference is the TE10 wave impedance of WR-28 (a = 7.112 mm) at each frequency.
    let fc = 299_792_458.0 / (2.0 * 7.112e-3);
    let eta0 = 376.730_313_412;
    for (k, f) in net.freqs.iter().enumerate() {
        let want = eta0 / (1.0 - (fc / f).powi(2)).sqrt();
        for p in 0..2 {
            assert!((net.zref[p][k].re / want - 1.0).abs() < 1e-9 && net.zref[p][k].im == 0.0, "{f} Hz: {} vs {want}", net.zref[p][k]);
        }
    }
    // Touchstone and the CSV carry the same numbers, bit for bit.
    let (head, rows) = csv(&a.join("sparams.csv"));
    let col = |name: &str| head.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[0], net.freqs[k]);
        for (i, j) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
            let s = net.s[i - 1][j - 1][k];
            assert_eq!((row[col(&format!("S{i}{j}_re"))], row[col(&format!("S{i}{j}_im"))]), (s.re, s.im), "S{i}{j} at {k}");
        }
        assert_eq!(row[col("zref2_re_ohm")], net.zref[1][k].re);
        // Input impedance is the reflection seen through the reference: Z (1 + S11) / (1 - S11).
        let s11 = net.s[0][0][k];
        let zin = net.zref[0][k] * (1.0 + s11) / (1.0 - s11);
        assert!((row[col("zin1_re_ohm")] - zin.re).abs() <= 1e-9 * zin.norm());
    }
    // A lossless filter: |S11|^2 + |S21|^2 = 1 within the discretisation's reach above cutoff.
    let k = 110;
    let p = net.s[0][0][k].norm_sqr() + net.s[1][0][k].norm_sqr();
    assert!((p - 1.0).abs() < 1e-2, "power balance {p} at {} Hz", net.freqs[k]);

    // The same point from a parameters file gives the same file.
    let params = tmp.path().join("parameters.ron");
    std::fs::write(&params, "{\"generation\": 3, \"parameters\": {\"l1\": 5.3, \"l2\": 5.9, \"w1\": 3.5, \"w2\": 2.5}, \"objectives\": Some([1.0])}").unwrap();
    let b = tmp.path().join("b");
    let (ok, text) = emvolve(&["simulate", FILTER, "--backend", "cpu", "--params", params.to_str().unwrap(), "--out", b.to_str().unwrap()]);
    assert!(ok, "{text}");
    let read = |d: &Path| std::fs::read_to_string(d.join("wr28_iris_filter.s2p")).unwrap();
    assert_eq!(read(&a), read(&b));
    // A name the design does not have is refused, naming the file and the name.
    std::fs::write(&params, "{\"parameters\": {\"w9\": 3.0}}").unwrap();
    let (ok, text) = emvolve(&["simulate", FILTER, "--backend", "cpu", "--params", params.to_str().unwrap()]);
    assert!(!ok && text.contains("w9") && text.contains("parameters.ron"), "{text}");
}

#[test]
fn sweep_points_agree_with_single_simulations_and_bad_grids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    let (ok, text) = emvolve(&[
        "sweep", FILTER, "--backend", "cpu", "--param", "w1=3.0:4.0:3", "--set", "w2=2.5", "--set", "l1=5.3", "--set", "l2=5.9", "--batch", "2",
        "--quiet", "--touchstone", "--out", out.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    assert!(text.contains("3 points simulated") && text.contains("3/3 points"), "{text}");
    // --touchstone: every point's full 2-port matrix, named after its (dotted) value.
    let mut points: Vec<String> = std::fs::read_dir(out.join("points")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    points.sort();
    assert_eq!(points, ["0000_w1=3.s2p", "0001_w1=3.5.s2p", "0002_w1=4.s2p"]);
    let mid_ts = std::fs::read_to_string(out.join("points").join(&points[1])).unwrap();
    assert!(mid_ts.contains("Port[2] = out") && mid_ts.contains("w1=3.5"), "{mid_ts}");
    assert!(out.join("sweep.png").is_file() && out.join("response.png").is_file());
    let body = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 4, "{body}");
    assert!(lines[0].starts_with("w1 (mm),status,fitness (dB^2),|S21| > -1 dB over 31.0-32.1 GHz: margin (dB),"), "{}", lines[0]);
    let mid: Vec<&str> = lines[2].split(',').collect();
    assert_eq!((mid[0], mid[1]), ("3.5", "ok"));
    // The middle point is the point simulated alone.
    let single = tmp.path().join("single");
    let mut args = vec!["simulate", FILTER, "--backend", "cpu", "--out", single.to_str().unwrap()];
    args.extend(POINT);
    let (ok, text) = emvolve(&args);
    assert!(ok, "{text}");
    let fit: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(single.join("fitness.json")).unwrap()).unwrap();
    assert_eq!(mid[2].parse::<f64>().unwrap(), fit["fitness"]["total"].as_f64().unwrap());
    // Margin (dB) = worst - level for "above" goals: goal 1 is |S21| > -1 dB.
    let worst: f64 = mid[4].parse().unwrap();
    assert_eq!(mid[3].parse::<f64>().unwrap(), worst + 1.0);
    // Out of bounds: refused before anything runs, naming the point; w2 < w1 broken: skipped, not failed.
    let (ok, text) = emvolve(&["sweep", FILTER, "--backend", "cpu", "--param", "w1=4:6:3", "--out", out.to_str().unwrap()]);
    assert!(!ok && text.contains("sweep point w1=6"), "{text}");
    let (ok, text) = emvolve(&["sweep", FILTER, "--backend", "cpu", "--param", "w2=3.9:4:2", "--set", "w1=3", "--quiet", "--out", out.to_str().unwrap()]);
    assert!(!ok && text.contains("0 points simulated") && text.contains("2 skipped (constraints)"), "{text}");
    assert!(std::fs::read_to_string(out.join("sweep.csv")).unwrap().contains("skipped: constraint violated"));
}

/// The `DataArray` named `name` under `node`, as numbers.
fn data(node: roxmltree::Node, name: &str) -> Vec<f64> {
    let n = node.descendants().find(|n| n.has_tag_name("DataArray") && n.attribute("Name") == Some(name)).unwrap_or_else(|| panic!("no {name}"));
    n.text().unwrap_or("").split_whitespace().map(|t| t.parse().unwrap()).collect()
}

#[test]
fn export_writes_vtk_that_parses_and_matches_the_geometry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("vtk");
    let (ok, text) = emvolve(&["export", "tests/fixtures/uniform/patch_2g4.ron", "--set", "L=28.8", "--set", "W=38.4", "--vtk", dir.to_str().unwrap()]);
    assert!(ok, "{text}");
    // The multiblock file names the three others, which exist.
    let vtm = std::fs::read_to_string(dir.join("patch_2g4.vtm")).unwrap();
    let doc = roxmltree::Document::parse(&vtm).unwrap();
    let files: Vec<&str> = doc.descendants().filter_map(|n| n.attribute("file")).collect();
    assert_eq!(files, ["patch_2g4.vtr", "patch_2g4_sheets.vtp", "patch_2g4_ports.vtp"]);
    let vtr = std::fs::read_to_string(dir.join(files[0])).unwrap();
    let doc = roxmltree::Document::parse(&vtr).unwrap();
    let grid = doc.descendants().find(|n| n.has_tag_name("RectilinearGrid")).unwrap();
    let ext: Vec<usize> = grid.attribute("WholeExtent").unwrap().split(' ').map(|t| t.parse().unwrap()).collect();
    let n = [ext[1], ext[3], ext[5]];
    let (x, y, z) = (data(grid, "x"), data(grid, "y"), data(grid, "z"));
    assert_eq!([x.len(), y.len(), z.len()], [n[0] + 1, n[1] + 1, n[2] + 1]);
    assert!(x.windows(2).all(|w| (w[1] - w[0] - 0.8e-3).abs() < 1e-12), "0.8 mm cells");
    let cells = n[0] * n[1] * n[2];
    let eps = data(grid, "eps_r");
    let absorbing = data(grid, "absorbing");
    assert_eq!((eps.len(), absorbing.len(), data(grid, "material").len()), (cells, cells, cells));
    // FR-4 (4.3) fills the cells below h = 1.6 mm, air above; the domain starts at z = 0 (a PEC face).
    for k in 0..n[2] {
        let zc = 0.5 * (z[k] + z[k + 1]);
        let e = eps[k * n[0] * n[1] + (n[1] / 2) * n[0] + n[0] / 2];
        assert_eq!(e, if zc < 1.6e-3 { 4.3 } else { 1.0 }, "z = {zc}");
    }
    // Absorbing padding on the open faces only: the centre is not, a corner is.
    assert_eq!(absorbing[(n[2] / 2 * n[1] + n[1] / 2) * n[0] + n[0] / 2], 0.0);
    assert_eq!(absorbing[cells - 1], 1.0);
    // The patch is the sheet at z = h spanning L x W; the ground is another sheet at z = 0.
    let vtp = std::fs::read_to_string(dir.join(files[1])).unwrap();
    let doc = roxmltree::Document::parse(&vtp).unwrap();
    let piece = doc.descendants().find(|n| n.has_tag_name("Piece")).unwrap();
    let pts = data(piece, "Points");
    let quads: usize = piece.attribute("NumberOfPolys").unwrap().parse().unwrap();
    assert_eq!(pts.len(), 12 * quads);
    let patch: Vec<&[f64]> = pts.chunks(12).filter(|q| (q[2] - 1.6e-3).abs() < 1e-9).collect();
    assert_eq!(patch.len(), 1, "{pts:?}");
    let q = patch[0];
    let (dx, dy) = (q[3] - q[0], q[7] - q[4]);
    assert!((dx - 28.8e-3).abs() < 1e-9 && (dy - 38.4e-3).abs() < 1e-9, "patch {dx} x {dy}");
    let offsets = data(piece.descendants().find(|n| n.has_tag_name("Polys")).unwrap(), "offsets");
    assert_eq!(offsets.last().copied(), Some(4.0 * quads as f64));
    // One port: the probe, a line from the ground to the patch.
    let ports = std::fs::read_to_string(dir.join(files[2])).unwrap();
    let doc = roxmltree::Document::parse(&ports).unwrap();
    let piece = doc.descendants().find(|n| n.has_tag_name("Piece")).unwrap();
    assert_eq!(piece.attribute("NumberOfLines"), Some("1"));
    let p = data(piece, "Points");
    assert!(p[2].abs() < 1e-12 && (p[5] - 1.6e-3).abs() < 1e-12, "{p:?}");
    let (ok, text) = emvolve(&["export", "tests/fixtures/uniform/patch_2g4.ron", "--set", "L=99", "--vtk", dir.to_str().unwrap()]);
    assert!(!ok && text.contains("L"), "{text}");
}
