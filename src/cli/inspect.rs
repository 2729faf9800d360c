//! `emvolve inspect`: the best designs of a run (or its Pareto set), read
//! from the checkpoint, so it works while the run goes on or after an
//! interruption; each is re-simulated for Touchstone files and plots.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use super::args::ExecArgs;
use crate::optimise::{open_run, Simulator};
use crate::outputs::write_design_files;
use crate::run::checkpoint;
use crate::run::inspect::{failed_designs, failed_table, failure_kinds, failures_line, inspect, InspectionKind};
use crate::run::RunDir;

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The run directory (runs/NAME).
    pub run_dir: PathBuf,
    /// How many designs to show.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List the designs that failed, with their reasons and parameters (nothing is re-simulated).
    #[arg(long)]
    pub failed: bool,
    /// Only read the checkpoint; do not re-simulate for Touchstone and plots.
    #[arg(long)]
    pub no_simulate: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
}

pub fn run(a: InspectArgs) -> anyhow::Result<i32> {
    let (rundir, design, settings) = open_run(&a.run_dir)?;
    if a.failed {
        return list_failed(&rundir, a.json);
    }
    let ins = inspect(rundir.path(), a.top)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ins.to_json())?);
    } else {
        if let Some(w) = &ins.warning {
            println!("warning: {w}");
        }
        let status = ins.termination.map_or("running or interrupted".to_string(), |t| format!("stopped: {t}"));
        println!(
            "{}: generation {}, {} designs simulated, {} ({status})",
            design.name(),
            ins.generation,
            ins.evaluations,
            failures_line(ins.failures, &ins.failure_kinds)
        );
        if ins.failures > 0 {
            println!("`emvolve inspect {} --failed` lists the failed designs with their reasons", a.run_dir.display());
        }
        if ins.truncated > 0 {
            println!(
                "{} designs hit the step cap before their energy decay target: their fitness is uncertain and they rank behind every converged design",
                ins.truncated
            );
        }
        for c in &ins.changes {
            println!("after generation {}: {}", c.generation, c.change);
        }
        let what = match ins.kind {
            InspectionKind::Pareto => "Pareto set",
            InspectionKind::Top => "best designs",
        };
        println!("{what}: {} of {}", ins.designs.len(), ins.available);
        for d in &ins.designs {
            let genes: Vec<String> = d.genes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let obj: Vec<String> = d.objectives.iter().map(|o| format!("{o:.5}")).collect();
            // A simulated design broke no constraint: a violation there is the truncation penalty, told below.
            let viol = if d.constraint_violation > 0.0 && d.decay.is_none() { format!(", constraint violation {:.3e}", d.constraint_violation) } else { String::new() };
            println!("#{} fitness {}{viol}  [{}]", d.rank, obj.join(" / "), genes.join(", "));
            if let Some(dc) = d.decay {
                println!("    {}{dc}", if dc.truncated { "WARNING: " } else { "" });
            }
            for g in &d.extra.goals {
                println!("    {}", g.line());
            }
        }
    }
    if a.no_simulate || ins.designs.is_empty() {
        return Ok(0);
    }
    // With --json, stdout holds the JSON alone; everything else goes to stderr.
    let say = |s: String| if a.json { eprint!("{s}") } else { print!("{s}") };
    let backend = a.exec.backend(&mut |s| say(format!("{s}\n")))?;
    let sim = Simulator { design, backend: backend.into(), engine: settings.engine };
    let all = sim.all_ports();
    for d in &ins.designs {
        let dir = rundir.path().join("inspect").join(format!("rank_{:02}", d.rank));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        match sim.simulate(&d.genome, &all)? {
            Ok(s) => {
                say(format!("design #{}:\n", d.rank));
                say(write_design_files(&sim.design, &sim.values(&d.genome), &s, &dir)?.to_string());
            }
            Err(reason) => eprintln!("design #{} could not be re-simulated: {reason}", d.rank),
        }
    }
    Ok(0)
}

/// `inspect --failed`: every failed design of the run, read from the checkpoint.
fn list_failed(rundir: &RunDir, json: bool) -> anyhow::Result<i32> {
    let loaded = checkpoint::load(rundir.path())?;
    let failed = failed_designs(&loaded.state);
    if json {
        println!("{}", serde_json::to_string_pretty(&failed)?);
        return Ok(0);
    }
    if let Some(w) = &loaded.warning {
        println!("warning: {w}");
    }
    let kinds = failure_kinds(&loaded.state);
    println!("{} designs simulated, {}", loaded.state.evaluations, failures_line(failed.len(), &kinds));
    print!("{}", failed_table(&failed));
    Ok(0)
}
