//! `emvolve inspect`: the best designs of a run (or its Pareto set), read
//! from the checkpoint, so it works while the run goes on or after an
//! interruption; each is re-simulated for Touchstone files and plots.

use std::path::PathBuf;

use clap::Args;

use super::run::{open_run, ExecArgs};
use crate::engine::select::{parse_gpus, select};
use crate::optimise::Simulator;
use crate::run::inspect::inspect;

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
    /// Only read the checkpoint; do not re-simulate for Touchstone and plots.
    #[arg(long)]
    pub no_simulate: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
}

pub fn run(a: InspectArgs) -> anyhow::Result<i32> {
    let (rundir, design, settings) = open_run(&a.run_dir)?;
    let ins = inspect(rundir.path(), a.top)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ins.to_json())?);
    } else {
        if let Some(w) = &ins.warning {
            println!("warning: {w}");
        }
        let status = ins.termination.map_or("running or interrupted".to_string(), |t| format!("stopped: {t}"));
        println!("{}: generation {}, {} designs simulated, {} failed ({status})", design.name(), ins.generation, ins.evaluations, ins.failures);
        if ins.truncated > 0 {
            println!(
                "{} designs hit the step cap before their energy decay target: their fitness is uncertain and they rank behind every converged design",
                ins.truncated
            );
        }
        for c in &ins.changes {
            println!("after generation {}: {}", c.generation, c.change);
        }
        let what = if ins.kind == "pareto" { "Pareto set" } else { "best designs" };
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
            if let Some(goals) = d.extra.get("goals").and_then(|g| g.as_array()) {
                for g in goals {
                    let v = g["violation"].as_f64().unwrap_or(f64::NAN);
                    println!(
                        "    {} {:<44} violation {:>9.4} dB^2, worst {:.2} dB at {:.4} GHz",
                        if v == 0.0 { "met   " } else { "missed" },
                        g["label"].as_str().unwrap_or("?"),
                        v,
                        g["worst_db"].as_f64().unwrap_or(f64::NAN),
                        g["worst_freq_hz"].as_f64().unwrap_or(f64::NAN) / 1e9
                    );
                }
            }
        }
    }
    if a.no_simulate || ins.designs.is_empty() {
        return Ok(0);
    }
    let mut note = |s: String| if !a.json { println!("{s}") } else { eprintln!("{s}") };
    let backend = select(a.exec.backend, parse_gpus(&a.exec.gpus).map_err(anyhow::Error::msg)?, &mut note)?;
    let sim = Simulator { design, backend: backend.into(), engine: settings.engine };
    let all: Vec<usize> = (0..sim.design.port_names().len()).collect();
    for d in &ins.designs {
        let dir = rundir.path().join("inspect").join(format!("rank_{:02}", d.rank));
        std::fs::create_dir_all(&dir)?;
        match sim.simulate(&d.genome, &all)? {
            Ok(s) => {
                let quiet = a.json;
                if !quiet {
                    println!("design #{}:", d.rank);
                }
                super::simulate::write_outputs(&sim.design, &sim.values(&d.genome), &s, &dir)?;
            }
            Err(reason) => eprintln!("design #{} could not be re-simulated: {reason}", d.rank),
        }
    }
    Ok(0)
}
