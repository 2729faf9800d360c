//! The running-DFT field monitor of the FDTD engines (a monitor extension:
//! its per-step hook runs after the sources and the ports). It accumulates,
//! in f64, `X(f) = sum x(t) exp(-j 2 pi f t) dt` of the chosen components
//! over a box or a plane of mesh nodes ([`Monitor::FieldDft`]), E at
//! `(n + 1) dt` and H at `(n + 1/2) dt` after step n. On an axis where the
//! monitor is flat, a component that Yee keeps between nodes along it is the
//! mean of its two samples either side of the plane, so E and H of a Huygens
//! surface come out on the same plane.
//!
//! The CPU engine steps it through [`super::cpu::fdtd_dft`]; the CUDA
//! backend packs the same layout (each sample's taps, [`FieldDftMonitor::comps`])
//! into tables for the kernel `fdtd_dft` of `kernels/fdtd_ports.cuh`, with the phase
//! factors of [`phases`], and hands the sums back through
//! [`FieldDftMonitor::set_sums`]: both produce the same [`MonitorOutput`].
//!
//! The absorbed-power monitor ([`Monitor::Absorbed`]) rides on the same
//! machinery: its components list the lossy samples of `super::absorbed`
//! (one tap each, not a box) and its output sums their weighted `|X|^2`.

use num_complex::Complex64;

use super::absorbed::{self, Class};
use super::fields::Fields;
use super::operator::Operator;
use crate::job::{Axis, ComponentDft, DftFields, Field, Monitor, MonitorOutput, SimFailure};

/// One recorded component: its samples and, per sample, the flat indices
/// (`ntap` of them: 1, 2, 4 or 8) whose mean it is.
#[derive(Debug, Clone)]
pub struct Comp {
    pub field: Field,
    pub axis: usize,
    first: [usize; 3],
    count: [usize; 3],
    at_nodes: [bool; 3],
    /// Taps per sample.
    pub ntap: usize,
    /// `taps[sample * ntap + t]`: flat indices into the operator's arrays.
    pub taps: Vec<usize>,
    /// `[f][sample]`.
    acc: Vec<Complex64>,
}

impl Comp {
    pub fn samples(&self) -> usize {
        self.count.iter().product()
    }
}

/// The state of one field DFT monitor.
#[derive(Debug, Clone)]
pub struct FieldDftMonitor {
    name: String,
    freqs: Vec<f64>,
    dt: f64,
    comps: Vec<Comp>,
    /// An absorbed-power monitor: per component its class and weights
    /// (`[f][sample]`, power per |X|^2); `None` for a field monitor.
    loss: Option<Vec<(Class, Vec<f64>)>>,
}

/// The phase factors `exp(-j 2 pi f t)` of step `n` at `freq`: (E at
/// `(n + 1) dt`, H at `(n + 1/2) dt`). The CUDA host computes the kernel's
/// table with this function, so both engines multiply by the same numbers.
pub fn phases(freq: f64, dt: f64, n: usize) -> (Complex64, Complex64) {
    let w = 2.0 * std::f64::consts::PI * freq;
    (Complex64::from_polar(1.0, -w * (n as f64 + 1.0) * dt), Complex64::from_polar(1.0, -w * (n as f64 + 0.5) * dt))
}

/// The components a monitor records: (field, component axis).
fn wanted(fields: DftFields) -> Vec<(Field, usize)> {
    match fields {
        DftFields::All => [Field::E, Field::H].into_iter().flat_map(|f| (0..3).map(move |c| (f, c))).collect(),
        DftFields::Tangential(n) => {
            let n = n.index();
            [Field::E, Field::H].into_iter().flat_map(|f| (0..3).filter(move |&c| c != n).map(move |c| (f, c))).collect()
        }
    }
}

/// Where component `c` of `field` sits in the monitor `lo..=hi`: per axis the
/// first sample, the count, whether on nodes, and whether it is the mean of
/// the two cells either side (a flat axis the component is kept between lines of).
fn place(field: Field, c: usize, lo: &[usize; 3], hi: &[usize; 3]) -> ([usize; 3], [usize; 3], [bool; 3], [bool; 3]) {
    // E_c between nodes along c, H_c between nodes across c.
    let between: [bool; 3] = std::array::from_fn(|a| (field == Field::E) == (a == c));
    let mut first = [0usize; 3];
    let mut count = [0usize; 3];
    let mut at_nodes = [true; 3];
    let mut mean = [false; 3];
    for a in 0..3 {
        let flat = lo[a] == hi[a];
        first[a] = lo[a];
        if between[a] && !flat {
            count[a] = hi[a] - lo[a];
            at_nodes[a] = false;
        } else if between[a] {
            count[a] = 1;
            mean[a] = true;
        } else {
            count[a] = hi[a] - lo[a] + 1;
        }
    }
    (first, count, at_nodes, mean)
}

impl FieldDftMonitor {
    /// Check `m` against the operator's mesh (the same errors on every engine).
    pub fn check(m: &Monitor, op: &Operator) -> Result<(), SimFailure> {
        let (Monitor::FieldDft { name, lo, hi, freqs, .. } | Monitor::Absorbed { name, lo, hi, freqs }) = m;
        let bad = |why: String| Err(SimFailure::Invalid(format!("field monitor `{name}`: {why}")));
        for a in 0..3 {
            if lo[a] > hi[a] || hi[a] > op.n[a] {
                return bad(format!("nodes {}..={} along {} do not lie within 0..={}", lo[a], hi[a], Axis::from_index(a).name(), op.n[a]));
            }
        }
        if freqs.is_empty() || freqs.iter().any(|f| !f.is_finite()) {
            return bad("needs at least one finite frequency".into());
        }
        if matches!(m, Monitor::Absorbed { .. }) && freqs.iter().any(|&f| f <= 0.0) {
            return bad("absorbed power needs positive frequencies".into());
        }
        Ok(())
    }

    /// Bytes the CUDA backend holds for `m` on `op` (taps, sample table, f64 sums).
    pub fn device_bytes(m: &Monitor, op: &Operator) -> usize {
        let (lo, hi, fields, freqs) = match m {
            Monitor::FieldDft { lo, hi, fields, freqs, .. } => (lo, hi, fields, freqs),
            Monitor::Absorbed { lo, hi, freqs, .. } => {
                let samples: usize = absorbed::groups(op, lo, hi, &freqs[..1]).iter().map(|g| g.taps.len()).sum();
                return samples * (8 + 16 * freqs.len());
            }
        };
        wanted(*fields)
            .into_iter()
            .map(|(f, c)| {
                let (_, count, _, mean) = place(f, c, lo, hi);
                let ntap: usize = mean.iter().map(|&m| if m { 2 } else { 1 }).product();
                count.iter().product::<usize>() * (4 + 4 * ntap + 16 * freqs.len())
            })
            .sum()
    }

    /// Check `m` against the operator's mesh and lay out its samples.
    pub fn new(m: &Monitor, op: &Operator) -> Result<FieldDftMonitor, SimFailure> {
        Self::check(m, op)?;
        let (name, lo, hi, fields, freqs) = match m {
            Monitor::FieldDft { name, lo, hi, fields, freqs } => (name, lo, hi, fields, freqs),
            Monitor::Absorbed { name, lo, hi, freqs } => return Ok(Self::absorbed(name, lo, hi, freqs, op)),
        };
        let mut comps = vec![];
        for (field, c) in wanted(*fields) {
            let (first, count, at_nodes, mean) = place(field, c, lo, hi);
            // Per axis the logical positions of each sample (two where averaged: ghosts at the faces).
            let per_axis: [Vec<Vec<isize>>; 3] = std::array::from_fn(|a| {
                if mean[a] {
                    vec![vec![lo[a] as isize - 1, lo[a] as isize]]
                } else {
                    (first[a]..first[a] + count[a]).map(|i| vec![i as isize]).collect()
                }
            });
            let ntap: usize = mean.iter().map(|&m| if m { 2 } else { 1 }).product();
            let mut taps = Vec::with_capacity(count.iter().product::<usize>() * ntap);
            for pk in &per_axis[2] {
                for pj in &per_axis[1] {
                    for pi in &per_axis[0] {
                        for &k in pk {
                            for &j in pj {
                                for &i in pi {
                                    taps.push(op.at(i, j, k));
                                }
                            }
                        }
                    }
                }
            }
            let acc = vec![Complex64::new(0.0, 0.0); taps.len() / ntap * freqs.len()];
            comps.push(Comp { field, axis: c, first, count, at_nodes, ntap, taps, acc });
        }
        Ok(FieldDftMonitor { name: name.clone(), freqs: freqs.clone(), dt: op.dt, comps, loss: None })
    }

    /// An absorbed-power monitor: one component per group of lossy samples.
    fn absorbed(name: &str, lo: &[usize; 3], hi: &[usize; 3], freqs: &[f64], op: &Operator) -> FieldDftMonitor {
        let mut comps = vec![];
        let mut loss = vec![];
        for g in absorbed::groups(op, lo, hi, freqs) {
            let ns = g.taps.len();
            let acc = vec![Complex64::new(0.0, 0.0); ns * freqs.len()];
            comps.push(Comp { field: g.field, axis: g.axis, first: [0; 3], count: [ns, 1, 1], at_nodes: [false; 3], ntap: 1, taps: g.taps, acc });
            loss.push((g.class, g.weights));
        }
        FieldDftMonitor { name: name.to_string(), freqs: freqs.to_vec(), dt: op.dt, comps, loss: Some(loss) }
    }

    /// The recorded components, in the order of the output.
    pub fn comps(&self) -> &[Comp] {
        &self.comps
    }

    pub fn freqs(&self) -> &[f64] {
        &self.freqs
    }

    /// Replace component `c`'s sums (`[f][sample]`, before the factor dt) by
    /// those another engine accumulated.
    pub fn set_sums(&mut self, c: usize, re: &[f64], im: &[f64]) -> Result<(), String> {
        let comp = self.comps.get_mut(c).ok_or_else(|| format!("monitor `{}` has no component {c}", self.name))?;
        if re.len() != comp.acc.len() || im.len() != comp.acc.len() {
            return Err(format!("monitor `{}` component {c}: {} sums for {} samples x frequencies", self.name, re.len(), comp.acc.len()));
        }
        for (z, (&r, &i)) in comp.acc.iter_mut().zip(re.iter().zip(im)) {
            *z = Complex64::new(r, i);
        }
        Ok(())
    }

    /// The per-step hook: add the fields after step `n` (0-based).
    pub fn accumulate(&mut self, f: &Fields, n: usize) {
        for (fi, &freq) in self.freqs.iter().enumerate() {
            let (ph_e, ph_h) = phases(freq, self.dt, n);
            for comp in &mut self.comps {
                let (arr, ph) = match comp.field {
                    Field::E => (&f.e[comp.axis], ph_e),
                    Field::H => (&f.h[comp.axis], ph_h),
                };
                let ns = comp.taps.len() / comp.ntap;
                for (s, t) in comp.taps.chunks_exact(comp.ntap).enumerate() {
                    let x = t.iter().map(|&p| arr[p] as f64).sum::<f64>() / comp.ntap as f64;
                    comp.acc[fi * ns + s] += ph * x;
                }
            }
        }
    }

    /// The DFTs so far (an absorbed-power monitor: the power they give).
    pub fn output(&self) -> MonitorOutput {
        if let Some(loss) = &self.loss {
            let nf = self.freqs.len();
            let (mut conductor, mut dielectric, mut loads) = (vec![0.0; nf], vec![0.0; nf], vec![0.0; nf]);
            let dt2 = self.dt * self.dt;
            for (c, (class, w)) in self.comps.iter().zip(loss) {
                let sum = match class {
                    Class::Conductor => &mut conductor,
                    Class::Dielectric => &mut dielectric,
                    Class::Load => &mut loads,
                };
                for (fi, s) in sum.iter_mut().enumerate() {
                    let r = fi * c.samples()..(fi + 1) * c.samples();
                    *s += c.acc[r.clone()].iter().zip(&w[r]).map(|(x, w)| w * x.norm_sqr()).sum::<f64>() * dt2;
                }
            }
            return MonitorOutput::Absorbed { name: self.name.clone(), freqs: self.freqs.clone(), conductor, dielectric, loads };
        }
        let components = self
            .comps
            .iter()
            .map(|c| ComponentDft {
                field: c.field,
                axis: Axis::from_index(c.axis),
                first: c.first,
                count: c.count,
                at_nodes: c.at_nodes,
                values: c.acc.iter().map(|z| z * self.dt).collect(),
            })
            .collect();
        MonitorOutput::FieldDft { name: self.name.clone(), freqs: self.freqs.clone(), components }
    }
}
