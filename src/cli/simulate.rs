//! `emvolve simulate`: evaluate one design at given parameter values and
//! write Touchstone, a CSV of the S-parameters, the RF plots (|S| with the goal
//! masks, phase and group delay, Smith chart, input impedance), the port time
//! series, and the fitness with its per-goal breakdown; with `--dump-fields`
//! and `--vtk`, field magnitudes for ParaView and |E| slices ([`super::dump_fields`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;

use super::args::backend;
use crate::job::EngineKind;
use crate::design::Design;
use super::sim_progress::{JobInfo, SimProgress};
use crate::engine::select::BackendChoice;
use crate::engine::{RunCtx, StepWatch};
use crate::evaluate::{evaluate_designs, Scored};
use crate::outputs::write_design_files;

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
    /// Output directory, new or empty (default: runs/<design name>-simulate, or
    /// runs/<design name>-simulate-2, -3, ... when that one holds an earlier result).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into --out (or the default directory) even if it holds files, replacing them.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1`.
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// Override the design's engine (the cell size and options are kept).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Drive only the ports the goals need (faster; no Touchstone file then for multi-ports).
    #[arg(long)]
    pub goals_only: bool,
    /// Record the fields over the whole grid at these frequencies (running DFTs of
    /// the first driven port's run; Hz or with a unit: 2.45GHz) and write |E| and
    /// |H| for ParaView into --vtk DIR, with a PNG slice of |E| per frequency.
    #[arg(long, value_delimiter = ',', value_name = "F1,F2", requires = "vtk")]
    pub dump_fields: Vec<String>,
    /// Directory of the field dump's VTK files and slices.
    #[arg(long, value_name = "DIR", requires = "dump_fields")]
    pub vtk: Option<PathBuf>,
    /// The plane of the |E| slice, AXIS=VALUE in the design's length unit (default:
    /// through the structure: a waveguide's broad face, or just below a patch/trace).
    #[arg(long, value_name = "AXIS=VALUE", requires = "dump_fields")]
    pub slice: Option<String>,
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
        let mids: Vec<String> = missing.iter().map(|n| format!("{n}={}", values.get(n).map_or(String::new(), |v| crate::numfmt::short(*v)))).collect();
        println!("no --set for {}: using the midpoint of each range ({})", missing.join(", "), mids.join(", "));
    }
    let backend = backend(a.backend, &a.gpus, &mut |s| println!("{s}"))?;
    // The field dump: checked before the run, recorded by a wrapper of the backend.
    let units = design.file().units;
    let slice = a.slice.as_deref().map(|s| super::dump_fields::parse_slice(s, units.metres(), units.symbol())).transpose().map_err(anyhow::Error::msg)?;
    let dump_freqs: Vec<f64> = a.dump_fields.iter().map(|s| super::dump_fields::parse_freq(s)).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
    let band = &design.file().band;
    if let Some(f) = dump_freqs.iter().find(|&&f| f < band.start || f > band.stop) {
        anyhow::bail!("--dump-fields {f} Hz lies outside the design's band ({} to {} Hz), where the excitation has little energy", band.start, band.stop);
    }
    let dumper = super::dump_fields::FieldDump::new(backend.as_ref(), dump_freqs.clone());
    let backend: &dyn crate::engine::Backend = if dump_freqs.is_empty() { backend.as_ref() } else { &dumper };
    let drives: Vec<usize> = if a.goals_only { design.drives_needed() } else { (0..design.port_names().len()).collect() };
    let default_dir = PathBuf::from("runs").join(format!("{}-simulate", design.name()));
    let out = super::out_dir::choose(a.out.as_deref(), &default_dir, a.force)?;
    if let Some(n) = &out.note {
        println!("{n}");
    }
    let out_dir = out.path;
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    println!("output: {}", out_dir.display());
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
    let engine = a.engine;
    // The batch runs on its own thread; this one redraws the display until it ends.
    let mut res = std::thread::scope(|s| {
        let h = s.spawn(|| evaluate_designs(&design, std::slice::from_ref(&values), &drives, engine, backend, &RunCtx::watched(&|_| {}, &watch)));
        while !h.is_finished() {
            display.update(&watch);
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        h.join()
    })
    .map_err(|_| anyhow::anyhow!("the simulation thread panicked"))??;
    display.finish();
    let wall = t.elapsed().as_secs_f64();
    let Some(res) = res.pop() else { anyhow::bail!("the batch returned no result") };
    let scored = match res {
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
    print!("{}", write_design_files(&design, &values, &scored, &out_dir)?);
    if let Some(dir) = &a.vtk {
        let (job, out, m) = dumper.take().ok_or_else(|| anyhow::anyhow!("--dump-fields: the run returned no field monitor"))?;
        let files = super::dump_fields::write(&design, &job, &out, &m, dir, slice)?;
        println!("field dump of `{}` (open {}_fields.vtm in ParaView):", job.label, design.name());
        for f in files {
            println!("  {}", f.display());
        }
    }
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
        println!("  {}", g.line());
    }
}
