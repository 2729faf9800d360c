//! `emvolve bench`: the options and the tables are the library's
//! ([`crate::bench`]); this only runs them, with the backends' own kernel
//! choices, as a run gets them (the tuning knobs are `emvolve-lab bench`'s).

pub use crate::bench::BenchArgs;
use crate::bench::TuningArgs;

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    crate::bench::run(&a, &TuningArgs::backend_choices())?;
    Ok(0)
}
