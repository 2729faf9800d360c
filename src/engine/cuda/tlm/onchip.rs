//! The on-chip path of the 2D shunt-node TLM (`kernels/tlm_onchip.cu`): which
//! designs take it, how much shared memory each needs, and the per-design
//! table the kernel reads. One thread block holds a whole design's link
//! pulses (both step parities; its stubs too where they fit) in shared memory
//! and runs a chunk of the stepping loop, one or several energy checks long,
//! in one launch, the guide ends, lumped ports, sources, guide-port samples
//! and energy checks inside it. A design that does not fit a block (or has
//! more ports than one reduction carries) takes the streaming kernels of
//! `kernels/tlm.cu`; [`plan_design`] says which and why. Pure host code
//! (tested without a GPU).

use super::abi::TLM_CUH;
use super::plan::Plan;
use crate::engine::device::ModuleSpec;
use crate::engine::tlm::pack::{TlmPack, COEF2, META_SPECIAL};

/// The kernels of `kernels/tlm_onchip.cu`, in launch order.
pub const KERNELS: [&str; 1] = ["tlm_shunt_onchip"];

/// `kernels/tlm_onchip.cu`.
pub const ONCHIP_CU: &str = include_str!("../../../../kernels/tlm_onchip.cu");

/// Sums one of the kernel's reductions carries (`TLM_OC_MAXV`).
pub const MAX_SUMS: usize = 16;

/// Words per design of the kernel's table (`TLM_OC_WORDS`).
pub const WORDS: usize = 11;

/// Shared memory the kernel keeps for its static variables: the reduction's
/// scratch (16 sums of up to 32 warps), two rows of 16 totals and the design's
/// guide ends and guide ports (8 each), 5.4 KiB.
const STATIC_RESERVE: usize = 6144;

/// The kernel source as NVRTC compiles it: `tlm.cu` (whose node arithmetic it
/// calls) and its header inlined.
pub fn source() -> String {
    ONCHIP_CU.replace("#include \"tlm.cu\"", &super::abi::TLM_CU.replace("#include \"tlm.cuh\"", TLM_CUH))
}

/// The on-chip module for blocks of `threads` threads.
pub fn module(threads: u32) -> ModuleSpec {
    ModuleSpec { name: "tlm_onchip", source: source(), defines: vec![format!("-DTLM_OC_NT={threads}")], kernels: KERNELS.to_vec(), fallback: None }
}

/// Threads per block: whole warps, a power of two (the reductions), 64 to 1024.
pub fn validate_threads(t: usize) -> Result<(), String> {
    if !(64..=1024).contains(&t) || !t.is_power_of_two() {
        return Err(format!("on-chip threads {t}: a power of two from 64 to 1024"));
    }
    Ok(())
}

/// How one design runs on-chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnchipFit {
    /// Dynamic shared memory of its block (bytes).
    pub bytes: usize,
    /// Its stubs are held in shared memory too (else the block reads and writes them in the pool).
    pub stubs_on_chip: bool,
}

/// The kernel's link stride: nodes rounded up to whole warps.
fn stride(nodes: usize) -> usize {
    nodes.div_ceil(32) * 32
}

/// Whether design `pk` runs on-chip within `max_shared` bytes per block, and
/// how; Err says why not.
pub(crate) fn plan_design(pk: &TlmPack, max_shared: usize) -> Result<OnchipFit, String> {
    if pk.dim3 {
        return Err("the on-chip TLM path runs 2D shunt-node designs".into());
    }
    if max_shared == 0 {
        return Err("the device has no on-chip kernel".into());
    }
    // Step part 1 sums two values a guide end and three a lumped port; part 2 one
    // a lumped port and two a guide port.
    let (ne, nl, nw) = (pk.ends.len(), pk.lumped.len(), pk.wgs.len());
    if 2 * ne + 3 * nl > MAX_SUMS || nl + 2 * nw > MAX_SUMS {
        return Err(format!("{ne} guide ends, {nl} lumped and {nw} guide ports: more sums than one reduction carries ({MAX_SUMS})"));
    }
    let room = max_shared.saturating_sub(STATIC_RESERVE);
    // The kernel's layout: pulses of both parities, stubs (where they fit), meta
    // words, coefficient kinds, plain flags (a byte per 32 nodes).
    let nl = stride(pk.nodes());
    let base = 4 * (2 * pk.links() * nl + nl + pk.coefs.len()) + nl / 32;
    if base > room {
        return Err(format!("needs {:.0} KiB of shared memory per block, the device gives {:.0} KiB", base as f64 / 1024.0, room as f64 / 1024.0));
    }
    let with_stubs = base + 4 * pk.stubs() * nl;
    if pk.loaded && with_stubs <= room {
        return Ok(OnchipFit { bytes: with_stubs, stubs_on_chip: true });
    }
    Ok(OnchipFit { bytes: base, stubs_on_chip: false })
}

/// The kernel's table (`WORDS` per design of `plan`, each planned on-chip as
/// `fits` says): stubs on chip, its guide ends, lumped ports, guide ports and
/// free sources as (first, count) in the plan's tables, whether a guide-port
/// sample node is special (then the kernel waits for the special nodes before
/// sampling), and its coefficient kinds. Err when a design's entries are not contiguous.
pub(crate) fn table(plan: &Plan, packs: &[&TlmPack], fits: &[OnchipFit]) -> Result<Vec<i32>, String> {
    let range = |design: &dyn Fn(usize) -> i32, n: usize, d: usize| -> Result<(i32, i32), String> {
        let ix: Vec<usize> = (0..n).filter(|&i| design(i) == d as i32).collect();
        let first = ix.first().copied().unwrap_or(0);
        if ix.iter().enumerate().any(|(k, &i)| i != first + k) {
            return Err(format!("design {d}: its port entries are not contiguous in the plan"));
        }
        Ok((first as i32, ix.len() as i32))
    };
    let mut t = Vec::with_capacity(packs.len() * WORDS);
    for (d, pk) in packs.iter().enumerate() {
        let ends = range(&|i| plan.ends[i].design, plan.ends.len(), d)?;
        let lumped = range(&|i| plan.lumped[i].design, plan.lumped.len(), d)?;
        let wgs = range(&|i| plan.wgs[i].design, plan.wgs.len(), d)?;
        let runs: Vec<&(usize, usize, usize)> = plan.src_runs.iter().filter(|r| r.0 == d).collect();
        let src = match runs.as_slice() {
            [] => (0, 0),
            [r] => (r.1 as i32, r.2 as i32),
            _ => return Err(format!("design {d}: more than one run of sources")),
        };
        let special_sample = pk.wgs.iter().flat_map(|w| &w.lo).any(|&n| pk.meta[n] & META_SPECIAL != 0);
        let kinds = (pk.coefs.len() / COEF2) as i32;
        t.extend([fits[d].stubs_on_chip as i32, ends.0, ends.1, lumped.0, lumped.1, wgs.0, wgs.1, src.0, src.1, special_sample as i32, kinds]);
    }
    Ok(t)
}

/// Modelled shared-memory bytes of one on-chip step of `pk`: per node its four
/// incident pulses read and four reflected ones written (4 bytes each), and
/// where the stubs are on chip, those its scatter reads and writes (three of
/// a loaded node, four of a shorted one).
pub(crate) fn step_smem_bytes(pk: &TlmPack, fit: &OnchipFit) -> f64 {
    use crate::engine::tlm::pack::{META_KIND_SHIFT, META_SHORT};
    let stub_values: usize = if fit.stubs_on_chip {
        pk.meta.iter().map(|&m| if m & META_SHORT != 0 { 4 } else if m >> META_KIND_SHIFT != 0 { 3 } else { 0 }).sum()
    } else {
        0
    };
    (pk.nodes() * 2 * pk.links() * 4 + stub_values * 8) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tlm::pack;
    use crate::job::EngineKind;

    fn filter_packs() -> Vec<TlmPack> {
        crate::dev::tlm_check::iris_filter_jobs(EngineKind::Tlm2d).unwrap().iter().map(|j| pack(j).unwrap()).collect()
    }

    #[test]
    fn the_2d_iris_filter_fits_and_large_or_3d_designs_say_why_not() {
        let packs = filter_packs();
        let pk = &packs[0];
        let fit = plan_design(pk, 232_448).unwrap();
        // Pulses of both parities, meta words, coefficients, plain flags.
        let nl = stride(pk.nodes());
        let base = 4 * (8 * nl + nl + pk.coefs.len()) + nl / 32;
        assert!(fit.bytes == base || (fit.stubs_on_chip && fit.bytes == base + 7 * nl * 4), "{fit:?}");
        // Exactly the room that needs (and the static reserve) is enough; 4 bytes less is not.
        let tight = plan_design(pk, base + STATIC_RESERVE).unwrap();
        assert_eq!((tight.bytes, tight.stubs_on_chip), (base, false));
        let e = plan_design(pk, base + STATIC_RESERVE - 4).unwrap_err();
        assert!(e.contains("KiB"), "{e}");
        assert!(plan_design(pk, 0).is_err());
        let j3 = crate::dev::tlm_check::iris_filter_jobs(EngineKind::Tlm).unwrap().remove(0);
        assert!(plan_design(&pack(&j3).unwrap(), 232_448).unwrap_err().contains("2D"));
        assert!(validate_threads(512).is_ok() && validate_threads(96).is_err() && validate_threads(32).is_err());
    }

    #[test]
    fn the_table_points_at_each_designs_own_ports() {
        let mut packs = filter_packs();
        packs.push(pack(&crate::dev::tlm_check::loaded_2d(true)).unwrap());
        let refs: Vec<&TlmPack> = packs.iter().collect();
        let plan = Plan::new(&refs, &[100, 100, 100], 256).unwrap();
        let fits: Vec<OnchipFit> = refs.iter().map(|p| plan_design(p, 232_448).unwrap()).collect();
        let t = table(&plan, &refs, &fits).unwrap();
        assert_eq!(t.len(), WORDS * 3);
        for (d, pk) in refs.iter().enumerate() {
            let w = &t[WORDS * d..WORDS * (d + 1)];
            assert_eq!((w[2] as usize, w[4] as usize, w[6] as usize), (pk.ends.len(), pk.lumped.len(), pk.wgs.len()));
            for e in &plan.ends[w[1] as usize..(w[1] + w[2]) as usize] {
                assert_eq!(e.design, d as i32);
            }
            for l in &plan.lumped[w[3] as usize..(w[3] + w[4]) as usize] {
                assert_eq!(l.design, d as i32);
            }
            for s in &plan.specials[w[7] as usize..(w[7] + w[8]) as usize] {
                assert!(s.design == d as i32 && s.over_link == -1);
            }
            assert_eq!(w[0], fits[d].stubs_on_chip as i32);
            assert_eq!(w[10] as usize * COEF2, pk.coefs.len());
        }
        // The filter: two modal ends, two guide ports, the driven one's source layer; the
        // 2D check job: two lumped ports, no guide port, no source run.
        assert_eq!(&t[1..3], &[0, 2]);
        assert!(t[8] > 0 && t[WORDS + 8] > 0);
        assert_eq!((t[2 * WORDS + 2], t[2 * WORDS + 4], t[2 * WORDS + 6], t[2 * WORDS + 8]), (0, 2, 0, 0));
    }

    #[test]
    fn the_embedded_source_is_the_file_with_its_includes_inlined() {
        let on_disk = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/tlm_onchip.cu")).unwrap();
        assert_eq!(on_disk, ONCHIP_CU);
        let s = source();
        assert!(!s.contains("#include"));
        assert!(s.contains("tlm_shunt_step") && s.contains("tlm_shunt_onchip") && s.contains("struct TlmPtrs"));
        // The kernel's constants are the host's.
        for (name, v) in [("TLM_OC_MAXV", MAX_SUMS), ("TLM_OC_WORDS", WORDS)] {
            let line = ONCHIP_CU.lines().find(|l| l.starts_with(&format!("#define {name} "))).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(line.split_whitespace().nth(2).unwrap().parse::<usize>().unwrap(), v, "{name}");
        }
    }
}
