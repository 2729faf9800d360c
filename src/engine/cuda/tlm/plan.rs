//! Packing a batch of TLM jobs (one engine kind) into the flat pools and
//! tables of `kernels/tlm.cuh`: node pools with 128-aligned design offsets,
//! per-32-node "plain" flags, one coefficient table, guide ends with their
//! special nodes grouped behind them, lumped ports, guide-port sampling terms
//! and trace slots. Pure host code (tested without a GPU).

use std::collections::HashMap;

use rayon::prelude::*;

use super::abi::{TlmDesign, TlmEnd, TlmLumped, TlmSpecial, TlmWg};
use crate::engine::tlm::pack::{TlmPack, COEF2, COEF3};

/// Node offsets of designs are multiples of this.
pub const ALIGN: usize = 128;

pub struct Plan {
    pub dim3: bool,
    pub links: usize,
    pub stubs: usize,
    /// Link pool stride (nodes) and stub pool stride.
    pub l: usize,
    pub ls: usize,
    pub designs: Vec<TlmDesign>,
    pub meta: Vec<u32>,
    pub plain: Vec<u8>,
    pub coef: Vec<f32>,
    /// Node-kernel blocks per design (`nodes_per_block` nodes each).
    pub nblocks: Vec<usize>,
    pub ends: Vec<TlmEnd>,
    pub end_node: Vec<i32>,
    pub end_phi: Vec<f64>,
    pub end_kern: Vec<f64>,
    pub hist_len: usize,
    pub slots: usize,
    pub specials: Vec<TlmSpecial>,
    /// Runs of source specials (no override): (design, first, count).
    pub src_runs: Vec<(usize, usize, usize)>,
    pub lumped: Vec<TlmLumped>,
    pub lumped_node: Vec<i32>,
    pub wgs: Vec<TlmWg>,
    pub wg_lo: Vec<i32>,
    pub wg_hi: Vec<i32>,
    pub wg_w: Vec<f64>,
    /// Trace slot of each port of each design.
    pub port_slot: Vec<Vec<usize>>,
    pub nslots: usize,
    /// Compulsory device bytes of one step, per design: every live node's links
    /// read and written once, stubs of loaded nodes, meta words outside plain chunks.
    pub step_bytes: Vec<f64>,
}

/// Meta words per parallel copy.
const COPY_CHUNK: usize = 1 << 16;

/// (live nodes, stub values a step reads and writes, nodes in non-plain 32-node chunks)
/// of one design: integer sums, so the parallel order does not matter.
fn meta_counts(pk: &TlmPack) -> (usize, usize, usize) {
    use crate::engine::tlm::pack::{META_DEAD, META_KIND_SHIFT, META_SHORT};
    let (dim3, loaded, stubs) = (pk.dim3, pk.loaded, pk.stubs());
    pk.meta
        .par_chunks(32)
        .map(|c| {
            let live = c.iter().filter(|&&m| m & META_DEAD == 0).count();
            // 3D loaded live nodes all six stubs; 2D loaded nodes their three, shorted
            // nodes their four half-link states.
            let stub_vals: usize = if !loaded {
                0
            } else if dim3 {
                c.iter().filter(|&&m| m & META_DEAD == 0 && (m >> META_KIND_SHIFT) != 0).count() * stubs
            } else {
                c.iter().map(|&m| if m & META_SHORT != 0 { 4 } else if (m >> META_KIND_SHIFT) != 0 { 3 } else { 0 }).sum()
            };
            let nonplain = if c.iter().any(|&m| m != 0) { c.len() } else { 0 };
            (live, stub_vals, nonplain)
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
}

fn i32_of(x: usize, what: &str) -> Result<i32, String> {
    i32::try_from(x).map_err(|_| format!("{what} {x} exceeds the kernels' 32-bit range"))
}

impl Plan {
    /// `max_steps`: per design (history length of its guide ends).
    pub(crate) fn new(packs: &[&TlmPack], max_steps: &[usize], nodes_per_block: usize) -> Result<Plan, String> {
        assert!(!packs.is_empty() && packs.iter().all(|p| p.dim3 == packs[0].dim3), "one engine kind per plan");
        let dim3 = packs[0].dim3;
        let links = packs[0].links();
        let stubs = packs[0].stubs();
        let cstride = if dim3 { COEF3 } else { COEF2 };
        let mut p = Plan {
            dim3,
            links,
            stubs,
            l: 0,
            ls: 0,
            designs: vec![],
            meta: vec![],
            plain: vec![],
            coef: vec![],
            nblocks: vec![],
            ends: vec![],
            end_node: vec![],
            end_phi: vec![],
            end_kern: vec![],
            hist_len: 0,
            slots: 0,
            specials: vec![],
            src_runs: vec![],
            lumped: vec![],
            lumped_node: vec![],
            wgs: vec![],
            wg_lo: vec![],
            wg_hi: vec![],
            wg_w: vec![],
            port_slot: vec![],
            nslots: 0,
            step_bytes: vec![],
        };
        // Compulsory bytes of each design's step, counted from its meta words in parallel.
        let counts: Vec<(usize, usize, usize)> = packs.par_iter().map(|pk| meta_counts(pk)).collect();
        let mut kern_index: HashMap<(u64, usize), usize> = HashMap::new();
        let (mut off, mut soff) = (0usize, 0usize);
        for (d, pk) in packs.iter().enumerate() {
            let nodes = pk.nodes();
            i32_of(nodes, "nodes")?;
            let coef_off = p.coef.len() / cstride;
            p.coef.extend_from_slice(&pk.coefs);
            p.designs.push(TlmDesign {
                off: off as i64,
                soff: if pk.loaded { soff as i64 } else { -1 },
                nodes: nodes as i32,
                stride: pk.stride.map(|s| s as i32),
                coef_off: i32_of(coef_off, "coefficient kinds")?,
                src_e: pk.src_e as i32,
                loaded: pk.loaded as i32,
                pad: 0,
            });
            p.nblocks.push(nodes.div_ceil(nodes_per_block));
            // Guide ends, each followed by the special nodes it overrides.
            let mut spec_of_end: Vec<Vec<usize>> = vec![vec![]; pk.ends.len()];
            let mut free = vec![];
            for (si, s) in pk.specials.iter().enumerate() {
                match s.over {
                    Some((e, _)) => spec_of_end[e].push(si),
                    None => free.push(si),
                }
            }
            let end0 = p.ends.len();
            let mut slot_offs = vec![];
            for e in pk.ends.iter() {
                slot_offs.push(p.slots);
                p.slots += e.nodes.len();
            }
            for (ei, e) in pk.ends.iter().enumerate() {
                let steps = max_steps[d];
                let klen = crate::engine::tlm::pack::kernel_len(steps);
                let key = (e.me.wc_dt().to_bits(), klen);
                let kern_off = match kern_index.get(&key) {
                    Some(&o) => o,
                    None => {
                        let o = p.end_kern.len();
                        p.end_kern.par_extend((0..klen).into_par_iter().map(|k| e.me.kernel_value(k)));
                        kern_index.insert(key, o);
                        o
                    }
                };
                let (phi2, rho, eta_l, z0, g) = e.me.scalars();
                p.end_node.extend(e.nodes.iter().map(|&n| n as i32));
                p.end_phi.extend_from_slice(&e.me.phi);
                let spec_off = p.specials.len();
                for &si in &spec_of_end[ei] {
                    let s = &pk.specials[si];
                    // spec_of_end holds only specials that override an end.
                    let Some((_, slot)) = s.over else { continue };
                    p.specials.push(TlmSpecial {
                        w: s.w,
                        node: s.node as i32,
                        design: d as i32,
                        over_link: e.link as i32,
                        over_slot: i32_of(slot_offs[ei] + slot, "guide-end slots")?,
                        pad: 0,
                    });
                }
                p.ends.push(TlmEnd {
                    phi2,
                    rho,
                    eta_l,
                    z0,
                    g,
                    hist_off: p.hist_len as i64,
                    kern_off: kern_off as i64,
                    design: d as i32,
                    link: e.link as i32,
                    slot_off: slot_offs[ei] as i32,
                    slots: e.nodes.len() as i32,
                    kern_len: klen as i32,
                    spec_off: spec_off as i32,
                    spec_n: spec_of_end[ei].len() as i32,
                    pad: 0,
                });
                p.hist_len += steps.max(1);
            }
            debug_assert_eq!(p.ends.len() - end0, pk.ends.len());
            let first = p.specials.len();
            for &si in &free {
                let s = &pk.specials[si];
                p.specials.push(TlmSpecial { w: s.w, node: s.node as i32, design: d as i32, over_link: -1, over_slot: -1, pad: 0 });
            }
            if !free.is_empty() {
                p.src_runs.push((d, first, free.len()));
            }
            // Trace slots in port order.
            let mut slots = vec![0; pk.is_wg.len()];
            for (pi, s) in slots.iter_mut().enumerate() {
                *s = p.nslots + pi;
            }
            for l in &pk.lumped {
                p.lumped.push(TlmLumped {
                    r: l.r,
                    z: l.z,
                    design: d as i32,
                    axis: l.axis as i32,
                    node_off: p.lumped_node.len() as i32,
                    nodes: l.nodes.len() as i32,
                    slot: slots[l.port] as i32,
                    drive: (l.port == pk.drive) as i32,
                });
                p.lumped_node.extend(l.nodes.iter().map(|&n| n as i32));
            }
            for w in &pk.wgs {
                p.wgs.push(TlmWg {
                    dw: w.dw,
                    de: w.de,
                    z: w.z,
                    norm: w.norm,
                    inward: w.inward,
                    design: d as i32,
                    link_up: w.link_up as i32,
                    link_down: w.link_down as i32,
                    term_off: p.wg_lo.len() as i32,
                    terms: w.lo.len() as i32,
                    slot: slots[w.port] as i32,
                });
                p.wg_lo.extend(w.lo.iter().map(|&n| n as i32));
                p.wg_hi.extend(w.hi.iter().map(|&n| n as i32));
                p.wg_w.extend_from_slice(&w.w);
            }
            p.nslots += slots.len();
            p.port_slot.push(slots);
            let (live, stub_vals, nonplain) = counts[d];
            p.step_bytes.push((live * links * 8 + stub_vals * 8 + nonplain * 4 + nodes.div_ceil(32)) as f64);
            off += nodes.div_ceil(ALIGN) * ALIGN;
            if pk.loaded {
                soff += nodes.div_ceil(ALIGN) * ALIGN;
            }
        }
        p.l = off.max(ALIGN);
        p.ls = soff;
        i32_of(p.slots, "guide-end slots")?;
        i32_of(p.lumped_node.len(), "lumped nodes")?;
        i32_of(p.wg_lo.len(), "guide-port terms")?;
        // The node pool: each design's meta words copied in place, in parallel chunks.
        p.meta = vec![0; p.l];
        let mut rest = &mut p.meta[..];
        let mut dst = vec![];
        for (d, pk) in p.designs.iter().zip(packs) {
            let at = d.off as usize - (p.l - rest.len());
            let (seg, tail) = rest[at..].split_at_mut(pk.nodes());
            dst.push(seg);
            rest = tail;
        }
        dst.into_par_iter().zip(packs).for_each(|(seg, pk)| seg.par_chunks_mut(COPY_CHUNK).zip(pk.meta.par_chunks(COPY_CHUNK)).for_each(|(a, b)| a.copy_from_slice(b)));
        p.plain = p.meta.par_chunks(32).map(|c| c.iter().all(|&m| m == 0) as u8).collect();
        Ok(p)
    }

    /// (design, block) pairs of the node kernels for the running designs.
    pub fn block_table(&self, active: &[bool]) -> Vec<i32> {
        let mut t = vec![];
        for (d, &nb) in self.nblocks.iter().enumerate() {
            if active[d] {
                for b in 0..nb {
                    t.push(d as i32);
                    t.push(b as i32);
                }
            }
        }
        t
    }

    /// (role, index, count) triples of the port kernel for the running designs.
    /// Source runs are cut into blocks of at most `port_threads` nodes.
    pub fn port_jobs(&self, active: &[bool], port_threads: usize) -> Vec<i32> {
        let mut t = vec![];
        for (i, e) in self.ends.iter().enumerate() {
            if active[e.design as usize] {
                t.extend([0, i as i32, 0]);
            }
        }
        for (i, l) in self.lumped.iter().enumerate() {
            if active[l.design as usize] {
                t.extend([1, i as i32, 0]);
            }
        }
        for &(d, first, count) in &self.src_runs {
            if active[d] {
                let mut s = 0;
                while s < count {
                    let c = (count - s).min(port_threads);
                    t.extend([2, (first + s) as i32, c as i32]);
                    s += c;
                }
            }
        }
        t
    }

    /// The guide ports to sample (indices into `wgs`) for the running designs.
    pub fn wg_list(&self, active: &[bool]) -> Vec<i32> {
        (0..self.wgs.len()).filter(|&i| active[self.wgs[i].design as usize]).map(|i| i as i32).collect()
    }

    /// Device bytes of one job on its own (for splitting batches to fit).
    pub(crate) fn job_bytes(pk: &TlmPack, max_steps: usize) -> usize {
        let n = pk.nodes().div_ceil(ALIGN) * ALIGN;
        let stubs = if pk.loaded { pk.stubs() } else { 0 };
        n * (2 * pk.links() * 4 + stubs * 4 + 4) + pk.ends.len() * max_steps * 16 + (pk.specials.len() + pk.wgs.iter().map(|w| w.lo.len()).sum::<usize>()) * 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tlm::pack;
    use crate::engine::tlm::pack::META_DEAD;
    use crate::engine::tlm::testjobs::{pec_box, probe, wr28};
    use crate::job::{EngineKind, Material};

    fn jobs() -> Vec<crate::job::SimJob> {
        // A guide (modal ends, driven sources) and a loaded box with lumped ports.
        let g = wr28(EngineKind::Tlm, 12, 6, 40, 0, 5, 3);
        let mut b = pec_box([10, 9, 7], 1e-3);
        b.materials.push(Material { name: "d".into(), eps_r: 2.0, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
        std::sync::Arc::make_mut(&mut b.cell_mat)[3] = 2;
        std::sync::Arc::make_mut(&mut b.cell_mat)[100] = 1;
        b.ports = vec![probe("a", 2, 2, 1, 3, 50.0), probe("b", 6, 5, 2, 2, 50.0)];
        b.drive = 1;
        vec![g, b]
    }

    #[test]
    fn layout_tables_and_slots() {
        let js = jobs();
        let packs: Vec<TlmPack> = js.iter().map(|j| pack(j).unwrap()).collect();
        let refs: Vec<&TlmPack> = packs.iter().collect();
        let p = Plan::new(&refs, &[100, 50], 64).unwrap();
        // Offsets aligned, pools cover every design, meta copied in place.
        assert_eq!(p.designs[0].off, 0);
        assert_eq!(p.designs[1].off as usize, (12 * 6 * 40usize).div_ceil(ALIGN) * ALIGN);
        assert_eq!(p.l % ALIGN, 0);
        assert!(p.l >= p.designs[1].off as usize + 630);
        for (d, pk) in packs.iter().enumerate() {
            let o = p.designs[d].off as usize;
            assert_eq!(&p.meta[o..o + pk.nodes()], &pk.meta[..]);
        }
        // Plain flags: 1 exactly where all 32 meta words are 0.
        assert_eq!(p.plain.len(), p.l / 32);
        for (c, &f) in p.plain.iter().enumerate() {
            assert_eq!(f == 1, p.meta[32 * c..32 * c + 32].iter().all(|&m| m == 0));
        }
        assert!(p.plain.iter().any(|&f| f == 1) && p.plain.iter().any(|&f| f == 0));
        // Stubs only for the loaded box; its dead cell is flagged.
        assert!(!packs[0].loaded && packs[1].loaded);
        assert_eq!((p.designs[0].soff, p.designs[1].soff), (-1, 0));
        assert!(packs[1].meta[100] & META_DEAD != 0);
        // Two modal ends with their face nodes as specials, each overriding from its own slots.
        assert_eq!(p.ends.len(), 2);
        for e in &p.ends {
            assert_eq!(e.slots, 72);
            assert_eq!(e.spec_n, 72);
            assert_eq!(e.kern_len, 100);
            for s in &p.specials[e.spec_off as usize..(e.spec_off + e.spec_n) as usize] {
                assert!(s.over_slot >= e.slot_off && s.over_slot < e.slot_off + e.slots && s.over_link == e.link);
            }
        }
        // Both ends share one kernel table; histories are separate.
        assert_eq!(p.end_kern.len(), 100);
        assert_eq!((p.ends[0].hist_off, p.ends[1].hist_off, p.hist_len), (0, 100, 200));
        // Source nodes of the driven port: one layer of 72 nodes, no override.
        assert_eq!(p.src_runs, vec![(0, 144, 72)]);
        // Lumped ports of the box: 3 + 2 nodes, the second driven; trace slots in port order after the guide's two.
        assert_eq!(p.lumped.len(), 2);
        assert_eq!((p.lumped[0].nodes, p.lumped[1].nodes, p.lumped[0].drive, p.lumped[1].drive), (3, 2, 0, 1));
        assert_eq!(p.port_slot, vec![vec![0, 1], vec![2, 3]]);
        assert_eq!((p.lumped[0].slot, p.lumped[1].slot, p.wgs[0].slot, p.wgs[1].slot), (2, 3, 0, 1));
        assert_eq!(p.wgs[0].terms, 72);
    }

    #[test]
    fn launch_tables_follow_the_running_designs() {
        let js = jobs();
        let packs: Vec<TlmPack> = js.iter().map(|j| pack(j).unwrap()).collect();
        let refs: Vec<&TlmPack> = packs.iter().collect();
        let p = Plan::new(&refs, &[100, 50], 64).unwrap();
        assert_eq!(p.nblocks, vec![(12 * 6 * 40usize).div_ceil(64), 630usize.div_ceil(64)]);
        let t = p.block_table(&[true, true]);
        assert_eq!(t.len() / 2, p.nblocks[0] + p.nblocks[1]);
        let t = p.block_table(&[false, true]);
        assert!(t.chunks(2).all(|c| c[0] == 1) && t.len() / 2 == p.nblocks[1]);
        // Port jobs: 2 ends, 2 lumped, sources cut into blocks of at most 32.
        let j = p.port_jobs(&[true, true], 32);
        let roles: Vec<i32> = j.chunks(3).map(|c| c[0]).collect();
        assert_eq!(roles, vec![0, 0, 1, 1, 2, 2, 2]);
        let src: Vec<(i32, i32)> = j.chunks(3).filter(|c| c[0] == 2).map(|c| (c[1], c[2])).collect();
        assert_eq!(src, vec![(144, 32), (176, 32), (208, 8)]);
        assert_eq!(p.port_jobs(&[false, true], 32).chunks(3).map(|c| c[0]).collect::<Vec<_>>(), vec![1, 1]);
        assert_eq!(p.wg_list(&[true, false]), vec![0, 1]);
        assert!(p.wg_list(&[false, true]).is_empty());
        // Bytes: 96 per live node of the guide (no stubs) plus meta outside plain chunks.
        let live = 12 * 6 * 40;
        assert!(p.step_bytes[0] >= (live * 96) as f64 && p.step_bytes[0] < (live * 101) as f64);
    }
}

#[cfg(test)]
mod parallel {
    //! The host setup runs in parallel (jobs, slabs of nodes, plan copies); its
    //! output must not depend on the thread count.
    use super::*;
    use crate::engine::device::bytes;
    use crate::engine::tlm::pack;
    use crate::engine::tlm::testjobs::{pec_box, probe, wr28};
    use crate::job::{Axis, Boundary, EngineKind, Material, SimJob};

    /// Every field of a pack, as bits.
    pub(super) fn pack_bits(pk: &TlmPack) -> Vec<u8> {
        let mut v: Vec<u8> = vec![];
        let mut u = |x: u64| v.extend_from_slice(&x.to_le_bytes());
        u(pk.dim3 as u64);
        u(pk.dt.to_bits());
        pk.n.iter().chain(&pk.stride).for_each(|&x| u(x as u64));
        pk.meta.iter().for_each(|&x| u(x as u64));
        pk.coefs.iter().for_each(|&x| u(x.to_bits() as u64));
        u(pk.loaded as u64);
        u(pk.src_e as u64);
        for s in &pk.specials {
            u(s.node as u64);
            u(s.w.to_bits() as u64);
            let (e, sl) = s.over.map_or((u64::MAX, u64::MAX), |(e, sl)| (e as u64, sl as u64));
            u(e);
            u(sl);
        }
        for l in &pk.lumped {
            [l.port, l.axis, l.nodes.len()].iter().chain(&l.nodes).for_each(|&x| u(x as u64));
            u(l.r.to_bits());
            u(l.z.to_bits());
        }
        for e in &pk.ends {
            [e.link, e.nodes.len()].iter().chain(&e.nodes).for_each(|&x| u(x as u64));
            e.me.phi.iter().for_each(|x| u(x.to_bits()));
            let (a, b, c, d, g) = e.me.scalars();
            [a, b, c, d, g, e.me.wc_dt()].iter().for_each(|x| u(x.to_bits()));
        }
        for w in &pk.wgs {
            [w.port, w.link_up, w.link_down, w.lo.len()].iter().chain(&w.lo).chain(&w.hi).for_each(|&x| u(x as u64));
            w.w.iter().chain(&[w.dw, w.de, w.z, w.norm, w.inward]).for_each(|x| u(x.to_bits()));
        }
        pk.is_wg.iter().for_each(|&x| u(x as u64));
        u(pk.drive as u64);
        let (a, b) = pk.offsets.unwrap_or((f64::NAN, f64::NAN));
        u(a.to_bits());
        u(b.to_bits());
        u(pk.cells as u64);
        pk.scale.iter().for_each(|&(a, b)| {
            u(a.to_bits());
            u(b.to_bits())
        });
        v
    }

    /// Every field of a plan, as bits.
    pub(super) fn plan_bits(p: &Plan) -> Vec<u8> {
        let mut v: Vec<u8> = vec![];
        for x in [p.dim3 as usize, p.links, p.stubs, p.l, p.ls, p.hist_len, p.slots, p.nslots] {
            v.extend_from_slice(&(x as u64).to_le_bytes());
        }
        v.extend_from_slice(bytes(&p.designs));
        v.extend_from_slice(bytes(&p.meta));
        v.extend_from_slice(bytes(&p.plain));
        v.extend_from_slice(bytes(&p.coef));
        for x in p.nblocks.iter().chain(p.src_runs.iter().flat_map(|r| [&r.0, &r.1, &r.2])).chain(p.port_slot.iter().flatten()) {
            v.extend_from_slice(&(*x as u64).to_le_bytes());
        }
        v.extend_from_slice(bytes(&p.ends));
        v.extend_from_slice(bytes(&p.end_node));
        v.extend_from_slice(bytes(&p.end_phi));
        v.extend_from_slice(bytes(&p.end_kern));
        v.extend_from_slice(bytes(&p.specials));
        v.extend_from_slice(bytes(&p.lumped));
        v.extend_from_slice(bytes(&p.lumped_node));
        v.extend_from_slice(bytes(&p.wgs));
        v.extend_from_slice(bytes(&p.wg_lo));
        v.extend_from_slice(bytes(&p.wg_hi));
        v.extend_from_slice(bytes(&p.wg_w));
        v.extend_from_slice(bytes(&p.step_bytes));
        v
    }

    /// A box with dielectric, lossy and magnetic blocks, a PEC block, a sheet,
    /// matched faces behind graded padding, a PMC face and lumped ports.
    pub(super) fn mixed_box() -> SimJob {
        let n = [26, 21, 19];
        let mut b = pec_box(n, 0.5e-3);
        b.boundaries[0] = [Boundary::Absorbing; 2];
        b.pml[0] = [4, 3];
        b.boundaries[2] = [Boundary::Pmc, Boundary::Absorbing];
        b.pml[2] = [0, 5];
        b.materials.push(Material { name: "d".into(), eps_r: 2.2, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
        b.materials.push(Material { name: "l".into(), eps_r: 3.0, sigma: 0.02, mu_r: 1.5, pec: false, poles: vec![] });
        let at = |i: usize, j: usize, k: usize| (k * n[1] + j) * n[0] + i;
        for k in 2..12 {
            for j in 3..15 {
                for i in 6..20 {
                    std::sync::Arc::make_mut(&mut b.cell_mat)[at(i, j, k)] = if i < 12 { 2 } else { 3 };
                }
            }
        }
        for k in 13..16 {
            for i in 8..14 {
                std::sync::Arc::make_mut(&mut b.cell_mat)[at(i, 10, k)] = 1;
            }
        }
        b.sheets.push(crate::job::Sheet { normal: Axis::Y, plane: 17, lo: [5, 2], hi: [18, 9] });
        b.ports = vec![probe("a", 9, 5, 4, 3, 50.0), probe("b", 16, 12, 3, 2, 75.0)];
        b.drive = 1;
        b
    }

    /// Varied jobs of both engines (guide ends, sources, slabs, padding, loads, ports).
    pub(super) fn varied_jobs() -> Vec<SimJob> {
        let d = crate::bench::workloads::shipped_iris_filter().unwrap();
        let mut v = vec![mixed_box(), wr28(EngineKind::Tlm, 12, 6, 40, 4, 5, 3)];
        for e in [EngineKind::Tlm, EngineKind::Tlm2d] {
            v.extend(d.jobs(&d.midpoint_values(), &[0, 1], Some(e)).unwrap());
        }
        v.extend(crate::dev::tlm_check::check_jobs(true).unwrap());
        v
    }

    /// Packs and plans (one per engine kind) of `jobs`, as bits.
    fn setup_bits(jobs: &[SimJob]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let packs: Vec<Option<TlmPack>> = jobs.par_iter().map(|j| pack(j).ok()).collect();
        let bits = packs.iter().map(|p| p.as_ref().map(pack_bits).unwrap_or_default()).collect();
        let mut plans = vec![];
        for dim3 in [true, false] {
            let refs: Vec<&TlmPack> = packs.iter().flatten().filter(|p| p.dim3 == dim3).collect();
            let steps: Vec<usize> = (0..refs.len()).map(|i| 50 + 37 * i).collect();
            plans.push(plan_bits(&Plan::new(&refs, &steps, 256).unwrap()));
        }
        (bits, plans)
    }

    #[test]
    fn setup_does_not_depend_on_the_thread_count() {
        let jobs = varied_jobs();
        let pool = |n: usize| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        // Different thread counts cut the meshes into different slabs.
        let one = pool(1).install(|| setup_bits(&jobs));
        let four = pool(4).install(|| setup_bits(&jobs));
        assert_eq!(one.0.len(), jobs.len());
        assert!(one.0.iter().filter(|b| !b.is_empty()).count() >= jobs.len() - 2, "only the NaN jobs may fail to pack");
        for (k, (a, b)) in one.0.iter().zip(&four.0).enumerate() {
            assert!(a == b, "pack of {} differs between 1 and 4 threads", jobs[k].label);
        }
        assert!(one.1 == four.1, "plans differ between 1 and 4 threads");
    }

    #[test]
    fn coefficient_kinds_are_numbered_in_node_order() {
        // Each kind first appears after every lower one (kind 0: plain, listed first).
        for j in varied_jobs() {
            let Ok(pk) = pack(&j) else { continue };
            let kinds = pk.coefs.len() / if pk.dim3 { COEF3 } else { COEF2 };
            let mut next = 1;
            for &m in &pk.meta {
                let k = (m >> crate::engine::tlm::pack::META_KIND_SHIFT) as usize;
                assert!(k <= next, "{}: kind {k} before kind {next}", j.label);
                if k == next {
                    next += 1;
                }
            }
            assert_eq!(next, kinds, "{}: every kind but plain used", j.label);
        }
    }
}
