//! The seam between a design and an engine: candidate parameter values become
//! simulation jobs, one backend batch runs them all, and each candidate gets
//! its S-parameters and fitness back — or the reason it has none.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analysis::SParams;
use crate::design::Design;
use crate::engine::{Backend, EngineError, StepWatch};
use crate::fitness::Fitness;
use crate::job::{EndReason, EngineKind, SimJob, SimOutput};

/// A simulated and scored candidate.
#[derive(Debug, Clone)]
pub struct Scored {
    pub sparams: SParams,
    pub fitness: Fitness,
    /// The jobs (one per driven port) and their outputs.
    pub jobs: Vec<SimJob>,
    pub outputs: Vec<SimOutput>,
}

impl Scored {
    /// Cell (node) updates performed for this candidate.
    pub fn cell_updates(&self) -> f64 {
        self.outputs.iter().map(|o| o.cells as f64 * o.steps as f64).sum()
    }
    /// How far the end criterion got: the least decay over this candidate's
    /// simulations, and whether any was cut off by the step cap first.
    pub fn decay(&self) -> crate::ga::Decay {
        let mut d = crate::ga::Decay { reached_db: f64::NEG_INFINITY, target_db: f64::NEG_INFINITY, truncated: false };
        for (o, j) in self.outputs.iter().zip(&self.jobs) {
            let (db, capped) = match o.ended {
                EndReason::EnergyDecay { db } => (db, false),
                EndReason::MaxSteps { db } => (db, true),
            };
            d.reached_db = d.reached_db.max(db);
            d.target_db = d.target_db.max(j.stop.decay_db);
            // At the cap, a decay already past the target is as good as converged.
            d.truncated |= capped && db > j.stop.decay_db;
        }
        d
    }
    /// A warning line for files and output when a simulation was truncated.
    pub fn truncation_note(&self) -> Option<String> {
        let d = self.decay();
        d.truncated.then(|| {
            format!(
                "WARNING: {d}; the S-parameters miss the tail of the response and are uncertain (raise the engine's max_steps)"
            )
        })
    }
    /// A one-line account of how the simulations ended.
    pub fn run_summary(&self) -> String {
        self.outputs
            .iter()
            .zip(&self.jobs)
            .map(|(o, j)| {
                let why = match o.ended {
                    EndReason::EnergyDecay { db } => format!("energy decayed to {db:.1} dB"),
                    EndReason::MaxSteps { db } => format!("step cap reached (energy at {db:.1} dB)"),
                };
                format!("drive {}: {} steps of {:.3} ps, {} cells, {why}", j.ports[j.drive].name, o.steps, o.dt * 1e12, o.cells)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Summary of how a candidate's simulation ended, kept in checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub steps: Vec<usize>,
    pub ended: Vec<EndReason>,
}

/// Simulate and score `candidates` (parameter values) with port columns
/// `drives` (0-based) driven, in ONE backend batch. An `Err` is fatal (the
/// engine failed); a candidate that cannot be built, diverges or cannot be
/// scored gets `Err(reason)` and the others are unaffected.
pub fn evaluate_designs(
    design: &Design,
    candidates: &[BTreeMap<String, f64>],
    drives: &[usize],
    engine: Option<EngineKind>,
    backend: &dyn Backend,
    done: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Result<Scored, String>>, EngineError> {
    evaluate_designs_watched(design, candidates, drives, engine, backend, done, &[])
}

/// [`evaluate_designs`], with `watch[k]` following the k-th job built (candidate
/// by candidate, one per drive) while it steps: the `simulate` progress bar.
pub fn evaluate_designs_watched(
    design: &Design,
    candidates: &[BTreeMap<String, f64>],
    drives: &[usize],
    engine: Option<EngineKind>,
    backend: &dyn Backend,
    done: &(dyn Fn(usize) + Sync),
    watch: &[StepWatch],
) -> Result<Vec<Result<Scored, String>>, EngineError> {
    let per = drives.len().max(1);
    let mut jobs = Vec::new();
    let mut built: Vec<Result<std::ops::Range<usize>, String>> = Vec::new();
    for values in candidates {
        match design.jobs(values, drives, engine) {
            Ok(js) => {
                let start = jobs.len();
                jobs.extend(js);
                built.push(Ok(start..jobs.len()));
            }
            Err(e) => built.push(Err(format!("geometry: {e}"))),
        }
    }
    let outs = backend.run_batch_watched(&jobs, &|n| done(n / per), watch)?;
    // Each candidate's outputs, in order; then the DFTs and fitness of all
    // candidates in parallel (a generation's post-processing is seconds of
    // sequential work otherwise, as long as the GPU's simulation).
    let mut outs = outs.into_iter();
    let mut work = Vec::with_capacity(candidates.len());
    for b in built {
        match b {
            Ok(range) => {
                let mine: Vec<_> = outs.by_ref().take(range.len()).collect();
                work.push(Ok((range, mine)));
            }
            Err(e) => work.push(Err(e)),
        }
    }
    let res = work
        .into_par_iter()
        .map(|w| {
            let (range, mine) = w?;
            let mut outputs = Vec::with_capacity(mine.len());
            for o in mine {
                outputs.push(o.map_err(|e| format!("simulation: {e}"))?);
            }
            let js: Vec<&SimJob> = jobs[range.clone()].iter().collect();
            let os: Vec<&SimOutput> = outputs.iter().collect();
            let sp = SParams::from_runs(&js, &os);
            match design.fitness(&sp) {
                Ok(fitness) => Ok(Scored { sparams: sp, fitness, jobs: jobs[range].to_vec(), outputs }),
                Err(e) => Err(format!("fitness: {e}")),
            }
        })
        .collect();
    Ok(res)
}

/// The goal masks of `design` for plots.
pub fn masks(design: &Design) -> Vec<crate::plot::sparams::Mask> {
    use crate::fitness::Limit;
    design
        .goals()
        .iter()
        .map(|g| {
            let (level_db, above) = match g.limit {
                Limit::Above(l) => (l, true),
                Limit::Below(l) => (l, false),
            };
            crate::plot::sparams::Mask { s: g.s, f1: g.band.0, f2: g.band.1, level_db, above }
        })
        .collect()
}
