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
    /// Stop after `limit` generations without improvement, counted from
    /// generation `from` at the earliest (0 for a run; a resumed stagnated run
    /// counts afresh from where it resumes).
    Stagnation { limit: usize, from: usize },
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
            Criterion::Stagnation { .. } => TerminationReason::Stagnation,
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
            Criterion::Stagnation { limit, from } => ratio(stagnant_since(state, *from) as f64, *limit as f64),
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
            criteria.push(Criterion::Stagnation { limit: n, from: 0 });
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

    /// Count stagnation afresh from `generation` (resuming a run that stopped
    /// because it stagnated: otherwise it would stop again before breeding).
    pub fn restart_stagnation(&mut self, generation: usize) {
        for c in &mut self.criteria {
            if let Criterion::Stagnation { from, .. } = c {
                *from = generation;
            }
        }
    }

    /// The rules other than the generation limit that could end the run, each
    /// as "stagnation 4/12", nearest to being met first. Shown beside the
    /// generation bar, whose length is always the generation limit.
    pub fn other_bounds(&self, state: &GaState) -> Vec<String> {
        let mut v: Vec<(f64, String)> = self
            .criteria
            .iter()
            .filter_map(|c| {
                let text = match c {
                    Criterion::MaxEvaluations(n) => format!("evaluations {}/{n}", state.evaluations),
                    Criterion::Stagnation { limit, from } => format!("stagnation {}/{limit}", stagnant_since(state, *from)),
                    Criterion::WallTime(w) => format!("wall {}/{}", clock(state.elapsed_seconds), clock(*w)),
                    Criterion::TargetFitness(_) if state.is_multi_objective() => return None,
                    Criterion::TargetFitness(t) => format!("target {t}"),
                    Criterion::MaxGenerations(_) | Criterion::Interrupt(_) => return None,
                };
                Some((c.progress(state), text))
            })
            .collect();
        v.sort_by(|a, b| b.0.total_cmp(&a.0));
        v.into_iter().map(|(_, t)| t).collect()
    }
}

/// Generations without improvement, not counting those before `from`.
fn stagnant_since(state: &GaState, from: usize) -> usize {
    state.stagnant_generations.min(state.generation.saturating_sub(from))
}

/// "42s", "12m05s", "3h07m".
fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
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
            truncated: 0,
            model_seconds: None,
            workers: Default::default(),
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
    fn a_restarted_stagnation_counts_from_the_resume_and_bounds_are_listed() {
        let settings = GaSettings {
            stop: Stop { stagnation: Some(4), max_evaluations: Some(100), target: None, wall_seconds: None },
            ..Default::default()
        };
        let mut t = Termination::from_settings(&settings, 30, None);
        // Stagnant for 6 generations at generation 10: met.
        let s = state_at(10, 50, 0.5, 6, 1.0);
        assert_eq!(t.check(&s), Some(TerminationReason::Stagnation));
        t.restart_stagnation(10);
        assert_eq!(t.check(&s), None);
        assert_eq!(t.other_bounds(&s), ["evaluations 50/100", "stagnation 0/4"]);
        // Three generations later, still no improvement: 3 of 4.
        assert_eq!(t.check(&state_at(13, 60, 0.5, 9, 1.0)), None);
        assert_eq!(t.check(&state_at(14, 60, 0.5, 10, 1.0)), Some(TerminationReason::Stagnation));
        // An improvement after the resume counts from itself, as always.
        assert_eq!(t.check(&state_at(16, 60, 0.5, 2, 1.0)), None);
        assert_eq!(t.other_bounds(&state_at(16, 95, 0.5, 2, 1.0))[0], "evaluations 95/100");
        assert_eq!(clock(725.0), "12m05s");
    }

    #[test]
    fn infeasible_best_does_not_reach_the_target() {
        let mut s = state_at(1, 1, -5.0, 0, 0.0);
        let key = s.best[0].key.clone();
        s.cache.get_mut(&key).unwrap().constraint_violation = 0.2;
        assert!(!Criterion::TargetFitness(0.0).is_met(&s));
    }
}
