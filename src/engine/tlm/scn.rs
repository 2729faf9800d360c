//! 3D TLM with the stub-loaded symmetrical condensed node (SCN) on the CPU.
//!
//! One node per cell, at its centre. The state is the 12 reflected link
//! pulses per node (one contiguous f32 array per link, double-buffered: each
//! step gathers the incident pulses from the neighbours' previous reflections
//! and scatters them, so z-slabs update in parallel without races), plus six
//! stub arrays when any node is loaded. Walls (domain faces, PEC cells,
//! sheets) sit halfway between nodes and reflect a node's own pulse.
//!
//! Time step: the largest for which every stub is non-negative,
//! `dt = min(eps_r, mu_r) * min_e(d_a d_b / d_e) / (2 c)`; cubic vacuum cells
//! then need no stubs (`dt = d / 2c`). Port conventions follow `crate::job`.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::common::{self, check_job, gamma, modal_port, pad_sigmas, Lattice, ModalEnd, WgPort};
use super::pack::{scale_traces, check_kinds, PackEnd, PackLumped, PackSpecial, PackWg, TlmPack, COEF3, META_KIND_SHIFT};
#[cfg(test)]
use super::scn_node::scatter_plain;
use super::scn_node::{link, pol_of, scatter_loaded, shunt_sum, stub_energy, Coef, E_LINKS};
use super::scn_geo::{face_bit, node_runs, short_bit, Geo, DEAD, SPECIAL};
use super::scn_runs::sweep_plane_runs;
use crate::consts::{C0, ETA0};
use crate::engine::StepWatch;
use crate::job::{Boundary, PortKind, PortTrace, SimFailure, SimJob, SimOutput};

/// The node mesh: geometry and state.
pub(crate) struct Mesh {
    pub geo: Geo,
    pub dt: f64,
    pub b: [Vec<f32>; 12],
    pub nb: [Vec<f32>; 12],
    pub cap: [Vec<f32>; 3],
    pub ind: [Vec<f32>; 3],
}

fn key(c: &Coef) -> [u32; 24] {
    let mut k = [0u32; 24];
    for (o, x) in k.iter_mut().zip(c.y.iter().chain(&c.ky).chain(&c.z).chain(&c.kz).chain(c.gface.iter().flatten())) {
        *o = x.to_bits();
    }
    k
}

impl Mesh {
    pub fn new(job: &SimJob) -> Result<Mesh, SimFailure> {
        let (geo, dt) = Geo::build(job)?;
        let total = geo.flags.len();
        let stub_len = if geo.loaded { total } else { 0 };
        Ok(Mesh {
            geo,
            dt,
            b: std::array::from_fn(|_| vec![0.0; total]),
            nb: std::array::from_fn(|_| vec![0.0; total]),
            cap: std::array::from_fn(|_| vec![0.0; stub_len]),
            ind: std::array::from_fn(|_| vec![0.0; stub_len]),
        })
    }
}

impl Geo {
    /// Geometry, coefficients and time step of a job (no field state).
    pub fn build(job: &SimJob) -> Result<(Geo, f64), SimFailure> {
        check_job(job)?;
        let g = &common::cells(job);
        let n = g.n;
        let stride = [1, n[0], n[0] * n[1]];
        let total = g.cells();
        let area = |e: usize| g.d[(e + 1) % 3] * g.d[(e + 2) % 3] / g.d[e];
        let a_min = (0..3).map(area).fold(f64::INFINITY, f64::min);
        let used: Vec<bool> = {
            let nm = job.materials.len();
            let mark = |mut u: Vec<bool>, m: &u8| {
                u[*m as usize] = true;
                u
            };
            job.cell_mat.par_iter().fold(|| vec![false; nm], mark).reduce(|| vec![false; nm], |a, b| a.iter().zip(&b).map(|(&x, &y)| x || y).collect())
        };
        let m_min = job.materials.iter().zip(&used).filter(|(m, &u)| u && !m.pec).map(|(m, _)| m.eps_r.min(m.mu_r)).fold(f64::INFINITY, f64::min);
        if !m_min.is_finite() {
            return Err(SimFailure::Invalid(format!("{}: every cell is PEC", job.label)));
        }
        let dt = m_min * a_min / (2.0 * C0);

        let pec: Vec<bool> = job.materials.iter().map(|m| m.pec).collect();
        let dead = |idx: usize| pec[job.cell_mat[idx] as usize];
        let clean = |x: f64| if x.abs() < 1e-9 { 0.0 } else { x };
        let pad = common::pad_loss_axes(job, n, |_, i| i as f64 + 0.5);
        // Nodes are independent: built over slabs in parallel (common::node_kinds keeps the
        // kinds in first-node order). A node's coefficients depend on its material, padding
        // loss and domain faces only: (material, loss bits per axis, face mask).
        let node = |idx: usize, c: [usize; 3]| -> (u16, Option<(u8, [u64; 3], u8)>) {
            let mi = job.cell_mat[idx];
            if pec[mi as usize] {
                return (DEAD, None);
            }
            let (mut f, mut edges) = (0u16, 0u8);
            for d in 0..3 {
                for side in 0..2 {
                    let fi = 2 * d + side;
                    let at_edge = if side == 0 { c[d] == 0 } else { c[d] + 1 == n[d] };
                    if at_edge {
                        f |= face_bit(fi);
                        edges |= 1 << fi;
                    } else {
                        let nb = if side == 0 { idx - stride[d] } else { idx + stride[d] };
                        if dead(nb) {
                            f |= face_bit(fi) | short_bit(fi);
                        }
                    }
                }
            }
            (f, Some((mi, std::array::from_fn(|a| pad[a][c[a]].to_bits()), edges)))
        };
        let coef = |&(mi, gl, edges): &(u8, [u64; 3], u8)| -> Coef {
            let m = &job.materials[mi as usize];
            let (sig_e, sig_m) = pad_sigmas(gl.map(f64::from_bits), g.d, m.eps_r, m.mu_r);
            let mut k = Coef::PLAIN;
            for e in 0..3 {
                let a = area(e);
                let y = clean(2.0 * m.eps_r * a / (C0 * dt) - 4.0).max(0.0);
                let z = clean(2.0 * m.mu_r * a / (C0 * dt) - 4.0).max(0.0);
                k.y[e] = y as f32;
                k.z[e] = z as f32;
                k.ky[e] = (1.0 / (4.0 + y + (m.sigma + sig_e[e]) * a * ETA0)) as f32;
                k.kz[e] = (1.0 / (4.0 + z + sig_m[e] * a / ETA0)) as f32;
            }
            for fi in (0..6).filter(|&fi| edges & (1 << fi) != 0) {
                let (d, side) = (fi / 2, fi % 2);
                for pol in 0..2 {
                    let e = (d + 1 + pol) % 3;
                    let w = (d + 2 - pol) % 3;
                    k.gface[fi][pol] = match job.boundaries[d][side] {
                        Boundary::Pec => -1.0,
                        Boundary::Pmc => 1.0,
                        Boundary::Absorbing => {
                            // Matched to a normally incident plane wave in this cell's medium.
                            let zf = ETA0 * (m.mu_r / m.eps_r).sqrt();
                            gamma(zf * g.d[e] / g.d[w], ETA0) as f32
                        }
                    };
                }
            }
            k
        };
        let (mut flags, kind, coefs) = common::node_kinds(n, common::slab_len(total), Coef::PLAIN, node, coef, key);
        let lat = Lattice::new(job, [false; 3]);
        for s in &job.sheets {
            let d = s.normal.index();
            let (u, v) = s.normal.others();
            let (u, v) = (u.index(), v.index());
            if s.plane > n[d] {
                return Err(SimFailure::Invalid(format!("{}: sheet plane {} outside axis of {} cells", job.label, s.plane, n[d])));
            }
            for iv in 0..n[v] {
                for iu in 0..n[u] {
                    if !lat.sheet_covers(s, iu, iv) {
                        continue;
                    }
                    let mut c = [0; 3];
                    c[u] = iu;
                    c[v] = iv;
                    if s.plane > 0 {
                        c[d] = s.plane - 1;
                        let idx = g.idx(c[0], c[1], c[2]);
                        flags[idx] |= face_bit(2 * d + 1) | short_bit(2 * d + 1);
                    }
                    if s.plane < n[d] {
                        c[d] = s.plane;
                        let idx = g.idx(c[0], c[1], c[2]);
                        flags[idx] |= face_bit(2 * d) | short_bit(2 * d);
                    }
                }
            }
        }
        let loaded = coefs.iter().any(|k| k.y.iter().chain(&k.z).any(|&x| x != 0.0) || k.ky.iter().chain(&k.kz).any(|&x| x != 0.25));
        let runs = node_runs(&flags, &kind, n[0] * n[1]);
        Ok((Geo { n, stride, flags, kind, coefs, loaded, runs }, dt))
    }
}

impl Geo {
    /// Incident pulses of node `idx` from the reflected pulses `b` of the last step.
    #[inline(always)]
    fn gather(&self, b: &[Vec<f32>; 12], idx: usize, f: u16) -> [f32; 12] {
        let mut a = [0f32; 12];
        for d in 0..3 {
            let s = self.stride[d];
            for pol in 0..2 {
                let (ln, lp) = (link(d, 0, pol), link(d, 1, pol));
                a[ln] = if f & face_bit(2 * d) == 0 { b[lp][idx - s] } else { self.wall(b, idx, f, 2 * d, pol, ln) };
                a[lp] = if f & face_bit(2 * d + 1) == 0 { b[ln][idx + s] } else { self.wall(b, idx, f, 2 * d + 1, pol, lp) };
            }
        }
        a
    }

    /// A reflected pulse returning from the wall on `face`.
    #[inline(always)]
    fn wall(&self, b: &[Vec<f32>; 12], idx: usize, f: u16, face: usize, pol: usize, l: usize) -> f32 {
        let g = if f & short_bit(face) != 0 { -1.0 } else { self.coefs[self.kind[idx] as usize].gface[face][pol] };
        g * b[l][idx]
    }

    /// One plane node by node: the definition [`sweep_plane_runs`] reproduces
    /// bit for bit (the tests' reference).
    #[cfg(test)]
    fn sweep_plane_reference(&self, b: &[Vec<f32>; 12], kz: usize, o: &mut [&mut [f32]; 12], mut cap: Option<&mut [&mut [f32]; 3]>, mut ind: Option<&mut [&mut [f32]; 3]>) {
        let plane = self.n[0] * self.n[1];
        let base = kz * plane;
        let mut bo = [0f32; 12];
        for r in 0..plane {
            let idx = base + r;
            let f = self.flags[idx];
            if f & (DEAD | SPECIAL) != 0 {
                continue;
            }
            let a = if f == 0 { self.gather(b, idx, 0) } else { self.gather(b, idx, f) };
            let kd = self.kind[idx];
            // Kind 0 (no stubs, no loss) scatters as the plain node, stubs untouched; the
            // loaded formula with Y = Z = 0 would give the same pulses (and the GPU twin does
            // exactly this).
            match (cap.as_deref_mut(), ind.as_deref_mut()) {
                (Some(cs), Some(ls)) if kd != 0 => {
                    let k = &self.coefs[kd as usize];
                    let mut c = [cs[0][r], cs[1][r], cs[2][r]];
                    let mut l = [ls[0][r], ls[1][r], ls[2][r]];
                    scatter_loaded(&a, &mut bo, &mut c, &mut l, k, [0.0; 3]);
                    for e in 0..3 {
                        cs[e][r] = c[e];
                        ls[e][r] = l[e];
                    }
                }
                _ => scatter_plain(&a, &mut bo),
            }
            for l in 0..12 {
                o[l][r] = bo[l];
            }
        }
    }
}

/// One step of every ordinary node (not PEC, not special): gather the incident
/// pulses from the neighbours' reflections `b` of the last step, scatter, write
/// the reflections into `nb`; z-planes in parallel. CPU twin of the CUDA kernel
/// `tlm_scn_step` (same arithmetic in the same order).
pub(crate) fn tlm_scn_step(geo: &Geo, b: &[Vec<f32>; 12], nb: &mut [Vec<f32>; 12], cap: &mut [Vec<f32>; 3], ind: &mut [Vec<f32>; 3]) {
    let plane = geo.n[0] * geo.n[1];
    let nz = geo.n[2];
    let mut outs = nb.iter_mut().map(|v| v.chunks_mut(plane)).collect::<Vec<_>>();
    let rows: Vec<[&mut [f32]; 12]> = (0..nz).map(|_| std::array::from_fn(|l| outs[l].next().unwrap())).collect();
    let caps = split3(cap, plane, nz);
    let inds = split3(ind, plane, nz);
    let sweep = |(kz, ((mut o, mut c), mut l)): (usize, (([&mut [f32]; 12], Option<[&mut [f32]; 3]>), Option<[&mut [f32]; 3]>))| {
        sweep_plane_runs(geo, b, kz, &mut o, c.as_mut(), l.as_mut());
    };
    // Small jobs (the GA's one-cell-thick slabs: planes of a few dozen nodes) step on the
    // calling thread: the batch already runs its jobs in parallel, and a fork-join per
    // step costs more than the step.
    if plane * nz <= SERIAL_MAX_NODES {
        rows.into_iter().zip(caps).zip(inds).enumerate().for_each(sweep);
    } else {
        rows.into_par_iter().zip(caps).zip(inds).enumerate().for_each(sweep);
    }
}

/// Jobs of at most this many nodes step their planes one after the other.
const SERIAL_MAX_NODES: usize = 1 << 15;

/// Per-plane mutable views of three stub arrays (`None` when not allocated).
fn split3(arr: &mut [Vec<f32>; 3], plane: usize, nz: usize) -> Vec<Option<[&mut [f32]; 3]>> {
    if arr[0].is_empty() {
        return (0..nz).map(|_| None).collect();
    }
    let mut it = arr.iter_mut().map(|v| v.chunks_mut(plane)).collect::<Vec<_>>();
    (0..nz).map(|_| Some(std::array::from_fn(|l| it[l].next().unwrap()))).collect()
}

impl Mesh {
    fn sweep(&mut self) {
        let Mesh { geo, b, nb, cap, ind, .. } = self;
        tlm_scn_step(geo, b, nb, cap, ind);
    }

    /// Gather (replacing incident link `over.0` by `over.1`), add `add` to the
    /// incident pulses polarised along `e`, scatter with the current `inj` drawn
    /// from E_e: one special node.
    fn update_special(&mut self, idx: usize, e: usize, add: f32, inj: f32, over: Option<(usize, f32)>) -> [f32; 3] {
        let f = self.geo.flags[idx] & !SPECIAL;
        let mut a = self.geo.gather(&self.b, idx, f);
        if let Some((q, v)) = over {
            a[q] = v;
        }
        for &q in &E_LINKS[e] {
            a[q] += add;
        }
        let k = self.geo.coefs[self.geo.kind[idx] as usize];
        let (mut c, mut l) = self.stubs(idx);
        let mut injv = [0f32; 3];
        injv[e] = inj;
        let mut bo = [0f32; 12];
        let v = scatter_loaded(&a, &mut bo, &mut c, &mut l, &k, injv);
        for q in 0..12 {
            self.nb[q][idx] = bo[q];
        }
        if self.geo.loaded {
            for x in 0..3 {
                self.cap[x][idx] = c[x];
                self.ind[x][idx] = l[x];
            }
        }
        v
    }

    fn stubs(&self, idx: usize) -> ([f32; 3], [f32; 3]) {
        if self.geo.loaded {
            (std::array::from_fn(|x| self.cap[x][idx]), std::array::from_fn(|x| self.ind[x][idx]))
        } else {
            ([0.0; 3], [0.0; 3])
        }
    }
}

/// A lumped port resolved onto a column of nodes.
pub(crate) struct Lumped {
    pub axis: usize,
    pub nodes: Vec<usize>,
    pub r: f64,
}

fn resolve_lumped(job: &SimJob, kind: &PortKind) -> Result<Lumped, SimFailure> {
    let PortKind::Lumped { axis, start, len, r_ohm } = *kind else { unreachable!("lumped only") };
    let g = &common::cells(job);
    let u = axis.index();
    if len == 0 || start[u] + len > g.n[u] || !(r_ohm > 0.0) {
        return Err(SimFailure::Invalid(format!("{}: lumped port does not fit the grid or has R <= 0", job.label)));
    }
    // FDTD edge (grid node) -> the cell whose low corner it is, kept inside the grid.
    let mut c = [0; 3];
    for a in 0..3 {
        c[a] = start[a].min(g.n[a] - 1);
    }
    let mut nodes = vec![];
    for m in 0..len {
        c[u] = start[u] + m;
        let idx = g.idx(c[0], c[1], c[2]);
        if job.materials[job.cell_mat[idx] as usize].pec {
            return Err(SimFailure::Invalid(format!("{}: lumped port cell {:?} is PEC", job.label, c)));
        }
        nodes.push(idx);
    }
    Ok(Lumped { axis: u, nodes, r: r_ohm })
}

/// A TE10 modal termination on a domain face: its nodes, the link it drives, buffers.
pub(crate) struct End {
    pub me: ModalEnd,
    pub nodes: Vec<usize>,
    pub link: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

fn modal_ends(job: &SimJob, geo: &Geo, dt: f64) -> Vec<End> {
    let g = &common::cells(job);
    let mut ends = vec![];
    for axis in 0..3 {
        for side in 0..2 {
            let Some(pi) = modal_port(job, axis, side) else { continue };
            let PortKind::Waveguide { e_axis, width_axis, a, .. } = job.ports[pi].kind else { unreachable!() };
            let (e, w) = (e_axis.index(), width_axis.index());
            let layer = if side == 0 { 0 } else { g.n[axis] - 1 };
            let (mut nodes, mut phi) = (vec![], vec![]);
            for ie in 0..g.n[e] {
                for iw in 0..g.n[w] {
                    let mut c = [0; 3];
                    c[axis] = layer;
                    c[e] = ie;
                    c[w] = iw;
                    let idx = g.idx(c[0], c[1], c[2]);
                    if geo.flags[idx] & DEAD == 0 {
                        nodes.push(idx);
                        let x = (iw as f64 + 0.5) * g.d[w];
                        phi.push(if x < a { (std::f64::consts::PI * x / a).sin() } else { 0.0 });
                    }
                }
            }
            // The guide's medium, from the face centre.
            let mut c = [g.n[0] / 2, g.n[1] / 2, g.n[2] / 2];
            c[axis] = layer;
            let m = &job.materials[job.cell_mat[g.idx(c[0], c[1], c[2])] as usize];
            let eta_l = ETA0 * (m.mu_r / m.eps_r).sqrt() * g.d[e] / g.d[w];
            let fc = C0 / (2.0 * a * (m.eps_r * m.mu_r).sqrt());
            let k = nodes.len();
            ends.push(End {
                me: ModalEnd::new(phi, eta_l, ETA0, fc, dt),
                nodes,
                link: link(axis, side, pol_of(axis, e)),
                a: vec![0.0; k],
                b: vec![0.0; k],
            });
        }
    }
    ends
}

/// A port resolved onto the node mesh.
pub(crate) enum ScnPort {
    L(Lumped),
    W(WgPort),
}

/// The ports, sources and modal guide ends of a job resolved onto the node mesh.
pub(crate) struct ScnPorts {
    pub ports: Vec<ScnPort>,
    /// Nodes updated one by one, in node order: sources of the driven guide port
    /// (profile weight) and modal-end face nodes (end id, slot).
    pub others: BTreeMap<usize, (f32, Option<(usize, usize)>)>,
    /// E axis of the driven guide port's source (0 without one).
    pub src_e: usize,
    pub ends: Vec<End>,
    pub drive: usize,
}

impl ScnPorts {
    /// Resolve the job's ports and guide ends; flags their nodes SPECIAL in `geo`.
    pub fn new(job: &SimJob, geo: &mut Geo, dt: f64) -> Result<ScnPorts, SimFailure> {
        let g = &common::cells(job);
        let mut ports = vec![];
        for p in &job.ports {
            ports.push(match p.kind {
                PortKind::Lumped { .. } => ScnPort::L(resolve_lumped(job, &p.kind)?),
                PortKind::Waveguide { .. } => ScnPort::W(WgPort::resolve(job, &p.kind, &Lattice::new(job, [false; 3]))?),
            });
        }
        let mut others: BTreeMap<usize, (f32, Option<(usize, usize)>)> = Default::default();
        let mut src_e = 0;
        if let ScnPort::W(w) = &ports[job.drive] {
            src_e = w.e;
            for ie in 0..g.n[w.e] {
                for iw in 0..g.n[w.w] {
                    let c = w.cell(w.src_layer, ie, iw);
                    let idx = g.idx(c[0], c[1], c[2]);
                    if geo.flags[idx] & DEAD == 0 {
                        others.insert(idx, (w.profile[iw] as f32, None));
                    }
                }
            }
        }
        let ends = modal_ends(job, geo, dt);
        for (id, end) in ends.iter().enumerate() {
            for (slot, &idx) in end.nodes.iter().enumerate() {
                others.entry(idx).or_insert((0.0, None)).1 = Some((id, slot));
            }
        }
        for &idx in others.keys() {
            geo.flags[idx] |= SPECIAL;
        }
        for p in &ports {
            if let ScnPort::L(l) = p {
                for &idx in &l.nodes {
                    if geo.flags[idx] & SPECIAL != 0 {
                        return Err(SimFailure::Invalid(format!("{}: a lumped port overlaps another port or a guide end", job.label)));
                    }
                    geo.flags[idx] |= SPECIAL;
                }
            }
        }
        geo.runs = node_runs(&geo.flags, &geo.kind, geo.n[0] * geo.n[1]);
        Ok(ScnPorts { ports, others, src_e, ends, drive: job.drive })
    }

    /// Whether each port is a waveguide port (sampled on a face, half a step late).
    pub fn is_wg(&self) -> Vec<bool> {
        self.ports.iter().map(|p| matches!(p, ScnPort::W(_))).collect()
    }
}

/// A single cell between PEC faces along axis `a`, driven only by ports whose E
/// runs along `a`: every field is then uniform across the slab, E along `a`
/// (TE_m0 of an H-plane structure: the job's collapsed invariant axis), and the
/// slab's height h only scales the voltages along it. The SCN's time step is set
/// by the smallest `d_a d_b / d_e`, so one cell of the guide height (b = 14 dx in
/// WR-28 at a/28) would cut it 14-fold and load every node with large stubs; a
/// cubic slab needs neither. Returns (a, h, the cubic height).
fn slab(job: &SimJob) -> Option<(usize, f64, f64)> {
    let g = &common::cells(job);
    let a = (0..3).find(|&a| g.n[a] == 1 && job.boundaries[a] == [Boundary::Pec; 2])?;
    let along = job.ports.iter().all(|p| match p.kind {
        PortKind::Lumped { axis, .. } => axis.index() == a,
        PortKind::Waveguide { e_axis, .. } => e_axis.index() == a,
    });
    let (p, q) = ((a + 1) % 3, (a + 2) % 3);
    let h2 = (g.d[p] * g.d[q]).sqrt();
    (along && (g.d[a] / h2 - 1.0).abs() > 1e-9).then_some((a, g.d[a], h2))
}

/// Run one job with the 3D SCN: a one-cell slab between PEC faces as a cubic
/// slab ([`slab`]), with lumped resistances scaled to the new height and port
/// signals scaled back (V along the slab by h / h2; guide-port V and I, whose
/// modal normalisation holds sqrt(height), by sqrt(h / h2)).
pub fn run(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_watched(job, &StepWatch::default())
}

/// [`run`], reporting steps and energy decay into `watch` at each energy check.
pub fn run_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let Some((j, scale)) = meshed(job) else { return run_mesh(job, watch) };
    let mut out = run_mesh(&j, watch)?;
    scale_traces(&mut out.traces, &scale);
    Ok(out)
}

/// The job the SCN meshes in place of `job` when it is a one-cell slab
/// ([`slab`]): the slab made cubic, lumped resistances scaled to the new
/// height; with per port the factors (V, I) that scale its signals back.
pub(crate) fn meshed(job: &SimJob) -> Option<(SimJob, Vec<(f64, f64)>)> {
    let (a, h, h2) = slab(job)?;
    let mut j = job.clone();
    j.mesh = j.mesh.with_uniform_axis(a, h2);
    for p in &mut j.ports {
        if let PortKind::Lumped { r_ohm, .. } = &mut p.kind {
            *r_ohm *= h2 / h;
        }
    }
    let scale = job
        .ports
        .iter()
        .map(|p| match p.kind {
            PortKind::Lumped { .. } => (h / h2, 1.0),
            PortKind::Waveguide { .. } => ((h / h2).sqrt(), (h / h2).sqrt()),
        })
        .collect();
    Some((j, scale))
}

fn run_mesh(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let mut mesh = Mesh::new(job)?;
    let sp = ScnPorts::new(job, &mut mesh.geo, mesh.dt)?;
    super::cpu_batch::run(job, ScnRun { mesh, sp, g: common::cells(job) }, watch)
}

/// The SCN's state for the stepping loop.
struct ScnRun {
    mesh: Mesh,
    sp: ScnPorts,
    g: common::Cells,
}

impl super::cpu_batch::TlmMethod for ScnRun {
    fn dt(&self) -> f64 {
        self.mesh.dt
    }
    fn cells(&self) -> usize {
        self.g.cells()
    }
    fn step(&mut self, s: f64, traces: &mut [PortTrace]) {
        self.mesh.sweep();
        tlm_scn_ports(&mut self.mesh, &mut self.sp, s, traces);
        std::mem::swap(&mut self.mesh.b, &mut self.mesh.nb);
        tlm_scn_sample(&self.mesh, &self.g, &self.sp, traces);
    }
    fn energy(&self) -> f64 {
        tlm_scn_energy(&self.mesh)
    }
    fn locate_non_finite(&self) -> String {
        find_non_finite(&self.mesh.b, self.mesh.geo.n)
    }
    fn finish(&self, traces: &mut [PortTrace]) -> (f64, f64) {
        let off = common::finish_traces(traces, &self.sp.is_wg());
        (off, off)
    }
}

/// The port part of one step, after [`tlm_scn_step`] and before the swap: the
/// modal guide ends reflect (from the last step's pulses at their faces),
/// lumped ports solve their series circuit (one V, I sample each), and the
/// source and guide-end nodes scatter with their extra pulses. CPU twin of the
/// CUDA kernel `tlm_scn_ports`.
pub(crate) fn tlm_scn_ports(mesh: &mut Mesh, sp: &mut ScnPorts, s: f64, traces: &mut [PortTrace]) {
    for end in &mut sp.ends {
        for (slot, &idx) in end.nodes.iter().enumerate() {
            end.b[slot] = mesh.b[end.link][idx] as f64;
        }
        end.me.reflect(&end.b, &mut end.a);
    }
    for (pi, p) in sp.ports.iter().enumerate() {
        if let ScnPort::L(l) = p {
            let vs = if pi == sp.drive { s } else { 0.0 };
            let (v, i) = lumped_step(mesh, l, vs);
            traces[pi].v.push(v);
            traces[pi].i.push(i);
        }
    }
    for (&idx, &(w, over)) in &sp.others {
        let over = over.map(|(id, slot)| (sp.ends[id].link, sp.ends[id].a[slot] as f32));
        mesh.update_special(idx, sp.src_e, (s as f32) * w, 0.0, over);
    }
}

/// Sample every waveguide port from the pulses just emitted (after the swap).
/// CPU twin of the CUDA kernel `tlm_scn_sample`.
pub(crate) fn tlm_scn_sample(mesh: &Mesh, g: &common::Cells, sp: &ScnPorts, traces: &mut [PortTrace]) {
    for (pi, p) in sp.ports.iter().enumerate() {
        if let ScnPort::W(w) = p {
            let (v, i) = sample_wg(mesh, g, w);
            traces[pi].v.push(v);
            traces[pi].i.push(i);
        }
    }
}

/// Energy in the current reflected pulses and stubs (V^2, up to a constant).
/// CPU twin of the CUDA kernel `tlm_scn_energy`.
pub(crate) fn tlm_scn_energy(mesh: &Mesh) -> f64 {
    let links: f64 = mesh.b.par_iter().map(|v| v.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>()).sum();
    if !mesh.geo.loaded {
        return links;
    }
    links
        + (0..mesh.geo.flags.len())
            .into_par_iter()
            .map(|i| {
                let k = &mesh.geo.coefs[mesh.geo.kind[i] as usize];
                let (c, l) = mesh.stubs(i);
                stub_energy(c, l, k)
            })
            .sum::<f64>()
}

/// Where the first non-finite pulse is ("node (i, j, k) link q", else "stubs").
pub(crate) fn find_non_finite(b: &[Vec<f32>; 12], n: [usize; 3]) -> String {
    for (q, v) in b.iter().enumerate() {
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            let (ix, jy, kz) = (i % n[0], (i / n[0]) % n[1], i / (n[0] * n[1]));
            return format!("node ({ix}, {jy}, {kz}) link {q}");
        }
    }
    "stubs".into()
}

/// The job packed for the CUDA backend (see [`super::pack`]): the same geometry,
/// coefficients, special nodes and port terms this engine steps with.
pub(crate) fn pack(job: &SimJob) -> Result<TlmPack, SimFailure> {
    let (slabbed, scale) = match meshed(job) {
        Some((j, sc)) => (Some(j), sc),
        None => (None, vec![]),
    };
    let job = slabbed.as_ref().unwrap_or(job);
    let (mut geo, dt) = Geo::build(job)?;
    let sp = ScnPorts::new(job, &mut geo, dt)?;
    check_kinds(job, geo.coefs.len())?;
    let g = &common::cells(job);
    let meta = geo.flags.par_iter().zip(&geo.kind).map(|(&f, &k)| f as u32 | (k << META_KIND_SHIFT)).collect();
    let mut coefs = Vec::with_capacity(geo.coefs.len() * COEF3);
    for k in &geo.coefs {
        coefs.extend(k.y.iter().chain(&k.ky).chain(&k.z).chain(&k.kz).chain(k.gface.iter().flatten()));
    }
    let is_wg = sp.is_wg();
    let ScnPorts { ports, others, src_e, ends, .. } = sp;
    let specials = others.iter().map(|(&node, &(w, over))| PackSpecial { node, w, over }).collect();
    let (mut lumped, mut wgs) = (vec![], vec![]);
    for (pi, p) in ports.into_iter().enumerate() {
        match p {
            ScnPort::L(l) => lumped.push(PackLumped { port: pi, nodes: l.nodes, axis: l.axis, r: l.r, z: ETA0 }),
            ScnPort::W(w) => {
                let pol = pol_of(w.normal, w.e);
                let (mut lo, mut hi, mut wt) = (vec![], vec![], vec![]);
                for ie in 0..g.n[w.e] {
                    for iw in 0..g.n[w.w] {
                        let a = w.cell(w.plane - 1, ie, iw);
                        let b = w.cell(w.plane, ie, iw);
                        lo.push(g.idx(a[0], a[1], a[2]));
                        hi.push(g.idx(b[0], b[1], b[2]));
                        wt.push(w.profile[iw]);
                    }
                }
                wgs.push(PackWg {
                    port: pi,
                    link_up: link(w.normal, 1, pol),
                    link_down: link(w.normal, 0, pol),
                    lo,
                    hi,
                    w: wt,
                    dw: g.d[w.w],
                    de: g.d[w.e],
                    z: ETA0,
                    norm: w.norm,
                    inward: w.inward,
                });
            }
        }
    }
    let ends = ends.into_iter().map(|e| PackEnd { nodes: e.nodes, link: e.link, me: e.me }).collect();
    Ok(TlmPack {
        dim3: true,
        dt,
        n: g.n,
        stride: geo.stride,
        meta,
        coefs,
        loaded: geo.loaded,
        src_e,
        specials,
        lumped,
        ends,
        wgs,
        is_wg,
        drive: job.drive,
        offsets: None,
        cells: g.cells(),
        scale,
    })
}

/// Series source `vs` + resistor through the port's column of E_u sub-nodes,
/// solved together so one current flows: `I = (Vs + sum 2 S_m k_m) / (R + Z0 sum k_m)`.
/// Returns the port voltage `V = -sum V_u = Vs - R I` and the current I.
fn lumped_step(mesh: &mut Mesh, l: &Lumped, vs: f64) -> (f64, f64) {
    let (mut s2k, mut sk) = (0.0, 0.0);
    for &idx in &l.nodes {
        let f = mesh.geo.flags[idx] & !SPECIAL;
        let a = mesh.geo.gather(&mesh.b, idx, f);
        let k = &mesh.geo.coefs[mesh.geo.kind[idx] as usize];
        let (c, _) = mesh.stubs(idx);
        let ky = k.ky[l.axis] as f64;
        s2k += 2.0 * shunt_sum(&a, &c, k, l.axis) * ky;
        sk += ky;
    }
    let i = (vs + s2k) / (l.r + ETA0 * sk);
    let mut v = 0.0;
    for &idx in &l.nodes {
        v -= mesh.update_special(idx, l.axis, 0.0, (ETA0 * i) as f32, None)[l.axis] as f64;
    }
    (v, i)
}

/// Modal V and I of a waveguide port from the link pulses crossing its
/// reference face (half a step after the scatter that emitted them).
fn sample_wg(mesh: &Mesh, g: &common::Cells, w: &WgPort) -> (f64, f64) {
    let pol = pol_of(w.normal, w.e);
    let (lp, ln) = (link(w.normal, 1, pol), link(w.normal, 0, pol));
    let (mut v, mut i) = (0.0, 0.0);
    for ie in 0..g.n[w.e] {
        for iw in 0..g.n[w.w] {
            let lo = w.cell(w.plane - 1, ie, iw);
            let hi = w.cell(w.plane, ie, iw);
            let up = mesh.b[lp][g.idx(lo[0], lo[1], lo[2])] as f64;
            let down = mesh.b[ln][g.idx(hi[0], hi[1], hi[2])] as f64;
            v += (up + down) * w.profile[iw] * g.d[w.w];
            i += (up - down) / ETA0 * w.profile[iw] * g.d[w.e];
        }
    }
    (w.norm * v, w.norm * w.inward * i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tlm::spectrum::{peak_in, windowed};
    use crate::engine::tlm::testjobs::*;
    use crate::job::{Axis, EndReason, EngineKind, Material, Port, Pulse};

    fn tm_freq(a: f64, b: f64, d: f64, [m, n, p]: [usize; 3]) -> f64 {
        0.5 * C0 * ((m as f64 / a).powi(2) + (n as f64 / b).powi(2) + (p as f64 / d).powi(2)).sqrt()
    }

    /// Relative errors of the probe spectrum's peaks near the TM_mnp resonances
    /// of an a x b x d box (E_z probe, record after the pulse).
    fn resonance_errors(job: &SimJob, box_abd: [f64; 3], scale: f64, modes: &[[usize; 3]]) -> Vec<f64> {
        let out = run(job).unwrap();
        assert!(matches!(out.ended, EndReason::MaxSteps { .. }), "a lossless box never decays");
        let skip = (job.pulse.end_time() / out.dt) as usize;
        let xw = windowed(&out.traces[1].v[skip..]);
        modes
            .iter()
            .map(|&m| {
                let f = tm_freq(box_abd[0], box_abd[1], box_abd[2], m) * scale;
                let g = peak_in(&xw, out.dt, f * 0.99, f * 1.01);
                let err = g / f - 1.0;
                println!("TM{m:?}: analytic {:.5} GHz, TLM {:.5} GHz, error {err:+.2e}", f / 1e9, g / 1e9);
                err
            })
            .collect()
    }

    #[test]
    fn run_blocks_step_every_kind_of_node_as_the_reference_does() {
        // Random pulses and stubs, 12 steps of the run blocks (scn_runs) against the
        // node-by-node sweep, every bit: a PEC box with a PMC face, a post and a sheet
        // (unloaded: plain nodes, walls, shorts, dead cells); the same filled with a lossy
        // magnetic dielectric (loaded); a WR-28 section with stretched cells and graded
        // padding (absorbing faces, mixed kinds along rows); a one-cell slab.
        let mut jobs = vec![];
        let mut j = pec_box([19, 13, 9], 0.5e-3);
        j.boundaries[0][1] = Boundary::Pmc;
        for (x, y, z) in [(5, 5, 4), (6, 5, 4), (5, 6, 4)] {
            std::sync::Arc::make_mut(&mut j.cell_mat)[(z * 13 + y) * 19 + x] = 1;
        }
        j.sheets.push(crate::job::Sheet { normal: Axis::Z, plane: 6, lo: [2, 3], hi: [11, 8] });
        j.ports = vec![probe("src", 3, 3, 2, 1, 50.0)];
        jobs.push(j.clone());
        j.materials[0] = Material { name: "fill".into(), eps_r: 2.2, sigma: 0.05, mu_r: 1.3, pec: false, poles: vec![] };
        jobs.push(j);
        let mut w = wr28(EngineKind::Tlm, 12, 6, 40, 6, 5, 3);
        w.mesh = w.mesh.with_uniform_axis(2, w.mesh.d(2)[0] * 1.04);
        jobs.push(w);
        jobs.push(wr28(EngineKind::Tlm, 24, 1, 60, 0, 5, 3));
        let mut rnd = uniform_noise(99);
        let mut loaded = vec![];
        for job in &jobs {
            let mut m = Mesh::new(job).unwrap();
            let _ports = ScnPorts::new(job, &mut m.geo, m.dt).unwrap();
            loaded.push(m.geo.loaded);
            m.b.iter_mut().flatten().for_each(|x| *x = rnd());
            m.cap.iter_mut().chain(m.ind.iter_mut()).flatten().for_each(|x| *x = 0.01 * rnd());
            let (plane, nz) = (m.geo.n[0] * m.geo.n[1], m.geo.n[2]);
            let (mut rb, mut rnb, mut rc, mut ri) = (m.b.clone(), m.nb.clone(), m.cap.clone(), m.ind.clone());
            let stepped = |i: usize| m.geo.flags[i] & (DEAD | SPECIAL) == 0;
            let stepped: Vec<usize> = (0..m.geo.flags.len()).filter(|&i| stepped(i)).collect();
            for step in 0..12 {
                m.sweep();
                let mut outs = rnb.iter_mut().map(|v| v.chunks_mut(plane)).collect::<Vec<_>>();
                let caps = split3(&mut rc, plane, nz);
                let inds = split3(&mut ri, plane, nz);
                for (kz, (mut c, mut l)) in caps.into_iter().zip(inds).enumerate() {
                    let mut o: [&mut [f32]; 12] = std::array::from_fn(|q| outs[q].next().unwrap());
                    m.geo.sweep_plane_reference(&rb, kz, &mut o, c.as_mut(), l.as_mut());
                }
                for q in 0..12 {
                    for &i in &stepped {
                        assert_eq!(m.nb[q][i].to_bits(), rnb[q][i].to_bits(), "{} step {step} link {q} node {i}", job.label);
                    }
                }
                let same = |x: &[Vec<f32>; 3], y: &[Vec<f32>; 3]| x.iter().flatten().zip(y.iter().flatten()).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same(&m.cap, &rc) && same(&m.ind, &ri), "{} step {step}: stubs", job.label);
                std::mem::swap(&mut m.b, &mut m.nb);
                std::mem::swap(&mut rb, &mut rnb);
                // Nodes the step leaves alone (ports, guide ends, dead) take the reference's values.
                for q in 0..12 {
                    for i in (0..m.geo.flags.len()).filter(|&i| m.geo.flags[i] & (DEAD | SPECIAL) != 0) {
                        m.b[q][i] = rb[q][i];
                    }
                }
            }
        }
        assert_eq!(loaded, [false, true, true, true], "the jobs cover loaded and unloaded meshes");
    }

    #[test]
    fn pec_cavity_resonances_within_5e_4() {
        // 20 x 15 x 10 mm PEC box at 0.25 mm cells (80 x 60 x 40 nodes). Its modes with odd
        // m and n are symmetric about x = a/2 and y = b/2, so a quarter of it with PMC walls
        // on those planes has exactly these resonances at a quarter of the cost.
        let (a, b, d) = (20e-3, 15e-3, 10e-3);
        let mut job = pec_box([40, 30, 40], 0.25e-3);
        job.boundaries[0][1] = Boundary::Pmc;
        job.boundaries[1][1] = Boundary::Pmc;
        job.ports = vec![probe("src", 7, 9, 11, 1, 1e6), probe("obs", 29, 21, 27, 1, 1e6)];
        job.pulse = Pulse::covering(1e9, 32e9);
        job.stop.max_steps = 12_000;
        let modes = [[1, 1, 0], [1, 1, 1], [3, 1, 0], [3, 1, 1], [1, 3, 0]];
        for (m, e) in modes.iter().zip(resonance_errors(&job, [a, b, d], 1.0, &modes)) {
            assert!(e.abs() < 5e-4, "TM{m:?}: relative error {e:.2e}");
        }
    }

    #[test]
    fn filled_cavity_resonances_prove_the_stubs() {
        // 20 x 15 x 10 mm box at 0.5 mm, filled with eps_r = 2.2 (capacitive stubs), then with
        // eps_r = 2.2, mu_r = 1.5 (both kinds): resonances scale by 1/sqrt(eps_r mu_r).
        for (eps_r, mu_r) in [(2.2, 1.0), (2.2, 1.5)] {
            let mut job = pec_box([40, 30, 20], 0.5e-3);
            job.materials[0] = Material { name: "fill".into(), eps_r, sigma: 0.0, mu_r, pec: false, poles: vec![] };
            job.ports = vec![probe("src", 7, 9, 5, 1, 1e6), probe("obs", 29, 21, 13, 1, 1e6)];
            job.pulse = Pulse::covering(1e9, 20e9);
            job.stop.max_steps = 7_000;
            let modes = [[1, 1, 0], [2, 1, 0], [1, 1, 1], [1, 2, 0]];
            let errs = resonance_errors(&job, [20e-3, 15e-3, 10e-3], 1.0 / (eps_r * mu_r).sqrt(), &modes);
            for (m, e) in modes.iter().zip(errs) {
                assert!(e.abs() < 5e-3, "eps_r {eps_r} mu_r {mu_r} TM{m:?}: relative error {e:.2e}");
            }
        }
    }

    #[test]
    fn lossy_fill_damps_modes_at_sigma_over_2_eps() {
        // Uniform conductivity: every mode's amplitude decays as exp(-sigma t / (2 eps)).
        let (eps_r, sigma) = (2.2, 0.015);
        let mut job = pec_box([40, 30, 20], 0.5e-3);
        job.materials[0] = Material { name: "lossy".into(), eps_r, sigma, mu_r: 1.0, pec: false, poles: vec![] };
        job.ports = vec![probe("src", 7, 9, 5, 1, 1e6), probe("obs", 29, 21, 13, 1, 1e6)];
        job.pulse = Pulse::covering(1e9, 20e9);
        job.stop.max_steps = 7_000;
        let out = run(&job).unwrap();
        let f = tm_freq(20e-3, 15e-3, 10e-3, [1, 1, 0]) / eps_r.sqrt();
        let (skip, w, gap) = ((job.pulse.end_time() / out.dt) as usize, 2400, 3000);
        let v = &out.traces[1].v;
        let (x1, x2) = (windowed(&v[skip..skip + w]), windowed(&v[skip + gap..skip + gap + w]));
        let g = peak_in(&x1, out.dt, 0.99 * f, 1.01 * f);
        let ratio = crate::engine::tlm::spectrum::dtft_mag(&x2, out.dt, g) / crate::engine::tlm::spectrum::dtft_mag(&x1, out.dt, g);
        let alpha = -ratio.ln() / (gap as f64 * out.dt);
        let want = sigma / (2.0 * crate::consts::EPS0 * eps_r);
        println!("decay rate {alpha:.4e} /s, analytic {want:.4e} /s");
        assert!((alpha / want - 1.0).abs() < 0.02);
    }

    #[test]
    fn empty_wr28_guide_3d() {
        // 24 x 12 cells across (0.296 mm), ports 5 cells from the modal guide ends.
        check_empty_wr28(&wr28(EngineKind::Tlm, 24, 12, 100, 0, 5, 3), 5);
    }

    #[test]
    fn empty_wr28_guide_3d_stretched_cells_and_padding() {
        // Cells 4% longer along the guide (the job layer stretches cells): stubs in air; plus
        // 10 padding cells at each end, which the modal ends treat as more guide.
        let mut job = wr28(EngineKind::Tlm, 24, 12, 100, 10, 5, 3);
        job.mesh = job.mesh.with_uniform_axis(2, job.mesh.d(2)[0] * 1.04);
        let mesh = Mesh::new(&job).unwrap();
        assert!(mesh.geo.loaded && (mesh.dt - job.mesh.d(0)[0] / 1.04 / (2.0 * C0)).abs() < 1e-6 * mesh.dt);
        check_empty_wr28(&job, 15);
    }

    #[test]
    fn graded_padding_is_matched_at_normal_incidence() {
        // The TEM line of the test below, matched port, ends open through 10 padding cells:
        // what comes back is the padding's own reflection (normal incidence).
        let mut job = pec_box([1, 4, 240], 0.5e-3);
        job.boundaries[0] = [Boundary::Pmc; 2];
        job.boundaries[2] = [Boundary::Absorbing; 2];
        job.pml[2] = [10, 10];
        let z = 2.0 * ETA0;
        job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Y, start: [0, 0, 120], len: 4, r_ohm: z } }];
        job.pulse = Pulse::covering(1e9, 20e9);
        job.stop = crate::job::StopRule { decay_db: -80.0, max_steps: 8000, check_every: 16, max_time: None };
        let out = run(&job).unwrap();
        // Reflections return after 2 * 110 cells = 440 steps; the direct response is over by then.
        let v = &out.traces[0].v;
        let (direct, back) = (v[..400].iter().fold(0f64, |m, x| m.max(x.abs())), v[400..].iter().fold(0f64, |m, x| m.max(x.abs())));
        println!("padding echo {:.1} dB", 20.0 * (back / direct).log10());
        assert!(back < 1e-3 * direct);
    }

    /// One cell wide (PMC sides), `ny` cells over 5 mm between PEC plates, open ends: a
    /// TEM line of eta0 * 10 ohm. A port across it in the middle sees both halves in
    /// parallel, and in parallel with half the capacitance of its own column of cells (the
    /// node's lumped capacitance sits on the port's side of the cut; a Yee edge port has the
    /// same): a first-order artefact, relative size w dt / 2.
    fn check_parallel_plate_port(ny: usize) {
        let mut job = pec_box([1, ny, 200], 0.5e-3);
        job.mesh = job.mesh.with_uniform_axis(1, 5e-3 / ny as f64);
        job.boundaries[0] = [Boundary::Pmc; 2];
        job.boundaries[2] = [Boundary::Absorbing; 2];
        let z = 5.0 * ETA0;
        job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Y, start: [0, 0, 100], len: ny, r_ohm: z } }];
        job.pulse = Pulse::covering(1e9, 20e9);
        job.freqs = vec![2e9, 5e9, 10e9, 15e9, 20e9];
        job.stop = crate::job::StopRule { decay_db: -60.0, max_steps: 5000, check_every: 16, max_time: None };
        let out = run(&job).unwrap();
        let s = crate::analysis::SParams::from_runs(&[&job], &[&out]);
        for (k, zin) in s.zin[0].as_ref().unwrap().iter().enumerate() {
            let s11 = s.db(1, 1).unwrap()[k];
            println!("{} GHz: Zin {zin:.1} ohm (want {z:.1}), |S11| {s11:.1} dB", job.freqs[k] / 1e9);
            let w = 2.0 * std::f64::consts::PI * job.freqs[k];
            let c_col = 0.5 * crate::consts::EPS0 * 0.5e-3 / 10.0;
            let want = z / num_complex::Complex64::new(1.0, w * c_col * z);
            assert!((zin / want - 1.0).norm() < 2e-3, "Zin {zin} vs {want}");
            assert!(s11 < -30.0);
        }
    }

    #[test]
    fn lumped_port_on_a_parallel_plate_line_sees_half_its_impedance() {
        check_parallel_plate_port(10);
    }

    #[test]
    fn one_cell_slab_runs_as_a_cubic_slab() {
        // The same line as one cell of 5 mm between the plates (a collapsed invariant
        // axis): run as a 0.5 mm slab with R and V scaled, so Zin is the same.
        let mut job = pec_box([1, 1, 200], 0.5e-3);
        job.mesh = job.mesh.with_uniform_axis(1, 5e-3);
        job.boundaries[0] = [Boundary::Pmc; 2];
        job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Y, start: [0, 0, 100], len: 1, r_ohm: 1.0 } }];
        let (a, h, h2) = slab(&job).unwrap();
        assert!(a == 1 && h == 5e-3 && (h2 / 0.5e-3 - 1.0).abs() < 1e-12);
        check_parallel_plate_port(1);
        // A WR-28 iris: one cell of the full height b against 12 cubic cells over it.
        let mut one = wr28(EngineKind::Tlm, 24, 1, 60, 0, 5, 3);
        for z in 28..30 {
            for x in (0..7).chain(17..24) {
                std::sync::Arc::make_mut(&mut one.cell_mat)[z * 24 + x] = 1;
            }
        }
        let mut cubic = wr28(EngineKind::Tlm, 24, 12, 60, 0, 5, 3);
        for z in 28..30 {
            for y in 0..12 {
                for x in (0..7).chain(17..24) {
                    std::sync::Arc::make_mut(&mut cubic.cell_mat)[(z * 12 + y) * 24 + x] = 1;
                }
            }
        }
        let ((s1, o1), (s2, _)) = (two_port_sparams(&one), two_port_sparams(&cubic));
        assert_eq!(o1[0].cells, 24 * 60);
        for (i, j) in [(1, 1), (2, 1), (2, 2)] {
            let worst = s1.get(i, j).unwrap().iter().zip(s2.get(i, j).unwrap()).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
            println!("S{i}{j}: max |slab - cubic| = {worst:.1e}");
            assert!(worst < 1e-4);
        }
    }

    #[test]
    fn sheet_across_the_guide_reflects_everything() {
        let mut job = wr28(EngineKind::Tlm, 12, 6, 50, 0, 5, 3);
        job.sheets.push(crate::job::Sheet { normal: Axis::Z, plane: 25, lo: [0, 0], hi: [12, 6] });
        let (s, _) = two_port_sparams(&job);
        for k in 0..s.freqs.len() {
            assert!((s.get(1, 1).unwrap()[k].norm() - 1.0).abs() < 1e-3 && s.db(2, 1).unwrap()[k] < -100.0);
        }
    }

    #[test]
    fn failures_are_reported_not_panicked() {
        let mut job = wr28(EngineKind::Tlm, 12, 6, 40, 0, 5, 3);
        job.pulse.tau = f64::NAN;
        assert!(matches!(run(&job), Err(SimFailure::NonFinite { .. })));
        job.engine = EngineKind::Fdtd;
        assert!(matches!(crate::engine::tlm::run_cpu(&job), Err(SimFailure::Invalid(_))));
        let mut job = wr28(EngineKind::Tlm, 12, 6, 40, 0, 5, 3);
        std::sync::Arc::make_mut(&mut job.cell_mat)[3] = 7;
        assert!(matches!(run(&job), Err(SimFailure::Invalid(_))));
    }
}
