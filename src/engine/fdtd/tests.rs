//! Validation of the CPU FDTD engine against known answers (physics.md's table).

use super::cpu::{self, fdtd_pmc_ghosts, fdtd_update_e, fdtd_update_h};
use super::fields::Fields;
use super::operator::Operator;
use crate::analysis::SParams;
use crate::consts::C0;
use crate::job::*;

/// A job with an empty domain of `n` cells of size `d`, no ports unless added.
pub(crate) fn empty_job(n: [usize; 3], d: [f64; 3], bnd: [[Boundary; 2]; 3], pml: [[usize; 2]; 3], band: (f64, f64)) -> SimJob {
    let mesh = Mesh::uniform(n, d, [0.0; 3]);
    let cells = mesh.cells();
    SimJob {
        label: "test".into(),
        engine: EngineKind::Fdtd,
        mesh,
        boundaries: bnd,
        pml,
        materials: vec![Material::vacuum(), Material::pec()],
        cell_mat: vec![0; cells].into(),
        conformal: Default::default(),
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(band.0, band.1),
        freqs: (0..81).map(|i| band.0 + (band.1 - band.0) * i as f64 / 80.0).collect(),
        stop: StopRule::default(),
        courant: 0.99,
    }
}

/// Frequency of the strongest peak of `x` (sampled every dt) within [lo, hi]:
/// the maximum of the Hann-windowed DTFT, located by golden-section search
/// after a coarse scan, so the estimate is not tied to any frequency grid.
pub(crate) fn peak_frequency(x: &[f64], dt: f64, lo: f64, hi: f64) -> f64 {
    let n = x.len();
    let w: Vec<f64> = (0..n).map(|i| x[i] * (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos())).collect();
    let mag = |f: f64| {
        let (mut re, mut im) = (0.0, 0.0);
        let wdt = 2.0 * std::f64::consts::PI * f * dt;
        for (i, v) in w.iter().enumerate() {
            let ph = wdt * i as f64;
            re += v * ph.cos();
            im -= v * ph.sin();
        }
        re * re + im * im
    };
    let steps = 400;
    let (mut best, mut bf) = (0.0, lo);
    for s in 0..=steps {
        let f = lo + (hi - lo) * s as f64 / steps as f64;
        let m = mag(f);
        if m > best {
            best = m;
            bf = f;
        }
    }
    let h = (hi - lo) / steps as f64;
    let (mut a, mut b) = (bf - h, bf + h);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if mag(c) > mag(d) {
            b = d;
        } else {
            a = c;
        }
    }
    0.5 * (a + b)
}

/// Analytic resonance of mode (m, n, p) of an a x b x d PEC box.
fn analytic(dim: [f64; 3], mnp: [f64; 3]) -> f64 {
    0.5 * C0 * ((mnp[0] / dim[0]).powi(2) + (mnp[1] / dim[1]).powi(2) + (mnp[2] / dim[2]).powi(2)).sqrt()
}

/// The Yee scheme's own resonance: sin^2(w dt/2)/(c dt)^2 = sum sin^2(k_i d_i/2)/d_i^2.
fn discrete(dim: [f64; 3], mnp: [f64; 3], d: [f64; 3], dt: f64) -> f64 {
    let s: f64 = (0..3).map(|i| ((mnp[i] * std::f64::consts::PI / dim[i]) * d[i] / 2.0).sin().powi(2) / (d[i] * d[i])).sum();
    let x = (C0 * dt) * s.sqrt();
    2.0 * x.asin() / dt / (2.0 * std::f64::consts::PI)
}

#[test]
fn pec_cavity_resonances_match_analytic_and_discrete_dispersion() {
    // 20 x 15 x 10 mm box, 0.5 mm cells: 33 cells per wavelength at 18 GHz.
    let dim = [20e-3, 15e-3, 10e-3];
    let d = [0.5e-3; 3];
    let n = [40, 30, 20];
    let pec = [[Boundary::Pec; 2]; 3];
    let job = empty_job(n, d, pec, [[0; 2]; 3], (10e9, 20e9));
    let op = Operator::new(&job).unwrap();
    let mut f = Fields::new(&op);
    // Random-looking initial E excites every mode; PEC edges stay zero.
    let mut seed = 12345u64;
    for c in 0..3 {
        for p in 0..op.len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5;
            if op.mat[c][p] != super::operator::PEC_INDEX {
                f.e[c][p] = r as f32;
            }
        }
    }
    // Probes off every symmetry plane of the low modes.
    let probe = |_c: usize| op.at(13, 11, 7);
    let steps = 16000;
    let mut sig = [vec![], vec![], vec![]];
    for _ in 0..steps {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        for c in 0..3 {
            sig[c].push(f.e[c][probe(c)] as f64);
        }
    }
    // (mode, field component that carries it alone near that frequency)
    let cases = [([1.0, 1.0, 0.0], 2), ([1.0, 0.0, 1.0], 1), ([0.0, 1.0, 1.0], 0), ([2.0, 1.0, 0.0], 2)];
    for (mnp, c) in cases {
        let fa = analytic(dim, mnp);
        let fd = discrete(dim, mnp, d, op.dt);
        let got = peak_frequency(&sig[c], op.dt, fd * 0.985, fd * 1.015);
        let rel_a = (got - fa).abs() / fa;
        let rel_d = (got - fd).abs() / fd;
        eprintln!("mode {mnp:?}: analytic {fa:.6e} discrete {fd:.6e} got {got:.6e} (err {rel_a:.2e} / {rel_d:.2e})");
        assert!(rel_a < 5e-3, "mode {mnp:?}: {got} vs analytic {fa} ({rel_a:.2e})");
        assert!(rel_d < 1e-6, "mode {mnp:?}: {got} vs Yee discrete {fd} ({rel_d:.2e})");
    }
}

/// A WR-28 guide (a = 7.112 mm, b = 3.556 mm) along z with two TE10 ports.
pub(crate) fn wr28_job(len_mm: f64, band: (f64, f64)) -> SimJob {
    let a = 7.112e-3;
    let b = 3.556e-3;
    let dz = a / 28.0;
    let pml = 10;
    let nz_dom = (len_mm * 1e-3 / dz).round() as usize;
    let n = [28, 14, nz_dom + 2 * pml];
    let bnd = [[Boundary::Pec; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]];
    let mut job = empty_job(n, [a / 28.0, b / 14.0, dz], bnd, [[0, 0], [0, 0], [pml, pml]], band);
    let port = |name: &str, plane: usize, inward: i8| Port {
        name: name.into(),
        kind: PortKind::Waveguide { normal: Axis::Z, plane, inward, e_axis: Axis::Y, width_axis: Axis::X, a, source_offset: 3, shift_m: 0.0 },
    };
    job.ports = vec![port("in", pml + 6, 1), port("out", n[2] - pml - 6, -1)];
    job.stop.max_steps = 30000;
    job
}

#[test]
fn empty_wr28_guide_is_transparent_and_has_te10_cutoff() {
    let job = wr28_job(16.0, (22e9, 40e9));
    let out = cpu::run(&job).unwrap();
    let sp = SParams::from_runs(&[&job], &[&out]);
    let s21 = sp.get(2, 1).unwrap();
    let s11 = sp.get(1, 1).unwrap();
    let mut worst21: f64 = 0.0;
    let mut worst11: f64 = -300.0;
    for (k, f) in sp.freqs.iter().enumerate() {
        if *f >= 30e9 && *f <= 38e9 {
            worst21 = worst21.min(20.0 * s21[k].norm().log10());
            worst11 = worst11.max(20.0 * s11[k].norm().log10());
        }
    }
    eprintln!("30-38 GHz: worst |S21| {worst21:.4} dB, worst |S11| {worst11:.2} dB, {} steps, {:?}", out.steps, out.ended);
    assert!(worst21 > -0.1, "|S21| = {worst21} dB");
    assert!(worst11 < -30.0, "|S11| = {worst11} dB");
    // Cutoff from the propagation constant: beta^2 = k0^2 - kc^2, beta from S21's phase over the port spacing.
    let (PortKind::Waveguide { plane: p1, .. }, PortKind::Waveguide { plane: p2, .. }) = (&job.ports[0].kind, &job.ports[1].kind) else { unreachable!() };
    let l = (*p2 - *p1) as f64 * job.mesh.d(2)[0];
    let mut phase: Vec<f64> = s21.iter().map(|z| -z.arg()).collect();
    for k in 1..phase.len() {
        while phase[k] < phase[k - 1] {
            phase[k] += 2.0 * std::f64::consts::PI;
        }
    }
    // Fix the 2 pi ambiguity with the analytic beta at the top frequency (a 2 pi error would be a 25% kc error).
    let ftop = *sp.freqs.last().unwrap();
    let beta_top = ((2.0 * std::f64::consts::PI * ftop / C0).powi(2) - (std::f64::consts::PI / 7.112e-3).powi(2)).sqrt();
    let turns = ((beta_top * l - phase.last().unwrap()) / (2.0 * std::f64::consts::PI)).round();
    let mut kc2 = vec![];
    for (k, f) in sp.freqs.iter().enumerate() {
        if *f >= 28e9 {
            let beta = (phase[k] + turns * 2.0 * std::f64::consts::PI) / l;
            kc2.push((2.0 * std::f64::consts::PI * f / C0).powi(2) - beta * beta);
        }
    }
    let kc = (kc2.iter().sum::<f64>() / kc2.len() as f64).sqrt();
    let fc = kc * C0 / (2.0 * std::f64::consts::PI);
    eprintln!("TE10 cutoff {fc:.4e} Hz");
    assert!((fc - 21.08e9).abs() / 21.08e9 < 0.01, "cutoff {fc}");
}

#[test]
fn cpml_reflects_less_than_minus_40_db_at_normal_incidence() {
    // A TEM wave between PEC (y) and PMC (x) walls is a plane wave at normal incidence.
    let d = [0.5e-3; 3];
    let bnd = [[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]];
    let band = (5e9, 15e9);
    let run = |nz: usize| -> (Vec<f64>, f64) {
        let job = empty_job([2, 2, nz], d, bnd, [[0, 0], [0, 0], [10, 10]], band);
        let op = Operator::new(&job).unwrap();
        let mut f = Fields::new(&op);
        let mut probe = vec![];
        for n in 0..1400 {
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
            probe.push(f.e[1][op.at(1, 0, 30)] as f64);
        }
        (probe, op.dt)
    };
    let (near, dt) = run(60);
    let (far, _) = run(600);
    let freqs: Vec<f64> = (0..=20).map(|i| band.0 + (band.1 - band.0) * i as f64 / 20.0).collect();
    let diff: Vec<f64> = near.iter().zip(&far).map(|(a, b)| a - b).collect();
    let r = crate::analysis::dft::dft(&diff, dt, 0.0, &freqs);
    let inc = crate::analysis::dft::dft(&far, dt, 0.0, &freqs);
    let worst = r.iter().zip(&inc).map(|(a, b)| 20.0 * (a.norm() / b.norm()).log10()).fold(-400.0, f64::max);
    eprintln!("worst CPML reflection {worst:.1} dB");
    assert!(worst < -40.0, "CPML reflection {worst} dB");
}

#[test]
fn lumped_port_into_its_own_impedance_is_matched() {
    // Port edge and a 50 ohm load edge side by side, joined by short PEC strips.
    let d = [0.1e-3; 3];
    let mut job = empty_job([16, 16, 16], d, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (0.05e9, 1e9));
    let lumped = |name: &str, x: usize| Port { name: name.into(), kind: PortKind::Lumped { axis: Axis::Z, start: [x, 8, 7], len: 2, r_ohm: 50.0 } };
    job.ports = vec![lumped("src", 7), lumped("load", 8)];
    for z in [7, 9] {
        job.sheets.push(Sheet { normal: Axis::Z, plane: z, lo: [7, 8], hi: [8, 8] });
    }
    let out = cpu::run(&job).unwrap();
    let sp = SParams::from_runs(&[&job], &[&out]);
    let worst = sp.db(1, 1).unwrap().into_iter().fold(-400.0, f64::max);
    let zin = sp.zin[0].as_ref().unwrap();
    eprintln!("worst |S11| {worst:.1} dB; Zin at 0.5 GHz {:?}; {:?} after {} steps", zin[40], out.ended, out.steps);
    assert!(worst < -25.0, "|S11| = {worst} dB");
    // Source and load share their terminals: a zero-length through, |S21| = 0 dB.
    let s21 = sp.db(2, 1).unwrap();
    assert!(s21.iter().all(|x| x.abs() < 0.1), "S21 {:?} dB", s21);
}

#[test]
fn non_finite_fields_are_an_error_value_not_a_panic() {
    let mut job = empty_job([8, 8, 8], [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 2e9));
    job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [4, 4, 3], len: 2, r_ohm: 50.0 } }];
    // A material with negative permittivity makes the update unstable.
    job.materials.push(Material { name: "bad".into(), eps_r: -1e-3, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
    job.cell_mat_mut().iter_mut().for_each(|m| *m = 2);
    job.stop.max_steps = 4000;
    match cpu::run(&job) {
        Err(SimFailure::NonFinite { step, location }) => assert!(step > 0 && !location.is_empty()),
        other => panic!("expected NonFinite, got {other:?}"),
    }
}

/// Lines over `0..len` in `n` cells growing linearly from `d0` to 1.3 `d0`
/// (scaled to fit): a hand-made graded axis.
fn graded_lines(len: f64, n: usize) -> Vec<f64> {
    let last = (n - 1) as f64;
    shaped_lines(len, n, |t| 1.0 + 0.3 * (t * n as f64 - 0.5) / last)
}

#[test]
fn graded_pec_cavity_is_stable_and_resonates_where_its_walls_are() {
    // The 20 x 15 x 10 mm box of the uniform test on lines graded 1.0 -> 1.3 along
    // every axis (the largest cell 0.6 mm, 25 per wavelength at 20 GHz). An engine
    // that took one spacing for a whole axis would put the walls up to 15% off and
    // the resonances with them.
    let dim = [20e-3, 15e-3, 10e-3];
    let n = [36, 27, 18];
    let pec = [[Boundary::Pec; 2]; 3];
    let mut job = empty_job(n, [1e-3; 3], pec, [[0; 2]; 3], (10e9, 20e9));
    job.mesh = Mesh::from_lines(std::array::from_fn(|a| graded_lines(dim[a], n[a]))).unwrap();
    assert!((0..3).all(|a| !job.mesh.is_uniform(a) && job.mesh.max_grading(a) < 1.02));
    let op = Operator::new(&job).unwrap();
    let dmin = [0, 1, 2].map(|a| job.mesh.min_d(a));
    let dt_want = 0.99 / (C0 * dmin.iter().map(|d| 1.0 / (d * d)).sum::<f64>().sqrt());
    assert!((op.dt - dt_want).abs() < 1e-12 * dt_want, "dt from the smallest cells");
    let mut f = Fields::new(&op);
    let mut seed = 12345u64;
    for c in 0..3 {
        for p in 0..op.len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5;
            if op.mat[c][p] != super::operator::PEC_INDEX {
                f.e[c][p] = r as f32;
            }
        }
    }
    let w0 = cpu::fdtd_energy(&op, &f);
    let probe = op.at(11, 10, 7);
    let steps = 12000;
    let mut sig = [vec![], vec![], vec![]];
    for _ in 0..steps {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        for c in 0..3 {
            sig[c].push(f.e[c][probe] as f64);
        }
    }
    // Stable: a lossless cavity keeps (about) its energy; nothing grows.
    let w1 = cpu::fdtd_energy(&op, &f);
    assert!(w1.is_finite() && w1 < 1.5 * w0, "energy {w0:.3e} -> {w1:.3e}");
    for (mnp, c) in [([1.0, 1.0, 0.0], 2), ([1.0, 0.0, 1.0], 1), ([0.0, 1.0, 1.0], 0)] {
        let fa = analytic(dim, mnp);
        let got = peak_frequency(&sig[c], op.dt, fa * 0.95, fa * 1.05);
        let rel = (got - fa).abs() / fa;
        eprintln!("graded mode {mnp:?}: analytic {fa:.6e} got {got:.6e} (err {rel:.2e})");
        assert!(rel < 5e-3, "mode {mnp:?}: {got} vs analytic {fa} ({rel:.2e})");
    }
}

/// `n` cells over `0..len` whose size follows `shape(t)` for t in [0, 1]
/// (scaled to fit): hand-made graded lines for the graded-mesh tests.
fn shaped_lines(len: f64, n: usize, shape: impl Fn(f64) -> f64) -> Vec<f64> {
    let w: Vec<f64> = (0..n).map(|i| shape((i as f64 + 0.5) / n as f64)).collect();
    let tot: f64 = w.iter().sum();
    let mut x = vec![0.0];
    for wi in &w {
        x.push(x.last().unwrap() + wi * len / tot);
    }
    x[n] = len;
    x
}

#[test]
fn graded_pec_cavity_resonates_within_5e_4_of_analytic() {
    // TM_mn0 modes of a 20 x 15 mm PEC box (Ez alone, uniform along z, so z
    // takes 2 cells): x and y graded 1.0 -> 1.3 -> 1.0 (ratio <= 1.02 between
    // neighbours), about 80 cells per wavelength of the modes. The Yee scheme's
    // dispersion at this density is ~2e-4, so 5e-4 of analytic checks that
    // every graded primal and dual spacing is used where it belongs.
    let dim = [20e-3, 15e-3, 2e-3];
    let n = [72, 54, 2];
    let pec = [[Boundary::Pec; 2]; 3];
    let mut job = empty_job(n, [1e-3; 3], pec, [[0; 2]; 3], (10e9, 25e9));
    let hump = |t: f64| 1.0 + 0.3 * (std::f64::consts::PI * t).sin();
    job.mesh = Mesh::from_lines([shaped_lines(dim[0], n[0], hump), shaped_lines(dim[1], n[1], hump), shaped_lines(dim[2], n[2], |_| 1.0)]).unwrap();
    assert!((0..2).all(|a| !job.mesh.is_uniform(a) && job.mesh.max_grading(a) < 1.03 && job.mesh.max_d(a) / job.mesh.min_d(a) > 1.25));
    let op = Operator::new(&job).unwrap();
    let mut f = Fields::new(&op);
    let mut seed = 987654321u64;
    for p in 0..op.len {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5;
        if op.mat[2][p] != super::operator::PEC_INDEX {
            f.e[2][p] = r as f32;
        }
    }
    let probe = op.at(23, 17, 1);
    let steps = 30000;
    let mut sig = Vec::with_capacity(steps);
    for _ in 0..steps {
        fdtd_update_h(&op, &mut f);
        fdtd_pmc_ghosts(&op, &mut f);
        fdtd_update_e(&op, &mut f);
        sig.push(f.e[2][probe] as f64);
    }
    assert!(sig.iter().all(|v| v.is_finite()));
    for mnp in [[1.0, 1.0, 0.0], [2.0, 1.0, 0.0], [1.0, 2.0, 0.0]] {
        let fa = analytic(dim, mnp);
        let got = peak_frequency(&sig, op.dt, fa * 0.99, fa * 1.01);
        let rel = (got - fa).abs() / fa;
        eprintln!("graded TM mode {mnp:?}: analytic {fa:.6e} got {got:.6e} (err {rel:.2e})");
        assert!(rel < 5e-4, "mode {mnp:?}: {got} vs analytic {fa} ({rel:.2e})");
    }
}

#[test]
fn cpml_after_graded_cells_reflects_less_than_minus_40_db() {
    // The plane wave of the uniform CPML test, now crossing cells that grow
    // 0.5 -> 0.65 mm (ratio 1.013) before the top layer, whose cells take the
    // last domain cell's size. `far` has the same graded cells, then a long
    // uniform run, so near - far is the layer's reflection alone.
    let bnd = [[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]];
    let band = (5e9, 15e9);
    let (d0, d1, pml) = (0.5e-3, 0.65e-3, 10usize);
    let z_lines = |extra: usize| {
        let mut z = vec![0.0];
        let mut push = |d: f64| z.push(z.last().unwrap() + d);
        (0..pml + 10).for_each(|_| push(d0));
        (0..20).for_each(|i| push(d0 + (d1 - d0) * (i as f64 + 1.0) / 20.0));
        (0..10 + extra + pml).for_each(|_| push(d1));
        z
    };
    let run = |extra: usize| -> (Vec<f64>, f64) {
        let z = z_lines(extra);
        let nz = z.len() - 1;
        let mut job = empty_job([2, 2, nz], [d0; 3], bnd, [[0, 0], [0, 0], [pml, pml]], band);
        job.mesh = Mesh::from_lines([vec![0.0, d0, 2.0 * d0], vec![0.0, d0, 2.0 * d0], z]).unwrap();
        let op = Operator::new(&job).unwrap();
        let mut f = Fields::new(&op);
        let mut probe = vec![];
        for n in 0..1600 {
            fdtd_update_h(&op, &mut f);
            fdtd_pmc_ghosts(&op, &mut f);
            fdtd_update_e(&op, &mut f);
            let g = job.pulse.value((n as f64 + 0.5) * op.dt) as f32;
            for i in 0..=2 {
                for j in 0..2 {
                    f.e[1][op.at(i, j, pml as isize + 5)] += g;
                }
            }
            probe.push(f.e[1][op.at(1, 0, pml as isize + 35)] as f64);
        }
        (probe, op.dt)
    };
    let (near, dt) = run(0);
    let (far, _) = run(600);
    let freqs: Vec<f64> = (0..=20).map(|i| band.0 + (band.1 - band.0) * i as f64 / 20.0).collect();
    let diff: Vec<f64> = near.iter().zip(&far).map(|(a, b)| a - b).collect();
    let r = crate::analysis::dft::dft(&diff, dt, 0.0, &freqs);
    let inc = crate::analysis::dft::dft(&far, dt, 0.0, &freqs);
    let worst = r.iter().zip(&inc).map(|(a, b)| 20.0 * (a.norm() / b.norm()).log10()).fold(-400.0, f64::max);
    eprintln!("worst CPML reflection after graded cells {worst:.1} dB");
    assert!(worst < -40.0, "CPML reflection {worst} dB");
}

#[test]
fn empty_wr28_guide_on_graded_cells_is_transparent() {
    // The guide of the uniform test with x graded fine at the walls (0.6 -> 1.4
    // of the mean cell, as an edge-following mesh makes them) and z graded
    // between the ports: a wrong dual area in the TE10 modal sums or a spacing
    // read from the wrong line would show as reflection.
    let mut job = wr28_job(16.0, (22e9, 40e9));
    let n = job.mesh.n();
    let a = 7.112e-3;
    let x = shaped_lines(a, n[0], |t| 0.6 + 0.8 * (std::f64::consts::PI * t).sin());
    let z0 = job.mesh.lines(2).to_vec();
    let pml = job.pml[2][0];
    let dz = z0[1] - z0[0];
    // Keep the padding and 8 cells next to it uniform; in between, cells grow to 1.3x mid-way.
    let inner = n[2] - 2 * (pml + 8);
    let span = inner as f64 * dz;
    let mid = shaped_lines(span, inner, |t| 1.0 + 0.3 * (std::f64::consts::PI * t).sin());
    let mut z: Vec<f64> = z0[..=pml + 8].to_vec();
    let base = z[pml + 8];
    z.extend(mid[1..].iter().map(|v| base + v));
    let top = *z.last().unwrap();
    z.extend((1..=pml + 8).map(|k| top + k as f64 * dz));
    job.mesh = Mesh::from_lines([x, job.mesh.lines(1).to_vec(), z]).unwrap();
    assert_eq!(job.mesh.n(), n);
    assert!(!job.mesh.is_uniform(0) && !job.mesh.is_uniform(2) && job.mesh.max_grading(0) < 1.2 && job.mesh.max_grading(2) < 1.25);
    let out = cpu::run(&job).unwrap();
    let sp = SParams::from_runs(&[&job], &[&out]);
    let (s21, s11) = (sp.get(2, 1).unwrap(), sp.get(1, 1).unwrap());
    let mut worst21: f64 = 0.0;
    let mut worst11: f64 = -300.0;
    for (k, f) in sp.freqs.iter().enumerate() {
        if *f >= 30e9 && *f <= 38e9 {
            worst21 = worst21.min(20.0 * s21[k].norm().log10());
            worst11 = worst11.max(20.0 * s11[k].norm().log10());
        }
    }
    eprintln!("graded guide 30-38 GHz: worst |S21| {worst21:.4} dB, worst |S11| {worst11:.2} dB, {} steps", out.steps);
    assert!(worst21 > -0.1, "|S21| = {worst21} dB");
    assert!(worst11 < -30.0, "|S11| = {worst11} dB");
}

#[test]
fn field_dft_monitor_sees_the_cavity_mode_on_a_plane_and_a_box() {
    // A PEC box driven by a lumped port: the DFT of the fields on a plane and in
    // a box at the TM110 resonance shows the mode's shape (|Ez| largest in the
    // middle, zero on the walls), E and H co-located on the plane.
    let dim = [20e-3, 15e-3, 10e-3];
    let n = [20, 15, 10];
    let mut job = empty_job(n, [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (5e9, 15e9));
    job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [4, 4, 4], len: 2, r_ohm: 50.0 } }];
    job.stop.max_steps = 3000;
    let f110 = analytic(dim, [1.0, 1.0, 0.0]);
    job.monitors = vec![
        Monitor::FieldDft { name: "mid-z".into(), lo: [0, 0, 5], hi: [20, 15, 5], fields: DftFields::Tangential(Axis::Z), freqs: vec![f110] },
        Monitor::FieldDft { name: "box".into(), lo: [2, 2, 2], hi: [6, 5, 4], fields: DftFields::All, freqs: vec![f110, 1.1 * f110] },
    ];
    let out = cpu::run(&job).unwrap();
    assert_eq!(out.monitors.len(), 2);
    let MonitorOutput::FieldDft { name, freqs, components } = &out.monitors[0] else { panic!("a field monitor") };
    assert_eq!((name.as_str(), freqs.len(), components.len()), ("mid-z", 1, 4));
    // Tangential on z: Ex, Ey, Hx, Hy; on the plane z = 5 (one sample along z).
    for c in components {
        assert!(c.axis != Axis::Z && c.count[2] == 1 && c.first[2] == 5 && c.at_nodes[2], "{:?}", (c.field, c.axis, c.count));
        assert_eq!(c.values.len(), c.count[0] * c.count[1] * c.count[2]);
    }
    let hy = components.iter().find(|c| c.field == Field::H && c.axis == Axis::Y).unwrap();
    // Hy of TM110 ~ cos(pi x / a) sin(pi y / b): largest near the x walls, smallest mid-way.
    // Hy lies between lines along x and z (z averaged onto the plane), on lines along y.
    assert_eq!((hy.count[0], hy.count[1], hy.at_nodes), (20, 16, [false, true, true]));
    let at = |c: &ComponentDft, i: usize, j: usize| c.values[j * c.count[0] + i].norm();
    assert!(at(hy, 0, 7) > 5.0 * at(hy, 10, 7), "{} vs {}", at(hy, 0, 7), at(hy, 10, 7));
    let MonitorOutput::FieldDft { components: bx, freqs: bf, .. } = &out.monitors[1] else { panic!("a field monitor") };
    assert_eq!((bx.len(), bf.len()), (6, 2));
    let ez = bx.iter().find(|c| c.field == Field::E && c.axis == Axis::Z).unwrap();
    // Ez between lines along z (cells 2..4), on lines across: 5 x 4 x 2 samples per frequency.
    assert_eq!((ez.first, ez.count, ez.at_nodes), ([2, 2, 2], [5, 4, 2], [true, true, false]));
    assert_eq!(ez.values.len(), 2 * 5 * 4 * 2);
    assert!(ez.values.iter().all(|z| z.is_finite()) && ez.values.iter().any(|z| z.norm() > 0.0));
    // Over the port's two edges the monitor's Ez is the port voltage's DFT: V = -sum Ez dl.
    job.monitors = vec![Monitor::FieldDft { name: "port".into(), lo: [4, 4, 4], hi: [4, 4, 6], fields: DftFields::All, freqs: vec![f110] }];
    let out = cpu::run(&job).unwrap();
    let MonitorOutput::FieldDft { components: pc, .. } = &out.monitors[0] else { panic!("a field monitor") };
    let ez = pc.iter().find(|c| c.field == Field::E && c.axis == Axis::Z).unwrap();
    assert_eq!(ez.count, [1, 1, 2]);
    let v_mon = -(ez.values[0] + ez.values[1]) * 1e-3;
    let v_dft = crate::analysis::dft::dft(&out.traces[0].v, out.dt, out.v_offset, &[f110])[0];
    assert!((v_mon - v_dft).norm() < 1e-9 * v_dft.norm(), "{v_mon} vs {v_dft}");
    // A monitor outside the mesh is refused with its name.
    job.monitors = vec![Monitor::FieldDft { name: "bad".into(), lo: [0, 0, 0], hi: [21, 1, 1], fields: DftFields::All, freqs: vec![1e9] }];
    let e = cpu::run(&job).unwrap_err();
    assert!(e.to_string().contains("`bad`"), "{e}");
}

/// The energy as first written (every sample, weight as a product over the
/// axes, the planes summed by rayon): `fdtd_energy` must give its bits.
fn energy_every_sample(op: &Operator, f: &Fields) -> f64 {
    use crate::consts::{EPS0, MU0};
    use rayon::prelude::*;
    let (s2, d0) = (op.stride[2], op.dims[0]);
    let weight = |own: usize, along: &[Vec<f32>; 3], across: &[Vec<f32>; 3], q: [usize; 3]| -> f64 {
        (0..3).map(|x| if x == own { along[x][q[x]] } else { across[x][q[x]] } as f64).product::<f64>()
    };
    let mut tot = 0.0;
    for c in 0..3 {
        let (e, m) = (&f.e[c], &op.mat[c]);
        tot += e
            .par_chunks(s2)
            .zip(m.par_chunks(s2))
            .enumerate()
            .map(|(kz, (ee, mm))| {
                ee.iter()
                    .zip(mm)
                    .enumerate()
                    .map(|(l, (&x, &k))| op.eps[k as usize] as f64 * (x as f64) * (x as f64) * weight(c, &op.rel_h, &op.rel_e, [l % d0, l / d0, kz]))
                    .sum::<f64>()
            })
            .sum::<f64>()
            * EPS0;
        tot += f.h[c]
            .par_chunks(s2)
            .enumerate()
            .map(|(kz, hh)| hh.iter().enumerate().map(|(l, &x)| (x as f64) * (x as f64) * weight(c, &op.rel_e, &op.rel_h, [l % d0, l / d0, kz])).sum::<f64>())
            .sum::<f64>()
            * MU0;
    }
    tot
}

#[test]
fn energy_skipping_zero_samples_keeps_the_bits_of_every_sample_summed() {
    // Graded lines, a dielectric, random fields with zero rows, single zeros,
    // -0.0 and whole zero components (as a 2.5D design has).
    let mut job = empty_job([13, 6, 9], [1e-3; 3], [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 10e9));
    job.mesh = Mesh::from_lines([shaped_lines(13e-3, 13, |t| 1.0 + 0.4 * t), shaped_lines(6e-3, 6, |t| 1.2 - 0.3 * t), shaped_lines(9e-3, 9, |t| 1.0 + 0.2 * (6.0 * t).sin())]).unwrap();
    job.materials.push(Material { name: "d".into(), eps_r: 3.3, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
    let cells = job.mesh.cells();
    job.cell_mat = (0..cells).map(|i| if i % 5 == 1 { 2 } else { 0 }).collect::<Vec<u8>>().into();
    let op = Operator::new(&job).unwrap();
    let mut f = Fields::new(&op);
    let mut seed = 99u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    for c in 0..3 {
        for p in 0..op.len {
            let r = next();
            let row_zero = (p / op.stride[1]) % 3 == 0;
            let v = if row_zero || r < 0.2 { 0.0 } else if r < 0.25 { -0.0 } else { (r - 0.6) as f32 };
            if c != 1 {
                f.e[c][p] = v;
            }
            f.h[c][p] = v * 3e-3;
        }
    }
    // On one thread: rayon's reduction tree follows its splits, which with
    // more threads also follow the steals (the same API, the same tree for
    // the same steals; on one thread there are none).
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        assert_eq!(cpu::fdtd_energy(&op, &f).to_bits(), energy_every_sample(&op, &f).to_bits());
        let zero = Fields::new(&op);
        assert_eq!(cpu::fdtd_energy(&op, &zero).to_bits(), energy_every_sample(&op, &zero).to_bits());
    });
}

/// A lumped-port check job stepped `steps` steps (energy checked every
/// `check_every`) by the CPU batch from nonzero E fields: its operator, those
/// initial fields, and the batch's final fields and output, the reference the
/// kernel twins of cpu.rs are held to. A lumped port: its source sits on the
/// edges it samples, so the order of source and sample counts; the source is at
/// its full height from the first step (a covering pulse is still ~0 there).
fn twin_reference(steps: usize, check_every: usize) -> (SimJob, Operator, Fields, Fields, crate::job::SimOutput) {
    let mut job = crate::dev::device_check::random_jobs(true, 4).into_iter().find(|j| j.label.contains("lumped along z")).unwrap();
    job.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every, max_time: None };
    job.pulse.f0 = 0.0;
    job.pulse.tau = 1e-9;
    job.pulse.t0 = 0.0;
    let op = Operator::new(&job).unwrap();
    let mut init = Fields::new(&op);
    for c in 0..3 {
        for (p, x) in init.e[c].iter_mut().enumerate() {
            *x = ((p * 7 + c) % 13) as f32 * 1e-3;
        }
    }
    let mut fr = Fields::new(&op);
    fr.e = init.e.clone();
    let out = super::cpu_batch::run_from(&job, &op, &mut fr).unwrap();
    (job, op, init, fr, out)
}

/// A twin's fields and port samples against [`twin_reference`]'s, bit for bit.
fn assert_twin_matches(f: &Fields, fr: &Fields, traces: &[PortTrace], out: &crate::job::SimOutput) {
    for c in 0..3 {
        assert!(f.e[c].iter().zip(&fr.e[c]).all(|(a, b)| a.to_bits() == b.to_bits()), "E{c}");
        assert!(f.h[c].iter().zip(&fr.h[c]).all(|(a, b)| a.to_bits() == b.to_bits()), "H{c}");
    }
    for (t, r) in traces.iter().zip(&out.traces) {
        assert_eq!(t.v, r.v);
        assert_eq!(t.i, r.i);
    }
    assert!(traces[0].v.iter().any(|&v| v != 0.0), "the port saw the fields");
}

#[test]
fn the_two_step_twin_is_two_steps_of_the_reference_loop() {
    // cpu.rs fdtd_step2 (the twin of kernels/fdtd_slim.cuh) against the CPU
    // batch's stepping loop: fields after 2 steps bit for bit, and the first
    // step's port samples (its source added before they are taken).
    let (job, op, mut f, fr, out) = twin_reference(4, 4);
    let mut traces: Vec<PortTrace> = job.ports.iter().map(|_| PortTrace::default()).collect();
    let g = |s: usize| job.pulse.value((s as f64 + 0.5) * op.dt);
    for n in [0, 2] {
        cpu::fdtd_step2(&op, &mut f, job.drive, g(n), &mut traces);
        cpu::fdtd_inject(&op, &mut f, job.drive, g(n + 1));
        cpu::fdtd_sample_ports(&op, &f, &mut traces);
    }
    assert_twin_matches(&f, &fr, &traces, &out);
}

#[test]
fn the_on_chip_twin_is_the_reference_loop_chunk_by_chunk() {
    // cpu.rs fdtd_onchip (the twin of kernels/fdtd_onchip.cu: k steps with the
    // source and the port samples in one launch, the energy after the k-th)
    // against the CPU batch's stepping loop over two chunks of 4 steps: fields
    // and port samples bit for bit, and the energy it returns is the fields'.
    let (job, op, mut f, fr, out) = twin_reference(8, 4);
    let mut traces: Vec<PortTrace> = job.ports.iter().map(|_| PortTrace::default()).collect();
    let mut energy = 0.0;
    for n in [0, 4] {
        energy = cpu::fdtd_onchip(&op, &mut f, job.drive, &job.pulse, n, 4, &mut traces);
    }
    assert_twin_matches(&f, &fr, &traces, &out);
    assert_eq!(energy.to_bits(), cpu::fdtd_energy(&op, &fr).to_bits());
    assert!(energy > 0.0);
}
