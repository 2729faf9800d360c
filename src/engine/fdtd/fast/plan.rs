//! What the fast stepper computes once per operator: the x runs of the rows
//! (where the x term is CPML-stretched), the material of each E row (one, or
//! per cell), the material table for the vector lookups, the z slabs of the
//! threads and the instruction set of the vector loops.

use super::super::cpu::{e_range, h_range};
use super::super::operator::Operator;
use super::simd::{Coefs, Level};
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

/// `e_mat` of a row whose cells have more than one material.
pub const MIXED: u16 = u16::MAX;

/// The fast stepper's tables for one operator.
#[derive(Debug, Clone)]
pub struct FastPlan {
    /// Per component with a derivative along x (1 and 2), H and E side: the
    /// row's cells cut where the x term's CPML stretching starts or stops
    /// (`lo, hi, stretched`); the same for every row. Empty for component 0.
    pub h_xruns: [Vec<(u32, u32, bool)>; 3],
    pub e_xruns: [Vec<(u32, u32, bool)>; 3],
    /// Per E component, per padded row: the material index of all its cells, or [`MIXED`].
    pub e_mat: [Vec<u16>; 3],
    /// The material table for the vector lookups.
    pub coefs: Coefs,
    /// The operator's x CPML is not a layer at each end (the reference's
    /// split of the rows would differ from the runs): step with the reference.
    pub reference: bool,
    /// Some face is PMC (the sweep mirrors its ghosts plane by plane).
    pub pmc: bool,
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
        // The x runs: cells where the x CPML stretches (b > 0) and where not.
        let mut reference = false;
        let mut xruns = |len: usize, e_side: bool| -> Vec<(u32, u32, bool)> {
            let Some(cp) = &op.pml[0] else { return vec![(0, len as u32, false)] };
            let b = if e_side { &cp.e_b } else { &cp.h_b };
            let inside = |i: usize| b[i] > 0.0;
            let mut v: Vec<(u32, u32, bool)> = vec![];
            for i in 0..len {
                match v.last_mut() {
                    Some(r) if r.2 == inside(i) => r.1 = i as u32 + 1,
                    _ => v.push((i as u32, i as u32 + 1, inside(i))),
                }
            }
            // The reference updates the cells between the layers without
            // looking at b: the runs agree with it only when no stretched
            // cell lies between two unstretched ones.
            let plain: Vec<usize> = (0..len).filter(|&i| !inside(i)).collect();
            if let (Some(&lo), Some(&hi)) = (plain.first(), plain.last()) {
                if (lo..hi).any(inside) {
                    reference = true;
                }
            }
            v
        };
        let h_xruns = [0, 1, 2].map(|c| if c == 0 { vec![] } else { xruns(h_range(op, c)[0], false) });
        let e_xruns = [0, 1, 2].map(|c| if c == 0 { vec![] } else { xruns(e_range(op, c)[0], true) });
        let e_mat = [0, 1, 2].map(|c| {
            let r = e_range(op, c);
            (0..rows)
                .map(|row| {
                    let (j, k) = ((row % op.dims[1]) as isize - 1, (row / op.dims[1]) as isize - 1);
                    if !((0..r[1] as isize).contains(&j) && (0..r[2] as isize).contains(&k)) {
                        return MIXED;
                    }
                    let p0 = op.at(0, j, k);
                    let mats = &op.mat[c][p0..p0 + r[0]];
                    if mats.iter().all(|&m| m == mats[0]) {
                        mats[0] as u16
                    } else {
                        MIXED
                    }
                })
                .collect()
        });
        let planes = op.n[2] + 1;
        let t = threads.clamp(1, (planes / 2).max(1));
        let slabs = (0..t).map(|s| s * planes / t..(s + 1) * planes / t).collect();
        let wave = (wave > 0 && !reference).then(|| Wave::new(op, wave, threads));
        let pmc = op.pmc.iter().flatten().any(|&p| p);
        FastPlan { h_xruns, e_xruns, e_mat, coefs: Coefs::new(&op.ca, &op.cb), reference, pmc, slabs, level, wave }
    }
}
