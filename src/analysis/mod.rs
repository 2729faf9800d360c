//! From port signals to frequency-domain results: DFTs, incident/reflected
//! waves, S-parameters, input impedance, Touchstone files.
//! Every engine goes through this one path, so FDTD and TLM, CPU and CUDA,
//! differ only in the signals they hand over.

pub mod dft;
pub mod sparams;
pub mod sparams_csv;
pub mod touchstone;
pub mod touchstone_read;

pub use sparams::{SParams, Waves};
