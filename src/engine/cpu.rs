//! The CPU backend: every job of a batch on all cores through rayon (jobs in
//! parallel, and z-planes in parallel inside each job), each through the one
//! stepping loop as a batch of one. FDTD jobs of one structure (a design's
//! driven ports) share one operator, built once.

use rayon::prelude::*;

use super::fdtd::{cpu_batch, Operator};
use super::{Backend, BatchResult, RunCtx, StepWatch};
use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

/// Runs FDTD and TLM jobs on the CPU.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend;

/// Simulate one job on the CPU with the engine it asks for.
pub fn run_job(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_job_watched(job, &StepWatch::default())
}

/// [`run_job`], reporting steps and energy decay into `watch`.
pub fn run_job_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    match job.engine {
        EngineKind::Fdtd => cpu_batch::run_watched(job, watch),
        EngineKind::Tlm | EngineKind::Tlm2d => super::tlm::run_cpu_watched(job, watch),
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
    fn run(&self, jobs: &[SimJob], ctx: &RunCtx) -> BatchResult {
        let (done, watch) = (ctx.done, ctx.watch);
        // One operator per FDTD structure, built first (in parallel), then every job.
        let group = structure_groups(jobs);
        let firsts: Vec<usize> = (0..jobs.len()).filter(|&i| group[i] == i && jobs[i].engine == EngineKind::Fdtd).collect();
        let built: Vec<Result<Operator, SimFailure>> = firsts.par_iter().map(|&i| Operator::new(&jobs[i])).collect();
        let op_of = |i: usize| firsts.iter().position(|&f| f == group[i]).map(|k| &built[k]);
        let count = std::sync::atomic::AtomicUsize::new(0);
        let spare = StepWatch::default();
        Ok(jobs
            .par_iter()
            .enumerate()
            .map(|(i, j)| {
                let w = watch.get(i).unwrap_or(&spare);
                let r = match (j.engine, op_of(i)) {
                    (EngineKind::Fdtd, Some(Ok(op))) => cpu_batch::run_with(j, op, w),
                    (EngineKind::Fdtd, Some(Err(e))) => Err(e.clone()),
                    _ => run_job_watched(j, w),
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
        let together = CpuBackend.run(&jobs, &RunCtx::NONE).unwrap();
        for (j, r) in jobs.iter().zip(&together) {
            let alone = run_job(j).unwrap();
            assert_eq!(r.as_ref().unwrap(), &alone, "{}", j.label);
        }
    }

    #[test]
    fn watches_follow_every_method_to_its_last_check() {
        // FDTD, TLM-SCN and TLM-2D jobs report their steps and decay at each check;
        // the last report is the run's end.
        // The filter on its uniform mesh: the TLM engines are uniform-mesh methods.
        let d = crate::bench::workloads::shipped_iris_filter().unwrap();
        let v = d.midpoint_values();
        let mut jobs = vec![];
        for e in [EngineKind::Fdtd, EngineKind::Tlm, EngineKind::Tlm2d] {
            let mut j = d.jobs(&v, &[0], Some(e)).unwrap().remove(0);
            j.stop.max_steps = 150;
            j.stop.check_every = 64;
            jobs.push(j);
        }
        let watch = StepWatch::for_jobs(jobs.len());
        let outs = CpuBackend.run(&jobs, &RunCtx::watched(&|_| {}, &watch)).unwrap();
        for ((j, o), w) in jobs.iter().zip(&outs).zip(&watch) {
            let o = o.as_ref().unwrap();
            let db = match o.ended {
                crate::job::EndReason::EnergyDecay { db } | crate::job::EndReason::MaxSteps { db } => db,
            };
            assert_eq!(w.get(), (150, db), "{}", j.label);
        }
    }
}
