//! What the fast stepper computes once per operator: per row its CPML-free
//! span (H and E side), the runs of one material along each E row, the z
//! slabs of the threads and the instruction set of the vector loops.

use super::super::cpu::{e_range, h_range, plain_span};
use super::super::operator::Operator;
use super::lanes::Level;
use super::wave::Wave;

/// Grids smaller than this are stepped on one thread (as in the reference):
/// small designs get their parallelism from running side by side.
const PAR_MIN_CELLS: usize = 100_000;

/// Grids whose fields (E and H) take more than this many bytes step by
/// wavefront blocks (they would stream from memory on every step); smaller
/// ones stay in the caches anyway.
const WAVE_MIN_BYTES: usize = 8 << 20;

/// Steps per thread in one wavefront block.
const WAVE_STEPS: usize = 4;

/// Cells `lo..hi` of a row share the coefficient-table index `m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub lo: u32,
    pub hi: u32,
    pub m: u8,
}

/// The fast stepper's tables for one operator.
#[derive(Debug, Clone)]
pub struct FastPlan {
    /// Per component, per padded row (flat index / row stride): the span
    /// `lo..hi` of the row where no derivative axis is in a CPML.
    pub h_span: [Vec<(u32, u32)>; 3],
    pub e_span: [Vec<(u32, u32)>; 3],
    /// Per E component: the material runs of every row, row r's at
    /// `runs[c][run_at[c][r]..run_at[c][r + 1]]`.
    pub runs: [Vec<Run>; 3],
    pub run_at: [Vec<u32>; 3],
    /// The z ranges of sweep planes (0..=nz) each thread takes; one for small grids.
    pub slabs: Vec<std::ops::Range<usize>>,
    pub level: Level,
    /// Blocks of steps in one pass (large grids), or one sweep per step.
    pub wave: Option<Wave>,
}

impl FastPlan {
    /// The plan of `op`, with as many slabs as rayon has threads for large grids.
    pub fn new(op: &Operator) -> FastPlan {
        let threads = if op.len >= PAR_MIN_CELLS { rayon::current_num_threads() } else { 1 };
        let wave = if op.len * 24 >= WAVE_MIN_BYTES { WAVE_STEPS } else { 0 };
        FastPlan::with(op, threads, Level::detect(), wave)
    }

    /// The plan with `threads` slabs (at most one per two planes) or
    /// wavefront groups, the vector level `level`, and `wave` steps per
    /// thread in a wavefront block (0: one sweep per step).
    pub fn with(op: &Operator, threads: usize, level: Level, wave: usize) -> FastPlan {
        let rows = op.dims[1] * op.dims[2];
        let span = |c: usize, e_side: bool| {
            let r = if e_side { e_range(op, c) } else { h_range(op, c) };
            let axes = [(c + 1) % 3, (c + 2) % 3];
            let mut v = vec![(0u32, 0u32); rows];
            for k in 0..r[2] {
                for j in 0..r[1] {
                    let (lo, hi) = plain_span(op, axes, j, k, r[0], e_side);
                    v[op.at(0, j as isize, k as isize) / op.stride[1]] = (lo as u32, hi as u32);
                }
            }
            v
        };
        let h_span = [0, 1, 2].map(|c| span(c, false));
        let e_span = [0, 1, 2].map(|c| span(c, true));
        let mut runs: [Vec<Run>; 3] = Default::default();
        let mut run_at: [Vec<u32>; 3] = Default::default();
        for c in 0..3 {
            let r = e_range(op, c);
            run_at[c].push(0);
            for row in 0..rows {
                let (j, k) = ((row % op.dims[1]) as isize - 1, (row / op.dims[1]) as isize - 1);
                if (0..r[1] as isize).contains(&j) && (0..r[2] as isize).contains(&k) {
                    let p0 = op.at(0, j, k);
                    let mats = &op.mat[c][p0..p0 + r[0]];
                    let mut lo = 0;
                    for i in 1..=r[0] {
                        if i == r[0] || mats[i] != mats[lo] {
                            runs[c].push(Run { lo: lo as u32, hi: i as u32, m: mats[lo] });
                            lo = i;
                        }
                    }
                }
                run_at[c].push(runs[c].len() as u32);
            }
        }
        let planes = op.n[2] + 1;
        let t = threads.clamp(1, (planes / 2).max(1));
        let slabs = (0..t).map(|s| s * planes / t..(s + 1) * planes / t).collect();
        let wave = (wave > 0).then(|| Wave::new(op, wave, threads));
        FastPlan { h_span, e_span, runs, run_at, slabs, level, wave }
    }

    /// The material runs of E component `c` on padded row `row`.
    #[inline(always)]
    pub fn runs_of(&self, c: usize, row: usize) -> &[Run] {
        &self.runs[c][self.run_at[c][row] as usize..self.run_at[c][row + 1] as usize]
    }
}
