//! Conformal metal: the time step the cut grid gets keeps its largest
//! eigenvalue under the leapfrog limit (measured by power iteration), long
//! runs from random fields do not grow, and the small-cell rule is what
//! makes the step's reduction bounded.

use super::conformal::{stiffness, ConformalTerms};
use super::cpu::{fdtd_conformal, fdtd_conformal_rec, fdtd_pmc_ghosts, fdtd_update_e, fdtd_update_h};
use super::fields::Fields;
use super::operator::{Operator, PEC_INDEX};
use crate::job::SimJob;

fn guide(cell: f64, a: f64) -> SimJob {
    super::shape_tests::job(&super::shape_tests::circular_guide(cell), &[("a", a)])
}

#[test]
fn the_time_step_keeps_cut_grids_under_the_leapfrog_limit() {
    // Radii that leave different slivers of faces at the rim.
    for (cell, a) in [(1.0, 10.0), (1.0, 9.73), (1.0, 9.31), (0.5, 9.87)] {
        let j = guide(cell, a);
        let op = Operator::new(&j).unwrap();
        assert!(!op.conformal.is_empty());
        let rho = stiffness(&op, 600);
        let limit = 4.0 * j.courant * j.courant;
        // Without its faces the same grid is a regular one at the job's Courant number.
        let mut plain = Operator::new(&j).unwrap();
        plain.conformal = ConformalTerms::default();
        let rho_plain = stiffness(&plain, 300);
        let slower = op.dt / Operator::new(&{ let mut x = j.clone(); x.conformal = Default::default(); x }).unwrap().dt;
        eprintln!("guide cell {cell} mm, a {a} mm: {} faces, stiffness {rho:.4} (limit {limit:.4}), time step x{slower:.3}", op.conformal.len());
        assert!(rho < limit, "{rho} >= {limit}");
        assert!(rho_plain < limit);
        // The small-cell rule bounds the reduction.
        assert!(slower > 0.7, "time step x{slower}");
    }
}

#[test]
fn without_the_small_cell_rule_the_step_would_shrink_without_bound() {
    // The same rim with no area floor: slivers of faces make the grid far
    // stiffer than with the rule (what the rule is for).
    let j = guide(1.0, 10.0);
    let mut op = Operator::new(&j).unwrap();
    let with_rule = stiffness(&op, 300);
    op.conformal = ConformalTerms::build_with(&j, &op, 0.0);
    let without = stiffness(&op, 300);
    eprintln!("stiffness with the rule {with_rule:.3}, without {without:.3}");
    assert!(without > 1.5 * with_rule);
}

#[test]
fn a_cut_grid_rings_for_thousands_of_steps_without_growing() {
    let j = guide(1.0, 9.31);
    let op = Operator::new(&j).unwrap();
    let mut f = Fields::new(&op);
    let mut seed = 7u64;
    for comp in 0..3 {
        for p in 0..op.len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if op.mat[comp][p] != PEC_INDEX {
                f.e[comp][p] = ((seed >> 33) as f64 / (1u64 << 31) as f64 - 0.5) as f32;
            }
        }
    }
    fdtd_conformal_rec(&op, &mut f);
    // Energy moves into edges the metal nearly covers (their field is
    // larger for the same energy), so the peak may rise at first; a growing
    // mode would keep rising, window after window.
    let peak = |f: &Fields| f.e.iter().flatten().fold(0.0f32, |m, x| m.max(x.abs()));
    let mut windows = vec![0.0f32; 4];
    for s in 0..20000 {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        fdtd_conformal(&op, &mut f);
        fdtd_conformal_rec(&op, &mut f);
        windows[s / 5000] = windows[s / 5000].max(peak(&f));
    }
    eprintln!("peak |E| per 5000 steps: {windows:?}");
    assert!(windows.iter().all(|w| w.is_finite()));
    assert!(windows[3] < 1.2 * windows[1], "still growing: {windows:?}");
}
