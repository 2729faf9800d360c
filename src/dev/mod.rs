//! Developer harnesses, run by the `emvolve-lab` program (src/bin/emvolve-lab.rs),
//! not by the user's `emvolve`: the CUDA kernels against the CPU engines on a
//! GPU (`emvolve-lab device-check`), and the kernel sources stepped in CPU
//! emulations without one (`kernel-emu`, `tlm-emu`). In the library because
//! its tests use the same random jobs and comparisons.

pub mod compare;
pub mod device_check;
pub mod device_designs;
pub mod kernel_emu;
pub mod monitor_check;
pub mod tlm_check;
