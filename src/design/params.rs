//! Design parameters (the genes): how they are declared in a design file, what
//! the optimiser sees of them, and the checks on one set of values.

use serde::{Deserialize, Serialize};

/// A parameter as declared: `Real(min: 2.0, max: 5.0)`, `Int(min: 1, max: 7)`,
/// `Stepped(min: 0.4, max: 2.0, step: 0.8)` (values `min + k*step <= max`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ParamSpec {
    Real { min: f64, max: f64 },
    Int { min: i64, max: i64 },
    Stepped { min: f64, max: f64, step: f64 },
}

pub use crate::ga::GeneSpec;

/// The GA gene of a declared parameter.
pub fn gene(name: &str, spec: &ParamSpec) -> GeneSpec {
    let name = name.to_string();
    match *spec {
        ParamSpec::Real { min, max } => GeneSpec::Real { name, min, max },
        ParamSpec::Int { min, max } => GeneSpec::Int { name, min, max },
        ParamSpec::Stepped { min, max, step } => GeneSpec::Stepped { name, min, max, step },
    }
}

/// Why a declared parameter cannot be used, if it cannot.
pub fn spec_problem(spec: &ParamSpec) -> Option<String> {
    let (min, max) = match *spec {
        ParamSpec::Real { min, max } | ParamSpec::Stepped { min, max, .. } => (min, max),
        ParamSpec::Int { min, max } => (min as f64, max as f64),
    };
    if !min.is_finite() || !max.is_finite() {
        return Some("bounds must be finite".into());
    }
    if min >= max {
        return Some(format!("min ({min}) must be below max ({max})"));
    }
    if let ParamSpec::Stepped { step, .. } = *spec {
        if !(step > 0.0 && step.is_finite()) {
            return Some(format!("step ({step}) must be a positive number"));
        }
        if step > (max - min) * (1.0 + 1e-9) {
            return Some(format!("step ({step}) is larger than max - min ({})", max - min));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapping_and_midpoints_follow_the_lattice() {
        let s = GeneSpec::Stepped { name: "w".into(), min: 0.4, max: 2.1, step: 0.8 };
        assert!((s.bounds().1 - 2.0).abs() < 1e-12 && s.bounds().0 == 0.4);
        assert!((s.snap(1.0) - 1.2).abs() < 1e-12);
        assert!((s.snap(9.0) - 2.0).abs() < 1e-12);
        assert!((s.midpoint() - 1.2).abs() < 1e-12);
        assert!(s.lattice_problem(1.0).is_some());
        assert!(s.lattice_problem(1.2).is_none());
        let i = GeneSpec::Int { name: "n".into(), min: 1, max: 4 };
        assert_eq!(i.midpoint(), 3.0); // 2.5 rounds away from zero
        assert_eq!(i.snap(-3.0), 1.0);
        assert!(i.lattice_problem(2.5).is_some());
    }

    #[test]
    fn bad_declarations_are_named() {
        assert!(spec_problem(&ParamSpec::Real { min: 5.0, max: 2.0 })
            .unwrap()
            .contains("min (5) must be below max (2)"));
        assert!(spec_problem(&ParamSpec::Stepped { min: 0.0, max: 1.0, step: 0.0 }).unwrap().contains("step"));
        assert!(spec_problem(&ParamSpec::Int { min: 1, max: 3 }).is_none());
    }
}
