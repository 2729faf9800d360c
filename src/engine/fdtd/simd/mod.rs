//! The SIMD CPU stepper: the reference Yee step of `cpu.rs` (H, PMC ghosts,
//! E, CPML inside both) computed bit for bit the same (every f32 operation
//! in the same order, no fused multiply-add), but shaped for speed:
//! - `simd`: the vector operations per instruction set, chosen at run time:
//!   AVX-512 (16 lanes, row tails by mask registers, per-cell material
//!   coefficients by `vpermps` from the coefficient table), AVX2 (8 lanes,
//!   masked loads and stores) and a portable 4-lane version;
//! - `rows`: one row of one component in those vectors: the row cut where
//!   the x term's CPML stretching starts or stops, the y/z terms' stretching
//!   fixed per row, so CPML rows run vectorised with their memories updated
//!   in the same pass; one material per row, or per-cell look-ups;
//! - `plan`: per operator, the rows each plane updates, the y/z terms'
//!   spacings and CPML coefficients per position, the x runs, the row
//!   materials; an x CPML that is not one layer per end (never built by the
//!   operator) steps with the reference instead;
//! - `sweep`: a step as one pass over the planes, row by row: at each row
//!   (j, k) H of every component, its PMC ghosts, then E (E reads H of rows
//!   (j, k), (j-1, k), (j, k-1), all done by then; H reads E of rows (j, k),
//!   (j+1, k), (j, k+1), none updated yet), so each row's fields are read
//!   from the L1 cache by its E update; quasi-2D grids (few rows per plane:
//!   the GA's 2.5D filters) go component by component over all planes
//!   instead, each component in its own function. A large grid is cut into z
//!   slabs, one per thread, the first E plane of each slab done after the
//!   others (it reads the previous slab's last H plane); small grids run on
//!   the caller's thread (the backend already runs one design per core).
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
mod lanes;
mod sweep;
mod wave;

#[cfg(test)]
mod simd_tests;

pub use advance::advance;
pub use lanes::Level;
pub use plan::SimdPlan;
pub use sweep::step;
pub use plan::Wave;
