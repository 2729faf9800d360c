//! Inspection of a run from its checkpoint (read-only, so it works while the
//! run goes on): the top designs by fitness, or the Pareto set, as a table or JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::checkpoint::{self, CheckpointError};
use crate::ga::failure_kind::{self, FailureKind};
use crate::ga::nsga2;
use crate::ga::ops::select::compare_constrained;
use crate::ga::problem::{Decay, Evaluation, Extra};
use crate::ga::state::{GaState, SettingsChange};
use crate::ga::termination::TerminationReason;

/// One evaluated design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectedDesign {
    /// 1 = best (single objective); position along f1 (Pareto set).
    pub rank: usize,
    /// Gene values by name.
    pub genes: serde_json::Map<String, serde_json::Value>,
    /// Gene values in genome order (exact, for re-simulation).
    pub genome: Vec<f64>,
    pub objectives: Vec<f64>,
    pub constraint_violation: f64,
    /// How far its simulations' energy decayed; `truncated` when the step cap cut one off.
    pub decay: Option<Decay>,
    pub extra: Extra,
}

/// Which set `inspect` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InspectionKind {
    /// The best designs by fitness (a single objective).
    Top,
    /// The Pareto set (several objectives).
    Pareto,
}

/// What `inspect` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    pub run_dir: PathBuf,
    pub checkpoint: PathBuf,
    /// Set when the latest checkpoint was unusable and the previous one was read.
    pub warning: Option<String>,
    pub generation: usize,
    pub evaluations: usize,
    /// Designs of the whole run whose simulation failed (the sum of history.csv's `failures`).
    pub failures: usize,
    /// Those failures by kind ("geometry", "diverged", ...), kinds with none left out.
    pub failure_kinds: BTreeMap<String, usize>,
    pub termination: Option<TerminationReason>,
    pub gene_names: Vec<String>,
    pub n_objectives: usize,
    pub kind: InspectionKind,
    /// How many designs the set had before it was cut to `top_k`.
    pub available: usize,
    pub designs: Vec<InspectedDesign>,
    /// Limits changed on resume.
    pub changes: Vec<SettingsChange>,
    /// Designs of the run whose simulation hit the step cap before its end criterion.
    pub truncated: usize,
}

/// Read the run's checkpoint and pick its best designs: the `top_k` distinct
/// designs by fitness (single objective; feasible first, failures left out), or
/// the Pareto set of everything evaluated (NSGA-II), thinned evenly along f1 to `top_k`.
pub fn inspect(dir: &Path, top_k: usize) -> Result<Inspection, CheckpointError> {
    let loaded = checkpoint::load(dir)?;
    let mut ins = inspect_state(&loaded.state, top_k);
    ins.run_dir = dir.to_path_buf();
    ins.checkpoint = loaded.path;
    ins.warning = loaded.warning;
    Ok(ins)
}

/// [`inspect`] on a state in memory.
pub fn inspect_state(state: &GaState, top_k: usize) -> Inspection {
    // Failed and unsimulated designs carry no results worth showing.
    let entries: Vec<(&String, &Evaluation)> = state.cache.iter().filter(|(_, e)| e.is_valid()).collect();
    let evals: Vec<&Evaluation> = entries.iter().map(|e| e.1).collect();
    let (kind, chosen, available) = if state.is_multi_objective() {
        let mut set = nsga2::pareto_set(&evals);
        set.sort_by(|&a, &b| evals[a].objectives[0].total_cmp(&evals[b].objectives[0]));
        let n = set.len();
        let picked: Vec<usize> = if n <= top_k || top_k == 0 {
            set
        } else if top_k == 1 {
            vec![set[0]]
        } else {
            // Evenly spaced along f1, both ends included.
            (0..top_k).map(|i| set[i * (n - 1) / (top_k - 1)]).collect()
        };
        (InspectionKind::Pareto, picked, n)
    } else {
        let mut order: Vec<usize> = (0..evals.len()).collect();
        // Among equals (several designs meeting every goal at fitness 0), the
        // run's best comes first: the design best/ holds, found first.
        let run_best = state.best.first().map(|b| b.key.as_str());
        let is_best = |i: usize| Some(entries[i].0.as_str()) == run_best;
        order.sort_by(|&a, &b| {
            compare_constrained(evals[a], evals[b]).then_with(|| is_best(b).cmp(&is_best(a))).then_with(|| entries[a].0.cmp(entries[b].0))
        });
        let n = order.len();
        order.truncate(top_k);
        (InspectionKind::Top, order, n)
    };
    let names = state.gene_names();
    let designs = chosen
        .into_iter()
        .enumerate()
        .map(|(r, i)| {
            let (key, e) = entries[i];
            // Cache keys are made by genome_key (checked again when a checkpoint is read).
            let genome = crate::ga::genome::genome_from_key(key).expect("cache keys are made by genome_key");
            InspectedDesign {
                rank: r + 1,
                genes: names.iter().cloned().zip(genome.iter().map(|&v| serde_json::json!(v))).collect(),
                genome,
                objectives: e.objectives.clone(),
                constraint_violation: e.constraint_violation,
                decay: e.decay,
                extra: e.extra.clone(),
            }
        })
        .collect();
    Inspection {
        run_dir: PathBuf::new(),
        checkpoint: PathBuf::new(),
        warning: None,
        generation: state.generation,
        evaluations: state.evaluations,
        failures: state.failures.len(),
        failure_kinds: failure_kinds(state),
        termination: state.termination,
        gene_names: names,
        n_objectives: state.n_objectives,
        kind,
        available,
        designs,
        changes: state.changes.clone(),
        truncated: state.cache.values().filter(|e| e.is_truncated()).count(),
    }
}

/// The run's failures by kind, kinds with none left out.
pub fn failure_kinds(state: &GaState) -> BTreeMap<String, usize> {
    let n = failure_kind::count(&state.failures);
    FailureKind::ALL.iter().zip(n).filter(|(_, n)| *n > 0).map(|(k, n)| (k.name().to_string(), n)).collect()
}

/// One design of the run that could not be simulated (`inspect --failed`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedDesign {
    pub generation: usize,
    /// "geometry", "diverged", "simulation", "fitness" or "other".
    pub kind: &'static str,
    pub reason: String,
    /// Gene values by name.
    pub genes: serde_json::Map<String, serde_json::Value>,
}

/// Every failed design of the run, in the order they failed.
pub fn failed_designs(state: &GaState) -> Vec<FailedDesign> {
    let names = state.gene_names();
    state
        .failures
        .iter()
        .map(|f| FailedDesign {
            generation: f.generation,
            kind: FailureKind::of(&f.reason).name(),
            reason: f.reason.clone(),
            genes: names.iter().cloned().zip(f.genome.iter().map(|&v| serde_json::json!(v))).collect(),
        })
        .collect()
}

/// "52 of them failed (geometry 30, diverged 22)", or "none failed".
pub fn failures_line(failures: usize, kinds: &BTreeMap<String, usize>) -> String {
    if failures == 0 {
        return "none failed".into();
    }
    // In FailureKind order, as the run log and history.csv give them.
    let parts: Vec<String> = FailureKind::ALL.iter().filter_map(|k| kinds.get(k.name()).map(|n| format!("{} {n}", k.name()))).collect();
    format!("{failures} of them failed ({})", parts.join(", "))
}

/// The failed designs as text: one line per design with its generation, kind
/// and parameters, its reason on the line below.
pub fn failed_table(failed: &[FailedDesign]) -> String {
    let mut out = String::new();
    for f in failed {
        let genes: Vec<String> = f.genes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!("generation {} {}: [{}]\n    {}\n", f.generation, f.kind, genes.join(", "), f.reason));
    }
    out
}

impl Inspection {
    pub fn to_json(&self) -> serde_json::Value {
        // serde_json fails only on map keys that are not strings; every map here has string keys.
        serde_json::to_value(self).expect("an inspection holds only plain data")
    }

    /// A text table: one row per design, genes in genome order; `extra` on the line below.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        if let Some(w) = &self.warning {
            out.push_str(&format!("warning: {w}\n"));
        }
        let status = self.termination.map_or("running or interrupted".to_string(), |t| format!("stopped: {t}"));
        out.push_str(&format!(
            "generation {}, {} designs simulated, {} ({status})\n",
            self.generation,
            self.evaluations,
            failures_line(self.failures, &self.failure_kinds)
        ));
        if self.truncated > 0 {
            out.push_str(&format!("{} designs were truncated at the step cap (uncertain fitness, ranked last)\n", self.truncated));
        }
        for c in &self.changes {
            out.push_str(&format!("after generation {}: {}\n", c.generation, c.change));
        }
        out.push_str(&match self.kind {
            InspectionKind::Pareto => format!("Pareto set: {} of {} designs\n", self.designs.len(), self.available),
            InspectionKind::Top => format!("best {} of {} designs\n", self.designs.len(), self.available),
        });
        let mut header: Vec<String> = vec!["#".into()];
        header.extend((0..self.n_objectives).map(|k| if self.n_objectives == 1 { "fitness".into() } else { format!("f{}", k + 1) }));
        header.push("violation".into());
        header.extend(self.gene_names.iter().cloned());
        let rows: Vec<Vec<String>> = self
            .designs
            .iter()
            .map(|d| {
                let mut r = vec![d.rank.to_string()];
                r.extend(d.objectives.iter().map(|o| format!("{o:.6e}")));
                r.push(if d.constraint_violation > 0.0 { format!("{:.3e}", d.constraint_violation) } else { "0".into() });
                r.extend(d.genome.iter().map(|v| format!("{v}")));
                r
            })
            .collect();
        let widths: Vec<usize> =
            (0..header.len()).map(|c| rows.iter().map(|r| r[c].len()).chain([header[c].len()]).max().unwrap_or(0)).collect();
        let line = |cells: &[String]| {
            cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string()
        };
        out.push_str(&line(&header));
        out.push('\n');
        for (r, d) in rows.iter().zip(&self.designs) {
            out.push_str(&line(r));
            out.push('\n');
            if let Some(d) = d.decay.filter(|d| d.truncated) {
                out.push_str(&format!("{:>w$}  {d}\n", "", w = widths[0]));
            }
            if !d.extra.is_empty() {
                let extra = serde_json::to_string(&d.extra).unwrap_or_else(|e| format!("({e})"));
                out.push_str(&format!("{:>w$}  extra: {extra}\n", "", w = widths[0]));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::problem::Problem;
    use crate::ga::settings::GaSettings;
    use crate::ga::step::{new_state, step};
    use crate::ga::testfns::{Rastrigin, Zdt1};

    #[test]
    fn top_k_is_sorted_distinct_and_named() {
        let mut p = Rastrigin::new(2, 1);
        p.sum_limit = Some(4.0);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 16, ..Default::default() }, "").unwrap();
        for _ in 0..6 {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
        }
        let ins = inspect_state(&st, 5);
        assert_eq!(ins.designs.len(), 5);
        assert_eq!(ins.designs[0].objectives, st.best_evaluation().unwrap().objectives);
        assert_eq!(ins.designs[0].genome, st.best[0].genome);
        for w in ins.designs.windows(2) {
            assert!(w[0].objectives[0] <= w[1].objectives[0] && w[0].genome != w[1].genome);
        }
        assert_eq!(ins.designs[0].genes["x1"], serde_json::json!(st.best[0].genome[1]));
        let table = ins.to_table();
        assert!(table.contains("fitness") && table.contains("n0") && table.contains("extra: {"), "{table}");
        assert_eq!(table.lines().filter(|l| l.contains("extra:")).count(), 5);
        let json = ins.to_json();
        assert_eq!(json["designs"].as_array().unwrap().len(), 5);
        assert_eq!(json["kind"], "top");
    }

    /// With designs tied at the best fitness, the first is the run's best (the
    /// one best/parameters.ron holds), whatever the order of their cache keys.
    #[test]
    fn of_designs_tied_at_the_best_fitness_the_runs_best_comes_first() {
        let mut p = Rastrigin::new(2, 1);
        p.sum_limit = Some(4.0);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 16, ..Default::default() }, "").unwrap();
        for _ in 0..3 {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
        }
        let best_key = st.best[0].key.clone();
        let best_fitness = st.cache[&best_key].objectives.clone();
        // Every other valid design is made a tie; the run's best has the largest key of them or not, it must lead.
        for (k, e) in st.cache.iter_mut() {
            if e.is_valid() && e.is_feasible() && *k != best_key {
                e.objectives = best_fitness.clone();
            }
        }
        let smallest = st.cache.iter().filter(|(_, e)| e.is_valid() && e.is_feasible()).map(|(k, _)| k.clone()).min().unwrap();
        assert_ne!(smallest, best_key, "the test needs a tie the key order would break the other way");
        let ins = inspect_state(&st, 3);
        assert_eq!(ins.designs[0].genome, st.best[0].genome);
        assert_eq!(ins.designs[1].objectives, best_fitness);
    }

    #[test]
    fn pareto_set_is_non_dominated_and_thinned_evenly() {
        let mut z = Zdt1 { n: 5 };
        let mut st = new_state(z.genes(), 2, GaSettings { population: 20, ..Default::default() }, "").unwrap();
        for _ in 0..15 {
            step(&mut st, &mut z, &|_, _| {}).unwrap();
        }
        let all = inspect_state(&st, 0);
        assert_eq!(all.designs.len(), all.available);
        assert_eq!(all.available, st.best.len());
        for a in &all.designs {
            for b in &all.designs {
                assert!(!nsga2::dominates(&a.objectives, &b.objectives));
            }
        }
        let few = inspect_state(&st, 4);
        assert_eq!(few.designs.len(), 4);
        assert_eq!(few.designs[0].objectives, all.designs[0].objectives);
        assert_eq!(few.designs[3].objectives, all.designs.last().unwrap().objectives);
    }
}
