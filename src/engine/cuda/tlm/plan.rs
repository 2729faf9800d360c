//! Packing a batch of TLM jobs (one engine kind) into the flat pools and
//! tables of `kernels/tlm.cuh`: node pools with 128-aligned design offsets,
//! per-32-node "plain" flags, one coefficient table, guide ends with their
//! special nodes grouped behind them, lumped ports, guide-port sampling terms
//! and trace slots. Pure host code (tested without a GPU).

use std::collections::HashMap;

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
            p.meta.resize(off, 0);
            p.meta.extend_from_slice(&pk.meta);
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
                        p.end_kern.extend((0..klen).map(|k| e.me.kernel_value(k)));
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
                    let (_, slot) = s.over.unwrap();
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
            // Compulsory bytes.
            let live = pk.meta.iter().filter(|&&m| m & crate::engine::tlm::pack::META_DEAD == 0).count();
            // Stub values a step reads and writes: 3D loaded live nodes all six; 2D
            // loaded nodes their three, shorted nodes their four half-link states.
            let stub_vals: usize = if !pk.loaded {
                0
            } else if dim3 {
                pk.meta.iter().filter(|&&m| m & crate::engine::tlm::pack::META_DEAD == 0 && (m >> crate::engine::tlm::pack::META_KIND_SHIFT) != 0).count() * stubs
            } else {
                pk.meta
                    .iter()
                    .map(|&m| if m & crate::engine::tlm::pack::META_SHORT != 0 { 4 } else if (m >> crate::engine::tlm::pack::META_KIND_SHIFT) != 0 { 3 } else { 0 })
                    .sum()
            };
            let nonplain = pk.meta.chunks(32).filter(|c| c.iter().any(|&m| m != 0)).map(|c| c.len()).sum::<usize>();
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
        p.meta.resize(p.l, 0);
        p.plain = p.meta.chunks(32).map(|c| c.iter().all(|&m| m == 0) as u8).collect();
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
    use crate::engine::tlm::pack::{pack, META_DEAD};
    use crate::engine::tlm::testjobs::{pec_box, probe, wr28};
    use crate::job::{EngineKind, Material};

    fn jobs() -> Vec<crate::job::SimJob> {
        // A guide (modal ends, driven sources) and a loaded box with lumped ports.
        let g = wr28(EngineKind::Tlm, 12, 6, 40, 0, 5, 3);
        let mut b = pec_box([10, 9, 7], 1e-3);
        b.materials.push(Material { name: "d".into(), eps_r: 2.0, sigma: 0.0, mu_r: 1.0, pec: false });
        b.cell_mat[3] = 2;
        b.cell_mat[100] = 1;
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
