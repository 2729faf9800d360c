//! Pieces shared by the 3D SCN and the 2D shunt-node engines: job checks,
//! graded padding loss, matched terminations and waveguide-port geometry (the
//! stop rule is the engines' one, `engine::stop`).

use std::collections::HashMap;
use std::hash::Hash;

use rayon::prelude::*;

use crate::consts::{EPS0, ETA0, MU0};
use crate::job::{Axis, Boundary, PortKind, PortTrace, SimFailure, SimJob};

/// The cells of a job's mesh as the TLM engines see them: uniform along each
/// axis (the SCN and the 2D shunt node are uniform-mesh methods here;
/// [`check_job`] refuses a graded mesh).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cells {
    pub n: [usize; 3],
    pub d: [f64; 3],
}

impl Cells {
    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }
    /// Linear index of cell (i, j, k); x varies fastest (as `Mesh::idx`).
    #[inline]
    pub fn idx(&self, i: usize, j: usize, k: usize) -> usize {
        (k * self.n[1] + j) * self.n[0] + i
    }
}

/// The job's cells; along an axis that is not uniform (refused by
/// [`check_job`]) the mean cell.
pub(crate) fn cells(job: &SimJob) -> Cells {
    let m = &job.mesh;
    let n = m.n();
    let d = std::array::from_fn(|a| m.uniform_d(a).unwrap_or_else(|| (m.lines(a)[n[a]] - m.lines(a)[0]) / n[a].max(1) as f64));
    Cells { n, d }
}

/// Nodes per slab of the parallel setup loops: a few slabs per thread (the
/// results do not depend on it, see [`node_kinds`]).
pub(super) fn slab_len(total: usize) -> usize {
    total.div_ceil(4 * rayon::current_num_threads()).max(1024)
}

/// Per-node flags and coefficient kinds of a mesh of `dims` nodes (x fastest),
/// built in parallel over slabs of `slab` consecutive nodes. `node(idx, coords)`
/// gives the node's flags and the inputs its coefficients depend on (`None`:
/// kind 0, no coefficients); `coef` computes them from the inputs (only when
/// they differ from those of the last few nodes: neighbours mostly share them), `key`
/// identifies equal coefficients. The table lists `plain` first, then the
/// others in the order of their first node, exactly as one sequential pass
/// would, whatever `slab` is: each slab keeps its own table in first-occurrence
/// order, the tables are merged slab by slab, then the kinds remapped.
pub(super) fn node_kinds<T, I, C, K>(
    dims: [usize; 3],
    slab: usize,
    plain: C,
    node: impl Fn(usize, [usize; 3]) -> (T, Option<I>) + Sync,
    coef: impl Fn(&I) -> C + Sync,
    key: impl Fn(&C) -> K + Sync,
) -> (Vec<T>, Vec<u32>, Vec<C>)
where
    T: Copy + Default + Send + Sync,
    I: Copy + PartialEq,
    C: Copy + Send + Sync,
    K: Copy + Eq + Hash + Send,
{
    const NONE: u32 = u32::MAX;
    const RECENT: usize = 4;
    let total = dims[0] * dims[1] * dims[2];
    let slab = slab.max(1);
    let mut flags = vec![T::default(); total];
    let mut kind = vec![0u32; total];
    let locals: Vec<Vec<(K, C)>> = flags
        .par_chunks_mut(slab)
        .zip(kind.par_chunks_mut(slab))
        .enumerate()
        .map(|(s, (fl, kd))| {
            let mut table: Vec<(K, C)> = vec![];
            let mut index: HashMap<K, u32> = HashMap::new();
            // The last few distinct inputs (a row's walls and interior) with their local ids.
            let mut recent: Vec<(I, u32)> = Vec::with_capacity(RECENT);
            let mut next_slot = 0;
            let i0 = s * slab;
            let mut c = [i0 % dims[0], (i0 / dims[0]) % dims[1], i0 / (dims[0] * dims[1])];
            for (o, (f, k)) in fl.iter_mut().zip(kd.iter_mut()).enumerate() {
                let (fv, inp) = node(i0 + o, c);
                *f = fv;
                *k = match inp {
                    None => NONE,
                    Some(inp) => match recent.iter().find(|r| r.0 == inp) {
                        Some(&(_, id)) => id,
                        None => {
                            let cf = coef(&inp);
                            let kk = key(&cf);
                            let next = table.len() as u32;
                            let id = *index.entry(kk).or_insert(next);
                            if id == next {
                                table.push((kk, cf));
                            }
                            if recent.len() < RECENT {
                                recent.push((inp, id));
                            } else {
                                recent[next_slot] = (inp, id);
                                next_slot = (next_slot + 1) % RECENT;
                            }
                            id
                        }
                    },
                };
                c[0] += 1;
                if c[0] == dims[0] {
                    c[0] = 0;
                    c[1] += 1;
                    if c[1] == dims[1] {
                        c[1] = 0;
                        c[2] += 1;
                    }
                }
            }
            table
        })
        .collect();
    let mut coefs = vec![plain];
    let mut index: HashMap<K, u32> = HashMap::from([(key(&plain), 0)]);
    let maps: Vec<Vec<u32>> = locals
        .into_iter()
        .map(|t| {
            t.into_iter()
                .map(|(kk, c)| {
                    let next = coefs.len() as u32;
                    let id = *index.entry(kk).or_insert(next);
                    if id == next {
                        coefs.push(c);
                    }
                    id
                })
                .collect()
        })
        .collect();
    kind.par_chunks_mut(slab).zip(&maps).for_each(|(kd, m)| {
        for k in kd {
            *k = if *k == NONE { 0 } else { m[*k as usize] };
        }
    });
    (flags, kind, coefs)
}

/// [`pad_loss`] tabulated per axis at the node positions `pos(a, i)`, `i < n[a]`:
/// its value along an axis depends on the position along that axis only.
pub(super) fn pad_loss_axes(job: &SimJob, n: [usize; 3], pos: impl Fn(usize, usize) -> f64) -> [Vec<f64>; 3] {
    std::array::from_fn(|a| (0..n[a]).map(|i| pad_loss(job, [pos(a, i); 3])[a]).collect())
}

/// Polynomial order of the loss grading in the absorbing padding.
pub(super) const PAD_ORDER: i32 = 3;
/// Normal-incidence attenuation (nepers per cell) reached in the outermost padding
/// cell. Round trip through P cells: 2 * PAD_G_MAX * P / (PAD_ORDER + 1) nepers,
/// about -60 dB for P = 10; larger values make the lumped per-node loss itself reflect.
pub(super) const PAD_G_MAX: f64 = 1.6;

/// Reject jobs the engines cannot interpret, before any allocation.
pub(super) fn check_job(job: &SimJob) -> Result<(), SimFailure> {
    let bad = |m: String| Err(SimFailure::Invalid(format!("{}: {m}", job.label)));
    if let Some(m) = job.materials.iter().find(|m| !m.poles.is_empty()) {
        return bad(format!("material '{}' is dispersive: the TLM engines model constant eps, sigma and mu only (use the FDTD engine)", m.name));
    }
    if let Some(c) = job.surfaces.conductors.first() {
        return bad(format!("conductor '{}': the TLM engines have no lossy metal (use the FDTD engine)", c.name));
    }
    if let Some(l) = job.loads.first() {
        return bad(format!("load '{}': the TLM engines have no lumped loads (use the FDTD engine)", l.name));
    }
    if let Err(a) = job.mesh.uniform_spacing() {
        let i = a.index();
        return bad(format!(
            "the TLM engines (3D SCN, 2D shunt node) need a uniform mesh, but the cells along {} range from {:.4e} to {:.4e} m: use the FDTD engine for a graded mesh",
            a.name(),
            job.mesh.min_d(i),
            job.mesh.max_d(i)
        ));
    }
    let g = cells(job);
    if g.n.contains(&0) || g.d.iter().any(|&d| !(d > 0.0 && d.is_finite())) {
        return bad(format!("bad grid {:?} / {:?}", g.n, g.d));
    }
    if job.cell_mat.len() != g.cells() {
        return bad(format!("cell_mat has {} entries for {} cells", job.cell_mat.len(), g.cells()));
    }
    if job.materials.is_empty() || job.cell_mat.par_iter().any(|&m| m as usize >= job.materials.len()) {
        return bad("material index out of range".into());
    }
    for m in &job.materials {
        if !m.pec && !(m.eps_r >= 1.0 && m.mu_r >= 1.0 && m.sigma >= 0.0) {
            return bad(format!("material {} needs eps_r, mu_r >= 1 and sigma >= 0", m.name));
        }
    }
    if job.drive >= job.ports.len() {
        return bad(format!("drive port {} of {}", job.drive, job.ports.len()));
    }
    if job.stop.check_every == 0 {
        return bad("stop.check_every is 0".into());
    }
    for (a, pads) in job.pml.iter().enumerate() {
        if pads[0] + pads[1] >= g.n[a] {
            return bad(format!("padding {:?} fills axis {}", pads, Axis::from_index(a).name()));
        }
    }
    Ok(())
}

/// Per-axis normalised padding attenuation (nepers per cell at normal
/// incidence) of the node at `pos` (in cells from the grid origin along each
/// axis: `i + 1/2` for a node at a cell centre, `i` for one on grid plane i):
/// zero outside the padding and on guide ends that get a modal termination
/// (there the padding is plain guide), graded as `PAD_G_MAX * depth^PAD_ORDER`
/// inside it.
pub(super) fn pad_loss(job: &SimJob, pos: [f64; 3]) -> [f64; 3] {
    let mut g = [0.0; 3];
    for a in 0..3 {
        let n = job.mesh.n()[a];
        for side in 0..2 {
            let p = job.pml[a][side];
            if p == 0 || job.boundaries[a][side] != Boundary::Absorbing || modal_port(job, a, side).is_some() {
                continue;
            }
            let depth = if side == 0 { (p as f64 - pos[a]) / p as f64 } else { (pos[a] - (n - p) as f64) / p as f64 };
            if depth > 0.0 {
                g[a] += PAD_G_MAX * depth.min(1.0).powi(PAD_ORDER);
            }
        }
    }
    g
}

/// Conductivities (S/m) the padding adds to each E component and magnetic
/// conductivities (ohm/m) to each H component of a cell with per-axis padding
/// attenuation `g` (see [`pad_loss`]). Padding normal to axis `a` loads only the
/// field components transverse to `a` (a uniaxial absorber without the
/// inverse-loss normal terms of a true PML): matched, so reflectionless at
/// normal incidence; oblique waves see part of the plane-wave mismatch.
pub(super) fn pad_sigmas(g: [f64; 3], d: [f64; 3], eps_r: f64, mu_r: f64) -> ([f64; 3], [f64; 3]) {
    let eta = ETA0 * (mu_r / eps_r).sqrt();
    let (mut se, mut sm) = ([0.0; 3], [0.0; 3]);
    for a in 0..3 {
        if g[a] == 0.0 {
            continue;
        }
        // Matched lossy medium: attenuation alpha = sigma * eta, per cell alpha * d = g.
        let sig = g[a] / (eta * d[a]);
        for c in (0..3).filter(|&c| c != a) {
            se[c] += sig;
            sm[c] += sig * MU0 * mu_r / (EPS0 * eps_r);
        }
    }
    (se, sm)
}

/// The waveguide port (index) whose guide ends at domain face (`axis`, `side`):
/// it looks along `axis` and that face lies behind it. Such a face gets a TE10
/// modal termination ([`ModalEnd`]) instead of padding loss.
pub(super) fn modal_port(job: &SimJob, axis: usize, side: usize) -> Option<usize> {
    if job.boundaries[axis][side] != Boundary::Absorbing {
        return None;
    }
    job.ports.iter().position(|p| match p.kind {
        PortKind::Waveguide { normal, inward, .. } => normal.index() == axis && (inward > 0) == (side == 0),
        _ => false,
    })
}

/// Reflection coefficient that terminates a link line of impedance `z0` in the
/// load `z_load` (both in ohms): a matched end for a wave of that impedance.
pub(super) fn gamma(z_load: f64, z0: f64) -> f64 {
    (z_load - z0) / (z_load + z0)
}

/// Bessel function J1 (power series below 8, Hankel asymptotic expansion
/// above; absolute error below 1e-9, ample for a convolution kernel).
pub(super) fn bessel_j1(x: f64) -> f64 {
    if x.abs() < 8.0 {
        let (h, mut term, mut sum) = (0.5 * x, 0.5 * x, 0.0);
        for k in 0..40 {
            sum += term;
            term *= -h * h / ((k + 1) as f64 * (k + 2) as f64);
        }
        return sum;
    }
    let ax = x.abs();
    let mu = 4.0;
    let y = 8.0 * ax;
    let (mut p, mut q) = (1.0, 0.0);
    // P and Q series in 1/(8x); terms of (mu - (2k-1)^2) products.
    let mut t = 1.0;
    for k in 1..12 {
        t *= (mu - ((2 * k - 1) as f64).powi(2)) / (k as f64 * y);
        match k % 4 {
            1 => q += t,
            2 => p -= t,
            3 => q -= t,
            _ => p += t,
        }
    }
    let chi = ax - 0.75 * std::f64::consts::PI;
    let v = (2.0 / (std::f64::consts::PI * ax)).sqrt() * (p * chi.cos() - q * chi.sin());
    if x < 0.0 {
        -v
    } else {
        v
    }
}

/// Longest kernel kept for the modal termination (steps); older history is
/// dropped, which only matters for frequencies within a hair of cutoff.
const MODAL_KERNEL_MAX: usize = 1 << 15;

/// Exact TE10 termination of a uniform guide at a domain face. The outgoing
/// pulses on the face's E-polarised normal links are split into the TE10
/// profile and a remainder. The mode is reflected so that the face sees the
/// guide's own impedance `Z_TE(w) = eta w / sqrt(w^2 - wc^2)`, written in time
/// as `V = eta_l (I - wc J1(wc t) * I)` (`*`: convolution; `eta_l` is eta in
/// link units); the remainder (evanescent modes) sees a plane-wave match.
pub(crate) struct ModalEnd {
    /// Profile weight of each face link, in the order the engine lists them.
    pub phi: Vec<f64>,
    phi2: f64,
    /// eta_l / Z0.
    rho: f64,
    eta_l: f64,
    z0: f64,
    wc_dt: f64,
    kern: Vec<f64>,
    /// The current history `I`, newest first from `rev[start]` (the buffer grows
    /// towards its front), so the convolution reads it forward, as the kernel.
    rev: Vec<f64>,
    start: usize,
}

impl ModalEnd {
    /// `eta_l`: the medium's impedance in link units (eta d_e / d_w); `fc`: TE10 cutoff there.
    pub fn new(phi: Vec<f64>, eta_l: f64, z0: f64, fc: f64, dt: f64) -> ModalEnd {
        let phi2 = phi.iter().map(|p| p * p).sum();
        ModalEnd { phi, phi2, rho: eta_l / z0, eta_l, z0, wc_dt: 2.0 * std::f64::consts::PI * fc * dt, kern: vec![], rev: vec![], start: 0 }
    }

    /// Plane-wave reflection coefficient used for the non-TE10 remainder.
    pub fn gamma_rest(&self) -> f64 {
        (self.rho - 1.0) / (self.rho + 1.0)
    }

    /// Convolution kernel value `k` (0-based: `wc dt J1(wc (k + 1) dt)`).
    pub fn kernel_value(&self, k: usize) -> f64 {
        self.wc_dt * bessel_j1(self.wc_dt * (k + 1) as f64)
    }

    /// Length the convolution kernel reaches in a run of `steps` steps.
    pub fn kernel_len(steps: usize) -> usize {
        steps.min(MODAL_KERNEL_MAX)
    }

    /// wc dt (identifies the kernel values).
    pub fn wc_dt(&self) -> f64 {
        self.wc_dt
    }

    /// (sum phi^2, eta_l / Z0, eta_l, Z0, remainder reflection): the scalars the GPU twin needs.
    pub fn scalars(&self) -> (f64, f64, f64, f64, f64) {
        (self.phi2, self.rho, self.eta_l, self.z0, self.gamma_rest())
    }

    /// Prepend the newest current to the history (amortised O(1): the buffer doubles, the history moved to its end).
    fn push_history(&mut self, i: f64) {
        if self.start == 0 {
            let len = self.rev.len();
            let grown = (2 * len).max(256);
            let mut r = vec![0.0; grown];
            r[grown - len..].copy_from_slice(&self.rev);
            self.rev = r;
            self.start = grown - len;
        }
        self.start -= 1;
        self.rev[self.start] = i;
    }

    /// From the outgoing pulses `b` at the face, the returning pulses (written to `a`).
    pub fn reflect(&mut self, b: &[f64], a: &mut [f64]) {
        let bm = b.iter().zip(&self.phi).map(|(x, p)| x * p).sum::<f64>() / self.phi2;
        let n = self.rev.len() - self.start;
        while self.kern.len() < n.min(MODAL_KERNEL_MAX) {
            let k = self.kern.len();
            self.kern.push(self.kernel_value(k));
        }
        // C = wc dt sum_{m>=1} J1(wc m dt) I_{n-m}
        let k = self.kern.len().min(n);
        let c = history_dot(&self.kern[..k], &self.rev[self.start..self.start + k]);
        let am = (bm * (self.rho - 1.0) - self.eta_l * c) / (1.0 + self.rho);
        self.push_history((bm - am) / self.z0);
        let g = self.gamma_rest();
        for ((ai, bi), p) in a.iter_mut().zip(b).zip(&self.phi) {
            *ai = g * (bi - bm * p) + am * p;
        }
    }
}

/// `sum_j kern[j] * newest[j]` (the history newest first), in sixteen
/// partial sums that vectorise (AVX2 where the CPU has it). This convolution is
/// O(steps) per step and was a quarter of a 2D job's time as one serial chain
/// of additions. The order of the additions (not the products) differs from a
/// serial sum: rounding only, ~1e-16 relative; the same on every CPU (the
/// CUDA twin sums in yet another order, over its threads).
fn history_dot(kern: &[f64], newest: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has the feature.
            return unsafe { history_dot_avx2(kern, newest) };
        }
    }
    history_dot_any(kern, newest)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn history_dot_avx2(kern: &[f64], newest: &[f64]) -> f64 {
    history_dot_any(kern, newest)
}

#[inline(always)]
fn history_dot_any(kern: &[f64], newest: &[f64]) -> f64 {
    const L: usize = 16;
    debug_assert_eq!(kern.len(), newest.len());
    let mut acc = [0f64; L];
    let (kc, kt) = kern.as_chunks::<L>();
    let (hc, ht) = newest.as_chunks::<L>();
    for (k, h) in kc.iter().zip(hc) {
        for l in 0..L {
            acc[l] += k[l] * h[l];
        }
    }
    let tail: f64 = kt.iter().zip(ht).map(|(k, h)| k * h).sum();
    // Pairwise, lanes l and l + 8, then l + 4, ...: the vectors' own halving order.
    let mut w = L;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0] + tail
}

/// Where the nodes of a TLM mesh sit, axis by axis, relative to the job's grid.
///
/// Along a *cell* axis a node sits at each cell centre (n nodes) and walls lie
/// halfway between nodes: a PEC cell or a sheet shorts the link crossing its
/// face. That is the classic TLM arrangement; the 3D SCN uses it on every axis.
///
/// Along a *nodal* axis a node sits on each grid plane (n + 1 nodes), where the
/// Yee cell keeps the E components tangential to walls normal to that axis; a
/// node touching a PEC cell, on a PEC face or in a sheet is shorted (V = 0: it
/// returns every pulse inverted, a wall at the node). The 2D shunt node uses it
/// on both mesh axes: its only E component is tangential to every wall, and the
/// shunt node is Yee's 2D scheme at its Courant limit (Johns; Chen et al. 1991),
/// so the conductors are then the very ones FDTD sees (FDTD zeroes the E edges on
/// the closed PEC cells). With walls halfway between nodes instead, a re-entrant
/// PEC corner (an iris edge) is met half a cell away from where Yee meets it,
/// which shifts the iris's coupling at first order in the cell, opposite to
/// FDTD's own error (a WR-28 iris of 14 cells aperture and 2 cells thickness at
/// 32 GHz: S21 -3.87 dB against FDTD's -4.74 dB; the fine-mesh answer, -4.30 dB,
/// lies halfway). Lumped ports then sit on their grid node, sources and
/// reference planes on their grid planes, and a sheet of zero width still
/// shorts its line of nodes.
///
/// The SCN stays on cell centres. Its H lives at the node with its E, so a node
/// on a conductor must keep the tangential H and the normal E; tried on the
/// nodal lattice of an H-plane slab (WR-28, a/28): shorting every link of such
/// nodes puts the walls a quarter cell inside the guide (28 cells act as 27.5);
/// shorting only their E sub-nodes lets pulses cross the metal through the H
/// sub-nodes; adding the image of the opposite link on links into metal makes
/// flat walls exact, but the iris edges then block too much (S21 -5.27 dB
/// against FDTD's -4.74 dB; the filter's passband +0.6% against FDTD's). So the
/// SCN keeps the first-order corner difference from FDTD described above.
#[derive(Debug, Clone)]
pub(crate) struct Lattice {
    pub nodal: [bool; 3],
    /// Nodes along each axis.
    pub n: [usize; 3],
}

/// The medium of one node: the average of the cells around it (as FDTD
/// averages the cells around an E edge), or a short.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NodeMedium {
    pub eps_r: f64,
    pub mu_r: f64,
    pub sigma: f64,
}

impl Lattice {
    pub fn new(job: &SimJob, nodal: [bool; 3]) -> Lattice {
        Lattice { nodal, n: std::array::from_fn(|a| job.mesh.n()[a] + nodal[a] as usize) }
    }

    /// Linear index of node c (x fastest).
    pub fn idx(&self, c: [usize; 3]) -> usize {
        (c[2] * self.n[1] + c[1]) * self.n[0] + c[0]
    }

    pub fn count(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Position of node i along a, in cells from the grid origin.
    pub fn pos(&self, a: usize, i: usize) -> f64 {
        if self.nodal[a] {
            i as f64
        } else {
            i as f64 + 0.5
        }
    }

    /// Cells touching node i along a.
    fn touching(&self, job: &SimJob, a: usize, i: usize) -> std::ops::Range<usize> {
        if self.nodal[a] {
            i.saturating_sub(1)..(i + 1).min(job.mesh.n()[a])
        } else {
            i..i + 1
        }
    }

    /// The cells around node c: whether any is PEC, and the mean medium of all of them.
    pub fn medium(&self, job: &SimJob, c: [usize; 3]) -> (bool, NodeMedium) {
        let (mut pec, mut cnt) = (false, 0.0);
        let mut m = NodeMedium { eps_r: 0.0, mu_r: 0.0, sigma: 0.0 };
        for k in self.touching(job, 2, c[2]) {
            for j in self.touching(job, 1, c[1]) {
                for i in self.touching(job, 0, c[0]) {
                    let mat = &job.materials[job.cell_mat[job.mesh.idx(i, j, k)] as usize];
                    pec |= mat.pec;
                    if !mat.pec {
                        m.eps_r += mat.eps_r;
                        m.mu_r += mat.mu_r;
                        m.sigma += mat.sigma;
                        cnt += 1.0;
                    }
                }
            }
        }
        if cnt > 0.0 {
            m.eps_r /= cnt;
            m.mu_r /= cnt;
            m.sigma /= cnt;
        } else {
            m = NodeMedium { eps_r: 1.0, mu_r: 1.0, sigma: 0.0 };
        }
        (pec, m)
    }

    /// The shorted nodes: those touching a PEC cell along a nodal axis and those
    /// on a PEC face or in a sheet normal to a nodal axis. (Nodes inside PEC cells
    /// along cell axes only, and sheets normal to a cell axis, are the engine's
    /// business: dead nodes and shorted links.)
    pub fn shorted(&self, job: &SimJob) -> Vec<bool> {
        let mut s = vec![false; self.count()];
        if !self.nodal.iter().any(|&x| x) {
            return s;
        }
        let (n0, n1) = (self.n[0], self.n[1]);
        s.par_iter_mut().enumerate().for_each(|(idx, x)| {
            let c = [idx % n0, (idx / n0) % n1, idx / (n0 * n1)];
            let face = (0..3).any(|a| {
                self.nodal[a]
                    && ((c[a] == 0 && job.boundaries[a][0] == Boundary::Pec) || (c[a] + 1 == self.n[a] && job.boundaries[a][1] == Boundary::Pec))
            });
            *x = face || self.medium(job, c).0;
        });
        for sh in &job.sheets {
            let d = sh.normal.index();
            if !self.nodal[d] || sh.plane >= self.n[d] {
                continue;
            }
            let (u, v) = sh.normal.others();
            let range = |ax: usize, k: usize| if self.nodal[ax] { sh.lo[k]..(sh.hi[k] + 1).min(self.n[ax]) } else { sh.lo[k]..sh.hi[k].min(self.n[ax]) };
            for iv in range(v.index(), 1) {
                for iu in range(u.index(), 0) {
                    let mut c = [0; 3];
                    c[d] = sh.plane;
                    c[u.index()] = iu;
                    c[v.index()] = iv;
                    s[self.idx(c)] = true;
                }
            }
        }
        s
    }

    /// Whether a sheet normal to a *cell* axis covers node column (u, v) (indices
    /// along `Axis::others(normal)`): nodes `lo..=hi` along nodal axes, the cells
    /// of grid nodes `lo..=hi` (`lo..hi`) along cell axes. The links crossing the
    /// sheet's plane there are shorted.
    pub fn sheet_covers(&self, sh: &crate::job::Sheet, u: usize, v: usize) -> bool {
        let (au, av) = sh.normal.others();
        let inside = |ax: usize, k: usize, i: usize| if self.nodal[ax] { sh.lo[k] <= i && i <= sh.hi[k] } else { sh.lo[k] <= i && i < sh.hi[k] };
        inside(au.index(), 0, u) && inside(av.index(), 1, v)
    }
}

/// A TE10 waveguide port resolved onto the node lattice.
#[derive(Debug, Clone)]
pub(crate) struct WgPort {
    pub normal: usize,
    /// The reference plane: grid plane `plane` (node layer `plane` on a nodal
    /// axis; the face between node layers `plane - 1` and `plane` on a cell axis).
    pub plane: usize,
    pub inward: f64,
    pub e: usize,
    pub w: usize,
    /// Node layer (along `normal`) of the source: the grid plane `source_offset`
    /// cells behind the reference plane on a nodal axis; on a cell axis the cell
    /// centre `source_offset - 1/2` cells behind it.
    pub src_layer: usize,
    /// Modal normalisation sqrt(2 / (a b)), so that V I is the mode's power.
    pub norm: f64,
    /// sin(pi (w - w0) / a) at each node along `w`.
    pub profile: Vec<f64>,
}

impl WgPort {
    pub fn resolve(job: &SimJob, kind: &PortKind, lat: &Lattice) -> Result<WgPort, SimFailure> {
        let PortKind::Waveguide { normal, plane, inward, e_axis, width_axis, a, source_offset, .. } = *kind else {
            unreachable!("resolve is only called for waveguide ports")
        };
        let g = cells(job);
        let (n, e, w) = (normal.index(), e_axis.index(), width_axis.index());
        let bad = |m: &str| Err(SimFailure::Invalid(format!("{}: waveguide port {m}", job.label)));
        if n == e || n == w || e == w {
            return bad("axes must be distinct");
        }
        if inward != 1 && inward != -1 {
            return bad("inward must be +1 or -1");
        }
        if plane == 0 || plane >= g.n[n] {
            return bad("reference plane must be an interior grid plane");
        }
        if source_offset == 0 {
            return bad("source_offset must be at least 1");
        }
        let src_layer = match (inward > 0, lat.nodal[n]) {
            (true, _) => plane.checked_sub(source_offset),
            (false, true) => Some(plane + source_offset).filter(|&c| c < lat.n[n]),
            (false, false) => Some(plane + source_offset - 1).filter(|&c| c < lat.n[n]),
        };
        let Some(src_layer) = src_layer else {
            return bad("source plane lies outside the grid");
        };
        let b = g.n[e] as f64 * g.d[e];
        let profile = (0..lat.n[w])
            .map(|i| {
                let x = lat.pos(w, i) * g.d[w];
                if x < a {
                    (std::f64::consts::PI * x / a).sin()
                } else {
                    0.0
                }
            })
            .collect();
        Ok(WgPort {
            normal: n,
            plane,
            inward: inward as f64,
            e,
            w,
            src_layer,
            norm: (2.0 / (a * b)).sqrt(),
            profile,
        })
    }

    /// Coordinates of the node with index `ie` along `e` and `iw` along `w`
    /// in the layer `layer` along the normal.
    pub fn cell(&self, layer: usize, ie: usize, iw: usize) -> [usize; 3] {
        let mut c = [0; 3];
        c[self.normal] = layer;
        c[self.e] = ie;
        c[self.w] = iw;
        c
    }
}

/// Face samples (waveguide ports) are half a step after the node samples
/// (lumped ports); with both kinds of port, average the face samples onto whole
/// steps (a common cos(w dt/2) factor). Returns the samples' time offset in steps.
pub(crate) fn finish_traces(traces: &mut [PortTrace], is_wg: &[bool]) -> f64 {
    let has_wg = is_wg.iter().any(|&w| w);
    let has_lumped = is_wg.iter().any(|&w| !w);
    if !(has_wg && has_lumped) {
        return if has_wg { 0.5 } else { 0.0 };
    }
    for (tr, _) in traces.iter_mut().zip(is_wg).filter(|(_, &w)| w) {
        for x in [&mut tr.v, &mut tr.i] {
            let mut prev = 0.0;
            for y in x.iter_mut() {
                let cur = *y;
                *y = 0.5 * (cur + prev);
                prev = cur;
            }
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_dot_is_the_convolution_sum_to_rounding() {
        // Every length around the 16-lane blocks, a decaying oscillating kernel and history.
        for n in [0usize, 1, 7, 15, 16, 17, 33, 255, 1000, 4099] {
            let kern: Vec<f64> = (0..n).map(|k| ((k as f64) * 0.37).sin() / (1.0 + k as f64).sqrt()).collect();
            let hist: Vec<f64> = (0..n).map(|k| ((k as f64) * 0.011).cos() * (-(k as f64) * 1e-3).exp()).collect();
            let serial: f64 = kern.iter().zip(&hist).map(|(k, h)| k * h).sum();
            let scale: f64 = kern.iter().zip(&hist).map(|(k, h)| (k * h).abs()).sum::<f64>().max(1e-300);
            let got = history_dot(&kern, &hist);
            assert!((got - serial).abs() <= 1e-14 * scale, "n {n}: {got} vs {serial}");
            assert_eq!(got.to_bits(), history_dot_any(&kern, &hist).to_bits(), "n {n}: every CPU the same bits");
        }
    }

    #[test]
    fn node_kinds_match_one_sequential_pass_for_any_slab() {
        // Inputs repeat irregularly, some map to equal coefficients, some nodes have none.
        let dims = [13, 7, 5];
        let total = 13 * 7 * 5;
        let node = |idx: usize, c: [usize; 3]| -> (u16, Option<u32>) {
            assert_eq!(idx, (c[2] * 7 + c[1]) * 13 + c[0]);
            let v = ((idx * 7919) % 31) as u32;
            ((idx % 5) as u16, (v % 9 != 0).then_some(v / 2))
        };
        let coef = |&i: &u32| (i % 11, i % 3 == 0);
        let key = |c: &(u32, bool)| c.0;
        // The sequential reference: plain first, then kinds in order of their first node.
        let (mut flags, mut kind, mut coefs) = (vec![], vec![], vec![(99u32, false)]);
        let mut index: HashMap<u32, u32> = HashMap::from([(99, 0)]);
        for idx in 0..total {
            let (f, inp) = node(idx, [idx % 13, (idx / 13) % 7, idx / 91]);
            flags.push(f);
            kind.push(inp.map_or(0, |i| {
                let c = coef(&i);
                let next = coefs.len() as u32;
                let id = *index.entry(key(&c)).or_insert(next);
                if id == next {
                    coefs.push(c);
                }
                id
            }));
        }
        assert!(coefs.len() > 5);
        for slab in [1, 2, 7, 13, 64, total - 1, total, 10 * total] {
            let got = node_kinds(dims, slab, (99u32, false), node, coef, key);
            assert_eq!(got, (flags.clone(), kind.clone(), coefs.clone()), "slab {slab}");
        }
    }

    #[test]
    fn padding_table_matches_pad_loss() {
        let mut job = crate::engine::tlm::testjobs::pec_box([10, 6, 8], 1e-3);
        job.boundaries[0] = [Boundary::Absorbing; 2];
        job.pml[0] = [3, 2];
        job.boundaries[2] = [Boundary::Pmc, Boundary::Absorbing];
        job.pml[2] = [0, 4];
        let t = pad_loss_axes(&job, job.mesh.n(), |_, i| i as f64 + 0.5);
        for (i, j, k) in (0..10).flat_map(|i| (0..6).flat_map(move |j| (0..8).map(move |k| (i, j, k)))) {
            let want = pad_loss(&job, [i as f64 + 0.5, j as f64 + 0.5, k as f64 + 0.5]);
            assert_eq!([t[0][i], t[1][j], t[2][k]].map(f64::to_bits), want.map(f64::to_bits));
        }
    }

    #[test]
    fn padding_grading_is_zero_inside_and_grows_outward() {
        let mut job = crate::engine::tlm::testjobs::pec_box([10, 4, 4], 1e-3);
        job.boundaries[0] = [Boundary::Absorbing; 2];
        job.pml[0] = [3, 3];
        let g: Vec<f64> = (0..10).map(|i| pad_loss(&job, [i as f64 + 0.5, 1.5, 1.5])[0]).collect();
        assert!(g[3..7].iter().all(|&x| x == 0.0));
        assert!(g[0] > g[1] && g[1] > g[2] && g[2] > 0.0);
        assert!((g[0] - g[9]).abs() < 1e-12 && g[0] < PAD_G_MAX);
    }

    #[test]
    fn bessel_j1_matches_tabulated_values() {
        // Reference values from mpmath.besselj(1, x).
        for (x, want) in [(1.0, 0.440_050_585_744_933_5), (5.0, -0.327_579_137_591_465_2), (7.9, 0.219_179_399_921_751_2), (8.1, 0.247_607_766_981_592_9), (20.0, 0.066_833_124_175_850_04), (100.0, -0.077_145_352_014_112_16)] {
            assert!((bessel_j1(x) - want).abs() < 1e-8, "J1({x}) = {} vs {want}", bessel_j1(x));
        }
    }

    #[test]
    fn free_space_link_termination_is_the_seed_value() {
        // 2D shunt mesh: plane-wave impedance is Z0/sqrt(2) in link units (seed eq. 2.17).
        assert!((gamma(1.0 / 2f64.sqrt(), 1.0) + 0.17157).abs() < 1e-5);
    }
}
