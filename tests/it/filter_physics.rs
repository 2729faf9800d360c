//! End-to-end physics of a shipped design through the whole seam (design
//! file -> jobs -> CPU FDTD -> S-parameters): the iris filter is lossless and
//! reciprocal, as a passive PEC structure must be.

use emvolve::design::Design;
use emvolve::engine::cpu::CpuBackend;
use emvolve::evaluate::evaluate_designs;
use emvolve::engine::RunCtx;

#[test]
fn iris_filter_is_lossless_and_reciprocal() {
    // The shipped filter is mirror-symmetric, which would make S21 = S12 trivially:
    // narrow the last iris so that reciprocity is a real test.
    let text = std::fs::read_to_string("designs/wr28_iris_filter.ron").unwrap();
    let last = text.rfind("aperture: \"w1\"").unwrap();
    let text = format!("{}aperture: \"0.8*w1\"{}", &text[..last], &text[last + "aperture: \"w1\"".len()..]);
    let d = Design::parse(&text, "asymmetric iris filter").unwrap();
    let values = d.values_from_sets(&["w1=3.9", "w2=2.5", "l1=5.0", "l2=5.6"]).unwrap();
    let res = evaluate_designs(&d, &[values], &[0, 1], None, &CpuBackend, &RunCtx::NONE).unwrap();
    let s = res.into_iter().next().unwrap().unwrap();
    let sp = &s.sparams;
    let (s11, s21, s12, s22) = (sp.get(1, 1).unwrap(), sp.get(2, 1).unwrap(), sp.get(1, 2).unwrap(), sp.get(2, 2).unwrap());
    let mut worst_power: f64 = 0.0;
    let mut worst_recip: f64 = 0.0;
    for k in 0..sp.freqs.len() {
        let p1 = s11[k].norm_sqr() + s21[k].norm_sqr();
        let p2 = s22[k].norm_sqr() + s12[k].norm_sqr();
        worst_power = worst_power.max((p1 - 1.0).abs()).max((p2 - 1.0).abs());
        worst_recip = worst_recip.max((s21[k] - s12[k]).norm());
    }
    eprintln!("max ||S11|^2+|S21|^2 - 1| = {worst_power:.2e}, max |S21 - S12| = {worst_recip:.2e}; {}", s.run_summary());
    assert!(worst_power < 0.02, "power balance off by {worst_power}");
    assert!(worst_recip < 0.01, "S21 - S12 = {worst_recip}");
    // A band-pass filter: it passes somewhere in the band and stops somewhere else.
    let db21 = sp.db(2, 1).unwrap();
    assert!(db21.iter().cloned().fold(f64::MIN, f64::max) > -3.0);
    assert!(db21.iter().cloned().fold(f64::MAX, f64::min) < -30.0);
}
