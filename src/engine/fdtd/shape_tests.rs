//! Round and slanted metal (Cylinder, Prism) against analytic answers, from
//! design files through the voxeliser (conformal faces, Dey & Mittra) to the
//! CPU reference update with its conformal pass: the TE11 cut-off of a
//! circular guide at two meshes and the resonance of a rectangular cavity
//! turned 45 degrees. docs/ACCURACY.md tabulates them beside the cell-centre
//! staircase's errors on the same meshes.

use std::collections::BTreeMap;

use super::cpu::{fdtd_conformal, fdtd_conformal_rec, fdtd_pmc_ghosts, fdtd_update_e, fdtd_update_h};
use super::fields::Fields;
use super::operator::{Operator, PEC_INDEX};
use super::tests::peak_frequency;
use crate::consts::C0;
use crate::design::Design;
use crate::job::SimJob;

/// The job of `text` at `values`, ports removed (the cavity rings freely).
pub(super) fn job(text: &str, values: &[(&str, f64)]) -> SimJob {
    let d = Design::parse(text, "conformal.ron").unwrap_or_else(|e| panic!("{e}"));
    let mut v: BTreeMap<String, f64> = d.midpoint_values();
    for (k, x) in values {
        v.insert(k.to_string(), *x);
    }
    let mut j = d.jobs(&v, &[0], None).unwrap_or_else(|e| panic!("{e}")).remove(0);
    j.ports.clear();
    j
}

/// Ring the structure from a seeded random E (every mode excited) and return
/// the strongest peak of component `c` at `probe` within `lo..hi`.
fn ring(j: &SimJob, c: usize, probe: [isize; 3], steps: usize, lo: f64, hi: f64) -> f64 {
    let op = Operator::new(j).unwrap();
    // The same span of time whatever step the conformal faces needed.
    let regular = job_dt(j);
    let steps = (steps as f64 * regular / op.dt).round() as usize;
    let mut f = Fields::new(&op);
    let mut seed = 424242u64;
    for comp in 0..3 {
        for p in 0..op.len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5;
            if op.mat[comp][p] != PEC_INDEX {
                f.e[comp][p] = r as f32;
            }
        }
    }
    fdtd_conformal_rec(&op, &mut f);
    let at = op.at3(probe);
    let mut sig = Vec::with_capacity(steps);
    for _ in 0..steps {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        fdtd_conformal(&op, &mut f);
        fdtd_conformal_rec(&op, &mut f);
        sig.push(f.e[c][at] as f64);
    }
    assert!(sig.iter().all(|v| v.is_finite()), "stable");
    peak_frequency(&sig, op.dt, lo, hi)
}

/// The time step of `j` on a regular grid (its conformal faces left out).
fn job_dt(j: &SimJob) -> f64 {
    let mut x = j.clone();
    x.conformal = Default::default();
    Operator::new(&x).unwrap().dt
}

/// A circular PEC guide of radius `a` (mm) in a 22 mm square, two cells along
/// z between PMC faces: the fields of its modes at cut-off are uniform along z.
pub(super) fn circular_guide(cell: f64) -> String {
    format!(
        r#"Design(
            name: "circular_guide", units: Millimetre,
            parameters: {{ "a": Real(min: 9.0, max: 10.5) }},
            geometry: [ Cylinder(axis: Z, center: (0, 0, 0), radius: 20, inner_radius: "a", from: 0, to: {z}) ],
            domain: (x: (-11, 11), y: (-11, 11), z: (0, {z})),
            boundaries: (x: Pec, y: Pec, z: Pmc),
            ports: [Lumped(name: "p", from: (0.3, 0.2, 0), to: (0.3, 0.2, {cell}))],
            band: (start: 6e9, stop: 12e9, points: 11),
            engine: Fdtd(cell: {cell}),
            goals: [Goal(s: (1, 1), band: (8e9, 9e9), below_db: -10.0)],
        )"#,
        z = 2.0 * cell
    )
}

/// TE11 cut-off of a circular guide of radius `a` metres: p'11 c / (2 pi a).
fn te11(a: f64) -> f64 {
    1.841_183_781 * C0 / (2.0 * std::f64::consts::PI * a)
}

#[test]
fn circular_guide_te11_cutoff_converges_at_second_order() {
    // Cells of a/10 (1 mm, 34 per wavelength at cut-off) and a/20. The
    // cell-centre staircase gave -1.64 % and -0.90 % here (first order); the
    // conformal faces must stay within 0.3 % at a/10 and more than halve the
    // error at a/20.
    let a = 10e-3;
    let fa = te11(a);
    let mut errs = vec![];
    for cell in [1.0, 0.5] {
        let j = job(&circular_guide(cell), &[("a", 10.0)]);
        let probe = [(j.mesh.n()[0] / 2 + 3) as isize, (j.mesh.n()[1] / 2 + 2) as isize, 1];
        let steps = (16000.0 / cell) as usize;
        let got = ring(&j, 0, probe, steps, fa * 0.9, fa * 1.1);
        let e = (got - fa) / fa;
        eprintln!("circular guide, cell {cell} mm: TE11 analytic {fa:.6e}, conformal {got:.6e} ({e:+.3e})");
        errs.push(e);
    }
    assert!(errs[0].abs() < 3e-3, "a/10: {:.2e}", errs[0]);
    assert!(errs[1].abs() < 0.5 * errs[0].abs(), "a/20 ({:.2e}) must more than halve a/10's ({:.2e})", errs[1], errs[0]);
}

#[test]
fn rectangular_cavity_turned_45_degrees_resonates_where_it_should() {
    // A 16 x 10 x 6 mm cavity turned 45 degrees about z: PEC corner prisms
    // fill the square around it. The TE101 mode (E along the 10 mm side,
    // varying along 16 mm and 6 mm) lies in the cut plane, so the slanted
    // walls cut its edges.
    let (a, b, d) = (16.0f64, 10.0f64, 6.0f64);
    let s = (a + b) / 2f64.sqrt(); // the square's side
    let h = s / 2.0;
    // The cavity's corners on the square's sides (centred at 0): its 16 mm
    // sides run along (1, 1), its 10 mm sides along (-1, 1).
    let (p, q) = (a / 2f64.sqrt(), b / 2f64.sqrt());
    let bottom = (h - p, -h);
    let right = (h, -h + p);
    let top = (h - q, h);
    let left = (-h, -h + q);
    let tri = |pts: [(f64, f64); 3]| {
        format!(
            "Prism(axis: Z, points: [{}], from: 0, to: {d})",
            pts.iter().map(|(u, v)| format!("({u}, {v})")).collect::<Vec<_>>().join(", ")
        )
    };
    let prisms = [
        tri([(-h, -h), bottom, left]),
        tri([(h, -h), right, bottom]),
        tri([(h, h), top, right]),
        tri([(-h, h), left, top]),
    ]
    .join(",\n");
    let text = format!(
        r#"Design(
            name: "turned_cavity", units: Millimetre,
            geometry: [{prisms}],
            domain: (x: ({lo}, {hi}), y: ({lo}, {hi}), z: (0, {d})),
            boundaries: (x: Pec, y: Pec, z: Pec),
            ports: [Lumped(name: "p", from: (0.3, 0.2, 1), to: (0.3, 0.2, 2))],
            band: (start: 20e9, stop: 30e9, points: 11),
            engine: Fdtd(cell: 0.5),
            goals: [Goal(s: (1, 1), band: (25e9, 26e9), below_db: -10.0)],
        )"#,
        lo = -h,
        hi = h
    );
    let fa = 0.5 * C0 * ((1.0 / (a * 1e-3)).powi(2) + (1.0 / (d * 1e-3)).powi(2)).sqrt();
    let j = job(&text, &[]);
    let n = j.mesh.n();
    // Off every symmetry line of the mode; E along the 10 mm side is (1, 1)/sqrt 2 in x, y.
    let probe = [(n[0] / 2 + 3) as isize, (n[1] / 2 - 2) as isize, (n[2] / 2) as isize];
    let got = ring(&j, 0, probe, 24000, fa * 0.95, fa * 1.05);
    let e = (got - fa) / fa;
    eprintln!("cavity at 45 degrees, cell 0.5 mm: TE101 analytic {fa:.6e}, conformal {got:.6e} ({e:+.3e})");
    assert!(e.abs() < 4e-3, "error {e:.2e}");
}
