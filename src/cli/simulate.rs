//! `emvolve simulate`: evaluate one design at given parameter values and
//! write Touchstone, a plot with the goal masks, the port time series, and
//! the fitness with its per-goal breakdown.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;

use crate::design::Design;
use crate::engine::select::{parse_gpus, select, BackendChoice};
use super::sim_progress::{JobInfo, SimProgress};
use crate::engine::StepWatch;
use crate::evaluate::{evaluate_designs_watched, masks, Scored};
use crate::job::EngineKind;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// Parameter values, `name=value` (repeatable); missing ones take their midpoint.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Output directory (default: runs/<design name>-simulate).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1`.
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// Override the design's engine (the cell size and options are kept).
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,
    /// Drive only the ports the goals need (faster; no Touchstone file then for multi-ports).
    #[arg(long)]
    pub goals_only: bool,
}

/// `--engine fdtd|tlm|tlm2d`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EngineArg {
    Fdtd,
    Tlm,
    Tlm2d,
}

impl From<EngineArg> for EngineKind {
    fn from(e: EngineArg) -> EngineKind {
        match e {
            EngineArg::Fdtd => EngineKind::Fdtd,
            EngineArg::Tlm => EngineKind::Tlm,
            EngineArg::Tlm2d => EngineKind::Tlm2d,
        }
    }
}

pub fn run(a: SimulateArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    for n in design.notes() {
        println!("note: {n}");
    }
    let given: Vec<&str> = a.set.iter().filter_map(|s| s.split_once('=').map(|(n, _)| n.trim())).collect();
    let missing: Vec<String> = design.parameter_names().into_iter().filter(|n| !given.contains(&n.as_str())).collect();
    let values = design.values_from_sets(&a.set)?;
    if !missing.is_empty() {
        let mids: Vec<String> = missing.iter().map(|n| format!("{n}={}", crate::design::short(values[n]))).collect();
        println!("no --set for {}: using the midpoint of each range ({})", missing.join(", "), mids.join(", "));
    }
    let backend = select(a.backend, parse_gpus(&a.gpus).map_err(anyhow::Error::msg)?, &mut |s| println!("{s}"))?;
    let drives: Vec<usize> = if a.goals_only { design.drives_needed() } else { (0..design.port_names().len()).collect() };
    let out_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("{}-simulate", design.name())));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let t = Instant::now();
    let opts = design.file().engine.options();
    let ports = design.port_names();
    let jobs: Vec<JobInfo> = drives
        .iter()
        .map(|&d| JobInfo {
            label: format!("drive {}", ports[d]),
            max_steps: opts.max_steps.unwrap_or(crate::job::StopRule::default().max_steps),
            target_db: opts.decay_db,
        })
        .collect();
    let watch = StepWatch::for_jobs(jobs.len());
    let mut display = SimProgress::new(jobs);
    let engine = a.engine.map(Into::into);
    // The batch runs on its own thread; this one redraws the display until it ends.
    let mut res = std::thread::scope(|s| {
        let h = s.spawn(|| evaluate_designs_watched(&design, std::slice::from_ref(&values), &drives, engine, backend.as_ref(), &|_| {}, &watch));
        while !h.is_finished() {
            display.update(&watch);
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        h.join()
    })
    .map_err(|_| anyhow::anyhow!("the simulation thread panicked"))??;
    display.finish();
    let wall = t.elapsed().as_secs_f64();
    let scored = match res.remove(0) {
        Ok(s) => s,
        Err(reason) => {
            println!("the design could not be evaluated: {reason}");
            return Ok(2);
        }
    };
    println!("simulated in {wall:.2} s ({:.1} Mcells/s): {}", scored.cell_updates() / wall / 1e6, scored.run_summary());
    if let Some(w) = scored.truncation_note() {
        println!("{w}");
    }
    print_fitness(&scored);
    write_outputs(&design, &values, &scored, &out_dir)?;
    Ok(0)
}

/// The fitness and which goals miss by how much.
pub fn print_fitness(s: &Scored) {
    println!("fitness {:.6} (0 = every goal met)", s.fitness.total);
    for g in &s.fitness.per_goal {
        let state = if g.violation == 0.0 { "met   " } else { "missed" };
        println!("  {state} {:<44} violation {:>10.4} dB^2, worst {:.2} dB at {:.4} GHz", g.label, g.violation, g.worst_db, g.worst_freq_hz / 1e9);
    }
}

/// Touchstone (when the matrix is full), plot, time series and a summary into `dir`.
pub fn write_outputs(design: &Design, values: &std::collections::BTreeMap<String, f64>, s: &Scored, dir: &Path) -> anyhow::Result<()> {
    let stem = dir.join(design.name());
    let vals: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", crate::design::short(*v))).collect();
    let mut comment = format!("emvolve {}: {}\nparameters: {}", env!("CARGO_PKG_VERSION"), design.name(), vals.join(", "));
    if let Some(w) = s.truncation_note() {
        comment.push_str(&format!("\n{w}"));
    }
    let mut written = vec![];
    match crate::analysis::touchstone::write(&s.sparams, &stem, &comment) {
        Ok(p) => written.push(p),
        Err(e) => println!("no Touchstone file: {e}"),
    }
    let png = dir.join("sparams.png");
    let title = format!("{} ({})", design.name(), vals.join(", "));
    crate::plot::sparams::plot(&png, &s.sparams, &masks(design), &title)?;
    written.push(png);
    for (job, out) in s.jobs.iter().zip(&s.outputs) {
        let path = dir.join(format!("timeseries_drive_{}.csv", job.ports[job.drive].name));
        write_timeseries(&path, job, out)?;
        written.push(path);
    }
    let summary = dir.join("fitness.json");
    let json = serde_json::json!({ "design": design.name(), "parameters": values, "fitness": s.fitness, "runs": s.run_summary(), "decay": s.decay() });
    std::fs::write(&summary, serde_json::to_string_pretty(&json)?).with_context(|| format!("writing {}", summary.display()))?;
    written.push(summary);
    println!("wrote:");
    for w in written {
        println!("  {}", w.display());
    }
    Ok(())
}

/// Port voltages and currents with their exact sample times.
fn write_timeseries(path: &Path, job: &crate::job::SimJob, out: &crate::job::SimOutput) -> anyhow::Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut head = vec!["step".to_string(), "t_v_s".into()];
    head.extend(job.ports.iter().map(|p| format!("V_{}", p.name)));
    head.push("t_i_s".into());
    head.extend(job.ports.iter().map(|p| format!("I_{}", p.name)));
    writeln!(w, "{}", head.join(","))?;
    for n in 0..out.steps {
        let mut row = vec![n.to_string(), format!("{:.6e}", (n as f64 + out.v_offset) * out.dt)];
        row.extend(out.traces.iter().map(|t| format!("{:.9e}", t.v[n])));
        row.push(format!("{:.6e}", (n as f64 + out.i_offset) * out.dt));
        row.extend(out.traces.iter().map(|t| format!("{:.9e}", t.i[n])));
        writeln!(w, "{}", row.join(","))?;
    }
    w.flush()?;
    Ok(())
}
