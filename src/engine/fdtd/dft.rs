//! The running-DFT field monitor of the CPU FDTD engine (a monitor
//! extension: its per-step hook runs after the sources and the ports). It
//! accumulates, in f64, `X(f) = sum x(t) exp(-j 2 pi f t) dt` of the chosen
//! components over a box or a plane of mesh nodes ([`Monitor::FieldDft`]),
//! E at `(n + 1) dt` and H at `(n + 1/2) dt` after step n. On an axis where
//! the monitor is flat, a component that Yee keeps between nodes along it is
//! the mean of its two samples either side of the plane, so E and H of a
//! Huygens surface come out on the same plane.
//!
//! There is no CUDA kernel for it yet: the CUDA backend refuses jobs with
//! monitors.

use num_complex::Complex64;

use super::cpu::Fields;
use super::operator::Operator;
use crate::job::{Axis, ComponentDft, DftFields, Field, Monitor, MonitorOutput, SimFailure};

/// One recorded component: per sample the flat indices averaged.
#[derive(Debug, Clone)]
struct Comp {
    field: Field,
    axis: usize,
    first: [usize; 3],
    count: [usize; 3],
    at_nodes: [bool; 3],
    /// Per sample, the flat indices whose mean it is (1, 2, 4 or 8 of them).
    taps: Vec<Vec<usize>>,
    /// `[f][sample]`.
    acc: Vec<Complex64>,
}

/// The state of one field DFT monitor.
#[derive(Debug, Clone)]
pub struct FieldDftMonitor {
    name: String,
    freqs: Vec<f64>,
    dt: f64,
    comps: Vec<Comp>,
}

impl FieldDftMonitor {
    /// Check `m` against the operator's mesh and lay out its samples.
    pub fn new(m: &Monitor, op: &Operator) -> Result<FieldDftMonitor, SimFailure> {
        let Monitor::FieldDft { name, lo, hi, fields, freqs } = m;
        let bad = |why: String| Err(SimFailure::Invalid(format!("field monitor `{name}`: {why}")));
        for a in 0..3 {
            if lo[a] > hi[a] || hi[a] > op.n[a] {
                return bad(format!("nodes {}..={} along {} do not lie within 0..={}", lo[a], hi[a], Axis::from_index(a).name(), op.n[a]));
            }
        }
        if freqs.is_empty() || freqs.iter().any(|f| !f.is_finite()) {
            return bad("needs at least one finite frequency".into());
        }
        let wanted: Vec<(Field, usize)> = match fields {
            DftFields::All => [Field::E, Field::H].into_iter().flat_map(|f| (0..3).map(move |c| (f, c))).collect(),
            DftFields::Tangential(n) => {
                let n = n.index();
                [Field::E, Field::H].into_iter().flat_map(|f| (0..3).filter(move |&c| c != n).map(move |c| (f, c))).collect()
            }
        };
        let mut comps = vec![];
        for (field, c) in wanted {
            // Where the component sits along each axis: E_c between nodes along c,
            // H_c between nodes across c.
            let between: [bool; 3] = std::array::from_fn(|a| (field == Field::E) == (a == c));
            let mut first = [0usize; 3];
            let mut count = [0usize; 3];
            let mut at_nodes = [true; 3];
            // Per axis the logical positions of each sample (two where averaged).
            let mut per_axis: [Vec<Vec<isize>>; 3] = [vec![], vec![], vec![]];
            for a in 0..3 {
                let flat = lo[a] == hi[a];
                if between[a] && !flat {
                    first[a] = lo[a];
                    count[a] = hi[a] - lo[a];
                    at_nodes[a] = false;
                    per_axis[a] = (lo[a]..hi[a]).map(|i| vec![i as isize]).collect();
                } else if between[a] {
                    // Flat: the mean of the cells either side of the plane (ghosts at the faces).
                    first[a] = lo[a];
                    count[a] = 1;
                    per_axis[a] = vec![vec![lo[a] as isize - 1, lo[a] as isize]];
                } else {
                    first[a] = lo[a];
                    count[a] = hi[a] - lo[a] + 1;
                    per_axis[a] = (lo[a]..=hi[a]).map(|i| vec![i as isize]).collect();
                }
            }
            let mut taps = vec![];
            for pk in &per_axis[2] {
                for pj in &per_axis[1] {
                    for pi in &per_axis[0] {
                        let mut t = vec![];
                        for &k in pk {
                            for &j in pj {
                                for &i in pi {
                                    t.push(op.at(i, j, k));
                                }
                            }
                        }
                        taps.push(t);
                    }
                }
            }
            let acc = vec![Complex64::new(0.0, 0.0); taps.len() * freqs.len()];
            comps.push(Comp { field, axis: c, first, count, at_nodes, taps, acc });
        }
        Ok(FieldDftMonitor { name: name.clone(), freqs: freqs.clone(), dt: op.dt, comps })
    }

    /// The per-step hook: add the fields after step `n` (0-based).
    pub fn accumulate(&mut self, f: &Fields, n: usize) {
        for (fi, &freq) in self.freqs.iter().enumerate() {
            let w = 2.0 * std::f64::consts::PI * freq;
            let ph_e = Complex64::from_polar(1.0, -w * (n as f64 + 1.0) * self.dt);
            let ph_h = Complex64::from_polar(1.0, -w * (n as f64 + 0.5) * self.dt);
            for comp in &mut self.comps {
                let (arr, ph) = match comp.field {
                    Field::E => (&f.e[comp.axis], ph_e),
                    Field::H => (&f.h[comp.axis], ph_h),
                };
                let ns = comp.taps.len();
                for (s, t) in comp.taps.iter().enumerate() {
                    let x = t.iter().map(|&p| arr[p] as f64).sum::<f64>() / t.len() as f64;
                    comp.acc[fi * ns + s] += ph * x;
                }
            }
        }
    }

    /// The DFTs so far.
    pub fn output(&self) -> MonitorOutput {
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
