//! The lossy metal faces of a sub-batch on the device: every design's
//! [`SurfaceTerms`] concatenated (memory and coefficient indices rebased),
//! uploaded once with zero memories (or those of the initial fields), and the
//! `fdtd_surface` kernel's pointers per field set. The model is in
//! `crate::engine::fdtd::surface`; the kernel in kernels/fdtd_surface.cuh.

use super::abi::{self, SurfacePtrs};
use crate::engine::device::{self, alloc_with, download_vec, Buf, Device, Dims, KernelArg};
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::surface::{SurfaceState, SurfaceTerms};
use crate::engine::fdtd::Operator;
use crate::engine::EngineError;

// SAFETY: #[repr(C)] mirror of common.cuh, passed by value (checked by the abi tests).
unsafe impl KernelArg for SurfacePtrs {}

/// The concatenated tables of a sub-batch.
#[derive(Debug, Default)]
pub struct SurfacePlan {
    design: Vec<i32>,
    comp: Vec<i32>,
    idx: Vec<i32>,
    k: Vec<f32>,
    inv_den: Vec<f32>,
    kb: Vec<f32>,
    first: Vec<i32>,
    cell0: Vec<i32>,
    alpha: Vec<f32>,
    beta: Vec<f32>,
    rho: Vec<f32>,
    e_design: Vec<i32>,
    e_comp: Vec<i32>,
    e_idx: Vec<i32>,
    e_first: Vec<i32>,
    e_term: Vec<i32>,
    e_w: Vec<f32>,
    /// Per design: its first term and first memory.
    term_off: Vec<usize>,
    psi_off: Vec<usize>,
}

impl SurfacePlan {
    pub fn new(ops: &[&Operator]) -> Result<SurfacePlan, String> {
        let mut p = SurfacePlan { first: vec![0], e_first: vec![0], ..Default::default() };
        let big = |what: &str| format!("more than 2^31 {what} in a batch");
        for (d, op) in ops.iter().enumerate() {
            let t: &SurfaceTerms = &op.surface;
            p.term_off.push(p.design.len());
            let base = *p.first.last().unwrap() as usize;
            p.psi_off.push(base);
            let cbase = p.alpha.len();
            for m in 0..t.len() {
                p.design.push(d as i32);
                p.comp.push(t.comp[m] as i32);
                p.idx.push(i32::try_from(t.idx[m]).map_err(|_| "a field index beyond 2^31".to_string())?);
                p.k.push(t.k[m]);
                p.inv_den.push(t.inv_den[m]);
                p.kb.push(t.kb[m]);
                p.first.push(i32::try_from(base + t.first[m + 1] as usize).map_err(|_| big("surface memories"))?);
                p.cell0.push(i32::try_from(cbase + t.cell_first[t.metal[m] as usize] as usize).map_err(|_| big("surface cells"))?);
            }
            let tbase = p.term_off[d];
            for j in 0..t.carry.e_idx.len() {
                p.e_design.push(d as i32);
                p.e_comp.push(t.carry.e_comp[j] as i32);
                p.e_idx.push(i32::try_from(t.carry.e_idx[j]).map_err(|_| "a field index beyond 2^31".to_string())?);
                for k in t.carry.e_first[j] as usize..t.carry.e_first[j + 1] as usize {
                    p.e_term.push(i32::try_from(tbase + t.carry.e_term[k] as usize).map_err(|_| big("surface terms"))?);
                    p.e_w.push(t.carry.e_w[k]);
                }
                p.e_first.push(i32::try_from(p.e_term.len()).map_err(|_| big("surface reads"))?);
            }
            p.alpha.extend(&t.alpha);
            p.beta.extend(&t.beta);
            p.rho.extend(&t.rho);
        }
        i32::try_from(p.design.len()).map_err(|_| big("surface terms"))?;
        Ok(p)
    }

    pub fn terms(&self) -> usize {
        self.design.len()
    }
    /// E edges reading some node.
    pub fn reads(&self) -> usize {
        self.e_design.len()
    }
    fn memories(&self) -> usize {
        *self.first.last().unwrap() as usize
    }
}

/// The uploaded tables and memories.
pub struct DevSurface {
    plan: SurfacePlan,
    h_prev: Buf,
    psi: Buf,
    dh: Buf,
    /// Per field set (the fused ping-pong).
    pub ptrs: [SurfacePtrs; 2],
}

impl DevSurface {
    /// Upload `plan`; `e`, `h` are the field pools per set, `designs` and `active` the batch's tables.
    pub fn new(dev: &mut dyn Device, plan: SurfacePlan, e: [[Buf; 3]; 2], h: [[Buf; 3]; 2], designs: Buf, active: Buf, init: Option<&[&Fields]>) -> Result<DevSurface, EngineError> {
        let (mut h_prev, mut psi) = (vec![0.0f32; plan.terms()], vec![0.0f32; plan.memories()]);
        if let Some(init) = init {
            for (d, f) in init.iter().enumerate() {
                let st: &SurfaceState = &f.surface;
                let (to, po) = (plan.term_off[d], plan.psi_off[d]);
                h_prev[to..to + st.h_prev.len()].copy_from_slice(&st.h_prev);
                psi[po..po + st.psi.len()].copy_from_slice(&st.psi);
            }
        }
        let i = |dev: &mut dyn Device, v: &[i32]| alloc_with(dev, v, 1);
        let f = |dev: &mut dyn Device, v: &[f32]| alloc_with(dev, v, 1);
        let (design, comp, idx, first, cell0) = (i(dev, &plan.design)?, i(dev, &plan.comp)?, i(dev, &plan.idx)?, i(dev, &plan.first)?, i(dev, &plan.cell0)?);
        let (k, inv_den, kb) = (f(dev, &plan.k)?, f(dev, &plan.inv_den)?, f(dev, &plan.kb)?);
        let (alpha, beta, rho) = (f(dev, &plan.alpha)?, f(dev, &plan.beta)?, f(dev, &plan.rho)?);
        let (e_design, e_comp, e_idx, e_first, e_term) = (i(dev, &plan.e_design)?, i(dev, &plan.e_comp)?, i(dev, &plan.e_idx)?, i(dev, &plan.e_first)?, i(dev, &plan.e_term)?);
        let e_w = f(dev, &plan.e_w)?;
        let (h_prev_b, psi_b, dh_b) = (f(dev, &h_prev)?, f(dev, &psi)?, f(dev, &vec![0.0f32; plan.terms()])?);
        let mut ptrs = [SurfacePtrs::default(); 2];
        for (set, x) in ptrs.iter_mut().enumerate() {
            *x = SurfacePtrs {
                e: [0, 1, 2].map(|c| dev.ptr(e[set][c])),
                h: [0, 1, 2].map(|c| dev.ptr(h[set][c])),
                designs: dev.ptr(designs),
                active: dev.ptr(active),
                design: dev.ptr(design),
                comp: dev.ptr(comp),
                idx: dev.ptr(idx),
                k: dev.ptr(k),
                inv_den: dev.ptr(inv_den),
                kb: dev.ptr(kb),
                first: dev.ptr(first),
                cell0: dev.ptr(cell0),
                alpha: dev.ptr(alpha),
                beta: dev.ptr(beta),
                rho: dev.ptr(rho),
                h_prev: dev.ptr(h_prev_b),
                psi: dev.ptr(psi_b),
                dh: dev.ptr(dh_b),
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
        Ok(DevSurface { plan, h_prev: h_prev_b, psi: psi_b, dh: dh_b, ptrs })
    }

    /// Launch `fdtd_surface` and `fdtd_surface_e` on field set `cur` (module `m`).
    pub fn launch(&self, dev: &mut dyn Device, m: usize, cur: usize) -> Result<(), EngineError> {
        let n = self.plan.terms() as u32;
        device::launch(dev, m, abi::Kernel::Surface as usize, Dims::linear(n.div_ceil(abi::SURF_THREADS), abi::SURF_THREADS), &[&self.ptrs[cur]])?;
        let r = self.plan.reads() as u32;
        if r > 0 {
            device::launch(dev, m, abi::Kernel::SurfaceE as usize, Dims::linear(r.div_ceil(abi::SURF_THREADS), abi::SURF_THREADS), &[&self.ptrs[cur]])?;
        }
        Ok(())
    }

    /// Design `d`'s memories (for the fields handed back).
    pub fn state(&self, dev: &mut dyn Device, d: usize, t: &SurfaceTerms) -> Result<SurfaceState, EngineError> {
        let (to, po) = (self.plan.term_off[d], self.plan.psi_off[d]);
        let n_psi = t.first.last().copied().unwrap_or(0) as usize;
        Ok(SurfaceState { h_prev: download_vec(dev, self.h_prev, to, t.len())?, psi: download_vec(dev, self.psi, po, n_psi)?, dh: download_vec(dev, self.dh, to, t.len())? })
    }
}
