//! 2D shunt-node TLM for H-plane structures (TE_m0 modes of a guide whose
//! narrow side is the job's single invariant cell), on the CPU.
//!
//! The node voltage is `E_e d_e` (e: the invariant axis, the waveguide
//! ports' E axis); the two link pairs along the mesh axes p, q carry the
//! currents of the transverse H. Unloaded, each pulse scatters with
//! `Gamma = -1/2`, `T = +1/2` (seed 003 eqs. 2.15-2.16). Written like the SCN
//! ([`super::scn_node`]): a shunt sub-node with a capacitive stub and
//! conductance, and per line pair a series sub-node with an inductive stub and
//! resistance, so non-square cells, eps_r, mu_r and losses are exact:
//!
//! `V = 2 (sum a + Y c) / (4 + Y + G)`, `I_m = 2 (a_mn - a_mp + l_m) / (2 + Z_m + R_m)`,
//! `b_mn = V - I_m - a_mp`, `b_mp = V + I_m - a_mn`.
//!
//! With `C = eps d_p d_q / d_e` and `L_m = mu d_m d_e / d_m'` per cell, the time
//! step `dt = sqrt(C_min L_min / 2)` and link impedance `Z0 = L_min / dt` make
//! every stub non-negative (square vacuum cells: none, `dt = d / (sqrt 2 c)`).
//!
//! Nodes sit on the grid nodes of the mesh plane ([`common::Lattice`], nodal on
//! both mesh axes), where Yee keeps E_e: a node touching a PEC cell, on a PEC
//! face or in a sheet is shorted (V = 0; each of its half-links keeps its
//! share of the cell's inductive stub, [`short_scatter`]). With the shunt node being Yee's 2D
//! scheme at its Courant limit (Johns; Chen et al. 1991), the job is then the
//! same discrete problem as FDTD's one-cell-thick run: conductors, iris edges,
//! lumped ports (on their grid node), sources and reference planes (on their
//! grid planes) all coincide. Waveguide ports sample V on the node layer of the
//! reference plane at the node instant and I as the mean current of the two
//! normal links' midpoints half a step earlier (offsets 0 and -1/2, as FDTD).
//!
//! Open faces: the TE10 modal termination where a waveguide port looks along
//! the axis (exact for the guide's mode), else the plane-wave match
//! `Gamma = (eta d_e/d_w - Z0) / (eta d_e/d_w + Z0)` (-0.17157 for square
//! vacuum cells, seed eq. 2.17) behind graded matched loss in the padding; both
//! sit half a link beyond the face nodes. A PMC face mirrors its face nodes
//! (each outward link receives what the inward one does).
//!
//! Sheets normal to the invariant axis (the guide's broad walls, PEC anyway)
//! are ignored, as are sheets that do not span its single cell (an iris of
//! partial height is not a 2D structure). Lumped ports must span that cell.

use rayon::prelude::*;

use super::common::{self, check_job, gamma, modal_port, pad_sigmas, Lattice, ModalEnd, WgPort};
use super::pack::{check_kinds, PackEnd, PackLumped, PackSpecial, PackWg, TlmPack, COEF2, META_KIND_SHIFT, META_SHORT, META_SPECIAL};
use crate::consts::{C0, EPS0, ETA0, MU0};
use crate::engine::StepWatch;
use crate::job::{Boundary, PortKind, PortTrace, SimFailure, SimJob, SimOutput};

/// Per-node coefficients (normalised to Z0).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Coef {
    y: f32,
    ky: f32,
    z: [f32; 2],
    kz: [f32; 2],
    /// Reflection of each domain face (2*m + side) of the mesh axes.
    gface: [f32; 4],
}

const PLAIN: Coef = Coef { y: 0.0, ky: 0.25, z: [0.0; 2], kz: [0.5; 2], gface: [0.0; 4] };
/// A shorted node (V = 0): each half-link ends in the short through its half
/// of the node's series stub ([`short_scatter`]).
const SHORT: u8 = 1 << 4;
const SPECIAL: u8 = 1 << 5;
const FACES: u8 = 0xF;

#[inline(always)]
fn scatter(a: &[f32; 4], b: &mut [f32; 4], c: &mut f32, l: &mut [f32; 2], k: &Coef, inj: f32) -> f32 {
    let v = (2.0 * (a[0] + a[1] + a[2] + a[3] + k.y * *c) - inj) * k.ky;
    *c = v - *c;
    for m in 0..2 {
        let i = 2.0 * (a[2 * m] - a[2 * m + 1] + l[m]) * k.kz[m];
        l[m] = k.z[m] * i - l[m];
        b[2 * m] = v - i - a[2 * m + 1];
        b[2 * m + 1] = v + i - a[2 * m];
    }
    v
}

/// A shorted node (V = 0). Each of its half-links ends in the short through its
/// own half of the node's series stub (`z_m / 2` for line pair m) with its own
/// stub state `s[q]`: the cell's excess inductance stays on the links (so a wall
/// sits exactly on the node for non-square cells too, as in Yee), and nothing
/// crosses the node. Without a stub (`z_m = 0`) the pulse returns inverted.
#[inline(always)]
// The definition step_run's shorted loops follow; stepped node by node in the tests.
#[cfg_attr(not(test), allow(dead_code))]
fn short_scatter(a: &[f32; 4], b: &mut [f32; 4], s: &mut [f32; 4], k: &Coef) {
    for q in 0..4 {
        let zs = 0.5 * k.z[q / 2];
        if zs == 0.0 {
            b[q] = -a[q];
        } else {
            let i = 2.0 * (a[q] + s[q]) / (1.0 + zs);
            b[q] = a[q] - i;
            s[q] = zs * i - s[q];
        }
    }
}

/// Geometry and coefficients (read-only while stepping).
pub(crate) struct Geo {
    /// Mesh axes p, q and the invariant axis e.
    ax: [usize; 2],
    e: usize,
    /// Nodes along p and q (cells + 1).
    n: [usize; 2],
    stride: [usize; 2],
    lat: Lattice,
    dt: f64,
    z0: f64,
    /// Bits 0..4: face (2*m + side) reflects instead of connecting; plus SHORT, SPECIAL.
    flags: Vec<u8>,
    /// Bits 0..4: that face is a PMC mirror.
    mirror: Vec<u8>,
    kind: Vec<u32>,
    coefs: Vec<Coef>,
    /// Whether any node has stubs or loss (else the stub arrays are empty).
    loaded: bool,
    /// The nodes but the special ones in [`Run`]s of alike nodes, which
    /// [`tlm_shunt_step`] steps as slices. Built with the flags, rebuilt once
    /// the ports have flagged theirs special.
    runs: Vec<Run>,
}

/// Geometry and state: reflected pulses (double-buffered) and stubs.
pub(crate) struct Mesh {
    g: Geo,
    b: [Vec<f32>; 4],
    nb: [Vec<f32>; 4],
    cap: Vec<f32>,
    ind: [Vec<f32>; 2],
    /// Shorted nodes: the stub state of each of the four half-links ([`short_scatter`]).
    sh: [Vec<f32>; 4],
}

impl Mesh {
    fn new(job: &SimJob) -> Result<Mesh, SimFailure> {
        let g = Geo::build(job)?;
        let total = g.flags.len();
        let sl = if g.loaded { total } else { 0 };
        Ok(Mesh {
            g,
            b: std::array::from_fn(|_| vec![0.0; total]),
            nb: std::array::from_fn(|_| vec![0.0; total]),
            cap: vec![0.0; sl],
            ind: std::array::from_fn(|_| vec![0.0; sl]),
            sh: std::array::from_fn(|_| vec![0.0; sl]),
        })
    }
}

impl Geo {
    /// Geometry, coefficients, time step and link impedance of a job (no field state).
    pub fn build(job: &SimJob) -> Result<Geo, SimFailure> {
        check_job(job)?;
        let g = &common::cells(job);
        let bad = |m: String| Err(SimFailure::Invalid(format!("{}: {m}", job.label)));
        // The invariant axis: the ports' E axis, else the first single-cell axis.
        let port_e = job.ports.first().map(|p| match p.kind {
            PortKind::Waveguide { e_axis, .. } => e_axis.index(),
            PortKind::Lumped { axis, .. } => axis.index(),
        });
        let Some(e) = port_e.or_else(|| (0..3).find(|&a| g.n[a] == 1)) else {
            return bad("a 2D TLM job needs one axis of a single cell".into());
        };
        if g.n[e] != 1 {
            return bad(format!("2D TLM: axis {e} (the E axis) must be one cell thick"));
        }
        if job.boundaries[e] != [Boundary::Pec; 2] {
            return bad("2D TLM: the faces normal to the invariant axis must be PEC".into());
        }
        let ax = [(e + 1) % 3, (e + 2) % 3];
        let mut nodal = [true; 3];
        nodal[e] = false;
        let lat = Lattice::new(job, nodal);
        let n = [lat.n[ax[0]], lat.n[ax[1]]];
        let stride = [1, n[0]];
        let d = g.d;
        let (dp, dq, de) = (d[ax[0]], d[ax[1]], d[e]);
        let area_e = dp * dq / de;
        let area_l = [dp * de / dq, dq * de / dp];
        let mats = job.materials.iter().enumerate().filter(|(i, m)| !m.pec && job.cell_mat.contains(&(*i as u8)));
        let (eps_min, mu_min) = mats.fold((f64::INFINITY, f64::INFINITY), |(a, b), (_, m)| (a.min(m.eps_r), b.min(m.mu_r)));
        if !eps_min.is_finite() {
            return bad("every cell is PEC".into());
        }
        let c_min = EPS0 * eps_min * area_e;
        let l_min = MU0 * mu_min * area_l[0].min(area_l[1]);
        let dt = (c_min * l_min / 2.0).sqrt();
        let z0 = l_min / dt;

        let shorted = lat.shorted(job);
        let total = n[0] * n[1];
        let clean = |x: f64| if x.abs() < 1e-9 { 0.0 } else { x.max(0.0) };
        let pad = common::pad_loss_axes(job, lat.n, |a, i| lat.pos(a, i));
        // Nodes are independent: built over slabs in parallel (common::node_kinds keeps the
        // kinds in first-node order). Flags: (faces | SHORT, PMC mirror faces). A node's
        // coefficients depend on its medium, padding loss and domain faces only.
        let node = |_idx: usize, ij: [usize; 3]| -> ((u8, u8), Option<([u64; 3], [u64; 3], u8)>) {
            let mut c3 = [0; 3];
            c3[ax[0]] = ij[0];
            c3[ax[1]] = ij[1];
            let (mut f, mut mirror) = (0u8, 0u8);
            for l in 0..2 {
                for side in 0..2 {
                    let fi = 2 * l + side;
                    if (side == 0 && ij[l] == 0) || (side == 1 && ij[l] + 1 == n[l]) {
                        f |= 1 << fi;
                        if job.boundaries[ax[l]][side] == Boundary::Pmc {
                            mirror |= 1 << fi;
                        }
                    }
                }
            }
            // Shorted nodes keep their coefficients: their half-links use the series stubs.
            if shorted[lat.idx(c3)] {
                f |= SHORT;
            }
            let (_, m) = lat.medium(job, c3);
            let gl = std::array::from_fn(|a| pad[a][c3[a]].to_bits());
            ((f, mirror), Some(([m.eps_r, m.mu_r, m.sigma].map(f64::to_bits), gl, f & FACES)))
        };
        let coef = |&(m, gl, edges): &([u64; 3], [u64; 3], u8)| -> Coef {
            let [eps_r, mu_r, sigma] = m.map(f64::from_bits);
            let mut k = PLAIN;
            for fi in (0..4).filter(|&fi| edges & (1 << fi) != 0) {
                let (l, side) = (fi / 2, fi % 2);
                let w = ax[1 - l];
                let eta = ETA0 * (mu_r / eps_r).sqrt();
                k.gface[fi] = match job.boundaries[ax[l]][side] {
                    Boundary::Pec => -1.0,
                    Boundary::Pmc => 0.0,
                    Boundary::Absorbing => gamma(eta * de / d[w], z0) as f32,
                };
            }
            let (se, sm) = pad_sigmas(gl.map(f64::from_bits), d, eps_r, mu_r);
            let y = clean(2.0 * EPS0 * eps_r * area_e * z0 / dt - 4.0);
            k.y = y as f32;
            k.ky = (1.0 / (4.0 + y + (sigma + se[e]) * area_e * z0)) as f32;
            for l in 0..2 {
                let z = clean(2.0 * MU0 * mu_r * area_l[l] / (z0 * dt) - 2.0);
                // The current along line l is the H component along the other mesh axis.
                let h = ax[1 - l];
                k.z[l] = z as f32;
                k.kz[l] = (1.0 / (2.0 + z + sm[h] * area_l[l] / z0)) as f32;
            }
            k
        };
        let key = |k: &Coef| {
            let mut key = [0u32; 10];
            for (o, x) in key.iter_mut().zip([k.y, k.ky].iter().chain(&k.z).chain(&k.kz).chain(&k.gface)) {
                *o = x.to_bits();
            }
            key
        };
        let (fm, kind, coefs) = common::node_kinds([n[0], n[1], 1], common::slab_len(total), PLAIN, node, coef, key);
        let (flags, mirror): (Vec<u8>, Vec<u8>) = fm.into_par_iter().unzip();
        let loaded = coefs.iter().any(|k| k.y != 0.0 || k.ky != 0.25 || k.z != [0.0; 2] || k.kz != [0.5; 2]);
        let runs = node_runs(&flags, &mirror, &kind);
        Ok(Geo { ax, e, n, stride, lat, dt, z0, flags, mirror, kind, coefs, loaded, runs })
    }
}

impl Geo {
    /// Incident pulses of node `idx` from the last step's reflected pulses `b`.
    #[inline(always)]
    fn gather(&self, b: &[Vec<f32>; 4], idx: usize, f: u8) -> [f32; 4] {
        let mut a = [0f32; 4];
        for l in 0..2 {
            let s = self.stride[l];
            for side in 0..2 {
                let q = 2 * l + side;
                a[q] = if f & (1 << q) == 0 {
                    // Pulse coming from the neighbour's link on the opposite side.
                    let nb = if side == 0 { idx - s } else { idx + s };
                    b[q ^ 1][nb]
                } else if self.mirror[idx] & (1 << q) != 0 {
                    // PMC through the node: the image of the inward neighbour sends what it sends.
                    let nb = if side == 0 { idx + s } else { idx - s };
                    b[q][nb]
                } else {
                    self.coefs[self.kind[idx] as usize].gface[q] * b[q][idx]
                };
            }
        }
        a
    }

    /// Mesh index (0 = p, 1 = q) of a 3D axis.
    fn m_of(&self, axis: usize) -> Option<usize> {
        self.ax.iter().position(|&a| a == axis)
    }

    /// Index of the node with 3D lattice coordinates c (c[e] ignored).
    fn idx(&self, c: [usize; 3]) -> usize {
        c[self.ax[0]] * self.stride[0] + c[self.ax[1]] * self.stride[1]
    }

    fn short(&self, idx: usize) -> bool {
        self.flags[idx] & SHORT != 0
    }
}

impl Mesh {
    fn stubs(&self, idx: usize) -> (f32, [f32; 2]) {
        if self.g.loaded {
            (self.cap[idx], [self.ind[0][idx], self.ind[1][idx]])
        } else {
            (0.0, [0.0; 2])
        }
    }

    fn sweep(&mut self) {
        let Mesh { g, b, nb, cap, ind, sh } = self;
        tlm_shunt_step(g, b, nb, cap, ind, sh);
    }

    /// One special node: incident link `over` replaced, `add` on every link, current `inj`.
    fn update_special(&mut self, idx: usize, add: f32, inj: f32, over: Option<(usize, f32)>) -> f32 {
        let mut a = self.g.gather(&self.b, idx, self.g.flags[idx] & FACES);
        if let Some((q, v)) = over {
            a[q] = v;
        }
        for x in a.iter_mut() {
            *x += add;
        }
        let (mut c, mut l) = self.stubs(idx);
        let mut bo = [0f32; 4];
        let k = self.g.coefs[self.g.kind[idx] as usize];
        let v = scatter(&a, &mut bo, &mut c, &mut l, &k, inj);
        for q in 0..4 {
            self.nb[q][idx] = bo[q];
        }
        if self.g.loaded {
            self.cap[idx] = c;
            self.ind[0][idx] = l[0];
            self.ind[1][idx] = l[1];
        }
        v
    }

}

/// A run of consecutive nodes `[start, end)` that share their flags (faces,
/// SHORT; never SPECIAL), PMC mirror faces and coefficient kind: the step
/// treats them alike, as slices (inside a guide: whole rows between walls,
/// the walls' own rows, the iris's shorted columns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run {
    start: usize,
    end: usize,
    flags: u8,
    mirror: u8,
    kind: u32,
}

/// The runs of every node but the special ones (those the port code steps).
fn node_runs(flags: &[u8], mirror: &[u8], kind: &[u32]) -> Vec<Run> {
    let mut runs = vec![];
    let mut i = 0;
    while i < flags.len() {
        if flags[i] & SPECIAL != 0 {
            i += 1;
            continue;
        }
        let r0 = Run { start: i, end: i, flags: flags[i], mirror: mirror[i], kind: kind[i] };
        while i < flags.len() && flags[i] == r0.flags && mirror[i] == r0.mirror && kind[i] == r0.kind {
            i += 1;
        }
        runs.push(Run { end: i, ..r0 });
    }
    runs
}

/// Jobs of at most this many nodes step on the calling thread: a batch runs
/// its jobs in parallel already, and the GA's 2D filters (a few thousand
/// nodes) take less time per step than a fork-join over the cores.
const SERIAL_MAX_NODES: usize = 1 << 16;

/// One step of the ordinary nodes (not special; shorted nodes through
/// [`short_scatter`], with stub state `sh` where loaded): gather from the last
/// step's reflections `b`, scatter, write `nb`; in parallel over runs of the
/// linear node index for large jobs (walls are flagged per node, so runs need
/// not be whole rows), each [`Run`] of alike nodes as slices (vectorised).
/// CPU twin of the CUDA kernel `tlm_shunt_step`.
pub(crate) fn tlm_shunt_step(g: &Geo, b: &[Vec<f32>; 4], nb: &mut [Vec<f32>; 4], cap: &mut [f32], ind: &mut [Vec<f32>; 2], sh: &mut [Vec<f32>; 4]) {
    let total = g.flags.len();
    let row = if total <= SERIAL_MAX_NODES { total } else { (total / 64).max(1024).min(total) };
    let nrows = total.div_ceil(row);
    let mut it = nb.iter_mut().map(|v| v.chunks_mut(row)).collect::<Vec<_>>();
    let outs: Vec<[&mut [f32]; 4]> = (0..nrows).map(|_| std::array::from_fn(|l| it[l].next().unwrap())).collect();
    // Per run: cap, ind[0], ind[1], sh[0..4].
    let stubs: Vec<Option<[&mut [f32]; 7]>> = if cap.is_empty() {
        (0..nrows).map(|_| None).collect()
    } else {
        let [i0, i1] = ind;
        let [s0, s1, s2, s3] = sh;
        let mut it: Vec<_> = [cap, &mut i0[..], &mut i1[..], &mut s0[..], &mut s1[..], &mut s2[..], &mut s3[..]].into_iter().map(|v| v.chunks_mut(row)).collect();
        (0..nrows).map(|_| Some(std::array::from_fn(|l| it[l].next().unwrap()))).collect()
    };
    let chunk = |r: usize, o: [&mut [f32]; 4], st: Option<[&mut [f32]; 7]>| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has the feature.
                return unsafe { step_rows_avx2(g, b, r * row, o, st) };
            }
        }
        step_rows(g, b, r * row, o, st)
    };
    if nrows == 1 {
        let (o, st) = outs.into_iter().zip(stubs).next().unwrap();
        chunk(0, o, st);
    } else {
        outs.into_par_iter().zip(stubs).enumerate().for_each(|(r, (o, st))| chunk(r, o, st));
    }
}

/// [`step_rows`] compiled for AVX2 (8 lanes; the same operations, the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn step_rows_avx2(g: &Geo, b: &[Vec<f32>; 4], lo: usize, o: [&mut [f32]; 4], st: Option<[&mut [f32]; 7]>) {
    step_rows(g, b, lo, o, st)
}

/// The runs' nodes from `lo` on, as many as `o` holds.
#[inline(always)]
fn step_rows(g: &Geo, b: &[Vec<f32>; 4], lo: usize, mut o: [&mut [f32]; 4], mut st: Option<[&mut [f32]; 7]>) {
    let hi = lo + o[0].len();
    let first = g.runs.partition_point(|run| run.end <= lo);
    for run in g.runs[first..].iter().take_while(|run| run.start < hi) {
        step_run(g, b, &mut o, &mut st, run, run.start.max(lo), run.end.min(hi), lo);
    }
}

/// Nodes `s..e` of `run`, written to `o[..][s - lo..]` (and their stubs
/// `st[..][s - lo..]`): each incident pulse as [`Geo::gather`] finds it (from
/// a neighbour's or the PMC image's link, times 1, exact; or the node's own
/// times its face reflection), then [`scatter`] / [`short_scatter`] node for
/// node in their order of operations (bit-identical), as loops over slices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn step_run(g: &Geo, b: &[Vec<f32>; 4], o: &mut [&mut [f32]; 4], st: &mut Option<[&mut [f32]; 7]>, run: &Run, s: usize, e: usize, lo: usize) {
    let (len, x0) = (e - s, s - lo);
    let k = &g.coefs[run.kind as usize];
    let link = |q: usize| -> (&[f32], f32) {
        let (l, side) = (q / 2, q % 2);
        let st_l = g.stride[l];
        // The offset of the node whose link q-or-opposite we read.
        let (arr, below) = if run.flags & (1 << q) == 0 {
            (q ^ 1, side == 0)
        } else if run.mirror & (1 << q) != 0 {
            (q, side != 0)
        } else {
            return (&b[q][s..e], k.gface[q]);
        };
        let src = if below { &b[arr][s - st_l..e - st_l] } else { &b[arr][s + st_l..e + st_l] };
        (src, 1.0)
    };
    let ((a0, f0), (a1, f1), (a2, f2), (a3, f3)) = (link(0), link(1), link(2), link(3));
    let [o0, o1, o2, o3] = o;
    let (o0, o1, o2, o3) = (&mut o0[x0..x0 + len], &mut o1[x0..x0 + len], &mut o2[x0..x0 + len], &mut o3[x0..x0 + len]);
    let short = run.flags & SHORT != 0;
    let f = [f0, f1, f2, f3];
    match st.as_mut() {
        Some(t) if short => {
            // short_scatter, link by link (its stub z/2 is the run's).
            let [_, _, _, t3, t4, t5, t6] = t;
            let zs = [0.5 * k.z[0], 0.5 * k.z[0], 0.5 * k.z[1], 0.5 * k.z[1]];
            short_link(a0, f0, zs[0], o0, &mut t3[x0..x0 + len]);
            short_link(a1, f1, zs[1], o1, &mut t4[x0..x0 + len]);
            short_link(a2, f2, zs[2], o2, &mut t5[x0..x0 + len]);
            short_link(a3, f3, zs[3], o3, &mut t6[x0..x0 + len]);
        }
        // Not loaded: no stubs anywhere, the pulses return inverted.
        None if short => {
            for (aq, fq, oq) in [(a0, f0, o0), (a1, f1, o1), (a2, f2, o2), (a3, f3, o3)] {
                invert(aq, fq, oq);
            }
        }
        Some(t) if run.kind != 0 => {
            let [c, l0, l1, ..] = t;
            stub_nodes(a0, a1, a2, a3, f, *k, &mut c[x0..x0 + len], &mut l0[x0..x0 + len], &mut l1[x0..x0 + len], o0, o1, o2, o3);
        }
        // No stubs or loss here: Gamma = -1/2, T = 1/2.
        _ => plain_nodes(a0, a1, a2, a3, f, o0, o1, o2, o3),
    }
}

// The loops of step_run, each over slices passed as separate arguments: the
// compiler then knows they do not overlap (noalias) and vectorises without
// run-time overlap checks. The incident pulse is `f_q * a_q[x]` (f_q: 1, exact,
// or the face reflection).

/// Shorted nodes, one link: [`short_scatter`]'s operations for link q.
#[inline(always)]
fn short_link(a: &[f32], f: f32, zs: f32, o: &mut [f32], s: &mut [f32]) {
    let n = o.len();
    let (a, s) = (&a[..n], &mut s[..n]);
    if zs == 0.0 {
        for x in 0..n {
            o[x] = -(f * a[x]);
        }
    } else {
        for x in 0..n {
            let ai = f * a[x];
            let i = 2.0 * (ai + s[x]) / (1.0 + zs);
            o[x] = ai - i;
            s[x] = zs * i - s[x];
        }
    }
}

/// Shorted nodes without stubs: the pulse returns inverted.
#[inline(always)]
fn invert(a: &[f32], f: f32, o: &mut [f32]) {
    let n = o.len();
    let a = &a[..n];
    for x in 0..n {
        o[x] = -(f * a[x]);
    }
}

/// Loaded nodes of one kind: [`scatter`]'s operations (no injection).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stub_nodes(a0: &[f32], a1: &[f32], a2: &[f32], a3: &[f32], f: [f32; 4], k: Coef, c: &mut [f32], l0: &mut [f32], l1: &mut [f32], o0: &mut [f32], o1: &mut [f32], o2: &mut [f32], o3: &mut [f32]) {
    let n = o0.len();
    let (a0, a1, a2, a3, c, l0, l1, o1, o2, o3) = (&a0[..n], &a1[..n], &a2[..n], &a3[..n], &mut c[..n], &mut l0[..n], &mut l1[..n], &mut o1[..n], &mut o2[..n], &mut o3[..n]);
    let (y, ky, z, kz) = (k.y, k.ky, k.z, k.kz);
    for x in 0..n {
        let a = [f[0] * a0[x], f[1] * a1[x], f[2] * a2[x], f[3] * a3[x]];
        let v = (2.0 * (a[0] + a[1] + a[2] + a[3] + y * c[x]) - 0.0) * ky;
        c[x] = v - c[x];
        let i0 = 2.0 * (a[0] - a[1] + l0[x]) * kz[0];
        l0[x] = z[0] * i0 - l0[x];
        o0[x] = v - i0 - a[1];
        o1[x] = v + i0 - a[0];
        let i1 = 2.0 * (a[2] - a[3] + l1[x]) * kz[1];
        l1[x] = z[1] * i1 - l1[x];
        o2[x] = v - i1 - a[3];
        o3[x] = v + i1 - a[2];
    }
}

/// Plain nodes: `V = (a0 + a1 + a2 + a3) / 2`, `b = V - a`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn plain_nodes(a0: &[f32], a1: &[f32], a2: &[f32], a3: &[f32], f: [f32; 4], o0: &mut [f32], o1: &mut [f32], o2: &mut [f32], o3: &mut [f32]) {
    let n = o0.len();
    let (a0, a1, a2, a3, o1, o2, o3) = (&a0[..n], &a1[..n], &a2[..n], &a3[..n], &mut o1[..n], &mut o2[..n], &mut o3[..n]);
    for x in 0..n {
        let a = [f[0] * a0[x], f[1] * a1[x], f[2] * a2[x], f[3] * a3[x]];
        let v = 0.5 * (a[0] + a[1] + a[2] + a[3]);
        o0[x] = v - a[0];
        o1[x] = v - a[1];
        o2[x] = v - a[2];
        o3[x] = v - a[3];
    }
}

/// A port resolved onto the node mesh: lumped (node, R) or guide (port, mesh axis of its normal).
pub(crate) enum ShuntPort {
    L { idx: usize, r: f64 },
    W(WgPort, usize),
}

/// A modal guide end: termination, face nodes, the link it drives, buffers.
pub(crate) struct End {
    pub me: ModalEnd,
    pub nodes: Vec<usize>,
    pub link: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

/// The ports, sources and modal guide ends of a 2D job resolved onto the mesh.
pub(crate) struct ShuntPorts {
    pub ports: Vec<ShuntPort>,
    /// Special nodes in node order: (source weight, modal-end (id, slot)).
    pub others: std::collections::BTreeMap<usize, (f32, Option<(usize, usize)>)>,
    pub ends: Vec<End>,
    pub drive: usize,
}

impl ShuntPorts {
    /// Resolve the job's ports and guide ends; flags their nodes SPECIAL in `geo`.
    pub fn new(job: &SimJob, geo: &mut Geo) -> Result<ShuntPorts, SimFailure> {
        let g = &common::cells(job);
        let (dt, z0, e) = (geo.dt, geo.z0, geo.e);
        let mut ports = vec![];
        for p in &job.ports {
            ports.push(match p.kind {
                PortKind::Lumped { axis, start, len, r_ohm } => {
                    if axis.index() != e || len != 1 || start[e] != 0 || !(r_ohm > 0.0) {
                        return Err(SimFailure::Invalid(format!("{}: 2D lumped ports span the single cell along the E axis", job.label)));
                    }
                    // The port's E edge stands on grid node `start`: exactly a node.
                    if geo.ax.iter().any(|&a| start[a] > g.n[a]) {
                        return Err(SimFailure::Invalid(format!("{}: lumped port outside the grid", job.label)));
                    }
                    let idx = geo.idx(start);
                    if geo.short(idx) {
                        return Err(SimFailure::Invalid(format!("{}: lumped port on a conductor", job.label)));
                    }
                    ShuntPort::L { idx, r: r_ohm }
                }
                PortKind::Waveguide { .. } => {
                    let w = WgPort::resolve(job, &p.kind, &geo.lat)?;
                    let m = geo.m_of(w.normal).ok_or_else(|| SimFailure::Invalid(format!("{}: 2D guide port normal along the invariant axis", job.label)))?;
                    if w.e != e {
                        return Err(SimFailure::Invalid(format!("{}: 2D guide port E must lie along the invariant axis", job.label)));
                    }
                    ShuntPort::W(w, m)
                }
            });
        }
        // Special nodes: (source weight, modal-end slot).
        let mut others: std::collections::BTreeMap<usize, (f32, Option<(usize, usize)>)> = Default::default();
        if let ShuntPort::W(w, _) = &ports[job.drive] {
            for iw in 0..geo.lat.n[w.w] {
                let idx = geo.idx(w.cell(w.src_layer, 0, iw));
                if !geo.short(idx) {
                    others.insert(idx, (w.profile[iw] as f32, None));
                }
            }
        }
        let mut ends = vec![];
        for (l, &axis) in geo.ax.iter().enumerate() {
            for side in 0..2 {
                let Some(pi) = modal_port(job, axis, side) else { continue };
                let PortKind::Waveguide { width_axis, a, .. } = job.ports[pi].kind else { unreachable!() };
                let w = width_axis.index();
                let layer = if side == 0 { 0 } else { geo.n[l] - 1 };
                let (mut nodes, mut phi) = (vec![], vec![]);
                for iw in 0..geo.lat.n[w] {
                    let mut c = [0; 3];
                    c[axis] = layer;
                    c[w] = iw;
                    let idx = geo.idx(c);
                    if !geo.short(idx) {
                        nodes.push(idx);
                        let x = geo.lat.pos(w, iw) * g.d[w];
                        phi.push(if x < a { (std::f64::consts::PI * x / a).sin() } else { 0.0 });
                    }
                }
                let mut c = [0; 3];
                c[axis] = layer;
                c[w] = geo.lat.n[w] / 2;
                let (_, m) = geo.lat.medium(job, c);
                let eta_l = ETA0 * (m.mu_r / m.eps_r).sqrt() * g.d[e] / g.d[w];
                let fc = C0 / (2.0 * a * (m.eps_r * m.mu_r).sqrt());
                let id = ends.len();
                for (slot, &idx) in nodes.iter().enumerate() {
                    others.entry(idx).or_insert((0.0, None)).1 = Some((id, slot));
                }
                let k = nodes.len();
                ends.push(End { me: ModalEnd::new(phi, eta_l, z0, fc, dt), nodes, link: 2 * l + side, a: vec![0.0; k], b: vec![0.0; k] });
            }
        }
        for &idx in others.keys() {
            geo.flags[idx] |= SPECIAL;
        }
        for p in &ports {
            if let ShuntPort::L { idx, .. } = p {
                if geo.flags[*idx] & SPECIAL != 0 {
                    return Err(SimFailure::Invalid(format!("{}: a lumped port overlaps another port or a guide end", job.label)));
                }
                geo.flags[*idx] |= SPECIAL;
            }
        }
        // The special nodes leave the runs of ordinary ones.
        geo.runs = node_runs(&geo.flags, &geo.mirror, &geo.kind);
        Ok(ShuntPorts { ports, others, ends, drive: job.drive })
    }

}

/// Sample offsets of every port signal (V, I): V at the node instant, I on the
/// link midpoints half a step earlier (Yee's E and H).
pub(crate) const OFFSETS: (f64, f64) = (0.0, -0.5);

/// Run one job with the 2D shunt node.
pub fn run(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_watched(job, &StepWatch::default())
}

/// [`run`], reporting steps and energy decay into `watch` at each energy check.
pub fn run_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let mut mesh = Mesh::new(job)?;
    let sp = ShuntPorts::new(job, &mut mesh.g)?;
    super::cpu_batch::run(job, ShuntRun { mesh, sp, g: common::cells(job) }, watch)
}

/// The 2D shunt node's state for the stepping loop.
struct ShuntRun {
    mesh: Mesh,
    sp: ShuntPorts,
    g: common::Cells,
}

impl super::cpu_batch::TlmMethod for ShuntRun {
    fn dt(&self) -> f64 {
        self.mesh.g.dt
    }
    fn cells(&self) -> usize {
        self.mesh.g.flags.len()
    }
    fn step(&mut self, s: f64, traces: &mut [PortTrace]) {
        self.mesh.sweep();
        tlm_shunt_ports(&mut self.mesh, &mut self.sp, s, traces);
        std::mem::swap(&mut self.mesh.b, &mut self.mesh.nb);
        tlm_shunt_sample(&self.mesh, &self.g, &self.sp, traces);
    }
    fn energy(&self) -> f64 {
        tlm_shunt_energy(&self.mesh)
    }
    fn locate_non_finite(&self) -> String {
        find_non_finite(&self.mesh.b)
    }
    fn finish(&self, _traces: &mut [PortTrace]) -> (f64, f64) {
        // Voltages at the node instant, currents on the link midpoints half a step earlier.
        OFFSETS
    }
}

/// Where the first non-finite pulse is ("node index Some(i)").
pub(crate) fn find_non_finite(b: &[Vec<f32>; 4]) -> String {
    let at = b.iter().find_map(|v| v.iter().position(|x| !x.is_finite()));
    format!("node index {at:?}")
}

/// The port part of one step, after [`tlm_shunt_step`] and before the swap:
/// modal guide ends reflect, lumped ports solve (one V, I sample each), source
/// and guide-end nodes scatter. CPU twin of the CUDA kernel `tlm_shunt_ports`.
pub(crate) fn tlm_shunt_ports(mesh: &mut Mesh, sp: &mut ShuntPorts, s: f64, traces: &mut [PortTrace]) {
    let z0 = mesh.g.z0;
    for end in &mut sp.ends {
        for (slot, &idx) in end.nodes.iter().enumerate() {
            end.b[slot] = mesh.b[end.link][idx] as f64;
        }
        end.me.reflect(&end.b, &mut end.a);
    }
    for (pi, p) in sp.ports.iter().enumerate() {
        if let ShuntPort::L { idx, r } = *p {
            let vs = if pi == sp.drive { s } else { 0.0 };
            let a = mesh.g.gather(&mesh.b, idx, mesh.g.flags[idx] & FACES);
            let k = mesh.g.coefs[mesh.g.kind[idx] as usize];
            let (c, _) = mesh.stubs(idx);
            let ky = k.ky as f64;
            let s2k = 2.0 * ((a[0] + a[1] + a[2] + a[3]) as f64 + (k.y * c) as f64) * ky;
            let i = (vs + s2k) / (r + z0 * ky);
            let v = -mesh.update_special(idx, 0.0, (z0 * i) as f32, None) as f64;
            // The current leaving through the node's four links at their midpoints,
            // half a step before the node instant (the pulses they carried out last
            // step against those arriving now): Yee's loop integral of H around the
            // port's edge, which leaves the port's own cell capacitance to the port.
            let il: f64 = (0..4).map(|q| (a[q] - mesh.b[q][idx]) as f64).sum::<f64>() / z0;
            traces[pi].v.push(v);
            traces[pi].i.push(il);
        }
    }
    for (&idx, &(w, over)) in &sp.others {
        let over = over.map(|(id, slot)| (sp.ends[id].link, sp.ends[id].a[slot] as f32));
        mesh.update_special(idx, (s as f32) * w, 0.0, over);
    }
}

/// Sample every guide port after the swap: `mesh.b` holds the pulses just
/// emitted, `mesh.nb` those of the step before (see [`sample_wg`]).
/// CPU twin of the CUDA kernel `tlm_shunt_sample`.
pub(crate) fn tlm_shunt_sample(mesh: &Mesh, g: &common::Cells, sp: &ShuntPorts, traces: &mut [PortTrace]) {
    for (pi, p) in sp.ports.iter().enumerate() {
        if let ShuntPort::W(w, m) = p {
            let (v, i) = sample_wg(mesh, g, w, *m);
            traces[pi].v.push(v);
            traces[pi].i.push(i);
        }
    }
}

/// Energy in the current pulses and stubs. CPU twin of the CUDA kernel `tlm_shunt_energy`.
pub(crate) fn tlm_shunt_energy(mesh: &Mesh) -> f64 {
    let mut s: f64 = mesh.b.iter().map(|v| v.par_iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>()).sum();
    if mesh.g.loaded {
        s += (0..mesh.g.kind.len())
            .into_par_iter()
            .map(|i| {
                let k = &mesh.g.coefs[mesh.g.kind[i] as usize];
                if mesh.g.short(i) {
                    return (0..4).filter(|&q| k.z[q / 2] > 0.0).map(|q| (mesh.sh[q][i] * mesh.sh[q][i] / (0.5 * k.z[q / 2])) as f64).sum::<f64>();
                }
                let (c, l) = mesh.stubs(i);
                let mut e = (k.y * c * c) as f64;
                for m in 0..2 {
                    if k.z[m] > 0.0 {
                        e += (l[m] * l[m] / k.z[m]) as f64;
                    }
                }
                e
            })
            .sum::<f64>();
    }
    s
}

/// The job packed for the CUDA backend (see [`super::pack`]): the same geometry,
/// coefficients, special nodes and port terms this engine steps with.
pub(crate) fn pack(job: &SimJob) -> Result<TlmPack, SimFailure> {
    let mut geo = Geo::build(job)?;
    let sp = ShuntPorts::new(job, &mut geo)?;
    check_kinds(job, geo.coefs.len())?;
    let g = &common::cells(job);
    let meta = geo
        .flags
        .par_iter()
        .zip(&geo.mirror)
        .zip(&geo.kind)
        .map(|((&f, &mi), &k)| {
            let mut m = (f & FACES) as u32 | ((mi & 0xf) as u32) << 6 | (k << META_KIND_SHIFT);
            if f & SHORT != 0 {
                m |= META_SHORT;
            }
            if f & SPECIAL != 0 {
                m |= META_SPECIAL;
            }
            m
        })
        .collect();
    let mut coefs = Vec::with_capacity(geo.coefs.len() * COEF2);
    for k in &geo.coefs {
        coefs.extend([k.y, k.ky].iter().chain(&k.z).chain(&k.kz).chain(&k.gface).chain(&[0.0, 0.0]));
    }
    let is_wg = sp.ports.iter().map(|p| matches!(p, ShuntPort::W(..))).collect();
    let specials = sp.others.iter().map(|(&node, &(w, over))| PackSpecial { node, w, over }).collect();
    let (mut lumped, mut wgs) = (vec![], vec![]);
    for (pi, p) in sp.ports.into_iter().enumerate() {
        match p {
            ShuntPort::L { idx, r } => lumped.push(PackLumped { port: pi, nodes: vec![idx], axis: 0, r, z: geo.z0 }),
            ShuntPort::W(w, m) => {
                // The terms sample_wg sums, in its order.
                let (mut lo, mut wt) = (vec![], vec![]);
                for iw in 0..geo.lat.n[w.w] {
                    let idx = geo.idx(w.cell(w.plane, 0, iw));
                    if geo.short(idx) || w.profile[iw] == 0.0 {
                        continue;
                    }
                    lo.push(idx);
                    wt.push(w.profile[iw]);
                }
                wgs.push(PackWg {
                    port: pi,
                    link_up: 2 * m + 1,
                    link_down: 2 * m,
                    hi: lo.clone(),
                    lo,
                    w: wt,
                    dw: g.d[w.w],
                    de: g.d[w.e],
                    z: geo.z0,
                    norm: w.norm,
                    inward: w.inward,
                });
            }
        }
    }
    let ends = sp.ends.into_iter().map(|e| PackEnd { nodes: e.nodes, link: e.link, me: e.me }).collect();
    Ok(TlmPack {
        dim3: false,
        dt: geo.dt,
        n: g.n,
        stride: [geo.stride[0], geo.stride[1], 0],
        meta,
        coefs,
        loaded: geo.loaded,
        src_e: 0,
        specials,
        lumped,
        ends,
        wgs,
        is_wg,
        drive: job.drive,
        offsets: Some(OFFSETS),
        cells: geo.flags.len(),
        scale: vec![],
    })
}

/// Modal V, I of a guide port on the node layer of its reference plane: per
/// node the voltage at the node instant and the mean current of its two links
/// along the normal at their midpoints half a step earlier (Yee's E on the plane
/// and mean H half a cell either side of it). Called after the swap: this
/// step's reflected pulses are `mesh.b`, last step's `mesh.nb`, and this step's
/// incident ones are gathered from `mesh.nb`.
fn sample_wg(mesh: &Mesh, g: &common::Cells, w: &WgPort, m: usize) -> (f64, f64) {
    let (mut v, mut i) = (0.0, 0.0);
    let (qn, qp) = (2 * m, 2 * m + 1);
    for iw in 0..mesh.g.lat.n[w.w] {
        let idx = mesh.g.idx(w.cell(w.plane, 0, iw));
        if mesh.g.short(idx) || w.profile[iw] == 0.0 {
            continue;
        }
        let a = mesh.g.gather(&mesh.nb, idx, mesh.g.flags[idx] & FACES);
        let (an, ap) = (a[qn] as f64, a[qp] as f64);
        let (bn, bp) = (mesh.b[qn][idx] as f64, mesh.b[qp][idx] as f64);
        let (bn0, bp0) = (mesh.nb[qn][idx] as f64, mesh.nb[qp][idx] as f64);
        v += 0.5 * ((an + bn) + (ap + bp)) * w.profile[iw] * g.d[w.w];
        i += 0.5 * ((an - bn0) + (bp0 - ap)) / mesh.g.z0 * w.profile[iw] * g.d[w.e];
    }
    (w.norm * v, w.norm * w.inward * i)
}

#[cfg(test)]
#[path = "shunt2d_onchip.rs"]
pub(crate) mod onchip;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tlm::spectrum::{peak_in, windowed};
    use crate::engine::tlm::testjobs::*;
    use crate::job::{Axis, EndReason, EngineKind, Port, Pulse, Sheet};

    #[test]
    fn plain_node_scatters_with_minus_half_and_half() {
        // Seed 003 eqs. 2.15-2.16: a unit pulse on one link reflects -1/2 and transmits +1/2.
        let mut b = [0f32; 4];
        scatter(&[1.0, 0.0, 0.0, 0.0], &mut b, &mut 0.0, &mut [0.0; 2], &PLAIN, 0.0);
        assert_eq!(b, [-0.5, 0.5, 0.5, 0.5]);
    }

    #[test]
    fn shorted_node_half_links_keep_their_stub_losslessly() {
        // No stub: the pulse returns inverted. With z: a^2 + s^2/zs is conserved per half-link.
        let mut k = PLAIN;
        let (mut b, mut s) = ([0f32; 4], [0f32; 4]);
        short_scatter(&[1.0, -2.0, 0.5, 3.0], &mut b, &mut s, &k);
        assert_eq!((b, s), ([-1.0, 2.0, -0.5, -3.0], [0.0; 4]));
        k.z = [0.004, 0.0];
        let a = [1.0f32, -2.0, 0.5, 3.0];
        s = [0.01, -0.02, 0.3, 0.0];
        let s0 = s;
        short_scatter(&a, &mut b, &mut s, &k);
        for q in 0..2 {
            let zs = 0.5 * k.z[0] as f64;
            let before = (a[q] as f64).powi(2) + (s0[q] as f64).powi(2) / zs;
            let after = (b[q] as f64).powi(2) + (s[q] as f64).powi(2) / zs;
            assert!((after / before - 1.0).abs() < 1e-5, "{before} {after}");
            assert!(b[q] != -a[q]);
        }
        assert_eq!((b[2], b[3], s[2], s[3]), (-0.5, -3.0, 0.3, 0.0));
    }

    /// The node-by-node step the run loops must reproduce bit for bit: gather,
    /// then `scatter` / `short_scatter` per node (the engine's step before the runs).
    fn reference_step(g: &Geo, b: &[Vec<f32>; 4], nb: &mut [Vec<f32>; 4], cap: &mut [f32], ind: &mut [Vec<f32>; 2], sh: &mut [Vec<f32>; 4]) {
        for idx in 0..g.flags.len() {
            let f = g.flags[idx];
            if f & SPECIAL != 0 {
                continue;
            }
            let a = g.gather(b, idx, f & FACES);
            let kd = g.kind[idx];
            let k = &g.coefs[kd as usize];
            let mut bo = [0f32; 4];
            if f & SHORT != 0 {
                if g.loaded {
                    let mut ss = [sh[0][idx], sh[1][idx], sh[2][idx], sh[3][idx]];
                    short_scatter(&a, &mut bo, &mut ss, k);
                    for q in 0..4 {
                        sh[q][idx] = ss[q];
                    }
                } else {
                    bo = a.map(|x| -x);
                }
            } else if g.loaded && kd != 0 {
                let (mut c, mut l) = (cap[idx], [ind[0][idx], ind[1][idx]]);
                scatter(&a, &mut bo, &mut c, &mut l, k, 0.0);
                cap[idx] = c;
                ind[0][idx] = l[0];
                ind[1][idx] = l[1];
            } else {
                let v = 0.5 * (a[0] + a[1] + a[2] + a[3]);
                bo = a.map(|x| v - x);
            }
            for q in 0..4 {
                nb[q][idx] = bo[q];
            }
        }
    }

    #[test]
    fn run_loops_step_every_kind_of_node_as_the_reference_does() {
        // Random pulses and stubs, 20 steps of both steps, bit for bit: square vacuum cells
        // (unloaded: plain and inverting shorted nodes), stretched cells with padding loss
        // (loaded: stubs, shorted half-link stubs), PMC and absorbing faces, an iris sheet,
        // a post, and a large job (stepped in parallel chunks that cut the runs).
        let mut jobs = vec![];
        let mut j = wr28(EngineKind::Tlm2d, 24, 1, 60, 0, 5, 3);
        j.sheets.push(Sheet { normal: Axis::Z, plane: 30, lo: [0, 0], hi: [9, 1] });
        jobs.push(j);
        let mut j = wr28(EngineKind::Tlm2d, 24, 1, 80, 10, 5, 3);
        j.mesh = j.mesh.with_uniform_axis(2, j.mesh.d(2)[0] * 1.04);
        for z in 40..44 {
            for x in 8..12 {
                std::sync::Arc::make_mut(&mut j.cell_mat)[z * 24 + x] = 1;
            }
        }
        jobs.push(j);
        let mut j = wr28(EngineKind::Tlm2d, 24, 1, 60, 6, 5, 3);
        j.boundaries[0] = [Boundary::Pmc, Boundary::Absorbing];
        jobs.push(j);
        jobs.push(wr28(EngineKind::Tlm2d, 240, 1, 400, 0, 5, 3));
        let mut rnd = uniform_noise(12345);
        let mut loaded = vec![];
        for job in &jobs {
            let mut m = Mesh::new(job).unwrap();
            let _sp = ShuntPorts::new(job, &mut m.g).unwrap();
            assert!(m.g.runs.iter().all(|r| r.start < r.end), "{}", job.label);
            loaded.push(m.g.loaded);
            for v in m.b.iter_mut() {
                v.iter_mut().for_each(|x| *x = rnd());
            }
            m.cap.iter_mut().chain(m.ind.iter_mut().flatten()).chain(m.sh.iter_mut().flatten()).for_each(|x| *x = 0.01 * rnd());
            let mut r = (m.b.clone(), m.nb.clone(), m.cap.clone(), m.ind.clone(), m.sh.clone());
            for step in 0..20 {
                m.sweep();
                reference_step(&m.g, &r.0, &mut r.1, &mut r.2, &mut r.3, &mut r.4);
                let same = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits());
                let special = |i: usize| m.g.flags[i] & SPECIAL != 0;
                for q in 0..4 {
                    for i in (0..m.g.flags.len()).filter(|&i| !special(i)) {
                        assert_eq!(m.nb[q][i].to_bits(), r.1[q][i].to_bits(), "{} step {step} link {q} node {i}", job.label);
                    }
                }
                assert!(same(&m.cap, &r.2) && same(&m.ind[0], &r.3[0]) && same(&m.ind[1], &r.3[1]), "{} step {step}: stubs", job.label);
                assert!((0..4).all(|q| same(&m.sh[q], &r.4[q])), "{} step {step}: shorted stubs", job.label);
                std::mem::swap(&mut m.b, &mut m.nb);
                std::mem::swap(&mut r.0, &mut r.1);
                // The special nodes (stepped by the port code) take the reference's values.
                for q in 0..4 {
                    for i in (0..m.g.flags.len()).filter(|&i| special(i)) {
                        m.b[q][i] = r.0[q][i];
                    }
                }
            }
        }
        assert_eq!(loaded, [false, true, false, false], "the jobs cover loaded and unloaded meshes");
    }

    #[test]
    fn empty_wr28_guide_2d() {
        check_empty_wr28(&wr28(EngineKind::Tlm2d, 24, 1, 100, 0, 5, 3), 5);
    }

    #[test]
    fn empty_wr28_guide_2d_stretched_cells_and_padding() {
        // Cells 4% longer along the guide: the z-line pair gets an inductive stub.
        let mut job = wr28(EngineKind::Tlm2d, 24, 1, 100, 10, 5, 3);
        job.mesh = job.mesh.with_uniform_axis(2, job.mesh.d(2)[0] * 1.04);
        let m = Mesh::new(&job).unwrap();
        assert!(m.g.loaded && m.g.coefs.iter().any(|k| k.z[0] > 0.0 || k.z[1] > 0.0));
        check_empty_wr28(&job, 15);
    }

    /// Max deviation of |S11|^2 + |S21|^2 from 1 and of S12 from S21 over the band.
    fn lossless_check(job: &SimJob) -> (f64, f64, f64) {
        let (s, _) = two_port_sparams(job);
        let (s11, s21, s12) = (s.get(1, 1).unwrap(), s.get(2, 1).unwrap(), s.get(1, 2).unwrap());
        let (mut dp, mut dr, mut s21min) = (0f64, 0f64, 0f64);
        for k in 0..s.freqs.len() {
            let p = s11[k].norm_sqr() + s21[k].norm_sqr();
            dp = dp.max((p - 1.0).abs());
            dr = dr.max((s21[k] - s12[k]).norm());
            s21min = s21min.min(s.db(2, 1).unwrap()[k]);
        }
        println!("max | |S11|^2+|S21|^2 - 1 | = {dp:.1e}, max |S21 - S12| = {dr:.1e}, min |S21| = {s21min:.1} dB");
        (dp, dr, s21min)
    }

    #[test]
    fn iris_and_post_are_lossless_and_reciprocal() {
        // Inductive iris: a zero-thickness sheet across the guide leaving a 10-cell window
        // off centre (so the two ports see different structures).
        let mut job = wr28(EngineKind::Tlm2d, 24, 1, 120, 0, 5, 3);
        job.sheets.push(Sheet { normal: Axis::Z, plane: 50, lo: [0, 0], hi: [9, 1] });
        job.sheets.push(Sheet { normal: Axis::Z, plane: 50, lo: [19, 0], hi: [24, 1] });
        let (dp, dr, s21min) = lossless_check(&job);
        assert!(dp < 0.02 && dr < 0.01 && s21min < -3.0);
        // A PEC post of 4 x 4 cells, off centre.
        let mut job = wr28(EngineKind::Tlm2d, 24, 1, 120, 0, 5, 3);
        for z in 60..64 {
            for x in 8..12 {
                std::sync::Arc::make_mut(&mut job.cell_mat)[z * 24 + x] = 1;
            }
        }
        let (dp, dr, s21min) = lossless_check(&job);
        assert!(dp < 0.02 && dr < 0.01 && s21min < -1.0);
    }

    #[test]
    fn guide_section_resonances_2d() {
        // A 2D PEC box a x d (the guide between two shorts): TE_m0p at c/2 sqrt((m/a)^2 + (p/d)^2).
        let (nx, nz, dl) = (40usize, 60usize, 0.25e-3);
        let (a, d) = (nx as f64 * dl, nz as f64 * dl);
        let mut job = wr28(EngineKind::Tlm2d, nx, 1, nz, 0, 5, 3);
        job.mesh = crate::job::Mesh::uniform(job.mesh.n(), [dl, 2e-3, dl], job.mesh.origin());
        job.boundaries[2] = [Boundary::Pec; 2];
        let lumped = |i: usize, k: usize| PortKind::Lumped { axis: Axis::Y, start: [i, 0, k], len: 1, r_ohm: 1e6 };
        job.ports = vec![Port { name: "src".into(), kind: lumped(7, 11) }, Port { name: "obs".into(), kind: lumped(29, 43) }];
        job.pulse = Pulse::covering(1e9, 60e9);
        job.stop.max_steps = 30_000;
        let out = run(&job).unwrap();
        assert!(matches!(out.ended, EndReason::MaxSteps { .. }));
        let xw = windowed(&out.traces[1].v[(job.pulse.end_time() / out.dt) as usize..]);
        for (m, p) in [(1, 1), (1, 2), (2, 1), (1, 3), (2, 3)] {
            let f = 0.5 * C0 * ((m as f64 / a).powi(2) + (p as f64 / d).powi(2)).sqrt();
            let g = peak_in(&xw, out.dt, 0.99 * f, 1.01 * f);
            println!("TE{m}0{p}: analytic {:.4} GHz, 2D TLM {:.4} GHz, error {:+.2e}", f / 1e9, g / 1e9, g / f - 1.0);
            assert!((g / f - 1.0).abs() < 1e-3);
        }
    }

    #[test]
    fn lumped_port_on_a_2d_parallel_plate_line_matches_fdtd() {
        // One cell wide between PMC faces: two node columns (x = 0 and x = dx), each a
        // mirror, so the line repeats with period 2 dx. A port on the x = 0 column sees
        // the two halves of a line of eta0 dy / (2 dx) in parallel, plus the reactance of
        // the non-uniform drive. The port's edge stands on its grid node and its current
        // is the loop of H around that edge, as in FDTD: the engines solve the same
        // discrete problem (the residue, ~1e-3, is the two absorbers' reflections; the
        // port cell's capacitance, had it been counted on one side only, would differ by
        // w C R = 2.6e-2 at 10 GHz).
        let mut job = wr28(EngineKind::Tlm2d, 1, 1, 320, 10, 5, 3);
        let (dx, dy, dz) = (0.5e-3, 2e-3, 0.5e-3);
        job.mesh = crate::job::Mesh::uniform(job.mesh.n(), [dx, dy, dz], job.mesh.origin());
        job.boundaries[0] = [Boundary::Pmc; 2];
        let z = 0.25 * ETA0 * dy / dx;
        job.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Y, start: [0, 0, 160], len: 1, r_ohm: z } }];
        job.pulse = Pulse::covering(1e9, 20e9);
        job.freqs = vec![1e9, 2e9, 5e9, 10e9, 20e9];
        job.stop.decay_db = -90.0;
        let zin = |engine: EngineKind| {
            let mut j = job.clone();
            j.engine = engine;
            let out = crate::engine::cpu::run_job(&j).unwrap();
            crate::analysis::SParams::from_runs(&[&j], &[&out]).zin[0].clone().unwrap()
        };
        let (t, f) = (zin(EngineKind::Tlm2d), zin(EngineKind::Fdtd));
        for k in 0..job.freqs.len() {
            println!("{} GHz: Zin TLM {:.3}, FDTD {:.3} (line {z:.3})", job.freqs[k] / 1e9, t[k], f[k]);
            assert!((t[k] / f[k] - 1.0).norm() < 5e-3, "TLM {} vs FDTD {}", t[k], f[k]);
            // The drive's own reactance grows with f (a local inductance); the real part is the line's.
            assert!((t[k].re / z - 1.0).abs() < 5e-3 && t[k].im > 0.0);
        }
    }

    #[test]
    fn bad_2d_jobs_are_rejected() {
        let mut job = wr28(EngineKind::Tlm2d, 24, 2, 60, 0, 5, 3);
        assert!(matches!(run(&job), Err(SimFailure::Invalid(_))));
        job = wr28(EngineKind::Tlm2d, 24, 1, 60, 0, 5, 3);
        job.boundaries[1] = [Boundary::Pmc; 2];
        assert!(matches!(run(&job), Err(SimFailure::Invalid(_))));
    }
}
