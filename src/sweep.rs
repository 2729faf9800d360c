//! Parameter sweeps: a grid of parameter values around a base point, run as
//! backend batches, each point scored against the design's goals. An engineer's
//! first look at sensitivity and manufacturing tolerance.
//!
//! `w1=3.0:4.0:21` is 21 evenly spaced values from 3.0 to 4.0 mm; several axes
//! make a full grid, the first axis varying fastest. Points outside the bounds
//! are refused before anything runs; points that break a constraint are kept
//! in the table as skipped; a point whose simulation fails is recorded with its
//! reason and the sweep goes on.

use std::collections::BTreeMap;

use crate::analysis::SParams;
use crate::design::Design;
use crate::engine::{Backend, EngineError, RunCtx};
use crate::evaluate::evaluate_designs;
use crate::fitness::{Fitness, Limit};
use crate::job::EngineKind;

/// One swept parameter: `count` values from `start` to `stop`, ends included.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    pub name: String,
    pub start: f64,
    pub stop: f64,
    pub count: usize,
}

impl SweepAxis {
    /// Parse `name=start:stop:count`.
    pub fn parse(s: &str) -> Result<SweepAxis, String> {
        let bad = |m: &str| format!("--param {s}: {m} (expected name=start:stop:count, e.g. w1=3.0:4.0:21)");
        let (name, range) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let parts: Vec<&str> = range.split(':').collect();
        let [a, b, n] = parts[..] else { return Err(bad("expected three numbers separated by `:`")) };
        let num = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| bad(&format!("`{t}` is not a number")));
        let (start, stop) = (num(a)?, num(b)?);
        let count: usize = n.trim().parse().map_err(|_| bad(&format!("`{n}` is not a whole number of points")))?;
        if count == 0 {
            return Err(bad("the number of points must be at least 1"));
        }
        if count == 1 && start != stop {
            return Err(bad("one point needs start == stop"));
        }
        Ok(SweepAxis { name: name.trim().to_string(), start, stop, count })
    }

    /// The values, ends exact.
    pub fn values(&self) -> Vec<f64> {
        if self.count == 1 {
            return vec![self.start];
        }
        (0..self.count)
            .map(|k| if k + 1 == self.count { self.stop } else { self.start + (self.stop - self.start) * k as f64 / (self.count - 1) as f64 })
            .collect()
    }
}

/// How one point of the sweep came out.
#[derive(Debug, Clone)]
pub enum PointResult {
    Scored { fitness: Fitness, sparams: SParams },
    /// Not simulated (a constraint does not hold).
    Skipped(String),
    /// Simulated without a result (geometry, divergence, ...).
    Failed(String),
}

/// One point: the swept values (in axis order) and the outcome.
#[derive(Debug, Clone)]
pub struct Point {
    pub swept: Vec<f64>,
    pub values: BTreeMap<String, f64>,
    pub result: PointResult,
}

/// Every point of the grid over `axes` around `base` (first axis fastest),
/// each checked against the bounds; `Err` names the first point out of bounds.
pub fn grid(design: &Design, base: &BTreeMap<String, f64>, axes: &[SweepAxis]) -> Result<Vec<(Vec<f64>, BTreeMap<String, f64>)>, String> {
    let names = design.parameter_names();
    for (k, a) in axes.iter().enumerate() {
        if !names.contains(&a.name) {
            return Err(format!("--param {}: not a parameter of {} (parameters: {})", a.name, design.origin(), names.join(", ")));
        }
        if axes[..k].iter().any(|b| b.name == a.name) {
            return Err(format!("--param {}: swept twice", a.name));
        }
    }
    let lists: Vec<Vec<f64>> = axes.iter().map(SweepAxis::values).collect();
    let total: usize = lists.iter().map(Vec::len).product();
    let mut out = Vec::with_capacity(total);
    for n in 0..total {
        let mut rest = n;
        let mut swept = Vec::with_capacity(axes.len());
        let mut values = base.clone();
        for (a, list) in axes.iter().zip(&lists) {
            let v = list[rest % list.len()];
            rest /= list.len();
            swept.push(v);
            values.insert(a.name.clone(), v);
        }
        // Bounds and lattice only: constraints make a point skipped, not the sweep wrong.
        if let Err(e) = design.check_bounds(&values) {
            let at: Vec<String> = axes.iter().zip(&swept).map(|(a, v)| format!("{}={v}", a.name)).collect();
            return Err(format!("sweep point {}: {e}", at.join(", ")));
        }
        out.push((swept, values));
    }
    Ok(out)
}

/// Simulate the points in batches of `batch`, calling `progress(done, total)`
/// as designs finish; `all_ports`: drive every port (the full matrix, for
/// Touchstone files) instead of only those the goals need. An `Err` is fatal
/// (the engine failed).
#[allow(clippy::too_many_arguments)]
pub fn run(
    design: &Design,
    points: Vec<(Vec<f64>, BTreeMap<String, f64>)>,
    engine: Option<EngineKind>,
    backend: &dyn Backend,
    batch: usize,
    all_ports: bool,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Point>, EngineError> {
    let drives = if all_ports { (0..design.port_names().len()).collect() } else { design.drives_needed() };
    let total = points.len();
    let mut out: Vec<Point> = Vec::with_capacity(total);
    let mut todo: Vec<usize> = vec![];
    for (swept, values) in points {
        let violation = design.constraint_violation(&values);
        let result = if violation > 0.0 {
            PointResult::Skipped(format!("constraint violated (by {})", crate::numfmt::short(violation)))
        } else {
            todo.push(out.len());
            PointResult::Failed("not simulated".into())
        };
        out.push(Point { swept, values, result });
    }
    let mut done = total - todo.len();
    progress(done, total);
    for chunk in todo.chunks(batch.max(1)) {
        let vals: Vec<BTreeMap<String, f64>> = chunk.iter().map(|&i| out[i].values.clone()).collect();
        let base = done;
        let res = evaluate_designs(design, &vals, &drives, engine, backend, &RunCtx::progress(&|n| progress(base + n, total)))?;
        for (&i, r) in chunk.iter().zip(res) {
            out[i].result = match r {
                Ok(s) => PointResult::Scored { fitness: s.fitness, sparams: s.sparams },
                Err(reason) => PointResult::Failed(reason.to_string()),
            };
        }
        done += chunk.len();
        progress(done, total);
    }
    Ok(out)
}

/// Margin of a goal in dB at its worst point: positive where met, negative where missed.
pub fn margin_db(limit: Limit, worst_db: f64) -> f64 {
    match limit {
        Limit::Above(l) => worst_db - l,
        Limit::Below(l) => l - worst_db,
    }
}

/// The table: swept values, status, fitness, and per goal its margin, worst level and where.
pub fn csv(design: &Design, axes: &[SweepAxis], points: &[Point]) -> String {
    let esc = |s: &str| if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() };
    let units = design.file().units.symbol();
    let mut head: Vec<String> = axes.iter().map(|a| format!("{} ({units})", a.name)).collect();
    head.extend(["status".into(), "fitness (dB^2)".into()]);
    for g in design.goals() {
        let l = g.label();
        head.extend([format!("{l}: margin (dB)"), format!("{l}: worst (dB)"), format!("{l}: at (Hz)"), format!("{l}: violation (dB^2)")]);
    }
    let mut out = head.iter().map(|h| esc(h)).collect::<Vec<_>>().join(",");
    out.push('\n');
    for p in points {
        let mut row: Vec<String> = p.swept.iter().map(|v| v.to_string()).collect();
        match &p.result {
            PointResult::Scored { fitness, .. } => {
                row.push("ok".into());
                row.push(fitness.total.to_string());
                for (g, s) in design.goals().iter().zip(&fitness.per_goal) {
                    row.extend([margin_db(g.limit, s.worst_db).to_string(), s.worst_db.to_string(), s.worst_freq_hz.to_string(), s.violation.to_string()]);
                }
            }
            PointResult::Skipped(why) | PointResult::Failed(why) => {
                let kind = if matches!(p.result, PointResult::Skipped(_)) { "skipped" } else { "failed" };
                row.push(esc(&format!("{kind}: {why}")));
                row.extend(std::iter::repeat_n(String::new(), 1 + 4 * design.goals().len()));
            }
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_with_exact_ends_and_clear_errors() {
        let a = SweepAxis::parse("w1=3.0:4.0:21").unwrap();
        let v = a.values();
        assert_eq!(v.len(), 21);
        assert_eq!((v[0], v[20]), (3.0, 4.0));
        assert!((v[10] - 3.5).abs() < 1e-15);
        assert_eq!(SweepAxis::parse("w=2:2:1").unwrap().values(), vec![2.0]);
        for (bad, says) in [("w1", "no `=`"), ("w1=3:4", "three numbers"), ("w1=3:x:4", "`x`"), ("w1=3:4:0", "at least 1"), ("w1=3:4:1", "start == stop")] {
            let e = SweepAxis::parse(bad).unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn grid_orders_first_axis_fastest_and_refuses_out_of_bounds_points() {
        let d = Design::load(std::path::Path::new("designs/wr28_iris_filter.ron")).unwrap();
        let base = d.midpoint_values();
        let axes = [SweepAxis::parse("w1=3:4:3").unwrap(), SweepAxis::parse("l1=5:6:2").unwrap()];
        let g = grid(&d, &base, &axes).unwrap();
        let swept: Vec<Vec<f64>> = g.iter().map(|p| p.0.clone()).collect();
        assert_eq!(swept, vec![vec![3.0, 5.0], vec![3.5, 5.0], vec![4.0, 5.0], vec![3.0, 6.0], vec![3.5, 6.0], vec![4.0, 6.0]]);
        assert_eq!(g[4].1["w1"], 3.5);
        assert_eq!(g[4].1["w2"], base["w2"]);
        let e = grid(&d, &base, &[SweepAxis::parse("w1=4:6:3").unwrap()]).unwrap_err();
        assert!(e.contains("sweep point w1=6") && e.contains("bounds"), "{e}");
        let e = grid(&d, &base, &[SweepAxis::parse("q=1:2:2").unwrap()]).unwrap_err();
        assert!(e.contains("not a parameter") && e.contains("w2"), "{e}");
    }

    #[test]
    fn margins_are_positive_where_goals_are_met() {
        assert_eq!(margin_db(Limit::Above(-1.0), -0.25), 0.75);
        assert_eq!(margin_db(Limit::Below(-15.0), -10.0), -5.0);
    }
}
