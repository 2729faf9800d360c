//! Edge currents: the FDTD extension for dispersive media (Debye, Lorentz and
//! Drude poles by auxiliary differential equations) and lumped R, L, C loads.
//!
//! Both are extra currents on some E edges: `eps dE/dt + sigma E = curl H - J`.
//! The Yee step (with the edge's own eps and sigma from the coefficient
//! table, so `eps_inf` for a dispersive medium) and the port sources leave a
//! value `E*`; the true update is `E(n+1) = E* - cb J(n+1/2)`. Every `J` here
//! depends only on the edge's own past and on `E(n)`, `E(n+1)`, so the
//! correction is local: after the step and the sources, each listed edge
//! solves one scalar equation for `E(n+1)` and advances its memories. That
//! keeps every Yee kernel untouched (CPU reference, SIMD stepper and the
//! CUDA step kernels); one extra sparse pass runs per step (CUDA twin:
//! `fdtd_edges` in kernels/fdtd_edges.cuh).
//!
//! Currents are written through polarisations normalised by eps0
//! (`P = polarisation / eps0`, in V/m), `J dt / eps0 = P(n+1) - P(n) = D(n+1)`:
//! - Debye `tau dP/dt + P = de E` by the trapezoidal rule (Taflove & Hagness,
//!   Computational Electrodynamics, 3rd ed. 2005, sec. 9.4.2's bilinear
//!   form): `D(n+1) = -2 dt/(2 tau + dt) P(n) + de dt/(2 tau + dt) (E(n+1) + E(n))`;
//! - second-order poles `P'' + a P' + b P = c E` (Lorentz: `a = 2 delta`,
//!   `b = w0^2`, `c = de w0^2`; Drude: `a = gamma`, `b = 0`, `c = wp^2`) by
//!   central differences at step n (Taflove & Hagness sec. 9.4.3):
//!   `D(n+1) = (-b dt^2 P(n) + (1 - a dt/2) D(n) + c dt^2 E(n)) / (1 + a dt/2)`;
//! - a lumped element of length dl across dual area A is a current density
//!   I / A with V = E dl: parallel R and C are instantaneous
//!   (`J = (E(n+1)+E(n)) dl/(2 R A) + C dl/A (E(n+1)-E(n))/dt`), a parallel L
//!   is a Drude pole with `c = dl / (L A eps0)`, a series R-C a Debye pole
//!   (`tau = R C`, `de = C dl / (A eps0)`), a series R-L-C a Lorentz pole
//!   (`a = R/L`, `b = 1/(L C)`, `c = dl / (L A eps0)`): Piket-May, Taflove &
//!   Baron, "FD-TD modeling of digital signal propagation in 3-D circuits
//!   with passive and active loads", IEEE T-MTT 42(8), 1994.
//!
//! Every pole is stored as `D(n+1) = kp P(n) + kd D(n) + q0 E(n) + q1 E(n+1)`,
//! `P(n+1) = P(n) + D(n+1)` (the increment, not P(n-1), is kept so that a slow
//! pole does not lose its current to f32 cancellation).

use crate::consts::EPS0;
use rayon::prelude::*;
use crate::job::{Load, Pole, SimFailure, SimJob, Topology};

use super::operator::{Operator, PEC_INDEX};

/// The edge currents of one job (struct of arrays, as uploaded to the GPU).
#[derive(Debug, Clone, Default)]
pub struct EdgeTerms {
    /// Per edge: E component and flat index.
    pub comp: Vec<u8>,
    pub idx: Vec<u32>,
    /// Per edge: `cb eps0 / dt` of its coefficient-table entry.
    pub s: Vec<f32>,
    /// Per edge: the instantaneous current's E(n) coefficient (P units).
    pub g0: Vec<f32>,
    /// Per edge: `1 / (1 + s (g1 + sum q1))`.
    pub inv_den: Vec<f32>,
    /// Per edge (host only, for the absorbed power): the instantaneous
    /// current's E(n+1) coefficient `g1` (P units), and whether a load sits on it.
    pub g1: Vec<f32>,
    pub load: Vec<bool>,
    /// Per edge, its poles `first[m]..first[m+1]` (length edges + 1).
    pub first: Vec<u32>,
    /// Per pole.
    pub kp: Vec<f32>,
    pub kd: Vec<f32>,
    pub q0: Vec<f32>,
    pub q1: Vec<f32>,
}

/// The memories of a job's edge currents (part of its [`super::fields::Fields`]).
#[derive(Debug, Clone, Default)]
pub struct EdgeState {
    /// Per edge: E after the previous step.
    pub e_prev: Vec<f32>,
    /// Per pole: P(n) and D(n).
    pub p: Vec<f32>,
    pub d: Vec<f32>,
}

impl EdgeState {
    pub fn new(t: &EdgeTerms) -> EdgeState {
        EdgeState { e_prev: vec![0.0; t.len()], p: vec![0.0; t.kp.len()], d: vec![0.0; t.kp.len()] }
    }
}

/// One pole in the stored form, before rounding to f32.
#[derive(Debug, Clone, Copy)]
struct Coef {
    kp: f64,
    kd: f64,
    q0: f64,
    q1: f64,
    /// Second-order poles: `b` and `c` (for the stability rule); zero for Debye.
    b: f64,
    c: f64,
}

/// A second-order pole `P'' + a P' + b P = c E`.
fn second_order(a: f64, b: f64, c: f64, dt: f64) -> Coef {
    let den = 1.0 + a * dt / 2.0;
    Coef { kp: -b * dt * dt / den, kd: (1.0 - a * dt / 2.0) / den, q0: c * dt * dt / den, q1: 0.0, b, c }
}

/// A Debye pole `tau P' + P = de E`.
fn debye(de: f64, tau: f64, dt: f64) -> Coef {
    let den = 2.0 * tau + dt;
    Coef { kp: -2.0 * dt / den, kd: 0.0, q0: de * dt / den, q1: de * dt / den, b: 0.0, c: 0.0 }
}

/// A material pole scaled by the fraction `w` of the edge's cells it fills.
fn material_pole(p: &Pole, w: f64, dt: f64) -> Coef {
    match *p {
        Pole::Debye { delta_eps, tau } => debye(w * delta_eps, tau, dt),
        Pole::Lorentz { delta_eps, omega0, delta } => second_order(2.0 * delta, omega0 * omega0, w * delta_eps * omega0 * omega0, dt),
        Pole::Drude { omega_p, gamma } => second_order(gamma, 0.0, w * omega_p * omega_p, dt),
    }
}

/// What one edge carries while the terms are gathered.
#[derive(Debug, Clone, Default)]
struct EdgeBuild {
    /// Instantaneous conductance (P units per E, both time levels): g dt / (2 eps0).
    half_g: f64,
    /// Instantaneous capacitance in P units per E: C dl / (A eps0).
    cap: f64,
    poles: Vec<Coef>,
    /// A load's edge (not only a dispersive medium's).
    load: bool,
}

impl EdgeTerms {
    pub fn len(&self) -> usize {
        self.comp.len()
    }
    pub fn is_empty(&self) -> bool {
        self.comp.is_empty()
    }

    /// Gather the edge currents of `job` on its operator (coefficient table,
    /// ports and sheets already in place). Empty unless a material has poles
    /// or the job has loads.
    pub fn build(job: &SimJob, op: &Operator) -> Result<EdgeTerms, SimFailure> {
        let dispersive: Vec<bool> = job.materials.iter().map(|m| !m.pec && !m.poles.is_empty()).collect();
        if !dispersive.iter().any(|&d| d) && job.loads.is_empty() {
            return Ok(EdgeTerms::default());
        }
        // Edges in flat order per component (material edges), then the loads' edges merged in.
        let mut found: Vec<((u8, u32), EdgeBuild)> = vec![];
        if dispersive.iter().any(|&d| d) {
            material_edges(job, op, &dispersive, &mut found);
        }
        for l in &job.loads {
            load_edges(job, op, l, &mut found)?;
        }
        found.sort_by_key(|(k, _)| *k);
        // A load on a dispersive edge adds to it.
        let mut merged: Vec<((u8, u32), EdgeBuild)> = vec![];
        for (k, b) in found {
            match merged.last_mut() {
                Some((lk, lb)) if *lk == k => {
                    lb.half_g += b.half_g;
                    lb.cap += b.cap;
                    lb.poles.extend(b.poles);
                    lb.load |= b.load;
                }
                _ => merged.push((k, b)),
            }
        }
        let dt = op.dt;
        let mut t = EdgeTerms { first: vec![0], ..Default::default() };
        for ((c, idx), b) in merged {
            let cb = op.cb[op.mat[c as usize][idx as usize] as usize] as f64;
            let s = cb * EPS0 / dt;
            let g1 = b.half_g + b.cap;
            let g0 = b.half_g - b.cap;
            let mut sum_q1 = 0.0;
            for p in &b.poles {
                // A central-difference pole rings with the edge's own field at
                // w^2 = b + c s (E + s P is conserved without curl H): stable below
                // w dt = 2; required below 1 so that it is also resolved.
                let w2 = p.b + p.c * s;
                if w2 * dt * dt > 1.0 {
                    return Err(SimFailure::Invalid(format!(
                        "a resonance at {:.4} GHz (a Lorentz/Drude pole, or a load's inductance with the cell's own capacitance) is too fast \
                         for the time step {:.4e} s: the update is stable and resolved only below {:.4} GHz (1/(2 pi dt)); \
                         use smaller cells there or a larger inductance, or leave that pole out",
                        w2.sqrt() / (2.0 * std::f64::consts::PI) * 1e-9,
                        dt,
                        1.0 / (2.0 * std::f64::consts::PI * dt) * 1e-9
                    )));
                }
                sum_q1 += p.q1;
                t.kp.push(p.kp as f32);
                t.kd.push(p.kd as f32);
                t.q0.push(p.q0 as f32);
                t.q1.push(p.q1 as f32);
            }
            t.comp.push(c);
            t.idx.push(idx);
            t.s.push(s as f32);
            t.g0.push(g0 as f32);
            t.inv_den.push((1.0 / (1.0 + s * (g1 + sum_q1))) as f32);
            t.g1.push(g1 as f32);
            t.load.push(b.load);
            t.first.push(t.kp.len() as u32);
        }
        Ok(t)
    }
}

/// Every non-PEC edge touching a cell of a dispersive material: the
/// material's poles weighted by the share of the edge's cells it fills (as
/// the coefficient table averages eps over the same cells).
fn material_edges(job: &SimJob, op: &Operator, dispersive: &[bool], out: &mut Vec<((u8, u32), EdgeBuild)>) {
    let n = op.n;
    let cell = |q: [isize; 3]| -> Option<usize> {
        if (0..3).all(|a| q[a] >= 0 && (q[a] as usize) < n[a]) {
            Some(job.cell_mat[q[0] as usize + n[0] * (q[1] as usize + n[1] * q[2] as usize)] as usize)
        } else {
            None
        }
    };
    for c in 0..3 {
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let mut hi = [n[0], n[1], n[2]];
        hi[c] = n[c] - 1;
        // One z plane per task (a GA generation builds dozens of operators).
        let planes: Vec<Vec<((u8, u32), EdgeBuild)>> = (0..=hi[2])
            .into_par_iter()
            .map(|k| {
                let mut out = vec![];
                for j in 0..=hi[1] {
                    for i in 0..=hi[0] {
                        let p = [i as isize, j as isize, k as isize];
                        let flat = op.at3(p);
                        if op.mat[c][flat] == PEC_INDEX {
                            continue;
                        }
                        let mut cells = [None; 4];
                        for (t, (da, db)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                            let mut q = p;
                            q[a] -= da;
                            q[b] -= db;
                            cells[t] = cell(q);
                        }
                        if !cells.iter().flatten().any(|&m| dispersive[m]) {
                            continue;
                        }
                        let cnt = cells.iter().flatten().count() as f64;
                        let mut eb = EdgeBuild::default();
                        // Each dispersive material once, weighted by its cells.
                        let mut seen: [usize; 4] = [usize::MAX; 4];
                        for (t, m) in cells.iter().enumerate() {
                            let Some(m) = *m else { continue };
                            if !dispersive[m] || seen[..t].contains(&m) {
                                continue;
                            }
                            seen[t] = m;
                            let w = cells.iter().flatten().filter(|&&x| x == m).count() as f64 / cnt;
                            eb.poles.extend(job.materials[m].poles.iter().map(|p| material_pole(p, w, op.dt)));
                        }
                        out.push(((c as u8, flat as u32), eb));
                    }
                }
                out
            })
            .collect();
        out.extend(planes.into_iter().flatten());
    }
}

/// A load's edges: its elements shared over the edges in proportion to
/// their lengths (R and L in series add, so an edge of length dl takes
/// R dl / total; a capacitor the inverse).
fn load_edges(job: &SimJob, op: &Operator, l: &Load, out: &mut Vec<((u8, u32), EdgeBuild)>) -> Result<(), SimFailure> {
    let g = &job.mesh;
    let c = l.axis.index();
    let (a, b) = (l.axis.others().0.index(), l.axis.others().1.index());
    let s = l.start;
    if l.len == 0 || s[c] + l.len > op.n[c] || s[a] > op.n[a] || s[b] > op.n[b] {
        return Err(SimFailure::Invalid(format!("load '{}' lies outside the grid", l.name)));
    }
    let bad = |what: &str| SimFailure::Invalid(format!("load '{}': {what}", l.name));
    for (v, what) in [(l.r, "r"), (l.l, "l"), (l.c, "c")] {
        if let Some(v) = v {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(&format!("{what} = {v} must be a positive finite value (leave the element out instead)")));
            }
        }
    }
    if l.r.is_none() && l.l.is_none() && l.c.is_none() {
        return Err(bad("has no element (give r, l or c)"));
    }
    let area = g.dual(a)[s[a]] * g.dual(b)[s[b]];
    let total: f64 = (0..l.len).map(|m| g.cell(c, s[c] + m)).sum();
    for m in 0..l.len {
        let mut p = [s[0] as isize, s[1] as isize, s[2] as isize];
        p[c] += m as isize;
        let flat = op.at3(p);
        if op.mat[c][flat] == PEC_INDEX {
            return Err(bad(&format!("edge {m} lies on a conductor: the load would be shorted")));
        }
        let dl = g.cell(c, s[c] + m);
        let share = dl / total;
        let (r, ind, cap) = (l.r.map(|r| r * share), l.l.map(|x| x * share), l.c.map(|x| x / share));
        let dt = op.dt;
        let mut eb = EdgeBuild { load: true, ..Default::default() };
        match l.topology {
            Topology::Parallel => {
                if let Some(r) = r {
                    eb.half_g = dl / (r * area) * dt / (2.0 * EPS0);
                }
                if let Some(cap) = cap {
                    eb.cap = cap * dl / (area * EPS0);
                }
                if let Some(ind) = ind {
                    eb.poles.push(second_order(0.0, 0.0, dl / (ind * area * EPS0), dt));
                }
            }
            Topology::Series => match (r, ind, cap) {
                (Some(r), None, None) => eb.half_g = dl / (r * area) * dt / (2.0 * EPS0),
                (None, None, Some(cap)) => eb.cap = cap * dl / (area * EPS0),
                (r, None, Some(cap)) => eb.poles.push(debye(cap * dl / (area * EPS0), r.unwrap_or(0.0) * cap, dt)),
                (r, Some(ind), cap) => {
                    let a_ = r.unwrap_or(0.0) / ind;
                    let b_ = cap.map(|cap| 1.0 / (ind * cap)).unwrap_or(0.0);
                    eb.poles.push(second_order(a_, b_, dl / (ind * area * EPS0), dt));
                }
                (_, None, None) => unreachable!("checked above: some element is given"),
            },
        }
        out.push(((c as u8, flat as u32), eb));
    }
    Ok(())
}

/// The edge currents' update after the step and the sources (twin of the
/// CUDA kernel `fdtd_edges`): per edge, in f32 and this operation order.
pub fn apply(t: &EdgeTerms, e: &mut [Vec<f32>; 3], st: &mut EdgeState) {
    for m in 0..t.len() {
        let (c, i) = (t.comp[m] as usize, t.idx[m] as usize);
        let en = st.e_prev[m];
        let (k0, k1) = (t.first[m] as usize, t.first[m + 1] as usize);
        let mut acc = t.g0[m] * en;
        for k in k0..k1 {
            acc += explicit(t, st, k, en);
        }
        let en1 = (e[c][i] - t.s[m] * acc) * t.inv_den[m];
        for k in k0..k1 {
            let d = explicit(t, st, k, en) + t.q1[k] * en1;
            st.p[k] += d;
            st.d[k] = d;
        }
        e[c][i] = en1;
        st.e_prev[m] = en1;
    }
}

/// The part of a pole's D(n+1) known before E(n+1).
#[inline]
fn explicit(t: &EdgeTerms, st: &EdgeState, k: usize, en: f32) -> f32 {
    (t.kp[k] * st.p[k] + t.kd[k] * st.d[k]) + t.q0[k] * en
}
