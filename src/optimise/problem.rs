//! [`DesignProblem`]: the GA's `Problem` for one design. A generation's new
//! genomes become one backend batch, the best design's missing port columns
//! (asked for by the best-design observer) riding along in it. [`Simulator`]:
//! what simulating a candidate takes, shared with the observer and `inspect`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use super::{lock, Shared};
use crate::design::Design;
use crate::engine::{Backend, RunCtx};
use crate::analysis::pattern::FarField;
use crate::analysis::SParams;
use crate::evaluate::{evaluate_one, score, simulate_batch, CandidateFailure, Request, Scored, Simulated};
use crate::farm::{Dispatcher, FarmRequest};
use crate::fitness::Fitness;
use crate::ga::Decay;
use crate::ga::genome::genome_key;
use crate::ga::problem::{Evaluation, Extra, Problem};
use crate::ga::GeneSpec;
use crate::job::EngineKind;

/// Everything needed to simulate a candidate: shared by the problem and the observers.
pub struct Simulator {
    pub design: Design,
    pub backend: Arc<dyn Backend>,
    pub engine: Option<EngineKind>,
}

impl Simulator {
    /// Parameter values of a genome (genes are in parameter-name order).
    pub fn values(&self, x: &[f64]) -> BTreeMap<String, f64> {
        self.design.parameter_names().into_iter().zip(x.iter().copied()).collect()
    }

    /// Simulate and score one candidate alone, with the given port columns driven.
    pub fn simulate(&self, x: &[f64], drives: &[usize]) -> anyhow::Result<Result<Scored, CandidateFailure>> {
        Ok(evaluate_one(&self.design, &self.values(x), drives, self.engine, self.backend.as_ref())?)
    }

    /// Every port (0-based), as Touchstone files need them driven.
    pub fn all_ports(&self) -> Vec<usize> {
        (0..self.design.port_names().len()).collect()
    }
}

/// The GA problem of one design.
pub struct DesignProblem {
    sim: Arc<Simulator>,
    genes: Vec<GeneSpec>,
    drives: Vec<usize>,
    n_extra: usize,
    pub(crate) shared: Arc<Mutex<Shared>>,
    /// Where the batches go when the run is farmed out (None: the backend here).
    farm: Option<Arc<Dispatcher>>,
}

/// A simulated candidate as the problem uses it, from this host's backend or a farm worker.
struct Done {
    sparams: SParams,
    /// None for the best design's missing columns (not scored).
    fitness: Option<Fitness>,
    far_field: Option<FarField>,
    runs: String,
    decay: Decay,
    cell_updates: f64,
}

impl DesignProblem {
    pub fn new(sim: Arc<Simulator>) -> DesignProblem {
        let genes = sim.design.genes();
        let drives = sim.design.drives_needed();
        let n_extra = sim.design.objective_labels().len().saturating_sub(1);
        DesignProblem { sim, genes, drives, n_extra, shared: Arc::default(), farm: None }
    }

    /// What simulating a candidate takes.
    pub fn simulator(&self) -> &Arc<Simulator> {
        &self.sim
    }

    /// Send the batches to a farm's workers instead of this host's backend.
    pub fn with_farm(mut self, farm: Arc<Dispatcher>) -> DesignProblem {
        self.farm = Some(farm);
        self
    }

    /// The batch on this host's backend; the last `requests.len() - scored` are not scored.
    fn local_batch(&self, requests: &[Request], scored: usize, progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<(Result<Done, CandidateFailure>, Option<String>)>> {
        let sims = self.run_batch(requests, scored, progress)?;
        let design = &self.sim.design;
        Ok(sims
            .into_par_iter()
            .enumerate()
            .map(|(i, r)| {
                let d = r.and_then(|s| {
                    let cell_updates = s.cell_updates();
                    if i >= scored {
                        return Ok(Done { runs: s.run_summary(), decay: s.decay(), sparams: s.sparams, fitness: None, far_field: None, cell_updates });
                    }
                    let s = score(design, s)?;
                    Ok(Done { runs: s.run_summary(), decay: s.decay(), sparams: s.sparams, fitness: Some(s.fitness), far_field: s.far_field, cell_updates })
                });
                (d, None)
            })
            .collect())
    }

    /// The batch on the farm: the same outcomes, each with its worker's name.
    /// Far fields stay with the workers (this host keeps no Huygens data).
    fn farm_batch(&self, farm: &Dispatcher, requests: &[Request], scored: usize, progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<(Result<Done, CandidateFailure>, Option<String>)>> {
        let reqs: Vec<FarmRequest> =
            requests.iter().enumerate().map(|(i, r)| FarmRequest { values: r.values.clone(), drives: r.drives.clone(), score: i < scored }).collect();
        let design = &self.sim.design;
        let results = farm.evaluate(design.text(), &design.hash(), self.sim.engine, &reqs, &|n| progress(n.min(scored)))?;
        Ok(results
            .into_iter()
            .map(|r| {
                let d = r
                    .outcome
                    .map(|o| Done { sparams: o.sparams, fitness: o.fitness, far_field: None, runs: o.runs, decay: o.decay, cell_updates: o.cell_updates })
                    .map_err(CandidateFailure::Remote);
                (d, Some(r.worker))
            })
            .collect())
    }

    /// The batch on this host's backend. `progress` counts only the first
    /// `shown` (the scored ones) and is told only of a count above every count
    /// told before: the engine's threads report as they finish, in any order.
    fn run_batch(&self, requests: &[Request], shown: usize, progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Result<Simulated, CandidateFailure>>> {
        let sim = &self.sim;
        let told = AtomicUsize::new(0);
        let done = |n: usize| {
            let n = n.min(shown);
            if told.fetch_max(n, Ordering::Relaxed) < n {
                progress(n);
            }
        };
        Ok(simulate_batch(&sim.design, requests, sim.engine, sim.backend.as_ref(), &RunCtx::progress(&done))?)
    }
}

impl Problem for DesignProblem {
    fn genes(&self) -> Vec<GeneSpec> {
        self.genes.clone()
    }
    fn n_objectives(&self) -> usize {
        1 + self.n_extra
    }
    fn constraint_violation(&self, x: &[f64]) -> f64 {
        self.sim.design.constraint_violation(&self.sim.values(x))
    }
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
        let values: Vec<_> = xs.iter().map(|x| self.sim.values(x)).collect();
        let mut requests: Vec<Request> = values.iter().map(|v| Request { values: v.clone(), drives: self.drives.clone() }).collect();
        let wanted = lock(&self.shared).wanted.take();
        if let Some(w) = &wanted {
            requests.push(Request { values: w.values.clone(), drives: w.drives.clone() });
        }
        let t = Instant::now();
        let mut done = match &self.farm {
            Some(farm) => self.farm_batch(farm, &requests, xs.len(), progress)?,
            None => self.local_batch(&requests, xs.len(), progress)?,
        };
        let wall = t.elapsed().as_secs_f64().max(1e-9);
        let updates: f64 = done.iter().filter_map(|(r, _)| r.as_ref().ok()).map(|s| s.cell_updates).sum();
        if let Some(w) = wanted {
            // The last request was the best design's columns: they go to the observer.
            let answer = done.pop().map_or_else(|| Err(no_result(&self.sim)), |(r, _)| r.map(|s| s.sparams));
            lock(&self.shared).answered = Some((w, answer));
        }
        let design = &self.sim.design;
        let rate = (updates > 0.0).then_some(updates / wall);
        let n = self.n_objectives();
        let mut out = Vec::with_capacity(xs.len());
        let mut shared = lock(&self.shared);
        shared.far_fields.clear();
        for ((x, v), (r, worker)) in xs.iter().zip(&values).zip(done) {
            // Every genome of the batch passed the constraint check (the GA asks
            // it first), so the violation stays 0: it is not evaluated again.
            let e = r.and_then(|s| {
                let fitness = s.fitness.ok_or_else(|| no_result(&self.sim))?;
                let extra_objectives = design.extra_objectives(v).map_err(CandidateFailure::Objective)?;
                let mut objectives = vec![fitness.total];
                objectives.extend(extra_objectives);
                let extra = Extra { runs: Some(s.runs), goals: fitness.per_goal, ..Extra::default() };
                if let Some(ff) = s.far_field {
                    shared.far_fields.insert(genome_key(x), ff);
                }
                shared.sparams.insert(genome_key(x), s.sparams);
                Ok(Evaluation { objectives, extra, cells_per_second: rate, decay: Some(s.decay), ..Evaluation::ok(vec![]) })
            });
            let mut e = e.unwrap_or_else(|reason| Evaluation::failed(reason.to_string(), n));
            e.worker = worker;
            // A truncated simulation's fitness is uncertain: it ranks as a
            // constraint violation of its shortfall in dB, behind every converged
            // design (and never meets a fitness target); of two truncated designs
            // the one nearer its decay target wins. See `truncation_penalty`.
            e.constraint_violation += truncation_penalty(&e);
            out.push(e);
        }
        Ok(out)
    }
}

/// The error for a request the batch gave no result for (a backend's fault).
fn no_result(sim: &Simulator) -> CandidateFailure {
    CandidateFailure::Design(crate::design::DesignError::invalid(sim.design.origin(), "ports", "the batch returned no result for the best design's columns"))
}

/// The constraint violation a truncated simulation adds: its shortfall from the
/// decay target in dB (0 for a converged one).
///
/// Why penalise rather than re-run longer: the tail a truncated run leaves out
/// biases its S-parameters in no known direction (a ringing resonator can look
/// like a pass band that is not there), so ranking it by them lets the GA
/// exploit the truncation error. Re-running with a larger cap would overrule the
/// user's `max_steps`, which exists to bound what one generation costs, and a
/// second batch of a few stragglers leaves a GPU mostly idle. So the GA trusts
/// only converged results; the truncated ones stay in the run, flagged, for
/// the user to judge, and the remedy (a larger `max_steps` or `max_time`) is named wherever
/// they are reported.
pub fn truncation_penalty(e: &Evaluation) -> f64 {
    e.decay.map_or(0.0, |d| if d.truncated { d.shortfall_db().max(1e-6) } else { 0.0 })
}

#[cfg(test)]
mod truncation_tests {
    use super::*;
    use crate::ga::ops::select::compare_constrained;
    use crate::ga::Decay;

    fn scored(fitness: f64, reached_db: f64) -> Evaluation {
        let decay = Decay { reached_db, target_db: -50.0, truncated: reached_db > -50.0 };
        let mut e = Evaluation { decay: Some(decay), ..Evaluation::ok(vec![fitness]) };
        e.constraint_violation = truncation_penalty(&e);
        e
    }

    #[test]
    fn a_truncated_design_ranks_behind_every_converged_one_and_never_meets_a_target() {
        let (converged, truncated) = (scored(5.0, -52.0), scored(0.0, -40.0));
        assert_eq!(converged.constraint_violation, 0.0);
        assert_eq!(truncated.constraint_violation, 10.0);
        // Worse fitness, but trustworthy: it wins.
        assert!(compare_constrained(&converged, &truncated).is_lt());
        // Of two truncated designs the one nearer its decay target wins, whatever their fitness.
        assert!(compare_constrained(&scored(3.0, -45.0), &truncated).is_lt());
        // The target rule asks for a feasible best; a truncated design is not one.
        assert!(!truncated.is_feasible() && truncated.is_valid() && truncated.is_truncated());
    }
}
