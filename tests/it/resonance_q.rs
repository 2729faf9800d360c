//! Resonances and their Q through the whole chain: a design file's parallel
//! R-L-C load across a lumped port, simulated on the CPU by `emvolve
//! simulate`; the loaded and unloaded Q that `resonances.json` gives against
//! the circuit's own, `Q0 = R sqrt(C / L)` and `QL = Q0 / (1 + beta)` with
//! `beta = R / 50 ohm`.

use std::f64::consts::PI;

use crate::common::cli::emvolve;

#[test]
fn a_parallel_rlc_load_at_a_port_gives_its_unloaded_q() {
    // Q0 = 20, critically coupled (R = 50 ohm): QL = 10, at 0.3 GHz, where the
    // 1 mm loop closing the load (about 1 nH, j1.9 ohm) is a small lossless
    // addition to the coupling, which the unloaded Q does not count.
    let (f0, q0, r) = (0.3e9, 20.0, 50.0);
    let w0 = 2.0 * PI * f0;
    let c = q0 / (w0 * r);
    let l = 1.0 / (w0 * w0 * c);
    let text = format!(
        r#"Design(
            name: "rlc_port",
            units: Millimetre,
            parameters: {{ "x": Real(min: 1.9, max: 2.1) }},
            geometry: [
                Sheet(min: (1, 2, 1), max: (2, 2.5, 1)),
                Load(name: "tank", from: (2, 2, 0), to: (2, 2, 1), r: {r}, l: {l:e}, c: {c:e}, parallel: true),
            ],
            domain: (x: (0, 4), y: (0, 4), z: (0, 2)),
            boundaries: (x: Pec, y: Pec, z: Pec),
            ports: [Lumped(name: "p", from: (1, 2, 0), to: (1, 2, 1))],
            band: (start: 0.2e9, stop: 0.4e9, points: 101),
            engine: Fdtd(cell: 0.25, decay_db: -80, max_steps: 1000000),
            goals: [Goal(s: (1, 1), band: (0.29e9, 0.31e9), below_db: -10.0)],
        )"#
    );
    let tmp = tempfile::tempdir().unwrap();
    let design = tmp.path().join("rlc_port.ron");
    std::fs::write(&design, text).unwrap();
    let out = tmp.path().join("out");
    let (ok, log) = emvolve(&["simulate", design.to_str().unwrap(), "--set", "x=2", "--backend", "cpu", "--out", out.to_str().unwrap()]);
    assert!(ok, "{log}");
    assert!(log.contains("resonance at 0.3"), "the terminal names the resonance: {log}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("resonances.json")).unwrap()).unwrap();
    let found = json["resonances"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{json:#}");
    let res = &found[0];
    let (f, ql, q) = (res["f0_hz"].as_f64().unwrap(), res["q_loaded"].as_f64().unwrap(), res["q_unloaded"].as_f64().unwrap());
    eprintln!("parallel RLC at a port: f0 {f:.6e} Hz, QL {ql:.3}, Q0 {q:.3} (circuit: 3e8, 10, 20), fit residual {}", res["residual"]);
    assert!((f / f0 - 1.0).abs() < 0.02, "f0 {f}");
    assert!((q / q0 - 1.0).abs() < 0.03, "Q0 {q} against {q0}");
    assert!((ql / (q0 / 2.0) - 1.0).abs() < 0.05, "QL {ql} against {}", q0 / 2.0);
    // A one-port has no power balance to plot.
    assert!(!out.join("loss.png").exists() && !out.join("loss.csv").exists());
}
