//! The CPU backend: every job of a batch on all cores through rayon (jobs in
//! parallel, and z-planes in parallel inside each job), each through the one
//! stepping loop as a batch of one. FDTD jobs of one structure (a design's
//! driven ports) share one operator, built once.

use rayon::prelude::*;

use super::fdtd::{cpu_batch, Operator};
use super::{Backend, BatchResult};
use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

/// Runs FDTD and TLM jobs on the CPU.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend;

/// Simulate one job on the CPU with the engine it asks for.
pub fn run_job(job: &SimJob) -> Result<SimOutput, SimFailure> {
    match job.engine {
        EngineKind::Fdtd => cpu_batch::run(job),
        EngineKind::Tlm | EngineKind::Tlm2d => super::tlm::run_cpu(job),
    }
}

/// For each job, the index of the first job of the batch with the same
/// structure (itself when it is the first).
pub fn structure_groups(jobs: &[SimJob]) -> Vec<usize> {
    let mut firsts: Vec<usize> = vec![];
    jobs.iter()
        .enumerate()
        .map(|(i, j)| match firsts.iter().find(|&&f| jobs[f].shares_structure(j)) {
            Some(&f) => f,
            None => {
                firsts.push(i);
                i
            }
        })
        .collect()
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
    fn run_batch_progress(&self, jobs: &[SimJob], done: &(dyn Fn(usize) + Sync)) -> BatchResult {
        // One operator per FDTD structure, built first (in parallel), then every job.
        let group = structure_groups(jobs);
        let firsts: Vec<usize> = (0..jobs.len()).filter(|&i| group[i] == i && jobs[i].engine == EngineKind::Fdtd).collect();
        let built: Vec<Result<Operator, SimFailure>> = firsts.par_iter().map(|&i| Operator::new(&jobs[i])).collect();
        let op_of = |i: usize| firsts.iter().position(|&f| f == group[i]).map(|k| &built[k]);
        let count = std::sync::atomic::AtomicUsize::new(0);
        Ok(jobs
            .par_iter()
            .enumerate()
            .map(|(i, j)| {
                let r = match (j.engine, op_of(i)) {
                    (EngineKind::Fdtd, Some(Ok(op))) => cpu_batch::run_with(j, op),
                    (EngineKind::Fdtd, Some(Err(e))) => Err(e.clone()),
                    _ => run_job(j),
                };
                done(count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                r
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drives_of_one_structure_share_an_operator_and_match_separate_runs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("designs/microstrip_lowpass.ron");
        let d = crate::design::Design::load(&path).unwrap();
        let v = d.midpoint_values();
        let mut jobs = d.jobs(&v, &[0, 1], None).unwrap();
        let mut other = d.jobs(&v, &[0], None).unwrap();
        jobs.append(&mut other);
        for j in &mut jobs {
            j.stop.max_steps = 40;
        }
        // The two drives share their cells; the second call's job is a separate structure.
        assert_eq!(structure_groups(&jobs), [0, 0, 2]);
        let together = CpuBackend.run_batch(&jobs).unwrap();
        for (j, r) in jobs.iter().zip(&together) {
            let alone = run_job(j).unwrap();
            assert_eq!(r.as_ref().unwrap(), &alone, "{}", j.label);
        }
    }
}
