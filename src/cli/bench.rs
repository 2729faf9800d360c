//! `emvolve bench`: the options and the tables are the library's
//! ([`crate::bench`]); this only runs them.

pub use crate::bench::BenchArgs;

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    crate::bench::run(&a)?;
    Ok(0)
}
