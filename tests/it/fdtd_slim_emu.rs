//! The two-step pass (kernels/fdtd_slim.cuh, for slim designs) on the CPU
//! emulation of the device, through the CUDA backend's planner and stepping
//! loop, against the CPU engine (`dev kernel-emu --two-step`): every field
//! position after 6 steps from random fields, the port traces and the
//! energy, chunks of 4 planes (boundaries kept off the CPML), chunks of 3
//! steps so that every other chunk ends on the one-step kernel. The six
//! slim designs (guides with TE10 ports, 3D, 2.5D and graded, and a PEC
//! cavity) must take the pass; the wide ones (CPML boxes, the 2D job, tiled
//! planes) and the four with PMC faces run beside them one step a pass.
//! Tolerance 1e-6 relative (the fields agree bit for bit; the f64 port sums
//! are added in another order).

use std::process::Command;

#[test]
fn the_emulated_two_step_pass_matches_the_cpu_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("libfdtd.so");
    emvolve::engine::device::emu::build_library("scripts/kernel-emu/lib.cpp", &lib, &["-DEMV_TX=32", "-DEMV_TY=8", "-DEMV_NS=4"]).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve-lab"))
        .args(["kernel-emu", "--lib", lib.to_str().unwrap(), "--two-step", "--steps", "6", "--trace-chunk", "3"])
        .output()
        .expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("kernel-emu PASS"), "{text}");
    // 17 designs: the conformal one streams one step a pass (its faces need their pass every step).
    assert!(text.contains("17 streaming, 6 of them two steps a pass"), "{text}");
    // Bit for bit: no field difference on any design.
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(" E ") && l.contains(" H ") && l.ends_with("ok")).collect();
    assert_eq!(rows.len(), 17, "{text}");
    assert!(rows.iter().all(|l| l.contains("E 0.0e0 H 0.0e0")), "{text}");
}
