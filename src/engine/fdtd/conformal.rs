//! Conformal metal: the FDTD extension for perfect metal whose faces do not
//! lie on mesh lines (cylinders, prisms, discs, polygons; the fills come
//! from `crate::design::conformal`).
//!
//! The locally conformal update of Dey & Mittra ("A locally conformal
//! finite-difference time-domain (FDTD) algorithm for modeling
//! three-dimensional perfectly conducting objects", IEEE MGWL 7(9), 1997):
//! Faraday's law on a cell face that metal cuts runs over the open part of
//! the face only, `mu a A dH/dt = -sum_k f_k l_k E_k`, with `a` the open
//! fraction of the face's area `A` and `f_k` that of edge k's length `l_k`.
//! Edges wholly in metal are PEC; edges partly in it keep their usual E
//! update (the field on their open part). In the matrix form of the finite
//! integration technique this is Yee with the face's `mu A` scaled by `a`
//! and the edge's `eps A~ / l` by `1 / f`: symmetric, so it keeps an energy
//! and is stable while the largest eigenvalue stays under `(2 / dt)^2`.
//!
//! The small-cell rule: a face whose open area is small next to its open
//! edges would need a smaller time step. Its area is taken as at least
//! [`AREA_FLOOR`] times the mean open fraction of its four edges (the
//! face's own stiffness `sum f_k / a` then stays within that of a regular
//! face by the factor `1 / AREA_FLOOR`), so the usual time step holds; the
//! tests in `conformal_tests.rs` check the eigenvalue bound on cut grids and
//! run such grids for tens of thousands of steps.
//!
//! Where it runs: the Yee step of every backend is untouched. After the
//! step and the port sources, each cut face's H gets the difference between
//! the conformal and the regular update, `dH = -db sum_k s_k (f_k/a - 1)
//! E_k(n) / d_k`; that change is carried into the E edges that read the
//! face ([`super::carry`]), exactly what the E update would have given. The
//! `E(n)` this needs is gone by then, so the pass keeps, per face, the sum
//! it needs (`pending`), computed at the end of the previous step once every
//! extension has set `E(n)` (`record`). CUDA twins: `fdtd_conformal`,
//! `fdtd_conformal_e` and `fdtd_conformal_rec` (kernels/fdtd_conformal.cuh).
//! Faces within a cell of a CPML are left out (their E edges' stretched
//! memories would need the change too); there, edges more than half covered
//! are PEC and the rest open (the cell-centre rule's answer).

use std::collections::HashMap;

use super::carry::{node_reads, ECarry};
use super::cpu::{fdtd_pmc_ghosts, fdtd_update_e, fdtd_update_h};
use super::fields::Fields;
use super::operator::{Operator, PEC_INDEX};
use crate::job::SimJob;

/// A face's open area is taken as at least this times the mean open fraction
/// of its edges (the small-cell rule above).
pub const AREA_FLOOR: f64 = 0.5;

/// The conformal face terms of one job (struct of arrays, as uploaded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConformalTerms {
    /// Per term: H component and flat index of the face's node.
    pub comp: Vec<u8>,
    pub idx: Vec<u32>,
    /// Per term, four entries: the E edges of its loop (component, flat
    /// index) and the weight of each in the term's change of H.
    pub src_comp: Vec<u8>,
    pub src_idx: Vec<u32>,
    pub src_w: Vec<f32>,
    /// The E edges reading the faces.
    pub carry: ECarry,
}

impl ConformalTerms {
    pub fn len(&self) -> usize {
        self.comp.len()
    }
    pub fn is_empty(&self) -> bool {
        self.comp.is_empty()
    }

    /// Whether position `pos` (of any component) lies in a CPML or its first
    /// neighbour on some axis: no terms there.
    fn near_pml(job: &SimJob, n: [usize; 3], pos: [usize; 3]) -> bool {
        !(0..3).all(|ax| (job.pml[ax][0] == 0 || pos[ax] > job.pml[ax][0]) && (job.pml[ax][1] == 0 || pos[ax] + job.pml[ax][1] + 2 <= n[ax]))
    }

    /// Mark the edges the metal covers on `op` (before the ports and the row
    /// marks): PEC where wholly covered (near a CPML: more than half).
    pub fn mark_edges(job: &SimJob, op: &mut Operator) {
        for e in &job.conformal.edges {
            let pos = e.at.map(|x| x as usize);
            let near = Self::near_pml(job, op.n, pos);
            if e.open <= 0.0 || (near && e.open < 0.5) {
                let p = op.at3(pos.map(|x| x as isize));
                op.mat[e.comp.index()][p] = PEC_INDEX;
            }
        }
    }

    /// The face terms of `job` on its finished operator.
    pub fn build(job: &SimJob, op: &Operator) -> ConformalTerms {
        Self::build_with(job, op, AREA_FLOOR)
    }

    /// `build` with the small-cell rule's factor given (tests).
    pub(super) fn build_with(job: &SimJob, op: &Operator, floor: f64) -> ConformalTerms {
        let cf = &job.conformal;
        if cf.faces.is_empty() {
            return ConformalTerms::default();
        }
        let open: HashMap<(usize, usize), f64> = cf.edges.iter().map(|e| ((e.comp.index(), op.at3(e.at.map(|x| x as isize))), e.open as f64)).collect();
        let mut t = ConformalTerms::default();
        let mut reads = vec![];
        let n = op.n;
        for fc in &cf.faces {
            let c = fc.comp.index();
            let pos = fc.at.map(|x| x as usize);
            // Real faces only (H_c counts nodes along c, cells across it).
            if (0..3).any(|ax| if ax == c { pos[ax] > n[ax] } else { pos[ax] >= n[ax] }) || Self::near_pml(job, n, pos) {
                continue;
            }
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (sa, sb) = (op.stride[a], op.stride[b]);
            let p = op.at3(pos.map(|x| x as isize));
            // The loop's edges as the H update reads them: (component, flat
            // index, sign in `t1 - t2`, inverse primal spacing).
            let (ia, ib) = (op.inv_h[a][pos[a] + 1] as f64, op.inv_h[b][pos[b] + 1] as f64);
            let loop_edges = [(b, p + sa, 1.0, ia), (b, p, -1.0, ia), (a, p + sb, -1.0, ib), (a, p, 1.0, ib)];
            let frac = |ec: usize, q: usize| -> f64 {
                if op.mat[ec][q] == PEC_INDEX {
                    0.0
                } else {
                    open.get(&(ec, q)).copied().unwrap_or(1.0)
                }
            };
            let f: Vec<f64> = loop_edges.iter().map(|&(ec, q, _, _)| frac(ec, q)).collect();
            if f.iter().all(|&x| x == 0.0) {
                continue; // wholly metal: H never changes
            }
            let mean = f.iter().sum::<f64>() / 4.0;
            let area = (fc.open as f64).max(floor * mean);
            let db = op.db as f64;
            let w: Vec<f64> = loop_edges.iter().zip(&f).map(|(&(_, _, s, inv), &fk)| -db * s * inv * (fk / area - 1.0)).collect();
            if w.iter().zip(&f).all(|(&x, &fk)| x == 0.0 || fk == 0.0) {
                continue; // the regular update already
            }
            t.comp.push(c as u8);
            t.idx.push(p as u32);
            for (&(ec, q, _, _), (&wk, &fk)) in loop_edges.iter().zip(w.iter().zip(&f)) {
                t.src_comp.push(ec as u8);
                t.src_idx.push(q as u32);
                // A PEC edge's E is zero: no weight (the bits then do not depend on it).
                t.src_w.push(if fk == 0.0 { 0.0 } else { wk as f32 });
            }
            reads.push(node_reads(op, c, pos));
        }
        t.carry = ECarry::build(&reads, op.len);
        t
    }
}

/// The change of each face in this step: add the pending change to its H
/// (twin of the CUDA kernel `fdtd_conformal`). `pending` is then this
/// step's `dh` for [`ECarry::apply`] (`fdtd_conformal_e`).
pub fn apply_h(t: &ConformalTerms, h: &mut [Vec<f32>; 3], pending: &[f32]) {
    for ((&c, &p), &dh) in t.comp.iter().zip(&t.idx).zip(pending) {
        let x = &mut h[c as usize][p as usize];
        *x += dh;
    }
}

/// At the end of a step, once every extension has set `E(n+1)`: each face's
/// change for the next step, `sum_k w_k E_k(n+1)` (twin of `fdtd_conformal_rec`).
pub fn record(t: &ConformalTerms, e: &[Vec<f32>; 3], pending: &mut [f32]) {
    for (m, x) in pending.iter_mut().enumerate() {
        let mut v = 0.0f32;
        for k in 4 * m..4 * m + 4 {
            v += t.src_w[k] * e[t.src_comp[k] as usize][t.src_idx[k] as usize];
        }
        *x = v;
    }
}

/// Power iterations of [`stiffness`]: the small-cell modes that set the
/// largest eigenvalue are local and well separated, so the estimate has
/// settled to a fraction of a per cent by then (`conformal_tests.rs`).
pub const POWER_ITERATIONS: usize = 300;

/// The estimate is taken this much higher before the time step is chosen
/// (power iteration approaches the largest eigenvalue from below).
pub const STIFFNESS_MARGIN: f64 = 1.02;

/// `dt^2` times the largest eigenvalue of the grid's curl-curl operator,
/// conformal faces included (leapfrog is stable while it stays below 4), by
/// power iteration from a seeded random E: each iteration is one H update
/// from that E alone and one E update from that H alone (CPML memories and
/// extensions other than the conformal faces left out: they only damp).
pub fn stiffness(op: &Operator, iters: usize) -> f64 {
    let mut f = Fields::new(op);
    let mut seed = 99u64;
    for comp in 0..3 {
        for p in 0..op.len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if op.mat[comp][p] != PEC_INDEX {
                f.e[comp][p] = ((seed >> 33) as f64 / (1u64 << 31) as f64 - 0.5) as f32;
            }
        }
    }
    let norm = |e: &[Vec<f32>; 3]| e.iter().flatten().map(|&x| (x as f64) * (x as f64)).sum::<f64>().sqrt();
    let mut pending = vec![0.0f32; op.conformal.len()];
    let mut rho = 0.0;
    let zero = |v: &mut Vec<f32>| v.iter_mut().for_each(|x| *x = 0.0);
    for _ in 0..iters {
        let n0 = norm(&f.e);
        if !(n0 > 0.0 && n0.is_finite()) {
            return rho;
        }
        for c in 0..3 {
            f.e[c].iter_mut().for_each(|x| *x = (*x as f64 / n0) as f32);
        }
        record(&op.conformal, &f.e, &mut pending);
        f.h.iter_mut().for_each(zero);
        f.psi_h.iter_mut().flatten().for_each(zero);
        f.psi_e.iter_mut().flatten().for_each(zero);
        fdtd_update_h(op, &mut f);
        fdtd_pmc_ghosts(op, &mut f);
        apply_h(&op.conformal, &mut f.h, &pending);
        f.e.iter_mut().for_each(zero);
        fdtd_update_e(op, &mut f);
        rho = norm(&f.e);
    }
    rho
}
