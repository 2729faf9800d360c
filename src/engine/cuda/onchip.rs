//! The on-chip FDTD path (`kernels/fdtd_onchip.cu`): which designs take it
//! and how much shared memory each needs. One thread block holds a whole
//! design (fields, materials, coefficients, port and source indices, the
//! chunk's source values and, when they fit, the CPML memories) in shared
//! memory and runs the stepping loop's chunk of steps in one launch. A design
//! that does not fit a block's shared memory (or whose ports touch the ghost
//! layer) takes the streaming kernels; [`plan_design`] says which and why.
//! Pure Rust, tested without a GPU.

use super::abi;
use crate::engine::device::ModuleSpec;
use crate::engine::fdtd::Operator;

/// The kernels of `kernels/fdtd_onchip.cu`, in launch order.
pub const KERNELS: [&str; 1] = ["fdtd_onchip"];

/// Coefficient entries the kernel reserves (`EMV_OC_NCOEF`).
const NCOEF: usize = 256;

/// The on-chip module for blocks of `threads` threads.
pub fn module(threads: usize) -> ModuleSpec {
    ModuleSpec { name: "fdtd_onchip", source: abi::onchip_source(), defines: vec![format!("-DEMV_OC_NT={threads}")], kernels: KERNELS.to_vec(), fallback: None }
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
    /// The material indices live in shared memory (else the E update reads them from the pool).
    pub mat_shared: bool,
}

/// Shared memory the kernel keeps for its static variables (the layout).
const STATIC_RESERVE: usize = 512;

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

fn r4(x: usize) -> usize {
    x.div_ceil(4) * 4
}

/// Stored extent along axis `a` of E_c (`h` false) or H_c (fdtd_onchip.cu
/// oc_ext): E_c its update range (n along c, n + 1 across); H_c n + 1 along
/// c and, across, n, one more where that face is a PMC (its mirror ghost).
pub fn extent(op: &Operator, h: bool, c: usize, a: usize) -> usize {
    match (h, a == c) {
        (false, true) => op.n[a],
        (false, false) => op.n[a] + 1,
        (true, true) => op.n[a] + 1,
        (true, false) => op.n[a] + op.pmc[a][1] as usize,
    }
}

/// Shared memory of a design's block, in the kernel's order (fdtd_onchip.cu
/// oc_layout and "Carve the shared memory"): E_0..2 and H_0..2 over their
/// extents (each rounded up to 4 floats), the port terms' weights and four
/// constants a port (doubles), the coefficient tables, `gstride`
/// source values, the per-line tables (2 words a padded position, 10 on an
/// axis with PML), the CPML memories (slab positions along their axis, the
/// component's extents across), three index tables of the port terms, the
/// sources, four indices and three numbers per port, the sources'
/// coefficients, one material byte per E position; at
/// least the energy reduction's two doubles per thread.
pub fn onchip_bytes(op: &Operator, drive: usize, gstride: usize, mat_shared: bool, threads: usize) -> usize {
    let mut fields = 0;
    let mut e_area = 0;
    for h in [false, true] {
        for c in 0..3 {
            fields += r4((0..3).map(|a| extent(op, h, c, a)).product());
        }
        if !h {
            e_area = fields;
        }
    }
    let mut psi = 0;
    for h in [false, true] {
        for c in 0..3 {
            for a in 0..3 {
                if a != c && op.pml[a].is_some() {
                    if let Some(sn) = super::batch::slab_count(op, a) {
                        psi += r4(sn * (0..3).filter(|&b| b != a).map(|b| extent(op, h, c, b)).product::<usize>());
                    }
                }
            }
        }
    }
    let tab: usize = (0..3).map(|a| r4(op.dims[a]) * if super::batch::slab_count(op, a).is_some() { 10 } else { 2 }).sum();
    let (nterm, nsrc, nport) = port_counts(op, drive);
    // Doubles after the fields: the terms' weights, four port constants a port.
    let doubles = nterm + 4 * nport;
    let words = fields + 2 * doubles + 2 * NCOEF + r4(gstride) + tab + psi + 3 * nterm + nsrc + 4 * nport + 3 * nport + nsrc;
    (4 * words + if mat_shared { e_area } else { 0 }).max(16 * threads)
}

/// Padded coordinates of element `p` of a design's arrays.
fn coords(op: &Operator, p: usize) -> [usize; 3] {
    [p % op.dims[0], (p / op.dims[0]) % op.dims[1], p / op.stride[2]]
}

/// Whether padded position `p` is stored for E_c / H_c (q from 1 to the extent).
fn stored(op: &Operator, h: bool, c: usize, p: usize) -> bool {
    let q = coords(op, p);
    (0..3).all(|a| q[a] >= 1 && q[a] <= extent(op, h, c, a))
}

/// Whether design `op` (driving port `drive`) runs on-chip within `max_shared`
/// bytes per block, and how; Err says why not.
pub fn plan_design(op: &Operator, drive: usize, max_shared: usize, gstride: usize, threads: usize) -> Result<OnchipFit, String> {
    if max_shared == 0 {
        return Err("the device has no on-chip kernel".into());
    }
    if op.ca.len() > NCOEF {
        return Err(format!("{} material coefficients (at most {NCOEF})", op.ca.len()));
    }
    // Every position the ports and sources touch is stored for its component
    // (the lumped current loop reaches one position below its middle along the
    // two other axes).
    let mut srcs = vec![];
    for pi in 0..op.lumped.len() {
        if let Some(l) = &op.lumped[pi] {
            let c = l.comp;
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (sa, sb) = (op.stride[a], op.stride[b]);
            let mid_ok = l.mid >= sa.max(sb) && stored(op, true, b, l.mid) && stored(op, true, b, l.mid - sa) && stored(op, true, a, l.mid) && stored(op, true, a, l.mid - sb);
            if !l.edges.iter().all(|&p| stored(op, false, c, p)) || !mid_ok {
                return Err(format!("lumped port {pi} touches the boundary layer"));
            }
            if pi == drive {
                srcs.extend(l.edges.iter().map(|&p| (c, p)));
            }
        } else if let Some(w) = &op.guides[pi] {
            let e_ok = w.v_idx.iter().chain(&w.src_idx).all(|&p| stored(op, false, w.comp_e, p));
            let h_ok = w.h_lo.iter().chain(&w.h_hi).all(|&p| stored(op, true, w.comp_h, p));
            if !e_ok || !h_ok {
                return Err(format!("waveguide port {pi} touches the boundary layer"));
            }
            if pi == drive {
                srcs.extend(w.src_idx.iter().map(|&p| (w.comp_e, p)));
            }
        }
    }
    // The port warp adds the sources in parallel: each point once.
    let n = srcs.len();
    srcs.sort();
    srcs.dedup();
    if srcs.len() != n {
        return Err("the driven port's source points repeat".into());
    }
    let room = max_shared.saturating_sub(STATIC_RESERVE);
    let all = onchip_bytes(op, drive, gstride, true, threads);
    let no_mat = onchip_bytes(op, drive, gstride, false, threads);
    if all <= room {
        Ok(OnchipFit { bytes: all, mat_shared: true })
    } else if no_mat <= room {
        Ok(OnchipFit { bytes: no_mat, mat_shared: false })
    } else {
        Err(format!("needs {:.0} KiB of shared memory per block, the device gives {:.0} KiB", no_mat as f64 / 1024.0, room as f64 / 1024.0))
    }
}

/// Modelled shared-memory bytes of one on-chip step of `op`: per updated
/// component sample, the H update reads four E and its own H and writes H
/// (24 B); the E update reads four H, its own E, the material byte and two
/// coefficients and writes E (33 B).
pub fn step_smem_bytes(op: &Operator) -> f64 {
    op.n.iter().product::<usize>() as f64 * 3.0 * (24.0 + 33.0)
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
        let fit = plan_design(&os, 0, 232_448, 256, 1024).unwrap();
        assert!(fit.bytes <= 232_448 && fit.bytes >= 25 * os.n.iter().product::<usize>());
        assert!(fit.mat_shared);
        // Exactly the room it needs (and the kernel's static reserve) is enough; with a
        // little less the material indices stay in the pool, with less still it does not fit.
        assert!(plan_design(&os, 0, fit.bytes + STATIC_RESERVE, 256, 1024).unwrap().mat_shared);
        let lean = plan_design(&os, 0, fit.bytes + STATIC_RESERVE - 4, 256, 1024).unwrap();
        assert!(!lean.mat_shared && lean.bytes < fit.bytes);
        assert!(plan_design(&os, 0, lean.bytes + STATIC_RESERVE - 4, 256, 1024).is_err());
        let e = plan_design(&ob, 0, 232_448, 256, 1024).unwrap_err();
        assert!(e.contains("KiB"), "{e}");
        assert!(plan_design(&os, 0, 0, 256, 1024).is_err());
        // E_c stores n along its own axis, H_c n + 1 (and n across without PMC).
        assert_eq!(extent(&os, false, 0, 0), os.n[0]);
        assert_eq!(extent(&os, true, 0, 0), os.n[0] + 1);
        assert_eq!(extent(&os, true, 0, 1), os.n[1] + os.pmc[1][1] as usize);
        // The energy reduction's scratch is the floor.
        assert!(onchip_bytes(&os, 0, 0, true, 1024) >= 16 * 1024);
        assert!(validate_threads(1024).is_ok() && validate_threads(96).is_err() && validate_threads(32).is_err());
    }

    #[test]
    fn ports_on_the_ghost_layer_are_refused() {
        let mut j = crate::bench::box_job(8, 10);
        // PMC faces: an edge on them is no short circuit, but the loop around it leaves the grid.
        j.boundaries = [[Boundary::Pmc; 2]; 3];
        j.pml = [[0; 2]; 3];
        j.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [0, 0, 2], len: 2, r_ohm: 50.0 } }];
        let op = Operator::new(&j).unwrap();
        // The current loop of an edge on the x = 0 and y = 0 faces reaches the ghost layer.
        assert!(plan_design(&op, 0, 232_448, 256, 1024).unwrap_err().contains("boundary layer"));
    }
}
