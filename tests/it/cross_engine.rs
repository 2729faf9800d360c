//! The engines against each other on shipped designs (the TLM issue's
//! acceptance criteria): FDTD, the 2D shunt-node TLM and the 3D SCN TLM.
//!
//! Criteria: S11 and S21 within 0.5 dB wherever both engines' |S| exceed
//! -20 dB (a null's flank, where one curve dips below, is left out), -3 dB
//! passband centres within 0.3%, and a patch's resonance within 1%.
//!
//! What holds (a/28 unless said otherwise; numbers from these tests' runs):
//! - TLM2d is FDTD's twin: its nodes sit where Yee keeps E (see
//!   `engine::tlm::common::Lattice`), so both solve the same discrete problem.
//!   Shipped filter: centres 32.012 GHz both (0.002% apart), S11 0.08 dB, S21
//!   0.02 dB at worst; single iris: |dS| < 6e-4.
//! - The 3D SCN keeps its nodes at cell centres, walls halfway between nodes. At
//!   an iris edge (a re-entrant PEC corner) that differs from Yee at first order
//!   in the cell, in the opposite direction to FDTD's own error: on the filter at
//!   a/28, a/56, a/112 the passbands of FDTD are 32.020, 31.912, 31.868 GHz and of
//!   the SCN 31.711, 31.789, 31.819 GHz, both converging on about 31.84 GHz (the
//!   geometry commensurate with all three meshes, so that only the corner
//!   treatment changes). So the SCN meets the criteria on a single iris at a/56
//!   (0.38 dB; 1.00 dB at a/28) but NOT on the filter at any affordable mesh:
//!   centres -0.97% / -0.39% / -0.16% from FDTD's, and its skirts, 30-50 dB per
//!   GHz, sit 12.6 / 5.2 / 2.2 dB away. The tests below pin those measured numbers (and their first-order
//!   convergence) instead of the criteria; see the report of this change.
//! - Patch: the criterion holds at the shipped 0.8 mm mesh (FDTD 2.3540 GHz,
//!   SCN 2.3725 GHz: +0.79%; 2.5 + 6 minutes here, too slow for the suite). The
//!   same edge term (the patch's radiating edges are sheet edges) doubles it at
//!   1.6 mm, the mesh this suite can afford: +1.50%. The test pins that at 2%.
//!
//! The SCN against FDTD on the shipped filter at finer meshes (issue's values,
//! `FILTER_SETS[0]`; the design at a/n, its `max_steps` raised so that every run
//! reaches -50 dB: at a/112 the shipped 30000 stops the SCN at -40 dB, which
//! moves its numbers by < 0.4 dB). Release build, 2 shared cores, one job at a
//! time; the FDTD centres move with how 3.6 / 2.6 / 4.97 / 5.55 mm snap to each
//! mesh; the shift between the engines falls at first order or a little faster:
//!
//! | mesh  | centre FDTD / SCN (GHz) | shift   | worst S11 | worst S21 | FDTD  | SCN    |
//! |-------|-------------------------|---------|-----------|-----------|-------|--------|
//! | a/28  | 32.0118 / 31.6895       | -1.007% | 16.22 dB  | 10.46 dB  | 0.2 s | 0.4 s  |
//! | a/56  | 32.2578 / 32.1292       | -0.399% | 10.48 dB  |  5.16 dB  | 1.6 s | 3.2 s  |
//! | a/84  | 32.1185 / 32.0444       | -0.231% |  9.25 dB  |  3.09 dB  | 4.2 s | 10.1 s |
//! | a/112 | 32.1374 / 32.0859       | -0.160% |  7.03 dB  |  2.25 dB  | 9.1 s | 34.6 s |
//! | a/168 | 31.7758 / 31.7507       | -0.079% |  5.48 dB  |  1.24 dB  | 20 s  | 139 s  |
//!
//! (a/168 ran beside another engineer's build: its times are high.) The centre
//! criterion (0.3%) holds from a/84 on; the 0.5 dB criterion fails at every mesh
//! up to a/168: the worst points are on the skirts (at a/112 S21 at 30.9 GHz,
//! S11 at 31.15 GHz, where S11 falls through -20 dB into the passband), where
//! the 51 MHz shift of a/112 is 2.3 and 7.0 dB. The S11 gap also falls more
//! slowly than the shift (16 dB per % of shift at a/28, 69 at a/168), so 0.5 dB
//! needs a shift below about 0.01%: a mesh of the order of a/1000 (shift times
//! n: 28, 22, 19, 18, 13 %). So no test asserts the criteria for the SCN
//! on the filter. At the ranges' midpoint (w1 3.75, w2 2.75, l1 = l2 5.25 mm), for
//! comparison: -0.861% / -0.364% / -0.200% / -0.151% at a/28 / 56 / 84 / 112,
//! S11 13.3 / 7.3 / 7.7 / 6.2 dB, S21 9.9 / 3.5 / 2.2 / 1.5 dB.

use emvolve::analysis::SParams;
use emvolve::design::Design;
use emvolve::engine::{Backend, RunCtx, cpu::CpuBackend};
use emvolve::job::{EngineKind, SimJob};

const FDTD: EngineKind = EngineKind::Fdtd;
const TLM2D: EngineKind = EngineKind::Tlm2d;
const TLM3D: EngineKind = EngineKind::Tlm;

/// The shipped design at `path` with `edits` (from, to) applied to its text.
fn variant(path: &str, edits: &[(&str, &str)]) -> Design {
    let mut text = std::fs::read_to_string(path).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{path} has no `{from}`");
        text = text.replace(from, to);
    }
    Design::parse(&text, path).unwrap()
}

/// The iris filter at cell a/n.
fn filter(n: usize) -> Design {
    variant("tests/fixtures/uniform/wr28_iris_filter.ron", &[("cell: \"a/28\"", &format!("cell: \"a/{n}\""))])
}

/// S-parameters of `d` at `sets` (port 1 driven) for each engine, all jobs in one batch.
fn simulate(d: &Design, sets: &[&str], engines: &[EngineKind]) -> Vec<SParams> {
    let values = d.values_from_sets(sets).unwrap();
    let jobs: Vec<SimJob> = engines.iter().map(|&e| d.jobs(&values, &[0], Some(e)).unwrap().remove(0)).collect();
    let t = std::time::Instant::now();
    let outs = CpuBackend.run(&jobs, &RunCtx::NONE).unwrap();
    let outs: Vec<_> = outs.into_iter().map(|o| o.unwrap()).collect();
    for (j, o) in jobs.iter().zip(&outs) {
        eprintln!("  {:?}: {} steps x {} cells, {:?}", j.engine, o.steps, o.cells, o.ended);
    }
    eprintln!("  batch of {} in {:.1} s", jobs.len(), t.elapsed().as_secs_f64());
    jobs.iter().zip(&outs).map(|(j, o)| SParams::from_runs(&[j], &[o])).collect()
}

fn db(sp: &SParams, i: usize, j: usize) -> Vec<f64> {
    sp.db(i, j).unwrap()
}

/// Centre of the -3 dB passband of S21 (edges interpolated linearly in dB).
fn centre(sp: &SParams) -> f64 {
    let (f, d) = (&sp.freqs, db(sp, 2, 1));
    let top = (0..d.len()).max_by(|&a, &b| d[a].total_cmp(&d[b])).unwrap();
    let level = d[top] - 3.0;
    let cross = |i: usize, j: usize| f[i] + (level - d[i]) / (d[j] - d[i]) * (f[j] - f[i]);
    let lo = (1..=top).rev().find(|&k| d[k - 1] < level).expect("passband's low edge in band");
    let hi = (top..d.len() - 1).find(|&k| d[k + 1] < level).expect("passband's high edge in band");
    0.5 * (cross(lo - 1, lo) + cross(hi + 1, hi))
}

/// Worst |dB difference| of S_ij between two runs where both exceed -20 dB, and where.
fn worst_db(a: &SParams, b: &SParams, i: usize, j: usize) -> (f64, f64) {
    let (da, dbb) = (db(a, i, j), db(b, i, j));
    (0..da.len())
        .filter(|&k| da[k] > -20.0 && dbb[k] > -20.0)
        .map(|k| ((da[k] - dbb[k]).abs(), a.freqs[k]))
        .fold((0.0, 0.0), |m, x| if x.0 > m.0 { x } else { m })
}

/// Largest complex difference of S_ij between two runs over the band.
fn worst_abs(a: &SParams, b: &SParams, i: usize, j: usize) -> f64 {
    a.get(i, j).unwrap().iter().zip(b.get(i, j).unwrap()).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
}

/// Print and return (centre shift relative to `r`, worst S11 dB, worst S21 dB) of `x`.
fn compare(tag: &str, r: &SParams, x: &SParams) -> (f64, f64, f64) {
    let shift = centre(x) / centre(r) - 1.0;
    let (s11, f11) = worst_db(r, x, 1, 1);
    let (s21, f21) = worst_db(r, x, 2, 1);
    eprintln!(
        "{tag}: centre {:.4} vs {:.4} GHz ({:+.3}%), worst S11 {s11:.2} dB at {:.2} GHz, worst S21 {s21:.2} dB at {:.2} GHz",
        centre(x) / 1e9,
        centre(r) / 1e9,
        100.0 * shift,
        f11 / 1e9,
        f21 / 1e9
    );
    (shift, s11, s21)
}

/// The filter at the values of the TLM issue, and at another point of its ranges.
const FILTER_SETS: [[&str; 4]; 2] = [["w1=3.6", "w2=2.6", "l1=4.97", "l2=5.55"], ["w1=3.9", "w2=2.4", "l1=5.2", "l2=5.8"]];

#[test]
fn iris_filter_tlm2d_agrees_with_fdtd() {
    for sets in FILTER_SETS {
        let s = simulate(&filter(28), &sets, &[FDTD, TLM2D]);
        let (shift, s11, s21) = compare(&format!("{sets:?} a/28, TLM2d vs FDTD"), &s[0], &s[1]);
        assert!(shift.abs() < 0.003, "passband centres {:.3}% apart", 100.0 * shift);
        assert!(s11 < 0.5 && s21 < 0.5, "S11 {s11:.2} dB, S21 {s21:.2} dB apart");
        // Same discrete problem: far inside the criteria (the residue is the time steps,
        // 0.598 and 0.592 ps, and the two absorbers).
        assert!(shift.abs() < 1e-4 && s11 < 0.2 && s21 < 0.1);
    }
}

/// A single iris (0.5 mm thick, 3.6 mm aperture) half way along a 20 mm WR-28 guide.
fn single_iris(n: usize) -> Design {
    let text = format!(
        r#"Design(
        name: "single_iris", units: Millimetre,
        constants: {{ "a": 7.112, "b": 3.556 }},
        geometry: [Iris(z: 9.75, thickness: 0.5, aperture: 3.6)],
        domain: (x: (0, "a"), y: (0, "b"), z: (0, 20)),
        boundaries: (x: Pec, y: Pec, z: Absorbing),
        ports: [Waveguide(name: "in", plane: Z(4)), Waveguide(name: "out", plane: Z(16))],
        band: (start: 26e9, stop: 38e9, points: 25),
        engine: Fdtd(cell: "a/{n}", invariant: Y, decay_db: -60),
        goals: [Goal(s: (2, 1), band: (30e9, 32e9), above_db: -10)],
    )"#
    );
    Design::parse(&text, "single_iris.ron").unwrap()
}

#[test]
fn single_iris_across_engines() {
    let s28 = simulate(&single_iris(28), &[], &[FDTD, TLM2D, TLM3D]);
    let s56 = simulate(&single_iris(56), &[], &[FDTD, TLM3D]);
    // TLM2d: the same discrete problem as FDTD.
    let (d11, d21) = (worst_abs(&s28[0], &s28[1], 1, 1), worst_abs(&s28[0], &s28[1], 2, 1));
    eprintln!("a/28 TLM2d vs FDTD: max |dS11| {d11:.1e}, max |dS21| {d21:.1e}");
    assert!(d11 < 2e-3 && d21 < 2e-3);
    // SCN: the iris edges half a cell from Yee's, first order in the cell.
    let gap = |r: &SParams, x: &SParams| worst_db(r, x, 1, 1).0.max(worst_db(r, x, 2, 1).0);
    let (g28, g56) = (gap(&s28[0], &s28[2]), gap(&s56[0], &s56[1]));
    eprintln!("SCN vs FDTD, worst dB over S11 and S21: {g28:.2} dB at a/28, {g56:.2} dB at a/56");
    // The criterion, met at a/56 (measured 0.38 dB); at a/28 it is missed (1.00 dB).
    assert!(g56 < 0.5, "SCN vs FDTD {g56:.2} dB at a/56");
    assert!(g28 < 1.3 && g56 < 0.55 * g28, "not first-order convergence: {g28:.2} -> {g56:.2} dB");
}

#[test]
fn iris_filter_tlm3d_converges_on_fdtd() {
    // NOT the acceptance criterion (see the file's notes): the SCN's iris edges differ
    // from Yee's at first order in the cell, so its passband sits low by a shift that
    // halves with the cell. Pinned here: the measured shifts at the issue's values
    // (-1.01% at a/28: 31.690 vs 32.012 GHz; -0.40% at a/56: 32.129 vs 32.258 GHz)
    // and their convergence.
    let sets = FILTER_SETS[0];
    let a28 = simulate(&filter(28), &sets, &[FDTD, TLM2D, TLM3D]);
    let a56 = simulate(&filter(56), &sets, &[FDTD, TLM3D]);
    let (c28, s11_28, s21_28) = compare("a/28 SCN vs FDTD", &a28[0], &a28[2]);
    let (c56, s11_56, s21_56) = compare("a/56 SCN vs FDTD", &a56[0], &a56[1]);
    compare("a/28 SCN vs TLM2d", &a28[1], &a28[2]);
    assert!(c28 < 0.0 && c28 > -0.012, "SCN centre {:.3}% from FDTD's at a/28", 100.0 * c28);
    assert!(c56 < 0.0 && c56.abs() < 0.5 * c28.abs(), "SCN centre {:.3}% at a/56 after {:.3}% at a/28", 100.0 * c56, 100.0 * c28);
    // The skirts follow the centres (measured S21 10.5 -> 5.2 dB, S11 16.2 -> 10.5 dB).
    assert!(s21_56 < 0.6 * s21_28 && s11_56 < 0.8 * s11_28, "S21 {s21_28:.1} -> {s21_56:.1} dB, S11 {s11_28:.1} -> {s11_56:.1} dB");
}

#[test]
fn patch_resonance_fdtd_vs_tlm() {
    // The shipped patch at 1.6 mm, the substrate kept at two cells (3.2 mm). Its
    // resonance is the peak of Re(Zin) (a probe's inductance only adds to Im(Zin)).
    let d = variant("tests/fixtures/uniform/patch_2g4.ron", &[("\"h\": 1.6", "\"h\": 3.2"), ("cell: 0.8", "cell: 1.6")]);
    let s = simulate(&d, &["L=29.3", "W=37.7", "feed=4.5"], &[FDTD, TLM3D]);
    let res = |sp: &SParams| {
        let z = sp.zin[0].as_ref().unwrap();
        let f = &sp.freqs;
        let k = (1..f.len() - 1).filter(|&k| f[k] < 2.5e9).max_by(|&a, &b| z[a].re.total_cmp(&z[b].re)).unwrap();
        let (a, b, c) = (z[k - 1].re, z[k].re, z[k + 1].re);
        f[k] + 0.5 * (a - c) / (a - 2.0 * b + c) * (f[1] - f[0])
    };
    let (ff, ft) = (res(&s[0]), res(&s[1]));
    let shift = ft / ff - 1.0;
    eprintln!("patch (1.6 mm): resonance FDTD {:.4} GHz, TLM {:.4} GHz ({:+.2}%)", ff / 1e9, ft / 1e9, 100.0 * shift);
    assert!((2.0e9..2.3e9).contains(&ff), "FDTD resonance {ff}");
    // The 1% criterion holds at the shipped 0.8 mm (+0.79%); the sheet-edge term doubles
    // it here (measured +1.50%). Pinned at 2%, not 1%: see the file's notes.
    assert!(shift.abs() < 0.02, "TLM resonance {:+.2}% from FDTD's", 100.0 * shift);
}
