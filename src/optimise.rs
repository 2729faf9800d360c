//! The optimiser's view of a design: [`DesignProblem`] implements the GA's
//! `Problem` by sending each generation's new genomes through one backend
//! batch; [`BestObserver`] keeps `best/` and the best design's S-parameter
//! plot up to date. The GA itself never sees designs, jobs or engines.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::analysis::SParams;
use crate::design::Design;
use crate::engine::Backend;
use crate::evaluate::{evaluate_designs, masks, Scored};
use crate::ga::genome::genome_key;
use crate::ga::problem::{Evaluation, Problem};
use crate::ga::settings::GaSettings;
use crate::ga::state::{GaState, GenStats};
use crate::ga::GeneSpec;
use crate::job::EngineKind;
use crate::run::observe::{Observer, RunInfo};

/// What a run directory records besides the design: the GA settings after
/// command-line overrides, and the engine override. Kept as `settings.ron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    pub ga: GaSettings,
    /// `--engine` given at launch (None: the design's own engine).
    pub engine: Option<EngineKind>,
    /// [`RunSettings::VERSION`] when written; 0 (absent) in files of earlier builds.
    #[serde(default)]
    pub version: u32,
}

impl RunSettings {
    /// Since version 1 the stop rules with a default value (target, stagnation)
    /// are always written, `None` included.
    pub const VERSION: u32 = 1;

    pub fn new(ga: GaSettings, engine: Option<EngineKind>) -> RunSettings {
        RunSettings { ga, engine, version: RunSettings::VERSION }
    }

    /// Read `settings.ron`. Files of earlier builds left out the stop rules
    /// that were off, and those rules were off by default then: such a rule is
    /// read as off, not as today's default, so the run resumes as it ran.
    pub fn from_ron(text: &str) -> Result<RunSettings, ron::error::SpannedError> {
        let mut s: RunSettings = ron::from_str(text)?;
        if s.version == 0 {
            let written = |field: &str| {
                // ron 0.8's Value holds a named struct as a map of its fields.
                let get = |v: &ron::Value, k: &str| match v {
                    ron::Value::Map(m) => m.iter().find(|(key, _)| **key == ron::Value::String(k.into())).map(|(_, v)| v.clone()),
                    _ => None,
                };
                let v: Option<ron::Value> = ron::from_str(text).ok();
                let stop = v.and_then(|v| get(&v, "ga")).and_then(|g| get(&g, "stop"));
                stop.is_some_and(|s| get(&s, field).is_some())
            };
            if !written("target") {
                s.ga.stop.target = None;
            }
            if !written("stagnation") {
                s.ga.stop.stagnation = None;
            }
            s.version = RunSettings::VERSION;
        }
        Ok(s)
    }
}

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

    /// Simulate one candidate with the given port columns driven.
    pub fn simulate(&self, x: &[f64], drives: &[usize]) -> anyhow::Result<Result<Scored, String>> {
        let v = self.values(x);
        let mut r = evaluate_designs(&self.design, std::slice::from_ref(&v), drives, self.engine, self.backend.as_ref(), &|_| {})?;
        Ok(r.remove(0))
    }
}

/// The GA problem of one design.
pub struct DesignProblem {
    sim: Arc<Simulator>,
    genes: Vec<GeneSpec>,
    drives: Vec<usize>,
    n_extra: usize,
    /// S-parameters of this session's evaluations, by genome key (not checkpointed:
    /// they are re-simulated on demand after a resume).
    pub sparams: Arc<Mutex<BTreeMap<String, SParams>>>,
}

impl DesignProblem {
    pub fn new(sim: Arc<Simulator>) -> DesignProblem {
        let genes = sim.design.genes();
        let drives = sim.design.drives_needed();
        let n_extra = sim.design.objective_labels().len().saturating_sub(1);
        DesignProblem { sim, genes, drives, n_extra, sparams: Arc::new(Mutex::new(BTreeMap::new())) }
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
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &dyn Fn(usize)) -> anyhow::Result<Vec<Evaluation>> {
        let values: Vec<_> = xs.iter().map(|x| self.sim.values(x)).collect();
        let t = Instant::now();
        // The progress callback of the GA is not Sync; the batch reports through a counter polled here.
        let done = std::sync::atomic::AtomicUsize::new(0);
        let res = std::thread::scope(|s| {
            let h = s.spawn(|| {
                evaluate_designs(&self.sim.design, &values, &self.drives, self.sim.engine, self.sim.backend.as_ref(), &|n| {
                    done.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
                })
            });
            let mut last = 0;
            while !h.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let n = done.load(std::sync::atomic::Ordering::Relaxed);
                if n != last {
                    progress(n);
                    last = n;
                }
            }
            h.join().expect("evaluation thread panicked")
        })?;
        let wall = t.elapsed().as_secs_f64().max(1e-9);
        let updates: f64 = res.iter().filter_map(|r| r.as_ref().ok()).map(|s| s.cell_updates()).sum();
        let rate = (updates > 0.0).then_some(updates / wall);
        let mut out = Vec::with_capacity(xs.len());
        let mut store = self.sparams.lock().expect("sparams store poisoned");
        for ((x, v), r) in xs.iter().zip(&values).zip(res) {
            let n = self.n_objectives();
            let mut e = match r {
                Ok(s) => {
                    let mut objectives = vec![s.fitness.total];
                    match self.sim.design.extra_objectives(v) {
                        Ok(extra) => objectives.extend(extra),
                        Err(err) => {
                            out.push(Evaluation::failed(format!("objective: {err}"), n));
                            continue;
                        }
                    }
                    let extra = serde_json::json!({ "goals": s.fitness.per_goal, "runs": s.run_summary() });
                    let decay = s.decay();
                    store.insert(genome_key(x), s.sparams);
                    Evaluation { objectives, extra, cells_per_second: rate, decay: Some(decay), ..Evaluation::ok(vec![]) }
                }
                Err(reason) => Evaluation::failed(reason, n),
            };
            // A truncated simulation's fitness is uncertain: it ranks as a
            // constraint violation of its shortfall in dB, behind every converged
            // design (and never meets a fitness target); of two truncated designs
            // the one nearer its decay target wins. See `truncation_penalty`.
            e.constraint_violation = self.sim.design.constraint_violation(v) + truncation_penalty(&e);
            out.push(e);
        }
        Ok(out)
    }
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
/// the user to judge, and the remedy (a larger `max_steps`) is named wherever
/// they are reported.
pub fn truncation_penalty(e: &Evaluation) -> f64 {
    e.decay.map_or(0.0, |d| if d.truncated { d.shortfall_db().max(1e-6) } else { 0.0 })
}

/// Keeps `best/` (parameters, Touchstone with every port driven, plot) and
/// `plots/best_sparams.png` in step with the best design of the run.
pub struct BestObserver {
    sim: Arc<Simulator>,
    store: Arc<Mutex<BTreeMap<String, SParams>>>,
    dir: Option<PathBuf>,
    last_key: Option<String>,
}

impl BestObserver {
    pub fn new(sim: Arc<Simulator>, store: Arc<Mutex<BTreeMap<String, SParams>>>) -> BestObserver {
        BestObserver { sim, store, dir: None, last_key: None }
    }

    fn refresh(&mut self, state: &GaState, genome: &[f64]) -> anyhow::Result<()> {
        let Some(dir) = self.dir.clone() else { return Ok(()) };
        let key = genome_key(genome);
        if self.last_key.as_deref() == Some(key.as_str()) {
            return Ok(());
        }
        let design = &self.sim.design;
        let values = self.sim.values(genome);
        let title = format!("{} best, generation {}", design.name(), state.generation);
        let all: Vec<usize> = (0..design.port_names().len()).collect();
        // The full matrix for Touchstone; the GA may have driven fewer ports.
        let full = match self.sim.simulate(genome, &all)? {
            Ok(s) => Some(s),
            Err(reason) => {
                eprintln!("warning: the best design could not be re-simulated for best/: {reason}");
                None
            }
        };
        let sp = match (&full, self.store.lock().expect("sparams store poisoned").get(&key)) {
            (Some(s), _) => s.sparams.clone(),
            (None, Some(sp)) => sp.clone(),
            (None, None) => return Ok(()),
        };
        let plots = dir.join("plots");
        std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
        crate::plot::sparams::plot(&plots.join("best_sparams.png"), &sp, &masks(design), &title)?;
        let best = dir.join("best");
        std::fs::create_dir_all(&best).with_context(|| format!("creating {}", best.display()))?;
        let e = state.cache.get(&key);
        let text = ron::ser::to_string_pretty(
            &serde_json::json!({
                "generation": state.generation,
                "parameters": values,
                "objectives": e.map(|e| e.objectives.clone()),
                "goals": e.map(|e| e.extra.get("goals").cloned()),
            }),
            ron::ser::PrettyConfig::default(),
        )?;
        crate::run::rundir::write_atomic(&best.join("parameters.ron"), text.as_bytes()).with_context(|| format!("writing {}", best.display()))?;
        if let Some(s) = &full {
            let vals: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", crate::design::short(*v))).collect();
            let mut comment = format!("emvolve best design of {} at generation {}\nparameters: {}", design.name(), state.generation, vals.join(", "));
            if let Some(w) = s.truncation_note() {
                comment.push_str(&format!("\n{w}"));
            }
            crate::analysis::touchstone::write(&s.sparams, &best.join(design.name()), &comment)?;
        }
        crate::plot::sparams::plot(&best.join("sparams.png"), &sp, &masks(design), &title)?;
        self.last_key = Some(key);
        Ok(())
    }
}

impl Observer for BestObserver {
    fn on_start(&mut self, _state: &GaState, info: &RunInfo) -> anyhow::Result<()> {
        self.dir = Some(info.dir.to_path_buf());
        Ok(())
    }
    fn on_generation(&mut self, state: &GaState, stats: &GenStats) -> anyhow::Result<()> {
        if stats.best_genome.is_empty() || stats.best.first().is_some_and(|b| *b >= crate::ga::problem::PENALTY) {
            return Ok(());
        }
        self.refresh(state, &stats.best_genome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::ops::select::compare_constrained;

    #[test]
    fn settings_of_earlier_builds_keep_their_stop_rules_off() {
        // As an earlier build wrote it: rules that were off are left out.
        let old = "(ga: Ga(population: 8, generations: 5, seed: 1, elitism: 2, tournament: 2, \
                   crossover: Sbx(probability: 0.9, eta: 15.0), mutation: Polynomial(eta: 20.0), \
                   stop: (max_evaluations: 100)), engine: None)";
        let s = RunSettings::from_ron(old).unwrap();
        assert_eq!((s.ga.stop.target, s.ga.stop.stagnation, s.ga.stop.max_evaluations), (None, None, Some(100)));
        let old = old.replace("stop: (max_evaluations: 100)", "stop: (target: 0.0, stagnation: 7)");
        let s = RunSettings::from_ron(&old).unwrap();
        assert_eq!((s.ga.stop.target, s.ga.stop.stagnation), (Some(0.0), Some(7)));
        // What this build writes reads back as written, defaults and lifted rules alike.
        for ga in [GaSettings::default(), GaSettings { stop: crate::ga::Stop::none(), ..Default::default() }] {
            let s = RunSettings::new(ga, Some(EngineKind::Tlm));
            let text = ron::ser::to_string_pretty(&s, ron::ser::PrettyConfig::default()).unwrap();
            assert_eq!(RunSettings::from_ron(&text).unwrap(), s, "{text}");
        }
    }
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
