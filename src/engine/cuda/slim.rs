//! The two-step pass (`fdtd_step2`, kernels/fdtd_slim.cuh): which designs
//! may take it, how their z-chunks are cut, and the tables of the first
//! step's source and port taps that the pass folds in.
//!
//! A design is slim when one block holds its whole padded xy plane
//! (`SLIM_NT` positions) and nothing needs a neighbour block or a second
//! kernel between the two steps: no PMC face, no CPML along x or y, no field
//! DFT monitor, each source position once. Other designs take one step a
//! pass (a tiled two-step pass with a halo was measured slower on every wide
//! workload and removed; docs/BENCHMARKS.md).

use super::abi::{SLIM_NT, SLIM_SMEM};
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

/// Why design `op` (job `job`) cannot take the two-step pass, if it cannot;
/// `min_plane`: fewest padded xy positions (MIN_PLANE by default).
pub fn fits(op: &Operator, job: &SimJob, min_plane: usize) -> Result<(), String> {
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
    if op.pml[0].is_some() || op.pml[1].is_some() {
        return Err("CPML along x or y".into());
    }
    if plane > SLIM_NT {
        return Err(format!("padded plane of {}x{} = {plane} positions wider than one block ({SLIM_NT})", op.dims[0], op.dims[1]));
    }
    Ok(())
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

/// The two-step pass's tables for a plan's designs (each fits it: [`fits`]).
#[derive(Debug, Clone, Default)]
pub struct SlimPlan {
    /// Per design: its chunks.
    pub chunks: Vec<Vec<(usize, usize)>>,
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
    /// `len`: planes per chunk.
    pub fn new(plan: &Plan, ops: &[&Operator], len: usize) -> SlimPlan {
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
            sp.gplanes.push((g0..t1).map(|k| sp.grp[3 * k] as usize).collect());
        }
        sp.set_len(ops, len);
        sp
    }

    /// Re-cut every design's chunks to about `len` planes.
    pub fn set_len(&mut self, ops: &[&Operator], len: usize) {
        self.chunks = ops.iter().map(|op| chunks(op, len)).collect();
    }

    /// The running designs' blocks: triples (design, z0, z1).
    pub fn block_table(&self, running: &[bool]) -> Vec<i32> {
        let mut t = vec![];
        for (d, ch) in self.chunks.iter().enumerate().filter(|(d, _)| running[*d]) {
            for &(z0, z1) in ch {
                t.extend([d as i32, z0 as i32, z1 as i32]);
            }
        }
        t
    }

    /// The longest block table any chunk length from 2 planes up may give.
    pub fn max_table_len(&self, ops: &[&Operator]) -> usize {
        ops.iter().map(|o| 3 * (o.dims[2] / 2 + 1)).sum()
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
        assert_eq!(fits(&ops[0], &jobs[0], MIN_PLANE), Ok(()));
        // The 2.5D guide (30 x 3 positions) only when asked for.
        let flat = crate::dev::device_check::flat(jobs[0].clone());
        let fo = Operator::new(&flat).unwrap();
        assert!(fits(&fo, &flat, MIN_PLANE).unwrap_err().contains("less of a block"));
        assert_eq!(fits(&fo, &flat, 0), Ok(()));
        // CPML on every face: one step a pass.
        let b = crate::bench::box_job_pml(12, 10, 3);
        assert_eq!(fits(&Operator::new(&b).unwrap(), &b, 0), Err("CPML along x or y".into()));
        // A plane too wide for one block (PEC walls: no CPML to refuse first).
        let big = crate::bench::box_job_pml(30, 10, 0);
        assert!(fits(&Operator::new(&big).unwrap(), &big, 0).unwrap_err().contains("wider than one block"));
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
        let sp = SlimPlan::new(&plan, &refs, 8);
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
        let t = sp.block_table(&[true, false]);
        assert_eq!(t.len(), 3 * sp.chunks[0].len());
        assert!(t.len() <= sp.max_table_len(&refs));
    }
}
