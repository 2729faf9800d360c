//! `emvolve sweep`: simulate a grid of parameter values around a base point
//! and write `sweep.csv` (each goal's margin, worst level and where), `sweep.png`
//! (margins and fitness against the swept parameter) and `response.png` (the
//! goals' |S| at every point), with a progress bar while the batches run;
//! `--touchstone` keeps every point's S-parameters under `points/`.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::job::EngineKind;
use super::simulate::with_params_file;
use crate::design::Design;
use crate::engine::select::{parse_gpus, select, BackendChoice};
use crate::plot::sparams::masks;
use crate::sweep::{self, PointResult, SweepAxis};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// A swept parameter, `name=start:stop:count` (repeatable: a full grid, the first varying fastest).
    #[arg(long = "param", value_name = "NAME=START:STOP:COUNT", required = true)]
    pub param: Vec<String>,
    /// Values of the parameters not swept, `name=value` (repeatable); the others take their midpoint.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Base values from a RON file (a run's `best/parameters.ron`); `--set` overrides.
    #[arg(long, value_name = "FILE")]
    pub params: Option<PathBuf>,
    /// Output directory (default: runs/<design name>-sweep).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1`.
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// Override the design's engine (the cell size and options are kept).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Points simulated together in one backend batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Plain log lines instead of a progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Also write every simulated point's Touchstone file under `points/`
    /// (named after its swept values), for a closer look in other tools; every
    /// port is driven (the full matrix), not only those the goals need.
    #[arg(long)]
    pub touchstone: bool,
}

pub fn run(a: SweepArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    let axes = a.param.iter().map(|p| SweepAxis::parse(p)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?;
    // The base point: midpoints, then --params and --set; swept names get their sweep values.
    let sets = with_params_file(&design, a.params.as_deref(), &a.set)?;
    let mut base = design.midpoint_values();
    for s in &sets {
        if let Some((k, v)) = s.split_once('=') {
            let v: f64 = v.trim().parse().map_err(|_| anyhow::anyhow!("--set {s}: `{}` is not a number", v.trim()))?;
            if !base.contains_key(k.trim()) {
                anyhow::bail!("--set {s}: `{}` is not a parameter of {} (parameters: {})", k.trim(), design.origin(), design.parameter_names().join(", "));
            }
            base.insert(k.trim().to_string(), v);
        } else {
            anyhow::bail!("--set {s}: expected name=value");
        }
    }
    let points = sweep::grid(&design, &base, &axes).map_err(anyhow::Error::msg)?;
    if a.batch == 0 {
        anyhow::bail!("--batch must be at least 1");
    }
    let backend = select(a.backend, parse_gpus(&a.gpus).map_err(anyhow::Error::msg)?, &mut |s| println!("{s}"))?;
    let out_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("{}-sweep", design.name())));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let fixed: Vec<String> =
        base.iter().filter(|(k, _)| !axes.iter().any(|ax| &ax.name == *k)).map(|(k, v)| format!("{k}={}", crate::numfmt::short(*v))).collect();
    println!("sweeping {} points of {} ({}), the others at {}", points.len(), design.name(), a.param.join(" x "), fixed.join(", "));
    let total = points.len();
    let bar = (!a.quiet && std::io::stdout().is_terminal()).then(|| {
        let b = ProgressBar::new(total as u64);
        b.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30.cyan/blue}] {pos}/{len} points, eta {eta}")
                .expect("static template")
                .progress_chars("=> "),
        );
        b.set_prefix("sweep");
        b
    });
    let last_line = std::sync::Mutex::new(usize::MAX);
    let progress = |done: usize, total: usize| match &bar {
        Some(b) => b.set_position(done as u64),
        None => {
            // A line per finished batch, not per design.
            let mut last = last_line.lock().unwrap_or_else(|p| p.into_inner());
            if done == total || done.saturating_sub(*last) >= a.batch || *last == usize::MAX {
                println!("{done}/{total} points");
                *last = done;
            }
        }
    };
    let t = Instant::now();
    let results = sweep::run(&design, points, a.engine, backend.as_ref(), a.batch, a.touchstone, &progress)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let wall = t.elapsed().as_secs_f64();
    let (mut ok, mut skipped, mut failed) = (0, 0, 0);
    for p in &results {
        match &p.result {
            PointResult::Scored { .. } => ok += 1,
            PointResult::Skipped(_) => skipped += 1,
            PointResult::Failed(why) => {
                failed += 1;
                let at: Vec<String> = axes.iter().zip(&p.swept).map(|(ax, v)| format!("{}={v}", ax.name)).collect();
                println!("point {} failed: {why}", at.join(", "));
            }
        }
    }
    println!("{ok} points simulated in {wall:.1} s, {skipped} skipped (constraints), {failed} failed");
    let csv = out_dir.join("sweep.csv");
    std::fs::write(&csv, sweep::csv(&design, &axes, &results)).with_context(|| format!("writing {}", csv.display()))?;
    let mut written = vec![csv];
    if a.touchstone && ok > 0 {
        let dir = out_dir.join("points");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (n, p) in results.iter().enumerate() {
            if let PointResult::Scored { sparams, .. } = &p.result {
                let at: Vec<String> = axes.iter().zip(&p.swept).map(|(ax, v)| format!("{}={}", ax.name, crate::numfmt::short(*v))).collect();
                let stem = dir.join(format!("{n:04}_{}", at.join("_")));
                let comment = format!("{} sweep point {n}: {}", design.name(), crate::outputs::parameter_list(&p.values));
                crate::outputs::write_touchstone(sparams, &stem, &comment)?;
            }
        }
        written.push(dir);
    }
    if ok > 0 {
        let p = out_dir.join("sweep.png");
        crate::plot::sweep::plot_goals(&p, &design, &axes, &results)?;
        written.push(p);
        let p = out_dir.join("response.png");
        crate::plot::sweep::plot_response(&p, &design, &axes, &results, &masks(&design))?;
        written.push(p);
    }
    println!("wrote:");
    for w in written {
        println!("  {}", w.display());
    }
    Ok(if ok == 0 { 2 } else { 0 })
}
