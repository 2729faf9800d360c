//! Developer harnesses, behind the hidden `emvolve dev` subcommand (the device
//! scripts run only the shipped binary): the CUDA kernels against the CPU
//! engines on a GPU (`dev device-check`), and the kernel sources stepped in CPU
//! emulations without one (`dev kernel-emu`, `dev tlm-emu`).

use clap::{Args, Subcommand};

pub mod compare;
pub mod device_check;
pub mod device_designs;
pub mod kernel_emu;
pub mod monitor_check;
pub mod tlm_check;

#[derive(Args, Debug)]
pub struct DevArgs {
    #[command(subcommand)]
    pub command: DevCommand,
}

#[derive(Subcommand, Debug)]
pub enum DevCommand {
    /// Compare the CUDA backend with the CPU engines (error norms), on the device machine.
    DeviceCheck(device_check::DeviceCheckArgs),
    /// Step the CUDA FDTD kernels in a CPU emulation and compare with the CPU engine.
    KernelEmu(kernel_emu::KernelEmuArgs),
    /// Step the TLM kernels in a CPU emulation and compare with the CPU engines.
    TlmEmu(tlm_check::TlmEmuArgs),
}

/// Run one developer harness; returns the process exit code.
pub fn run(a: DevArgs) -> anyhow::Result<i32> {
    match a.command {
        DevCommand::DeviceCheck(a) => device_check::run(a),
        DevCommand::KernelEmu(a) => kernel_emu::run(a),
        DevCommand::TlmEmu(a) => tlm_check::emu(a),
    }
}
