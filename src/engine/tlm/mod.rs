//! Transmission-line-matrix (TLM) engines on the CPU: the stub-loaded 3D
//! symmetrical condensed node ([`scn`]) and the 2D shunt node ([`shunt2d`]).
//! Both read a [`SimJob`] and return the same port signals as FDTD, so
//! S-parameters go through the shared analysis path.
//!
//! How the job's conventions map onto nodes ([`common::Lattice`]):
//! - 3D SCN: one node per cell, at its centre. 2D shunt node: one node per
//!   grid node of the mesh plane, where Yee keeps the E component, which makes
//!   it FDTD's twin (see `Lattice` for why and what it measured).
//! - Time step: set by the mesh so that every stub is non-negative
//!   (`job.courant` is an FDTD setting and is ignored). The SCN runs a one-cell
//!   axis between PEC faces (a collapsed invariant axis) as a cubic slab and
//!   scales the port signals back (`scn::run`): exact, since the fields are
//!   uniform across it, and 14 times cheaper than cubic cells over WR-28's b.
//! - Walls: SCN walls sit halfway between nodes: PEC -1, PMC +1; PEC cells and
//!   sheets short the links that reach them (a sheet covers the cells inside its
//!   rectangle, grid nodes `lo..=hi` spanning cells `lo..hi`). 2D: a node
//!   touching a PEC cell, on a PEC face or in a sheet is shorted; a PMC face
//!   mirrors its nodes.
//! - Absorbing faces: where a waveguide port looks along the axis, an exact
//!   TE10 modal termination of the empty guide (padding cells there are plain
//!   guide); elsewhere a link termination matched to a normally incident plane
//!   wave, behind graded matched loss in the padding. That loss is reflectionless
//!   at normal incidence but, lacking a PML's stretched normal terms, no better
//!   than the bare termination for oblique waves ((cos t - 1)/(cos t + 1)).
//! - Lumped ports, SCN: the FDTD edge from grid node `start` maps to the column of
//!   cells whose low corner is on it (half a cell off sideways); source, R and the
//!   column's E sub-nodes are solved as one series circuit, so V and I are exact
//!   at the node instant (offset 0). The port also sees half its column's cell
//!   capacitance in parallel (relative reactance w dt / 2), like a Yee edge port.
//!   2D: the port's node is its grid node; V at the node instant, I the current
//!   through the node's links at their midpoints half a step earlier (Yee's loop
//!   of H around the edge; offset -1/2).
//! - Waveguide ports, SCN: V and I from the link pulses crossing the reference
//!   face, half a step after the node instant (offset 0.5); with lumped ports in
//!   the same job both are averaged onto whole steps (a common cos(w dt / 2)
//!   factor); the source layer is the cell centre `source_offset - 1/2` cells
//!   behind the face. 2D: V on the node layer of the reference plane, I the mean
//!   current of the normal links' midpoints half a step earlier (Yee's E on the
//!   plane and mean H either side); the source on the grid plane `source_offset`
//!   behind it, as in FDTD.

use super::StepWatch;
use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

mod common;
mod cpu_batch;
pub(crate) mod pack;
pub mod scn;
mod scn_geo;
mod scn_node;
mod scn_runs;
pub mod shunt2d;
#[cfg(test)]
pub(crate) mod spectrum;
#[cfg(test)]
pub(crate) mod testjobs;

/// Simulate one job with the TLM engine it names (`Tlm` -> 3D SCN, `Tlm2d` ->
/// 2D shunt node). Rayon parallelises each step over slabs of nodes.
pub fn run_cpu(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_cpu_watched(job, &StepWatch::default())
}

/// [`run_cpu`], reporting steps and energy decay into `watch` at each energy check.
pub fn run_cpu_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    refuse_monitors(job)?;
    match job.engine {
        EngineKind::Tlm => scn::run_watched(job, watch),
        EngineKind::Tlm2d => shunt2d::run_watched(job, watch),
        EngineKind::Fdtd => Err(SimFailure::Invalid(format!("{}: FDTD job given to the TLM engine", job.label))),
    }
}

/// The TLM engines record the port signals only: a job asking for field
/// monitors is refused, not run without them.
pub(crate) fn refuse_monitors(job: &SimJob) -> Result<(), SimFailure> {
    match job.monitors.first() {
        None => Ok(()),
        Some(m) => Err(SimFailure::Invalid(format!(
            "{}: field monitor `{}`: the TLM engines (3D SCN, 2D shunt node) do not record field monitors; use the FDTD engine",
            job.label,
            m.name()
        ))),
    }
}

/// Pack one TLM job (`Tlm` or `Tlm2d`) for the CUDA backend.
pub(crate) fn pack(job: &SimJob) -> Result<pack::TlmPack, SimFailure> {
    match job.engine {
        EngineKind::Tlm => scn::pack(job),
        EngineKind::Tlm2d => shunt2d::pack(job),
        EngineKind::Fdtd => Err(SimFailure::Invalid(format!("{}: FDTD job given to the TLM packer", job.label))),
    }
}

/// Where the first non-finite pulse of `b` (one array per link of a packed
/// job) is, as the CPU engine says it.
pub(crate) fn locate_non_finite(p: &pack::TlmPack, b: Vec<Vec<f32>>) -> String {
    let links = b.len();
    if p.dim3 {
        match <[Vec<f32>; 12]>::try_from(b) {
            Ok(arr) => scn::find_non_finite(&arr, p.n),
            Err(_) => format!("the pulses ({links} link arrays given, 12 expected)"),
        }
    } else {
        match <[Vec<f32>; 4]>::try_from(b) {
            Ok(arr) => shunt2d::find_non_finite(&arr),
            Err(_) => format!("the pulses ({links} link arrays given, 4 expected)"),
        }
    }
}
