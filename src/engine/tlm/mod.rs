//! Transmission-line-matrix (TLM) engines on the CPU: the stub-loaded 3D
//! symmetrical condensed node ([`scn`]) and the 2D shunt node ([`shunt2d`]).
//! Both read a [`SimJob`] and return the same port signals as FDTD, so
//! S-parameters go through the shared analysis path.

use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

mod common;
pub mod scn;
mod scn_node;
pub mod shunt2d;
#[cfg(test)]
pub(crate) mod spectrum;
#[cfg(test)]
pub(crate) mod testjobs;

/// Simulate one job with the TLM engine it names (`Tlm` -> 3D SCN, `Tlm2d` ->
/// 2D shunt node). Rayon parallelises each step over slabs of nodes.
pub fn run_cpu(job: &SimJob) -> Result<SimOutput, SimFailure> {
    match job.engine {
        EngineKind::Tlm => scn::run(job),
        EngineKind::Tlm2d => shunt2d::run(job),
        EngineKind::Fdtd => Err(SimFailure::Invalid(format!("{}: FDTD job given to the TLM engine", job.label))),
    }
}
