//! The on-chip launch of a 2D TLM sub-batch (every design of it on-chip,
//! planned by [`super::onchip`]): the kernel and its table loaded, the energy
//! buffer, the chunk lengths, and one launch of `kernels/tlm_onchip.cu` for
//! the running designs (one block each) from the batch's pools.

use super::onchip;
use super::plan::Plan;
use super::TlmDevBatch;
use crate::engine::device::{self, alloc_with, Buf, Device, Dims};
use crate::engine::tlm::pack::TlmPack;
use crate::engine::EngineError;
use crate::job::SimJob;

/// The on-chip launch of a sub-batch (every design of it on-chip, 2D).
pub(super) struct OcRun {
    /// The loaded module.
    pub(super) m: usize,
    /// onchip::table, and the energies after each check of a launch.
    pub(super) table: Buf,
    pub(super) en: Buf,
    /// Dynamic shared memory per block (the largest design's).
    pub(super) smem: u32,
    pub(super) threads: u32,
    /// Energy checks one launch may span and their common interval.
    pub(super) checks: usize,
    pub(super) ce: usize,
    /// Modelled shared-memory bytes of one step, per design.
    pub(super) step_smem: Vec<f64>,
}

/// How a sub-batch takes the on-chip path: threads per block, energy checks a launch may span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnchipRun {
    pub threads: usize,
    pub checks: usize,
}

impl OcRun {
    /// Load the on-chip kernel and size its launch for these designs (each
    /// planned on-chip by the caller: `onchip::plan_design`).
    pub(super) fn new(dev: &mut dyn Device, jobs: &[&SimJob], packs: &[&TlmPack], plan: &Plan, o: OnchipRun, checks: usize) -> Result<OcRun, EngineError> {
        onchip::validate_threads(o.threads).map_err(EngineError::Cuda)?;
        let max = dev.max_shared();
        let mut fits = vec![];
        for (d, pk) in packs.iter().enumerate() {
            fits.push(onchip::plan_design(pk, max).map_err(|e| EngineError::Cuda(format!("design '{}' cannot run on-chip: {e}", jobs[d].label)))?);
        }
        let m = dev.load(&onchip::module(o.threads as u32))?;
        let table = alloc_with(dev, &onchip::table(plan, packs, &fits).map_err(EngineError::Cuda)?, 0)?;
        let en = dev.alloc(jobs.len() * checks.max(1) * 8)?;
        let smem = fits.iter().map(|f| f.bytes).max().unwrap_or(0) as u32;
        let ce = jobs.iter().map(|j| j.stop.check_every.max(1)).max().unwrap_or(1);
        let step_smem = packs.iter().zip(&fits).map(|(pk, f)| onchip::step_smem_bytes(pk, f)).collect();
        Ok(OcRun { m, table, en, smem, threads: o.threads as u32, checks, ce, step_smem })
    }
}

impl TlmDevBatch<'_> {
    /// One launch of the on-chip kernel: `k` steps of every running design,
    /// in place in field set 0, the energies after every check into `oc.en`
    /// (after every `ce` steps when one launch spans several checks, else after the k-th).
    pub(super) fn launch_onchip(&mut self, k: usize) -> Result<(), EngineError> {
        let Some(oc) = &self.oc else { return Ok(()) };
        let ce = if oc.checks > 1 { oc.ce.min(k) } else { k };
        let (table, en) = (self.dev.ptr(oc.table), self.dev.ptr(oc.en));
        let (kk, ce, nd) = (k as i32, ce as i32, self.jobs.len() as i32);
        let dims = Dims::linear(self.sizes.0, oc.threads);
        device::launch_shared(self.dev, oc.m, 0, dims, oc.smem, &[&self.pp[0], &table, &kk, &ce, &en, &nd])
    }
}

/// Steps of an on-chip sub-batch's launches at most (its sample and source
/// buffers) and the energy checks one launch may span: `checks` where every
/// job checks at the same interval, else up to the next check within
/// `trace_chunk` (as the FDTD on-chip path: `fdtd::onchip_chunk`).
pub(super) fn chunk(jobs: &[&SimJob], trace_chunk: usize, checks: usize) -> (usize, usize) {
    let ce = jobs.iter().map(|j| j.stop.check_every.max(1)).max().unwrap_or(1);
    let same = jobs.iter().all(|j| j.stop.check_every.max(1) == ce);
    if same && checks > 1 {
        (ce * checks, checks)
    } else {
        (trace_chunk.min(ce).max(1), 1)
    }
}
