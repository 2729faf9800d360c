//! The FDTD operator: everything about a job that does not change while it
//! runs — time step, per-edge material indices into a small coefficient
//! table, CPML profiles, port geometry — computed once on the host and shared
//! by the CPU engine and the CUDA backend (openEMS's Operator/Engine split).
//!
//! Field layout (both backends): each component is a flat f32 array over
//! `(nx+2) x (ny+2) x (nz+2)` positions, x fastest, with one ghost layer on
//! every side. Logical index `(i, j, k)` lives at `(i+1) + (j+1) NX + (k+1) NX NY`.
//! `E_c(i,j,k)` sits at the edge centre (half-integer along c), `H_c(i,j,k)`
//! at the face centre (half-integer along the two other axes), as in Yee's
//! cell (seed 000, eqs 2.15-2.20). Ghost H values are zero, or the mirror
//! image for PMC faces, so the E update needs no boundary branches; E edges
//! on PEC (and PML-backing) faces get the PEC coefficients `ca = cb = 0`.
//!
//! Spacings come from the job's [`Mesh`](crate::job::Mesh), per line: the H
//! update divides E differences by the primal spacing of the cell between
//! them, the E update H differences by the dual spacing around the line
//! (`inv_h`, `inv_e`: one f32 per padded position and axis, tiny and cached,
//! so a cell costs the same bytes as on a uniform mesh). The coefficient table
//! holds `cb = dt / eps / (1 + s)` without any length.

use super::conformal::ConformalTerms;
use crate::consts::{C0, EPS0, ETA0, MU0};
use super::edges::EdgeTerms;
use super::surface::SurfaceTerms;
use crate::job::{Axis, Boundary, PortKind, SimFailure, SimJob};
use rayon::prelude::*;

/// Coefficient-table index reserved for perfect conductors (ca = cb = 0).
pub const PEC_INDEX: u8 = 0;

/// CPML stretching along one axis, tabulated at E positions (nodes
/// `0..=n`) and H positions (half nodes `0..n`). `b`, `c` per Roden & Gedney;
/// `kinv = 1/kappa`. Outside the PML `b = c = 0`, `kinv = 1`.
#[derive(Debug, Clone)]
pub struct Cpml1d {
    pub e_b: Vec<f32>,
    pub e_c: Vec<f32>,
    pub e_kinv: Vec<f32>,
    pub h_b: Vec<f32>,
    pub h_c: Vec<f32>,
    pub h_kinv: Vec<f32>,
}

/// A lumped port as the engine sees it.
#[derive(Debug, Clone)]
pub struct LumpedOp {
    /// E component (axis index) of the port edges.
    pub comp: usize,
    /// Flat indices of the port edges.
    pub edges: Vec<usize>,
    /// Flat index of the edge whose H loop gives the port current.
    pub mid: usize,
    /// Length (m) of the first edge: V = -(sum w E) dl.
    pub dl: f64,
    /// Per edge its length over `dl` (exactly 1 where the edges are equal).
    pub w: Vec<f64>,
    /// Dual lengths (m) of the current loop around `mid` along the two other
    /// axes (a, b), cyclic after `comp`: `I = dH_b * loop_d[1] - dH_a * loop_d[0]`.
    pub loop_d: [f64; 2],
    /// Source coefficient per edge: E -= src * Vs(t) / len (already / (1+beta)).
    /// Edges of different lengths take shares of Vs and R in proportion.
    pub src: Vec<f32>,
    /// Number of edges in series.
    pub len: usize,
}

/// A TE10 waveguide port as the engine sees it.
#[derive(Debug, Clone)]
pub struct GuideOp {
    /// E component along the mode's polarisation, H component along its width.
    pub comp_e: usize,
    pub comp_h: usize,
    /// Flat E indices on the reference plane and their weights (profile x area).
    pub v_idx: Vec<usize>,
    /// Flat H indices half a cell below / above the reference plane.
    pub h_lo: Vec<usize>,
    pub h_hi: Vec<usize>,
    pub weight: Vec<f64>,
    /// Sign that makes I positive for a wave travelling into the device.
    pub i_sign: f64,
    /// Flat E indices on the source plane and the source amplitude per index.
    pub src_idx: Vec<usize>,
    pub src_amp: Vec<f32>,
}

/// The host-side operator of one job.
#[derive(Debug, Clone)]
pub struct Operator {
    /// Cells per axis.
    pub n: [usize; 3],
    /// Array extents per axis including ghosts (n + 2).
    pub dims: [usize; 3],
    /// Flat strides per axis.
    pub stride: [usize; 3],
    /// Array length per component.
    pub len: usize,
    pub dt: f64,
    /// Per-E-component coefficient index per flat position.
    pub mat: [Vec<u8>; 3],
    /// Coefficient table: E = ca E + cb (curl H) ; eps for the energy.
    pub ca: Vec<f32>,
    pub cb: Vec<f32>,
    pub eps: Vec<f32>,
    /// H = H - db (curl E), uniform (non-magnetic media).
    pub db: f32,
    /// Per axis, per padded position q (0..dims): `inv_h` = 1 / the primal
    /// spacing of cell q-1 (H side), `inv_e` = 1 / the dual spacing around line
    /// q-1 (E side); ghost positions repeat the nearest real one.
    pub inv_h: [Vec<f32>; 3],
    pub inv_e: [Vec<f32>; 3],
    /// The same lengths relative to the axis' first cell (weights of the
    /// energy sum; exactly 1 on a uniform axis).
    pub rel_h: [Vec<f32>; 3],
    pub rel_e: [Vec<f32>; 3],
    /// CPML per axis (None where that axis has no absorbing face).
    pub pml: [Option<Cpml1d>; 3],
    pub pmc: [[bool; 2]; 3],
    pub lumped: Vec<Option<LumpedOp>>,
    pub guides: Vec<Option<GuideOp>>,
    /// Per component, per row (flat index / row stride): false when every E
    /// edge of the row is PEC, or (for H) when every E the row reads is in
    /// such a row. Those rows stay zero forever, so the CPU skips them: half
    /// the components of a 2.5D (invariant-axis) job, metal-filled regions.
    pub e_rows: [Vec<bool>; 3],
    pub h_rows: [Vec<bool>; 3],
    /// Extra currents on some E edges: dispersive media and lumped loads
    /// (`super::edges`), applied after the step and the port sources.
    pub edges: EdgeTerms,
    /// Lossy metal faces (`super::surface`), applied after the sources and
    /// before the edge currents.
    pub surface: SurfaceTerms,
    /// Faces cut by conformal metal (`super::conformal`), applied after the
    /// sources and before the lossy faces.
    pub conformal: ConformalTerms,
}

impl Operator {
    /// Flat index of logical position (i, j, k); each may be -1 or n (ghosts).
    #[inline]
    pub fn at(&self, i: isize, j: isize, k: isize) -> usize {
        ((i + 1) as usize) + ((j + 1) as usize) * self.stride[1] + ((k + 1) as usize) * self.stride[2]
    }

    /// Flat index from a logical position given per axis.
    #[inline]
    pub fn at3(&self, p: [isize; 3]) -> usize {
        self.at(p[0], p[1], p[2])
    }

    /// Build the operator of `job`.
    pub fn new(job: &SimJob) -> Result<Operator, SimFailure> {
        let op = Operator::build(job, Operator::fill_materials, Operator::mark_rows)?;
        if op.conformal.is_empty() {
            return Ok(op);
        }
        // Conformal faces stiffen the grid: keep the largest eigenvalue as far
        // below the leapfrog limit as the job's Courant number keeps a regular
        // grid's, with a smaller time step where they need one.
        let rho = super::conformal::stiffness(&op, super::conformal::POWER_ITERATIONS) * super::conformal::STIFFNESS_MARGIN;
        let limit = 4.0 * job.courant * job.courant;
        if rho <= limit {
            return Ok(op);
        }
        let mut slower = job.clone();
        slower.courant = job.courant * (limit / rho).sqrt();
        Operator::build(&slower, Operator::fill_materials, Operator::mark_rows)
    }

    /// `new` with the material fill and row marking given, so tests can build
    /// the reference with the sequential versions.
    fn build(job: &SimJob, fill: FillFn, rows: fn(&mut Operator)) -> Result<Operator, SimFailure> {
        let g = &job.mesh;
        if g.cells() == 0 {
            return Err(SimFailure::Invalid("empty mesh".into()));
        }
        if job.cell_mat.len() != g.cells() {
            return Err(SimFailure::Invalid(format!(
                "cell_mat has {} entries for {} cells",
                job.cell_mat.len(),
                g.cells()
            )));
        }
        if let Some(m) = job.materials.iter().find(|m| m.mu_r != 1.0 && !m.pec) {
            return Err(SimFailure::Invalid(format!(
                "material '{}' has mu_r = {}: the FDTD engine models non-magnetic media only (use the TLM engine)",
                m.name, m.mu_r
            )));
        }
        if !(job.courant > 0.0 && job.courant <= 1.0) {
            return Err(SimFailure::Invalid(format!("Courant number {} is outside (0, 1]: unstable", job.courant)));
        }
        let n = g.n();
        let dims = [n[0] + 2, n[1] + 2, n[2] + 2];
        let stride = [1, dims[0], dims[0] * dims[1]];
        let len = dims[0] * dims[1] * dims[2];
        // The time step from the smallest cell of each axis.
        let d = [g.min_d(0), g.min_d(1), g.min_d(2)];
        let dt = job.courant / (C0 * (1.0 / (d[0] * d[0]) + 1.0 / (d[1] * d[1]) + 1.0 / (d[2] * d[2])).sqrt());
        let pmc = job.boundaries.map(|b| b.map(|f| f == Boundary::Pmc));

        let mut op = Operator {
            n,
            dims,
            stride,
            len,
            dt,
            mat: [vec![PEC_INDEX; len], vec![PEC_INDEX; len], vec![PEC_INDEX; len]],
            ca: vec![0.0],
            cb: vec![0.0],
            eps: vec![1.0],
            db: (dt / MU0) as f32,
            inv_h: std::array::from_fn(|a| padded(g.d(a), dims[a], |x| (1.0 / x) as f32)),
            inv_e: std::array::from_fn(|a| padded(g.dual(a), dims[a], |x| (1.0 / x) as f32)),
            rel_h: std::array::from_fn(|a| padded(g.d(a), dims[a], |x| (x / g.cell(a, 0)) as f32)),
            rel_e: std::array::from_fn(|a| padded(g.dual(a), dims[a], |x| (x / g.cell(a, 0)) as f32)),
            pml: [None, None, None],
            pmc,
            lumped: vec![],
            guides: vec![],
            e_rows: [vec![], vec![], vec![]],
            h_rows: [vec![], vec![], vec![]],
            edges: EdgeTerms::default(),
            surface: SurfaceTerms::default(),
            conformal: ConformalTerms::default(),
        };
        let mut table = CoefTable::default();
        fill(&mut op, job, &mut table)?;
        op.apply_sheets(job);
        ConformalTerms::mark_edges(job, &mut op);
        op.build_ports(job, &mut table)?;
        op.ca = table.ca;
        op.cb = table.cb;
        op.eps = table.eps;
        for a in 0..3 {
            op.pml[a] = cpml_axis(job, a, dt)?;
        }
        rows(&mut op);
        op.edges = EdgeTerms::build(job, &op)?;
        op.surface = SurfaceTerms::build(job, &op)?;
        op.conformal = ConformalTerms::build(job, &op);
        Ok(op)
    }

    fn mark_rows(&mut self) {
        let nrows = self.len / self.stride[1];
        let row = self.stride[1];
        for c in 0..3 {
            let m = &self.mat[c];
            self.e_rows[c] =
                (0..nrows).into_par_iter().with_min_len(256).map(|r| m[r * row..(r + 1) * row].iter().any(|&m| m != PEC_INDEX)).collect();
        }
        let shift = |ax: usize| self.stride[ax] / row; // rows moved by one step along ax (0 along x)
        for c in 0..3 {
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (sa, sb) = (shift(a), shift(b));
            let er = &self.e_rows;
            self.h_rows[c] = (0..nrows)
                .into_par_iter()
                .with_min_len(1024)
                .map(|r| {
                    let get = |v: &Vec<bool>, i: usize| i < nrows && v[i];
                    get(&er[b], r) || get(&er[b], r + sa) || get(&er[a], r) || get(&er[a], r + sb)
                })
                .collect();
        }
    }

    /// Per-edge material: the average eps and sigma of the (up to four) cells
    /// sharing the edge; PEC if any of them is PEC. Edges on a PEC or
    /// absorbing (PEC-backed PML) face stay PEC; on a PMC face they are free.
    ///
    /// Parallel over (component, z plane); the result is the sequential
    /// one's bit for bit, table order included (first occurrence over c, k,
    /// j, i): each plane lists its distinct (eps, sigma) in first-occurrence
    /// order, those lists enter the table in (c, k) order, then each plane's
    /// local indices are mapped to table indices.
    fn fill_materials(&mut self, job: &SimJob, table: &mut CoefTable) -> Result<(), SimFailure> {
        let props: Vec<(f64, f64, bool)> = job.materials.iter().map(|m| (m.eps_r, m.sigma, m.pec)).collect();
        let plane = self.stride[2];
        let mut mat = std::mem::take(&mut self.mat);
        let mut locals = vec![];
        for (c, m) in mat.iter_mut().enumerate() {
            let this = &*self;
            let lists: Vec<Result<Vec<(f64, f64)>, SimFailure>> = m
                .par_chunks_mut(plane)
                .enumerate()
                .map(|(kz, out)| {
                    // kz is the array plane; logical k = kz - 1. Ghost planes and
                    // (for c = z) the top node plane stay PEC.
                    let top = if c == 2 { this.n[2] } else { this.n[2] + 1 };
                    if kz == 0 || kz > top {
                        return Ok(vec![]);
                    }
                    this.fill_plane(job, &props, c, kz - 1, out)
                })
                .collect();
            locals.push(lists);
        }
        // Sequential merge into the shared table, in the order the sequential fill met the materials.
        let mut maps: Vec<Vec<Option<[u8; 256]>>> = vec![];
        for lists in locals {
            let mut cm = vec![];
            for list in lists {
                let list = list?;
                let mut map = [0u8; 256];
                let mut ident = true;
                for (l, &(eps, sig)) in list.iter().enumerate() {
                    let gi = table.index(eps, sig, self.dt)?;
                    map[l + 1] = gi;
                    ident &= gi as usize == l + 1;
                }
                cm.push(if ident { None } else { Some(map) });
            }
            maps.push(cm);
        }
        for (m, cm) in mat.iter_mut().zip(&maps) {
            m.par_chunks_mut(plane).zip(cm.par_iter()).for_each(|(out, map)| {
                if let Some(map) = map {
                    out.iter_mut().for_each(|v| *v = map[*v as usize]);
                }
            });
        }
        self.mat = mat;
        Ok(())
    }

    /// One z plane (logical `k`) of E component `c` into `out` (that plane of
    /// the array, pre-filled with PEC): per edge a 1-based index into the
    /// returned list of distinct (eps, sigma), in first-occurrence order.
    fn fill_plane(&self, job: &SimJob, props: &[(f64, f64, bool)], c: usize, k: usize, out: &mut [u8]) -> Result<Vec<(f64, f64)>, SimFailure> {
        let n = self.n;
        let (a, b) = (Axis::from_index(c).others().0.index(), Axis::from_index(c).others().1.index());
        let mut hi = [n[0], n[1], n[2]];
        hi[c] = n[c] - 1;
        let wall = |ax: usize, p: usize| {
            (p == 0 && job.boundaries[ax][0] != Boundary::Pmc) || (p == n[ax] && job.boundaries[ax][1] != Boundary::Pmc)
        };
        let mut list: Vec<(f64, f64)> = vec![];
        // The last edge's neighbour cells and index: runs of edges with the same cells are the rule.
        let mut last: Option<(u64, u8)> = None;
        for j in 0..=hi[1] {
            let p = [0, j, k]; // x varies per edge below
            // On a face normal to a or b: PEC unless that face is PMC (y and z here, x per edge below).
            if (a != 0 && wall(a, p[a])) || (b != 0 && wall(b, p[b])) {
                continue;
            }
            // The sequential fill's neighbours in its order (da outer, db inner): the cell
            // row (None outside the grid) and the shift along x.
            let mut rows: [Option<&[u8]>; 4] = [None; 4];
            let mut dx = [0usize; 4];
            for (t, (da, dbb)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                let mut q = [0isize, j as isize, k as isize];
                q[a] -= da;
                q[b] -= dbb;
                dx[t] = if a == 0 { da } else if b == 0 { dbb } else { 0 } as usize;
                if q[1] >= 0 && q[2] >= 0 && (q[1] as usize) < n[1] && (q[2] as usize) < n[2] {
                    let start = n[0] * (q[1] as usize + n[1] * q[2] as usize);
                    rows[t] = Some(&job.cell_mat[start..start + n[0]]);
                }
            }
            let out_row = &mut out[(j + 1) * self.stride[1] + 1..][..=hi[0]];
            for (i, o) in out_row.iter_mut().enumerate() {
                if (a == 0 || b == 0) && wall(0, i) {
                    continue;
                }
                // 16 bits per neighbour: material + 1, or 0 where it lies outside the grid.
                let mut key = 0u64;
                for t in 0..4 {
                    if let Some(r) = rows[t] {
                        let x = i.wrapping_sub(dx[t]);
                        if x < n[0] {
                            key |= (r[x] as u64 + 1) << (16 * t);
                        }
                    }
                }
                if let Some((lk, li)) = last {
                    if lk == key {
                        *o = li;
                        continue;
                    }
                }
                // Same cells and summation order as the sequential fill, so the same bits.
                let (mut eps, mut sig, mut cnt, mut pec) = (0.0, 0.0, 0.0, false);
                for t in 0..4 {
                    let v = (key >> (16 * t)) & 0xffff;
                    if v != 0 {
                        let m = props[v as usize - 1];
                        pec |= m.2;
                        eps += m.0;
                        sig += m.1;
                        cnt += 1.0;
                    }
                }
                let idx = if pec {
                    PEC_INDEX
                } else {
                    let (eps, sig) = (eps / cnt, sig / cnt);
                    let kb = (eps.to_bits(), sig.to_bits());
                    (match list.iter().position(|&(e, s)| (e.to_bits(), s.to_bits()) == kb) {
                        Some(l) => l + 1,
                        None => {
                            // 256 distinct in one plane: the table overflows whatever the order.
                            if list.len() == 255 {
                                return Err(too_many_materials());
                            }
                            list.push((eps, sig));
                            list.len()
                        }
                    }) as u8
                };
                last = Some((key, idx));
                *o = idx;
            }
        }
        Ok(list)
    }

    /// Zero-thickness PEC sheets: every E edge lying in the rectangle.
    fn apply_sheets(&mut self, job: &SimJob) {
        for s in &job.sheets {
            for (c, flat) in self.sheet_edges(s) {
                self.mat[c][flat] = PEC_INDEX;
            }
        }
    }

    /// The E edges (component, flat index) lying in sheet `s`.
    pub fn sheet_edges(&self, s: &crate::job::Sheet) -> Vec<(usize, usize)> {
        let nrm = s.normal.index();
        let (u, v) = (s.normal.others().0.index(), s.normal.others().1.index());
        let mut out = vec![];
        for &(c, lo_u, hi_u, lo_v, hi_v) in &[
            // E along u: half-integer along u, so cells lo..hi-1; nodes lo..=hi along v.
            (u, s.lo[0], s.hi[0].saturating_sub(1), s.lo[1], s.hi[1]),
            (v, s.lo[0], s.hi[0], s.lo[1], s.hi[1].saturating_sub(1)),
        ] {
            if (c == u && s.hi[0] == s.lo[0]) || (c == v && s.hi[1] == s.lo[1]) {
                continue;
            }
            for iu in lo_u..=hi_u {
                for iv in lo_v..=hi_v {
                    let mut p = [0isize; 3];
                    p[nrm] = s.plane as isize;
                    p[u] = iu as isize;
                    p[v] = iv as isize;
                    out.push((c, self.at3(p)));
                }
            }
        }
        out
    }

    fn build_ports(&mut self, job: &SimJob, table: &mut CoefTable) -> Result<(), SimFailure> {
        for (pi, port) in job.ports.iter().enumerate() {
            match &port.kind {
                PortKind::Lumped { axis, start, len, r_ohm } => {
                    let c = axis.index();
                    let (a, b) = (axis.others().0.index(), axis.others().1.index());
                    if *len == 0 || start[c] + len > self.n[c] || start[a] > self.n[a] || start[b] > self.n[b] {
                        return Err(SimFailure::Invalid(format!("lumped port '{}' lies outside the grid", port.name)));
                    }
                    let g = &job.mesh;
                    // The edges' own lengths; the loop's dual lengths around them.
                    let dls: Vec<f64> = (0..*len).map(|m| g.cell(c, start[c] + m)).collect();
                    let dl = dls[0];
                    let total: f64 = dls.iter().sum();
                    let equal = dls.iter().all(|&x| x == dl);
                    let loop_d = [g.dual(a)[start[a]], g.dual(b)[start[b]]];
                    let area = loop_d[0] * loop_d[1];
                    let mut edges = vec![];
                    let mut src = vec![];
                    let mut w = vec![];
                    for m in 0..*len {
                        let dl = dls[m];
                        // Edge m's share of R and Vs: its length over the mean (1 for equal edges).
                        let share = if equal { 1.0 } else { dl * *len as f64 / total };
                        let r_e = r_ohm / *len as f64 * share;
                        let mut p = [start[0] as isize, start[1] as isize, start[2] as isize];
                        p[c] += m as isize;
                        let flat = self.at3(p);
                        // Resistive source (Taflove ch. 15): beta = dt dl / (2 R eps A).
                        let eps = {
                            let idx = self.mat[c][flat] as usize;
                            if idx == PEC_INDEX as usize {
                                return Err(SimFailure::Invalid(format!(
                                    "lumped port '{}' edge {m} lies on a conductor: it would be shorted",
                                    port.name
                                )));
                            }
                            table.eps[idx] as f64 * EPS0
                        };
                        let beta = self.dt * dl / (2.0 * r_e * eps * area);
                        let idx = table.push(
                            ((1.0 - beta) / (1.0 + beta)) as f32,
                            ((self.dt / eps) / (1.0 + beta)) as f32,
                            (eps / EPS0) as f32,
                        )?;
                        self.mat[c][flat] = idx;
                        src.push(((self.dt / (eps * r_e * area)) / (1.0 + beta)) as f32 * share as f32);
                        w.push(dl / dls[0]);
                        edges.push(flat);
                    }
                    let mid = edges[len / 2];
                    while self.lumped.len() < pi {
                        self.lumped.push(None);
                    }
                    self.lumped.push(Some(LumpedOp { comp: c, edges, mid, dl, w, loop_d, src, len: *len }));
                }
                PortKind::Waveguide { normal, plane, inward, e_axis, width_axis, a, source_offset, .. } => {
                    let r = normal.index();
                    let pe = e_axis.index();
                    let q = width_axis.index();
                    if r == pe || r == q || pe == q {
                        return Err(SimFailure::Invalid(format!("waveguide port '{}': axes must differ", port.name)));
                    }
                    let src_plane = *plane as isize - *inward as isize * *source_offset as isize;
                    if *plane == 0 || *plane >= self.n[r] || src_plane <= 0 || src_plane as usize >= self.n[r] {
                        return Err(SimFailure::Invalid(format!("waveguide port '{}': plane outside the grid", port.name)));
                    }
                    let g = &job.mesh;
                    let w0 = g.plane(*width_axis, 0);
                    let mut v_idx = vec![];
                    let mut h_lo = vec![];
                    let mut h_hi = vec![];
                    let mut weight = vec![];
                    let mut src_idx = vec![];
                    let mut src_amp = vec![];
                    for iq in 0..=self.n[q] {
                        let x = g.plane(*width_axis, iq) - w0;
                        let prof = (std::f64::consts::PI * x / a).sin();
                        if prof.abs() < 1e-12 {
                            continue;
                        }
                        for ie in 0..self.n[pe] {
                            let mut p = [0isize; 3];
                            p[q] = iq as isize;
                            p[pe] = ie as isize;
                            p[r] = *plane as isize;
                            v_idx.push(self.at3(p));
                            // Profile x the sample's local area (dual along the width, its edge along E).
                            weight.push(prof * (g.dual(q)[iq] * g.cell(pe, ie)));
                            p[r] = *plane as isize - 1;
                            h_lo.push(self.at3(p));
                            p[r] = *plane as isize;
                            h_hi.push(self.at3(p));
                            p[r] = src_plane;
                            let s = self.at3(p);
                            src_idx.push(s);
                            // A current sheet J = profile * g(t) / d_r, scaled by the local cb.
                            let cb = table.cb[self.mat[pe][s] as usize];
                            src_amp.push((prof as f32) * cb / g.dual(r)[src_plane as usize] as f32);
                        }
                    }
                    // Poynting along the normal: S_r = (e_pe x e_q).e_r E_pe H_q.
                    let orient = if (pe + 1) % 3 == q { 1.0 } else { -1.0 };
                    let i_sign = orient * *inward as f64;
                    while self.guides.len() < pi {
                        self.guides.push(None);
                    }
                    self.guides.push(Some(GuideOp { comp_e: pe, comp_h: q, v_idx, h_lo, h_hi, weight, i_sign, src_idx, src_amp }));
                }
            }
        }
        let np = job.ports.len();
        self.lumped.resize(np, None);
        self.guides.resize(np, None);
        Ok(())
    }

    /// Whether `job`'s driven port exists (the operator holds every port; the
    /// drive is the run's, so that drives of one structure share an operator).
    pub fn check_drive(&self, job: &SimJob) -> Result<(), SimFailure> {
        let np = self.lumped.len();
        if np > 0 && job.drive >= np {
            return Err(SimFailure::Invalid(format!("driven port {} does not exist ({} ports)", job.drive + 1, np)));
        }
        Ok(())
    }
}

/// Deduplicating coefficient table (index 0 = PEC). Indices are u8: the
/// material index is what every cell carries, so it is kept to one byte.
#[derive(Debug)]
struct CoefTable {
    ca: Vec<f32>,
    cb: Vec<f32>,
    eps: Vec<f32>,
    keys: Vec<(u64, u64)>,
}

impl Default for CoefTable {
    fn default() -> Self {
        CoefTable { ca: vec![0.0], cb: vec![0.0], eps: vec![1.0], keys: vec![(u64::MAX, u64::MAX)] }
    }
}

impl CoefTable {
    fn index(&mut self, eps_r: f64, sigma: f64, dt: f64) -> Result<u8, SimFailure> {
        let key = (eps_r.to_bits(), sigma.to_bits());
        if let Some(i) = self.keys.iter().position(|k| *k == key) {
            return Ok(i as u8);
        }
        let eps = eps_r * EPS0;
        let s = sigma * dt / (2.0 * eps);
        let i = self.push(((1.0 - s) / (1.0 + s)) as f32, ((dt / eps) / (1.0 + s)) as f32, eps_r as f32)?;
        self.keys[i as usize] = key;
        Ok(i)
    }
    fn push(&mut self, ca: f32, cb: f32, eps_r: f32) -> Result<u8, SimFailure> {
        if self.ca.len() >= 256 {
            return Err(too_many_materials());
        }
        self.ca.push(ca);
        self.cb.push(cb);
        self.eps.push(eps_r);
        // Port entries are never shared: a key that matches nothing.
        self.keys.push((u64::MAX - 1, self.ca.len() as u64));
        Ok((self.ca.len() - 1) as u8)
    }
}

fn too_many_materials() -> SimFailure {
    SimFailure::Invalid("more than 255 distinct edge materials".into())
}

/// How `Operator::build` fills the per-edge materials.
type FillFn = fn(&mut Operator, &SimJob, &mut CoefTable) -> Result<(), SimFailure>;

/// `v[q - 1]` for every padded position q of an axis of `dims` positions,
/// ghosts taking the nearest real entry, mapped by `f`.
fn padded(v: &[f64], dims: usize, f: impl Fn(f64) -> f32) -> Vec<f32> {
    (0..dims).map(|q| f(v[q.saturating_sub(1).min(v.len() - 1)])).collect()
}

/// CPML profile along axis `a` (Roden & Gedney 2000; Taflove ch. 7):
/// polynomial grading of order 3 for sigma and kappa, linear alpha. The
/// profile is a function of the depth into the layer; each layer's cells must
/// be uniform (the mesher pads with the domain's end cell), so the depth of a
/// line is its index distance from the layer's inner face over its cell count,
/// and sigma_max follows that layer's own cell.
fn cpml_axis(job: &SimJob, a: usize, dt: f64) -> Result<Option<Cpml1d>, SimFailure> {
    let [lo, hi] = job.pml[a];
    if lo == 0 && hi == 0 {
        return Ok(None);
    }
    let g = &job.mesh;
    let n = g.n()[a];
    if lo + hi > n {
        return Err(SimFailure::Invalid(format!("CPML of {lo} + {hi} cells along {} exceeds the {n} cells of the mesh", Axis::from_index(a).name())));
    }
    let dv = g.d(a);
    for (side, cells) in [(0, &dv[..lo]), (1, &dv[n - hi..])] {
        // Equal to rounding (lines given as coordinates differ in their last bits).
        if let Some(x) = cells.iter().find(|&&x| (x - cells[0]).abs() > 1e-9 * cells[0]) {
            return Err(SimFailure::Invalid(format!(
                "the CPML cells on the {}-{} face must all be equal (found {} m beside {} m): pad with the domain's end cell",
                Axis::from_index(a).name(),
                ["low", "high"][side],
                x,
                cells[0]
            )));
        }
    }
    let m = 3.0;
    let sigma_max = |d: f64| 0.8 * (m + 1.0) / (ETA0 * d);
    let sigma_lo = sigma_max(dv[0]);
    let sigma_hi = sigma_max(dv[n - 1]);
    let kappa_max = 3.0;
    // alpha keeps the CPML from absorbing near-DC/evanescent fields badly; ~ f_lo.
    let f_ref = if job.pulse.f0 > 0.0 { (job.pulse.f0 - 1.5 / job.pulse.tau).max(0.1 * job.pulse.f0) } else { 0.1 / job.pulse.tau };
    let alpha_max = 2.0 * std::f64::consts::PI * EPS0 * f_ref * 0.5;
    // Depth into the PML (in layer thicknesses) of a position x (in cells from
    // the low face), with that layer's sigma_max.
    let depth = |x: f64| -> (f64, f64) {
        let l = lo as f64;
        let h = (n - hi) as f64;
        if lo > 0 && x < l {
            ((l - x) / lo as f64, sigma_lo)
        } else if hi > 0 && x > h {
            ((x - h) / hi as f64, sigma_hi)
        } else {
            (0.0, 0.0)
        }
    };
    let coefs = |x: f64| -> (f32, f32, f32) {
        let (r, sigma_max) = depth(x);
        if r <= 0.0 {
            return (0.0, 0.0, 1.0);
        }
        let sigma = sigma_max * r.powf(m);
        let kappa = 1.0 + (kappa_max - 1.0) * r.powf(m);
        let alpha = alpha_max * (1.0 - r);
        let b = (-(sigma / kappa + alpha) * dt / EPS0).exp();
        let c = if sigma > 0.0 { sigma / (sigma * kappa + kappa * kappa * alpha) * (b - 1.0) } else { 0.0 };
        (b as f32, c as f32, (1.0 / kappa) as f32)
    };
    let mut p = Cpml1d { e_b: vec![], e_c: vec![], e_kinv: vec![], h_b: vec![], h_c: vec![], h_kinv: vec![] };
    for x in 0..=n {
        let (b, c, k) = coefs(x as f64);
        p.e_b.push(b);
        p.e_c.push(c);
        p.e_kinv.push(k);
    }
    for x in 0..n {
        let (b, c, k) = coefs(x as f64 + 0.5);
        p.h_b.push(b);
        p.h_c.push(c);
        p.h_kinv.push(k);
    }
    Ok(Some(p))
}

/// Sequential references for the parallel operator build (tests only).
#[cfg(test)]
impl Operator {
    /// The original sequential fill: the reference for `fill_materials`.
    fn fill_materials_serial(&mut self, job: &SimJob, table: &mut CoefTable) -> Result<(), SimFailure> {
        let g = &job.mesh;
        let n = self.n;
        for c in 0..3 {
            let (a, b) = (Axis::from_index(c).others().0.index(), Axis::from_index(c).others().1.index());
            let mut mat = vec![PEC_INDEX; self.len];
            let mut hi = [n[0], n[1], n[2]];
            hi[c] = n[c] - 1;
            for k in 0..=hi[2] {
                for j in 0..=hi[1] {
                    for i in 0..=hi[0] {
                        let p = [i, j, k];
                        // On a face normal to a or b: PEC unless that face is PMC.
                        let mut on_wall = false;
                        for &ax in &[a, b] {
                            if p[ax] == 0 && job.boundaries[ax][0] != Boundary::Pmc {
                                on_wall = true;
                            }
                            if p[ax] == n[ax] && job.boundaries[ax][1] != Boundary::Pmc {
                                on_wall = true;
                            }
                        }
                        let flat = self.at(i as isize, j as isize, k as isize);
                        if on_wall {
                            mat[flat] = PEC_INDEX;
                            continue;
                        }
                        let (mut eps, mut sig, mut cnt, mut pec) = (0.0, 0.0, 0.0, false);
                        for da in 0..2usize {
                            for dbb in 0..2usize {
                                let mut q = p;
                                if p[a] < da || p[b] < dbb {
                                    continue;
                                }
                                q[a] = p[a] - da;
                                q[b] = p[b] - dbb;
                                if q[a] >= n[a] || q[b] >= n[b] {
                                    continue;
                                }
                                let m = &job.materials[job.cell_mat[g.idx(q[0], q[1], q[2])] as usize];
                                pec |= m.pec;
                                eps += m.eps_r;
                                sig += m.sigma;
                                cnt += 1.0;
                            }
                        }
                        mat[flat] = if pec { PEC_INDEX } else { table.index(eps / cnt, sig / cnt, self.dt)? };
                    }
                }
            }
            self.mat[c] = mat;
        }
        Ok(())
    }

    /// The sequential `mark_rows`, the reference for the parallel one.
    fn mark_rows_serial(&mut self) {
        let nrows = self.len / self.stride[1];
        let row = self.stride[1];
        for c in 0..3 {
            self.e_rows[c] = (0..nrows).map(|r| self.mat[c][r * row..(r + 1) * row].iter().any(|&m| m != PEC_INDEX)).collect();
        }
        let shift = |ax: usize| self.stride[ax] / row; // rows moved by one step along ax (0 along x)
        for c in 0..3 {
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (sa, sb) = (shift(a), shift(b));
            let er = &self.e_rows;
            self.h_rows[c] = (0..nrows)
                .map(|r| {
                    let get = |v: &Vec<bool>, i: usize| i < nrows && v[i];
                    get(&er[b], r) || get(&er[b], r + sa) || get(&er[a], r) || get(&er[a], r + sb)
                })
                .collect();
        }
    }
}

#[cfg(test)]
mod build_tests {
    use super::*;
    use crate::job::*;

    /// Equal slices; on failure only the first difference is printed (they are large).
    fn same<T: PartialEq + std::fmt::Debug>(what: &str, a: &[T], b: &[T]) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!("{what}: first difference at {i}: {:?} vs {:?}", a[i], b[i]);
        }
    }

    fn same_f32(what: &str, a: &[f32], b: &[f32]) {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b), "{what}");
    }

    /// Every field of two operators, floats by their bits.
    fn assert_same(a: &Operator, b: &Operator, label: &str) {
        assert_eq!((a.n, a.dims, a.stride, a.len), (b.n, b.dims, b.stride, b.len), "{label}: shape");
        assert_eq!(a.dt.to_bits(), b.dt.to_bits(), "{label}: dt");
        for c in 0..3 {
            same(&format!("{label}: mat[{c}]"), &a.mat[c], &b.mat[c]);
            same(&format!("{label}: e_rows[{c}]"), &a.e_rows[c], &b.e_rows[c]);
            same(&format!("{label}: h_rows[{c}]"), &a.h_rows[c], &b.h_rows[c]);
        }
        same_f32(&format!("{label}: ca"), &a.ca, &b.ca);
        same_f32(&format!("{label}: cb"), &a.cb, &b.cb);
        same_f32(&format!("{label}: eps"), &a.eps, &b.eps);
        assert_eq!(a.db.to_bits(), b.db.to_bits(), "{label}: db");
        for ax in 0..3 {
            same_f32(&format!("{label}: inv_h[{ax}]"), &a.inv_h[ax], &b.inv_h[ax]);
            same_f32(&format!("{label}: inv_e[{ax}]"), &a.inv_e[ax], &b.inv_e[ax]);
        }
        // Debug prints every f32/f64 so that it reads back exactly: equal text, equal values.
        assert_eq!(format!("{:?}", a.pml), format!("{:?}", b.pml), "{label}: pml");
        assert_eq!(a.pmc, b.pmc, "{label}: pmc");
        assert_eq!(format!("{:?}", a.lumped), format!("{:?}", b.lumped), "{label}: lumped");
        assert_eq!(format!("{:?}", a.guides), format!("{:?}", b.guides), "{label}: guides");
    }

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
    }

    /// The parallel build against the sequential reference, on 1, 3 and 8 threads.
    fn check(job: &SimJob) -> Result<Operator, SimFailure> {
        let reference = in_pool(1, || Operator::build(job, Operator::fill_materials_serial, Operator::mark_rows_serial));
        for threads in [1, 3, 8] {
            let op = in_pool(threads, || Operator::new(job));
            match (&op, &reference) {
                (Ok(a), Ok(b)) => assert_same(a, b, &format!("{} on {threads} threads", job.label)),
                (a, b) => assert_eq!(a.as_ref().err(), b.as_ref().err(), "{}: outcome on {threads} threads", job.label),
            }
        }
        reference
    }

    /// A box with PMC and PEC faces, CPML along z, a PEC sheet and a pseudo-random
    /// mix of three dielectrics and metal: many distinct edge averages, first met
    /// in different planes, so the table order is exercised.
    fn mixed_job() -> SimJob {
        let mut job = crate::bench::box_job(30, 1);
        job.label = "mixed".into();
        job.boundaries = [[Boundary::Pmc; 2], [Boundary::Pec, Boundary::Pmc], [Boundary::Absorbing; 2]];
        job.pml = [[0, 0], [0, 0], [5, 5]];
        job.materials.push(Material::pec());
        job.materials.push(Material { name: "ptfe".into(), eps_r: 2.2, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
        let mut s = 12345u64;
        for (idx, m) in job.cell_mat_mut().iter_mut().enumerate() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Vacuum below a third of the height, so later planes meet new averages.
            if idx >= 30 * 30 * 10 {
                *m = ((s >> 33) % 4) as u8;
            }
        }
        std::sync::Arc::make_mut(&mut job.cell_mat)[job.mesh.idx(7, 15, 15)] = 0; // the port's edges must not touch metal
        for p in [(7, 15, 14), (6, 15, 14), (7, 14, 14), (6, 14, 14), (7, 15, 15), (6, 15, 15), (7, 14, 15), (6, 14, 15)] {
            std::sync::Arc::make_mut(&mut job.cell_mat)[job.mesh.idx(p.0, p.1, p.2)] = 0;
        }
        job.ports = vec![Port { name: "p1".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [7, 15, 14], len: 2, r_ohm: 50.0 } }];
        job.sheets.push(Sheet { normal: Axis::Z, plane: 20, lo: [3, 4], hi: [12, 9] });
        job
    }

    #[test]
    fn parallel_build_matches_sequential() {
        let mut jobs = vec![crate::bench::box_job(40, 1), crate::bench::box_job(64, 1), mixed_job()];
        jobs.extend(crate::bench::population_jobs(2, 8000, 10));
        for name in ["wr28_iris_filter", "microstrip_lowpass"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("designs/{name}.ron"));
            let design = crate::design::Design::load(&path).unwrap();
            jobs.extend(design.jobs(&design.midpoint_values(), &[0, 1], None).unwrap());
        }
        for job in &jobs {
            let op = check(job).unwrap_or_else(|e| panic!("{}: {e}", job.label));
            eprintln!("{}: {} table entries", job.label, op.ca.len());
        }
    }

    #[test]
    fn parallel_build_keeps_errors() {
        // Too many materials within one plane, and only across planes.
        let mut one_plane = crate::bench::box_job(20, 1);
        one_plane.materials = (0..250).map(|m| Material { name: format!("m{m}"), eps_r: 1.0 + 0.01 * m as f64, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] }).collect();
        for (idx, m) in one_plane.cell_mat_mut().iter_mut().enumerate() {
            *m = (idx % 250) as u8;
        }
        let mut layered = one_plane.clone();
        layered.mesh = Mesh::uniform([6, 6, 200], [1e-3; 3], [0.0; 3]);
        layered.pml = [[1, 1], [1, 1], [5, 5]];
        layered.ports = vec![];
        layered.cell_mat = (0..layered.mesh.cells()).map(|c| (c / 36) as u8).collect::<Vec<u8>>().into();
        // A lumped port shorted by metal: the error after the fill.
        let mut shorted = crate::bench::box_job(20, 1);
        shorted.materials[1].pec = true;
        shorted.ports = vec![Port { name: "p1".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [10, 10, 9], len: 2, r_ohm: 50.0 } }];
        let too_many = Some(SimFailure::Invalid("more than 255 distinct edge materials".into()));
        assert_eq!(check(&one_plane).err(), too_many);
        assert_eq!(check(&layered).err(), too_many);
        let e = check(&shorted).err().expect("a shorted port must fail");
        assert!(e.to_string().contains("lies on a conductor"), "{e}");
    }
}
