//! GPU tests: the CUDA backend against the CPU engines, on a small cavity and
//! on each shipped design's jobs for a few hundred steps. Each test skips
//! itself, saying why, where no CUDA device can be used (every CI build); on
//! the device machine they run for real (`cargo test --release --test it device::`).

mod cavity;
mod common;
mod designs;
use crate::common::skip;

/// A skip is told where `cargo test` shows it: the `SKIPPED` line of a test
/// that passed reaches the output of the test binary run as cargo runs it
/// (output captured), which `.ci/run` counts apart from the passes.
#[test]
fn a_skip_is_shown_without_nocapture() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["device::skip_demo", "--exact", "--test-threads", "1"])
        .env("EMVOLVE_SKIP_DEMO", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("SKIPPED skip_demo: asked to by EMVOLVE_SKIP_DEMO\n"), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    // What eprintln! writes is captured for a passing test, as libtest does.
    assert!(!text.contains("captured line"), "{text}");
}

/// The child of [`a_skip_is_shown_without_nocapture`]: skips when asked, does nothing otherwise.
#[test]
fn skip_demo() {
    if std::env::var_os("EMVOLVE_SKIP_DEMO").is_some() {
        eprintln!("captured line");
        skip::skipped("skip_demo", "asked to by EMVOLVE_SKIP_DEMO");
    }
}
