//! `emvolve plot`: the RF plots of any Touchstone file (a simulation's, or a
//! measurement to compare with), with a design's goal masks when one is given.

use std::path::PathBuf;

use clap::Args;

use crate::design::Design;

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The Touchstone file (`.sNp`).
    pub touchstone: PathBuf,
    /// A design file whose goals are drawn as masks.
    #[arg(long)]
    pub design: Option<PathBuf>,
    /// Output directory (default: next to the file).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: PlotArgs) -> anyhow::Result<i32> {
    let net = crate::analysis::touchstone_read::read(&a.touchstone).map_err(anyhow::Error::msg)?;
    let masks = match &a.design {
        Some(d) => crate::plot::sparams::masks(&Design::load(d)?),
        None => vec![],
    };
    let dir = a.out.clone().unwrap_or_else(|| a.touchstone.parent().map(PathBuf::from).unwrap_or_default());
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    let mut title = a.touchstone.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    // emvolve's own files name their parameter values in a comment line.
    let text = std::fs::read_to_string(&a.touchstone).unwrap_or_default();
    if let Some(p) = text.lines().find_map(|l| l.strip_prefix("! parameters: ")) {
        title = format!("{title} ({p})");
    }
    let files = crate::plot::write_rf_plots(&dir, &net.to_sparams(), &masks, &title)?;
    println!("{}: {} ports, {} frequencies; wrote:", a.touchstone.display(), net.ports.len(), net.freqs.len());
    for f in files {
        println!("  {}", f.display());
    }
    Ok(0)
}
