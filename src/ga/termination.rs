//! When to stop: a list of criteria, any of which ends the run, each with a progress in [0, 1].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::settings::GaSettings;
use super::state::GaState;
// The reason is part of the state (it is checkpointed); named here too, where the criteria give it.
pub use super::state::TerminationReason;

/// One stopping rule.
#[derive(Debug, Clone)]
pub enum Criterion {
    /// Stop once this generation is complete (0 is the initial population).
    MaxGenerations(usize),
    /// Stop once this many designs have been simulated.
    MaxEvaluations(usize),
    /// Stop once the best feasible fitness is at or below this (single objective).
    TargetFitness(f64),
    /// Stop after this many generations without improvement.
    Stagnation(usize),
    /// Stop once the run time, summed over sessions, reaches this (seconds).
    WallTime(f64),
    /// Stop when the flag is set (Ctrl-C).
    Interrupt(Arc<AtomicBool>),
}

impl Criterion {
    pub fn reason(&self) -> TerminationReason {
        match self {
            Criterion::MaxGenerations(_) => TerminationReason::MaxGenerations,
            Criterion::MaxEvaluations(_) => TerminationReason::MaxEvaluations,
            Criterion::TargetFitness(_) => TerminationReason::TargetFitness,
            Criterion::Stagnation(_) => TerminationReason::Stagnation,
            Criterion::WallTime(_) => TerminationReason::WallTime,
            Criterion::Interrupt(_) => TerminationReason::Interrupted,
        }
    }

    pub fn is_met(&self, state: &GaState) -> bool {
        self.progress(state) >= 1.0
    }

    /// How far the run is towards this criterion, in [0, 1] (1 = met).
    pub fn progress(&self, state: &GaState) -> f64 {
        let ratio = |num: f64, den: f64| if den <= 0.0 { 1.0 } else { (num / den).clamp(0.0, 1.0) };
        if !state.started() {
            return 0.0;
        }
        match self {
            Criterion::MaxGenerations(n) => ratio(state.generation as f64, *n as f64),
            Criterion::MaxEvaluations(n) => ratio(state.evaluations as f64, *n as f64),
            Criterion::TargetFitness(t) => {
                // No honest estimate of the distance to a target exists; report only when met.
                let met = !state.is_multi_objective()
                    && state.best_evaluation().is_some_and(|e| e.is_feasible() && e.fitness() <= *t);
                if met {
                    1.0
                } else {
                    0.0
                }
            }
            Criterion::Stagnation(n) => ratio(state.stagnant_generations as f64, *n as f64),
            Criterion::WallTime(s) => ratio(state.elapsed_seconds, *s),
            Criterion::Interrupt(flag) => {
                if flag.load(Ordering::SeqCst) {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// All the criteria of a run.
#[derive(Debug, Clone, Default)]
pub struct Termination {
    pub criteria: Vec<Criterion>,
}

impl Termination {
    /// The generation limit, the `stop` rules of the settings and the interrupt flag.
    pub fn from_settings(settings: &GaSettings, max_generations: usize, interrupt: Option<Arc<AtomicBool>>) -> Termination {
        let mut criteria = vec![Criterion::MaxGenerations(max_generations)];
        let s = &settings.stop;
        if let Some(t) = s.target {
            criteria.push(Criterion::TargetFitness(t));
        }
        if let Some(n) = s.max_evaluations {
            criteria.push(Criterion::MaxEvaluations(n));
        }
        if let Some(n) = s.stagnation {
            criteria.push(Criterion::Stagnation(n));
        }
        if let Some(w) = s.wall_seconds {
            criteria.push(Criterion::WallTime(w));
        }
        if let Some(flag) = interrupt {
            criteria.push(Criterion::Interrupt(flag));
        }
        Termination { criteria }
    }

    /// The first criterion met, in list order.
    pub fn check(&self, state: &GaState) -> Option<TerminationReason> {
        self.criteria.iter().find(|c| c.is_met(state)).map(Criterion::reason)
    }

    /// Overall progress: the criterion nearest to being met. Drives the progress bar.
    pub fn progress(&self, state: &GaState) -> f64 {
        self.criteria.iter().map(|c| c.progress(state)).fold(0.0, f64::max)
    }

    /// The generation limit, if any.
    pub fn max_generations(&self) -> Option<usize> {
        self.criteria.iter().find_map(|c| if let Criterion::MaxGenerations(n) = c { Some(*n) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::genome::GeneSpec;
    use crate::ga::problem::Evaluation;
    use crate::ga::settings::Stop;
    use crate::ga::state::{GenStats, Individual};
    use crate::ga::step::new_state;

    fn state_at(generation: usize, evaluations: usize, best: f64, stagnant: usize, elapsed: f64) -> GaState {
        let genes = vec![GeneSpec::Real { name: "x".into(), min: 0.0, max: 1.0 }];
        let mut s = new_state(genes, 1, GaSettings::default(), "h").unwrap();
        let ind = Individual::new(vec![0.5]);
        s.cache.insert(ind.key.clone(), Evaluation::ok(vec![best]));
        s.best = vec![ind];
        s.generation = generation;
        s.evaluations = evaluations;
        s.stagnant_generations = stagnant;
        s.elapsed_seconds = elapsed;
        s.history.push(GenStats {
            generation,
            evaluations,
            new_evaluations: 0,
            failures: 0,
            feasible: 1,
            best: vec![best],
            best_violation: 0.0,
            mean: vec![None],
            worst: vec![None],
            best_genome: vec![0.5],
            front_size: 1,
            improved: false,
            spread: vec![],
            wall_seconds: elapsed,
            evaluation_seconds: 0.0,
            cells_per_second: None,
        });
        s
    }

    #[test]
    fn each_criterion_reports_progress_and_reason() {
        let flag = Arc::new(AtomicBool::new(false));
        let settings = GaSettings {
            stop: Stop { target: Some(0.1), max_evaluations: Some(100), stagnation: Some(4), wall_seconds: Some(60.0) },
            ..Default::default()
        };
        let t = Termination::from_settings(&settings, 10, Some(flag.clone()));
        let s = state_at(5, 20, 0.5, 1, 6.0);
        assert_eq!(t.check(&s), None);
        assert!((t.progress(&s) - 0.5).abs() < 1e-12);
        assert_eq!(t.check(&state_at(10, 20, 0.5, 1, 6.0)), Some(TerminationReason::MaxGenerations));
        assert_eq!(t.check(&state_at(5, 100, 0.5, 1, 6.0)), Some(TerminationReason::MaxEvaluations));
        assert_eq!(t.check(&state_at(5, 20, 0.1, 1, 6.0)), Some(TerminationReason::TargetFitness));
        assert_eq!(t.check(&state_at(5, 20, 0.5, 4, 6.0)), Some(TerminationReason::Stagnation));
        assert_eq!(t.check(&state_at(5, 20, 0.5, 1, 61.0)), Some(TerminationReason::WallTime));
        flag.store(true, Ordering::SeqCst);
        assert_eq!(t.check(&s), Some(TerminationReason::Interrupted));
        for c in &t.criteria {
            let p = c.progress(&s);
            assert!((0.0..=1.0).contains(&p));
        }
    }

    #[test]
    fn infeasible_best_does_not_reach_the_target() {
        let mut s = state_at(1, 1, -5.0, 0, 0.0);
        let key = s.best[0].key.clone();
        s.cache.get_mut(&key).unwrap().constraint_violation = 0.2;
        assert!(!Criterion::TargetFitness(0.0).is_met(&s));
    }
}
