//! The on-chip FDTD path (`kernels/fdtd_onchip.cu`): which designs take it
//! and how much shared memory each needs. One thread block holds a whole
//! design (fields, materials, coefficients, port and source indices, the
//! chunk's source values and, when they fit, the CPML memories) in shared
//! memory and runs the stepping loop's chunk of steps in one launch. A design
//! that does not fit a block's shared memory (or whose ports touch the ghost
//! layer) takes the streaming kernels; [`plan_design`] says which and why.
//! Pure Rust, tested without a GPU.

use super::abi;
use super::batch::psi_elems;
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
    /// The CPML memories live in shared memory (else in the global pool).
    pub psi_shared: bool,
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

/// Shared memory of a design's block, in the kernel's order (fdtd_onchip.cu
/// "Carve the shared memory"): six field arrays over the stored positions
/// (padded positions 1..dims-1 of every axis, rounded up to 4), the
/// coefficient tables, `gstride` source values, the CPML memories (E and H,
/// when shared), three index tables of the port terms, the sources, one
/// index per port, the three material arrays; at least the energy
/// reduction's two doubles per thread.
pub fn onchip_bytes(op: &Operator, drive: usize, gstride: usize, psi_shared: bool, threads: usize) -> usize {
    let stored: usize = op.dims.iter().map(|d| d - 1).product();
    let ls = stored.div_ceil(4) * 4;
    let (nterm, nsrc, nport) = port_counts(op, drive);
    let psi = if psi_shared { 2 * psi_elems(op) } else { 0 };
    let words = 6 * ls + 2 * NCOEF + gstride + psi + 3 * nterm + nsrc + nport;
    (4 * words + 3 * ls).max(16 * threads)
}

/// Padded coordinates of element `p` of a design's arrays.
fn coords(op: &Operator, p: usize) -> [usize; 3] {
    [p % op.dims[0], (p / op.dims[0]) % op.dims[1], p / op.stride[2]]
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
    // Every position the ports and sources touch lies off the ghost layer
    // (the kernel does not store it); the lumped current loop also reaches one
    // position below its middle along the two other axes.
    let inner = |p: usize, need: [usize; 3]| coords(op, p).iter().zip(need).all(|(q, n)| *q >= n);
    let mut srcs = vec![];
    for pi in 0..op.lumped.len() {
        if let Some(l) = &op.lumped[pi] {
            let c = l.comp;
            let mut need = [2; 3];
            need[c] = 1;
            if !l.edges.iter().all(|&p| inner(p, [1; 3])) || !inner(l.mid, need) {
                return Err(format!("lumped port {pi} touches the boundary layer"));
            }
            if pi == drive {
                srcs.extend(l.edges.iter().map(|&p| (c, p)));
            }
        } else if let Some(w) = &op.guides[pi] {
            if !w.v_idx.iter().chain(&w.h_lo).chain(&w.h_hi).chain(&w.src_idx).all(|&p| inner(p, [1; 3])) {
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
    let fields = onchip_bytes(op, drive, gstride, false, threads);
    let with_psi = onchip_bytes(op, drive, gstride, true, threads);
    if with_psi <= max_shared {
        Ok(OnchipFit { bytes: with_psi, psi_shared: true })
    } else if fields <= max_shared {
        Ok(OnchipFit { bytes: fields, psi_shared: false })
    } else {
        Err(format!("needs {:.0} KiB of shared memory per block, the device gives {:.0} KiB", fields as f64 / 1024.0, max_shared as f64 / 1024.0))
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
        let small = crate::bench::population_jobs(1, 3000, 10).remove(0);
        let big = crate::bench::box_job(40, 10);
        let (os, ob) = (Operator::new(&small).unwrap(), Operator::new(&big).unwrap());
        let fit = plan_design(&os, 0, 232_448, 256, 1024).unwrap();
        assert!(fit.bytes <= 232_448 && fit.bytes >= 27 * os.n.iter().product::<usize>());
        // Without room for the CPML memories they stay in the pool.
        let tight = onchip_bytes(&os, 0, 256, false, 1024);
        if os.pml.iter().any(|p| p.is_some()) {
            assert_eq!(plan_design(&os, 0, tight, 256, 1024).unwrap(), OnchipFit { bytes: tight, psi_shared: false });
        }
        let e = plan_design(&ob, 0, 232_448, 256, 1024).unwrap_err();
        assert!(e.contains("KiB"), "{e}");
        assert!(plan_design(&os, 0, 0, 256, 1024).is_err());
        // The layout counts every stored position: dims - 1 per axis.
        let stored: usize = os.dims.iter().map(|d| d - 1).product();
        assert!(onchip_bytes(&os, 0, 0, false, 64) >= stored * 27);
        assert!(validate_threads(1024).is_ok() && validate_threads(96).is_err() && validate_threads(32).is_err());
    }

    #[test]
    fn ports_on_the_ghost_layer_are_refused() {
        let mut j = crate::bench::box_job(8, 10);
        j.ports = vec![Port { name: "p".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [0, 0, 2], len: 2, r_ohm: 50.0 } }];
        let op = Operator::new(&j).unwrap();
        // The current loop of an edge on the x = 0 and y = 0 faces reaches the ghost layer.
        assert!(plan_design(&op, 0, 232_448, 256, 1024).unwrap_err().contains("boundary layer"));
    }
}
