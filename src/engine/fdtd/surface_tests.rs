//! The surface impedance against analytic answers: the fitted networks
//! against the skin-effect formulas, and a copper cavity's unloaded Q
//! against Pozar's formula.

use super::cpu::{self, fdtd_energy};
use super::fields::Fields;
use super::operator::Operator;
use super::surface::{fit, fit_error, fit_tol, FIT_TOL};
use super::tests::empty_job;
use crate::consts::{C0, ETA0, MU0};
use crate::job::*;
use std::f64::consts::PI;

fn copper(thickness: Option<f64>, roughness: f64) -> Conductor {
    Conductor { name: "copper".into(), sigma: 5.8e7, thickness, roughness }
}

#[test]
fn a_few_poles_fit_the_skin_effect_over_every_band() {
    // (conductor, band, most cells a fit may need)
    let cases = [
        (copper(None, 0.0), 27e9, 38e9, 3),
        (copper(None, 0.0), 1e9, 10e9, 7),
        (copper(None, 0.0), 0.1e9, 20e9, 12),
        (copper(Some(35e-6), 0.0), 1e6, 100e6, 8),
        (copper(Some(35e-6), 0.0), 1.9e9, 3.0e9, 3),
        (copper(None, 1e-6), 1e9, 10e9, 8),
        (Conductor { name: "aluminium".into(), sigma: 3.5e7, thickness: None, roughness: 0.0 }, 8e9, 12e9, 3),
    ];
    for (c, lo, hi, most) in cases {
        let f = fit(&c, lo, hi);
        assert!(f.err < fit_tol(&c), "{} {lo:e}-{hi:e}: error {:.2e} with {} cells", c.name, f.err, f.cells.len());
        assert!(f.cells.len() <= most, "{} {lo:e}-{hi:e}: {} cells", c.name, f.cells.len());
        assert!(f.r0 >= 0.0 && f.l0 >= 0.0 && f.cells.iter().all(|&(r, p)| r > 0.0 && p > 0.0), "passive: {f:?}");
        // And between the fitted frequencies.
        for i in 0..=40 {
            let w = 2.0 * PI * lo * (hi / lo).powf(i as f64 / 40.0 + 0.0123);
            if w > 2.0 * PI * hi {
                continue;
            }
            assert!(fit_error(&f, &c, w) < 1.5 * fit_tol(&c), "{w:e}: {} vs {}", f.z(w), c.surface_impedance(w));
            // A smooth metal's reactance is met too.
            if c.roughness == 0.0 {
                let (z, t) = (f.z(w), c.surface_impedance(w));
                assert!((z - t).norm() < 2.0 * FIT_TOL * t.norm(), "{w:e}: {z} vs {t}");
            }
        }
    }
}

/// The energy of a mode decays as exp(-w t / Q): Q from the slope of
/// ln(energy) against time, by least squares over the record.
fn q_from_decay(t: &[f64], energy: &[f64], w: f64) -> f64 {
    let n = t.len() as f64;
    let y: Vec<f64> = energy.iter().map(|e| e.ln()).collect();
    let (mt, my) = (t.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = t.iter().zip(&y).map(|(a, b)| (a - mt) * (b - my)).sum();
    let sxx: f64 = t.iter().map(|a| (a - mt) * (a - mt)).sum();
    -w / (sxy / sxx)
}

/// A 7.112 x 3.556 x 7.0 mm copper cavity (WR-28 closed by two walls) rung
/// in its TE101 mode (30.1 GHz): the stored energy decays at the rate of
/// its unloaded Q, which Pozar gives (Microwave Engineering, 4th ed., eq.
/// 6.46): `Qc = (k a d)^3 b eta / (2 pi^2 Rs) / (2 a^3 b + 2 b d^3 + a^3 d + a d^3)`.
#[test]
fn a_copper_cavity_has_the_unloaded_q_of_its_walls() {
    let (a, b, d): (f64, f64, f64) = (7.112e-3, 3.556e-3, 7.0e-3);
    let n = [28, 14, 28];
    let cell = [a / 28.0, b / 14.0, d / 28.0];
    let f101 = C0 / 2.0 * ((1.0 / a).powi(2) + (1.0 / d).powi(2)).sqrt();
    let mut job = empty_job(n, cell, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (0.9 * f101, 1.1 * f101));
    job.surfaces = Surfaces { conductors: vec![copper(None, 0.0)], walls: [[Some(0); 2]; 3], ..Default::default() };
    let op = Operator::new(&job).unwrap();
    // Every tangential H node beside the six walls, none elsewhere: H_x beside z and y walls, etc.
    let expect: usize = (0..3)
        .map(|c| {
            let mut r = [n[0], n[1], n[2]];
            r[c] = n[c] + 1;
            // Off the two walls normal to c (H normal to a wall is zero there), in a
            // cell beside a wall normal to one of the other two axes.
            let (p, q) = ((c + 1) % 3, (c + 2) % 3);
            (r[c] - 2) * (r[p] * r[q] - (r[p] - 2) * (r[q] - 2))
        })
        .sum();
    assert_eq!(op.surface.len(), expect);
    let mut f = Fields::new(&op);
    for k in 0..=n[2] {
        for j in 0..n[1] {
            for i in 0..=n[0] {
                let (x, z) = (i as f64 * cell[0], k as f64 * cell[2]);
                f.e[1][op.at(i as isize, j as isize, k as isize)] = ((PI * x / a).sin() * (PI * z / d).sin()) as f32;
            }
        }
    }
    let (mut t, mut w) = (vec![], vec![]);
    for s in 0..9000 {
        cpu::fdtd_step(&op, &mut f);
        cpu::fdtd_surface(&op, &mut f);
        if s >= 1000 && s % 20 == 0 {
            t.push(s as f64 * op.dt);
            w.push(fdtd_energy(&op, &f));
        }
    }
    let q = q_from_decay(&t, &w, 2.0 * PI * f101);
    let k = 2.0 * PI * f101 / C0;
    let rs = (PI * f101 * MU0 / 5.8e7).sqrt();
    let q_exact = (k * a * d).powi(3) * b * ETA0 / (2.0 * PI * PI * rs) / (2.0 * a.powi(3) * b + 2.0 * b * d.powi(3) + a.powi(3) * d + a * d.powi(3));
    let err = q / q_exact - 1.0;
    eprintln!("TE101 copper cavity {:.3} GHz: Q {q:.0}, Pozar {q_exact:.0} ({:+.2} %)", f101 / 1e9, 100.0 * err);
    assert!(err.abs() < 0.02, "Q {q:.0} vs {q_exact:.0}");
}

