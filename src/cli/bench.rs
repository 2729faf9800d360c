//! `emvolve bench`: throughput of the engines on fixed workloads.

use std::time::Instant;

use clap::Args;

use crate::engine::{cpu::CpuBackend, Backend};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Edge of the cubic benchmark grid (cells).
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    /// Time steps per measurement.
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Population size of the batch benchmark (0 to skip).
    #[arg(long, default_value_t = 8)]
    pub population: usize,
    /// Cells per design in the batch benchmark.
    #[arg(long, default_value_t = 60_000)]
    pub cells: usize,
}

/// Time `jobs` on `backend`; returns (seconds, cell-updates).
fn time_batch(backend: &dyn Backend, jobs: &[crate::job::SimJob]) -> anyhow::Result<(f64, f64)> {
    let t = Instant::now();
    let out = backend.run_batch(jobs)?;
    let secs = t.elapsed().as_secs_f64();
    let mut updates = 0.0;
    for (j, o) in jobs.iter().zip(out) {
        let o = o.map_err(|e| anyhow::anyhow!("{}: {e}", j.label))?;
        updates += o.cells as f64 * o.steps as f64;
    }
    Ok((secs, updates))
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    let cpu = CpuBackend;
    println!("backend: {}", cpu.name());
    println!("| workload | cells | steps | seconds | Mcells/s |");
    println!("|---|---|---|---|---|");
    let job = crate::bench::box_job(a.n, a.steps);
    let (s, u) = time_batch(&cpu, std::slice::from_ref(&job))?;
    println!("| box {}^3, CPML all faces, dielectric block | {} | {} | {:.2} | {:.1} |", a.n, job.grid.cells(), a.steps, s, u / s / 1e6);
    if a.population > 0 {
        let jobs = crate::bench::population_jobs(a.population, a.cells, a.steps);
        let (s, u) = time_batch(&cpu, &jobs)?;
        println!("| population {} x {} cells, 2 TE10 ports | {} | {} | {:.2} | {:.1} |", a.population, jobs[0].grid.cells(), jobs.len() * jobs[0].grid.cells(), a.steps, s, u / s / 1e6);
    }
    Ok(0)
}
