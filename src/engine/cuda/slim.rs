//! The two-step passes (`fdtd_step2`, kernels/fdtd_slim.cuh, and
//! `fdtd_step2w`, kernels/fdtd_wide.cuh): which designs may take them, how
//! their planes are tiled and their z-chunks cut, and the tables of the first
//! step's source and port taps that the passes fold in.
//!
//! A design is slim when one block holds its whole padded xy plane
//! (`SLIM_NT` positions) and nothing needs a neighbour block or a second
//! kernel between the two steps: no PMC face, no CPML along x or y, no field
//! DFT monitor, each source position once. A wider design (or one with CPML
//! along x or y) takes the wide pass: tiles of `WIDE_TX` x `WIDE_TY`
//! positions that recompute a halo of two positions on each side, with the
//! same exclusions but the CPML.

use super::abi::{SLIM_NT, SLIM_SMEM, WIDE_SMEM, WIDE_TX, WIDE_TY};
use super::batch::Plan;
use crate::engine::fdtd::Operator;
use crate::job::SimJob;

/// Fewest padded plane positions a design needs for the pass by default
/// (CudaOptions::slim_min_plane): a block has a thread a position, and below
/// half a block the idle threads cost more than the second step saves
/// (measured on one H100: a generation of 64 2.5D iris filters, planes of
/// 30 x 3, streamed in 1.98 s of device time two steps a pass against
/// 1.52 s one step, in the same run).
pub const MIN_PLANE: usize = SLIM_NT / 2;

/// Which two-step pass a design takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// `fdtd_step2`: one block holds the whole plane.
    Slim,
    /// `fdtd_step2w`: tiles with a halo.
    Wide,
}

/// Why design `op` (job `job`) can take neither two-step pass, or which it
/// takes; `min_plane`: fewest padded xy positions (MIN_PLANE by default);
/// `wide`: whether the wide pass may be taken (CudaOptions::wide).
pub fn fits(op: &Operator, job: &SimJob, min_plane: usize, wide: bool) -> Result<Pass, String> {
    let plane = op.dims[0] * op.dims[1];
    if plane < min_plane {
        return Err(format!("padded plane of {}x{} = {plane} positions fills less of a block than pays (at least {min_plane})", op.dims[0], op.dims[1]));
    }
    if op.pmc.iter().flatten().any(|&b| b) {
        return Err("PMC face".into());
    }
    if !job.monitors.is_empty() {
        return Err("field DFT monitors".into());
    }
    if op.ca.len() > 256 {
        return Err("more than 256 coefficient entries".into());
    }
    // Each source position once (the pass adds a plane's sources in parallel).
    let mut src: Vec<(usize, usize)> = vec![];
    if let Some(Some(l)) = op.lumped.get(job.drive) {
        src.extend(l.edges.iter().map(|&p| (l.comp, p)));
    }
    if let Some(Some(w)) = op.guides.get(job.drive) {
        src.extend(w.src_idx.iter().map(|&p| (w.comp_e, p)));
    }
    src.sort_unstable();
    if src.windows(2).any(|w| w[0] == w[1]) {
        return Err("a source position repeats".into());
    }
    if is_slim(op) {
        return Ok(Pass::Slim);
    }
    if !wide {
        return Err("the wide two-step pass is off (CudaOptions::wide, bench --wide)".into());
    }
    // The wide pass: a tile must own more than its halo.
    if op.dims[0] < 8 || op.dims[1] < 8 {
        return Err(format!("padded plane of {}x{} too thin for tiles with a halo", op.dims[0], op.dims[1]));
    }
    Ok(Pass::Wide)
}

/// Tiles of the wide pass along an axis of `n` padded positions, tiles of at
/// most `t` positions with a halo of two on each inner side: (origin, width)
/// per tile. The fewest tiles, their owned parts as equal as may be.
pub fn tiles_along(n: usize, t: usize) -> Vec<(usize, usize)> {
    let mut k = 1;
    loop {
        // Owned boundaries b_0 = 0 < ... < b_k = n.
        let b: Vec<usize> = (0..=k).map(|j| (j * n + k / 2) / k).collect();
        let tiles: Vec<(usize, usize)> = (0..k)
            .map(|j| {
                let x0 = if j == 0 { 0 } else { b[j] - 2 };
                let x1 = if j + 1 == k { n } else { b[j + 1] + 2 };
                (x0, x1 - x0)
            })
            .collect();
        if tiles.iter().all(|&(_, w)| w <= t) && b.windows(2).all(|w| w[1] > w[0]) {
            return tiles;
        }
        k += 1;
    }
}

/// The tiles (x0, y0, width, height) of a wide design's plane.
pub fn wide_tiles(op: &Operator) -> Vec<[usize; 4]> {
    let tx = tiles_along(op.dims[0], WIDE_TX);
    let ty = tiles_along(op.dims[1], WIDE_TY);
    ty.iter().flat_map(|&(y0, h)| tx.iter().map(move |&(x0, w)| [x0, y0, w, h])).collect()
}

/// A wide design's z-chunks of about `len` planes (no constraint on where
/// they start: the pass only reads the read set's CPML memories).
pub fn wide_chunks(nz: usize, len: usize) -> Vec<(usize, usize)> {
    let n = nz.div_ceil(len.max(2)).max(1);
    (0..n).map(|k| (k * nz / n, (k + 1) * nz / n)).filter(|c| c.0 < c.1).collect()
}

/// Planes per chunk of the wide designs: among 12 to 24 planes, the length
/// whose blocks fill whole waves of `resident` blocks best, counting the 3
/// planes each chunk recomputes (cost = waves x (len + 3)). Short chunks:
/// on one H100 the 256^3 CPML box ran at 22.6, 20.8, 16.8 and 13.4 Gcells/s
/// with chunks of 43, 65, 129 and 258 planes against 24.1-24.3 with 12 to 22
/// (neighbour tiles then walk the same planes at once and share their halo
/// reads in L2).
pub fn choose_wide_len(ops: &[&Operator], resident: usize) -> usize {
    let nzmax = ops.iter().map(|o| o.dims[2]).max().unwrap_or(2);
    let tiles: Vec<usize> = ops.iter().map(|o| wide_tiles(o).len()).collect();
    let cost = |len: usize| {
        let blocks: usize = ops.iter().zip(&tiles).map(|(o, t)| t * wide_chunks(o.dims[2], len).len()).sum();
        let waves = blocks.div_ceil(resident.max(1));
        (waves * (len.min(nzmax) + 3), std::cmp::Reverse(len))
    };
    (12..=24).min_by_key(|&l| cost(l)).unwrap_or(16)
}

/// Per padded z plane: whether any update there has a CPML term (cpu.rs
/// stretch() with b > 0, on the E or the H side).
pub fn cpml_planes(op: &Operator) -> Vec<bool> {
    let nz = op.dims[2];
    let mut v = vec![false; nz];
    if let Some(p) = op.pml[2].as_ref() {
        // E side: node x at padded x+1 (x = 0..=n); H side: half node x (x < n) at padded x+1.
        for (x, b) in p.e_b.iter().enumerate() {
            if *b > 0.0 && x + 1 < nz {
                v[x + 1] = true;
            }
        }
        for (x, b) in p.h_b.iter().enumerate() {
            if *b > 0.0 && x + 1 < nz {
                v[x + 1] = true;
            }
        }
    }
    v
}

/// A chunk boundary b (the first plane of a chunk above another) is allowed
/// when planes b-2, b-1 and b carry no CPML term: the blocks on both sides
/// recompute them, and only one of them may update their memories.
fn allowed(cpml: &[bool], b: usize) -> bool {
    b >= 1 && b < cpml.len() && !cpml[b] && !cpml[b - 1] && (b < 2 || !cpml[b - 2])
}

/// The z-chunks of a design: about `len` planes each (at least one chunk),
/// boundaries moved to the nearest allowed plane.
pub fn chunks(op: &Operator, len: usize) -> Vec<(usize, usize)> {
    let nz = op.dims[2];
    let cpml = cpml_planes(op);
    let n = (nz / len.max(1)).max(1);
    let mut bounds = vec![0usize];
    for k in 1..n {
        let ideal = (k * nz + n / 2) / n;
        // The nearest allowed plane above the last boundary.
        let pick = (0..nz).flat_map(|d| [ideal.checked_sub(d), ideal.checked_add(d)]).flatten().find(|&b| b > *bounds.last().unwrap_or(&0) && allowed(&cpml, b));
        if let Some(b) = pick {
            if b < nz {
                bounds.push(b);
            }
        }
    }
    bounds.dedup();
    bounds.push(nz);
    bounds.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Planes per chunk: the batch's planes over the blocks resident at once
/// (one wave), at least 16 (each chunk recomputes 3 planes of level 0 and 1
/// of level 1 beyond its own).
pub fn choose_len(ops: &[&Operator], resident: usize) -> usize {
    let planes: usize = ops.iter().map(|o| o.dims[2]).sum();
    planes.div_ceil(resident.max(1)).max(16)
}

/// Dynamic shared memory of one block of the slim pass.
pub fn smem_bytes() -> u32 {
    SLIM_SMEM as u32
}

/// Dynamic shared memory of one block of the wide pass.
pub fn wide_smem_bytes() -> u32 {
    WIDE_SMEM as u32
}

/// Whether a design that fits a two-step pass takes the slim one.
pub fn is_slim(op: &Operator) -> bool {
    op.dims[0] * op.dims[1] <= SLIM_NT && op.pml[0].is_none() && op.pml[1].is_none()
}

/// The two-step passes' tables for a plan's designs (each fits one: [`fits`]).
#[derive(Debug, Clone, Default)]
pub struct SlimPlan {
    /// Per design: its chunks.
    pub chunks: Vec<Vec<(usize, usize)>>,
    /// Per design: its tiles (x0, y0, width, height) when it takes the wide pass, else none.
    pub tiles: Vec<Vec<[usize; 4]>>,
    /// Per design and axis: the padded positions where a lean block may lie
    /// (inside every update range, free of CPML on both sides; empty for slim designs).
    pub clean: Vec<[Vec<bool>; 3]>,
    /// Per design: the planes of its source and tap groups.
    pub gplanes: Vec<Vec<usize>>,
    /// Per design: source groups [begin, end), tap groups [begin, end).
    pub dgrp: Vec<i32>,
    /// Groups: (plane, first item, items).
    pub grp: Vec<i32>,
    /// Per source item: its index in the plan's source tables.
    pub src_item: Vec<i32>,
    /// Per tap item: (field 0..5, in-design index).
    pub tap: Vec<i32>,
}

impl SlimPlan {
    /// `len`, `wlen`: planes per chunk of the slim and the wide designs.
    pub fn new(plan: &Plan, ops: &[&Operator], len: usize, wlen: usize) -> SlimPlan {
        let mut sp = SlimPlan::default();
        for (d, op) in ops.iter().enumerate() {
            let s2 = op.stride[2];
            // Sources of the design by plane (their order kept within a plane).
            let mut items: Vec<(usize, i32)> = (0..plan.src_design.len()).filter(|&t| plan.src_design[t] == d as i32).map(|t| (plan.src_idx[t] as usize / s2, t as i32)).collect();
            items.sort_by_key(|&(z, _)| z);
            let g0 = sp.grp.len() / 3;
            for (z, t) in &items {
                if sp.grp.len() / 3 == g0 || sp.grp[sp.grp.len() - 3] != *z as i32 {
                    sp.grp.extend([*z as i32, sp.src_item.len() as i32, 0]);
                }
                let n = sp.grp.len();
                sp.grp[n - 1] += 1;
                sp.src_item.push(*t);
            }
            let g1 = sp.grp.len() / 3;
            // What the port monitor reads (kernels/fdtd_ports.cuh fdtd_sample_ports).
            let mut taps: Vec<(usize, i32)> = vec![];
            for port in plan.ports.iter().filter(|p| p.design == d as i32) {
                let terms = port.term_off as usize..(port.term_off + port.n_terms) as usize;
                let c = port.comp_e as usize;
                for t in terms {
                    taps.push((c, plan.t_idx0[t]));
                    if port.kind == 1 {
                        taps.push((3 + port.comp_h as usize, plan.t_idx1[t]));
                        taps.push((3 + port.comp_h as usize, plan.t_idx2[t]));
                    }
                }
                if port.kind == 0 {
                    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
                    taps.extend([(3 + b, port.mid), (3 + b, port.mid - port.s_a), (3 + a, port.mid), (3 + a, port.mid - port.s_b)]);
                }
            }
            taps.sort_by_key(|&(f, i)| (i as usize / s2, f, i));
            taps.dedup();
            let t0 = sp.grp.len() / 3;
            for (f, i) in taps {
                let z = i as usize / s2;
                if sp.grp.len() / 3 == t0 || sp.grp[sp.grp.len() - 3] != z as i32 {
                    sp.grp.extend([z as i32, (sp.tap.len() / 2) as i32, 0]);
                }
                let n = sp.grp.len();
                sp.grp[n - 1] += 1;
                sp.tap.extend([f as i32, i]);
            }
            let t1 = sp.grp.len() / 3;
            sp.dgrp.extend([g0 as i32, g1 as i32, t0 as i32, t1 as i32]);
            sp.tiles.push(if is_slim(op) { vec![] } else { wide_tiles(op) });
            sp.gplanes.push((g0..t1).map(|k| sp.grp[3 * k] as usize).collect());
            sp.clean.push(if is_slim(op) {
                Default::default()
            } else {
                let free = super::batch::cpml_free(op);
                std::array::from_fn(|a| free[a].iter().enumerate().map(|(q, &c)| c && q >= 1 && q <= op.n[a]).collect())
            });
        }
        sp.set_len(ops, len, wlen);
        sp
    }

    /// Re-cut every design's chunks to about `len` planes (slim designs) and `wlen` (wide).
    pub fn set_len(&mut self, ops: &[&Operator], len: usize, wlen: usize) {
        self.chunks = ops.iter().zip(&self.tiles).map(|(op, t)| if t.is_empty() { chunks(op, len) } else { wide_chunks(op.dims[2], wlen) }).collect();
    }

    /// The running designs' blocks: triples (design, z0, z1) of the slim
    /// pass, and sextuples (design, x0, y0, z0, z1, width | height << 16) of the wide pass.
    pub fn block_table(&self, running: &[bool]) -> (Vec<i32>, Vec<i32>) {
        let (mut t, mut w) = (vec![], vec![]);
        for (d, ch) in self.chunks.iter().enumerate() {
            if !running[d] {
                continue;
            }
            for &(z0, z1) in ch {
                if self.tiles[d].is_empty() {
                    t.extend([d as i32, z0 as i32, z1 as i32]);
                }
                for &[x0, y0, tw, th] in &self.tiles[d] {
                    let lean = self.lean_block(d, [x0, y0, tw, th], (z0, z1));
                    w.extend([d as i32, x0 as i32, y0 as i32, z0 as i32, z1 as i32, (tw | th << 16 | (lean as usize) << 30) as i32]);
                }
            }
        }
        (t, w)
    }

    /// Whether the wide pass's block (design d, tile, chunk) is lean
    /// (fdtd_wide.cuh wd_h_lean): every position of the tile on every plane
    /// the block walks (z0-2 ..= z1) clean on all three axes, and no source
    /// or tap group on those planes.
    pub fn lean_block(&self, d: usize, [x0, y0, tw, th]: [usize; 4], (z0, z1): (usize, usize)) -> bool {
        let c = &self.clean[d];
        let all = |a: usize, lo: usize, hi: usize| lo < hi && hi <= c[a].len() && c[a][lo..hi].iter().all(|&x| x);
        z0 >= 2 && all(0, x0, x0 + tw) && all(1, y0, y0 + th) && all(2, z0 - 2, z1 + 1) && !self.gplanes[d].iter().any(|&g| g + 2 >= z0 && g <= z1)
    }

    /// Whether any design takes the slim pass, the wide pass.
    pub fn passes(&self) -> (bool, bool) {
        (self.tiles.iter().any(|t| t.is_empty()), self.tiles.iter().any(|t| !t.is_empty()))
    }

    /// The longest block tables (slim, wide) any chunk length from 2 planes up may give.
    pub fn max_table_len(&self, ops: &[&Operator]) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for (o, t) in ops.iter().zip(&self.tiles) {
            let ch = o.dims[2] / 2 + 1;
            if t.is_empty() {
                a += 3 * ch;
            } else {
                b += 6 * ch * t.len();
            }
        }
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cuda::batch::Tile;

    fn ops_of(jobs: &[SimJob]) -> Vec<Operator> {
        jobs.iter().map(|j| Operator::new(j).unwrap()).collect()
    }

    #[test]
    fn guides_are_slim_and_boxes_are_not() {
        let jobs = crate::bench::population_jobs(2, 8_000, 10);
        let ops = ops_of(&jobs);
        assert_eq!(fits(&ops[0], &jobs[0], MIN_PLANE, true), Ok(Pass::Slim));
        // The 2.5D guide (30 x 3 positions) only when asked for.
        let flat = crate::dev::device_check::flat(jobs[0].clone());
        let fo = Operator::new(&flat).unwrap();
        assert!(fits(&fo, &flat, MIN_PLANE, true).unwrap_err().contains("less of a block"));
        assert_eq!(fits(&fo, &flat, 0, true), Ok(Pass::Slim));
        // CPML on every face: the wide pass.
        let b = crate::bench::box_job_pml(12, 10, 3);
        assert_eq!(fits(&Operator::new(&b).unwrap(), &b, 0, true), Ok(Pass::Wide));
        // A plane too wide for one block.
        let big = crate::bench::box_job(30, 10);
        assert_eq!(fits(&Operator::new(&big).unwrap(), &big, 0, true), Ok(Pass::Wide));
    }

    #[test]
    fn wide_tiles_cover_the_plane_with_halos_and_own_it_once() {
        for n in [8, 18, 26, 30, 32, 33, 42, 60, 61, 64, 100, 258, 1001] {
            for t in [WIDE_TX, WIDE_TY] {
                let tl = tiles_along(n, t);
                assert!(tl.iter().all(|&(_, w)| w <= t && w >= 5), "n {n} t {t}: {tl:?}");
                assert_eq!(tl[0].0, 0);
                assert_eq!(tl.last().map(|&(x, w)| x + w), Some(n));
                // Owned parts: [x0 (+2 inside), x0 + w (-2 inside)), adjacent and disjoint.
                let owned: Vec<(usize, usize)> = tl.iter().map(|&(x, w)| (if x == 0 { 0 } else { x + 2 }, if x + w == n { n } else { x + w - 2 })).collect();
                assert!(owned.windows(2).all(|p| p[0].1 == p[1].0 && p[0].0 < p[0].1), "n {n} t {t}: {owned:?}");
                // At most one tile more than the fewest that can hold the plane
                // (the owned parts are spread evenly, so the inner ones bound them).
                let cap = |k: usize| if k == 1 { t } else { 2 * (t - 2) + (k - 2) * (t - 4) };
                let k0 = (1..).find(|&k| cap(k) >= n).unwrap();
                assert!(tl.len() <= k0 + 1, "n {n} t {t}: {} tiles, {k0} would do", tl.len());
            }
        }
        // The 256^3 box: 10 x 22 tiles.
        let b = crate::bench::box_job_pml(256, 10, 10);
        let bo = Operator::new(&b).unwrap();
        assert_eq!(wide_tiles(&bo).len(), 220);
        // Its chunks on an H100 (264 blocks resident): 22 planes, 12 chunks, 10 whole waves
        // (the best of the lengths measured, docs/BENCHMARKS.md); always within 12..=24.
        assert_eq!(choose_wide_len(&[&bo], 264), 22);
        assert_eq!(wide_chunks(258, 22).len(), 12);
        for r in [1, 16, 100, 264, 1000] {
            assert!((12..=24).contains(&choose_wide_len(&[&bo], r)));
        }
    }

    #[test]
    fn wide_chunks_partition_z_and_lean_blocks_avoid_cpml_ports_and_edges() {
        for (nz, len) in [(258, 22), (10, 4), (7, 100), (100, 2)] {
            let ch = wide_chunks(nz, len);
            assert_eq!(ch[0].0, 0);
            assert_eq!(ch.last().unwrap().1, nz);
            assert!(ch.windows(2).all(|w| w[0].1 == w[1].0));
            assert!(ch.iter().all(|c| c.1 > c.0 && c.1 - c.0 <= len.max(2)));
        }
        // A CPML box with a lumped port: lean blocks only where tile and planes
        // are clean, never on the port's planes.
        let job = crate::dev::device_check::random_jobs(true, 10).into_iter().find(|j| j.label.starts_with("wide: cpml all faces")).unwrap();
        let op = Operator::new(&job).unwrap();
        assert_eq!(fits(&op, &job, MIN_PLANE, true), Ok(Pass::Wide));
        let refs = [&op];
        let plan = Plan::new(&refs, &[job.drive], Tile::DEFAULT, 4).unwrap();
        let sp = SlimPlan::new(&plan, &refs, 8, 4);
        let (t, w) = sp.block_table(&[true]);
        assert!(t.is_empty());
        assert_eq!(w.len(), 6 * sp.tiles[0].len() * sp.chunks[0].len());
        assert!(w.chunks(6).all(|b| (b[5] >> 30) & 1 == 0), "a 4-cell CPML on a 42 x 26 plane leaves no clean tile");
        let pec = crate::dev::device_check::random_jobs(true, 10).into_iter().find(|j| j.label.starts_with("wide: pec")).unwrap();
        let op = Operator::new(&pec).unwrap();
        let refs = [&op];
        let plan = Plan::new(&refs, &[pec.drive], Tile::DEFAULT, 4).unwrap();
        let sp = SlimPlan::new(&plan, &refs, 8, 4);
        let (_, w) = sp.block_table(&[true]);
        let lean: Vec<&[i32]> = w.chunks(6).filter(|b| (b[5] >> 30) & 1 == 1).collect();
        assert!(!lean.is_empty(), "the middle tile away from the port is lean");
        for b in lean {
            let (x0, y0, z0, z1, tw, th) = (b[1] as usize, b[2] as usize, b[3] as usize, b[4] as usize, (b[5] & 0xffff) as usize, ((b[5] >> 16) & 0x3fff) as usize);
            assert!(x0 >= 1 && x0 + tw <= op.n[0] + 1 && y0 >= 1 && y0 + th <= op.n[1] + 1, "inside the update ranges");
            assert!(z0 >= 3 && z1 <= op.n[2], "planes z0-2 ..= z1 inside the ranges");
            assert!(sp.gplanes[0].iter().all(|&g| g + 2 < z0 || g > z1), "no source or tap plane");
        }
    }

    #[test]
    fn chunk_boundaries_keep_off_the_cpml_and_partition_z() {
        let jobs = crate::bench::population_jobs(1, 8_000, 10);
        let op = Operator::new(&jobs[0]).unwrap();
        let cpml = cpml_planes(&op);
        assert!(cpml.iter().any(|&c| c), "the guide has CPML along z");
        for len in [2, 3, 4, 7, 16, 40, 1000] {
            let ch = chunks(&op, len);
            assert_eq!(ch[0].0, 0);
            assert_eq!(ch.last().unwrap().1, op.dims[2]);
            for w in ch.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                let b = w[1].0;
                assert!(!cpml[b] && !cpml[b - 1] && !cpml[b - 2], "len {len}: boundary {b} next to the CPML");
            }
            assert!(ch.iter().all(|c| c.0 < c.1));
            if len <= 16 {
                assert!(ch.len() > 2, "len {len}: the interior is cut");
            }
        }
    }

    #[test]
    fn source_and_tap_groups_follow_the_planes() {
        let jobs = crate::bench::population_jobs(2, 8_000, 10);
        let ops = ops_of(&jobs);
        let refs: Vec<&Operator> = ops.iter().collect();
        let plan = Plan::new(&refs, &[0, 0], Tile::DEFAULT, 4).unwrap();
        let sp = SlimPlan::new(&plan, &refs, 8, 8);
        for d in 0..2 {
            let s2 = ops[d].stride[2] as i32;
            let g = &sp.dgrp[4 * d..4 * d + 4];
            assert!(g[1] > g[0], "design {d} has sources");
            assert!(g[3] > g[2], "design {d} has taps");
            let mut n_src = 0;
            for k in g[0]..g[1] {
                let (z, f, c) = (sp.grp[3 * k as usize], sp.grp[3 * k as usize + 1], sp.grp[3 * k as usize + 2]);
                for u in f..f + c {
                    let it = sp.src_item[u as usize] as usize;
                    assert_eq!(plan.src_design[it], d as i32);
                    assert_eq!(plan.src_idx[it] / s2, z);
                    n_src += 1;
                }
            }
            assert_eq!(n_src, plan.src_design.iter().filter(|&&x| x == d as i32).count());
            let planes: Vec<i32> = (g[2]..g[3]).map(|k| sp.grp[3 * k as usize]).collect();
            assert!(planes.windows(2).all(|w| w[0] < w[1]), "tap groups sorted by plane");
            for k in g[2]..g[3] {
                let (z, f, c) = (sp.grp[3 * k as usize], sp.grp[3 * k as usize + 1], sp.grp[3 * k as usize + 2]);
                for u in f..f + c {
                    assert_eq!(sp.tap[2 * u as usize + 1] / s2, z);
                }
            }
        }
        // Every port term's E and H positions are tapped.
        let taps: std::collections::HashSet<(i32, i32)> = sp.tap.chunks(2).map(|t| (t[0], t[1])).collect();
        for p in &plan.ports {
            for t in p.term_off..p.term_off + p.n_terms {
                assert!(taps.contains(&(p.comp_e, plan.t_idx0[t as usize])));
                assert!(taps.contains(&(3 + p.comp_h, plan.t_idx1[t as usize])));
            }
        }
        let (t, w) = sp.block_table(&[true, false]);
        assert_eq!(t.len(), 3 * sp.chunks[0].len());
        assert!(w.is_empty());
        assert!(t.len() <= sp.max_table_len(&refs).0);
    }
}
