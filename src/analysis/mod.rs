//! From port signals to frequency-domain results: DFTs, incident/reflected
//! waves, S-parameters, input impedance, Touchstone files; resonances and
//! their Q, and the power balance, from S-parameters.
//! Every engine goes through this one path, so FDTD and TLM, CPU and CUDA,
//! differ only in the signals they hand over.

pub mod dft;
pub mod nf2ff;
pub mod pattern;
pub mod power_balance;
pub mod qfactor;
pub mod sparams;
pub mod sparams_csv;
pub mod tail;
pub mod touchstone;
pub mod touchstone_read;

pub use sparams::{SParams, Waves};

/// The smallest magnitude given a level in dB (-300 dB): an exact zero (a
/// perfect null) stays finite. The one floor for fitness, plots and files.
pub const MAG_FLOOR: f64 = 1e-15;

/// 20 log10 `mag`, with `mag` floored at [`MAG_FLOOR`].
pub fn db(mag: f64) -> f64 {
    20.0 * mag.max(MAG_FLOOR).log10()
}
