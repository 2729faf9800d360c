//! Options several subcommands share: where to compute (`--backend`,
//! `--gpus`), how to report (`--quiet`), and which engine (`--engine`).

use clap::Args;

use crate::engine::select::{parse_gpus, select, BackendChoice};
use crate::engine::Backend;

/// Options of `run`, `resume` and `inspect`: where to compute and how to report.
#[derive(Args, Debug)]
pub struct ExecArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1`.
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// Plain log lines instead of progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl ExecArgs {
    /// The backend asked for; `note` receives the line that says which.
    pub fn backend(&self, note: &mut dyn FnMut(String)) -> anyhow::Result<Box<dyn Backend>> {
        backend(self.backend, &self.gpus, note)
    }
}

/// The backend of `--backend` and `--gpus`.
pub fn backend(choice: BackendChoice, gpus: &str, note: &mut dyn FnMut(String)) -> anyhow::Result<Box<dyn Backend>> {
    select(choice, parse_gpus(gpus).map_err(anyhow::Error::msg)?, note)
}

