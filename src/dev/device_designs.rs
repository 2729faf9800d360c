//! Device check of the shipped designs through the user's path: design file
//! -> jobs (every port driven, the design's own end criterion) -> CPU backend
//! and CUDA backend -> S-parameters, compared as relative differences.

use std::path::PathBuf;

use crate::design::Design;
use crate::engine::{Backend, RunCtx};
use crate::evaluate::evaluate_one;
use crate::job::EngineKind;

/// Compare CPU and `gpu` on each design (at its midpoint) under each engine; returns true when any fails.
pub fn check(files: &[PathBuf], engines: &[Option<EngineKind>], gpu: &dyn Backend, tol: f64) -> anyhow::Result<bool> {
    let cpu = crate::engine::cpu::CpuBackend;
    let mut bad = false;
    for f in files {
        let design = Design::load(f)?;
        let values = design.midpoint_values();
        let drives: Vec<usize> = (0..design.port_names().len()).collect();
        for &engine in engines {
            let name = engine.unwrap_or(design.engine_kind()).name();
            let t = std::time::Instant::now();
            let c = evaluate_one(&design, &values, &drives, engine, &cpu)?;
            let tc = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let g = evaluate_one(&design, &values, &drives, engine, gpu)?;
            let tg = t.elapsed().as_secs_f64();
            match (c, g) {
                (Ok(c), Ok(g)) => {
                    let d = super::compare::sparams_rel_diff(&c.sparams, &g.sparams);
                    let steps_c: Vec<usize> = c.outputs.iter().map(|o| o.steps).collect();
                    let steps_g: Vec<usize> = g.outputs.iter().map(|o| o.steps).collect();
                    let ok = d <= tol && steps_c == steps_g;
                    bad |= !ok;
                    println!(
                        "[design {} {name}] {} S rel diff {d:.2e}, steps cpu {steps_c:?} gpu {steps_g:?}, fitness cpu {:.6} gpu {:.6}, time cpu {tc:.1} s gpu {tg:.1} s",
                        design.name(),
                        if ok { "PASS" } else { "FAIL" },
                        c.fitness.total,
                        g.fitness.total
                    );
                }
                (c, g) => {
                    bad = true;
                    let why = |r: Result<_, crate::evaluate::CandidateFailure>| r.err().map_or("ok".to_string(), |e| e.to_string());
                    println!("[design {} {name}] FAIL: cpu {} gpu {}", design.name(), why(c), why(g));
                }
            }
        }
    }
    Ok(bad)
}

/// Compare CPU and `gpu` on `n` random feasible candidates of `file` (a GA
/// generation's first draw, every port driven, the design's own end
/// criterion): S as relative differences and the steps of every job; returns
/// true when any differs beyond `tol`. `engine`: the design's own (None) or another.
pub fn check_generation(file: &std::path::Path, n: usize, engine: Option<crate::job::EngineKind>, gpu: &dyn Backend, tol: f64) -> anyhow::Result<bool> {
    let design = Design::load(file)?;
    let drives: Vec<usize> = (0..design.port_names().len()).collect();
    let cands = crate::bench::design::random_candidates(&design, n);
    let t = std::time::Instant::now();
    let c = crate::evaluate::evaluate_designs(&design, &cands, &drives, engine, &crate::engine::cpu::CpuBackend, &RunCtx::NONE)?;
    let tc = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let g = crate::evaluate::evaluate_designs(&design, &cands, &drives, engine, gpu, &RunCtx::NONE)?;
    let tg = t.elapsed().as_secs_f64();
    let (mut worst, mut bad, mut same_steps, mut exact) = (0.0f64, false, 0, 0);
    for (k, (c, g)) in c.iter().zip(&g).enumerate() {
        match (c, g) {
            (Ok(c), Ok(g)) => {
                let d = super::compare::sparams_rel_diff(&c.sparams, &g.sparams);
                let sc: Vec<usize> = c.outputs.iter().map(|o| o.steps).collect();
                let sg: Vec<usize> = g.outputs.iter().map(|o| o.steps).collect();
                worst = worst.max(d);
                same_steps += (sc == sg) as usize;
                exact += (d == 0.0) as usize;
                if d > tol || sc != sg {
                    bad = true;
                    println!("[generation {} candidate {k}] FAIL: S rel diff {d:.2e}, steps cpu {sc:?} gpu {sg:?}", design.name());
                }
            }
            (Err(_), Err(_)) => {}
            (c, g) => {
                bad = true;
                let why = |r: &Result<_, crate::evaluate::CandidateFailure>| r.as_ref().err().map_or("ok".to_string(), |e| e.to_string());
                println!("[generation {} candidate {k}] FAIL: cpu {} gpu {}", design.name(), why(c), why(g));
            }
        }
    }
    println!(
        "[generation {} x {}] {}: S rel diff worst {worst:.2e} ({exact} of {} identical), steps equal {same_steps} of {}; time cpu {tc:.1} s gpu {tg:.1} s",
        cands.len(),
        design.name(),
        if bad { "FAIL" } else { "PASS" },
        cands.len(),
        cands.len()
    );
    Ok(bad)
}
