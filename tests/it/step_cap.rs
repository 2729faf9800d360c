//! The shipped iris filter's step cap against its own parameter ranges (issue
//! 35, item 12). A GA run of it visits mistuned candidates whose middle cavity
//! rings with a Q of 300 to 30,000; at the design's former cap of 30,000
//! steps they were cut off with the energy at -20 to -48 dB. Such a run is
//! continued past the cap from its one ringing mode (`analysis::tail`) and
//! counts as converged when the continuation is measured to be right; here it
//! is checked against the same candidate simulated until its energy has
//! decayed by 100 dB. Where two modes still ring the continuation cannot be
//! used; the design's cap is now a simulated time (25 ns), long enough for
//! the slowest candidate of the shipped run, whatever its time step.

use emvolve::analysis::sparams::column;
use emvolve::analysis::tail::{continue_run, PortDfts, TAIL_TOL};
use emvolve::analysis::SParams;
use emvolve::design::Design;
use emvolve::engine::cpu::CpuBackend;
use emvolve::engine::{Backend, RunCtx};
use emvolve::evaluate::decay;
use emvolve::job::EndReason;

#[test]
fn a_ringing_candidate_cut_off_at_the_cap_is_continued_to_the_converged_answer() {
    let d = Design::load(std::path::Path::new("designs/wr28_iris_filter.ron")).unwrap();
    // Visited by the shipped GA (seed 7, generation 0): a mode at 28.7 GHz, Q 319.
    let values = d.values_from_sets(&["l1=4.0353318717065", "l2=6.212240196530873", "w1=3.643807626394404", "w2=3.2320848541508047"]).unwrap();
    let mut cut = d.jobs(&values, &d.drives_needed(), None).unwrap().remove(0);
    // The design's cap before it became a time (25 ns, which this candidate
    // rings down within): 30,000 steps.
    cut.stop.max_time = None;
    cut.stop.max_steps = 30_000;
    let mut long = cut.clone();
    long.stop.decay_db = -100.0;
    long.stop.max_steps = 1_000_000;
    let outs: Vec<_> = CpuBackend.run(&[cut.clone(), long.clone()], &RunCtx::NONE).unwrap().into_iter().map(|r| r.unwrap()).collect();
    let (o_cut, o_long) = (&outs[0], &outs[1]);
    assert!(matches!(o_cut.ended, EndReason::MaxSteps { db } if db > -50.0), "the candidate no longer reaches the cap: {:?}", o_cut.ended);
    assert!(matches!(o_long.ended, EndReason::EnergyDecay { .. }), "{:?}", o_long.ended);

    // The continuation is accepted, with its stated error, and the run counts as converged.
    let plain = PortDfts::of(&cut, o_cut);
    let c = continue_run(&cut, o_cut, &plain).expect("the ringing tail is continued");
    assert!(c.error <= TAIL_TOL && (c.freq_hz / 28.71e9 - 1.0).abs() < 0.01 && c.q > 200.0 && c.q < 500.0, "{:.4e} Hz Q {} error {}", c.freq_hz, c.q, c.error);
    assert!(!decay(&[cut.clone()], &[o_cut.clone()]).truncated);

    // Against the converged run: S21 and S11 agree to the stated tolerance
    // (|S| linear); the cut-off run alone is off by far more.
    let s_cut = SParams::from_runs(&[&cut], &[o_cut]);
    let s_long = SParams::from_runs(&[&long], &[o_long]);
    let s_plain = column(&cut, &plain);
    let worst = |a: &[num_complex::Complex64], b: &[num_complex::Complex64]| a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0f64, f64::max);
    for (i, name) in [(1, "S11"), (2, "S21")] {
        let (got, want) = (s_cut.get(i, 1).unwrap(), s_long.get(i, 1).unwrap());
        let (continued, truncated) = (worst(got, want), worst(&s_plain[i - 1], want));
        eprintln!("{name}: continued {continued:.2e}, cut off {truncated:.2e}");
        assert!(continued < TAIL_TOL, "{name}: continued run off by {continued}");
        assert!(truncated > 10.0 * continued, "{name}: the cut-off run is off by only {truncated}");
    }
}

/// The cap in simulated time lets every candidate of the shipped run (seed 7)
/// converge. Its slowest, a random candidate of generation 0 with a fine mesh
/// (0.162 ps steps), was cut off at -18 dB by the former cap of 30,000 steps,
/// with more than one mode ringing, so that it could not be continued (and at
/// -28 dB by a cap of 12 ns). At the shipped 25 ns its energy is at -45 dB
/// with one mode left, which the continuation takes.
#[test]
fn the_shipped_time_cap_lets_the_slowest_candidate_of_the_shipped_run_converge() {
    let d = Design::load(std::path::Path::new("designs/wr28_iris_filter.ron")).unwrap();
    let values = d.values_from_sets(&["l1=5.951969214189423", "l2=5.3772961884475325", "w1=2.74928469671523", "w2=2.5128097048203824"]).unwrap();
    let job = d.jobs(&values, &d.drives_needed(), None).unwrap().remove(0);
    assert_eq!((job.stop.max_time, job.stop.decay_db), (Some(25e-9), -50.0), "the shipped cap");
    let mut old = job.clone();
    old.stop.max_time = None;
    old.stop.max_steps = 30_000;
    let outs: Vec<_> = CpuBackend.run(&[old.clone(), job.clone()], &RunCtx::NONE).unwrap().into_iter().map(|r| r.unwrap()).collect();
    eprintln!("old cap: {:?} after {} steps of {:.3} ps; time cap: {:?} after {} steps", outs[0].ended, outs[0].steps, outs[0].dt * 1e12, outs[1].ended, outs[1].steps);
    assert!(matches!(outs[0].ended, EndReason::MaxSteps { db } if db > -25.0), "{:?}", outs[0].ended);
    assert!(decay(&[old], &outs[..1]).truncated, "the old cap's run was continued after all");
    // 25 ns of 0.162 ps steps: the cap is the time, not max_steps.
    assert!(matches!(outs[1].ended, EndReason::MaxSteps { db } if db < -40.0), "{:?}", outs[1].ended);
    assert_eq!(outs[1].steps, (25e-9 / outs[1].dt).ceil() as usize);
    assert!(!decay(&[job], &outs[1..]).truncated, "the time cap's run was not continued");
}
