//! The fast CPU stepper: the reference Yee step of `cpu.rs` (H, PMC ghosts,
//! E, CPML inside both) computed bit for bit the same (every f32 operation
//! in the same order, no fused multiply-add), but shaped for speed:
//! - `lanes`: the CPML-free part of each row as straight loops over contiguous
//!   x runs with the row's constants hoisted (one material per run), compiled
//!   for AVX-512 / AVX2 chosen at run time, so LLVM vectorises them;
//! - `planes`: one z plane of one component, rows split into CPML taps
//!   (`cpml`, the reference's per-cell arithmetic) and vector runs;
//! - `sweep`: H and E fused in one pass over the planes (E of plane k right
//!   after H of plane k, which is all it reads), so each step streams the
//!   fields once instead of twice; a large grid is cut into z slabs, one per
//!   thread, with the first E plane of each slab done after the others (it
//!   reads the previous slab's last H plane); small grids run on the caller's
//!   thread (the backend already runs one design per core).
//! - `wave`: for grids larger than the caches, blocks of steps in one pass
//!   (temporal blocking: step s+1 trails step s by a few planes), the port
//!   source and monitor of each step run when the step has passed the port
//!   (`ports`), the block's steps spread over the threads as a pipeline.
//! `CpuBatch` steps every job with it ([`advance`]); jobs with field DFT
//! monitors step one sweep at a time (the monitors read whole fields); the port sources, port samples, field
//! DFT monitors and energy stay the reference code (they touch few cells).

mod advance;
mod plan;
mod ports;
mod raw;
mod rows;
mod simd;
mod sweep;
mod wave;

#[cfg(test)]
mod fast_tests;

pub use advance::advance;
pub use simd::Level;
pub use plan::FastPlan;
pub use sweep::step;
pub use wave::Wave;
