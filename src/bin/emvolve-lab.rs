//! `emvolve-lab`: the developers' program beside the user's `emvolve`. It
//! holds what measures and checks the engines rather than designs anything:
//! `bench` with every kernel-tuning knob (paths, tiles, kernel variants,
//! launch shapes), and the harnesses that compare the CUDA kernels with the
//! CPU engines on a GPU (`device-check`) or in a CPU emulation of them
//! (`kernel-emu`, `tlm-emu`). Users' commands are in `emvolve`.

use clap::{Parser, Subcommand};

use emvolve::bench::LabBenchArgs;
use emvolve::cli::{exit_code, restore_sigpipe};
use emvolve::dev::{device_check, kernel_emu, tlm_check};

#[derive(Parser, Debug)]
#[command(name = "emvolve-lab", version, about = "emvolve's developer tools: engine benchmarks with the kernel-tuning knobs, CUDA-against-CPU checks")]
struct Lab {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Subcommand, Debug)]
enum LabCommand {
    /// Time the engines (every tuning knob) and print cells per second.
    Bench(LabBenchArgs),
    /// Compare the CUDA backend with the CPU engines (error norms), on the device machine.
    DeviceCheck(device_check::DeviceCheckArgs),
    /// Step the CUDA FDTD kernels in a CPU emulation and compare with the CPU engine.
    KernelEmu(kernel_emu::KernelEmuArgs),
    /// Step the TLM kernels in a CPU emulation and compare with the CPU engines.
    TlmEmu(tlm_check::TlmEmuArgs),
}

fn main() {
    restore_sigpipe();
    let code = exit_code(match Lab::parse().command {
        LabCommand::Bench(a) => emvolve::bench::run(&a.bench, &a.tuning).map(|()| 0),
        LabCommand::DeviceCheck(a) => device_check::run(a),
        LabCommand::KernelEmu(a) => kernel_emu::run(a),
        LabCommand::TlmEmu(a) => tlm_check::emu(a),
    });
    std::process::exit(code);
}
