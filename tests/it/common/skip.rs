//! How a test says it skipped part of its work for want of a prerequisite (a
//! CUDA device, g++, chromium): one `SKIPPED <test>: <why>` line written
//! straight to the process's stderr. libtest captures only `print!`/`eprint!`
//! of passing tests, so this line shows in `cargo test`'s own output without
//! `--nocapture`; libtest still counts such a test as passed, so `.ci/run`
//! counts these lines and reports them apart from the passes.

use std::io::Write;

/// Say that `test` skipped because of `why`, where `cargo test` shows it.
pub fn skipped(test: &str, why: &str) {
    // Written to the unbuffered handle, not through eprintln!, which libtest
    // captures; in one write, so that libtest's own lines (other tests of the
    // binary finishing meanwhile) never land inside it.
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
