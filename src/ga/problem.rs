//! The `Problem` trait: what the optimiser needs from a design and an engine, and what one evaluation returns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::genome::GeneSpec;
use crate::fitness::GoalScore;

/// The objective value given to a design that could not be simulated or was
/// not simulated: finite (never NaN, so sorting stays total) and worse than any real result.
pub const PENALTY: f64 = 1e30;

/// The result of simulating one design. All objectives are minimised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// One value per objective, lower is better.
    pub objectives: Vec<f64>,
    /// 0 when feasible; larger is more infeasible.
    pub constraint_violation: f64,
    /// Set when the design could not be simulated (fields went non-finite, ...).
    pub failure: Option<String>,
    /// What the problem says about the design beside its objectives, shown by `inspect`.
    #[serde(with = "extra_as_map")]
    pub extra: Extra,
    /// Engine throughput for this design, if it knows.
    pub cells_per_second: Option<f64>,
    /// How far the simulations' end criterion got (time-domain engines); None
    /// where the problem has no such notion. Kept per design in the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decay: Option<Decay>,
    /// Who simulated the design, where several could (a farm worker's name);
    /// None for a run's own backend. Counted per generation in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

/// How far a design's field energy decayed before its simulations ended: the
/// engine's end criterion. A simulation cut off by the step cap before the
/// target leaves the tail of its signals out, so its S-parameters, and the
/// fitness made from them, are uncertain.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decay {
    /// The least decay over the design's simulations (dB below the energy peak, e.g. -52.3).
    pub reached_db: f64,
    /// The decay the end criterion asks for (e.g. -50).
    pub target_db: f64,
    /// A simulation hit the step cap before reaching the target.
    pub truncated: bool,
}

impl Decay {
    /// How many dB short of its target a truncated simulation stopped (0 when it converged).
    pub fn shortfall_db(&self) -> f64 {
        if self.truncated {
            (self.reached_db - self.target_db).max(0.0)
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for Decay {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if self.truncated {
            write!(f, "truncated: step cap reached with the energy at {:.1} dB (target {:.1} dB)", self.reached_db, self.target_db)
        } else {
            write!(f, "converged: energy at {:.1} dB (target {:.1} dB)", self.reached_db, self.target_db)
        }
    }
}

impl Evaluation {
    /// A feasible, successful evaluation.
    pub fn ok(objectives: Vec<f64>) -> Evaluation {
        Evaluation { objectives, constraint_violation: 0.0, failure: None, extra: Extra::default(), cells_per_second: None, decay: None, worker: None }
    }

    /// A design that could not be simulated.
    pub fn failed(reason: impl Into<String>, n_objectives: usize) -> Evaluation {
        Evaluation {
            objectives: vec![PENALTY; n_objectives],
            constraint_violation: 0.0,
            failure: Some(reason.into()),
            extra: Extra::default(),
            cells_per_second: None,
            decay: None,
            worker: None,
        }
    }

    /// Did the simulation produce usable objectives?
    pub fn is_valid(&self) -> bool {
        self.failure.is_none() && self.objectives.iter().all(|&o| o < PENALTY)
    }

    /// Was a simulation of this design cut off by the step cap before its end criterion?
    pub fn is_truncated(&self) -> bool {
        self.decay.is_some_and(|d| d.truncated)
    }

    pub fn is_feasible(&self) -> bool {
        self.constraint_violation <= 0.0
    }

    /// The single-objective fitness (the first objective).
    pub fn fitness(&self) -> f64 {
        self.objectives[0]
    }

    /// Make the evaluation safe to sort: failures and non-finite objectives get
    /// [`PENALTY`], a NaN or infinite objective becomes a failure, a negative violation becomes 0.
    pub(crate) fn sanitised(mut self) -> Evaluation {
        if self.failure.is_none() {
            if let Some(k) = self.objectives.iter().position(|o| !o.is_finite()) {
                self.failure = Some(format!("objective {} is {}", k + 1, self.objectives[k]));
            } else if !self.constraint_violation.is_finite() {
                self.failure = Some(format!("constraint violation is {}", self.constraint_violation));
            }
        }
        if self.failure.is_some() {
            self.objectives.iter_mut().for_each(|o| *o = PENALTY);
        } else {
            self.objectives.iter_mut().for_each(|o| *o = o.min(PENALTY));
        }
        self.constraint_violation =
            if self.constraint_violation.is_finite() { self.constraint_violation.clamp(0.0, PENALTY) } else { 0.0 };
        if let Some(c) = self.cells_per_second {
            if !c.is_finite() {
                self.cells_per_second = None;
            }
        }
        self
    }
}

/// What a problem reports about one design beside its objectives, for people
/// (`inspect`, `best/`): the first objective's parts, how the simulation went,
/// and other named numbers. Every part is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// The fitness goal by goal, in the design's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goals: Vec<GoalScore>,
    /// How the design's simulations ended, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
    /// Named numbers worth showing (the test functions' diagnostics, say).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, f64>,
}

impl Extra {
    pub fn is_empty(&self) -> bool {
        self == &Extra::default()
    }
}

/// [`Extra`] is kept in checkpoints as a plain map (`{"goals": [...], "runs": "..."}`),
/// and as `()` when empty: the form the untyped `extra` of earlier checkpoints
/// had, so those still load, and a run writes the checkpoint it wrote before.
mod extra_as_map {
    use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

    use super::Extra;

    pub fn serialize<S: Serializer>(extra: &Extra, s: S) -> Result<S::Ok, S::Error> {
        if extra.is_empty() {
            // "Nothing", written as before.
            return serde_json::Value::Null.serialize(s);
        }
        serde_json::to_value(extra).map_err(serde::ser::Error::custom)?.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Extra, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Ok(Extra::default()),
            v => serde_json::from_value(v).map_err(D::Error::custom),
        }
    }
}

/// What the optimiser optimises: the design (genes, geometric constraints)
/// and the engine (batch evaluation).
pub trait Problem {
    /// The gene space, in genome order.
    fn genes(&self) -> Vec<GeneSpec>;

    /// 1 for the elitist GA, 2 or more for NSGA-II.
    fn n_objectives(&self) -> usize;

    /// Cheap check before simulation (geometry that does not fit, say): 0 when
    /// feasible. Designs with a positive violation are not simulated; they get
    /// [`PENALTY`] objectives and lose every comparison with feasible designs.
    fn constraint_violation(&self, x: &[f64]) -> f64;

    /// Simulate a batch of designs, one [`Evaluation`] per design, in order.
    /// Every design of the batch has passed [`Problem::constraint_violation`]
    /// (violation 0), so its evaluation's violation is 0 and is not asked again.
    /// Call `progress(done)` with the number finished so far as they complete,
    /// from any thread (it is `Sync`: no thread of the problem's need relay it).
    /// An `Err` is fatal for the run (the engine died); a design that cannot be
    /// simulated is an `Ok` evaluation with `failure: Some(reason)`.
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitising_never_leaves_nan() {
        let e = Evaluation::ok(vec![1.0, f64::NAN]).sanitised();
        assert_eq!(e.objectives, vec![PENALTY, PENALTY]);
        assert!(e.failure.unwrap().contains("objective 2"));
        let mut e = Evaluation::ok(vec![3.0]);
        e.constraint_violation = -2.0;
        e.cells_per_second = Some(f64::INFINITY);
        let e = e.sanitised();
        assert_eq!((e.objectives[0], e.constraint_violation, e.cells_per_second), (3.0, 0.0, None));
        let mut e = Evaluation::failed("diverged", 1);
        e.objectives = vec![0.5];
        assert_eq!(e.sanitised().objectives, vec![PENALTY]);
    }
}
