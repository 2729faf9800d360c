//! Command-line interface: parses arguments (clap) and dispatches to one
//! file per subcommand. Errors are printed with their context chain.

use clap::{Parser, Subcommand};

pub mod bench;
pub mod bench_table;
pub mod device_check;
pub mod device_designs;
pub mod kernel_emu;
pub mod inspect;
pub mod mesh;
pub mod run;
pub mod simulate;
pub mod tlm_check;

#[derive(Parser, Debug)]
#[command(name = "emvolve", version, about = "Evolutionary design of antennas and RF/microwave filters (FDTD/TLM on CPU and CUDA)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Launch an optimisation run of a design (runs/NAME).
    Run(run::RunArgs),
    /// Continue a run from its checkpoint.
    Resume(run::ResumeArgs),
    /// Show the best designs of a run (while it runs, too) and write their Touchstone files and plots.
    Inspect(inspect::InspectArgs),
    /// Simulate one design at given parameter values.
    Simulate(simulate::SimulateArgs),
    /// Show a design's mesh: line counts, cell sizes, grading, time step; mesh.png over the geometry.
    Mesh(mesh::MeshArgs),
    /// Time the engines and print cells per second.
    Bench(bench::BenchArgs),
    /// Compare the CUDA backend with the CPU engine (error norms), for the device machine.
    DeviceCheck(device_check::DeviceCheckArgs),
    /// Step the CUDA kernels in a CPU emulation and compare with the CPU engine (developers).
    #[command(hide = true)]
    KernelEmu(kernel_emu::KernelEmuArgs),
    /// Step the TLM kernels in a CPU emulation and compare with the CPU engines (developers).
    #[command(hide = true)]
    TlmEmu(tlm_check::TlmEmuArgs),
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Resume(a) => run::resume(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Mesh(a) => mesh::run(a),
        Command::Bench(a) => bench::run(a),
        Command::DeviceCheck(a) => device_check::run(a),
        Command::KernelEmu(a) => kernel_emu::run(a),
        Command::TlmEmu(a) => tlm_check::emu(a),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
