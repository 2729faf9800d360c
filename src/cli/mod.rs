//! Command-line interface: parses arguments (clap) and dispatches to one
//! file per subcommand. Errors are printed with their context chain.

use clap::{Parser, Subcommand};

pub mod args;
pub mod bench;
pub mod dump_fields;
pub mod export;
pub mod plot;
pub mod inspect;
pub mod report;
pub mod mesh;
pub mod out_dir;
pub mod run;
pub mod sim_progress;
pub mod simulate;
pub mod sweep;
pub mod worker;

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
    /// Simulate a grid of parameter values (a sensitivity or tolerance sweep): CSV of the goals and plots.
    Sweep(sweep::SweepArgs),
    /// Draw the RF plots (|S|, phase and group delay, Smith chart, impedance) of any Touchstone file.
    Plot(plot::PlotArgs),
    /// Write a design's mesh and geometry for other tools (VTK for ParaView).
    Export(export::ExportArgs),
    /// Write a run's report: one self-contained HTML page.
    Report(report::ReportArgs),
    /// Show a design's mesh: line counts, cell sizes, grading, time step; mesh.png over the geometry.
    Mesh(mesh::MeshArgs),
    /// Serve a farm: simulate the generations other hosts' runs send through a NATS server.
    Worker(worker::WorkerArgs),
    /// Time the engines and print cells per second.
    Bench(bench::BenchArgs),
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    restore_sigpipe();
    let cli = Cli::parse();
    exit_code(match cli.command {
        Command::Run(a) => run::run(a),
        Command::Resume(a) => run::resume(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Export(a) => export::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Report(a) => report::run(a),
        Command::Mesh(a) => mesh::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Worker(a) => worker::run(a),
    })
}

/// The exit code of a command's result, its error printed with its causes.
pub fn exit_code(res: anyhow::Result<i32>) -> i32 {
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            1
        }
    }
}

/// An error and its causes on one line, each cause said once: many errors
/// already print their source in their own message ("reading x: Permission
/// denied"), and anyhow's `{:#}` would repeat it after them.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let t = cause.to_string();
        if out.contains(&t) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    out
}

/// Output into a closed pipe (`emvolve inspect --json | head`) ends the process
/// quietly with the status shells expect (killed by SIGPIPE: 141), as `cat` and
/// `grep` do, instead of a panic in `println!`: Rust ignores SIGPIPE by default.
/// Nothing is lost by it: a run writes to stdout only between generations, after
/// the checkpoint, and any kill leaves a resumable run directory.
pub fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists;
    // `signal` only resets SIGPIPE's disposition to the default.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once() {
        // A cause that its context already printed.
        let io = || std::io::Error::from_raw_os_error(13);
        let e = anyhow::Error::new(io()).context(format!("creating runs/x/inspect: {}", io()));
        assert_eq!(error_text(&e), "creating runs/x/inspect: Permission denied (os error 13)");
        // A cause that is new is kept.
        let e = anyhow::Error::new(io()).context("creating runs/x/inspect");
        assert_eq!(error_text(&e), "creating runs/x/inspect: Permission denied (os error 13)");
        let e = anyhow::anyhow!("plain");
        assert_eq!(error_text(&e), "plain");
    }
}
