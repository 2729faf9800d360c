//! The layout and weights of the absorbed-power monitor
//! ([`crate::job::Monitor::Absorbed`]): which field samples carry loss and
//! how much power each absorbs per unit |X(f)|^2, from the coefficients the
//! engine steps. `super::dft` records those samples with the field DFT
//! machinery (one tap each, so the CUDA kernel `fdtd_dft` records them too)
//! and sums `weight |X|^2` into the power.
//!
//! The power is that of the discrete update, not of the continuous medium,
//! in phasors of the sampled fields (the DFT of a quantity sampled at
//! `(n + 1/2) dt` refers to those times, as the port's V and I do):
//! - a lossy-metal H node (`super::surface`) puts `E_face(n) = Zs(s_d) H(n)`
//!   on its face edges, `H(n)` the mean of its half steps and `s_d = (2/dt)
//!   (z - 1)/(z + 1)` (every part of the network is trapezoidal), so it
//!   absorbs `1/2 Re Zs(j w_d) cos(w dt/2) |H|^2` per unit face area, with
//!   `w_d = (2/dt) tan(w dt/2)`, the cosine from the half-step mean and `|H|`
//!   the DFT of the node's half-step samples. Its face area is `sum(1/d) d_a
//!   d_b d*_c` (the faces' `1/d` the term's `k / db`, `d*_c` the node's dual
//!   length), which is exactly the loss `-(Zs/d) H` takes out of the node's
//!   magnetic energy;
//! - an E edge carries `J(n+1/2) = sigma (E(n+1) + E(n))/2 + eps0/dt (g1 E(n+1)
//!   + g0 E(n) + sum_k D_k(n+1))` (`super::edges`: conductivity from the
//!   coefficient table, `sigma = (1 - ca)/cb`, instantaneous R/C, poles), so
//!   with `z = exp(j w dt)` and the z-transforms `J = Y(z) E` it absorbs
//!   `1/2 Re(Y(z) z^(-1/2)) |E|^2` per unit volume of its dual cell
//!   (`d_c d*_a d*_b`; `z^(-1/2)` moves J's samples to their half steps).
//!
//! These are the terms of the discrete Poynting balance in phasors (the Yee
//! curls are adjoint), so in a closed cavity they add up to the port's
//! accepted power `Re(V I*)/2` (tested below). Against the continuous
//! `1/2 Re Zs(w) |H|^2` and `1/2 w eps0 eps''(w) |E|^2` they differ by
//! O((w dt)^2): under 1 % at 15 cells per wavelength (tested below). A
//! lumped port's edges are not counted (its resistor, and a dispersive
//! medium's current on them): the accepted power is measured by their H
//! loop, so it already excludes them.

use num_complex::Complex64;

use super::operator::{Operator, PEC_INDEX};
use crate::consts::EPS0;
use crate::job::Field;

/// What a sample's loss is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Conductor,
    Dielectric,
    Load,
}

/// One recorded group: samples of one field component and class, one flat
/// index each, and per frequency and sample the power per |X|^2.
#[derive(Debug, Clone)]
pub struct Group {
    pub field: Field,
    pub axis: usize,
    pub class: Class,
    pub taps: Vec<usize>,
    /// `[f * taps.len() + sample]`.
    pub weights: Vec<f64>,
}

/// The share of a sample's dual cell inside the region `lo..=hi` along one
/// axis: a node position on a face of the region that is not a domain face
/// counts half (its dual cell straddles the face); a cell position counts
/// when both its nodes lie inside.
fn share(node: bool, i: usize, lo: usize, hi: usize, n: usize) -> f64 {
    if node {
        if i < lo || i > hi {
            0.0
        } else if (i == lo && lo > 0) || (i == hi && hi < n) {
            0.5
        } else {
            1.0
        }
    } else if i >= lo && i < hi {
        1.0
    } else {
        0.0
    }
}

/// The logical position of flat index `p`.
fn position(op: &Operator, p: usize) -> [usize; 3] {
    let (s1, s2) = (op.stride[1], op.stride[2]);
    [p % s1 - 1, (p % s2) / s1 - 1, p / s2 - 1]
}

/// `w_d` and `cos(w dt / 2)` of frequency `f` on time step `dt`.
fn discrete(f: f64, dt: f64) -> (f64, f64) {
    let x = std::f64::consts::PI * f * dt;
    (2.0 / dt * x.tan(), x.cos())
}

/// The conductance-like `Re(Y(z) z^(-1/2))` of edge term `m` (its
/// table conductivity `sigma` added) at `f`: absorbed power per unit volume
/// and |E|^2, times two.
pub fn edge_conductance(op: &Operator, m: Option<usize>, sigma: f64, f: f64) -> f64 {
    let dt = op.dt;
    let z = Complex64::from_polar(1.0, 2.0 * std::f64::consts::PI * f * dt);
    let one = Complex64::new(1.0, 0.0);
    let mut y = sigma * (one + z) / 2.0;
    if let Some(m) = m {
        let t = &op.edges;
        let mut g = t.g1[m] as f64 * z + t.g0[m] as f64;
        for k in t.first[m] as usize..t.first[m + 1] as usize {
            let (kp, kd, q0, q1) = (t.kp[k] as f64, t.kd[k] as f64, t.q0[k] as f64, t.q1[k] as f64);
            g += z * (q0 + q1 * z) / (z - kd - kp * z / (z - one));
        }
        y += EPS0 / dt * g;
    }
    (y * Complex64::from_polar(1.0, -std::f64::consts::PI * f * dt)).re
}

/// The resistance-like `Re Zs(j w_d) cos(w dt/2)` of conductor `metal` at
/// `f`: absorbed power per unit face area and |H|^2, times two.
pub fn face_resistance(op: &Operator, metal: usize, f: f64) -> f64 {
    let (wd, c) = discrete(f, op.dt);
    op.surface.fits[metal].z(wd).re * c
}

/// The groups of an absorbed-power monitor over `lo..=hi` at `freqs`: empty
/// where nothing inside is lossy.
pub fn groups(op: &Operator, lo: &[usize; 3], hi: &[usize; 3], freqs: &[f64]) -> Vec<Group> {
    let n = op.n;
    let len = |a: usize, q: usize| 1.0 / op.inv_h[a][q + 1] as f64;
    let dual = |a: usize, q: usize| 1.0 / op.inv_e[a][q + 1] as f64;
    let nf = freqs.len();
    let mut out = vec![];
    // Lossy metal: each surface term's node, by H component.
    let t = &op.surface;
    for c in 0..3 {
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let mut g = Group { field: Field::H, axis: c, class: Class::Conductor, taps: vec![], weights: vec![] };
        let mut per: Vec<(usize, f64)> = vec![];
        for i in (0..t.len()).filter(|&i| t.comp[i] as usize == c) {
            let p = t.idx[i] as usize;
            let pos = position(op, p);
            let inside = share(true, pos[c], lo[c], hi[c], n[c]) * share(false, pos[a], lo[a], hi[a], n[a]) * share(false, pos[b], lo[b], hi[b], n[b]);
            if inside == 0.0 {
                continue;
            }
            let gsum = t.k[i] as f64 / op.db as f64;
            let area = gsum * len(a, pos[a]) * len(b, pos[b]) * dual(c, pos[c]);
            g.taps.push(p);
            per.push((t.metal[i] as usize, inside * area));
        }
        if !g.taps.is_empty() {
            for &f in freqs {
                let r: Vec<f64> = (0..t.fits.len()).map(|m| face_resistance(op, m, f)).collect();
                g.weights.extend(per.iter().map(|&(m, ar)| 0.5 * r[m] * ar));
            }
            out.push(g);
        }
    }
    // Lossy, dispersive or loaded E edges: the table's conductivity and the
    // edge terms, but not on a lumped port's edges (below).
    let ports: std::collections::HashSet<(usize, usize)> =
        op.lumped.iter().flatten().flat_map(|l| l.edges.iter().map(move |&p| (l.comp, p))).collect();
    let te = &op.edges;
    for c in 0..3 {
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let mut dielectric = Group { field: Field::E, axis: c, class: Class::Dielectric, taps: vec![], weights: vec![] };
        let mut loads = Group { field: Field::E, axis: c, class: Class::Load, taps: vec![], weights: vec![] };
        let (mut pd, mut pl): (Vec<(Option<usize>, f64, f64)>, Vec<(Option<usize>, f64, f64)>) = (vec![], vec![]);
        for k in lo[2]..=hi[2] {
            for j in lo[1]..=hi[1] {
                for i in lo[0]..=hi[0] {
                    let pos = [i, j, k];
                    if pos[c] == hi[c] {
                        continue; // E_c lies between lines c and c + 1
                    }
                    let p = op.at(i as isize, j as isize, k as isize);
                    let mi = op.mat[c][p];
                    // A lumped port's edges lie inside the port branch: the
                    // accepted power is measured through their H loop, so
                    // what they absorb (a dispersive medium's current there
                    // too) is not part of it.
                    if mi == PEC_INDEX || ports.contains(&(c, p)) {
                        continue;
                    }
                    let sigma = (1.0 - op.ca[mi as usize] as f64) / op.cb[mi as usize] as f64;
                    let m = if te.is_empty() { None } else { find_edge(op, c, p) };
                    if sigma <= 0.0 && m.is_none() {
                        continue;
                    }
                    let inside = share(false, pos[c], lo[c], hi[c], n[c]) * share(true, pos[a], lo[a], hi[a], n[a]) * share(true, pos[b], lo[b], hi[b], n[b]);
                    if inside == 0.0 {
                        continue;
                    }
                    let vol = inside * len(c, pos[c]) * dual(a, pos[a]) * dual(b, pos[b]);
                    let is_load = m.is_some_and(|m| te.load[m]);
                    let (g, pv) = if is_load { (&mut loads, &mut pl) } else { (&mut dielectric, &mut pd) };
                    g.taps.push(p);
                    pv.push((m, sigma.max(0.0), vol));
                }
            }
        }
        for (mut g, pv) in [(dielectric, pd), (loads, pl)] {
            if g.taps.is_empty() {
                continue;
            }
            g.weights.reserve(nf * pv.len());
            for &f in freqs {
                g.weights.extend(pv.iter().map(|&(m, sigma, vol)| 0.5 * edge_conductance(op, m, sigma, f) * vol));
            }
            out.push(g);
        }
    }
    out
}

/// The edge term of E component `c` at flat index `p` (the terms are sorted
/// by component, then index).
fn find_edge(op: &Operator, c: usize, p: usize) -> Option<usize> {
    let t = &op.edges;
    let key = (c as u8, p as u32);
    let (mut lo, mut hi) = (0, t.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match (t.comp[mid], t.idx[mid]).cmp(&key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

#[cfg(test)]
#[path = "absorbed_tests.rs"]
pub(crate) mod tests;
