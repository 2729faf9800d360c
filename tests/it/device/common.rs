//! The CUDA backend when a device can be used, else the reason the test skips.

use emvolve::engine::cuda::{self, CudaBackend};

/// Relative CPU/CUDA difference accepted (the device check's default).
pub const TOL: f64 = 1e-3;

/// The CUDA backend on device 0, or `None` after printing why the test is skipped.
pub fn gpu(test: &str) -> Option<CudaBackend> {
    if !cuda::available() {
        super::skip::skipped(test, &format!("no CUDA device: {}", cuda::unavailable_reason()));
        return None;
    }
    match CudaBackend::new(&[0]) {
        Ok(b) => Some(b),
        Err(e) => {
            super::skip::skipped(test, &format!("CUDA present but unusable: {e}"));
            None
        }
    }
}
