//! `emvolve run` and `emvolve resume`: launch an optimisation in a run
//! directory, or continue one from its checkpoint.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context as _};
use clap::Args;

pub use super::args::ExecArgs;
use super::args::EngineArg;
use crate::design::Design;
use crate::ga::settings::GaSettings;
use crate::optimise::{open_run, BestObserver, DesignProblem, RunSettings, Simulator};
use crate::run::observe::{default_observers_labelled, Observer, PlotLabels};
use crate::run::{checkpoint, RunDir, RunSummary, Runner};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// Run name: the run lives in runs/NAME (default: the design's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Where run directories are made.
    #[arg(long, default_value = "runs")]
    pub runs_dir: PathBuf,
    /// Replace an existing run directory of the same name.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Override the design's engine (cell size and options kept).
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,
    /// Override the population size.
    #[arg(long)]
    pub population: Option<usize>,
    /// Override the number of generations (after the initial one).
    #[arg(long)]
    pub generations: Option<usize>,
    /// Override the seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the evaluation limit (stop.max_evaluations).
    #[arg(long)]
    pub max_evaluations: Option<usize>,
    /// Override the stagnation limit in generations (stop.stagnation).
    #[arg(long)]
    pub stagnation: Option<usize>,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The run directory (runs/NAME).
    pub run_dir: PathBuf,
    /// Run up to this generation in total (default: the run's own setting).
    #[arg(long, conflicts_with = "more")]
    pub generations: Option<usize>,
    /// Run this many generations beyond the checkpoint's.
    #[arg(long)]
    pub more: Option<usize>,
    /// Resume even though the run's design.ron was edited since the run started.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// The design's optimiser block as the GA's settings.
pub fn ga_settings(design: &Design) -> anyhow::Result<GaSettings> {
    Ok(design.optimiser().clone())
}

/// Ctrl-C: the first press asks the runner to stop after the generation in
/// flight (its checkpoint is written); a second press ends the process.
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\nsecond interrupt: stopping now (the last completed generation's checkpoint is on disk)");
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: finishing the current generation and writing the checkpoint (Ctrl-C again to stop at once)");
    });
    flag
}

fn observers(sim: &Arc<Simulator>, problem: &DesignProblem, quiet: bool) -> Vec<Box<dyn Observer>> {
    let mut obs = default_observers_labelled(quiet, plot_labels(&sim.design));
    obs.push(Box::new(BestObserver::new(sim.clone(), problem)));
    obs
}

/// The plots' names for the design's objectives and its genes' units: the goal
/// violation is the fitness in dB²; expressions and genes are in design units
/// (integer genes are counts).
fn plot_labels(design: &Design) -> PlotLabels {
    let unit = design.file().units.symbol().to_string();
    let (objectives, objective_units) = design
        .objective_labels()
        .into_iter()
        .map(|l| if l == "goals" { ("fitness".to_string(), "dB²".to_string()) } else { (l, String::new()) })
        .unzip();
    let gene_units = design.genes().iter().map(|g| if matches!(g, crate::ga::GeneSpec::Int { .. }) { String::new() } else { unit.clone() }).collect();
    PlotLabels { objectives, objective_units, gene_units }
}

fn report(summary: &RunSummary) -> i32 {
    for w in &summary.warnings {
        println!("warning: {w}");
    }
    println!("{summary}");
    if let Some(h) = summary.resume_hint() {
        println!("{h}: emvolve resume {}", summary.run_dir.display());
        return 130;
    }
    0
}

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    for n in design.notes() {
        println!("note: {n}");
    }
    let mut ga = ga_settings(&design)?;
    if let Some(p) = a.population {
        ga.population = p;
    }
    if let Some(g) = a.generations {
        ga.generations = g;
    }
    if let Some(s) = a.seed {
        ga.seed = s;
    }
    if let Some(m) = a.max_evaluations {
        ga.stop.max_evaluations = Some(m);
    }
    if let Some(n) = a.stagnation {
        ga.stop.stagnation = Some(n);
    }
    ga.validate().context("optimiser settings")?;
    // Check settings against the problem (e.g. a fitness target with two objectives)
    // before anything is written, so a refused run leaves no directory behind.
    let n_objectives = design.objective_labels().len().max(1);
    crate::ga::new_state(design.genes(), n_objectives, ga.clone(), "")
        .with_context(|| format!("{}: optimiser settings", design.origin()))?;
    let settings = RunSettings { ga: ga.clone(), engine: a.engine.map(Into::into) };
    let backend = a.exec.backend(&mut |s| println!("{s}"))?;
    let name = a.name.clone().unwrap_or_else(|| design.name().to_string());
    let dir = a.runs_dir.join(&name);
    let rundir = RunDir::create(&dir, a.force)?;
    rundir.store("design.ron", design.text())?;
    rundir.store("settings.ron", ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())?)?;
    println!("run directory: {}", dir.display());
    let hash = design.hash();
    let sim = Arc::new(Simulator { design, backend: Arc::from(backend), engine: settings.engine });
    let problem = DesignProblem::new(sim.clone());
    let obs = observers(&sim, &problem, a.exec.quiet);
    let mut runner = Runner::new(problem, ga, rundir, obs).with_interrupt(interrupt_flag()).with_design_hash(hash);
    let summary = runner.run(None)?;
    Ok(report(&summary))
}

pub fn resume(a: ResumeArgs) -> anyhow::Result<i32> {
    let (rundir, design, mut settings) = open_run(&a.run_dir)?;
    let loaded = checkpoint::load(rundir.path())?;
    if let Some(w) = &loaded.warning {
        println!("warning: {w}");
    }
    let mut hash = design.hash();
    if loaded.state.design_hash != hash {
        if !a.force {
            bail!(
                "{} was edited since the run started (hash {} in the checkpoint, {} now); resuming would mix two designs. Use --force to resume anyway",
                rundir.file("design.ron").display(),
                short(&loaded.state.design_hash),
                short(&hash)
            );
        }
        println!("warning: design.ron was edited since the run started; resuming anyway (--force)");
        hash = loaded.state.design_hash.clone();
    }
    if let Some(m) = a.more {
        settings.ga.generations = loaded.state.generation + m;
    } else if let Some(g) = a.generations {
        settings.ga.generations = g;
    }
    if settings.ga.generations <= loaded.state.generation {
        println!(
            "note: the checkpoint is at generation {} and the run is set to stop at {}: use --more N or --generations N to go on",
            loaded.state.generation, settings.ga.generations
        );
    }
    let backend = a.exec.backend(&mut |s| println!("{s}"))?;
    let ron_settings = ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())?;
    rundir.store("settings.ron", ron_settings)?;
    let sim = Arc::new(Simulator { design, backend: Arc::from(backend), engine: settings.engine });
    let problem = DesignProblem::new(sim.clone());
    let obs = observers(&sim, &problem, a.exec.quiet);
    let mut runner = Runner::new(problem, settings.ga.clone(), rundir, obs).with_interrupt(interrupt_flag()).with_design_hash(hash);
    let summary = runner.resume_from(loaded, None)?;
    Ok(report(&summary))
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}
