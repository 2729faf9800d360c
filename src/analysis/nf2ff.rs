//! Near-to-far-field transform (Balanis ch. 6, Taflove ch. 8; what openEMS's
//! nf2ff does): the tangential E and H that the Huygens box's face monitors
//! recorded ([`crate::job::huygens`]) become equivalent surface currents
//! `J = n x H`, `M = -n x E`, whose radiation vectors
//! `N = ∮ J exp(jk r^.r') dS`, `L = ∮ M exp(jk r^.r') dS` give the far field
//! `r E_theta = -jk/(4 pi) (L_phi + eta N_theta)`,
//! `r E_phi = jk/(4 pi) (L_theta - eta N_phi)` (phasors `exp(+j w t)`, as the
//! DFT `X(f) = sum x(t) exp(-j w t) dt` gives them).
//!
//! Each current component is integrated on its own Yee sample points, with
//! no interpolation: on a face E_b and H_c (b, c the tangential axes) sit on
//! the same points, cells along b and nodes along c (H averaged across the
//! face by the monitor, at its own half-step time), so both `J` and `M` and
//! the Poynting flux use the fields where the engine keeps them. Node samples
//! get trapezoid weights (half a cell at the face's edges, which the next face
//! shares). A PEC or PMC mirror plane adds the image currents.

use num_complex::Complex64;

use crate::consts::{C0, ETA0};
use crate::job::huygens::{parse_face, HuygensBox};
use crate::job::{Boundary, Field, MonitorOutput, SimJob, SimOutput};

/// One current component on its sample grid (one axis flat).
#[derive(Debug, Clone)]
struct Grid {
    magnetic: bool,
    /// The current's direction.
    axis: usize,
    /// Sample coordinates (metres) per axis.
    pos: [Vec<f64>; 3],
    /// Current times area, `[f][k][j][i]`.
    values: Vec<Complex64>,
}

/// The equivalent currents of one simulation's Huygens box, ready to radiate.
#[derive(Debug, Clone)]
pub struct Radiator {
    pub freqs: Vec<f64>,
    grids: Vec<Grid>,
    /// (axis, +1 / -1): the half space `sign * r^[axis] >= 0` that a mirror
    /// plane leaves physical; none without one.
    half_space: Option<(usize, f64)>,
    /// Power through the box per frequency, `1/2 Re ∮ (E x H*) . n dS` (in the
    /// DFT's units, like the port powers).
    pub p_flux: Vec<f64>,
}

/// The far field in one direction: `r E` (theta and phi parts) and the
/// radiation intensity `U = r^2 |E|^2 / (2 eta)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FarPoint {
    pub e_theta: Complex64,
    pub e_phi: Complex64,
    pub u: f64,
}

/// The levi-civita sign of (a, b, third) for a != b: +1 when b follows a cyclically.
fn eps(a: usize, b: usize) -> f64 {
    if b == (a + 1) % 3 {
        1.0
    } else {
        -1.0
    }
}

/// Per-axis sample coordinates and integration weights of a component laid out as `c`.
fn layout(job: &SimJob, first: [usize; 3], count: [usize; 3], at_nodes: [bool; 3], normal: usize) -> ([Vec<f64>; 3], [Vec<f64>; 3]) {
    let m = &job.mesh;
    let mut pos: [Vec<f64>; 3] = Default::default();
    let mut w: [Vec<f64>; 3] = Default::default();
    for b in 0..3 {
        if b == normal {
            pos[b] = vec![m.lines(b)[first[b]]];
            w[b] = vec![1.0];
        } else if at_nodes[b] {
            let (f, l) = (first[b], first[b] + count[b] - 1);
            pos[b] = (f..=l).map(|p| m.lines(b)[p]).collect();
            w[b] = (f..=l)
                .map(|p| {
                    let left = if p > f { 0.5 * m.d(b)[p - 1] } else { 0.0 };
                    let right = if p < l { 0.5 * m.d(b)[p] } else { 0.0 };
                    left + right
                })
                .collect();
        } else {
            pos[b] = (first[b]..first[b] + count[b]).map(|i| m.centres(b)[i]).collect();
            w[b] = (first[b]..first[b] + count[b]).map(|i| m.d(b)[i]).collect();
        }
    }
    (pos, w)
}

impl Radiator {
    /// The radiator of `job`'s Huygens box from its output; `None` when the
    /// job has no box, `Err` when the monitors' results do not make one.
    pub fn from_run(job: &SimJob, out: &SimOutput) -> Result<Option<Radiator>, String> {
        let Some(hbox) = HuygensBox::of_job(job) else { return Ok(None) };
        let mut grids = vec![];
        let mut freqs: Option<Vec<f64>> = None;
        let mut p_flux: Vec<f64> = vec![];
        let mut faces = 0;
        for (m, o) in job.monitors.iter().zip(&out.monitors) {
            let Some((axis, side)) = parse_face(m.name()) else { continue };
            let MonitorOutput::FieldDft { freqs: fs, components, .. } = o else {
                return Err(format!("far-field face `{}` did not record fields", m.name()));
            };
            if freqs.as_ref().is_some_and(|f| f != fs) {
                return Err(format!("far-field face `{}` has other frequencies than the others", m.name()));
            }
            let nf = fs.len();
            if p_flux.is_empty() {
                p_flux = vec![0.0; nf];
            }
            freqs = Some(fs.clone());
            faces += 1;
            let a = axis.index();
            let sg = if side == 0 { -1.0 } else { 1.0 };
            let get = |f: Field, c: usize| components.iter().find(|x| x.field == f && x.axis.index() == c);
            for c in (0..3).filter(|&c| c != a) {
                let t = 3 - a - c;
                for (field, magnetic, sign) in [(Field::H, false, sg * eps(a, c)), (Field::E, true, -sg * eps(a, c))] {
                    let comp = get(field, c).ok_or_else(|| format!("far-field face `{}` lacks {field:?}{}", m.name(), ["x", "y", "z"][c]))?;
                    let (pos, w) = layout(job, comp.first, comp.count, comp.at_nodes, a);
                    let per_f = comp.count.iter().product::<usize>();
                    if comp.values.len() != per_f * nf {
                        return Err(format!("far-field face `{}`: {} values for {per_f} samples at {nf} frequencies", m.name(), comp.values.len()));
                    }
                    let mut values = Vec::with_capacity(comp.values.len());
                    for fi in 0..nf {
                        for k in 0..comp.count[2] {
                            for j in 0..comp.count[1] {
                                for i in 0..comp.count[0] {
                                    let s = ((fi * comp.count[2] + k) * comp.count[1] + j) * comp.count[0] + i;
                                    values.push(comp.values[s] * (sign * w[0][i] * w[1][j] * w[2][k]));
                                }
                            }
                        }
                    }
                    grids.push(Grid { magnetic, axis: t, pos, values });
                }
            }
            // Poynting flux through the face: (E x H*) . e_a = E_b H_c* - E_c H_b*, E_b and H_c co-located.
            let (b, c) = ((a + 1) % 3, (a + 2) % 3);
            for (eb, hc, sign) in [(b, c, 1.0), (c, b, -1.0)] {
                let (Some(e), Some(h)) = (get(Field::E, eb), get(Field::H, hc)) else { continue };
                if e.count != h.count || e.first != h.first {
                    return Err(format!("far-field face `{}`: E{} and H{} are not co-located", m.name(), ["x", "y", "z"][eb], ["x", "y", "z"][hc]));
                }
                let (_, w) = layout(job, e.first, e.count, e.at_nodes, a);
                let per_f: usize = e.count.iter().product();
                for (fi, pf) in p_flux.iter_mut().enumerate() {
                    let mut s = 0.0;
                    for k in 0..e.count[2] {
                        for j in 0..e.count[1] {
                            for i in 0..e.count[0] {
                                let n = fi * per_f + (k * e.count[1] + j) * e.count[0] + i;
                                s += (e.values[n] * h.values[n].conj()).re * w[0][i] * w[1][j] * w[2][k];
                            }
                        }
                    }
                    *pf += 0.5 * sg * sign * s;
                }
            }
        }
        let Some(freqs) = freqs else { return Ok(None) };
        if faces != hbox.faces().len() {
            return Err(format!("the far-field box has {faces} faces recorded of {}", hbox.faces().len()));
        }
        let mut half_space = None;
        if let Some(mir) = hbox.mirror {
            let m = mir.axis.index();
            let plane = if mir.side == 0 { job.mesh.lines(m)[0] } else { job.mesh.lines(m)[job.mesh.n()[m]] };
            // PEC: tangential J and normal M flip; PMC: the dual.
            let images: Vec<Grid> = grids
                .iter()
                .map(|g| {
                    let tangential = g.axis != m;
                    let flips = match (mir.boundary, g.magnetic) {
                        (Boundary::Pmc, false) | (Boundary::Pec, true) => !tangential,
                        _ => tangential,
                    };
                    let mut pos = g.pos.clone();
                    pos[m] = pos[m].iter().map(|x| 2.0 * plane - x).collect();
                    let s = if flips { -1.0 } else { 1.0 };
                    Grid { magnetic: g.magnetic, axis: g.axis, pos, values: g.values.iter().map(|v| v * s).collect() }
                })
                .collect();
            grids.extend(images);
            half_space = Some((m, if mir.side == 0 { 1.0 } else { -1.0 }));
        }
        Ok(Some(Radiator { freqs, grids, half_space, p_flux }))
    }

    /// Whether direction `r` lies in the physical half space (always, without a mirror).
    fn physical(&self, r: [f64; 3]) -> bool {
        self.half_space.is_none_or(|(m, s)| s * r[m] >= -1e-12)
    }

    /// Whether direction `r` lies on the mirror plane (half weight in integrals).
    pub fn on_mirror(&self, theta_deg: f64, phi_deg: f64) -> bool {
        let r = unit(theta_deg, phi_deg);
        self.half_space.is_some_and(|(m, _)| r[m].abs() < 1e-9)
    }

    /// Whether a PEC/PMC mirror plane halves the sphere (front-to-back is then infinite).
    pub fn has_mirror(&self) -> bool {
        self.half_space.is_some()
    }

    /// The far field at frequency index `fi` in direction (theta, phi) in
    /// degrees; zero behind a mirror plane.
    pub fn at(&self, fi: usize, theta_deg: f64, phi_deg: f64) -> FarPoint {
        let (th, ph) = (theta_deg.to_radians(), phi_deg.to_radians());
        let r = unit(theta_deg, phi_deg);
        let zero = Complex64::new(0.0, 0.0);
        if !self.physical(r) {
            return FarPoint { e_theta: zero, e_phi: zero, u: 0.0 };
        }
        let k = 2.0 * std::f64::consts::PI * self.freqs[fi] / C0;
        let mut n = [zero; 3];
        let mut l = [zero; 3];
        for g in &self.grids {
            let cnt = [g.pos[0].len(), g.pos[1].len(), g.pos[2].len()];
            let per_f = cnt[0] * cnt[1] * cnt[2];
            let vals = &g.values[fi * per_f..(fi + 1) * per_f];
            let tab: [Vec<Complex64>; 3] = std::array::from_fn(|a| g.pos[a].iter().map(|&x| Complex64::from_polar(1.0, k * r[a] * x)).collect());
            let mut sum = zero;
            for kk in 0..cnt[2] {
                let mut sj = zero;
                for j in 0..cnt[1] {
                    let row = &vals[(kk * cnt[1] + j) * cnt[0]..(kk * cnt[1] + j + 1) * cnt[0]];
                    let si: Complex64 = row.iter().zip(&tab[0]).map(|(v, p)| v * p).sum();
                    sj += si * tab[1][j];
                }
                sum += sj * tab[2][kk];
            }
            if g.magnetic {
                l[g.axis] += sum;
            } else {
                n[g.axis] += sum;
            }
        }
        let th_hat = [th.cos() * ph.cos(), th.cos() * ph.sin(), -th.sin()];
        let ph_hat = [-ph.sin(), ph.cos(), 0.0];
        let dot = |v: &[Complex64; 3], u: &[f64; 3]| v[0] * u[0] + v[1] * u[1] + v[2] * u[2];
        let (n_th, n_ph, l_th, l_ph) = (dot(&n, &th_hat), dot(&n, &ph_hat), dot(&l, &th_hat), dot(&l, &ph_hat));
        let jk4 = Complex64::new(0.0, k / (4.0 * std::f64::consts::PI));
        let e_theta = -jk4 * (l_ph + ETA0 * n_th);
        let e_phi = jk4 * (l_th - ETA0 * n_ph);
        let u = (e_theta.norm_sqr() + e_phi.norm_sqr()) / (2.0 * ETA0);
        FarPoint { e_theta, e_phi, u }
    }
}

/// The unit vector of direction (theta, phi) in degrees.
pub fn unit(theta_deg: f64, phi_deg: f64) -> [f64; 3] {
    let (th, ph) = (theta_deg.to_radians(), phi_deg.to_radians());
    [th.sin() * ph.cos(), th.sin() * ph.sin(), th.cos()]
}
