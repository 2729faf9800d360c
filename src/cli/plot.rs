//! `emvolve plot`: the RF plots of any Touchstone file (a simulation's, or a
//! measurement to compare with), with a design's goal masks when one is given,
//! and its resonances with their Q and its power balance.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::design::Design;

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The Touchstone file (`.sNp`).
    pub touchstone: PathBuf,
    /// A design file whose goals are drawn as masks.
    #[arg(long)]
    pub design: Option<PathBuf>,
    /// Output directory, new or empty (default: `<file stem>-plots` beside the
    /// file, where a later `plot` of the same file redraws its own plots).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into --out even if it holds files, replacing them.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: PlotArgs) -> anyhow::Result<i32> {
    let net = crate::analysis::touchstone_read::read(&a.touchstone).map_err(anyhow::Error::msg)?;
    let masks = match &a.design {
        Some(d) => crate::plot::sparams::masks(&Design::load(d)?),
        None => vec![],
    };
    // The default directory is this file's own: redrawing it replaces only
    // earlier plots of the same file, which is said. Another --out must be
    // new or empty unless --force.
    let own = default_dir(&a.touchstone);
    let dir = match &a.out {
        Some(_) => super::out_dir::choose(a.out.as_deref(), &own, a.force)?.path,
        None => {
            if std::fs::read_dir(&own).is_ok_and(|mut d| d.next().is_some()) {
                println!("redrawing the plots of an earlier `plot` of this file in {}", own.display());
            }
            own
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    let mut title = a.touchstone.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    // emvolve's own files name their parameter values in a comment line.
    let text = std::fs::read_to_string(&a.touchstone).unwrap_or_default();
    if let Some(p) = text.lines().find_map(|l| l.strip_prefix("! parameters: ")) {
        title = format!("{title} ({p})");
    }
    let sp = net.to_sparams();
    let mut files = crate::plot::write_rf_plots(&dir, &sp, &masks, &title)?;
    // A measurement's resonances and power balance, as a simulation's.
    let (more, summary) = crate::outputs::write_analysis_files(&sp, &dir)?;
    files.extend(more);
    for line in summary {
        println!("{line}");
    }
    println!("{}: {} ports, {} frequencies; wrote:", a.touchstone.display(), net.ports.len(), net.freqs.len());
    for f in files {
        println!("  {}", f.display());
    }
    Ok(0)
}

/// `<stem>-plots` beside the Touchstone file: `measured.s2p` -> `measured-plots/`.
pub fn default_dir(touchstone: &Path) -> PathBuf {
    let stem = touchstone.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "touchstone".into());
    touchstone.with_file_name(format!("{stem}-plots"))
}
