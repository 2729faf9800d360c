//! `#[repr(C)]` mirrors of the structs in `kernels/tlm.cuh`, the embedded
//! kernel source, and the tests that keep both sides in step: every field
//! offset and struct size is checked against the header, and every
//! `extern "C" __global__` kernel of `kernels/tlm.cu` must have a CPU twin of
//! the same name in `src/engine/tlm/` (`fn NAME(`).

use crate::engine::device::Pod;

/// `kernels/tlm.cu`, compiled at run time by NVRTC.
pub const TLM_CU: &str = include_str!("../../../../kernels/tlm.cu");
/// `kernels/tlm.cuh`, pasted in place of its `#include`.
pub const TLM_CUH: &str = include_str!("../../../../kernels/tlm.cuh");

/// The kernel source as NVRTC compiles it: the header inlined.
pub fn kernel_source() -> String {
    TLM_CU.replace("#include \"tlm.cuh\"", TLM_CUH)
}

/// The kernels, in the order of [`Kernel`].
pub const KERNELS: [&str; 8] =
    ["tlm_scn_step", "tlm_scn_ports", "tlm_scn_sample", "tlm_scn_energy", "tlm_shunt_step", "tlm_shunt_ports", "tlm_shunt_sample", "tlm_shunt_energy"];

/// A kernel of `kernels/tlm.cu` (index into [`KERNELS`]); all take `(TlmPtrs, int, int)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Step = 0,
    Ports = 1,
    Sample = 2,
    Energy = 3,
}

impl Kernel {
    /// Index into [`KERNELS`] for the 3D SCN (`dim3`) or the 2D shunt node.
    pub fn index(self, dim3: bool) -> usize {
        self as usize + if dim3 { 0 } else { 4 }
    }
}

/// Threads per block of the port kernels (`TLM_PORT_THREADS`, default of the header).
pub const PORT_THREADS: u32 = 128;

/// One design of a batch (see `tlm.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TlmDesign {
    pub off: i64,
    pub soff: i64,
    pub nodes: i32,
    pub stride: [i32; 3],
    pub coef_off: i32,
    pub src_e: i32,
    pub loaded: i32,
    pub pad: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TlmEnd {
    pub phi2: f64,
    pub rho: f64,
    pub eta_l: f64,
    pub z0: f64,
    pub g: f64,
    pub hist_off: i64,
    pub kern_off: i64,
    pub design: i32,
    pub link: i32,
    pub slot_off: i32,
    pub slots: i32,
    pub kern_len: i32,
    pub spec_off: i32,
    pub spec_n: i32,
    pub pad: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TlmSpecial {
    pub w: f32,
    pub node: i32,
    pub design: i32,
    pub over_link: i32,
    pub over_slot: i32,
    pub pad: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TlmLumped {
    pub r: f64,
    pub z: f64,
    pub design: i32,
    pub axis: i32,
    pub node_off: i32,
    pub nodes: i32,
    pub slot: i32,
    pub drive: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TlmWg {
    pub dw: f64,
    pub de: f64,
    pub z: f64,
    pub norm: f64,
    pub inward: f64,
    pub design: i32,
    pub link_up: i32,
    pub link_down: i32,
    pub term_off: i32,
    pub terms: i32,
    pub slot: i32,
}

/// Device pointers and strides (see `tlm.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TlmPtrs {
    pub b: u64,
    pub nb: u64,
    pub stub: u64,
    pub meta: u64,
    pub plain: u64,
    pub coef: u64,
    pub designs: u64,
    pub blocks: u64,
    pub jobs: u64,
    pub ends: u64,
    pub end_node: u64,
    pub end_phi: u64,
    pub end_kern: u64,
    pub end_hist: u64,
    pub end_a: u64,
    pub specials: u64,
    pub lumped: u64,
    pub lumped_node: u64,
    pub wgs: u64,
    pub wg_list: u64,
    pub wg_lo: u64,
    pub wg_hi: u64,
    pub wg_w: u64,
    pub gval: u64,
    pub due: u64,
    pub tv: u64,
    pub ti: u64,
    pub energy: u64,
    pub step0: u64,
    pub l: i64,
    pub ls: i64,
    pub gstride: i32,
    pub tstride: i32,
}

// SAFETY: plain-old-data with the C layout the kernels expect (checked by the tests below).
unsafe impl cudarc::driver::DeviceRepr for TlmPtrs {}

// SAFETY: plain data of C layout without padding that matters (checked by the tests below).
unsafe impl Pod for TlmDesign {}
// SAFETY: as above.
unsafe impl Pod for TlmEnd {}
// SAFETY: as above.
unsafe impl Pod for TlmSpecial {}
// SAFETY: as above.
unsafe impl Pod for TlmLumped {}
// SAFETY: as above.
unsafe impl Pod for TlmWg {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cuda::abi::{kernel_names, parse_c_structs};
    use crate::engine::cuda::abi::layout_check::{self, layout};

    fn check(name: &str, rust: (usize, Vec<(String, usize)>)) {
        layout_check::check(TLM_CUH, "tlm.cuh", name, rust);
    }

    #[test]
    fn repr_c_structs_match_tlm_cuh() {
        check("TlmDesign", layout!(TlmDesign; off, soff, nodes, stride, coef_off, src_e, loaded, pad));
        check("TlmEnd", layout!(TlmEnd; phi2, rho, eta_l, z0, g, hist_off, kern_off, design, link, slot_off, slots, kern_len, spec_off, spec_n, pad));
        check("TlmSpecial", layout!(TlmSpecial; w, node, design, over_link, over_slot, pad));
        check("TlmLumped", layout!(TlmLumped; r, z, design, axis, node_off, nodes, slot, drive));
        check("TlmWg", layout!(TlmWg; dw, de, z, norm, inward, design, link_up, link_down, term_off, terms, slot));
        check(
            "TlmPtrs",
            layout!(TlmPtrs; b, nb, stub, meta, plain, coef, designs, blocks, jobs, ends, end_node, end_phi, end_kern, end_hist, end_a,
                specials, lumped, lumped_node, wgs, wg_list, wg_lo, wg_hi, wg_w, gval, due, tv, ti, energy, step0, l, ls, gstride, tstride),
        );
        let names: Vec<String> = parse_c_structs(TLM_CUH).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["TlmDesign", "TlmEnd", "TlmSpecial", "TlmLumped", "TlmWg", "TlmPtrs"]);
    }

    #[test]
    fn every_tlm_kernel_has_a_cpu_twin() {
        let mut names = kernel_names(TLM_CU);
        names.extend(kernel_names(super::super::onchip::ONCHIP_CU));
        names.sort();
        let mut want = KERNELS.to_vec();
        want.extend(super::super::onchip::KERNELS);
        want.sort();
        assert_eq!(names, want, "kernels of tlm.cu and tlm_onchip.cu, and abi::KERNELS and onchip::KERNELS");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/tlm");
        let mut cpu = String::new();
        for ent in std::fs::read_dir(&dir).unwrap() {
            let p = ent.unwrap().path();
            if p.extension().is_some_and(|e| e == "rs") {
                cpu += &std::fs::read_to_string(&p).unwrap();
            }
        }
        for k in &names {
            assert!(cpu.contains(&format!("fn {k}(")), "kernel {k} has no CPU twin `fn {k}(` in src/engine/tlm/");
        }
        // The embedded source is the file on disk, with the header inlined.
        let on_disk = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/tlm.cu")).unwrap();
        assert_eq!(on_disk, TLM_CU);
        assert!(!kernel_source().contains("#include"));
    }

    #[test]
    fn header_constants_match_the_packer() {
        use crate::engine::tlm::pack;
        for (name, v) in [
            ("TLM_KIND_SHIFT", pack::META_KIND_SHIFT as usize),
            ("TLM_COEF3", pack::COEF3),
            ("TLM_COEF2", pack::COEF2),
            ("TLM_PORT_THREADS", PORT_THREADS as usize),
        ] {
            let line = TLM_CUH.lines().find(|l| l.trim_start().starts_with(&format!("#define {name} "))).unwrap_or_else(|| panic!("{name} not in tlm.cuh"));
            assert_eq!(line.split_whitespace().nth(2).unwrap().parse::<usize>().unwrap(), v, "{name}");
        }
        assert!(TLM_CUH.contains("#define TLM_DEAD (1u << 12)") && pack::META_DEAD == 1 << 12);
        assert!(TLM_CUH.contains("#define TLM_SPECIAL (1u << 13)") && pack::META_SPECIAL == 1 << 13);
        assert!(TLM_CUH.contains("#define TLM_SHORT (1u << 12)") && pack::META_SHORT == 1 << 12);
    }
}
