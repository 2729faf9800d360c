//! What the SIMD stepper computes once per operator: the x runs of the rows
//! (where the x term is CPML-stretched), the material of each E row (one, or
//! per cell), the material table for the vector lookups, the z slabs of the
//! threads, the instruction set of the vector loops and, for grids larger
//! than the caches, the wavefront's shape ([`Wave`]; `wave.rs` runs it).

use super::super::cpu::{e_range, h_range};
use super::super::operator::Operator;
use super::ports;
use super::lanes::{Coefs, Level};

/// Grids smaller than this are stepped on one thread (as in the reference):
/// small designs get their parallelism from running side by side.
const PAR_MIN_CELLS: usize = 100_000;

/// Grids whose fields (E, H and the CPML memories) take more than this many
/// bytes step by wavefront blocks: beyond a core's L2 cache they would come
/// from L3 or memory on every step. Smaller ones stay in L2 anyway. (At 8 MiB
/// of E and H alone, the 3D designs of 0.1-0.3 M cells, 72 B a cell with their
/// CPML memories, stepped at 55-65 % of their wavefront rate.)
const WAVE_MIN_BYTES: usize = 2 << 20;

/// Steps per thread in one wavefront block.
const WAVE_STEPS: usize = 4;

/// Fewer row sets (rows with any component) per plane than this: step
/// component by component.
const BY_COMPONENT_ROWS: usize = 4;

/// `e_mat` of a row whose cells have more than one material.
pub const MIXED: u16 = u16::MAX;

/// `e_mat` flag of a row whose cells but the first and the last have one
/// material (the low byte): the ends are looked up one by one.
pub const WALLS: u16 = 0x100;

/// Rows shorter than this look every cell's material up instead (their
/// vectors nearly all hold an end cell).
const ENDS_MIN_CELLS: usize = 48;

/// A derivative term along y or z at one position: the inverse spacing and
/// the CPML coefficients there (`st`: inside the layer, b > 0).
#[derive(Debug, Clone, Copy, Default)]
pub struct Q {
    pub inv: f32,
    pub b: f32,
    pub c: f32,
    pub k: f32,
    pub st: bool,
}

/// The rows (j) of each plane the sweep visits, with the components it
/// updates there: bits 0-2 H_x..H_z, bits 3-5 E_x..E_z (`op.h_rows` /
/// `e_rows` within each component's range).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    jm: Vec<(u16, u8)>,
    /// Plane k's rows are `jm[at[k]..at[k + 1]]`.
    at: Vec<u32>,
}

impl Rows {
    fn new(op: &Operator) -> Rows {
        let (hr, er) = ([0, 1, 2].map(|c| h_range(op, c)), [0, 1, 2].map(|c| e_range(op, c)));
        let mut rows = Rows { jm: vec![], at: vec![0] };
        for k in 0..op.dims[2] {
            for j in 0..op.dims[1] {
                let row = (j + 1) + (k + 1) * op.dims[1];
                let mut m = 0u8;
                for c in 0..3 {
                    if j < hr[c][1] && k < hr[c][2] && op.h_rows[c][row] {
                        m |= 1 << c;
                    }
                    if j < er[c][1] && k < er[c][2] && op.e_rows[c][row] {
                        m |= 8 << c;
                    }
                }
                if m != 0 {
                    rows.jm.push((j as u16, m));
                }
            }
            rows.at.push(rows.jm.len() as u32);
        }
        rows
    }

    /// The rows on plane k (none beyond the grid).
    #[inline(always)]
    pub fn plane(&self, k: usize) -> &[(u16, u8)] {
        let last = self.at.len() - 1;
        let (a, b) = (self.at[k.min(last)], self.at[(k + 1).min(last)]);
        &self.jm[a as usize..b as usize]
    }
}

/// The rows (j, k) of one component, in plane order (for the passes that
/// update one component at a time).
#[derive(Debug, Clone, Default)]
pub struct CompRows {
    jk: Vec<(u16, u16)>,
    /// Plane k's rows are `jk[at[k]..at[k + 1]]`.
    at: Vec<u32>,
}

impl CompRows {
    /// Component `bit`'s rows in `rows`.
    fn new(rows: &Rows, bit: u8) -> CompRows {
        let mut c = CompRows { jk: vec![], at: vec![0] };
        for k in 0..rows.at.len() - 1 {
            c.jk.extend(rows.plane(k).iter().filter(|r| r.1 & bit != 0).map(|r| (r.0, k as u16)));
            c.at.push(c.jk.len() as u32);
        }
        c
    }

    /// The rows on planes k0..k1.
    #[inline(always)]
    pub fn planes(&self, k0: usize, k1: usize) -> &[(u16, u16)] {
        let last = self.at.len() - 1;
        &self.jk[self.at[k0.min(last)] as usize..self.at[k1.min(last)] as usize]
    }
}

/// The SIMD stepper's tables for one operator.
#[derive(Debug, Clone)]
pub struct SimdPlan {
    /// Per component with a derivative along x (1 and 2), H and E side: the
    /// row's cells cut where the x term's CPML stretching starts or stops
    /// (`lo, hi, stretched`); the same for every row. Empty for component 0.
    pub h_xruns: [Vec<(u32, u32, bool)>; 3],
    pub e_xruns: [Vec<(u32, u32, bool)>; 3],
    /// The rows to update, plane by plane.
    pub rows: Rows,
    /// Per axis (y and z; x empty), per logical position: the H-side and
    /// E-side derivative term there.
    pub q_h: [Vec<Q>; 3],
    pub q_e: [Vec<Q>; 3],
    /// Per E component, per padded row: the material index (with [`WALLS`]:
    /// of all but the end cells) of all its cells, or [`MIXED`].
    pub e_mat: [Vec<u16>; 3],
    /// The material table for the vector lookups.
    pub coefs: Coefs,
    /// The operator's x CPML is not a layer at each end (the reference's
    /// split of the rows would differ from the runs): step with the reference.
    pub reference: bool,
    /// Some face is PMC (the sweep mirrors its ghosts row by row).
    pub pmc: bool,
    /// Few rows per plane (quasi-2D designs): a pass updates each component
    /// over all its planes in turn instead of row by row (see `sweep.rs`),
    /// from these lists (H_x..H_z, E_x..E_z).
    pub by_component: bool,
    pub comp_rows: [CompRows; 6],
    /// The z ranges of sweep planes (0..=nz) each thread takes; one for small grids.
    pub slabs: Vec<std::ops::Range<usize>>,
    pub level: Level,
    /// Blocks of steps in one pass (large grids), or one sweep per step.
    pub wave: Option<Wave>,
}

impl SimdPlan {
    /// The plan of `op`, with as many slabs as rayon has threads for large grids.
    pub fn new(op: &Operator) -> SimdPlan {
        let threads = if op.len >= PAR_MIN_CELLS { rayon::current_num_threads() } else { 1 };
        let wave = if field_bytes(op) >= WAVE_MIN_BYTES { WAVE_STEPS } else { 0 };
        SimdPlan::with(op, threads, Level::detect(), wave)
    }

    /// The plan with `threads` slabs (at most one per two planes) or
    /// wavefront groups, the vector level `level`, and `wave` steps per
    /// thread in a wavefront block (0: one sweep per step).
    pub fn with(op: &Operator, threads: usize, level: Level, wave: usize) -> SimdPlan {
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
                    let n = mats.len();
                    if mats.iter().all(|&m| m == mats[0]) {
                        mats[0] as u16
                    } else if n >= ENDS_MIN_CELLS && mats[1..n - 1].iter().all(|&m| m == mats[1]) {
                        // The cells on the x faces (PEC walls) differ from the interior.
                        WALLS | mats[1] as u16
                    } else {
                        MIXED
                    }
                })
                .collect()
        });
        let rows_list = Rows::new(op);
        let by_component = rows_list.jm.len() < BY_COMPONENT_ROWS * op.dims[2];
        let comp_rows = std::array::from_fn(|c| CompRows::new(&rows_list, 1 << c));
        let q = |ax: usize, e_side: bool| -> Vec<Q> {
            if ax == 0 {
                return vec![];
            }
            let inv = if e_side { &op.inv_e[ax] } else { &op.inv_h[ax] };
            (0..=op.n[ax])
                .map(|pos| {
                    let mut q = Q { inv: inv[pos + 1], ..Q::default() };
                    if let Some(cp) = &op.pml[ax] {
                        let (b, c, k) = if e_side { (&cp.e_b, &cp.e_c, &cp.e_kinv) } else { (&cp.h_b, &cp.h_c, &cp.h_kinv) };
                        if pos < b.len() {
                            (q.b, q.c, q.k) = (b[pos], c[pos], k[pos]);
                            q.st = q.b > 0.0;
                        }
                    }
                    q
                })
                .collect()
        };
        let q_h = [0, 1, 2].map(|ax| q(ax, false));
        let q_e = [0, 1, 2].map(|ax| q(ax, true));
        let planes = op.n[2] + 1;
        let t = threads.clamp(1, (planes / 2).max(1));
        let slabs = (0..t).map(|s| s * planes / t..(s + 1) * planes / t).collect();
        let wave = (wave > 0 && !reference).then(|| Wave::new(op, wave, threads));
        let pmc = op.pmc.iter().flatten().any(|&p| p);
        SimdPlan { h_xruns, e_xruns, rows: rows_list, q_h, q_e, e_mat, coefs: Coefs::new(&op.ca, &op.cb), reference, pmc, by_component, comp_rows, slabs, level, wave }
    }
}

/// Bytes of one job's E, H and CPML memory arrays (as `Fields::new` allocates them).
fn field_bytes(op: &Operator) -> usize {
    let psi = (0..3).map(|c| (0..3).filter(|&a| a != c && op.pml[a].is_some()).count()).sum::<usize>();
    op.len * 4 * (6 + 2 * psi)
}

/// The wavefront's shape for one operator.
#[derive(Debug, Clone)]
pub struct Wave {
    /// Steps per pass over the planes, all threads together (`threads`
    /// blocks of `steps / threads`).
    pub steps: usize,
    pub threads: usize,
    /// Ports whose planes overlap, together: (lowest, highest plane, ports).
    /// A group's source and samples run together, in the reference's order.
    pub ports: Vec<(usize, usize, Vec<usize>)>,
}

impl Wave {
    pub fn new(op: &Operator, steps_per_thread: usize, threads: usize) -> Wave {
        let planes = op.n[2] + 1;
        let mut each: Vec<(usize, usize, usize)> = (0..op.lumped.len()).map(|i| {
            let (lo, hi) = ports::window(op, i, planes);
            (lo, hi, i)
        }).collect();
        each.sort();
        let mut ports: Vec<(usize, usize, Vec<usize>)> = vec![];
        for (lo, hi, i) in each {
            match ports.last_mut() {
                Some(g) if lo <= g.1 => {
                    g.1 = g.1.max(hi);
                    g.2.push(i);
                }
                _ => ports.push((lo, hi, vec![i])),
            }
        }
        for g in &mut ports {
            g.2.sort();
        }
        let threads = threads.max(1);
        Wave { steps: steps_per_thread.max(1) * threads, threads, ports }
    }
}
