//! How a device result is held against the CPU reference, for every harness:
//! relative differences of port traces, S-parameters and fields ([`Diff`]),
//! and the CPU references themselves (FDTD with its final fields, TLM).
//! The FDTD and TLM checks differ only in their [`Rules`].

use num_complex::Complex64;
use rayon::prelude::*;

use crate::analysis::SParams;
use crate::engine::fdtd::cpu as fcpu;
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::Operator;
use crate::job::{EndReason, SimFailure, SimJob, SimOutput};

/// Relative differences of one job.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    /// max |E_dev - E_cpu| / max |E_cpu| (same for H); None when fields were not compared.
    pub e: Option<f64>,
    pub h: Option<f64>,
    /// ||V_dev - V_cpu|| / ||V_cpu|| over all ports (same for I).
    pub v: f64,
    pub i: f64,
    /// max |S_dev - S_cpu| / max |S_cpu| (None without ports).
    pub s: Option<f64>,
    /// Field DFT monitors: the worst of max |X_dev - X_cpu| / max |X_cpu| per
    /// monitor (None without monitors).
    pub m: Option<f64>,
    /// Steps, end reason or failure differ: a description.
    pub mismatch: Option<String>,
}

impl Diff {
    pub fn worst(&self) -> f64 {
        [self.e, self.h, Some(self.v), Some(self.i), self.s, self.m].into_iter().flatten().fold(0.0, f64::max)
    }

    /// Within `tol` and nothing mismatched.
    pub fn ok(&self, tol: f64) -> bool {
        self.worst() <= tol && self.mismatch.is_none()
    }
}

/// When two failures are the same verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameFailure {
    /// Equal failures (kind, step and location).
    Exact,
    /// A non-finite field at the same step, wherever it was first seen: the
    /// CPU FDTD skips rows that are PEC throughout, so NaN (0 * NaN) never
    /// reaches them there, while the GPU writes them.
    Step,
}

/// What an engine's device run must match of the CPU's besides the numbers.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Largest difference of the end reason's decay (dB, relative to 1 + |dB|):
    /// the energy is an f64 sum taken in another order on the device.
    pub end_tol: f64,
    pub failure: SameFailure,
}

/// FDTD: the device's energy sum differs in the last digits only.
pub const FDTD_RULES: Rules = Rules { end_tol: 1e-9, failure: SameFailure::Step };
/// TLM: the energy is summed from f32 link voltages in another order.
pub const TLM_RULES: Rules = Rules { end_tol: 1e-6, failure: SameFailure::Exact };

/// Same end reason, the decay within `tol`.
fn same_end(a: &EndReason, b: &EndReason, tol: f64) -> bool {
    match (a, b) {
        (EndReason::EnergyDecay { db: x }, EndReason::EnergyDecay { db: y }) | (EndReason::MaxSteps { db: x }, EndReason::MaxSteps { db: y }) => {
            (x - y).abs() <= tol * (1.0 + x.abs())
        }
        _ => false,
    }
}

/// "decay -40.0 dB" or "max steps".
pub fn end_name(e: &EndReason) -> String {
    match e {
        EndReason::EnergyDecay { db } => format!("decay {db:.1} dB"),
        EndReason::MaxSteps { .. } => "max steps".into(),
    }
}

/// (max |a - b|, max |b|) over two f32 arrays; a NaN difference is infinite.
pub fn abs_max(a: &[f32], b: &[f32]) -> (f64, f64) {
    let mut d = 0.0f64;
    let mut m = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (*x as f64, *y as f64);
        d = d.max(if x.is_nan() || y.is_nan() { f64::INFINITY } else { (x - y).abs() });
        m = m.max(y.abs());
    }
    (d, m)
}

/// Relative L2 difference of `a` from the reference `b` (infinite on length mismatch or NaN).
pub fn rel_l2(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let (mut d, mut n) = (0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        d += (x - y) * (x - y);
        n += y * y;
    }
    if d.is_nan() {
        return f64::INFINITY;
    }
    if n > 0.0 {
        (d / n).sqrt()
    } else {
        d.sqrt()
    }
}

/// max |S_dev - S_ref| / max |S_ref| over every S_ij present in both and every
/// frequency (a NaN difference is infinite; the absolute difference where the reference is all zero).
pub fn sparams_rel_diff(reference: &SParams, dev: &SParams) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (rc, rg) in reference.s.iter().zip(&dev.s) {
        for (a, b) in rc.iter().zip(rg) {
            if let (Some(a), Some(b)) = (a, b) {
                for (x, y) in a.iter().zip(b) {
                    let dd: Complex64 = x - y;
                    d = d.max(if dd.norm().is_nan() { f64::INFINITY } else { dd.norm() });
                    m = m.max(x.norm());
                }
            }
        }
    }
    if m > 0.0 {
        d / m
    } else {
        d
    }
}

/// [`sparams_rel_diff`] of one job's run on the CPU and on the device.
pub fn s_rel_diff(job: &SimJob, cpu: &SimOutput, dev: &SimOutput) -> f64 {
    sparams_rel_diff(&SParams::from_runs(&[job], &[cpu]), &SParams::from_runs(&[job], &[dev]))
}

/// Compare a device result with the CPU result of the same job (traces, S-parameters, how it ended).
pub fn diff(job: &SimJob, cpu: Result<&SimOutput, &SimFailure>, dev: Result<&SimOutput, &SimFailure>, rules: Rules) -> Diff {
    let mut out = Diff::default();
    let (c, g) = match (cpu, dev) {
        (Ok(c), Ok(g)) => (c, g),
        (Err(a), Err(b)) => {
            let same = match (rules.failure, a, b) {
                (SameFailure::Step, SimFailure::NonFinite { step: x, .. }, SimFailure::NonFinite { step: y, .. }) => x == y,
                _ => a == b,
            };
            if !same {
                out.mismatch = Some(format!("cpu: {a}; device: {b}"));
            }
            return out;
        }
        (a, b) => {
            out.mismatch = Some(format!("cpu: {:?}; device: {:?}", a.map(|o| o.steps), b.map(|o| o.steps)));
            return out;
        }
    };
    if c.steps != g.steps
        || !same_end(&c.ended, &g.ended, rules.end_tol)
        || c.dt != g.dt
        || c.traces.len() != g.traces.len()
        || c.v_offset != g.v_offset
        || c.cells != g.cells
    {
        out.mismatch = Some(format!("cpu {} steps {:?}; device {} steps {:?}", c.steps, c.ended, g.steps, g.ended));
    }
    let flat = |o: &SimOutput, v: bool| -> Vec<f64> { o.traces.iter().flat_map(|t| if v { t.v.iter() } else { t.i.iter() }.copied()).collect() };
    out.v = rel_l2(&flat(g, true), &flat(c, true));
    out.i = rel_l2(&flat(g, false), &flat(c, false));
    if !job.ports.is_empty() && out.mismatch.is_none() {
        out.s = Some(s_rel_diff(job, c, g));
    }
    if !job.monitors.is_empty() {
        out.m = Some(super::monitor_check::diff(&c.monitors, &g.monitors));
    }
    out
}

/// max |F_dev - F_cpu| / max |F_cpu| for E and for H over every field position.
pub fn fields_diff(cpu: &Fields, dev: &Fields) -> (f64, f64) {
    let (mut de, mut me, mut dh, mut mh) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for k in 0..3 {
        let (d, m) = abs_max(&dev.e[k], &cpu.e[k]);
        de = de.max(d);
        me = me.max(m);
        let (d, m) = abs_max(&dev.h[k], &cpu.h[k]);
        dh = dh.max(d);
        mh = mh.max(m);
    }
    (if me > 0.0 { de / me } else { de }, if mh > 0.0 { dh / mh } else { dh })
}

/// A CPU FDTD result with its final fields (None where the operator could not be built).
pub type FdtdReference = (Result<SimOutput, SimFailure>, Option<Fields>);

/// The CPU FDTD engine on every job (from `init` when given), with the final fields.
pub fn fdtd_reference(jobs: &[SimJob], init: Option<&[Fields]>) -> Vec<FdtdReference> {
    jobs.iter()
        .enumerate()
        .map(|(k, j)| match Operator::new(j) {
            Err(e) => (Err(e), None),
            Ok(op) => {
                let mut f = Fields::new(&op);
                if let Some(i) = init {
                    f.e = i[k].e.clone();
                    f.h = i[k].h.clone();
                }
                let r = fcpu::run_from(j, &op, &mut f);
                (r, Some(f))
            }
        })
        .collect()
}

/// The CPU TLM engines on every job (jobs in parallel; each engine is parallel too).
pub fn tlm_reference(jobs: &[SimJob]) -> Vec<Result<SimOutput, SimFailure>> {
    jobs.par_iter().map(crate::engine::tlm::run_cpu).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::PortTrace;

    fn output(v: &[f64], steps: usize, ended: EndReason) -> SimOutput {
        SimOutput {
            dt: 1e-12,
            steps,
            v_offset: 1.0,
            i_offset: 0.5,
            traces: vec![PortTrace { v: v.to_vec(), i: v.iter().map(|x| x / 50.0).collect() }],
            monitors: vec![],
            ended,
            cells: 10,
        }
    }

    #[test]
    fn norms_are_relative_and_nan_is_infinite() {
        assert_eq!(rel_l2(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert!((rel_l2(&[3.0, 4.0], &[0.0, 5.0]) - (9.0f64 + 1.0).sqrt() / 5.0).abs() < 1e-15);
        assert_eq!(rel_l2(&[1.0], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_l2(&[f64::NAN], &[1.0]), f64::INFINITY);
        assert_eq!(abs_max(&[1.0, 5.0], &[2.0, -4.0]), (9.0, 4.0));
        assert_eq!(abs_max(&[f32::NAN], &[0.0]).0, f64::INFINITY);
    }

    #[test]
    fn rules_decide_end_reasons_and_failures() {
        let job = crate::bench::box_job(4, 3);
        let a = output(&[1.0, 2.0, 3.0], 3, EndReason::EnergyDecay { db: -40.0 });
        let mut b = a.clone();
        b.ended = EndReason::EnergyDecay { db: -40.0 * (1.0 + 1e-7) };
        // Within TLM's end tolerance, outside FDTD's.
        assert!(diff(&job, Ok(&a), Ok(&b), TLM_RULES).mismatch.is_none());
        assert!(diff(&job, Ok(&a), Ok(&b), FDTD_RULES).mismatch.is_some());
        b.ended = EndReason::MaxSteps { db: -40.0 };
        assert!(diff(&job, Ok(&a), Ok(&b), TLM_RULES).mismatch.is_some());
        // The same trace and S-parameters: zero differences.
        let d = diff(&job, Ok(&a), Ok(&a), FDTD_RULES);
        assert!(d.ok(0.0) && d.s == Some(0.0), "{d:?}");
        let mut c = a.clone();
        c.traces[0].v[1] = 2.5;
        let d = diff(&job, Ok(&a), Ok(&c), FDTD_RULES);
        assert!(d.v > 0.1 && d.v < 0.2 && !d.ok(1e-3), "{d:?}");
        // Failures: the FDTD rule accepts another location at the same step, TLM's does not.
        let f1 = SimFailure::NonFinite { step: 7, location: "Ex (1,2,3)".into() };
        let f2 = SimFailure::NonFinite { step: 7, location: "Ey (0,0,0)".into() };
        assert!(diff(&job, Err(&f1), Err(&f2), FDTD_RULES).mismatch.is_none());
        assert!(diff(&job, Err(&f1), Err(&f2), TLM_RULES).mismatch.is_some());
        let f3 = SimFailure::NonFinite { step: 8, location: "Ex (1,2,3)".into() };
        assert!(diff(&job, Err(&f1), Err(&f3), FDTD_RULES).mismatch.is_some());
        assert!(diff(&job, Ok(&a), Err(&f1), FDTD_RULES).mismatch.is_some());
    }
}
