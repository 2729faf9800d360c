//! `emvolve report`: one self-contained HTML page describing a run (see [`crate::report`]).

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run directory (runs/NAME).
    pub run_dir: PathBuf,
    /// Where to write the page (default: RUN_DIR/report.html).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let p = crate::report::write(&a.run_dir, a.out.as_deref())?;
    println!("wrote {} (self-contained: open it in any browser)", p.display());
    Ok(0)
}
