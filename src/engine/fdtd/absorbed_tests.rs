//! The absorbed-power bookkeeping against closed cavities (nothing radiates,
//! so everything the port accepts is absorbed: P_abs / P_acc = 1 at every
//! frequency the cavity takes power at), one loss mechanism at a time, and
//! its discrete weights against the engine's stored coefficients and the
//! continuous formulas.
//!
//! The runs ring down to -100 dB: a DFT cut off at -60 dB leaves the
//! stored energy's boundary term, a ripple across the band of up to 5 % in
//! the 1e5 S/m cavity (Q ~ 100), 2.6 % with the loads. At -100 dB every
//! case balances within 1e-3 (tan delta: 5e-7).

use std::collections::BTreeMap;

use num_complex::Complex64;

use super::*;
use crate::analysis::dft::dft;
use crate::design::Design;
use crate::job::{Monitor, MonitorOutput, SimJob};

/// A 30 x 24 x 12 mm PEC box on 1 mm cells fed by a probe (a one-cell
/// lumped port from the floor into a 7 mm PEC post: one edge, so its V and
/// I are those of one branch), `materials`, `geometry` and `walls` spliced in.
fn cavity(materials: &str, geometry: &str, walls: &str) -> SimJob {
    let text = format!(
        r#"Design(
            name: "cavity",
            units: Millimetre,
            materials: {{ {materials} }},
            geometry: [{geometry} Box(material: "Pec", min: (7, 7, 1), max: (8, 8, 8))],
            domain: (x: (0, 30), y: (0, 24), z: (0, 12)),
            boundaries: (x: Pec, y: Pec, z: Pec{walls}),
            ports: [Lumped(name: "p", from: (7, 7, 0), to: (7, 7, 1), r: 50.0)],
            band: (start: 4e9, stop: 9e9, points: 51),
            engine: Fdtd(cell: 1, decay_db: -100, max_steps: 400000),
            goals: [Goal(s: (1, 1), band: (5e9, 6e9), below_db: 0.0)],
        )"#
    );
    let d = Design::parse(&text, "cavity.ron").unwrap_or_else(|e| panic!("{e}"));
    let mut job = d.jobs(&BTreeMap::new(), &[0], None).unwrap().remove(0);
    let n = job.mesh.n();
    job.monitors = vec![Monitor::Absorbed { name: "absorbed".into(), lo: [0; 3], hi: n, freqs: job.freqs.clone() }];
    job
}

/// A cavity with all three losses (1e5 S/m walls, a wideband FR-4 floor
/// slab, an R-C load) and its absorbed-power monitor over the whole box.
pub(crate) fn lossy_cavity() -> SimJob {
    cavity(
        r#""brass": Metal(conductivity: 1e5), "fr4": Dielectric(eps_r: 4.3, tan_delta: 0.02, loss: Wideband)"#,
        r#"Box(material: "fr4", min: (0, 0, 0), max: (30, 24, 3)), Load(name: "rc", from: (22, 16, 0), to: (22, 16, 12), r: 100, c: 1e-12),"#,
        r#", walls: "brass""#,
    )
}

/// Per frequency (P_acc, conductor, dielectric, loads) of `job` on the CPU.
fn balance(job: &SimJob) -> Vec<(f64, f64, f64, f64, f64)> {
    let out = crate::engine::fdtd::cpu_batch::run(job).unwrap();
    let tr = &out.traces[0];
    let v = dft(&tr.v, out.dt, out.v_offset, &job.freqs);
    let i = dft(&tr.i, out.dt, out.i_offset, &job.freqs);
    let MonitorOutput::Absorbed { freqs, conductor, dielectric, loads, .. } = &out.monitors[0] else { panic!("not an absorbed-power output") };
    assert_eq!(freqs, &job.freqs);
    (0..freqs.len()).map(|k| (freqs[k], 0.5 * (v[k] * i[k].conj()).re, conductor[k], dielectric[k], loads[k])).collect()
}

/// Worst |P_abs / P_acc - 1| where the cavity takes at least a tenth of its
/// largest accepted power, and the loss it checks (index into the tuple).
fn worst(rows: &[(f64, f64, f64, f64, f64)], what: &str) -> f64 {
    let pmax = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    assert!(pmax > 0.0);
    let mut worst = 0.0f64;
    let mut used = 0;
    for &(f, acc, c, d, l) in rows.iter().filter(|r| r.1 > 0.1 * pmax) {
        let abs = c + d + l;
        eprintln!("  {what} {:.2} GHz: P_acc {:.3} of its largest, P_abs / P_acc - 1 = {:+.2e}", f * 1e-9, acc / pmax, abs / acc - 1.0);
        worst = worst.max((abs / acc - 1.0).abs());
        used += 1;
        assert!(abs / acc > 0.9, "{what} at {:.3} GHz: absorbed {abs:.4e} of accepted {acc:.4e}", f * 1e-9);
    }
    eprintln!("{what}: P_abs / P_acc within {worst:.2e} of 1 over {used} frequencies");
    assert!(used >= 5, "{what}: only {used} frequencies take power");
    worst
}

#[test]
fn lossy_dielectric_cavity_absorbs_what_the_port_accepts() {
    let job = cavity(r#""lossy": Dielectric(eps_r: 2.0, tan_delta: 0.05)"#, r#"Box(material: "lossy", min: (0, 0, 0), max: (30, 24, 12)),"#, "");
    let rows = balance(&job);
    assert!(rows.iter().all(|r| r.2 == 0.0 && r.4 == 0.0 && r.3 >= 0.0));
    assert!(worst(&rows, "tan delta 0.05 cavity") < 1e-3);
}

#[test]
fn debye_cavity_absorbs_what_the_port_accepts() {
    // The wideband FR-4 model: Debye poles and a conductivity on every edge.
    let job = cavity(r#""fr4": Dielectric(eps_r: 4.3, tan_delta: 0.02, loss: Wideband)"#, r#"Box(material: "fr4", min: (0, 0, 0), max: (30, 24, 6)),"#, "");
    let op = Operator::new(&job).unwrap();
    assert!(!op.edges.is_empty() && op.edges.kp.len() > 0, "the wideband model has poles");
    assert!(worst(&balance(&job), "wideband FR-4 half-filled cavity") < 1e-3);
}

#[test]
fn lossy_wall_cavity_absorbs_what_the_port_accepts() {
    // A poor metal (1e5 S/m, skin depth 0.5 mm at 10 GHz) so the test rings briefly.
    let job = cavity(r#""brass": Metal(conductivity: 1e5)"#, "", r#", walls: "brass""#);
    let rows = balance(&job);
    assert!(rows.iter().all(|r| r.3 == 0.0 && r.4 == 0.0));
    assert!(worst(&rows, "1e5 S/m walls") < 1e-3);
}

#[test]
fn loaded_cavity_absorbs_what_the_port_accepts() {
    // A 100 ohm resistor in series with 1 pF, and a parallel R-L, on PEC walls in air.
    let job = cavity(
        "",
        r#"Load(name: "rc", from: (22, 16, 0), to: (22, 16, 12), r: 100, c: 1e-12), Load(name: "rl", from: (15, 5, 0), to: (15, 5, 12), r: 300, l: 5e-9, parallel: true),"#,
        "",
    );
    let rows = balance(&job);
    assert!(rows.iter().all(|r| r.2 == 0.0 && r.3 == 0.0));
    assert!(worst(&rows, "loaded cavity") < 1e-3);
}

#[test]
fn face_weight_is_the_stored_network_and_near_the_continuous_one() {
    let job = cavity(r#""brass": Metal(conductivity: 1e5)"#, "", r#", walls: "brass""#);
    let op = Operator::new(&job).unwrap();
    let t = &op.surface;
    let dt = op.dt;
    let i = 0;
    let k = t.k[i] as f64;
    let (a, b) = ((1.0 / t.inv_den[i] as f64 - 1.0) / k, t.kb[i] as f64 / k);
    let m = t.metal[i] as usize;
    let cells = t.cell_first[m] as usize..t.cell_first[m + 1] as usize;
    for f in [6e9, 10e9, 14e9] {
        // E_face(n) = A H(n+1/2) + B H(n-1/2) + sum rho psi(n-1/2), psi(n+1/2) = alpha psi + beta (H(n+1/2) - H(n-1/2)).
        let zi = Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * f * dt);
        let one = Complex64::new(1.0, 0.0);
        let mut zd = a + b * zi;
        for c in cells.clone() {
            let (al, be, rho) = (t.alpha[c] as f64, t.beta[c] as f64, t.rho[c] as f64);
            zd += rho * zi * be * (one - zi) / (one - al * zi);
        }
        // E_face refers to whole steps, H's DFT to half steps: z^(1/2) between them.
        let stored = (zd * Complex64::from_polar(1.0, std::f64::consts::PI * f * dt)).re;
        let weight = face_resistance(&op, m, f);
        let continuous = t.fits[m].z(2.0 * std::f64::consts::PI * f).re;
        eprintln!("{:.0} GHz: stored network {stored:.6e}, weight {weight:.6e}, continuous Re Zs {continuous:.6e} ohm", f * 1e-9);
        assert!((stored / weight - 1.0).abs() < 1e-4, "{stored} vs {weight}");
        assert!((weight / continuous - 1.0).abs() < 1e-2, "{weight} vs {continuous}");
    }
}

#[test]
fn edge_weight_is_near_the_continuous_loss() {
    // Conductivity alone: sigma cos(w dt/2); a Debye pole: w eps0 eps''(w) at w_d.
    let job = cavity(r#""fr4": Dielectric(eps_r: 4.3, tan_delta: 0.02, loss: Wideband)"#, r#"Box(material: "fr4", min: (0, 0, 0), max: (30, 24, 12)),"#, "");
    let op = Operator::new(&job).unwrap();
    let m = op.edges.len() / 2;
    let (c, p) = (op.edges.comp[m] as usize, op.edges.idx[m] as usize);
    let mi = op.mat[c][p] as usize;
    let sigma = (1.0 - op.ca[mi] as f64) / op.cb[mi] as f64;
    let mat = &job.materials.iter().find(|x| x.name == "fr4").unwrap();
    for f in [6e9, 10e9, 14e9] {
        let w = 2.0 * std::f64::consts::PI * f;
        let got = edge_conductance(&op, Some(m), sigma, f);
        // The continuous medium: sigma + w eps0 Im(-chi) of its poles (the edge lies inside it).
        let mut want = mat.sigma;
        for pole in &mat.poles {
            let chi = match *pole {
                crate::job::Pole::Debye { delta_eps, tau } => delta_eps / Complex64::new(1.0, w * tau),
                crate::job::Pole::Lorentz { delta_eps, omega0, delta } => delta_eps * omega0 * omega0 / Complex64::new(omega0 * omega0 - w * w, 2.0 * delta * w),
                crate::job::Pole::Drude { omega_p, gamma } => -omega_p * omega_p / Complex64::new(w * w, -gamma * w),
            };
            want += -w * EPS0 * chi.im;
        }
        let tan_d = want / (w * EPS0 * 4.3);
        eprintln!("{:.0} GHz: edge conductance {got:.5e} S/m, continuous {want:.5e} S/m (tan delta {tan_d:.4})", f * 1e-9);
        assert!((got / want - 1.0).abs() < 1e-2, "{got} vs {want}");
    }
}
