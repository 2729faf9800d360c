//! `#[repr(C)]` mirrors of the structs in `kernels/common.cuh`, and the
//! embedded kernel sources. Device pointers are `u64` (`CUdeviceptr`).
//!
//! The tests parse the header and check every field offset and each struct
//! size against these definitions, and parse `kernels/*.cu` to check that
//! every `extern "C" __global__` kernel has a CPU twin of the same name in
//! `src/engine/fdtd/cpu.rs` (style anchors 5 and 6).

/// `kernels/fdtd.cu`, compiled at run time by NVRTC.
pub const FDTD_CU: &str = include_str!("../../../kernels/fdtd.cu");
/// `kernels/common.cuh`, pasted in place of its `#include` (NVRTC gets one string).
pub const COMMON_CUH: &str = include_str!("../../../kernels/common.cuh");

/// `kernels/fdtd_cell.cuh`: the per-cell arithmetic both FDTD modules share.
pub const CELL_CUH: &str = include_str!("../../../kernels/fdtd_cell.cuh");
/// `kernels/fdtd_fused.cuh`: the fused one-step kernel `fdtd_step` and its plane pipeline (included by fdtd.cu).
pub const FUSED_CUH: &str = include_str!("../../../kernels/fdtd_fused.cuh");
/// `kernels/fdtd_lean.cuh`: the lean fused step of the plain interior (included by fdtd_fused.cuh).
pub const LEAN_CUH: &str = include_str!("../../../kernels/fdtd_lean.cuh");
/// `kernels/fdtd_ports.cuh`: the port, energy and DFT kernels (included by fdtd.cu).
pub const PORTS_CUH: &str = include_str!("../../../kernels/fdtd_ports.cuh");
/// `kernels/fdtd_slim.cuh`: the two-step pass of slim designs (included by fdtd.cu).
pub const SLIM_CUH: &str = include_str!("../../../kernels/fdtd_slim.cuh");
/// The edge-current kernel (dispersive media, lumped loads).
pub const EDGES_CUH: &str = include_str!("../../../kernels/fdtd_edges.cuh");
/// The surface-impedance kernel (lossy metal faces).
pub const SURFACE_CUH: &str = include_str!("../../../kernels/fdtd_surface.cuh");
/// The conformal-metal kernels (faces cut by round and slanted metal).
pub const CONFORMAL_CUH: &str = include_str!("../../../kernels/fdtd_conformal.cuh");
/// `kernels/fdtd_onchip.cu`: the on-chip path (one block per design, many steps per launch).
pub const ONCHIP_CU: &str = include_str!("../../../kernels/fdtd_onchip.cu");

/// The headers NVRTC gets pasted in, in the order they are inlined: a
/// header before those it includes itself (fdtd_fused.cuh includes
/// fdtd_lean.cuh, which includes fdtd_cell.cuh; guarded, so twice is harmless).
const HEADERS: [(&str, &str); 9] = [
    ("fdtd_fused.cuh", FUSED_CUH),
    ("fdtd_ports.cuh", PORTS_CUH),
    ("fdtd_slim.cuh", SLIM_CUH),
    ("fdtd_edges.cuh", EDGES_CUH),
    ("fdtd_surface.cuh", SURFACE_CUH),
    ("fdtd_conformal.cuh", CONFORMAL_CUH),
    ("fdtd_lean.cuh", LEAN_CUH),
    ("common.cuh", COMMON_CUH),
    ("fdtd_cell.cuh", CELL_CUH),
];

/// `src` as NVRTC compiles it: the headers inlined.
fn inline_headers(src: &str) -> String {
    HEADERS.iter().fold(src.to_string(), |s, (name, text)| s.replace(&format!("#include \"{name}\""), text))
}

/// The kernel source as NVRTC compiles it: the header inlined.
pub fn kernel_source() -> String {
    inline_headers(FDTD_CU)
}

/// The on-chip kernel's source as NVRTC compiles it.
pub fn onchip_source() -> String {
    inline_headers(ONCHIP_CU)
}

/// The kernels of `kernels/fdtd.cu`, in the order of [`Kernel`].
pub const KERNELS: [&str; 15] = [
    "fdtd_update_h",
    "fdtd_pmc_ghosts",
    "fdtd_update_e",
    "fdtd_step",
    "fdtd_inject",
    "fdtd_sample_ports",
    "fdtd_energy",
    "fdtd_dft",
    "fdtd_step2",
    "fdtd_edges",
    "fdtd_surface",
    "fdtd_surface_e",
    "fdtd_conformal",
    "fdtd_conformal_e",
    "fdtd_conformal_rec",
];

/// A kernel of `kernels/fdtd.cu` (index into [`KERNELS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    UpdateH = 0,
    PmcGhosts = 1,
    UpdateE = 2,
    Step = 3,
    Inject = 4,
    SamplePorts = 5,
    Energy = 6,
    Dft = 7,
    Step2 = 8,
    Edges = 9,
    Surface = 10,
    SurfaceE = 11,
    Conformal = 12,
    ConformalE = 13,
    ConformalRec = 14,
}

/// Flag of a block-table entry's local block number (fdtd.cu `EMV_LEAN_FLAG`):
/// `fdtd_step` runs the block's lean step (kernels/fdtd_lean.cuh).
pub const LEAN_FLAG: i32 = 1 << 30;

/// Threads per block of `fdtd_sample_ports` (`EMV_SAMPLE_THREADS`).
pub const SAMPLE_THREADS: u32 = 128;
/// Threads per block of `fdtd_inject` (`EMV_INJECT_THREADS`).
pub const INJECT_THREADS: u32 = 128;
/// Threads per block of `fdtd_edges` (`EMV_EDGE_THREADS`).
pub const EDGE_THREADS: u32 = 128;
/// Threads per block of `fdtd_surface` (`EMV_SURF_THREADS`).
pub const SURF_THREADS: u32 = 128;
/// Threads per block of `fdtd_dft` (`EMV_DFT_THREADS`).
pub const DFT_THREADS: u32 = 256;

/// One design of a batch (see `common.cuh` for the meaning of each field).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FdtdDesign {
    pub off: i64,
    pub psi_off: [i64; 9],
    pub n: [i32; 3],
    pub dims: [i32; 3],
    pub tiles: [i32; 2],
    pub zchunk: i32,
    pub nchunks: i32,
    pub coef_off: i32,
    pub ncoef: i32,
    pub pmc: i32,
    pub prof_off: [i32; 3],
    pub slab_n: [i32; 3],
    pub db: f32,
    pub line_off: [i32; 3],
    pub zcut: [i32; 2],
    pub zn: [i32; 3],
    pub zlen: [i32; 3],
    /// Tile origin along x and y (common.cuh): tile i spans [i*T - org, (i+1)*T - org) clipped to the array.
    pub org: [i32; 2],
}

/// Device pointers of the field kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FdtdPtrs {
    pub e: [u64; 3],
    pub h: [u64; 3],
    pub e_out: [u64; 3],
    pub h_out: [u64; 3],
    pub mat: [u64; 3],
    pub ca: u64,
    pub cb: u64,
    pub eps: u64,
    pub pe_b: u64,
    pub pe_c: u64,
    pub pe_k: u64,
    pub ph_b: u64,
    pub ph_c: u64,
    pub ph_k: u64,
    pub slab_e: u64,
    pub slab_h: u64,
    pub psi_e: u64,
    pub psi_h: u64,
    pub psi_h_out: u64,
    pub psi_e_out: u64,
    pub designs: u64,
    pub blocks: u64,
    pub inv_e: u64,
    pub inv_h: u64,
    pub rel_e: u64,
    pub rel_h: u64,
}

/// A port as the sampling kernel sees it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FdtdPort {
    pub dl: f64,
    pub d_a: f64,
    pub d_b: f64,
    pub i_sign: f64,
    pub design: i32,
    pub kind: i32,
    pub comp_e: i32,
    pub comp_h: i32,
    pub term_off: i32,
    pub n_terms: i32,
    pub mid: i32,
    pub s_a: i32,
    pub s_b: i32,
    pub pad: i32,
}

/// Device pointers of the port kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PortPtrs {
    pub e: [u64; 3],
    pub h: [u64; 3],
    pub designs: u64,
    pub ports: u64,
    pub t_idx0: u64,
    pub t_idx1: u64,
    pub t_idx2: u64,
    pub t_w: u64,
    pub src_design: u64,
    pub src_comp: u64,
    pub src_idx: u64,
    pub src_coef: u64,
    pub gval: u64,
    pub active: u64,
    pub tv: u64,
    pub ti: u64,
    pub n_src: i32,
    pub n_ports: i32,
    pub gstride: i32,
    pub tstride: i32,
}

/// Device pointers of the edge-current kernel (`fdtd_edges`, see `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EdgePtrs {
    pub e: [u64; 3],
    pub designs: u64,
    pub active: u64,
    pub design: u64,
    pub comp: u64,
    pub idx: u64,
    pub s: u64,
    pub g0: u64,
    pub inv_den: u64,
    pub first: u64,
    pub e_prev: u64,
    pub kp: u64,
    pub kd: u64,
    pub q0: u64,
    pub q1: u64,
    pub p: u64,
    pub dd: u64,
    pub n_edges: i32,
    pub pad: i32,
}

/// Device pointers of the surface-impedance kernel (`fdtd_surface`, see `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SurfacePtrs {
    pub e: [u64; 3],
    pub h: [u64; 3],
    pub designs: u64,
    pub active: u64,
    pub design: u64,
    pub comp: u64,
    pub idx: u64,
    pub k: u64,
    pub inv_den: u64,
    pub kb: u64,
    pub first: u64,
    pub cell0: u64,
    pub alpha: u64,
    pub beta: u64,
    pub rho: u64,
    pub h_prev: u64,
    pub psi: u64,
    pub dh: u64,
    pub e_design: u64,
    pub e_comp: u64,
    pub e_idx: u64,
    pub e_first: u64,
    pub e_term: u64,
    pub e_w: u64,
    pub n_terms: i32,
    pub n_reads: i32,
}

/// Device pointers of the conformal-metal kernels (`fdtd_conformal`, see `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ConformalPtrs {
    pub e: [u64; 3],
    pub h: [u64; 3],
    pub designs: u64,
    pub active: u64,
    pub design: u64,
    pub comp: u64,
    pub idx: u64,
    pub src_comp: u64,
    pub src_idx: u64,
    pub src_w: u64,
    pub pending: u64,
    pub e_design: u64,
    pub e_comp: u64,
    pub e_idx: u64,
    pub e_first: u64,
    pub e_term: u64,
    pub e_w: u64,
    pub n_terms: i32,
    pub n_reads: i32,
}

/// Tables of the two-step pass of slim designs (`fdtd_step2`, see `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SlimPtrs {
    pub se: [u64; 3],
    pub sh: [u64; 3],
    pub blocks: u64,
    pub dgrp: u64,
    pub grp: u64,
    pub src_item: u64,
    pub tap: u64,
}

/// Threads per block of `fdtd_step2` (`EMV_SL_NT`): the most padded xy
/// positions a slim design may have (one a thread).
pub const SLIM_NT: usize = 512;
/// Pipeline stages of `fdtd_step2` (`EMV_SL_NS`).
pub const SLIM_NS: usize = 3;
/// Dynamic shared memory of one `fdtd_step2` block (`EMV_SL_FLOATS` floats).
pub const SLIM_SMEM: usize = ((6 * SLIM_NS + 18) * SLIM_NT + 512) * 4;

/// One recorded component of a field DFT monitor (see `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FdtdDftComp {
    pub acc_off: i64,
    pub tap_off: i64,
    pub design: i32,
    pub field: i32,
    pub n_samples: i32,
    pub taps: i32,
    pub nf: i32,
    pub slot: i32,
    pub sample_off: i64,
}

/// Device pointers of the field DFT kernel.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DftPtrs {
    pub e: [u64; 3],
    pub h: [u64; 3],
    pub designs: u64,
    pub comps: u64,
    pub sample_comp: u64,
    pub tap: u64,
    pub phase: u64,
    pub active: u64,
    pub acc_re: u64,
    pub acc_im: u64,
    pub n_samples: i64,
    pub pstride: i32,
    pub pad: i32,
}

// SAFETY: plain-old-data with the C layout the kernels expect (checked by the tests below).
unsafe impl cudarc::driver::DeviceRepr for FdtdDesign {}
unsafe impl cudarc::driver::DeviceRepr for FdtdPtrs {}
unsafe impl cudarc::driver::DeviceRepr for FdtdPort {}
unsafe impl cudarc::driver::DeviceRepr for PortPtrs {}
unsafe impl cudarc::driver::DeviceRepr for FdtdDftComp {}
unsafe impl cudarc::driver::DeviceRepr for DftPtrs {}
unsafe impl cudarc::driver::DeviceRepr for SlimPtrs {}
unsafe impl cudarc::driver::DeviceRepr for EdgePtrs {}
unsafe impl cudarc::driver::DeviceRepr for SurfacePtrs {}
unsafe impl cudarc::driver::DeviceRepr for ConformalPtrs {}

/// Names of the `extern "C" __global__` kernels declared in a `.cu` source
/// (test support: the twin checks).
#[cfg(test)]
pub fn kernel_names(src: &str) -> Vec<String> {
    let mut out = vec![];
    let key = "extern \"C\" __global__";
    let mut rest = src;
    while let Some(i) = rest.find(key) {
        rest = &rest[i + key.len()..];
        let head = &rest[..rest.find('{').unwrap_or(rest.len())];
        // Drop __launch_bounds__(...) so the first '(' left opens the parameter list.
        let head = match head.find("__launch_bounds__") {
            Some(j) => {
                let close = head[j..].find(')').map(|k| j + k + 1).unwrap_or(head.len());
                format!("{}{}", &head[..j], &head[close..])
            }
            None => head.to_string(),
        };
        if let Some(paren) = head.find('(') {
            let name: String = head[..paren].trim_end().chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(name.chars().rev().collect());
        }
    }
    out
}

/// C layout of the structs declared in a header: name -> (size, [(field, offset)]).
/// Understands one declaration per line of int, float, double, long long,
/// unsigned char and pointers, with fixed array extents. Test support (the
/// layout checks): it panics on a header it cannot read.
#[cfg(test)]
pub fn parse_c_structs(src: &str) -> Vec<(String, usize, Vec<(String, usize)>)> {
    let mut out = vec![];
    let mut cur: Option<(String, Vec<(String, usize, usize, usize)>)> = None;
    for raw in src.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if cur.is_none() {
            if let Some(rest) = line.strip_prefix("struct ") {
                if line.ends_with('{') {
                    cur = Some((rest.trim_end_matches('{').trim().to_string(), vec![]));
                }
            }
            continue;
        }
        if line.starts_with("};") {
            let (name, fields) = cur.take().unwrap();
            let mut off = 0usize;
            let mut align = 1usize;
            let mut offs = vec![];
            for (f, size, al, count) in fields {
                off = off.div_ceil(al) * al;
                offs.push((f, off));
                off += size * count;
                align = align.max(al);
            }
            out.push((name, off.div_ceil(align) * align, offs));
            continue;
        }
        let decl = line.trim_end_matches(';').trim();
        let pointer = decl.contains('*');
        let decl = decl.replace('*', " ");
        let toks: Vec<&str> = decl.split_whitespace().collect();
        let (ty, name) = toks.split_at(toks.len() - 1);
        let mut name = name[0].to_string();
        let mut count = 1usize;
        while let Some(b) = name.find('[') {
            let e = name[b..].find(']').map(|k| b + k).expect("unclosed [");
            count *= name[b + 1..e].trim().parse::<usize>().expect("array extent must be a number");
            name = format!("{}{}", &name[..b], &name[e + 1..]);
        }
        let ty: Vec<&str> = ty.iter().copied().filter(|t| *t != "const" && *t != "unsigned").collect();
        let size = if pointer {
            8
        } else {
            match ty.as_slice() {
                ["int"] => 4,
                ["float"] => 4,
                ["double"] => 8,
                ["long", "long"] => 8,
                ["char"] => 1,
                other => panic!("unsupported type {other:?} in header line '{raw}'"),
            }
        };
        cur.as_mut().unwrap().1.push((name, size, size, count));
    }
    out
}

/// Test support shared by the FDTD and TLM ABI checks.
#[cfg(test)]
pub(crate) mod layout_check {
    /// (size, [(field, offset)]) of a `#[repr(C)]` struct, for [`check`].
    macro_rules! layout {
        ($t:ty; $($f:ident),* $(,)?) => {
            (std::mem::size_of::<$t>(), vec![$((stringify!($f).to_string(), std::mem::offset_of!($t, $f))),*])
        };
    }
    pub(crate) use layout;

    /// Compare a Rust struct's layout with the declaration of the same name in
    /// `header` (file name `file`); names compare in lower case (C's `L` is `l`).
    pub fn check(header: &str, file: &str, name: &str, rust: (usize, Vec<(String, usize)>)) {
        let parsed = super::parse_c_structs(header);
        let (_, size, fields) = parsed.iter().find(|(n, _, _)| n == name).unwrap_or_else(|| panic!("struct {name} not in {file}"));
        let c: Vec<(String, usize)> = fields.iter().map(|(f, o)| (f.to_lowercase(), *o)).collect();
        assert_eq!(c, rust.1, "{name}: field names/offsets differ between {file} and the Rust mirror");
        assert_eq!(*size, rust.0, "{name}: size differs between {file} and the Rust mirror");
    }
}

#[cfg(test)]
mod tests {
    use super::layout_check::layout;
    use super::*;

    fn check(name: &str, rust: (usize, Vec<(String, usize)>)) {
        layout_check::check(COMMON_CUH, "common.cuh", name, rust);
    }

    #[test]
    fn repr_c_structs_match_common_cuh() {
        check("FdtdDesign", layout!(FdtdDesign; off, psi_off, n, dims, tiles, zchunk, nchunks, coef_off, ncoef, pmc, prof_off, slab_n, db, line_off, zcut, zn, zlen, org));
        check(
            "FdtdPtrs",
            layout!(FdtdPtrs; e, h, e_out, h_out, mat, ca, cb, eps, pe_b, pe_c, pe_k, ph_b, ph_c, ph_k, slab_e, slab_h, psi_e, psi_h, psi_h_out, psi_e_out, designs, blocks, inv_e, inv_h, rel_e, rel_h),
        );
        check("FdtdPort", layout!(FdtdPort; dl, d_a, d_b, i_sign, design, kind, comp_e, comp_h, term_off, n_terms, mid, s_a, s_b, pad));
        check(
            "PortPtrs",
            layout!(PortPtrs; e, h, designs, ports, t_idx0, t_idx1, t_idx2, t_w, src_design, src_comp, src_idx, src_coef, gval, active, tv, ti, n_src, n_ports, gstride, tstride),
        );
        check("EdgePtrs", layout!(EdgePtrs; e, designs, active, design, comp, idx, s, g0, inv_den, first, e_prev, kp, kd, q0, q1, p, dd, n_edges, pad));
        check("SurfacePtrs", layout!(SurfacePtrs; e, h, designs, active, design, comp, idx, k, inv_den, kb, first, cell0, alpha, beta, rho, h_prev, psi, dh, e_design, e_comp, e_idx, e_first, e_term, e_w, n_terms, n_reads));
        check("ConformalPtrs", layout!(ConformalPtrs; e, h, designs, active, design, comp, idx, src_comp, src_idx, src_w, pending, e_design, e_comp, e_idx, e_first, e_term, e_w, n_terms, n_reads));
        check("SlimPtrs", layout!(SlimPtrs; se, sh, blocks, dgrp, grp, src_item, tap));
        check("FdtdDftComp", layout!(FdtdDftComp; acc_off, tap_off, design, field, n_samples, taps, nf, slot, sample_off));
        check("DftPtrs", layout!(DftPtrs; e, h, designs, comps, sample_comp, tap, phase, active, acc_re, acc_im, n_samples, pstride, pad));
        // Every struct of the header is mirrored.
        let names: Vec<String> = parse_c_structs(COMMON_CUH).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["FdtdDesign", "FdtdPtrs", "FdtdPort", "PortPtrs", "EdgePtrs", "SurfacePtrs", "ConformalPtrs", "SlimPtrs", "FdtdDftComp", "DftPtrs"]);
    }

    #[test]
    fn layout_parser_applies_c_alignment() {
        let s = parse_c_structs("struct T {\n  int a;\n  double b;\n  int c[3];\n  float* p;\n};\n");
        assert_eq!(s[0].1, 40);
        assert_eq!(s[0].2, vec![("a".to_string(), 0), ("b".to_string(), 8), ("c".to_string(), 16), ("p".to_string(), 32)]);
    }

    #[test]
    fn every_kernel_has_a_cpu_twin() {
        let cpu = include_str!("../fdtd/cpu.rs");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut all = vec![];
        for ent in std::fs::read_dir(&dir).unwrap() {
            let p = ent.unwrap().path();
            // tlm.cu and tlm_onchip.cu have their own twins in src/engine/tlm (checked in cuda/tlm/abi.rs).
            let tlm = p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("tlm"));
            // Kernels in headers count too (fdtd_slim.cuh's, included by fdtd.cu).
            if p.extension().is_some_and(|e| e == "cu" || e == "cuh") && !tlm {
                all.extend(kernel_names(&std::fs::read_to_string(&p).unwrap()));
            }
        }
        all.sort();
        assert_eq!(
            all,
            [
                "fdtd_conformal",
                "fdtd_conformal_e",
                "fdtd_conformal_rec",
                "fdtd_dft",
                "fdtd_edges",
                "fdtd_energy",
                "fdtd_inject",
                "fdtd_onchip",
                "fdtd_pmc_ghosts",
                "fdtd_sample_ports",
                "fdtd_step",
                "fdtd_step2",
                "fdtd_surface",
                "fdtd_surface_e",
                "fdtd_update_e",
                "fdtd_update_h"
            ],
            "kernels found in kernels/*.cu"
        );
        for k in &all {
            assert!(cpu.contains(&format!("pub fn {k}(")), "kernel {k} has no CPU twin `pub fn {k}(` in src/engine/fdtd/cpu.rs");
        }
        // The embedded source is the file on disk, with the header inlined.
        assert_eq!(kernel_names(&kernel_source()).len() + kernel_names(ONCHIP_CU).len(), all.len());
        // The module's kernels in the order of KERNELS (the launch indices).
        assert_eq!(kernel_names(&kernel_source()), KERNELS);
        assert!(!kernel_source().contains("#include"));
        assert!(!onchip_source().contains("#include"));
    }

    #[test]
    fn slim_constants_match_the_kernel() {
        // The host sizes fdtd_step2's blocks and dynamic shared memory from these.
        assert!(SLIM_CUH.contains(&format!("#define EMV_SL_NT {SLIM_NT}\n")));
        assert!(SLIM_CUH.contains(&format!("#define EMV_SL_NS {SLIM_NS}\n")));
        assert!(SLIM_CUH.contains("#define EMV_SL_FLOATS ((6 * EMV_SL_NS + 18) * EMV_SL_NT + 512)"));
        assert_eq!(SLIM_SMEM, ((6 * SLIM_NS + 18) * SLIM_NT + 512) * 4);
    }

    #[test]
    fn kernel_name_parser_skips_launch_bounds() {
        let src = "extern \"C\" __global__ void __launch_bounds__(256) foo(int a) {}\nextern \"C\" __global__ void bar(P p) {}";
        assert_eq!(kernel_names(src), ["foo", "bar"]);
    }
}
