//! The on-chip FDTD path (`kernels/fdtd_onchip.cu`): which designs take it,
//! which field components their blocks store ([`pattern`]) and how much
//! shared memory each needs ([`Layout`]). One thread block holds a whole
//! design (the stored components over one box of padded positions, their
//! materials, coefficients, per-line tables, CPML memories, port and source
//! indices, the chunk's source values) in shared memory and runs a chunk of
//! the stepping loop, one or several energy checks long, in one launch. A
//! design that does not fit a block's shared memory takes the streaming
//! kernels; [`plan_design`] says which and why. Pure Rust, tested without a GPU.

use super::abi;
use crate::engine::device::ModuleSpec;
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::Operator;

/// The kernels of `kernels/fdtd_onchip.cu`, in launch order.
pub const KERNELS: [&str; 1] = ["fdtd_onchip"];

/// Coefficient entries the kernel reserves (`EMV_OC_NCOEF`).
const NCOEF: usize = 256;

/// The on-chip module for blocks of `threads` threads, its step loop compiled
/// for the stored-component patterns `patterns` (of [`PATTERNS`]; all of them when empty).
pub fn module(threads: usize, patterns: &[u8]) -> ModuleSpec {
    let mut defines = vec![format!("-DEMV_OC_NT={threads}")];
    if !patterns.is_empty() {
        let mut p: Vec<u8> = patterns.to_vec();
        p.sort();
        p.dedup();
        defines.push("-DEMV_OC_SET=1".into());
        defines.extend(p.iter().map(|x| format!("-DEMV_OC_P{x}=1")));
    }
    ModuleSpec { name: "fdtd_onchip", source: abi::onchip_source(), defines, kernels: KERNELS.to_vec(), fallback: None }
}

/// Threads per block must be whole warps, at least two (the port warp and one
/// updating), a power of two (the energy reduction) and at most 1024.
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
    /// The components its block stores and updates (bits E0 E1 E2 H0 H1 H2).
    pub pattern: u8,
}

/// Shared memory the kernel keeps for its static variables (the layout, the
/// reduction's scratch, the port warp's products: 1.8 KiB).
const STATIC_RESERVE: usize = 2048;

/// The stored-component masks the kernel's step loop is compiled for
/// (fdtd_onchip.cu EMV_OC_CASE), fewest components first: the 2.5D sets
/// (E along the invariant axis with the two H across it, or the reverse),
/// then all six.
pub const PATTERNS: [u8; 7] = [42, 49, 28, 14, 21, 35, 63];

/// The components design `op` (driving port `drive`) must store: those the
/// CPU updates (a row that is not all PEC; H reading such a row), those a
/// source writes, an E holding a non-zero value in `init` (a stored H may
/// read it), an H holding one that a port reads; then the first of
/// [`PATTERNS`] holding them all. The CPU never updates the others (it skips
/// their rows): an E among them stays zero, an H keeps its value, which only
/// the energy sums (the kernel adds it from the pool), so the block neither
/// stores nor updates them.
pub fn pattern(op: &Operator, drive: usize, init: Option<&Fields>) -> u8 {
    let mut need = 0u8;
    let mut port_h = 0u8;
    for pi in 0..op.lumped.len() {
        if let Some(l) = &op.lumped[pi] {
            port_h |= (8 << ((l.comp + 1) % 3)) | (8 << ((l.comp + 2) % 3));
        } else if let Some(w) = &op.guides[pi] {
            port_h |= 8 << w.comp_h;
        }
    }
    for c in 0..3 {
        if op.e_rows[c].iter().any(|&r| r) {
            need |= 1 << c;
        }
        if op.h_rows[c].iter().any(|&r| r) {
            need |= 8 << c;
        }
        if let Some(f) = init {
            if f.e[c].iter().any(|&x| x != 0.0) {
                need |= 1 << c;
            }
            if f.h[c].iter().any(|&x| x != 0.0) {
                need |= port_h & (8 << c);
            }
        }
    }
    if drive < op.lumped.len() {
        if let Some(l) = &op.lumped[drive] {
            need |= 1 << l.comp;
        }
        if let Some(w) = &op.guides[drive] {
            need |= 1 << w.comp_e;
        }
    }
    PATTERNS.iter().copied().find(|&p| p & need == need).unwrap_or(63)
}

fn r4(x: usize) -> usize {
    x.div_ceil(4) * 4
}

/// Top of the update range along `a` of E_c (`h` false) or H_c (padded;
/// from 1): cpu.rs e_range and h_range.
pub fn utop(op: &Operator, h: bool, c: usize, a: usize) -> usize {
    match (h, a == c) {
        (false, true) => op.n[a],
        (false, false) => op.n[a] + 1,
        (true, true) => op.n[a] + 1,
        (true, false) => op.n[a],
    }
}

/// H_c is read along `a` by a stored E update (E_(3-a-c)): its ghost layers along `a` are stored.
fn ghost(u: u8, c: usize, a: usize) -> bool {
    a != c && (u >> (3 - a - c)) & 1 == 1
}

/// The block's layout of a design with stored components `u` (fdtd_onchip.cu
/// oc_layout and "Carve the shared memory": the same order and sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub u: u8,
    /// The box of stored positions: padded q from `lo[a]`, `m[a]` of them.
    pub lo: [usize; 3],
    pub m: [usize; 3],
    /// The union of the stored components' update ranges (q from 1 to `top[a]`).
    pub top: [usize; 3],
    /// Floats per stored component.
    pub bs: usize,
    /// Floats of the field area (the stored components and a zero slot).
    pub nf: usize,
    /// Floats of the per-line tables and of the CPML memories.
    pub ntab: usize,
    pub npsi: usize,
}

impl Layout {
    pub fn new(op: &Operator, u: u8) -> Layout {
        let (mut lo, mut m, mut top) = ([1; 3], [0; 3], [0; 3]);
        for a in 0..3 {
            let (mut g, mut hi, mut t) = (false, 0, 0);
            for c in 0..3 {
                if (u >> (3 + c)) & 1 == 1 {
                    let gc = ghost(u, c, a);
                    g |= gc;
                    hi = hi.max(if a == c { op.n[a] + 1 } else { op.n[a] + gc as usize });
                    t = t.max(utop(op, true, c, a));
                }
                if (u >> c) & 1 == 1 {
                    hi = hi.max(utop(op, false, c, a));
                    t = t.max(utop(op, false, c, a));
                }
            }
            lo[a] = if g { 0 } else { 1 };
            m[a] = hi + 1 - lo[a];
            top[a] = t;
        }
        let bs = r4(m[0] * m[1] * m[2]);
        let nf = u.count_ones() as usize * bs + 4;
        let ntab = (0..3).map(|a| op.dims[a] * if super::batch::slab_count(op, a).is_some() { 12 } else { 4 }).sum();
        let mut npsi = 0;
        for h in 0..2 {
            for c in 0..3 {
                for a in 0..3 {
                    if a != c && (u >> (3 * h + c)) & 1 == 1 && op.pml[a].is_some() {
                        if let Some(sn) = super::batch::slab_count(op, a) {
                            npsi += r4(sn * (0..3).filter(|&b| b != a).map(|b| m[b]).product::<usize>());
                        }
                    }
                }
            }
        }
        Layout { u, lo, m, top, bs, nf, ntab, npsi }
    }

    /// Whether padded position `p` of the design lies in the box.
    pub fn in_box(&self, op: &Operator, p: usize) -> bool {
        let q = coords(op, p);
        (0..3).all(|a| q[a] >= self.lo[a] && q[a] < self.lo[a] + self.m[a])
    }

    /// Dynamic shared memory (bytes) with `nterm` port terms, `nsrc` source
    /// points, `nport` ports and source values for `gstride` steps: the field
    /// area, the terms' weights and four constants a port (doubles, an even
    /// count), the coefficient tables, the source values, the per-line tables,
    /// the CPML memories, three index tables of the port terms, four indices and
    /// three numbers a port, the sources' indices, coefficients and owners, one
    /// material byte a position of each stored E.
    pub fn bytes(&self, nterm: usize, nsrc: usize, nport: usize, gstride: usize) -> usize {
        let doubles = (nterm + 4 * nport).div_ceil(2) * 2;
        let words = self.nf + 2 * doubles + 2 * NCOEF + r4(gstride) + self.ntab + self.npsi + 3 * nterm + 7 * nport + 3 * nsrc;
        4 * words + (self.u & 7).count_ones() as usize * self.bs
    }
}

/// Port terms, sources and ports of design `op` driving port `drive`, as
/// `batch::Plan` packs them (the kernel maps each to its storage index).
fn port_counts(op: &Operator, drive: usize) -> (usize, usize, usize) {
    let (mut nterm, mut nport) = (0, 0);
    for pi in 0..op.lumped.len() {
        if let Some(l) = &op.lumped[pi] {
            nterm += l.edges.len();
            nport += 1;
        } else if let Some(w) = &op.guides[pi] {
            nterm += w.v_idx.len();
            nport += 1;
        }
    }
    let mut nsrc = 0;
    if drive < op.lumped.len() {
        if let Some(l) = &op.lumped[drive] {
            nsrc += l.edges.len();
        }
        if let Some(w) = &op.guides[drive] {
            nsrc += w.src_idx.len();
        }
    }
    (nterm, nsrc, nport)
}

/// Padded coordinates of element `p` of a design's arrays.
fn coords(op: &Operator, p: usize) -> [usize; 3] {
    [p % op.dims[0], (p / op.dims[0]) % op.dims[1], p / op.stride[2]]
}

/// Whether padded position `p` is in the update range of E_c / H_c (`h`).
fn in_range(op: &Operator, h: bool, c: usize, p: usize) -> bool {
    let q = coords(op, p);
    (0..3).all(|a| q[a] >= 1 && q[a] <= utop(op, h, c, a))
}

/// Whether design `op` (driving port `drive`, from the fields `init` or
/// zero) runs on-chip within `max_shared` bytes per block with source values
/// for `gstride` steps, and how; Err says why not.
pub fn plan_design(op: &Operator, drive: usize, max_shared: usize, gstride: usize, init: Option<&Fields>) -> Result<OnchipFit, String> {
    if max_shared == 0 {
        return Err("the device has no on-chip kernel".into());
    }
    if op.ca.len() > NCOEF {
        return Err(format!("{} material coefficients (at most {NCOEF})", op.ca.len()));
    }
    // The kernel keeps the slab numbers of x and y in signed bytes.
    for a in 0..2 {
        if super::batch::slab_count(op, a).is_some_and(|s| s > 127) {
            return Err(format!("a CPML slab of more than 127 cells along {}", ["x", "y"][a]));
        }
    }
    let u = pattern(op, drive, init);
    let lay = Layout::new(op, u);
    // Every position a port reads is in the box (or its component is not
    // stored: zero); every source point is in its component's update range
    // (the thread updating it adds the source).
    let reads = |h: bool, c: usize, p: usize| (u >> (3 * h as usize + c)) & 1 == 0 || lay.in_box(op, p);
    let mut srcs = vec![];
    for pi in 0..op.lumped.len() {
        if let Some(l) = &op.lumped[pi] {
            let c = l.comp;
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (sa, sb) = (op.stride[a], op.stride[b]);
            let mid_ok = l.mid >= sa.max(sb) && reads(true, b, l.mid) && reads(true, b, l.mid - sa) && reads(true, a, l.mid) && reads(true, a, l.mid - sb);
            if !l.edges.iter().all(|&p| reads(false, c, p)) || !mid_ok {
                return Err(format!("lumped port {pi} touches the boundary layer"));
            }
            if pi == drive {
                srcs.extend(l.edges.iter().map(|&p| (c, p)));
            }
        } else if let Some(w) = &op.guides[pi] {
            let e_ok = w.v_idx.iter().all(|&p| reads(false, w.comp_e, p));
            let h_ok = w.h_lo.iter().chain(&w.h_hi).all(|&p| reads(true, w.comp_h, p));
            if !e_ok || !h_ok {
                return Err(format!("waveguide port {pi} touches the boundary layer"));
            }
            if pi == drive {
                srcs.extend(w.src_idx.iter().map(|&p| (w.comp_e, p)));
            }
        }
    }
    if !srcs.iter().all(|&(c, p)| in_range(op, false, c, p)) {
        return Err("a source point lies outside its component's update range".into());
    }
    // Sources are added in parallel: each point once.
    let n = srcs.len();
    srcs.sort();
    srcs.dedup();
    if srcs.len() != n {
        return Err("the driven port's source points repeat".into());
    }
    let room = max_shared.saturating_sub(STATIC_RESERVE);
    let (nterm, nsrc, nport) = port_counts(op, drive);
    let bytes = lay.bytes(nterm, nsrc, nport, gstride);
    if bytes <= room {
        Ok(OnchipFit { bytes, pattern: u })
    } else {
        Err(format!("needs {:.0} KiB of shared memory per block, the device gives {:.0} KiB", bytes as f64 / 1024.0, room as f64 / 1024.0))
    }
}

/// Modelled shared-memory bytes of one on-chip step of `op` with stored
/// components `u`: per update of a stored H, its own value read and written
/// and two reads of each stored E it differentiates; per update of a stored
/// E, the same of the stored H, the material byte and two coefficients.
pub fn step_smem_bytes(op: &Operator, u: u8) -> f64 {
    let mut b = 0.0;
    for h in [false, true] {
        for c in 0..3 {
            if (u >> (3 * h as usize + c)) & 1 == 0 {
                continue;
            }
            let count: usize = (0..3).map(|a| utop(op, h, c, a)).product();
            let other = if h { 0 } else { 3 };
            let reads = [(c + 1) % 3, (c + 2) % 3].iter().filter(|&&x| (u >> (other + x)) & 1 == 1).count();
            b += count as f64 * (8.0 + 8.0 * reads as f64 + if h { 0.0 } else { 9.0 });
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::*;

    #[test]
    fn small_designs_fit_and_large_ones_say_why_not() {
        // The CPU emulation's cavity (PEC walls, a lossy block, no port) and a 40^3 box.
        let small = crate::dev::device_check::random_jobs(true, 10).remove(0);
        let big = crate::bench::box_job(40, 10);
        let (os, ob) = (Operator::new(&small).unwrap(), Operator::new(&big).unwrap());
        let fit = plan_design(&os, 0, 232_448, 256, None).unwrap();
        assert_eq!(fit.pattern, 63);
        assert!(fit.bytes <= 232_448 && fit.bytes >= 25 * os.n.iter().product::<usize>());
        // Exactly the room it needs (and the kernel's static reserve) is enough.
        assert_eq!(plan_design(&os, 0, fit.bytes + STATIC_RESERVE, 256, None).unwrap(), fit);
        assert!(plan_design(&os, 0, fit.bytes + STATIC_RESERVE - 4, 256, None).is_err());
        let e = plan_design(&ob, 0, 232_448, 256, None).unwrap_err();
        assert!(e.contains("KiB"), "{e}");
        assert!(plan_design(&os, 0, 0, 256, None).is_err());
        // All six stored: the box holds the H ghost layers below (E reads them) and the nodes up to n + 1.
        let lay = Layout::new(&os, 63);
        assert_eq!(lay.lo, [0; 3]);
        assert_eq!(lay.m, [os.n[0] + 2, os.n[1] + 2, os.n[2] + 2]);
        assert_eq!(lay.top, [os.n[0] + 1, os.n[1] + 1, os.n[2] + 1]);
        assert!(validate_threads(1024).is_ok() && validate_threads(96).is_err() && validate_threads(32).is_err());
    }

    #[test]
    fn a_2p5d_filter_stores_half_its_components() {
        // The shipped iris filter's midpoint: one cell along y (E_y, H_x, H_z live), CPML along z.
        let design = crate::design::Design::load(std::path::Path::new("designs/wr28_iris_filter.ron")).unwrap();
        let jobs = design.jobs(&design.midpoint_values(), &[0], None).unwrap();
        let op = Operator::new(&jobs[0]).unwrap();
        assert_eq!(op.n[1], 1);
        assert_eq!(pattern(&op, 0, None), 2 | 8 | 32);
        let lay = Layout::new(&op, 42);
        // E_y reads H_z along x and H_x along z (their ghosts stored), nothing along y.
        assert_eq!(lay.lo, [0, 1, 0]);
        assert_eq!(lay.m, [op.n[0] + 2, 1, op.n[2] + 2]);
        assert_eq!(lay.top, [op.n[0] + 1, 1, op.n[2] + 1]);
        let fit = plan_design(&op, 0, 232_448, 512, None).unwrap();
        assert_eq!(fit.pattern, 42);
        // Three components over the box, about 12 B a cell each, and small tables.
        let cells = op.n.iter().product::<usize>();
        assert!(fit.bytes < 16 * cells + 16_000, "{} B for {cells} cells", fit.bytes);
        // A non-zero E_x in the initial fields must be stored (H_z differentiates it): all
        // six then; a non-zero H_y only counts in the energy, which the kernel takes from the pool.
        let mut f = Fields::new(&op);
        f.h[1][op.at(3, 0, 5)] = 1.0;
        assert_eq!(pattern(&op, 0, Some(&f)), 42);
        f.e[0][op.at(3, 0, 5)] = 1.0;
        assert_eq!(pattern(&op, 0, Some(&f)), 63);
        assert!(step_smem_bytes(&op, 42) < step_smem_bytes(&op, 63));
    }

    #[test]
    fn ports_on_pmc_faces_read_the_stored_mirrors() {
        let mut j = crate::bench::box_job(8, 10);
        // PMC faces: an edge on them is no short circuit; the loop around it reads the
        // mirror ghosts below x = 0 and y = 0, which the block stores (all six components).
        j.boundaries = [[Boundary::Pmc; 2]; 3];
        j.pml = [[0; 2]; 3];
        j.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [0, 0, 2], len: 2, r_ohm: 50.0 } }];
        let op = Operator::new(&j).unwrap();
        let fit = plan_design(&op, 0, 232_448, 256, None).unwrap();
        assert_eq!(fit.pattern, 63);
        assert_eq!(Layout::new(&op, 63).lo, [0; 3]);
    }
}
