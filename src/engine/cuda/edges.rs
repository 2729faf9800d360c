//! The edge currents (dispersive media, lumped loads) of a sub-batch on the
//! device: every design's [`EdgeTerms`] concatenated (edge and pole indices
//! rebased), uploaded once with zero memories (or those of the initial
//! fields), and the `fdtd_edges` kernel's pointers per field set. The model
//! is in `crate::engine::fdtd::edges`; the kernel in kernels/fdtd_edges.cuh.

use super::abi::{self, EdgePtrs};
use crate::engine::device::{self, alloc_with, download_vec, Buf, Device, Dims, KernelArg};
use crate::engine::fdtd::edges::{EdgeState, EdgeTerms};
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::Operator;
use crate::engine::EngineError;

// SAFETY: #[repr(C)] mirror of common.cuh, passed by value (checked by the abi tests).
unsafe impl KernelArg for EdgePtrs {}

/// The concatenated tables of a sub-batch.
#[derive(Debug, Default)]
pub struct EdgePlan {
    design: Vec<i32>,
    comp: Vec<i32>,
    idx: Vec<i32>,
    s: Vec<f32>,
    g0: Vec<f32>,
    inv_den: Vec<f32>,
    first: Vec<i32>,
    kp: Vec<f32>,
    kd: Vec<f32>,
    q0: Vec<f32>,
    q1: Vec<f32>,
    /// Per design: its first edge and first pole.
    edge_off: Vec<usize>,
    pole_off: Vec<usize>,
}

impl EdgePlan {
    pub fn new(ops: &[&Operator]) -> Result<EdgePlan, String> {
        let mut p = EdgePlan { first: vec![0], ..Default::default() };
        for (d, op) in ops.iter().enumerate() {
            let t: &EdgeTerms = &op.edges;
            p.edge_off.push(p.design.len());
            p.pole_off.push(p.kp.len());
            let base = p.kp.len();
            for m in 0..t.len() {
                p.design.push(d as i32);
                p.comp.push(t.comp[m] as i32);
                p.idx.push(i32::try_from(t.idx[m]).map_err(|_| "an edge index beyond 2^31".to_string())?);
                p.s.push(t.s[m]);
                p.g0.push(t.g0[m]);
                p.inv_den.push(t.inv_den[m]);
                p.first.push(i32::try_from(base + t.first[m + 1] as usize).map_err(|_| "more than 2^31 poles in a batch".to_string())?);
            }
            p.kp.extend(&t.kp);
            p.kd.extend(&t.kd);
            p.q0.extend(&t.q0);
            p.q1.extend(&t.q1);
        }
        i32::try_from(p.design.len()).map_err(|_| "more than 2^31 edge currents in a batch".to_string())?;
        Ok(p)
    }

    pub fn edges(&self) -> usize {
        self.design.len()
    }
}

/// The uploaded tables and memories.
pub struct DevEdges {
    plan: EdgePlan,
    e_prev: Buf,
    p: Buf,
    dd: Buf,
    /// Per field set (the fused ping-pong).
    pub ptrs: [EdgePtrs; 2],
}

impl DevEdges {
    /// Upload `plan`; `e` are the field pools per set, `designs` and `active` the batch's tables.
    pub fn new(dev: &mut dyn Device, plan: EdgePlan, e: [[Buf; 3]; 2], designs: Buf, active: Buf, init: Option<&[&Fields]>) -> Result<DevEdges, EngineError> {
        let zeros = |n: usize| vec![0.0f32; n];
        let (mut e_prev, mut pm, mut dm) = (zeros(plan.edges()), zeros(plan.kp.len()), zeros(plan.kp.len()));
        if let Some(init) = init {
            for (d, f) in init.iter().enumerate() {
                let st: &EdgeState = &f.edges;
                let (eo, po) = (plan.edge_off[d], plan.pole_off[d]);
                e_prev[eo..eo + st.e_prev.len()].copy_from_slice(&st.e_prev);
                pm[po..po + st.p.len()].copy_from_slice(&st.p);
                dm[po..po + st.d.len()].copy_from_slice(&st.d);
            }
        }
        let i = |dev: &mut dyn Device, v: &[i32]| alloc_with(dev, v, 1);
        let f = |dev: &mut dyn Device, v: &[f32]| alloc_with(dev, v, 1);
        let (design, comp, idx, first) = (i(dev, &plan.design)?, i(dev, &plan.comp)?, i(dev, &plan.idx)?, i(dev, &plan.first)?);
        let (s, g0, inv_den) = (f(dev, &plan.s)?, f(dev, &plan.g0)?, f(dev, &plan.inv_den)?);
        let (kp, kd, q0, q1) = (f(dev, &plan.kp)?, f(dev, &plan.kd)?, f(dev, &plan.q0)?, f(dev, &plan.q1)?);
        let (e_prev_b, p_b, dd_b) = (f(dev, &e_prev)?, f(dev, &pm)?, f(dev, &dm)?);
        let mut ptrs = [EdgePtrs::default(); 2];
        for (set, x) in ptrs.iter_mut().enumerate() {
            *x = EdgePtrs {
                e: [0, 1, 2].map(|c| dev.ptr(e[set][c])),
                designs: dev.ptr(designs),
                active: dev.ptr(active),
                design: dev.ptr(design),
                comp: dev.ptr(comp),
                idx: dev.ptr(idx),
                s: dev.ptr(s),
                g0: dev.ptr(g0),
                inv_den: dev.ptr(inv_den),
                first: dev.ptr(first),
                e_prev: dev.ptr(e_prev_b),
                kp: dev.ptr(kp),
                kd: dev.ptr(kd),
                q0: dev.ptr(q0),
                q1: dev.ptr(q1),
                p: dev.ptr(p_b),
                dd: dev.ptr(dd_b),
                n_edges: plan.edges() as i32,
                pad: 0,
            };
        }
        Ok(DevEdges { plan, e_prev: e_prev_b, p: p_b, dd: dd_b, ptrs })
    }

    /// Launch `fdtd_edges` on field set `cur` (module `m`).
    pub fn launch(&self, dev: &mut dyn Device, m: usize, cur: usize) -> Result<(), EngineError> {
        let n = self.plan.edges() as u32;
        device::launch(dev, m, abi::Kernel::Edges as usize, Dims::linear(n.div_ceil(abi::EDGE_THREADS), abi::EDGE_THREADS), &[&self.ptrs[cur]])
    }

    /// Design `d`'s memories (for the fields handed back).
    pub fn state(&self, dev: &mut dyn Device, d: usize, t: &EdgeTerms) -> Result<EdgeState, EngineError> {
        let (eo, po) = (self.plan.edge_off[d], self.plan.pole_off[d]);
        Ok(EdgeState { e_prev: download_vec(dev, self.e_prev, eo, t.len())?, p: download_vec(dev, self.p, po, t.kp.len())?, d: download_vec(dev, self.dd, po, t.kp.len())? })
    }
}
