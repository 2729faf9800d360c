//! GPU tests: the CUDA backend against the CPU engines, on a small cavity and
//! on each shipped design's jobs for a few hundred steps. Each test skips
//! itself, saying why, where no CUDA device can be used (every CI build); on
//! the device machine they run for real (`cargo test --release --test device`).

mod device {
    pub mod cavity;
    pub mod common;
    pub mod designs;
}
