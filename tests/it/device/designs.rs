//! Each shipped design's jobs (midpoint values, every port driven, its own
//! engine) for a few hundred steps, on the GPU and on the CPU, in one batch.

use emvolve::design::Design;
use emvolve::dev::compare::{diff, FDTD_RULES, TLM_RULES};
use emvolve::engine::cpu::CpuBackend;
use emvolve::engine::{Backend, RunCtx};
use emvolve::job::{EngineKind, SimJob};

use super::common::{gpu, TOL};

const DESIGNS: [&str; 3] = ["designs/wr28_iris_filter.ron", "designs/patch_2g4.ron", "designs/microstrip_lowpass.ron"];

/// Every shipped design's jobs, `steps` steps each, with the engines to check them on.
fn jobs(steps: usize) -> Vec<SimJob> {
    let mut v = vec![];
    for f in DESIGNS {
        let d = Design::load(std::path::Path::new(f)).unwrap();
        let all: Vec<usize> = (0..d.port_names().len()).collect();
        let mut engines = vec![None];
        if f.contains("wr28") {
            // The iris filter is the TLM engines' shipped case too.
            engines.extend([Some(EngineKind::Tlm2d), Some(EngineKind::Tlm)]);
        }
        for e in engines {
            for mut j in d.jobs(&d.midpoint_values(), &all, e).unwrap() {
                j.stop.max_steps = steps;
                v.push(j);
            }
        }
    }
    v
}

#[test]
fn shipped_designs_match_the_cpu() {
    let Some(be) = gpu("shipped_designs_match_the_cpu") else { return };
    let jobs = jobs(400);
    let cpu = CpuBackend.run(&jobs, &RunCtx::NONE).unwrap();
    let dev = be.run(&jobs, &RunCtx::NONE).unwrap();
    let mut bad = vec![];
    for ((j, c), g) in jobs.iter().zip(&cpu).zip(&dev) {
        let rules = if j.engine == EngineKind::Fdtd { FDTD_RULES } else { TLM_RULES };
        let d = diff(j, c.as_ref(), g.as_ref(), rules);
        eprintln!("{:<70} V {:.1e} I {:.1e} S {:?} {}", j.label, d.v, d.i, d.s, if d.ok(TOL) { "ok" } else { "FAIL" });
        if !d.ok(TOL) {
            bad.push(format!("{}: {d:?}", j.label));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
