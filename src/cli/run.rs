//! `emvolve run` and `emvolve resume`: launch an optimisation in a run
//! directory, or continue one from its checkpoint.
//!
//! Both hold the run directory's lock while they write into it. SIGINT,
//! SIGTERM and SIGHUP all stop a run the same way: the first is acknowledged at
//! once, the generation in flight finishes and its checkpoint is written; a
//! second ends the process at once. Any kill leaves a resumable directory.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context as _};
use clap::Args;

pub use super::args::ExecArgs;
use crate::job::EngineKind;
use crate::design::Design;
use crate::ga::methods::{default_population, Method};
use crate::ga::settings::GaSettings;
use crate::ga::TerminationReason;
use crate::optimise::{read_run, BestObserver, DesignProblem, RunSettings, Simulator};
use crate::run::observe::progress::Announcer;
use crate::run::observe::{CsvObserver, Observer, PlotLabels, PlotObserver, ProgressObserver};
use crate::run::runner::{resume_blocked, NOTHING_COMPLETED};
use crate::run::{checkpoint, CheckpointError, RunDir, RunSummary, Runner};
use crate::farm::local::LocalWorkers;
use crate::farm::{run_id, Dispatcher, Endpoint, FarmOptions};

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
    pub engine: Option<EngineKind>,
    /// Override the population size.
    #[arg(long)]
    pub population: Option<usize>,
    /// Override the number of generations (after the initial one).
    #[arg(long)]
    pub generations: Option<usize>,
    /// Override the seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Search with this optimiser instead of the design's: `ga`, `cmaes`,
    /// `de` or `surrogate` with that method's default settings and population
    /// (unless --population) and the design's generations, seed and stop
    /// rules; or a whole block such as `Surrogate(population: 8, lcb: 1.0)`.
    /// The run keeps it on resume.
    #[arg(long, value_name = "NAME|BLOCK", value_parser = optimiser_choice)]
    pub optimiser: Option<OptimiserChoice>,
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub farm: FarmArgs,
}

/// `--farm`: the generations go to workers through a NATS server (on `run` and `resume`).
#[derive(Args, Debug, Default)]
pub struct FarmArgs {
    /// Simulate the generations on farm workers through the NATS server at URL
    /// (nats://HOST:4222; tls://HOST:4222 for TLS). See `emvolve worker`.
    #[arg(long, value_name = "URL")]
    pub farm: Option<String>,
    /// A file of `user = NAME` and `password = SECRET` lines for the farm's server.
    #[arg(long, value_name = "FILE", requires = "farm")]
    pub creds: Option<PathBuf>,
    /// A CA certificate (PEM) to trust; the connection then requires TLS.
    #[arg(long, value_name = "FILE", requires = "farm")]
    pub tls_ca: Option<PathBuf>,
    /// Also start N CPU workers on this host (a quick try of the farm).
    #[arg(long, value_name = "N", requires = "farm")]
    pub farm_local: Option<usize>,
    /// Candidates per work message (default: about four messages per attached worker).
    #[arg(long, value_name = "N", requires = "farm")]
    pub farm_chunk: Option<usize>,
    /// Seconds without an ack or progress note before a worker's message goes to another worker.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub ack_wait: f64,
}

/// `--optimiser`: a method by name, or a whole `optimiser:` block.
#[derive(Debug, Clone, PartialEq)]
pub enum OptimiserChoice {
    Kind(OptimiserKind),
    Block(GaSettings),
}

fn optimiser_choice(s: &str) -> Result<OptimiserChoice, String> {
    if s.contains('(') {
        let g = GaSettings::from_ron_str(s).map_err(|e| format!("`{s}`: {e}"))?;
        g.validate().map_err(|e| e.to_string())?;
        return Ok(OptimiserChoice::Block(g));
    }
    match s.to_ascii_lowercase().as_str() {
        "ga" => Ok(OptimiserChoice::Kind(OptimiserKind::Ga)),
        "cmaes" => Ok(OptimiserChoice::Kind(OptimiserKind::Cmaes)),
        "de" => Ok(OptimiserChoice::Kind(OptimiserKind::De)),
        "surrogate" => Ok(OptimiserChoice::Kind(OptimiserKind::Surrogate)),
        _ => Err(format!("`{s}` is none of ga, cmaes, de, surrogate, nor a block such as `Cmaes(population: 16)`")),
    }
}

/// The methods of the `optimiser:` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimiserKind {
    Ga,
    Cmaes,
    De,
    Surrogate,
}

impl OptimiserKind {
    fn method(self) -> Method {
        match self {
            OptimiserKind::Ga => Method::Ga,
            OptimiserKind::Cmaes => Method::Cmaes(Default::default()),
            OptimiserKind::De => Method::De(Default::default()),
            OptimiserKind::Surrogate => Method::Surrogate(Default::default()),
        }
    }
}

/// `ga` switched to `kind` (unchanged if it is that method already).
pub fn with_optimiser(ga: GaSettings, kind: OptimiserKind) -> GaSettings {
    let method = kind.method();
    if ga.method.name() == method.name() {
        return ga;
    }
    GaSettings {
        population: default_population(&method),
        generations: ga.generations,
        seed: ga.seed,
        stop: ga.stop,
        method,
        ..GaSettings::default()
    }
}

/// The stop rules, each a value or `none` to lift it (on `run` and `resume`).
#[derive(Args, Debug, Default)]
pub struct StopArgs {
    /// Stop once the best fitness is at or below this (stop.target; 0 = every goal met), or `none`.
    #[arg(long, value_name = "FITNESS|none", value_parser = limit::<f64>)]
    pub target: Option<Limit<f64>>,
    /// Stop once this many designs have been simulated (stop.max_evaluations), or `none`.
    #[arg(long, value_name = "N|none", value_parser = limit::<usize>)]
    pub max_evaluations: Option<Limit<usize>>,
    /// Stop after this many generations without improvement (stop.stagnation), or `none`.
    #[arg(long, value_name = "N|none", value_parser = limit::<usize>)]
    pub stagnation: Option<Limit<usize>>,
    /// Stop after this much run time in seconds, summed over sessions (stop.wall_seconds), or `none`.
    #[arg(long, value_name = "SECONDS|none", value_parser = limit::<f64>)]
    pub wall: Option<Limit<f64>>,
}

impl StopArgs {
    /// Apply the options given to `ga.stop`.
    fn apply(&self, ga: &mut GaSettings) {
        let s = &mut ga.stop;
        if let Some(Limit(v)) = self.target {
            s.target = v;
        }
        if let Some(Limit(v)) = self.max_evaluations {
            s.max_evaluations = v;
        }
        if let Some(Limit(v)) = self.stagnation {
            s.stagnation = v;
        }
        if let Some(Limit(v)) = self.wall {
            s.wall_seconds = v;
        }
    }

    fn any(&self) -> bool {
        self.target.is_some() || self.max_evaluations.is_some() || self.stagnation.is_some() || self.wall.is_some()
    }
}

/// A stop-rule value on the command line: a number, or `none` to lift the rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit<T>(pub Option<T>);

fn limit<T: std::str::FromStr>(s: &str) -> Result<Limit<T>, String>
where
    T::Err: std::fmt::Display,
{
    if s.eq_ignore_ascii_case("none") {
        return Ok(Limit(None));
    }
    s.parse::<T>().map(|v| Limit(Some(v))).map_err(|e| format!("`{s}` is neither a number nor `none` ({e})"))
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
    /// Resume even though the run's design.ron was edited since the run started,
    /// or start a run whose checkpoints are gone over, overwriting its history.csv and best/.
    #[arg(long)]
    pub force: bool,
    /// Change the stop rules (recorded in the run's state; a run that stopped
    /// because it stagnated counts stagnation afresh when resumed).
    #[command(flatten)]
    pub stop: StopArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub farm: FarmArgs,
}

/// The design's optimiser block as the GA's settings.
pub fn ga_settings(design: &Design) -> anyhow::Result<GaSettings> {
    Ok(design.optimiser().clone())
}

/// SIGINT, SIGTERM or SIGHUP: the first asks the runner to stop after the
/// generation in flight (its checkpoint is written) and says so at once; a
/// second ends the process.
fn interrupt_flag(say: Announcer) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            say("second signal: stopping now (the checkpoint of the last completed generation is on disk; resume continues from it)");
            std::process::exit(130);
        }
        say("signal received: the generation in flight will finish and its checkpoint be written, then the run stops (signal again to stop at once)");
    });
    flag
}

/// The farm's dispatcher (and local workers) when `--farm` is given; the
/// problem sends its batches there.
fn farmed(problem: DesignProblem, farm: &FarmArgs, rundir: &RunDir, say: Announcer) -> anyhow::Result<(DesignProblem, Option<LocalWorkers>)> {
    let Some(url) = &farm.farm else { return Ok((problem, None)) };
    let ack_wait = super::worker::seconds(farm.ack_wait)?;
    let endpoint = Endpoint { url: url.clone(), creds: farm.creds.clone(), tls_ca: farm.tls_ca.clone() };
    let design = &problem.simulator().design;
    let run = run_id(rundir.path(), &design.hash());
    let d = Dispatcher::connect(FarmOptions { endpoint: endpoint.clone(), ack_wait, chunk: farm.farm_chunk }, &run, say.clone())?;
    say(&format!("farm: run {run} on {url}"));
    let local = match farm.farm_local {
        Some(n) if n > 0 => {
            say(&format!("farm: starting {n} local CPU workers (logs: farm-local-*.log in the run directory)"));
            Some(LocalWorkers::start(n, &endpoint, ack_wait, rundir.path())?)
        }
        _ => None,
    };
    Ok((problem.with_farm(Arc::new(d)), local))
}

/// Progress, CSV, plots and `best/`, the flag the signal handler raises, and the progress printer.
fn observers(sim: &Arc<Simulator>, problem: &DesignProblem, quiet: bool) -> (Vec<Box<dyn Observer>>, Arc<AtomicBool>, Announcer) {
    let progress = ProgressObserver::new(quiet);
    let say = progress.announcer();
    let flag = interrupt_flag(progress.announcer());
    let obs: Vec<Box<dyn Observer>> = vec![
        Box::new(progress),
        Box::new(CsvObserver::new()),
        Box::new(PlotObserver::with_labels(plot_labels(&sim.design))),
        Box::new(BestObserver::new(sim.clone(), problem)),
    ];
    (obs, flag, say)
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

/// Print the outcome once; the exit code: 130 after a signal, 1 when a resume
/// that asked for more generations could not breed any.
fn report(summary: &RunSummary, resumed: bool, asked_for_more: bool) -> i32 {
    for w in &summary.warnings {
        if w != NOTHING_COMPLETED {
            println!("warning: {w}");
        }
    }
    print!("{summary}");
    if let Some(h) = summary.resume_hint() {
        println!("{h}");
        return 130;
    }
    if resumed && summary.generations_bred == 0 {
        println!("{}", nothing_to_breed(summary.generation, summary.termination));
        if asked_for_more {
            return 1;
        }
    }
    0
}

/// Why a resume breeds nothing, and the option that changes it.
fn nothing_to_breed(generation: usize, reason: TerminationReason) -> String {
    let how = match reason {
        TerminationReason::MaxGenerations => "go on with --more N or --generations N",
        TerminationReason::MaxEvaluations => "raise the limit with --max-evaluations N, or lift it with --max-evaluations none",
        TerminationReason::TargetFitness => "lower the target with --target F, or lift it with --target none",
        TerminationReason::WallTime => "raise the limit with --wall SECONDS, or lift it with --wall none",
        TerminationReason::Stagnation => "raise the limit with --stagnation N, or lift it with --stagnation none",
        TerminationReason::Interrupted => "resume again",
    };
    format!("nothing was bred: the run is at generation {generation} and {reason}; {how}")
}

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    for n in design.notes() {
        println!("note: {n}");
    }
    let mut ga = ga_settings(&design)?;
    match a.optimiser.clone() {
        Some(OptimiserChoice::Kind(k)) => ga = with_optimiser(ga, k),
        Some(OptimiserChoice::Block(b)) => ga = b,
        None => {}
    }
    if let Some(p) = a.population {
        ga.population = p;
    }
    if let Some(g) = a.generations {
        ga.generations = g;
    }
    if let Some(s) = a.seed {
        ga.seed = s;
    }
    a.stop.apply(&mut ga);
    ga.validate().context("optimiser settings")?;
    // Check settings against the problem (e.g. a fitness target with two objectives)
    // before anything is written, so a refused run leaves no directory behind.
    let n_objectives = design.objective_labels().len().max(1);
    crate::ga::new_state(design.genes(), n_objectives, ga.clone(), "")
        .with_context(|| format!("{}: optimiser settings", design.origin()))?;
    let settings = RunSettings::new(ga.clone(), a.engine);
    let backend = a.exec.backend(&mut |s| println!("{s}"))?;
    let name = a.name.clone().unwrap_or_else(|| design.name().to_string());
    let dir = a.runs_dir.join(&name);
    let settings_text = ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())?;
    let files: [(&str, &[u8]); 2] = [("design.ron", design.text().as_bytes()), ("settings.ron", settings_text.as_bytes())];
    let rundir = RunDir::create_with(&dir, a.force, &files)?;
    println!("run directory: {}", dir.display());
    let hash = design.hash();
    let sim = Arc::new(Simulator { design, backend: Arc::from(backend), engine: settings.engine });
    let problem = DesignProblem::new(sim.clone());
    let (obs, flag, say) = observers(&sim, &problem, a.exec.quiet);
    let (problem, _local) = farmed(problem, &a.farm, &rundir, say)?;
    let mut runner = Runner::new(problem, ga, rundir, obs).with_interrupt(flag).with_design_hash(hash);
    let summary = runner.run(None)?;
    Ok(report(&summary, false, false))
}

pub fn resume(a: ResumeArgs) -> anyhow::Result<i32> {
    // The lock first: nothing is read that another process could be rewriting.
    let rundir = RunDir::open_locked(&a.run_dir)?;
    let (design, mut settings) = read_run(&rundir)?;
    let loaded = match checkpoint::load(rundir.path()) {
        Ok(l) => Some(l),
        Err(CheckpointError::Missing { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let loaded = loaded.filter(|l| l.state.started());
    // Without a checkpoint the run starts over, which rewrites history.csv and
    // best/: only when they hold nothing, or when asked to.
    if loaded.is_none() {
        if let Some(what) = completed_outputs(&rundir) {
            if !a.force {
                bail!(
                    "{} has no usable checkpoint ({} and {} are missing or never completed a generation), but it holds {what}: \
                     resuming would start the run over and overwrite them. Move them away first, or use --force to start over",
                    rundir.path().display(),
                    RunDir::CHECKPOINT,
                    RunDir::CHECKPOINT_PREV
                );
            }
            println!("warning: no checkpoint; starting the run over and overwriting its {what} (--force)");
        }
    }
    if let Some(w) = loaded.as_ref().and_then(|l| l.warning.as_ref()) {
        println!("warning: {w}");
    }
    let mut hash = design.hash();
    if let Some(l) = &loaded {
        if l.state.design_hash != hash {
            if !a.force {
                bail!(
                    "{} was edited since the run started (hash {} in the checkpoint, {} now); resuming would mix two designs. Use --force to resume anyway",
                    rundir.file("design.ron").display(),
                    short(&l.state.design_hash),
                    short(&hash)
                );
            }
            println!("warning: design.ron was edited since the run started; resuming anyway (--force)");
            hash = l.state.design_hash.clone();
        }
    }
    let at = loaded.as_ref().map_or(0, |l| l.state.generation);
    if let Some(m) = a.more {
        settings.ga.generations = at + m;
    } else if let Some(g) = a.generations {
        settings.ga.generations = g;
    }
    a.stop.apply(&mut settings.ga);
    settings.ga.validate().context("optimiser settings")?;
    let asked = a.more.is_some() || a.generations.is_some() || a.stop.any();
    // Asked for more and a rule forbids it: say which, and change nothing.
    if let Some(reason) = loaded.as_ref().and_then(|l| resume_blocked(&l.state, &settings.ga)) {
        if asked {
            println!("{}", nothing_to_breed(loaded.as_ref().map_or(0, |l| l.state.generation), reason));
            return Ok(1);
        }
    }
    let backend = a.exec.backend(&mut |s| println!("{s}"))?;
    let ron_settings = ron::ser::to_string_pretty(&settings, ron::ser::PrettyConfig::default())?;
    rundir.store("settings.ron", ron_settings)?;
    let sim = Arc::new(Simulator { design, backend: Arc::from(backend), engine: settings.engine });
    let problem = DesignProblem::new(sim.clone());
    let (obs, flag, say) = observers(&sim, &problem, a.exec.quiet);
    let (problem, _local) = farmed(problem, &a.farm, &rundir, say)?;
    let mut runner = Runner::new(problem, settings.ga.clone(), rundir, obs).with_interrupt(flag).with_design_hash(hash);
    let summary = match loaded {
        Some(l) => runner.resume_from(l, None)?,
        None => {
            println!("note: {NOTHING_COMPLETED}");
            runner.run(None)?
        }
    };
    Ok(report(&summary, true, asked))
}

/// What a start-over would overwrite: generations in history.csv, files in best/.
fn completed_outputs(rundir: &RunDir) -> Option<String> {
    let rows = std::fs::read_to_string(rundir.file("history.csv")).map_or(0, |t| t.lines().skip(1).filter(|l| !l.trim().is_empty()).count());
    let best = std::fs::read_dir(rundir.file("best")).map_or(0, |d| d.count());
    let mut what = vec![];
    if rows > 0 {
        what.push(format!("history.csv with {rows} generation{}", if rows == 1 { "" } else { "s" }));
    }
    if best > 0 {
        what.push("a best design in best/".to_string());
    }
    (!what.is_empty()).then(|| what.join(" and "))
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}
