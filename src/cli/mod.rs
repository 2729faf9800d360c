//! Command-line interface: parses arguments (clap) and dispatches to one
//! file per subcommand. Errors are printed with their context chain.

use clap::{Parser, Subcommand};

pub mod bench;
pub mod simulate;

#[derive(Parser, Debug)]
#[command(name = "emvolve", version, about = "Evolutionary design of antennas and RF/microwave filters (FDTD/TLM on CPU and CUDA)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate one design at given parameter values.
    Simulate(simulate::SimulateArgs),
    /// Time the engines and print cells per second.
    Bench(bench::BenchArgs),
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Simulate(a) => simulate::run(a),
        Command::Bench(a) => bench::run(a),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
