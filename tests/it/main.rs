//! The integration tests, as one test binary (`cargo test --release --test it`).
//!
//! Why one binary: each file of `tests/*.rs` is a binary of its own that
//! links the whole library and its dependencies and compiles its own copy of
//! the generic code it uses; with 25 of them that was a large part of a clean
//! 2-core CI build, and cargo ran the binaries one after another, a one-test
//! binary leaving a core idle. Here each file is a module: one test binary,
//! and libtest runs the tests of every file in one pool.
//!
//! Adding a test file: put it here as `tests/it/<name>.rs` and add `mod <name>;`
//! below (a group of files goes in `tests/it/<name>/` with a `mod.rs`). In it,
//! write `use crate::common;` where a separate binary would write `mod common;`
//! (`crate::common::skip` for the skip line). Tests share this process, so a
//! test may not change process-wide state: pass environment variables to the
//! child `Command` it starts, never `std::env::set_var`; no `set_current_dir`.
//! A file that needs the whole process to itself (a `#[global_allocator]`, as
//! `tests/fuzz_designs.rs` counts every allocation) stays a binary of its own
//! in `tests/`. Select one file's tests by module path:
//! `cargo test --release --test it -- farm::`.

mod common;

mod bad_input_cli;
mod best_design;
mod cli_run;
mod cross_engine;
mod design_errors;
mod designs_shipped;
mod device;
mod far_field;
mod farm;
mod fdtd_slim_emu;
mod field_dump;
mod filter_physics;
mod kill_resume;
mod mesh_robust;
mod metal_loss;
mod port_pruning;
mod report;
mod resonance_q;
mod resume_exact;
mod rf_outputs;
mod run_limits;
mod run_machinery;
mod run_signals;
mod smoothness;
mod step_cap;
mod tlm_onchip_emu;
mod uniform_regression;
