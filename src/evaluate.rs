//! The seam between a design and an engine: candidate parameter values become
//! simulation jobs, one backend batch runs them all, and each candidate gets
//! its S-parameters (and fitness) back — or the typed reason it has none.

use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::analysis::pattern::FarField;
use crate::analysis::SParams;
use crate::design::{Design, DesignError};
use crate::engine::{Backend, EngineError, RunCtx};
use crate::fitness::{Fitness, FitnessError};
use crate::job::{EndReason, EngineKind, SimFailure, SimJob, SimOutput};

/// Why a candidate has no fitness. The run goes on: the GA penalises the
/// candidate and records the reason (its text, with the stage it failed in).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CandidateFailure {
    /// The parameter values give no valid geometry or job.
    #[error("geometry: {0}")]
    Design(DesignError),
    /// The simulation was refused or diverged.
    #[error("simulation: {0}")]
    Simulation(SimFailure),
    /// The results could not be scored against the goals.
    #[error("fitness: {0}")]
    Fitness(FitnessError),
    /// An extra objective of the design could not be evaluated.
    #[error("objective: {0}")]
    Objective(DesignError),
    /// Reported by a farm worker: the text of one of the failures above, as
    /// that worker said it (the run records the same reason a local run would).
    #[error("{0}")]
    Remote(String),
}

/// One candidate to simulate: parameter values and the port columns (0-based) to drive.
#[derive(Debug, Clone)]
pub struct Request {
    pub values: BTreeMap<String, f64>,
    pub drives: Vec<usize>,
}

/// A simulated candidate: its jobs (one per driven port), their outputs, and
/// the S-parameter columns of the driven ports.
#[derive(Debug, Clone)]
pub struct Simulated {
    pub sparams: SParams,
    pub jobs: Vec<SimJob>,
    pub outputs: Vec<SimOutput>,
}

/// A simulated and scored candidate.
#[derive(Debug, Clone)]
pub struct Scored {
    pub sparams: SParams,
    pub fitness: Fitness,
    /// The far field, where the design asks for one.
    pub far_field: Option<FarField>,
    /// The jobs (one per driven port) and their outputs.
    pub jobs: Vec<SimJob>,
    pub outputs: Vec<SimOutput>,
}

impl Simulated {
    /// Cell (node) updates performed for this candidate.
    pub fn cell_updates(&self) -> f64 {
        cell_updates(&self.outputs)
    }
    /// How far the end criterion got (see [`decay`]).
    pub fn decay(&self) -> crate::ga::Decay {
        decay(&self.jobs, &self.outputs)
    }
    /// A warning line for files and output when a simulation was truncated.
    pub fn truncation_note(&self) -> Option<String> {
        truncation_note(&self.jobs, &self.outputs)
    }
    /// A one-line account of how the simulations ended.
    pub fn run_summary(&self) -> String {
        run_summary(&self.jobs, &self.outputs)
    }
}

impl Scored {
    /// Cell (node) updates performed for this candidate.
    pub fn cell_updates(&self) -> f64 {
        cell_updates(&self.outputs)
    }
    /// How far the end criterion got (see [`decay`]).
    pub fn decay(&self) -> crate::ga::Decay {
        decay(&self.jobs, &self.outputs)
    }
    /// A warning line for files and output when a simulation was truncated.
    pub fn truncation_note(&self) -> Option<String> {
        truncation_note(&self.jobs, &self.outputs)
    }
    /// A one-line account of how the simulations ended.
    pub fn run_summary(&self) -> String {
        run_summary(&self.jobs, &self.outputs)
    }
}

/// How far the end criterion got: the least decay over a candidate's
/// simulations, and whether any was cut off by the step cap first.
pub fn decay(jobs: &[SimJob], outputs: &[SimOutput]) -> crate::ga::Decay {
    let mut d = crate::ga::Decay { reached_db: f64::NEG_INFINITY, target_db: f64::NEG_INFINITY, truncated: false };
    for (o, j) in outputs.iter().zip(jobs) {
        let (db, capped) = match o.ended {
            EndReason::EnergyDecay { db } => (db, false),
            EndReason::MaxSteps { db } => (db, true),
        };
        d.reached_db = d.reached_db.max(db);
        d.target_db = d.target_db.max(j.stop.decay_db);
        // At the cap, a decay already past the target is as good as converged,
        // and so is a run whose ringing tail was continued within its stated error.
        d.truncated |= capped && db > j.stop.decay_db && continued(j, o).is_none();
    }
    d
}

/// The continuation past the step cap of a run cut off there (see `analysis::tail`).
fn continued(job: &SimJob, out: &SimOutput) -> Option<crate::analysis::tail::Continued> {
    let plain = crate::analysis::tail::PortDfts::of(job, out);
    crate::analysis::tail::continue_run(job, out, &plain)
}

/// A warning line for files and output when a simulation was truncated.
pub fn truncation_note(jobs: &[SimJob], outputs: &[SimOutput]) -> Option<String> {
    let d = decay(jobs, outputs);
    d.truncated.then(|| format!("WARNING: {d}; the S-parameters miss the tail of the response and are uncertain (raise the engine's max_steps or max_time)"))
}

fn cell_updates(outputs: &[SimOutput]) -> f64 {
    outputs.iter().map(|o| o.cells as f64 * o.steps as f64).sum()
}

/// "drive in: 4000 steps of 0.478 ps, 12000 cells, energy decayed to -50.0 dB; drive out: ...".
fn run_summary(jobs: &[SimJob], outputs: &[SimOutput]) -> String {
    outputs
        .iter()
        .zip(jobs)
        .map(|(o, j)| {
            let why = match o.ended {
                EndReason::EnergyDecay { db } => format!("energy decayed to {db:.1} dB"),
                EndReason::MaxSteps { db } => match (db > j.stop.decay_db).then(|| continued(j, o)).flatten() {
                    Some(c) => format!(
                        "step cap reached (energy at {db:.1} dB), tail continued: one mode at {:.3} GHz, Q {:.0}, |S| within {:.0e}",
                        c.freq_hz / 1e9,
                        c.q,
                        c.error.max(1e-12)
                    ),
                    None => format!("step cap reached (energy at {db:.1} dB)"),
                },
            };
            let drive = j.ports.get(j.drive).map_or("?", |p| p.name.as_str());
            format!("drive {drive}: {} steps of {:.3} ps, {} cells, {why}", o.steps, o.dt * 1e12, o.cells)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Simulate every request in ONE backend batch. An `Err` is fatal (the engine
/// failed); a candidate that cannot be built or whose simulation fails gets its
/// [`CandidateFailure`] and the others are unaffected. `ctx.done(n)` follows the
/// batch in requests (in proportion to the jobs finished); `ctx.watch[k]`
/// follows the k-th job built (request by request, one per drive).
pub fn simulate_batch(
    design: &Design,
    requests: &[Request],
    engine: Option<EngineKind>,
    backend: &dyn Backend,
    ctx: &RunCtx,
) -> Result<Vec<Result<Simulated, CandidateFailure>>, EngineError> {
    let mut jobs = Vec::new();
    let mut built: Vec<Result<Range<usize>, CandidateFailure>> = Vec::with_capacity(requests.len());
    // The candidates' geometry and voxels on all cores (a GA generation's share of the host time otherwise).
    let each: Vec<_> = requests.par_iter().map(|r| design.jobs(&r.values, &r.drives, engine)).collect();
    for r in each {
        match r {
            Ok(js) => {
                let start = jobs.len();
                jobs.extend(js);
                built.push(Ok(start..jobs.len()));
            }
            Err(e) => built.push(Err(CandidateFailure::Design(e))),
        }
    }
    let (n_req, n_jobs) = (requests.len(), jobs.len().max(1));
    let done = ctx.done;
    let outs = backend.run(&jobs, &RunCtx::watched(&|n| done(n * n_req / n_jobs), ctx.watch))?;
    // Each candidate's outputs, in order; then the DFTs of all candidates in
    // parallel (a generation's post-processing is seconds of sequential work
    // otherwise, as long as the GPU's simulation).
    let mut outs = outs.into_iter();
    let work: Vec<_> = built
        .into_iter()
        .map(|b| {
            b.map(|range| {
                let mine: Vec<_> = outs.by_ref().take(range.len()).collect();
                (range, mine)
            })
        })
        .collect();
    Ok(work
        .into_par_iter()
        .map(|w| {
            let (range, mine) = w?;
            let outputs = mine.into_iter().collect::<Result<Vec<_>, _>>().map_err(CandidateFailure::Simulation)?;
            let js: Vec<&SimJob> = jobs[range.clone()].iter().collect();
            let os: Vec<&SimOutput> = outputs.iter().collect();
            if js.is_empty() {
                return Err(CandidateFailure::Design(DesignError::invalid(design.origin(), "ports", "no port was driven")));
            }
            let sparams = SParams::from_runs(&js, &os);
            Ok(Simulated { sparams, jobs: jobs[range].to_vec(), outputs })
        })
        .collect())
}

/// Score a simulated candidate against the design's goals (its far field
/// first, where the design asks for one).
pub fn score(design: &Design, sim: Simulated) -> Result<Scored, CandidateFailure> {
    let far_field = far_field(design, &sim)?;
    let fitness = crate::fitness::evaluate_reading(design.goals(), &sim.sparams, far_field.as_ref(), design.reading()).map_err(CandidateFailure::Fitness)?;
    Ok(Scored { sparams: sim.sparams, fitness, far_field, jobs: sim.jobs, outputs: sim.outputs })
}

/// The far field of the simulation that recorded a Huygens box, if one did.
pub fn far_field(design: &Design, sim: &Simulated) -> Result<Option<FarField>, CandidateFailure> {
    let step = design.far_field().map_or(5.0, |f| f.step_deg);
    for (job, out) in sim.jobs.iter().zip(&sim.outputs) {
        if let Some(ff) = FarField::compute(job, out, step).map_err(|m| CandidateFailure::Simulation(SimFailure::Invalid(m)))? {
            return Ok(Some(ff));
        }
    }
    Ok(None)
}

/// Simulate and score `candidates` (parameter values) with port columns
/// `drives` (0-based) driven, in ONE backend batch (see [`simulate_batch`],
/// which says what `ctx` follows).
pub fn evaluate_designs(
    design: &Design,
    candidates: &[BTreeMap<String, f64>],
    drives: &[usize],
    engine: Option<EngineKind>,
    backend: &dyn Backend,
    ctx: &RunCtx,
) -> Result<Vec<Result<Scored, CandidateFailure>>, EngineError> {
    let requests: Vec<Request> = candidates.iter().map(|v| Request { values: v.clone(), drives: drives.to_vec() }).collect();
    let sims = simulate_batch(design, &requests, engine, backend, ctx)?;
    Ok(sims.into_par_iter().map(|r| r.and_then(|s| score(design, s))).collect())
}

/// Simulate and score one candidate alone.
pub fn evaluate_one(
    design: &Design,
    values: &BTreeMap<String, f64>,
    drives: &[usize],
    engine: Option<EngineKind>,
    backend: &dyn Backend,
) -> Result<Result<Scored, CandidateFailure>, EngineError> {
    let mut r = evaluate_designs(design, std::slice::from_ref(values), drives, engine, backend, &RunCtx::NONE)?;
    // simulate_batch answers every request, so the one result is there.
    Ok(r.pop().unwrap_or_else(|| Err(CandidateFailure::Design(DesignError::invalid(design.origin(), "parameters", "the batch returned no result")))))
}
