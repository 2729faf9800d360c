//! Choosing a backend from the command line: `auto` takes CUDA when its
//! libraries and a device are present (and says so once), else the CPU.

use super::{cpu::CpuBackend, Backend};

/// `--backend auto|cpu|cuda`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum BackendChoice {
    Auto,
    Cpu,
    Cuda,
}

/// Parse `--gpus all|0,1`: `None` means every device.
pub fn parse_gpus(s: &str) -> Result<Option<Vec<usize>>, String> {
    if s.trim() == "all" {
        return Ok(None);
    }
    s.split(',')
        .map(|t| t.trim().parse::<usize>().map_err(|_| format!("--gpus: `{t}` is not a device number (use `all` or e.g. `0,1`)")))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Build the backend asked for; `note` receives the one line that says what was chosen.
pub fn select(choice: BackendChoice, gpus: Option<Vec<usize>>, note: &mut dyn FnMut(String)) -> anyhow::Result<Box<dyn Backend>> {
    match choice {
        BackendChoice::Cpu => {
            let b = CpuBackend;
            note(format!("backend: {}", b.name()));
            Ok(Box::new(b))
        }
        BackendChoice::Cuda => {
            let b = cuda_backend(gpus)?;
            note(format!("backend: {}", b.name()));
            Ok(b)
        }
        BackendChoice::Auto => {
            if super::device::available() {
                match cuda_backend(gpus) {
                    Ok(b) => {
                        note(format!("backend: {} (CUDA found; --backend cpu to use the CPU)", b.name()));
                        return Ok(b);
                    }
                    Err(e) => note(format!("CUDA present but unusable ({e}); falling back to the CPU")),
                }
            }
            let b = CpuBackend;
            note(format!("backend: {} (no CUDA device found)", b.name()));
            Ok(Box::new(b))
        }
    }
}

/// The CUDA backend over the given devices (`None`: all).
fn cuda_backend(gpus: Option<Vec<usize>>) -> anyhow::Result<Box<dyn Backend>> {
    if !super::device::available() {
        anyhow::bail!("--backend cuda: {}", super::device::unavailable_reason());
    }
    Ok(super::cuda::backend(gpus)?)
}
