//! CPU Yee FDTD engine (the reference every other backend is compared with).
//! Each function named `fdtd_*` is the CPU twin of the CUDA kernel of the
//! same name in `kernels/fdtd.cu` (or a header it includes), with the
//! arithmetic written in the same order so that the two agree to float
//! rounding. Planes along z are updated in parallel with rayon, each thread
//! writing its own planes (no `unsafe`).

use rayon::prelude::*;

use super::fields::Fields;
use super::operator::{Cpml1d, Operator};
use crate::consts::{EPS0, MU0};
use crate::job::{Axis, PortTrace};

// The stepping of whole jobs lives in cpu_batch.rs (the one loop); kept here by name.
pub use super::cpu_batch::{run, run_from, run_watched, run_with};

/// Grids smaller than this run their planes on one thread: for small designs
/// the parallelism comes from running the batch's jobs side by side instead.
const PAR_MIN_CELLS: usize = 100_000;

/// One z plane of an array, or nothing where the array is empty (a CPML
/// memory along an axis without PML).
type PlaneMut<'a> = Option<&'a mut [f32]>;

/// The planes (of `plane` elements) of an array, `None` for each when it is empty.
fn planes_of(v: &mut [f32], plane: usize, count: usize) -> Vec<PlaneMut<'_>> {
    if v.is_empty() {
        (0..count).map(|_| None).collect()
    } else {
        v.chunks_mut(plane).map(Some).collect()
    }
}

/// Run `f(kz, out, psi_a, psi_b)` for every array plane kz in `1..=planes`
/// (logical planes 0..planes), each with its own plane of the written array
/// and of the two CPML memories: the planes are disjoint, so they run in
/// parallel for large grids with no shared mutable state.
fn for_planes<F>(op: &Operator, planes: usize, out: &mut [f32], pa: &mut [f32], pb: &mut [f32], f: F)
where
    F: Fn(usize, &mut [f32], PlaneMut, PlaneMut) + Sync + Send,
{
    let s2 = op.stride[2];
    let count = op.dims[2];
    let work = out.chunks_mut(s2).zip(planes_of(pa, s2, count)).zip(planes_of(pb, s2, count)).enumerate().filter(|(kz, _)| (1..=planes).contains(kz));
    if op.len >= PAR_MIN_CELLS {
        work.collect::<Vec<_>>().into_par_iter().for_each(|(kz, ((o, a), b))| f(kz, o, a, b));
    } else {
        work.for_each(|(kz, ((o, a), b))| f(kz, o, a, b));
    }
}
/// Logical ranges of component c: half-integer along c (0..n_c), nodes elsewhere (0..=n).
pub(super) fn e_range(op: &Operator, c: usize) -> [usize; 3] {
    let mut r = [op.n[0] + 1, op.n[1] + 1, op.n[2] + 1];
    r[c] = op.n[c];
    r
}
pub(super) fn h_range(op: &Operator, c: usize) -> [usize; 3] {
    let mut r = [op.n[0], op.n[1], op.n[2]];
    r[c] = op.n[c] + 1;
    r
}

/// The span `ilo..ihi` of row (j, k) where neither derivative axis is inside
/// a CPML, so the plain update applies; empty when the row itself is in one.
pub(super) fn plain_span(op: &Operator, axes: [usize; 2], j: usize, k: usize, len: usize, e_side: bool) -> (usize, usize) {
    let inside = |cp: &Cpml1d, pos: usize| if e_side { cp.e_b[pos] > 0.0 } else { cp.h_b[pos] > 0.0 };
    let (mut lo, mut hi) = (0, len);
    for ax in axes {
        if let Some(cp) = &op.pml[ax] {
            match ax {
                1 if inside(cp, j) => return (0, 0),
                2 if inside(cp, k) => return (0, 0),
                0 => {
                    let n = if e_side { cp.e_b.len() } else { cp.h_b.len() };
                    while lo < len.min(n) && inside(cp, lo) {
                        lo += 1;
                    }
                    while hi > lo && hi <= n && inside(cp, hi - 1) {
                        hi -= 1;
                    }
                }
                _ => {}
            }
        }
    }
    (lo, hi)
}

/// One CPML-stretched derivative: inside the layer (b > 0) `psi = b psi + c t`
/// and the result is `t * kinv + psi`; elsewhere `t`. `psi` is the memory at
/// this position (present whenever `cp` is).
#[inline(always)]
pub(super) fn stretch(t: f32, pos: usize, cp: Option<&Cpml1d>, e_side: bool, psi: Option<&mut f32>) -> f32 {
    match (cp, psi) {
        (Some(cp), Some(s)) => {
            let (b, c, kinv) = if e_side { (cp.e_b[pos], cp.e_c[pos], cp.e_kinv[pos]) } else { (cp.h_b[pos], cp.h_c[pos], cp.h_kinv[pos]) };
            if b > 0.0 {
                *s = b * *s + c * t;
                t * kinv + *s
            } else {
                t
            }
        }
        _ => t,
    }
}

/// The CPML memories of component c along its two derivative axes (a, b) =
/// (c+1, c+2) mod 3, borrowed together.
fn psi_pair(psi: &mut [Vec<f32>; 3], c: usize) -> (&mut [f32], &mut [f32]) {
    let [x, y, z] = psi;
    match c {
        0 => (y, z),
        1 => (z, x),
        _ => (x, y),
    }
}

/// The inverse spacing along `axis` at logical position `pos` of an update
/// (padded index pos + 1).
#[inline(always)]
fn inv_at(inv: &[f32], pos: usize) -> f32 {
    inv[pos + 1]
}

/// H half-step: `H_c -= db * (dE_b/da - dE_a/db)`, (a, b) cyclic after c; each
/// difference over the primal spacing of the cell between its two E samples.
pub fn fdtd_update_h(op: &Operator, f: &mut Fields) {
    for c in 0..3 {
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let r = h_range(op, c);
        let (sa, sb, s2) = (op.stride[a], op.stride[b], op.stride[2]);
        let (ea, eb) = (&f.e[a], &f.e[b]);
        let (cpa, cpb) = (op.pml[a].as_ref(), op.pml[b].as_ref());
        let (inv_a, inv_b, db) = (&op.inv_h[a], &op.inv_h[b], op.db);
        let (pa, pb) = psi_pair(&mut f.psi_h[c], c);
        for_planes(op, r[2], &mut f.h[c], pa, pb, |kz, hc, mut psa, mut psb| {
            let k = kz - 1;
            let base = kz * s2;
            for j in 0..r[1] {
                let p0 = op.at(0, j as isize, k as isize);
                if !op.h_rows[c][p0 / op.stride[1]] {
                    continue;
                }
                let (ilo, ihi) = plain_span(op, [a, b], j, k, r[0], false);
                for i in (0..ilo).chain(ihi..r[0]) {
                    let p = p0 + i;
                    let pos = [i, j, k];
                    let t1 = (eb[p + sa] - eb[p]) * inv_at(inv_a, pos[a]);
                    let t2 = (ea[p + sb] - ea[p]) * inv_at(inv_b, pos[b]);
                    let t1 = stretch(t1, pos[a], cpa, false, psa.as_deref_mut().map(|s| &mut s[p - base]));
                    let t2 = stretch(t2, pos[b], cpb, false, psb.as_deref_mut().map(|s| &mut s[p - base]));
                    hc[p - base] -= db * (t1 - t2);
                }
                // Outside the CPML: the same arithmetic without the stretching.
                for i in ilo..ihi {
                    let p = p0 + i;
                    let pos = [i, j, k];
                    let t1 = (eb[p + sa] - eb[p]) * inv_at(inv_a, pos[a]);
                    let t2 = (ea[p + sb] - ea[p]) * inv_at(inv_b, pos[b]);
                    hc[p - base] -= db * (t1 - t2);
                }
            }
        });
    }
}

/// PMC faces: ghost H tangential to the face mirrors (negates) its neighbour,
/// so the E update sees zero tangential H on the face.
pub fn fdtd_pmc_ghosts(op: &Operator, f: &mut Fields) {
    for ax in 0..3 {
        for side in 0..2 {
            if !op.pmc[ax][side] {
                continue;
            }
            for c in 0..3 {
                if c == ax {
                    continue;
                }
                let r = h_range(op, c);
                let (ghost, inner) = if side == 0 { (-1isize, 0isize) } else { (op.n[ax] as isize, op.n[ax] as isize - 1) };
                let (u, v) = ((ax + 1) % 3, (ax + 2) % 3);
                for iu in 0..r[u] {
                    for iv in 0..r[v] {
                        let mut p = [0isize; 3];
                        p[u] = iu as isize;
                        p[v] = iv as isize;
                        p[ax] = inner;
                        let src = op.at3(p);
                        p[ax] = ghost;
                        let dst = op.at3(p);
                        f.h[c][dst] = -f.h[c][src];
                    }
                }
            }
        }
    }
}

/// E full step: `E_c = ca E_c + cb (dH_b/da - dH_a/db)` through the material
/// table; each difference over the dual spacing around the E sample's line.
pub fn fdtd_update_e(op: &Operator, f: &mut Fields) {
    for c in 0..3 {
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let r = e_range(op, c);
        let (sa, sb, s2) = (op.stride[a], op.stride[b], op.stride[2]);
        let (ha, hb) = (&f.h[a], &f.h[b]);
        let (cpa, cpb) = (op.pml[a].as_ref(), op.pml[b].as_ref());
        let (inv_a, inv_b) = (&op.inv_e[a], &op.inv_e[b]);
        let mat = &op.mat[c];
        let (ca, cb) = (&op.ca, &op.cb);
        let (pa, pb) = psi_pair(&mut f.psi_e[c], c);
        for_planes(op, r[2], &mut f.e[c], pa, pb, |kz, ec, mut psa, mut psb| {
            let k = kz - 1;
            let base = kz * s2;
            for j in 0..r[1] {
                let p0 = op.at(0, j as isize, k as isize);
                if !op.e_rows[c][p0 / op.stride[1]] {
                    continue;
                }
                let (ilo, ihi) = plain_span(op, [a, b], j, k, r[0], true);
                for i in (0..ilo).chain(ihi..r[0]) {
                    let p = p0 + i;
                    let pos = [i, j, k];
                    let t1 = (hb[p] - hb[p - sa]) * inv_at(inv_a, pos[a]);
                    let t2 = (ha[p] - ha[p - sb]) * inv_at(inv_b, pos[b]);
                    let t1 = stretch(t1, pos[a], cpa, true, psa.as_deref_mut().map(|s| &mut s[p - base]));
                    let t2 = stretch(t2, pos[b], cpb, true, psb.as_deref_mut().map(|s| &mut s[p - base]));
                    let m = mat[p] as usize;
                    let e = &mut ec[p - base];
                    *e = ca[m] * *e + cb[m] * (t1 - t2);
                }
                // Outside the CPML: the same arithmetic without the stretching.
                for i in ilo..ihi {
                    let p = p0 + i;
                    let pos = [i, j, k];
                    let t1 = (hb[p] - hb[p - sa]) * inv_at(inv_a, pos[a]);
                    let t2 = (ha[p] - ha[p - sb]) * inv_at(inv_b, pos[b]);
                    let m = mat[p] as usize;
                    let e = &mut ec[p - base];
                    *e = ca[m] * *e + cb[m] * (t1 - t2);
                }
            }
        });
    }
}

/// One whole Yee step (twin of the fused CUDA kernel `fdtd_step`): H half
/// step, PMC ghosts, E full step.
pub fn fdtd_step(op: &Operator, f: &mut Fields) {
    fdtd_update_h(op, f);
    fdtd_pmc_ghosts(op, f);
    fdtd_update_e(op, f);
}

/// Two whole steps, the first with the driven port's source `g` and the port
/// sample, for jobs without edge currents (twin of the CUDA kernel `fdtd_step2`, the two-step pass of slim
/// designs, which folds the first step's source and sample into the pass;
/// the second step's source and sample are the usual fdtd_inject and
/// fdtd_sample_ports after it).
pub fn fdtd_step2(op: &Operator, f: &mut Fields, drive: usize, g: f64, traces: &mut [PortTrace]) {
    fdtd_step(op, f);
    fdtd_inject(op, f, drive, g);
    fdtd_sample_ports(op, f, traces);
    fdtd_step(op, f);
}

/// `k` whole steps from step `n` with the driven port's source and the port
/// monitor, then the energy, for jobs without edge currents (twin of the on-chip CUDA kernel `fdtd_onchip`,
/// which runs a chunk of the stepping loop in one launch and sums the energy
/// after every check inside it as here after the k-th step): the order of
/// [`super::cpu_batch::CpuBatch`]'s advance and end of chunk.
pub fn fdtd_onchip(op: &Operator, f: &mut Fields, drive: usize, pulse: &crate::job::Pulse, n: usize, k: usize, traces: &mut [PortTrace]) -> f64 {
    for s in n..n + k {
        fdtd_step(op, f);
        fdtd_inject(op, f, drive, pulse.value((s as f64 + 0.5) * op.dt));
        fdtd_sample_ports(op, f, traces);
    }
    fdtd_energy(op, f)
}

/// Add the source of port `d` (the driven one) at time t (the middle of the E step).
pub fn fdtd_inject(op: &Operator, f: &mut Fields, d: usize, g: f64) {
    if d >= op.lumped.len() {
        return;
    }
    if let Some(l) = &op.lumped[d] {
        // Resistive voltage source of 1 V peak spread over the edges in series.
        let vs = (g / l.len as f64) as f32;
        for (&p, &src) in l.edges.iter().zip(&l.src) {
            f.e[l.comp][p] -= src * vs;
        }
    }
    if let Some(w) = &op.guides[d] {
        let g = g as f32;
        for (&p, &amp) in w.src_idx.iter().zip(&w.src_amp) {
            f.e[w.comp_e][p] += amp * g;
        }
    }
}

/// The faces cut by conformal metal after the step and the sources, before
/// the lossy faces: their pending change (twin of the CUDA kernel
/// `fdtd_conformal`), then the E edges that read them ([`fdtd_conformal_e`]).
pub fn fdtd_conformal(op: &Operator, f: &mut Fields) {
    if !op.conformal.is_empty() {
        super::conformal::apply_h(&op.conformal, &mut f.h, &f.conformal);
        fdtd_conformal_e(op, f);
    }
}

/// The second half of [`fdtd_conformal`] (twin of the CUDA kernel `fdtd_conformal_e`).
pub fn fdtd_conformal_e(op: &Operator, f: &mut Fields) {
    op.conformal.carry.apply(&mut f.e, &f.conformal);
}

/// The end of a step, once `E(n+1)` is final: each conformal face's change
/// for the next step (twin of the CUDA kernel `fdtd_conformal_rec`).
pub fn fdtd_conformal_rec(op: &Operator, f: &mut Fields) {
    if !op.conformal.is_empty() {
        super::conformal::record(&op.conformal, &f.e, &mut f.conformal);
    }
}

/// The lossy metal faces after the step and the sources, before the edge
/// currents: their H nodes (twin of the CUDA kernel `fdtd_surface`), then
/// the E edges that read them ([`fdtd_surface_e`]).
pub fn fdtd_surface(op: &Operator, f: &mut Fields) {
    if !op.surface.is_empty() {
        super::surface::apply_h(&op.surface, &mut f.h, &mut f.surface);
        fdtd_surface_e(op, f);
    }
}

/// The second half of [`fdtd_surface`] (twin of the CUDA kernel `fdtd_surface_e`).
pub fn fdtd_surface_e(op: &Operator, f: &mut Fields) {
    super::surface::apply_e(&op.surface, &mut f.e, &f.surface);
}

/// The edge currents (dispersive media, lumped loads) after the step and the
/// sources, before the port samples (twin of the CUDA kernel `fdtd_edges`).
pub fn fdtd_edges(op: &Operator, f: &mut Fields) {
    if !op.edges.is_empty() {
        super::edges::apply(&op.edges, &mut f.e, &mut f.edges);
    }
}

/// The field DFT monitors' per-step hook after step `n` (0-based), once the
/// sources and the ports are done: each monitor adds its samples times the
/// step's phase factors (`super::dft`).
pub fn fdtd_dft(f: &Fields, monitors: &mut [super::dft::FieldDftMonitor], n: usize) {
    for m in monitors {
        m.accumulate(f, n);
    }
}

/// Port voltage (E at the current full step) and current (H half a step earlier).
pub fn fdtd_sample_ports(op: &Operator, f: &Fields, traces: &mut [PortTrace]) {
    for (pi, tr) in traces.iter_mut().enumerate() {
        if let Some(l) = &op.lumped[pi] {
            let v: f64 = -l.edges.iter().zip(&l.w).map(|(&p, &w)| w * f.e[l.comp][p] as f64).sum::<f64>() * l.dl;
            let c = l.comp;
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let p = l.mid;
            let i = (f.h[b][p] as f64 - f.h[b][p - op.stride[a]] as f64) * l.loop_d[1]
                - (f.h[a][p] as f64 - f.h[a][p - op.stride[b]] as f64) * l.loop_d[0];
            tr.v.push(v);
            tr.i.push(i);
        } else if let Some(w) = &op.guides[pi] {
            let (ee, hh) = (&f.e[w.comp_e], &f.h[w.comp_h]);
            let mut v = 0.0;
            let mut i = 0.0;
            for m in 0..w.v_idx.len() {
                v += w.weight[m] * ee[w.v_idx[m]] as f64;
                i += w.weight[m] * 0.5 * (hh[w.h_lo[m]] as f64 + hh[w.h_hi[m]] as f64);
            }
            tr.v.push(v);
            tr.i.push(w.i_sign * i);
        }
    }
}

/// Electromagnetic energy (up to a constant volume), in f64: every sample
/// weighted by the volume of its own (dual) cell relative to the first cells'
/// (a weight of exactly 1 on a uniform mesh).
///
/// Each plane's samples are summed in flat order, the planes' sums by rayon
/// as before (bit for bit the same energy). Samples that are zero
/// (±0.0) are left out: each would add +0.0 to a sum that is ±0.0 or
/// positive, which changes nothing but the sign of an all-zero plane's sum,
/// and that vanishes in the total. So rows of zeros (PEC, ghosts, the idle
/// components of a 2.5D design) cost one vector test each.
pub fn fdtd_energy(op: &Operator, f: &Fields) -> f64 {
    let (s2, d0) = (op.stride[2], op.dims[0]);
    let mut tot = 0.0;
    for c in 0..3 {
        // The relative volume of a sample of an own-axis-c array: `along` on
        // axis c, `across` on the others; (w_x w_y) w_z as the product of the three.
        let axes = |along: &[Vec<f32>; 3], across: &[Vec<f32>; 3]| -> [Vec<f64>; 3] { std::array::from_fn(|x| if x == c { &along[x] } else { &across[x] }.iter().map(|&w| w as f64).collect()) };
        let we = axes(&op.rel_h, &op.rel_e);
        let wh = axes(&op.rel_e, &op.rel_h);
        let (e, m) = (&f.e[c], &op.mat[c]);
        let e_plane = |kz: usize| -> f64 {
            let (ee, mm) = (&e[kz * s2..(kz + 1) * s2], &m[kz * s2..(kz + 1) * s2]);
            nonzero_rows(ee, d0, |mut s, j, i0, r| {
                let (wy, wz) = (we[1][j], we[2][kz]);
                let (w0, mr) = (&we[0][..r.len()], &mm[i0..i0 + r.len()]);
                for ((&x, &k), &wx) in r.iter().zip(mr).zip(w0) {
                    if x != 0.0 {
                        s += op.eps[k as usize] as f64 * (x as f64) * (x as f64) * (wx * wy * wz);
                    }
                }
                s
            })
        };
        tot += sum_planes(op, e_plane) * EPS0;
        let h = &f.h[c];
        let h_plane = |kz: usize| -> f64 {
            nonzero_rows(&h[kz * s2..(kz + 1) * s2], d0, |mut s, j, _, r| {
                let (wy, wz) = (wh[1][j], wh[2][kz]);
                for (&x, &wx) in r.iter().zip(&wh[0][..r.len()]) {
                    if x != 0.0 {
                        s += (x as f64) * (x as f64) * (wx * wy * wz);
                    }
                }
                s
            })
        };
        tot += sum_planes(op, h_plane) * MU0;
    }
    tot
}

/// The in-order sum of a plane's nonzero samples (`v`, rows of `row`),
/// starting at -0.0 as `Iterator::sum`: per row with any sample not ±0.0
/// (NaN and infinities count), `row_sum(s, j, first flat index, samples)`
/// adds the row's nonzero terms one by one to the running sum s.
#[inline(always)]
fn nonzero_rows(v: &[f32], row: usize, row_sum: impl Fn(f64, usize, usize, &[f32]) -> f64) -> f64 {
    let mut s = -0.0f64;
    for (j, r) in v.chunks_exact(row).enumerate() {
        // The bits without the sign.
        if r.iter().fold(0u32, |a, &x| a | (x.to_bits() << 1)) != 0 {
            s = row_sum(s, j, j * row, r);
        }
    }
    s
}

/// `plane(kz)` over every array plane, summed by rayon as the planes of the
/// arrays always were (`par_chunks(plane).map(..).sum()`: the same length,
/// so the same split points and the same additions).
fn sum_planes(op: &Operator, plane: impl Fn(usize) -> f64 + Sync) -> f64 {
    (0..op.dims[2]).into_par_iter().map(|kz| plane(kz)).sum::<f64>()
}

/// Where the first non-finite value is, for the error message.
pub(crate) fn locate_non_finite(op: &Operator, f: &Fields) -> String {
    for (name, arrs) in [("E", &f.e), ("H", &f.h)] {
        for c in 0..3 {
            if let Some(p) = arrs[c].iter().position(|x| !x.is_finite()) {
                let (i, j, k) = (p % op.dims[0], (p / op.dims[0]) % op.dims[1], p / op.stride[2]);
                return format!("{name}{} at cell ({}, {}, {})", Axis::from_index(c).name(), i as isize - 1, j as isize - 1, k as isize - 1);
            }
        }
    }
    "port signals".into()
}
