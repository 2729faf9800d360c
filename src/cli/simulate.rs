//! `emvolve simulate`: evaluate one design at given parameter values and
//! write Touchstone, a CSV of the S-parameters, the RF plots (|S| with the goal
//! masks, phase and group delay, Smith chart, input impedance), the port time
//! series, and the fitness with its per-goal breakdown.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;

use crate::design::Design;
use crate::engine::select::{parse_gpus, select, BackendChoice};
use crate::evaluate::{evaluate_designs, masks, Scored};
use crate::job::EngineKind;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// Parameter values, `name=value` (repeatable); missing ones take their midpoint.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Parameter values from a RON file: a run's `best/parameters.ron`, or a plain
    /// map `{"w1": 3.5, ...}`; `--set` given too overrides single values.
    #[arg(long, value_name = "FILE")]
    pub params: Option<PathBuf>,
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
    let sets = with_params_file(&design, a.params.as_deref(), &a.set)?;
    let given: Vec<&str> = sets.iter().filter_map(|s| s.split_once('=').map(|(n, _)| n.trim())).collect();
    let missing: Vec<String> = design.parameter_names().into_iter().filter(|n| !given.contains(&n.as_str())).collect();
    let values = design.values_from_sets(&sets)?;
    if !missing.is_empty() {
        let mids: Vec<String> = missing.iter().map(|n| format!("{n}={}", crate::design::short(values[n]))).collect();
        println!("no --set for {}: using the midpoint of each range ({})", missing.join(", "), mids.join(", "));
    }
    let backend = select(a.backend, parse_gpus(&a.gpus).map_err(anyhow::Error::msg)?, &mut |s| println!("{s}"))?;
    let drives: Vec<usize> = if a.goals_only { design.drives_needed() } else { (0..design.port_names().len()).collect() };
    let out_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("{}-simulate", design.name())));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let t = Instant::now();
    let mut res = evaluate_designs(&design, std::slice::from_ref(&values), &drives, a.engine.map(Into::into), backend.as_ref(), &|_| {})?;
    let wall = t.elapsed().as_secs_f64();
    let scored = match res.remove(0) {
        Ok(s) => s,
        Err(reason) => {
            println!("the design could not be evaluated: {reason}");
            return Ok(2);
        }
    };
    println!("simulated in {wall:.2} s ({:.1} Mcells/s): {}", scored.cell_updates() / wall / 1e6, scored.run_summary());
    print_fitness(&scored);
    write_outputs(&design, &values, &scored, &out_dir)?;
    Ok(0)
}

/// `--params FILE` as `name=value` assignments (exact: shortest round-trip
/// text), followed by the `--set` ones so that those win.
pub fn with_params_file(design: &Design, file: Option<&Path>, sets: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = vec![];
    if let Some(path) = file {
        for (k, v) in read_params(path)? {
            if !design.parameter_names().contains(&k) {
                anyhow::bail!("{}: `{k}` is not a parameter of {} (parameters: {})", path.display(), design.origin(), design.parameter_names().join(", "));
            }
            out.push(format!("{k}={v}"));
        }
    }
    out.extend(sets.iter().cloned());
    Ok(out)
}

/// Parameter values from a RON file: a map with a `parameters` map inside
/// (what `best/parameters.ron` holds) or the map of values itself.
pub fn read_params(path: &Path) -> anyhow::Result<Vec<(String, f64)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = ron::from_str(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))?;
    let map = match v.get("parameters") {
        Some(p) => p,
        None => &v,
    };
    let map = map.as_object().ok_or_else(|| anyhow::anyhow!("{}: expected a map of parameter values (or one under `parameters`)", path.display()))?;
    map.iter()
        .map(|(k, v)| {
            let x = v.as_f64().ok_or_else(|| anyhow::anyhow!("{}: parameter `{k}`: `{v}` is not a number", path.display()))?;
            Ok((k.clone(), x))
        })
        .collect()
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
    let comment = format!("emvolve {}: {}\nparameters: {}", env!("CARGO_PKG_VERSION"), design.name(), vals.join(", "));
    let mut written = vec![];
    match crate::analysis::touchstone::write(&s.sparams, &stem, &comment) {
        Ok(p) => written.push(p),
        Err(e) => println!("no Touchstone file: {e}"),
    }
    let csv = dir.join("sparams.csv");
    std::fs::write(&csv, crate::analysis::sparams_csv::render(&s.sparams)).with_context(|| format!("writing {}", csv.display()))?;
    written.push(csv);
    let title = format!("{} ({})", design.name(), vals.join(", "));
    written.extend(crate::plot::write_rf_plots(dir, &s.sparams, &masks(design), &title)?);
    for (job, out) in s.jobs.iter().zip(&s.outputs) {
        let path = dir.join(format!("timeseries_drive_{}.csv", job.ports[job.drive].name));
        write_timeseries(&path, job, out)?;
        written.push(path);
    }
    let summary = dir.join("fitness.json");
    let json = serde_json::json!({ "design": design.name(), "parameters": values, "fitness": s.fitness, "runs": s.run_summary() });
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
