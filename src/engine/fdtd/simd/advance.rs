//! `k` steps of a job as the CPU batch takes them: per step the SIMD sweep,
//! the driven port's source, the port samples and the field DFT monitors;
//! or, for large grids without DFT monitors, wavefront blocks that do the
//! same in one pass per block.

use super::super::cpu;
use super::super::fields::Fields;
use super::super::dft::FieldDftMonitor;
use super::super::operator::Operator;
use super::plan::SimdPlan;
use super::sweep::step;
use super::wave;
use crate::job::{PortTrace, Pulse};

/// Steps `n..n+k` of `f`, driving port `drive` with `pulse`, the port samples
/// appended to `traces` and the monitors `dfts` accumulated.
#[allow(clippy::too_many_arguments)]
pub fn advance(op: &Operator, plan: &SimdPlan, f: &mut Fields, drive: usize, pulse: &Pulse, n: usize, k: usize, traces: &mut [PortTrace], dfts: &mut [FieldDftMonitor]) {
    match &plan.wave {
        Some(w) if dfts.is_empty() && op.edges.is_empty() && op.surface.is_empty() && op.conformal.is_empty() => wave::run(op, plan, w, f, drive, pulse, n, k, traces),
        _ => {
            for s in n..n + k {
                step(op, plan, f);
                cpu::fdtd_inject(op, f, drive, pulse.value((s as f64 + 0.5) * op.dt));
                cpu::fdtd_conformal(op, f);
                cpu::fdtd_surface(op, f);
                cpu::fdtd_edges(op, f);
                cpu::fdtd_conformal_rec(op, f);
                cpu::fdtd_sample_ports(op, f, traces);
                cpu::fdtd_dft(f, dfts, s);
            }
        }
    }
}
