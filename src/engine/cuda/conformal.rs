//! The conformal-metal faces of a sub-batch on the device: every design's
//! [`ConformalTerms`] concatenated (term indices rebased), uploaded once with
//! the pending changes of the initial fields (zero for a fresh start), and
//! the kernels' pointers per field set. The model is in
//! `crate::engine::fdtd::conformal`; the kernels in kernels/fdtd_conformal.cuh.

use super::abi::{self, ConformalPtrs};
use crate::engine::device::{self, alloc_with, download_vec, Buf, Device, Dims, KernelArg};
use crate::engine::fdtd::conformal::ConformalTerms;
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::Operator;
use crate::engine::EngineError;

// SAFETY: #[repr(C)] mirror of common.cuh, passed by value (checked by the abi tests).
unsafe impl KernelArg for ConformalPtrs {}

/// The concatenated tables of a sub-batch.
#[derive(Debug, Default)]
pub struct ConformalPlan {
    design: Vec<i32>,
    comp: Vec<i32>,
    idx: Vec<i32>,
    src_comp: Vec<i32>,
    src_idx: Vec<i32>,
    src_w: Vec<f32>,
    e_design: Vec<i32>,
    e_comp: Vec<i32>,
    e_idx: Vec<i32>,
    e_first: Vec<i32>,
    e_term: Vec<i32>,
    e_w: Vec<f32>,
    /// Per design: its first term.
    term_off: Vec<usize>,
}

impl ConformalPlan {
    pub fn new(ops: &[&Operator]) -> Result<ConformalPlan, String> {
        let mut p = ConformalPlan { e_first: vec![0], ..Default::default() };
        let big = |what: &str| format!("more than 2^31 {what} in a batch");
        let index = |x: u32| i32::try_from(x).map_err(|_| "a field index beyond 2^31".to_string());
        for (d, op) in ops.iter().enumerate() {
            let t: &ConformalTerms = &op.conformal;
            p.term_off.push(p.design.len());
            for m in 0..t.len() {
                p.design.push(d as i32);
                p.comp.push(t.comp[m] as i32);
                p.idx.push(index(t.idx[m])?);
            }
            for k in 0..t.src_idx.len() {
                p.src_comp.push(t.src_comp[k] as i32);
                p.src_idx.push(index(t.src_idx[k])?);
                p.src_w.push(t.src_w[k]);
            }
            let tbase = p.term_off[d];
            let c = &t.carry;
            for j in 0..c.e_idx.len() {
                p.e_design.push(d as i32);
                p.e_comp.push(c.e_comp[j] as i32);
                p.e_idx.push(index(c.e_idx[j])?);
                for k in c.e_first[j] as usize..c.e_first[j + 1] as usize {
                    p.e_term.push(i32::try_from(tbase + c.e_term[k] as usize).map_err(|_| big("conformal faces"))?);
                    p.e_w.push(c.e_w[k]);
                }
                p.e_first.push(i32::try_from(p.e_term.len()).map_err(|_| big("conformal reads"))?);
            }
        }
        i32::try_from(p.src_idx.len()).map_err(|_| big("conformal faces"))?;
        Ok(p)
    }

    pub fn terms(&self) -> usize {
        self.design.len()
    }
    /// E edges reading some face.
    pub fn reads(&self) -> usize {
        self.e_design.len()
    }
}

/// The uploaded tables and pending changes.
pub struct DevConformal {
    plan: ConformalPlan,
    pending: Buf,
    /// Per field set (the fused ping-pong).
    pub ptrs: [ConformalPtrs; 2],
}

impl DevConformal {
    /// Upload `plan`; `e`, `h` are the field pools per set, `designs` and `active` the batch's tables.
    pub fn new(dev: &mut dyn Device, plan: ConformalPlan, e: [[Buf; 3]; 2], h: [[Buf; 3]; 2], designs: Buf, active: Buf, init: Option<&[&Fields]>) -> Result<DevConformal, EngineError> {
        let mut pending = vec![0.0f32; plan.terms()];
        if let Some(init) = init {
            for (d, f) in init.iter().enumerate() {
                let to = plan.term_off[d];
                pending[to..to + f.conformal.len()].copy_from_slice(&f.conformal);
            }
        }
        let i = |dev: &mut dyn Device, v: &[i32]| alloc_with(dev, v, 1);
        let f = |dev: &mut dyn Device, v: &[f32]| alloc_with(dev, v, 1);
        let (design, comp, idx, src_comp, src_idx) = (i(dev, &plan.design)?, i(dev, &plan.comp)?, i(dev, &plan.idx)?, i(dev, &plan.src_comp)?, i(dev, &plan.src_idx)?);
        let src_w = f(dev, &plan.src_w)?;
        let (e_design, e_comp, e_idx, e_first, e_term) = (i(dev, &plan.e_design)?, i(dev, &plan.e_comp)?, i(dev, &plan.e_idx)?, i(dev, &plan.e_first)?, i(dev, &plan.e_term)?);
        let e_w = f(dev, &plan.e_w)?;
        let pending_b = f(dev, &pending)?;
        let mut ptrs = [ConformalPtrs::default(); 2];
        for (set, x) in ptrs.iter_mut().enumerate() {
            *x = ConformalPtrs {
                e: [0, 1, 2].map(|c| dev.ptr(e[set][c])),
                h: [0, 1, 2].map(|c| dev.ptr(h[set][c])),
                designs: dev.ptr(designs),
                active: dev.ptr(active),
                design: dev.ptr(design),
                comp: dev.ptr(comp),
                idx: dev.ptr(idx),
                src_comp: dev.ptr(src_comp),
                src_idx: dev.ptr(src_idx),
                src_w: dev.ptr(src_w),
                pending: dev.ptr(pending_b),
                e_design: dev.ptr(e_design),
                e_comp: dev.ptr(e_comp),
                e_idx: dev.ptr(e_idx),
                e_first: dev.ptr(e_first),
                e_term: dev.ptr(e_term),
                e_w: dev.ptr(e_w),
                n_terms: plan.terms() as i32,
                n_reads: plan.reads() as i32,
            };
        }
        Ok(DevConformal { plan, pending: pending_b, ptrs })
    }

    /// Launch `fdtd_conformal` and `fdtd_conformal_e` on field set `cur` (module `m`).
    pub fn launch(&self, dev: &mut dyn Device, m: usize, cur: usize) -> Result<(), EngineError> {
        let n = self.plan.terms() as u32;
        device::launch(dev, m, abi::Kernel::Conformal as usize, Dims::linear(n.div_ceil(abi::SURF_THREADS), abi::SURF_THREADS), &[&self.ptrs[cur]])?;
        let r = self.plan.reads() as u32;
        if r > 0 {
            device::launch(dev, m, abi::Kernel::ConformalE as usize, Dims::linear(r.div_ceil(abi::SURF_THREADS), abi::SURF_THREADS), &[&self.ptrs[cur]])?;
        }
        Ok(())
    }

    /// Launch `fdtd_conformal_rec` on field set `cur`: the end of a step.
    pub fn launch_rec(&self, dev: &mut dyn Device, m: usize, cur: usize) -> Result<(), EngineError> {
        let n = self.plan.terms() as u32;
        device::launch(dev, m, abi::Kernel::ConformalRec as usize, Dims::linear(n.div_ceil(abi::SURF_THREADS), abi::SURF_THREADS), &[&self.ptrs[cur]])
    }

    /// Design `d`'s pending changes (for the fields handed back).
    pub fn state(&self, dev: &mut dyn Device, d: usize, t: &ConformalTerms) -> Result<Vec<f32>, EngineError> {
        download_vec(dev, self.pending, self.plan.term_off[d], t.len())
    }
}
