//! 3D Yee FDTD engine: the host-side operator (shared with CUDA) and the CPU
//! reference implementation.

pub mod cpu;
pub mod cpu_batch;
pub mod absorbed;
pub mod dft;
pub mod edges;
pub mod simd;
pub mod fields;
pub mod operator;
pub mod carry;
pub mod conformal;
pub mod surface;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod edges_tests;
#[cfg(test)]
mod surface_tests;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod conformal_tests;

pub use operator::Operator;
