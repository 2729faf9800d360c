//! The 2D TLM on-chip kernel (kernels/tlm_onchip.cu) on the CPU emulation of
//! the device, through the CUDA backend's planner and stepping loop, against
//! the CPU engine: the shipped iris filter in 2D (both drives, ending by decay
//! at different steps), the loaded 2D check job (stubs on chip, losses, PEC,
//! sheet, two lumped ports) and a job that must fail (NaN source), all
//! checking every 50 steps so that one launch spans three checks and jobs end
//! at different checks inside it. Tolerance 1e-9 relative (`dev tlm-emu`'s
//! default): the node pulses are the CPU's bit for bit, only the f64 sums
//! (guide-end mode amplitude and convolution, port signals, energy) are added
//! in another order (measured: 1.6e-15).

use std::path::Path;
use std::process::Command;

fn build(src: &str, out: &Path, defines: &[&str]) {
    emvolve::engine::device::emu::build_library(src, out, defines).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_emulated_onchip_path_matches_the_cpu_engine_on_2d_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let (lib, oclib) = (tmp.path().join("libtlm.so"), tmp.path().join("libtlmoc.so"));
    build("scripts/tlm-emu/emu.cpp", &lib, &["-DTLM_THREADS=32", "-DTLM_NPT=2", "-DTLM_PORT_THREADS=32", "-DTLM_SPLIT=0"]);
    build("scripts/tlm-emu/onchip.cpp", &oclib, &["-DTLM_OC_NT=64"]);
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve-lab"))
        .args(["tlm-emu", "--lib", lib.to_str().unwrap(), "--onchip-lib", oclib.to_str().unwrap(), "--only-2d", "--check-every", "50"])
        .output()
        .expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("4 designs on-chip") && text.contains("tlm-emu on-chip PASS"), "{text}");
    // The two drives of the filter end by decay at different checks.
    let steps: Vec<&str> = text.lines().filter(|l| l.contains("wr28_iris_filter") && l.starts_with("[emu onchip]")).collect();
    assert_eq!(steps.len(), 2, "{text}");
    assert!(steps.iter().all(|l| l.contains("decay")) && steps[0].split("steps").nth(1) != steps[1].split("steps").nth(1), "{text}");
}
