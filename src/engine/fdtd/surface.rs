//! Surface impedance: the FDTD extension for lossy metal (finite
//! conductivity, skin effect, roughness) on the faces of PEC-drawn solids,
//! sheets and domain walls.
//!
//! Metal stays PEC on the grid: its tangential E edges are zero. The field
//! a real conductor's face has, `E_t = Zs J_s` with `J_s = n x H`, enters
//! where that E would: in the Faraday update of each tangential H node half
//! a cell off the face, whose loop contains the face edge. Written out, the
//! face edge adds `-(Zs / d) H` to `mu0 dH/dt` (`d` the primal cell across
//! the face; the sign is that of a loss whichever side the metal is on), the
//! surface-impedance boundary of Beggs, Luebbers, Yee & Kunz ("Finite-
//! difference time-domain implementation of surface impedance boundary
//! conditions", IEEE T-AP 40(1), 1992) with H taken at the node, half a cell
//! off the face. An H node next to several lossy faces sums their `1/d`.
//!
//! `Zs(s)` is fitted over the job's band (`fit`) as a Foster network that is
//! passive by construction: `Zs = r0 + l0 s + sum_k r_k s / (s + p_k)`, every
//! coefficient non-negative (a resistor, an inductor, parallel R-L cells in
//! series). The exact impedance of a conducting slab has this form
//! (`x coth x = 1 + sum 2 x^2 / (x^2 + n^2 pi^2)`), so a few poles fit it
//! to a fraction of a percent over a band. Each cell is one first-order
//! memory `psi_k = s / (s + p_k) H`, advanced by the trapezoidal rule; `H` at
//! step n is the mean of its two half steps, so the update is implicit in
//! the node's own new value only: one scalar equation per node.
//!
//! Where it runs: after the Yee step and the port sources, before the edge
//! currents and the port samples. The step left `H*` (without the face term)
//! and an `E(n+1)` computed from `H*`; the pass solves for the node's true
//! `H`, stores it, and adds `cb curl(dH)` to the three or four E edges that
//! read the node, which is exactly what the E update would have given with
//! the true H (the update is linear). Every Yee kernel stays untouched, as
//! for the edge currents (CUDA twin: `fdtd_surface`, kernels/fdtd_surface.cuh).
//! Nodes within a cell of a CPML are left out (their E edges' stretched
//! memories would need the correction too); PMC mirror ghosts are handled by
//! counting the mirrored node's share in the face edge.

use crate::linalg;
use crate::job::{Boundary, Conductor, SimFailure, SimJob};
use num_complex::Complex64;
use std::f64::consts::PI;

use super::carry::{node_reads, ECarry};
use super::operator::{Operator, PEC_INDEX};
use rayon::prelude::*;

/// `Zs(s) = r0 + l0 s + sum_k r_k s / (s + p_k)` (ohms, s in rad/s).
#[derive(Debug, Clone, PartialEq)]
pub struct Foster {
    pub r0: f64,
    pub l0: f64,
    /// (r_k, p_k): parallel R-L cells with R = r_k, L = r_k / p_k.
    pub cells: Vec<(f64, f64)>,
    /// The largest error over the fitted band, relative to |Zs|: of the
    /// real part (the loss), and a fifth of that of the imaginary part (a
    /// fiftieth for a rough metal).
    pub err: f64,
}

impl Foster {
    pub fn z(&self, w: f64) -> Complex64 {
        let s = Complex64::new(0.0, w);
        self.r0 + self.l0 * s + self.cells.iter().map(|&(r, p)| r * s / (s + p)).sum::<Complex64>()
    }
}

/// Relative error a fit must reach over the band: the loss (Re Zs) is what
/// users read as insertion loss and Q, wanted to a per cent or better.
pub const FIT_TOL: f64 = 2e-3;
/// The same for a rough metal, whose roughness model is good to 10 % at best.
pub const FIT_TOL_ROUGH: f64 = 1e-2;

/// The tolerance of [`fit`] for conductor `c`.
pub fn fit_tol(c: &Conductor) -> f64 {
    if c.roughness > 0.0 { FIT_TOL_ROUGH } else { FIT_TOL }
}

/// Fit the surface impedance of `c` over `f_lo..f_hi` Hz with the fewest
/// poles (log-spaced from a decade below the band to a decade above) that
/// reach [`fit_tol`]; at most three per decade of that span.
pub fn fit(c: &Conductor, f_lo: f64, f_hi: f64) -> Foster {
    let (f_lo, f_hi) = (f_lo.min(f_hi).max(1.0), f_hi.max(f_lo));
    let f_hi = f_hi.max(f_lo * 1.05);
    let most = ((f_hi / f_lo).log10() + 2.0) * 3.0;
    let mut best: Option<Foster> = None;
    for n in 1..=most.ceil() as usize {
        let f = fit_n(c, f_lo, f_hi, n);
        let good = f.err < fit_tol(c);
        if best.as_ref().is_none_or(|b| f.err < b.err) {
            best = Some(f);
        }
        if good {
            break;
        }
    }
    best.expect("at least one fit")
}

fn fit_n(c: &Conductor, f_lo: f64, f_hi: f64, npoles: usize) -> Foster {
    let widen = 10f64.min(1.0 + npoles as f64 * 2.0);
    let (a, b) = ((f_lo / widen).log10(), (f_hi * widen).log10());
    let pk: Vec<f64> = if npoles == 1 {
        vec![2.0 * PI * (f_lo * f_hi).sqrt()]
    } else {
        (0..npoles).map(|k| 2.0 * PI * 10f64.powf(a + (b - a) * k as f64 / (npoles - 1) as f64)).collect()
    };
    let nw = 48;
    let ws: Vec<f64> = (0..nw).map(|i| 2.0 * PI * 10f64.powf(f_lo.log10() + (f_hi.log10() - f_lo.log10()) * i as f64 / (nw - 1) as f64)).collect();
    let wmax = ws[nw - 1];
    let zref = c.surface_impedance(wmax).norm();
    // Columns (all scaled to O(zref)): r0, l0 in units of zref / wmax, r_k.
    let column = |col: usize, w: f64| -> Complex64 {
        let s = Complex64::new(0.0, w);
        match col {
            0 => Complex64::from(zref),
            1 => zref * s / wmax,
            k => zref * s / (s + pk[k - 2]),
        }
    };
    let ncol = npoles + 2;
    let mut rows = vec![];
    let iw = im_weight(c);
    for &w in &ws {
        // Errors relative to |Zs|; the reactance weighs a fifth: the loss is
        // what a user reads, and a roughness factor on a causal Zs is not
        // causal, so the two parts cannot both be met then.
        let t = c.surface_impedance(w);
        let sc = t.norm();
        rows.push(((0..ncol).map(|k| column(k, w).re / sc).collect::<Vec<_>>(), t.re / sc));
        rows.push(((0..ncol).map(|k| iw * column(k, w).im / sc).collect::<Vec<_>>(), iw * t.im / sc));
    }
    let x = linalg::nnls(&rows, ncol, &[]);
    let mut f = Foster {
        r0: x[0] * zref,
        l0: x[1] * zref / wmax,
        cells: (0..npoles).filter(|&k| x[k + 2] > 0.0).map(|k| (x[k + 2] * zref, pk[k])).collect(),
        err: 0.0,
    };
    f.err = ws.iter().map(|&w| fit_error(&f, c, w)).fold(0.0, f64::max);
    f
}

/// How much less the reactance counts than the resistance in a fit: a
/// fifth for a smooth metal; for a rough one (whose Hammerstad factor on a
/// causal Zs is not causal) next to nothing, so that the loss is met and
/// the network's own causal reactance follows from it.
fn im_weight(c: &Conductor) -> f64 {
    if c.roughness > 0.0 { 0.02 } else { 0.2 }
}

/// The error measure of [`Foster::err`] at one frequency.
pub fn fit_error(f: &Foster, c: &Conductor, w: f64) -> f64 {
    let (z, t) = (f.z(w), c.surface_impedance(w));
    ((z.re - t.re).abs()).max(im_weight(c) * (z.im - t.im).abs()) / t.norm()
}

/// The surface-impedance terms of one job (struct of arrays, as uploaded to
/// the GPU). A term is one H node next to lossy metal.
#[derive(Debug, Clone, Default)]
pub struct SurfaceTerms {
    /// Per term: H component, flat index, conductor.
    pub comp: Vec<u8>,
    pub idx: Vec<u32>,
    pub metal: Vec<u8>,
    /// Per term: `k = db * sum(1/d)`, `1 / (1 + k A)` and `k B` of its conductor's `A`, `B`.
    pub k: Vec<f32>,
    pub inv_den: Vec<f32>,
    pub kb: Vec<f32>,
    /// The E edges reading some node, with the weights of the nodes' changes.
    pub carry: ECarry,
    /// Per term: the first of its memories (length terms + 1).
    pub first: Vec<u32>,
    /// Per conductor: its cells `cell_first[m]..cell_first[m+1]`.
    pub cell_first: Vec<u32>,
    /// Per cell: `psi(n+1/2) = alpha psi + beta (H(n+1/2) - H(n-1/2))`, and
    /// its weight `rho = r (1 + alpha) / 2` in `E(n)` from the old memory.
    pub alpha: Vec<f32>,
    pub beta: Vec<f32>,
    pub rho: Vec<f32>,
    /// Per conductor: the fitted network the cells above discretise (host
    /// only: the absorbed-power monitor weighs |H|^2 with its resistance).
    pub fits: Vec<Foster>,
}

/// The memories of a job's surface terms (part of its [`super::fields::Fields`]).
#[derive(Debug, Clone, Default)]
pub struct SurfaceState {
    /// Per term: the node's H after the previous step.
    pub h_prev: Vec<f32>,
    /// Per term and cell of its conductor.
    pub psi: Vec<f32>,
    /// Per term: the change of its node in this step (scratch between the
    /// two halves of a step).
    pub dh: Vec<f32>,
}

impl SurfaceState {
    pub fn new(t: &SurfaceTerms) -> SurfaceState {
        SurfaceState { h_prev: vec![0.0; t.len()], psi: vec![0.0; t.first.last().copied().unwrap_or(0) as usize], dh: vec![0.0; t.len()] }
    }
}

/// The band a job's conductors are fitted over: its frequencies.
pub fn band(job: &SimJob) -> (f64, f64) {
    let lo = job.freqs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = job.freqs.iter().copied().fold(0.0, f64::max);
    if lo.is_finite() && hi > 0.0 {
        (lo, hi)
    } else {
        (job.pulse.f0 * 0.5, job.pulse.f0 * 1.5)
    }
}

impl SurfaceTerms {
    pub fn len(&self) -> usize {
        self.comp.len()
    }
    pub fn is_empty(&self) -> bool {
        self.comp.is_empty()
    }

    /// Gather the surface terms of `job` on its operator (sheets and ports
    /// in place). Empty unless the job has lossy metal.
    pub fn build(job: &SimJob, op: &Operator) -> Result<SurfaceTerms, SimFailure> {
        let Some((mut t, ab)) = SurfaceTerms::networks(job, op)? else { return Ok(SurfaceTerms::default()) };
        let metal = edge_metals(job, op);
        let ctx = NodeCtx { job, op, metal: &metal, ab: &ab };
        // One (component, z plane) per task, concatenated in the sequential
        // scan's order (component, then flat index): the terms' order is the
        // GPU's too, so it must not depend on the thread count.
        let n = op.n;
        let mut nodes: Vec<NodeTerm> = vec![];
        for c in 0..3 {
            let mut hr = [n[0], n[1], n[2]];
            hr[c] = n[c] + 1;
            let planes: Vec<Vec<NodeTerm>> = (0..hr[2]).into_par_iter().map(|k| ctx.plane(c, k)).collect();
            nodes.extend(planes.into_iter().flatten());
        }
        t.assemble(&nodes, op.len);
        Ok(t)
    }

    /// The conductors' checked, fitted networks in the discrete form (the
    /// terms' per-cell arrays), with each conductor's `A`, `B`; `None`
    /// without lossy metal.
    fn networks(job: &SimJob, op: &Operator) -> Result<Option<Networks>, SimFailure> {
        let sf = &job.surfaces;
        if sf.is_empty() {
            return Ok(None);
        }
        let bad = |m: String| SimFailure::Invalid(format!("{}: {m}", job.label));
        for c in &sf.conductors {
            if !(c.sigma.is_finite() && c.sigma > 0.0) {
                return Err(bad(format!("conductor '{}': conductivity must be positive (got {} S/m)", c.name, c.sigma)));
            }
        }
        let mut t = SurfaceTerms::default();
        let (f_lo, f_hi) = band(job);
        let dt = op.dt;
        let mut ab = vec![];
        for c in &sf.conductors {
            let fit = fit(c, f_lo, f_hi);
            let mut a = fit.r0 / 2.0 + fit.l0 / dt;
            let mut b = fit.r0 / 2.0 - fit.l0 / dt;
            t.cell_first.push(t.alpha.len() as u32);
            for &(r, p) in &fit.cells {
                let (al, be) = ((1.0 - p * dt / 2.0) / (1.0 + p * dt / 2.0), 1.0 / (1.0 + p * dt / 2.0));
                a += r * be / 2.0;
                b -= r * be / 2.0;
                t.alpha.push(al as f32);
                t.beta.push(be as f32);
                t.rho.push((r * (1.0 + al) / 2.0) as f32);
            }
            ab.push((a, b));
            t.fits.push(fit);
        }
        t.cell_first.push(t.alpha.len() as u32);
        Ok(Some((t, ab)))
    }

    /// Append one node's term and the range of its metal's cell memories
    /// (`first` must hold the previous term's end).
    fn push_term(&mut self, x: &NodeTerm) {
        self.comp.push(x.comp);
        self.idx.push(x.idx);
        self.metal.push(x.metal);
        self.k.push(x.k);
        self.inv_den.push(x.inv_den);
        self.kb.push(x.kb);
        let cells = self.cell_first[x.metal as usize + 1] - self.cell_first[x.metal as usize];
        self.first.push(self.first.last().unwrap() + cells);
    }

    /// Append the terms `nodes` (in scan order) and their E edges' gather
    /// lists: edges ascending by (component, flat index), each edge's nodes
    /// in term order.
    fn assemble(&mut self, nodes: &[NodeTerm], len: usize) {
        let t = self;
        t.first.push(0);
        for x in nodes {
            t.push_term(x);
        }
        let reads: Vec<[(u8, u32, f32); 4]> = nodes.iter().map(|x| x.reads).collect();
        t.carry = ECarry::build(&reads, len);
    }
}

/// The terms with only their per-cell arrays filled, and each conductor's `A`, `B`.
type Networks = (SurfaceTerms, Vec<(f64, f64)>);

/// One H node's surface term before assembly: its node, conductor,
/// coefficients, and the four E edges that read it (weight 0: none).
#[derive(Debug, Clone, PartialEq)]
struct NodeTerm {
    comp: u8,
    idx: u32,
    metal: u8,
    k: f32,
    inv_den: f32,
    kb: f32,
    reads: [(u8, u32, f32); 4],
}

/// What deciding one node's term needs: the job, its operator, the lossy
/// metal of every E edge and each conductor's discrete `A`, `B`.
struct NodeCtx<'a> {
    job: &'a SimJob,
    op: &'a Operator,
    metal: &'a [Vec<u8>; 3],
    ab: &'a [(f64, f64)],
}

impl NodeCtx<'_> {
    /// The terms of H component `c` in z plane `k`, in flat order.
    fn plane(&self, c: usize, k: usize) -> Vec<NodeTerm> {
        let (op, metal) = (self.op, self.metal);
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let (sa, sb) = (op.stride[a], op.stride[b]);
        let (ma, mb) = (&metal[a], &metal[b]);
        let mut hr = op.n;
        hr[c] += 1;
        let mut out = vec![];
        for j in 0..hr[1] {
            let row = op.at(0, j as isize, k as isize);
            for i in 0..hr[0] {
                // Most nodes touch no lossy metal: that test inline, the rest in `term`.
                let p = row + i;
                if (mb[p] | mb[p + sa] | ma[p] | ma[p + sb]) == 0 {
                    continue;
                }
                out.extend(self.term(c, [i, j, k]));
            }
        }
        out
    }

    /// The term of H component `c` at node `pos`, if it lies next to a lossy
    /// face (and outside the CPML and its first neighbour).
    fn term(&self, c: usize, pos: [usize; 3]) -> Option<NodeTerm> {
        let (job, op, metal) = (self.job, self.op, self.metal);
        let n = op.n;
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let (sa, sb) = (op.stride[a], op.stride[b]);
        let p = op.at(pos[0] as isize, pos[1] as isize, pos[2] as isize);
        let edges = [(b, p, a, pos[a]), (b, p + sa, a, pos[a]), (a, p, b, pos[b]), (a, p + sb, b, pos[b])];
        if edges.iter().all(|&(ec, q, _, _)| metal[ec][q] == 0) {
            return None;
        }
        // Outside the CPML and its first neighbour on every axis that has one.
        let clear = (0..3).all(|ax| (job.pml[ax][0] == 0 || pos[ax] > job.pml[ax][0]) && (job.pml[ax][1] == 0 || pos[ax] + job.pml[ax][1] + 2 <= n[ax]));
        if !clear || edges.iter().all(|&(ec, q, _, _)| op.mat[ec][q] == PEC_INDEX) {
            return None; // in the CPML, or inside metal or on its face: always zero
        }
        // Lossy faces among the loop's edges: 1/d per face, by conductor.
        // (Two different metals on one node: all faces take the dominant one's Zs.)
        // (At most four, on the stack: this runs for every node beside metal.)
        let (mut g, mut ng) = ([(0usize, 0.0f64); 4], 0);
        for &(ec, q, ax, qa) in &edges {
            let m = metal[ec][q];
            if m > 0 && op.mat[ec][q] == PEC_INDEX {
                let d = op.inv_h[ax][qa + 1] as f64;
                match g[..ng].iter_mut().find(|x| x.0 == m as usize - 1) {
                    Some(x) => x.1 += d,
                    None => {
                        g[ng] = (m as usize - 1, d);
                        ng += 1;
                    }
                }
            }
        }
        let g = &g[..ng];
        let &(m, _) = g.iter().max_by(|x, y| x.1.total_cmp(&y.1))?;
        let gsum: f64 = g.iter().map(|x| x.1).sum();
        let kk = op.db as f64 * gsum;
        let (aa, bb) = self.ab[m];
        Some(NodeTerm {
            comp: c as u8,
            idx: p as u32,
            metal: m as u8,
            k: kk as f32,
            inv_den: (1.0 / (1.0 + kk * aa)) as f32,
            kb: (kk * bb) as f32,
            reads: node_reads(op, c, pos),
        })
    }
}

/// Per E component and flat index: 1 + the conductor of the lossy metal
/// the edge lies on (0: none or perfect). Lossy solids mark the twelve edges
/// of each of their cells, lossy sheets their edges, lossy PEC domain faces
/// the edges lying in them.
fn edge_metals(job: &SimJob, op: &Operator) -> [Vec<u8>; 3] {
    let sf = &job.surfaces;
    let mut out = [vec![0u8; op.len], vec![0u8; op.len], vec![0u8; op.len]];
    let n = op.n;
    let by_mat: Vec<u8> = (0..job.materials.len()).map(|m| sf.of_material(m as u8).map_or(0, |c| c + 1)).collect();
    if by_mat.iter().any(|&m| m > 0) {
        let cell_metal = |q: [isize; 3]| -> u8 {
            if (0..3).all(|a| q[a] >= 0 && (q[a] as usize) < n[a]) {
                by_mat[job.cell_mat[job.mesh.idx(q[0] as usize, q[1] as usize, q[2] as usize)] as usize]
            } else {
                0
            }
        };
        for (c, out) in out.iter_mut().enumerate() {
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let mut hi = [n[0], n[1], n[2]];
            hi[c] = n[c] - 1;
            // The edge's four cells in ascending cell index (the lower along
            // the axis of larger stride first).
            let order: [(isize, isize); 4] = if a < b { [(1, 1), (0, 1), (1, 0), (0, 0)] } else { [(1, 1), (1, 0), (0, 1), (0, 0)] };
            // Gathered per edge, one padded z plane per task: an edge takes
            // the metal of the last of its four cells (in cell order) that is
            // lossy, as painting cell after cell would leave it.
            out.par_chunks_mut(op.stride[2]).enumerate().for_each(|(kp, plane)| {
                let k = kp as isize - 1;
                if k < 0 || k > hi[2] as isize {
                    return;
                }
                for j in 0..=hi[1] as isize {
                    for i in 0..=hi[0] as isize {
                        let p = [i, j, k];
                        let mut m = 0;
                        for (da, db) in order {
                            let mut q = p;
                            q[a] -= da;
                            q[b] -= db;
                            let x = cell_metal(q);
                            if x > 0 {
                                m = x;
                            }
                        }
                        plane[op.at3(p) - kp * op.stride[2]] = m;
                    }
                }
            });
        }
    }
    mark_sheets_and_walls(job, op, &mut out);
    out
}

/// Lossy sheets and PEC domain faces over the solids' marks of [`edge_metals`].
fn mark_sheets_and_walls(job: &SimJob, op: &Operator, out: &mut [Vec<u8>; 3]) {
    let (sf, n) = (&job.surfaces, op.n);
    for &(si, m) in &sf.sheets {
        for (c, flat) in op.sheet_edges(&job.sheets[si]) {
            out[c][flat] = m + 1;
        }
    }
    for ax in 0..3 {
        for side in 0..2 {
            let Some(m) = sf.walls[ax][side] else { continue };
            if job.boundaries[ax][side] != Boundary::Pec {
                continue;
            }
            let at = if side == 0 { 0 } else { n[ax] as isize };
            // The E edges lying in the face: its plane only.
            for c in (0..3).filter(|&c| c != ax) {
                let o = 3 - c - ax;
                let mut p = [0isize; 3];
                p[ax] = at;
                for ic in 0..n[c] as isize {
                    for io in 0..=n[o] as isize {
                        p[c] = ic;
                        p[o] = io;
                        out[c][op.at3(p)] = m + 1;
                    }
                }
            }
        }
    }
}

/// First half of a step of the surface terms: solve each node's H and
/// advance its memories (twin of the CUDA kernel `fdtd_surface`).
pub fn apply_h(t: &SurfaceTerms, h: &mut [Vec<f32>; 3], st: &mut SurfaceState) {
    // Slices and zips rather than indices: no bounds check in the inner
    // loops (this pass touches every H node of a 2.5D guide every step).
    let cells: Vec<(&[f32], &[f32], &[f32])> = (0..t.cell_first.len().saturating_sub(1))
        .map(|m| {
            let (c0, c1) = (t.cell_first[m] as usize, t.cell_first[m + 1] as usize);
            (&t.rho[c0..c1], &t.alpha[c0..c1], &t.beta[c0..c1])
        })
        .collect();
    let terms = t.comp.iter().zip(&t.idx).zip(&t.metal).zip(t.first.windows(2)).zip(t.inv_den.iter().zip(&t.kb).zip(&t.k));
    let state = st.h_prev.iter_mut().zip(st.dh.iter_mut());
    for (((((&c, &p), &m), w), ((&inv_den, &kb), &k)), (h_prev, dh)) in terms.zip(state) {
        let (rho, alpha, beta) = cells[m as usize];
        let psi = &mut st.psi[w[0] as usize..w[1] as usize];
        let x = &mut h[c as usize][p as usize];
        let h_star = *x;
        let h_old = *h_prev;
        let rest = rho.iter().zip(psi.iter()).fold(0.0f32, |acc, (r, s)| acc + r * s);
        let h_new = inv_den * (h_star - kb * h_old - k * rest);
        let dh_t = h_new - h_old;
        for ((s, a), b) in psi.iter_mut().zip(alpha).zip(beta) {
            *s = a * *s + b * dh_t;
        }
        *h_prev = h_new;
        *x = h_new;
        *dh = h_new - h_star;
    }
}

/// Second half: carry each node's change into the E edges that read it
/// (twin of the CUDA kernel `fdtd_surface_e`).
pub fn apply_e(t: &SurfaceTerms, e: &mut [Vec<f32>; 3], st: &SurfaceState) {
    t.carry.apply(e, &st.dh);
}

#[cfg(test)]
#[path = "surface_serial.rs"]
mod serial;
