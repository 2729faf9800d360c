//! Device check of the shipped designs through the user's path: design file
//! -> jobs (every port driven, the design's own end criterion) -> CPU backend
//! and CUDA backend -> S-parameters, compared as relative differences.

use std::path::PathBuf;

use crate::design::Design;
use crate::engine::Backend;
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
