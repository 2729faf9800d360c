//! The optimiser sees the device, not the mesh (issue 9): at the shipped iris
//! filter's default (automatic) mesh, a 0.40 mm sweep of the outer aperture
//! `w1` in 41 steps changes the response at every step, and no step moves the
//! passband centre more than 3x the median step. Where a candidate's mesh
//! gains or loses a line the centre takes a small extra step (measured: up to
//! 8.4 MHz, 0.027 %, once against the trend), bounded here.
//! On the old uniform a/28 mesh the same sweep gave runs of bit-identical
//! answers and one cliff (apertures snapped to 2-cell steps).

use std::collections::BTreeMap;

use emvolve::design::Design;
use emvolve::engine::cpu::CpuBackend;
use emvolve::evaluate::evaluate_designs;

/// Frequency where `db` crosses `level` between samples `k0` and `k1` (linear in dB).
fn cross(f: &[f64], db: &[f64], k0: usize, k1: usize, level: f64) -> f64 {
    f[k0] + (level - db[k0]) * (f[k1] - f[k0]) / (db[k1] - db[k0])
}

/// The -3 dB edges of |S21| around its passband (the outermost crossings
/// inside 29.5-34 GHz) and their midpoint.
fn passband(f: &[f64], db: &[f64]) -> (f64, f64, f64) {
    let idx: Vec<usize> = (0..f.len()).filter(|&k| f[k] >= 29.5e9 && f[k] <= 34e9).collect();
    let above: Vec<usize> = idx.iter().copied().filter(|&k| db[k] >= -3.0).collect();
    assert!(!above.is_empty(), "no passband");
    let (lo, hi) = (above[0], *above.last().unwrap());
    let (a, b) = (cross(f, db, lo - 1, lo, -3.0), cross(f, db, hi, hi + 1, -3.0));
    (a, b, 0.5 * (a + b))
}

#[test]
fn iris_filter_response_follows_w1_smoothly_at_the_default_mesh() {
    let d = Design::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/designs/wr28_iris_filter.ron"))).unwrap();
    let base = d.values_from_sets(&["w1=3.4", "w2=2.7", "l1=5.3", "l2=5.6"]).unwrap();
    let w1: Vec<f64> = (0..41).map(|k| 3.40 + 0.01 * k as f64).collect();
    let cands: Vec<BTreeMap<String, f64>> = w1
        .iter()
        .map(|&w| {
            let mut v = base.clone();
            v.insert("w1".into(), w);
            v
        })
        .collect();
    let res = evaluate_designs(&d, &cands, &[0], None, &CpuBackend, &|_| {}).unwrap();
    let mut centres = vec![];
    let mut s21s: Vec<Vec<f64>> = vec![];
    for (w, r) in w1.iter().zip(res) {
        let s = r.unwrap_or_else(|e| panic!("w1 = {w}: {e}"));
        let db = s.sparams.db(2, 1).unwrap();
        let (lo, hi, c) = passband(&s.sparams.freqs, &db);
        eprintln!("w1 = {w:.2} mm: -3 dB edges {:.4} .. {:.4} GHz, centre {:.4} GHz; {}", lo / 1e9, hi / 1e9, c / 1e9, s.run_summary());
        centres.push(c);
        s21s.push(db);
    }
    for k in 1..s21s.len() {
        assert!(s21s[k] != s21s[k - 1], "w1 = {:.2} and {:.2} give identical |S21|", w1[k - 1], w1[k]);
    }
    let steps: Vec<f64> = centres.windows(2).map(|c| c[1] - c[0]).collect();
    let mut sorted = steps.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let worst = steps.iter().map(|s| s.abs()).fold(0.0, f64::max);
    let off = steps.iter().map(|s| (s - median).abs()).fold(0.0, f64::max);
    eprintln!("centre steps: median {:.3} MHz, largest {:.3} MHz ({:.2}x), largest departure from the median {:.3} MHz", median / 1e6, worst / 1e6, worst / median.abs(), off / 1e6);
    assert!(worst <= 3.0 * median.abs(), "a step of {worst} Hz against a median of {median} Hz");
    // Where a line is added or removed (a few times in the sweep) the centre
    // takes a small extra step; it must stay far inside the mesh's accuracy
    // (0.16 % = 50 MHz, docs/ACCURACY.md): 10 MHz, 0.03 %. The old uniform mesh
    // stepped by hundreds of MHz at its cliffs. The centre moves the same way
    // at every other step: at most one step in ten against the trend.
    assert!(off <= 10e6, "a step departs from the median step by {off} Hz");
    let against = steps.iter().filter(|s| s.signum() != median.signum()).count();
    assert!(against * 10 <= steps.len(), "{against} of {} steps go against the trend", steps.len());
}
