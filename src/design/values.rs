//! Parameter values of a design: the genes, the midpoint, bound and constraint
//! checks, constraint violation and the extra objectives.

use std::collections::BTreeMap;

use super::error::DesignError;
use super::expr::{comparison, Cmp, Scope};
use super::format::Objective;
use super::params::GeneSpec;
use super::Design;
use crate::numfmt::short;

impl Design {
    /// Parameter names, sorted.
    pub fn parameter_names(&self) -> Vec<String> {
        self.file.parameters.keys().cloned().collect()
    }

    /// The genes, in the order of [`Design::parameter_names`].
    pub fn genes(&self) -> Vec<GeneSpec> {
        self.file.parameters.iter().map(|(n, s)| super::params::gene(n, s)).collect()
    }

    /// Every parameter at the middle of its range (snapped to its lattice).
    pub fn midpoint_values(&self) -> BTreeMap<String, f64> {
        self.genes().iter().map(|g| (g.name().to_string(), g.midpoint())).collect()
    }

    /// Midpoint values with `name=value` assignments applied (the CLI's `--set`),
    /// checked like [`Design::check_values`].
    pub fn values_from_sets<S: AsRef<str>>(&self, sets: &[S]) -> Result<BTreeMap<String, f64>, DesignError> {
        let mut values = self.midpoint_values();
        for s in sets {
            let s = s.as_ref();
            let bad = |m: String| DesignError::invalid(&self.origin, format!("--set {s}"), m);
            let (name, v) = s.split_once('=').ok_or_else(|| bad("expected name=value".into()))?;
            let name = name.trim();
            let v: f64 = v.trim().parse().map_err(|_| bad(format!("`{}` is not a number", v.trim())))?;
            if !values.contains_key(name) {
                return Err(bad(format!(
                    "`{name}` is not a parameter (parameters: {})",
                    self.parameter_names().join(", ")
                )));
            }
            values.insert(name.to_string(), v);
        }
        self.check_values(&values)?;
        Ok(values)
    }

    /// Every parameter present, none unknown, each within its bounds and on its
    /// lattice (`Int`, `Stepped`), and every constraint satisfied.
    pub fn check_values(&self, values: &BTreeMap<String, f64>) -> Result<(), DesignError> {
        self.check_bounds(values)?;
        let scope = Scope::new(&self.origin, &self.file.constants, values);
        for (i, c) in self.file.constraints.iter().enumerate() {
            let at = format!("constraints[{i}]");
            let (lhs, rhs, v) = self.constraint_sides(&scope, c, &at)?;
            if v > 0.0 {
                let detail = format!("left side {}, right side {}", short(lhs), short(rhs));
                return Err(DesignError::ConstraintViolated {
                    file: self.origin.clone(),
                    at,
                    constraint: c.clone(),
                    detail,
                });
            }
        }
        Ok(())
    }

    /// Presence, bounds and lattice, without constraints.
    pub(crate) fn check_bounds(&self, values: &BTreeMap<String, f64>) -> Result<(), DesignError> {
        for g in self.genes() {
            let name = g.name();
            let at = format!("parameters.{name}");
            let Some(&v) = values.get(name) else {
                return Err(DesignError::invalid(&self.origin, at, "no value given for this parameter"));
            };
            let (min, max) = g.bounds();
            if !v.is_finite() || v < min || v > max {
                return Err(DesignError::OutOfBounds {
                    file: self.origin.clone(),
                    name: name.into(),
                    value: v,
                    min,
                    max,
                });
            }
            if let Some(m) = g.lattice_problem(v) {
                return Err(DesignError::invalid(&self.origin, at, m));
            }
        }
        if let Some(k) = values.keys().find(|k| !self.file.parameters.contains_key(*k)) {
            return Err(DesignError::invalid(
                &self.origin,
                format!("parameters.{k}"),
                format!("`{k}` is not a parameter of this design (parameters: {})", self.parameter_names().join(", ")),
            ));
        }
        Ok(())
    }

    /// 0 when every constraint holds; otherwise the sum over violated constraints
    /// of how far they miss, in design units (`a < b` with a >= b adds `a - b`
    /// plus a relative epsilon, so that equality still counts as violated). A
    /// constraint that cannot be evaluated (missing value, division by zero) counts
    /// as infinitely violated.
    pub fn constraint_violation(&self, values: &BTreeMap<String, f64>) -> f64 {
        let scope = Scope::new(&self.origin, &self.file.constants, values);
        self.file
            .constraints
            .iter()
            .map(|c| self.constraint_sides(&scope, c, "constraints").map_or(f64::INFINITY, |(_, _, v)| v))
            .sum()
    }

    /// (left side, right side, violation) of constraint `c`.
    fn constraint_sides(&self, scope: &Scope, c: &str, at: &str) -> Result<(f64, f64, f64), DesignError> {
        let (cmp, l, r) = comparison(c).map_err(|problem| DesignError::BadExpression {
            file: self.origin.clone(),
            at: at.into(),
            expr: c.into(),
            problem,
        })?;
        let a = scope.eval_node(&l, c, at)?;
        let b = scope.eval_node(&r, c, at)?;
        let eps = 1e-9 * (1.0 + a.abs().max(b.abs()));
        // Violation of "x < y" form after orienting every comparison that way.
        let (x, y, strict) = match cmp {
            Cmp::Lt => (a, b, true),
            Cmp::Le => (a, b, false),
            Cmp::Gt => (b, a, true),
            Cmp::Ge => (b, a, false),
        };
        let v = if strict {
            if x < y {
                0.0
            } else {
                x - y + eps
            }
        } else {
            (x - y).max(0.0)
        };
        Ok((a, b, v))
    }

    /// Labels of the objectives in order: `"goals"` for the goal violation, the
    /// expression for each extra one (`"min 2*l1 + l2"`, `"max w1"`).
    pub fn objective_labels(&self) -> Vec<String> {
        match &self.file.objectives {
            None => vec!["goals".into()],
            Some(objs) => objs
                .iter()
                .map(|o| match o {
                    Objective::Goals => "goals".into(),
                    Objective::Minimize(e) => format!("min {e}"),
                    Objective::Maximize(e) => format!("max {e}"),
                })
                .collect(),
        }
    }

    /// Values of the `Minimize`/`Maximize` objectives, in file order, each to be
    /// minimised (a `Maximize` expression is negated). Empty when there are none.
    pub fn extra_objectives(&self, values: &BTreeMap<String, f64>) -> Result<Vec<f64>, DesignError> {
        let Some(objs) = &self.file.objectives else { return Ok(vec![]) };
        let scope = Scope::new(&self.origin, &self.file.constants, values);
        let mut out = vec![];
        for (i, o) in objs.iter().enumerate() {
            let at = format!("objectives[{i}]");
            match o {
                Objective::Goals => {}
                Objective::Minimize(e) => out.push(scope.eval_str(e, &at)?),
                Objective::Maximize(e) => out.push(-scope.eval_str(e, &at)?),
            }
        }
        Ok(out)
    }
}
