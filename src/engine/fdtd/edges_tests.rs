//! The edge currents against analytic answers: dispersive half-spaces
//! (Debye, Lorentz, Drude) reflect a plane wave as the Fresnel formula with
//! eps(w) says, and lumped R, L, C loads present their circuit impedance.

use super::cpu::{self, fdtd_pmc_ghosts, fdtd_update_e, fdtd_update_h};
use super::fields::Fields;
use super::operator::Operator;
use super::tests::empty_job;
use crate::analysis::SParams;
use crate::job::*;
use num_complex::Complex64;
use std::f64::consts::PI;

/// |reflection| (dB) of a half-space of `medium` (from z cell 60 on, through
/// the CPML) at normal incidence, at `freqs`: a TEM wave between PMC (x) and
/// PEC (y) walls, soft source at z = 20, probe at z = 30; the incident wave is
/// the same run without the half-space.
fn half_space_reflection(medium: Option<Material>, freqs: &[f64]) -> Vec<Complex64> {
    let d = [0.5e-3; 3];
    let nz = 200;
    let bnd = [[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]];
    let mut job = empty_job([2, 2, nz], d, bnd, [[0, 0], [0, 0], [10, 10]], (4e9, 16e9));
    if let Some(m) = medium {
        job.materials.push(m);
        let mut mat = vec![0u8; job.mesh.cells()];
        for k in 60..nz {
            for j in 0..2 {
                for i in 0..2 {
                    mat[job.mesh.idx(i, j, k)] = 2;
                }
            }
        }
        job.cell_mat = mat.into();
    }
    let op = Operator::new(&job).unwrap();
    let mut f = Fields::new(&op);
    let mut probe = vec![];
    for n in 0..4000 {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        let g = job.pulse.value((n as f64 + 0.5) * op.dt) as f32;
        for i in 0..=2 {
            for j in 0..2 {
                let p = op.at(i, j, 20);
                f.e[1][p] += g;
            }
        }
        cpu::fdtd_edges(&op, &mut f);
        probe.push(f.e[1][op.at(1, 0, 30)] as f64);
    }
    crate::analysis::dft::dft(&probe, op.dt, 0.0, freqs)
}

fn check_half_space(name: &str, m: Material) {
    let freqs: Vec<f64> = (0..=24).map(|i| 4e9 + 0.5e9 * i as f64).collect();
    let inc = half_space_reflection(None, &freqs);
    let tot = half_space_reflection(Some(m.clone()), &freqs);
    let mut worst: f64 = 0.0;
    for (k, &fr) in freqs.iter().enumerate() {
        let w = 2.0 * PI * fr;
        let eps = Complex64::from(m.eps_r) + m.poles.iter().map(|p| p.chi(w)).sum::<Complex64>();
        let n = eps.sqrt();
        let want = ((1.0 - n) / (1.0 + n)).norm();
        let got = (tot[k] - inc[k]).norm() / inc[k].norm();
        let err = 20.0 * (got / want).log10();
        worst = worst.max(err.abs());
    }
    eprintln!("{name}: worst |Gamma| error {worst:.3} dB over 4-16 GHz");
    assert!(worst < 0.2, "{name}: |Gamma| off by {worst} dB");
}

fn medium(eps_inf: f64, poles: Vec<Pole>) -> Material {
    Material { name: "dispersive".into(), eps_r: eps_inf, sigma: 0.0, mu_r: 1.0, pec: false, poles }
}

#[test]
fn a_debye_half_space_reflects_as_fresnel_says() {
    // Water-like relaxation in the band: eps from 5 to 2 around 8 GHz.
    check_half_space("debye", medium(2.0, vec![Pole::Debye { delta_eps: 3.0, tau: 1.0 / (2.0 * PI * 8e9) }]));
}

#[test]
fn a_lorentz_half_space_reflects_as_fresnel_says() {
    // A damped resonance at 25 GHz: eps rises through the band.
    check_half_space("lorentz", medium(1.5, vec![Pole::Lorentz { delta_eps: 2.0, omega0: 2.0 * PI * 25e9, delta: 2.0 * PI * 2e9 }]));
}

#[test]
fn a_drude_half_space_reflects_as_fresnel_says() {
    // A collisional plasma with its plasma frequency inside the band (total reflection below it).
    check_half_space("drude", medium(1.0, vec![Pole::Drude { omega_p: 2.0 * PI * 9e9, gamma: 2.0 * PI * 1e9 }]));
}

/// Zin of `load` seen by a 50 ohm port beside it (joined by short PEC strips,
/// as `lumped_port_into_its_own_impedance_is_matched`), over 0.05-1.5 GHz.
fn load_zin(load: Load) -> (Vec<f64>, Vec<Complex64>, Load) {
    let d = [0.1e-3; 3];
    let mut job = empty_job([16, 16, 16], d, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (0.05e9, 1.5e9));
    job.ports = vec![Port { name: "src".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [7, 8, 7], len: 2, r_ohm: 50.0 } }];
    job.loads = vec![load.clone()];
    for z in [7, 9] {
        job.sheets.push(Sheet { normal: Axis::Z, plane: z, lo: [7, 8], hi: [8, 8] });
    }
    job.stop.max_steps = 400_000;
    // The load rings at its resonance: -40 dB of energy leaves a ripple of a
    // few per cent in Zin; -90 dB leaves 0.2 %.
    job.stop.decay_db = -90.0;
    let out = cpu::run(&job).unwrap();
    assert!(matches!(out.ended, EndReason::EnergyDecay { .. }), "{:?} after {} steps", out.ended, out.steps);
    let sp = SParams::from_runs(&[&job], &[&out]);
    (sp.freqs.clone(), sp.zin[0].clone().unwrap(), load)
}

/// The loop of port, strips and load adds its own series inductance (about
/// 0.2 nH here; the port edge's shunt capacitance is ~0.4 fF, negligible):
/// de-embedded as a network analyser would, by the same fixture with the load
/// replaced by a short (a 1 milliohm resistor). Compare the de-embedded Zin
/// with the load's impedance within `tol` relative (of |Z| + 5 ohm).
fn check_load(zin: (Vec<f64>, Vec<Complex64>, Load), tol: f64) {
    let (freqs, z, load) = zin;
    let short = load_zin(Load { name: "short".into(), ..load.clone() }.with_elements(Some(1e-3), None, None, Topology::Series)).1;
    let mut worst: (f64, f64) = (0.0, 0.0);
    for (k, &fr) in freqs.iter().enumerate() {
        if fr < 0.1e9 {
            continue;
        }
        let want = load.impedance(2.0 * PI * fr);
        let got = z[k] - (short[k] - 1e-3);
        let err = (got - want).norm() / (want.norm() + 5.0);
        if err > worst.0 {
            worst = (err, fr);
        }
    }
    let k = freqs.iter().position(|&f| f >= worst.1).unwrap();
    eprintln!(
        "{}: worst |Zin - Z|/(|Z| + 5) {:.4} at {:.3} GHz: de-embedded Zin {:.2} (raw {:.2}, fixture {:.3}) want {:.2}",
        load.name,
        worst.0,
        worst.1 * 1e-9,
        z[k] - (short[k] - 1e-3),
        z[k],
        short[k],
        load.impedance(2.0 * PI * worst.1)
    );
    assert!(worst.0 < tol, "{}: Zin off by {}", load.name, worst.0);
}

trait WithElements {
    fn with_elements(self, r: Option<f64>, l: Option<f64>, c: Option<f64>, topology: Topology) -> Load;
}

impl WithElements for Load {
    fn with_elements(self, r: Option<f64>, l: Option<f64>, c: Option<f64>, topology: Topology) -> Load {
        Load { r, l, c, topology, ..self }
    }
}

fn load(name: &str, r: Option<f64>, l: Option<f64>, c: Option<f64>, topology: Topology) -> Load {
    Load { name: name.into(), axis: Axis::Z, start: [8, 8, 7], len: 2, r, l, c, topology }
}

#[test]
fn a_series_rlc_load_has_its_circuit_impedance() {
    // Resonant at 712 MHz: capacitive below, inductive above, 20 ohm at resonance.
    check_load(load_zin(load("series rlc", Some(20.0), Some(10e-9), Some(5e-12), Topology::Series)), 0.005);
}

#[test]
fn a_parallel_rlc_load_has_its_circuit_impedance() {
    // 100 ohm at its 712 MHz resonance, inductive below, capacitive above.
    check_load(load_zin(load("parallel rlc", Some(100.0), Some(10e-9), Some(5e-12), Topology::Parallel)), 0.005);
}

#[test]
fn series_rc_and_rl_loads_have_their_circuit_impedance() {
    check_load(load_zin(load("series rc", Some(30.0), None, Some(3e-12), Topology::Series)), 0.005);
    check_load(load_zin(load("series rl", Some(30.0), Some(5e-9), None, Topology::Series)), 0.005);
}

#[test]
fn a_pole_too_fast_for_the_time_step_is_refused_with_the_limit() {
    let mut job = empty_job([8, 8, 8], [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 2e9));
    job.materials.push(medium(1.0, vec![Pole::Drude { omega_p: 2.0 * PI * 1e15, gamma: 1e13 }]));
    job.cell_mat = vec![2u8; job.mesh.cells()].into();
    let e = Operator::new(&job).unwrap_err().to_string();
    assert!(e.contains("too fast for the time step") && e.contains("GHz"), "{e}");
}

#[test]
fn a_load_on_a_conductor_or_without_elements_is_refused() {
    let mut job = empty_job([8, 8, 8], [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 2e9));
    job.loads = vec![Load { start: [0, 4, 3], ..load("on the wall", Some(50.0), None, None, Topology::Series) }];
    let e = Operator::new(&job).unwrap_err().to_string();
    assert!(e.contains("on the wall") && e.contains("conductor"), "{e}");
    job.loads = vec![Load { start: [4, 4, 3], ..load("empty", None, None, None, Topology::Parallel) }];
    let e = Operator::new(&job).unwrap_err().to_string();
    assert!(e.contains("no element"), "{e}");
    job.loads = vec![Load { start: [4, 4, 3], ..load("negative", Some(-5.0), None, None, Topology::Series) }];
    let e = Operator::new(&job).unwrap_err().to_string();
    assert!(e.contains("positive"), "{e}");
}

#[test]
fn debye_weights_follow_the_cells_an_edge_touches() {
    // An edge on the face of a dispersive block gets half its poles (two of its four cells).
    let mut job = empty_job([6, 6, 6], [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 2e9));
    job.materials.push(medium(2.0, vec![Pole::Debye { delta_eps: 4.0, tau: 1e-11 }]));
    let mut mat = vec![0u8; job.mesh.cells()];
    for k in 3..6 {
        for j in 0..6 {
            for i in 0..6 {
                mat[job.mesh.idx(i, j, k)] = 2;
            }
        }
    }
    job.cell_mat = mat.into();
    let op = Operator::new(&job).unwrap();
    let t = &op.edges;
    // E_x at (2, 3, 3): cells k = 2 (vacuum) and k = 3 (dispersive) -> weight 1/2; at k = 4 -> 1.
    let find = |p: [isize; 3]| t.idx.iter().zip(&t.comp).position(|(&i, &c)| c == 0 && i as usize == op.at3(p)).unwrap();
    let (half, full) = (find([2, 3, 3]), find([2, 3, 4]));
    let q0 = |m: usize| t.q0[t.first[m] as usize] as f64;
    assert!((q0(half) / q0(full) - 0.5).abs() < 1e-6);
    // Edges wholly in vacuum carry nothing.
    assert!(t.idx.iter().zip(&t.comp).all(|(&i, &c)| !(c == 0 && i as usize == op.at3([2, 3, 1]))));
}
