//! `emvolve mesh`: show a design's mesh at given parameter values -- the line
//! counts, smallest and largest cell, grading, time step and cells per
//! wavelength -- and draw its lines over the geometry in the three principal
//! planes (`mesh.png`). Nothing is simulated.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use crate::design::mesh::report::MeshReport;
use crate::design::Design;

#[derive(Args, Debug)]
pub struct MeshArgs {
    /// The design file (RON).
    pub design: PathBuf,
    /// Parameter values, `name=value` (repeatable); missing ones take their midpoint.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Output directory for mesh.png (default: runs/<design name>-mesh).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print every line's coordinate.
    #[arg(long)]
    pub lines: bool,
}

pub fn run(a: MeshArgs) -> anyhow::Result<i32> {
    let design = Design::load(&a.design)?;
    let values = design.values_from_sets(&a.set)?;
    let job = design.job_with(&values, None, None)?;
    let units = design.file().units;
    let (symbol, per) = (units.symbol(), units.metres());
    let report = MeshReport::of(&job, design.file().band.stop, design.file().engine.options().invariant.or(job_invariant(&job)));
    let vals: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", crate::numfmt::short(*v))).collect();
    println!("mesh of {} ({})", design.name(), vals.join(", "));
    print!("{}", report.render(symbol, per));
    if a.lines {
        for ax in crate::job::Axis::ALL {
            let l: Vec<String> = job.mesh.lines(ax.index()).iter().map(|x| format!("{:.6}", x / per)).collect();
            println!("{} lines ({symbol}): {}", ax.name(), l.join(" "));
        }
    }
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("{}-mesh", design.name())));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let png = out.join("mesh.png");
    let title = format!("{} mesh ({})", design.name(), vals.join(", "));
    crate::plot::mesh::plot(&png, &job, &title, symbol, per)?;
    println!("wrote {}", png.display());
    Ok(0)
}

/// A one-cell axis between faces that are not absorbing (the collapsed invariant axis).
fn job_invariant(job: &crate::job::SimJob) -> Option<crate::job::Axis> {
    crate::job::Axis::ALL.into_iter().find(|a| job.mesh.n()[a.index()] == 1)
}
