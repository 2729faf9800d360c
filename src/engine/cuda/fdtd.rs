//! A batch of FDTD jobs on a [`Device`], as the stepping loop drives it:
//! every design advances together, one launch per step for the whole batch
//! (the fused `fdtd_step`, or the split `fdtd_update_h`, `fdtd_pmc_ghosts`,
//! `fdtd_update_e`), then the driven ports' sources (`fdtd_inject`), the
//! port monitor (`fdtd_sample_ports`) and the field DFT monitors
//! (`fdtd_dft`, tables from [`super::dft`]); the energy (`fdtd_energy`) at checks.
//! A sub-batch of designs that take a two-step pass ([`super::slim`])
//! advances two steps a launch (`fdtd_step2` for slim designs, the first
//! step's source and port taps folded in).
//! Each design leaves the block table and the port kernels when it ends.
//!
//! The pieces: [`FdtdDevBatch::new`] allocates and uploads, `advance`
//! launches a chunk of steps (replayed as a graph), `end_chunk` collects the
//! energies and port samples, `set_running` re-tiles the remaining designs
//! (z re-chunking), `retire` keeps a finished design's fields when asked
//! and copies its monitors' sums back.

use std::time::Instant;

use super::abi::{self, DftPtrs, FdtdPtrs, PortPtrs, SlimPtrs};
use super::dft::DftPlan;
use super::edges::{DevEdges, EdgePlan};
use super::conformal::{ConformalPlan, DevConformal};
use super::surface::{DevSurface, SurfacePlan};
use super::batch::{self, Plan, Tile};
use super::onchip;
use super::slim::{self, SlimPlan};
use super::{CudaOptions, PathChoice, RunStats, Scheme, SPLIT_ZCHUNK};
use crate::consts::{EPS0, MU0};
use crate::engine::device::{self, alloc_with, download_into, download_vec, upload, Buf, Chunk, Device, Dims, KernelArg, ModuleSpec};
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::Operator;
use crate::engine::stepping::{self, Batch};
use crate::engine::EngineError;
use crate::job::{MonitorOutput, PortTrace, SimFailure, SimJob, SimOutput};

// SAFETY: #[repr(C)] mirrors of common.cuh, passed by value (checked by the abi tests).
unsafe impl KernelArg for FdtdPtrs {}
// SAFETY: as above.
unsafe impl KernelArg for PortPtrs {}
// SAFETY: plain data of C layout (abi tests).
unsafe impl device::Pod for abi::FdtdDesign {}
// SAFETY: plain data of C layout (abi tests).
unsafe impl device::Pod for abi::FdtdPort {}
// SAFETY: as above.
unsafe impl KernelArg for DftPtrs {}
// SAFETY: as above.
unsafe impl KernelArg for SlimPtrs {}
// SAFETY: plain data of C layout (abi tests).
unsafe impl device::Pod for abi::FdtdDftComp {}

/// The FDTD kernels of `tile` as a module.
pub fn module(tile: Tile) -> ModuleSpec {
    ModuleSpec {
        name: "fdtd",
        source: abi::kernel_source(),
        defines: tile.defines(),
        kernels: abi::KERNELS.to_vec(),
        fallback: Some("-DEMV_NO_CPASYNC=1"),
    }
}

/// Which kernels a sub-batch runs (the planner's groups in [`run_share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubPath {
    /// One launch a step for the whole batch (`fdtd_step` or the split kernels).
    Streaming,
    /// Two steps a launch (`fdtd_step2`): every design takes it (slim::fits).
    TwoStep,
    /// Many steps a launch, one block per design (`fdtd_onchip`).
    Onchip,
}

impl SubPath {
    fn name(self) -> &'static str {
        match self {
            SubPath::Streaming => "streaming",
            SubPath::TwoStep => "streaming, two steps a pass",
            SubPath::Onchip => "on-chip",
        }
    }
}

/// Result of one job with, on request, its final fields.
pub struct JobRun {
    pub out: SimOutput,
    pub fields: Option<Fields>,
}

/// Field and material pools of a batch: two field sets (the fused step
/// reads one and writes the other), materials, CPML memories.
struct Pools {
    e: [[Buf; 3]; 2],
    h: [[Buf; 3]; 2],
    psi_e: [Buf; 2],
    psi_h: [Buf; 2],
}

/// Buffers the loop rewrites.
struct Live {
    designs: Buf,
    blocks: Buf,
    active: Buf,
    gval: Buf,
    tv: Buf,
    ti: Buf,
    energy: Buf,
}

/// The field DFT monitors of a batch on the device (absent without monitors).
struct DevDft {
    plan: DftPlan,
    phase: Buf,
    acc_re: Buf,
    acc_im: Buf,
    /// Per field set (the fused ping-pong).
    ptrs: [DftPtrs; 2],
}

/// The on-chip launch of a sub-batch (every design of it on-chip).
struct OcRun {
    m: usize,
    /// Per design: its ports [pb, pe) and sources [sb, se) in the plan's tables, its stored components.
    idx: Buf,
    /// Per design: the components its block stores (onchip::pattern).
    pattern: Vec<u8>,
    /// Dynamic shared memory per block (the largest design's).
    smem: u32,
    /// fdtd_onchip.cu EMV_OC_GHOSTS_ZERO (2) when the run starts from zero fields.
    flags: i32,
    threads: u32,
    /// Energy checks one launch may span (stepping::Batch::checks_per_advance) and their common interval.
    checks: usize,
    ce: usize,
}

/// The two-step pass of a sub-batch of designs that each take it (slim.rs).
struct SlimRun {
    plan: SlimPlan,
    /// The slim pass's block table (triples) on the device, and the blocks of the running designs.
    blocks: Buf,
    nblocks: usize,
    ptrs: SlimPtrs,
    /// The port kernels' pointers with the snapshot set as fields: the first step's samples.
    snap: PortPtrs,
    /// Planes per chunk, and the blocks resident at once.
    len: usize,
    resident: usize,
}

/// The most steps any on-chip sub-batch drawn from `jobs` can take a launch
/// ([`onchip_chunk`] of any subset, final fields asked for or not): the
/// planner sizes each design's source buffer in shared memory by it, so a
/// design that fits there still fits in whichever sub-batch it runs. Equal
/// to `onchip_chunk(jobs)` (or `trace_chunk` if larger) when every job checks
/// at the same interval, as a GA generation's do.
pub fn onchip_stride_bound(jobs: &[&SimJob], opts: &CudaOptions) -> usize {
    let ce = jobs.iter().map(|j| j.stop.check_every.max(1)).max().unwrap_or(1);
    let most = if opts.onchip_checks > 1 { ce * opts.onchip_checks } else { 1 };
    most.max(opts.trace_chunk).max(1)
}

/// Steps of an on-chip sub-batch's launches at most (its sample and source
/// buffers) and the energy checks one launch may span: several (`opts.onchip_checks`)
/// where every job checks at the same interval and nothing of a job is kept
/// past its end (no final fields); else up to the next check, within `opts.trace_chunk`.
pub fn onchip_chunk(jobs: &[&SimJob], opts: &CudaOptions, want_fields: bool) -> (usize, usize) {
    let ce = jobs.iter().map(|j| j.stop.check_every.max(1)).max().unwrap_or(1);
    let same = jobs.iter().all(|j| j.stop.check_every.max(1) == ce);
    if !want_fields && same && opts.onchip_checks > 1 {
        (ce * opts.onchip_checks, opts.onchip_checks)
    } else {
        (opts.trace_chunk.min(ce).max(1), 1)
    }
}

/// One sub-batch of FDTD jobs on a device.
pub struct FdtdDevBatch<'a> {
    dev: &'a mut dyn Device,
    m: usize,
    jobs: Vec<&'a SimJob>,
    ops: Vec<&'a Operator>,
    opts: CudaOptions,
    plan: Plan,
    pools: Pools,
    live: Live,
    fptrs: [FdtdPtrs; 2],
    pptrs: [PortPtrs; 2],
    resident: usize,
    rechunk: bool,
    cur_zchunk: usize,
    any_pmc: bool,
    kcap: usize,
    running: Vec<bool>,
    nblocks: usize,
    /// Of them, the blocks flagged lean (kernels/fdtd_lean.cuh).
    nlean: usize,
    /// Field set holding the current fields.
    cur: usize,
    /// Steps of the chunk in flight, its samples once fetched.
    kk: usize,
    hv: Vec<f64>,
    hi: Vec<f64>,
    want_fields: bool,
    fields: Vec<Option<Fields>>,
    step_bytes: Vec<f64>,
    dft: Option<DevDft>,
    /// The edge currents (dispersive media, lumped loads), if any design has them.
    edges: Option<DevEdges>,
    surface: Option<DevSurface>,
    conformal: Option<DevConformal>,
    oc: Option<OcRun>,
    slim: Option<SlimRun>,
    /// The source values of the chunk expected next (its first step, steps),
    /// computed while the device runs the current one (on-chip).
    g_next: Option<(usize, usize, Vec<f32>)>,
    pub stats: RunStats,
}

impl<'a> FdtdDevBatch<'a> {
    /// Allocate and upload the batch: pools, fields (zero, or `init` per
    /// design), materials and the small tables; `opts.tile` already fitted.
    pub fn new(
        dev: &'a mut dyn Device,
        jobs: Vec<&'a SimJob>,
        ops: Vec<&'a Operator>,
        init: Option<Vec<&Fields>>,
        want_fields: bool,
        opts: CudaOptions,
        path: SubPath,
    ) -> Result<Self, EngineError> {
        let (onchip, two_step) = (path == SubPath::Onchip, path == SubPath::TwoStep);
        let nd = ops.len();
        let fused = opts.scheme == Scheme::Fused;
        // The streaming kernels (not needed on-chip: no compile for a batch that runs there).
        let (m, resident) = if onchip {
            (usize::MAX, 1)
        } else {
            let m = dev.load(&module(opts.tile))?;
            let step_kernel = if fused { abi::Kernel::Step } else { abi::Kernel::UpdateE };
            (m, dev.resident_blocks(m, step_kernel as usize, opts.tile.threads() as u32))
        };
        let rechunk = fused && opts.adapt && opts.zchunk.is_none();
        let zchunk = match opts.scheme {
            // The fused kernel walks z through its chunk (software pipeline); chunk 0 must own planes 0 and 1.
            Scheme::Fused => opts.zchunk.unwrap_or_else(|| batch::choose_zchunk(&ops, opts.tile, opts.origin, resident)).max(2),
            // The split kernels want every cell on its own thread: a plane or two per block.
            Scheme::Split => opts.zchunk.unwrap_or(SPLIT_ZCHUNK).max(1),
        };
        let drives: Vec<usize> = jobs.iter().map(|j| j.drive).collect();
        let plan = Plan::with_origin(&ops, &drives, opts.tile, zchunk, opts.origin).map_err(EngineError::Cuda)?;
        if opts.verbose && fused {
            for (j, li) in jobs.iter().zip(&plan.lean) {
                eprintln!(
                    "planner: {} tiles {}x{} of {} from origin {},{}, {} of {} lean in xy",
                    j.label, li.tiles[0], li.tiles[1], opts.tile, li.org[0], li.org[1], li.xy_tiles, li.xy.len()
                );
            }
        }
        let fl = plan.field_len;
        let f32s = |n: usize| n.max(1) * 4;

        // Fields: zero (or the given initial fields) in set 0; set 1 zero or poisoned.
        let field = |dev: &mut dyn Device, poison: bool| -> Result<Buf, EngineError> {
            let b = dev.alloc(f32s(fl))?;
            if poison {
                // 0xFF bytes are a NaN pattern: any position the fused kernel fails to write poisons the result.
                dev.fill(b, 0, fl * 4, 0xFF)?;
            }
            Ok(b)
        };
        let poison = opts.poison && fused;
        let mut e = [[0; 3]; 2];
        let mut h = [[0; 3]; 2];
        for set in 0..2 {
            for c in 0..3 {
                e[set][c] = field(dev, set == 1 && poison)?;
                h[set][c] = field(dev, set == 1 && poison)?;
            }
        }
        if let Some(init) = &init {
            for (d, f) in init.iter().enumerate() {
                let o = plan.designs[d].off as usize;
                for c in 0..3 {
                    upload(dev, e[0][c], o, &f.e[c])?;
                    upload(dev, h[0][c], o, &f.h[c])?;
                }
            }
        }
        let mat = [alloc_with(dev, &plan.mat[0], 0)?, alloc_with(dev, &plan.mat[1], 0)?, alloc_with(dev, &plan.mat[2], 0)?];
        let pl = plan.psi_len.max(1);
        let pools = Pools { e, h, psi_e: [dev.alloc(pl * 4)?, dev.alloc(pl * 4)?], psi_h: [dev.alloc(pl * 4)?, dev.alloc(pl * 4)?] };

        // Small tables.
        let t = |dev: &mut dyn Device, v: &[f32]| alloc_with(dev, v, 1);
        let ti32 = |dev: &mut dyn Device, v: &[i32]| alloc_with(dev, v, 1);
        let designs = alloc_with(dev, &plan.designs, 1)?;
        let (ca, cb, eps) = (t(dev, &plan.ca)?, t(dev, &plan.cb)?, t(dev, &plan.eps)?);
        let (pe_b, pe_c, pe_k) = (t(dev, &plan.pe_b)?, t(dev, &plan.pe_c)?, t(dev, &plan.pe_k)?);
        let (ph_b, ph_c, ph_k) = (t(dev, &plan.ph_b)?, t(dev, &plan.ph_c)?, t(dev, &plan.ph_k)?);
        let (slab_e, slab_h) = (ti32(dev, &plan.slab_e)?, ti32(dev, &plan.slab_h)?);
        let (inv_e, inv_h, rel_e, rel_h) = (t(dev, &plan.inv_e)?, t(dev, &plan.inv_h)?, t(dev, &plan.rel_e)?, t(dev, &plan.rel_h)?);
        let ports = alloc_with(dev, &plan.ports, 1)?;
        let (t_idx0, t_idx1, t_idx2) = (ti32(dev, &plan.t_idx0)?, ti32(dev, &plan.t_idx1)?, ti32(dev, &plan.t_idx2)?);
        let t_w = alloc_with(dev, &plan.t_w, 1)?;
        let (src_design, src_comp, src_idx) = (ti32(dev, &plan.src_design)?, ti32(dev, &plan.src_comp)?, ti32(dev, &plan.src_idx)?);
        let src_coef = t(dev, &plan.src_coef)?;
        // On-chip, a chunk ends at the next energy check or spans several: no longer sample buffers than that.
        let (kcap, checks) = if onchip { onchip_chunk(&jobs, &opts, want_fields) } else { (opts.trace_chunk.max(1), 1) };
        let np = plan.ports.len();
        let live = Live {
            designs,
            // Room for the longest block table: every design, chunks of 2 planes when re-chunking.
            blocks: {
                let longest = if rechunk {
                    // (each of the three z segments may end in a short chunk)
                    2 * plan.designs.iter().map(|d| d.tiles[0] as usize * d.tiles[1] as usize * ((d.dims[2] as usize).div_ceil(2) + 3)).sum::<usize>()
                } else {
                    plan.block_table(&vec![true; nd]).len()
                };
                dev.alloc(longest.max(2) * 4)?
            },
            active: dev.alloc(nd.max(1) * 4)?,
            gval: dev.alloc((nd * kcap).max(1) * 4)?,
            tv: dev.alloc((np * kcap).max(1) * 8)?,
            ti: dev.alloc((np * kcap).max(1) * 8)?,
            energy: dev.alloc(2 * nd.max(1) * checks * 8)?,
        };

        // Pointer structs for each parity of the fused ping-pong (split: parity 0, in place).
        let mut p = |b: Buf| dev.ptr(b);
        let fp = |p: &mut dyn FnMut(Buf) -> u64, set: usize| -> FdtdPtrs {
            let o = 1 - set;
            FdtdPtrs {
                e: [0, 1, 2].map(|c| p(pools.e[set][c])),
                h: [0, 1, 2].map(|c| p(pools.h[set][c])),
                e_out: [0, 1, 2].map(|c| p(pools.e[o][c])),
                h_out: [0, 1, 2].map(|c| p(pools.h[o][c])),
                mat: mat.map(&mut *p),
                ca: p(ca),
                cb: p(cb),
                eps: p(eps),
                pe_b: p(pe_b),
                pe_c: p(pe_c),
                pe_k: p(pe_k),
                ph_b: p(ph_b),
                ph_c: p(ph_c),
                ph_k: p(ph_k),
                slab_e: p(slab_e),
                slab_h: p(slab_h),
                psi_e: p(pools.psi_e[set]),
                psi_h: p(pools.psi_h[set]),
                psi_h_out: p(pools.psi_h[o]),
                psi_e_out: p(pools.psi_e[o]),
                designs: p(live.designs),
                blocks: p(live.blocks),
                inv_e: p(inv_e),
                inv_h: p(inv_h),
                rel_e: p(rel_e),
                rel_h: p(rel_h),
            }
        };
        let fptrs = [fp(&mut p, 0), fp(&mut p, 1)];
        let pp = |p: &mut dyn FnMut(Buf) -> u64, set: usize| -> PortPtrs {
            PortPtrs {
                e: [0, 1, 2].map(|c| p(pools.e[set][c])),
                h: [0, 1, 2].map(|c| p(pools.h[set][c])),
                designs: p(live.designs),
                ports: p(ports),
                t_idx0: p(t_idx0),
                t_idx1: p(t_idx1),
                t_idx2: p(t_idx2),
                t_w: p(t_w),
                src_design: p(src_design),
                src_comp: p(src_comp),
                src_idx: p(src_idx),
                src_coef: p(src_coef),
                gval: p(live.gval),
                active: p(live.active),
                tv: p(live.tv),
                ti: p(live.ti),
                n_src: plan.src_design.len() as i32,
                n_ports: np as i32,
                gstride: kcap as i32,
                tstride: kcap as i32,
            }
        };
        let pptrs = [pp(&mut p, 0), pp(&mut p, 1)];
        // Field DFT monitors: their tables, f64 sums from zero, and the phase table of a chunk.
        let dft_plan = DftPlan::new(&jobs, &ops).map_err(EngineError::Cuda)?;
        let dft = if dft_plan.samples() == 0 {
            None
        } else {
            let comps = alloc_with(dev, &dft_plan.comps, 1)?;
            let sample_comp = alloc_with(dev, &dft_plan.sample_comp, 1)?;
            let tap = alloc_with(dev, &dft_plan.tap, 1)?;
            let phase = dev.alloc(dft_plan.slots.len().max(1) * kcap * 4 * 8)?;
            let acc_re = dev.alloc(dft_plan.acc_len.max(1) * 8)?;
            let acc_im = dev.alloc(dft_plan.acc_len.max(1) * 8)?;
            dev.fill(acc_re, 0, dft_plan.acc_len * 8, 0)?;
            dev.fill(acc_im, 0, dft_plan.acc_len * 8, 0)?;
            let mut dp = |set: usize| DftPtrs {
                e: [0, 1, 2].map(|c| dev.ptr(pools.e[set][c])),
                h: [0, 1, 2].map(|c| dev.ptr(pools.h[set][c])),
                designs: dev.ptr(live.designs),
                comps: dev.ptr(comps),
                sample_comp: dev.ptr(sample_comp),
                tap: dev.ptr(tap),
                phase: dev.ptr(phase),
                active: dev.ptr(live.active),
                acc_re: dev.ptr(acc_re),
                acc_im: dev.ptr(acc_im),
                n_samples: dft_plan.samples() as i64,
                pstride: kcap as i32,
                pad: 0,
            };
            let ptrs = [dp(0), dp(1)];
            Some(DevDft { plan: dft_plan, phase, acc_re, acc_im, ptrs })
        };
        // Edge currents: the streaming path launches fdtd_edges after the sources (the planner keeps them off the other paths).
        let edges = if ops.iter().any(|o| !o.edges.is_empty()) {
            if onchip || two_step {
                return Err(EngineError::Cuda("edge currents (dispersive media, loads) run on the streaming path only".into()));
            }
            let plan = EdgePlan::new(&ops).map_err(EngineError::Cuda)?;
            Some(DevEdges::new(dev, plan, pools.e, live.designs, live.active, init.as_deref())?)
        } else {
            None
        };
        // Conformal faces: likewise, launched before the lossy faces (their record after the edge currents).
        let conformal = if ops.iter().any(|o| !o.conformal.is_empty()) {
            if onchip || two_step {
                return Err(EngineError::Cuda("conformal metal faces run on the streaming path only".into()));
            }
            let plan = ConformalPlan::new(&ops).map_err(EngineError::Cuda)?;
            Some(DevConformal::new(dev, plan, pools.e, pools.h, live.designs, live.active, init.as_deref())?)
        } else {
            None
        };
        // Lossy metal faces: likewise, launched before the edge currents.
        let surface = if ops.iter().any(|o| !o.surface.is_empty()) {
            if onchip || two_step {
                return Err(EngineError::Cuda("lossy metal faces run on the streaming path only".into()));
            }
            let plan = SurfacePlan::new(&ops).map_err(EngineError::Cuda)?;
            Some(DevSurface::new(dev, plan, pools.e, pools.h, live.designs, live.active, init.as_deref())?)
        } else {
            None
        };
        let any_pmc = ops.iter().any(|o| o.pmc.iter().flatten().any(|&b| b));
        let oc = if onchip { Some(Self::onchip_setup(dev, &ops, &drives, &plan, kcap, &opts, init.as_deref(), checks, &jobs)?) } else { None };
        let slim = if two_step && !onchip && fused { Some(Self::slim_setup(dev, m, &ops, &plan, &opts, &pptrs[0])?) } else { None };
        // On-chip: the global traffic per step is the port samples (16 B a port); the
        // shared-memory traffic is modelled separately (stats.smem_bytes).
        let step_bytes = if onchip {
            ops.iter().enumerate().map(|(d, _)| 16.0 * plan.port_slot[d].iter().flatten().count() as f64).collect()
        } else if slim.is_some() {
            // Fields and materials once for two steps; the CPML memories on every step.
            ops.iter().map(|o| o.len as f64 * (27.0 + 24.0) / 2.0 + batch::psi_elems(o) as f64 * 16.0).collect()
        } else {
            ops.iter().map(|o| batch::step_bytes(&[o], fused)).collect()
        };
        Ok(FdtdDevBatch {
            dev,
            m,
            jobs,
            ops,
            opts,
            plan,
            pools,
            live,
            fptrs,
            pptrs,
            resident,
            rechunk,
            cur_zchunk: zchunk,
            any_pmc,
            kcap,
            running: vec![false; nd],
            nblocks: 0,
            nlean: 0,
            cur: 0,
            kk: 0,
            hv: vec![],
            hi: vec![],
            want_fields,
            fields: (0..nd).map(|_| None).collect(),
            step_bytes,
            dft,
            edges,
            surface,
            conformal,
            oc,
            slim,
            g_next: None,
            stats: RunStats { zchunk, ..Default::default() },
        })
    }

    /// The two-step pass's tables, block table and snapshot set (every design takes it: slim::fits).
    fn slim_setup(dev: &mut dyn Device, m: usize, ops: &[&Operator], plan: &Plan, opts: &CudaOptions, pp: &PortPtrs) -> Result<SlimRun, EngineError> {
        let resident = dev.resident_blocks_shared(m, abi::Kernel::Step2 as usize, abi::SLIM_NT as u32, slim::smem_bytes());
        let len = opts.zchunk.unwrap_or_else(|| slim::choose_len(ops, resident)).max(2);
        let sp = SlimPlan::new(plan, ops, len);
        if opts.verbose {
            for (op, ch) in ops.iter().zip(&sp.chunks) {
                eprintln!("planner: two steps a pass, padded plane {}x{}, {} chunks along z of about {len} planes ({resident} blocks resident)", op.dims[0], op.dims[1], ch.len());
            }
        }
        let blocks = dev.alloc(sp.max_table_len(ops).max(3) * 4)?;
        let ti32 = |dev: &mut dyn Device, v: &[i32]| alloc_with(dev, v, 1);
        let (dgrp, grp, src_item, tap) = (ti32(dev, &sp.dgrp)?, ti32(dev, &sp.grp)?, ti32(dev, &sp.src_item)?, ti32(dev, &sp.tap)?);
        // The snapshot set: full-size arrays of which only the tapped positions are written and read.
        let n = if sp.tap.is_empty() { 1 } else { plan.field_len };
        let mut snap_e = [0; 3];
        let mut snap_h = [0; 3];
        for c in 0..3 {
            snap_e[c] = dev.alloc(n * 4)?;
            snap_h[c] = dev.alloc(n * 4)?;
        }
        let se = snap_e.map(|b| dev.ptr(b));
        let sh = snap_h.map(|b| dev.ptr(b));
        let ptrs = SlimPtrs { se, sh, blocks: dev.ptr(blocks), dgrp: dev.ptr(dgrp), grp: dev.ptr(grp), src_item: dev.ptr(src_item), tap: dev.ptr(tap) };
        let snap = PortPtrs { e: se, h: sh, ..*pp };
        Ok(SlimRun { plan: sp, blocks, nblocks: 0, ptrs, snap, len, resident })
    }

    /// Load the on-chip kernel and size its launch for these designs (each
    /// planned on-chip by the caller: `onchip::plan_design`).
    #[allow(clippy::too_many_arguments)]
    fn onchip_setup(dev: &mut dyn Device, ops: &[&Operator], drives: &[usize], plan: &Plan, kcap: usize, opts: &CudaOptions, init: Option<&[&Fields]>, checks: usize, jobs: &[&SimJob]) -> Result<OcRun, EngineError> {
        onchip::validate_threads(opts.onchip_threads).map_err(EngineError::Cuda)?;
        let threads = opts.onchip_threads;
        let max = dev.max_shared();
        let mut fits = vec![];
        for (d, op) in ops.iter().enumerate() {
            let f0 = init.map(|f| f[d]);
            fits.push(onchip::plan_design(op, drives[d], max, kcap, f0).map_err(|e| EngineError::Cuda(format!("design {d} cannot run on-chip: {e}")))?);
        }
        // The step loop compiled for this batch's patterns only (a GA's designs share one).
        let pats: Vec<u8> = fits.iter().map(|f| f.pattern).collect();
        let m = dev.load(&onchip::module(threads, &pats))?;
        let smem = fits.iter().map(|f| f.bytes).max().unwrap_or(0);
        // Ports of a design are contiguous in the plan, its sources too.
        let mut idx = vec![];
        for d in 0..ops.len() {
            let ports: Vec<usize> = plan.port_slot[d].iter().flatten().copied().collect();
            let (pb, pe) = (ports.first().copied().unwrap_or(0), ports.last().map_or(0, |p| p + 1));
            let srcs: Vec<usize> = (0..plan.src_design.len()).filter(|&i| plan.src_design[i] as usize == d).collect();
            let (sb, se) = (srcs.first().copied().unwrap_or(0), srcs.last().map_or(0, |s| s + 1));
            if pe - pb != ports.len() || se - sb != srcs.len() {
                return Err(EngineError::Cuda(format!("design {d}: ports or sources not contiguous in the plan")));
            }
            idx.extend([pb as i32, pe as i32, sb as i32, se as i32, fits[d].pattern as i32]);
        }
        let idx = alloc_with(dev, &idx, 5)?;
        let ce = jobs.iter().map(|j| j.stop.check_every.max(1)).max().unwrap_or(1);
        // From zero fields everything no update writes stays zero (else the kernel sums its energy once a launch).
        let mut flags = if init.is_none() { 2 } else { 0 };
        if opts.onchip_general {
            flags |= 4;
        }
        Ok(OcRun { m, idx, pattern: fits.iter().map(|f| f.pattern).collect(), smem: smem as u32, flags, threads: threads as u32, checks, ce })
    }

    /// One launch of the on-chip kernel: `k` steps of every running design,
    /// in place in field set `cur`, the energies after every check into
    /// `live.energy` (after every `ce` steps when one launch spans several checks, else after the k-th).
    fn launch_onchip(&mut self, k: usize) -> Result<(), EngineError> {
        let Some(oc) = &self.oc else { return Ok(()) };
        let (idx, en) = (self.dev.ptr(oc.idx), self.dev.ptr(self.live.energy));
        let ce = if oc.checks > 1 { oc.ce.min(k) } else { k };
        let (kk, flags, ce, ens) = (k as i32, oc.flags, ce as i32, self.ops.len() as i32);
        let dims = Dims::linear(self.nblocks as u32, oc.threads);
        device::launch_shared(self.dev, oc.m, 0, dims, oc.smem, &[&self.fptrs[self.cur], &self.pptrs[self.cur], &idx, &kk, &flags, &en, &ce, &ens])
    }

    fn tile_dims(&self, blocks: usize) -> Dims {
        Dims { grid: [blocks as u32, 1, 1], block: [self.opts.tile.tx as u32, self.opts.tile.ty as u32, 1] }
    }

    /// Launch `kk` steps from field set `cur` (recorded instead of run while
    /// the device is capturing); returns the set then current.
    fn launch_steps(&mut self, kk: usize, mut cur: usize) -> Result<usize, EngineError> {
        let (m, nb) = (self.m, self.nblocks);
        let tiles = self.tile_dims(nb);
        let n_src = self.plan.src_design.len();
        let np = self.plan.ports.len();
        if let Some(sl) = &self.slim {
            // Two steps a pass; the first step's source and samples inside it (the
            // samples from the snapshot set), the second's as after a one-step launch.
            let mut s = 0;
            while s < kk {
                if s + 1 < kk {
                    let si = s as i32;
                    if sl.nblocks > 0 {
                        let dims = Dims::linear(sl.nblocks as u32, abi::SLIM_NT as u32);
                        device::launch_shared(&mut *self.dev, m, abi::Kernel::Step2 as usize, dims, slim::smem_bytes(), &[&self.fptrs[cur], &self.pptrs[cur], &sl.ptrs, &si])?;
                    }
                    if np > 0 {
                        device::launch(&mut *self.dev, m, abi::Kernel::SamplePorts as usize, Dims::linear(np as u32, abi::SAMPLE_THREADS), &[&sl.snap, &si])?;
                    }
                    s += 1;
                } else {
                    device::launch(&mut *self.dev, m, abi::Kernel::Step as usize, tiles, &[&self.fptrs[cur]])?;
                }
                cur = 1 - cur;
                let si = s as i32;
                if n_src > 0 {
                    let dims = Dims::linear((n_src as u32).div_ceil(abi::INJECT_THREADS), abi::INJECT_THREADS);
                    device::launch(&mut *self.dev, m, abi::Kernel::Inject as usize, dims, &[&self.pptrs[cur], &si])?;
                }
                if np > 0 {
                    device::launch(&mut *self.dev, m, abi::Kernel::SamplePorts as usize, Dims::linear(np as u32, abi::SAMPLE_THREADS), &[&self.pptrs[cur], &si])?;
                }
                s += 1;
            }
            return Ok(cur);
        }
        for s in 0..kk {
            let si = s as i32;
            match self.opts.scheme {
                Scheme::Fused => {
                    device::launch(self.dev, m, abi::Kernel::Step as usize, tiles, &[&self.fptrs[cur]])?;
                    cur = 1 - cur;
                }
                Scheme::Split => {
                    device::launch(self.dev, m, abi::Kernel::UpdateH as usize, tiles, &[&self.fptrs[0]])?;
                    if self.any_pmc {
                        device::launch(self.dev, m, abi::Kernel::PmcGhosts as usize, tiles, &[&self.fptrs[0]])?;
                    }
                    device::launch(self.dev, m, abi::Kernel::UpdateE as usize, tiles, &[&self.fptrs[0]])?;
                }
            }
            if n_src > 0 {
                let dims = Dims::linear((n_src as u32).div_ceil(abi::INJECT_THREADS), abi::INJECT_THREADS);
                device::launch(self.dev, m, abi::Kernel::Inject as usize, dims, &[&self.pptrs[cur], &si])?;
            }
            if let Some(cf) = &self.conformal {
                cf.launch(self.dev, m, cur)?;
            }
            if let Some(sf) = &self.surface {
                sf.launch(self.dev, m, cur)?;
            }
            if let Some(ed) = &self.edges {
                ed.launch(self.dev, m, cur)?;
            }
            if let Some(cf) = &self.conformal {
                cf.launch_rec(self.dev, m, cur)?;
            }
            if np > 0 {
                device::launch(self.dev, m, abi::Kernel::SamplePorts as usize, Dims::linear(np as u32, abi::SAMPLE_THREADS), &[&self.pptrs[cur], &si])?;
            }
            if let Some(dft) = &self.dft {
                let blocks = (dft.plan.samples() as u64).div_ceil(abi::DFT_THREADS as u64);
                let blocks = u32::try_from(blocks).map_err(|_| EngineError::Cuda(format!("{} monitor samples need more blocks than one launch has", dft.plan.samples())))?;
                device::launch(self.dev, m, abi::Kernel::Dft as usize, Dims::linear(blocks, abi::DFT_THREADS), &[&dft.ptrs[cur], &si])?;
            }
        }
        Ok(cur)
    }

    /// Copy design `d`'s current fields back into a CPU [`Fields`] (psi left empty).
    fn download_fields(&mut self, d: usize) -> Result<Fields, EngineError> {
        let (off, len) = (self.plan.designs[d].off as usize, self.ops[d].len);
        let mut f = Fields { e: [vec![], vec![], vec![]], h: [vec![], vec![], vec![]], psi_e: Default::default(), psi_h: Default::default(), edges: Default::default(), surface: Default::default(), conformal: Default::default() };
        for c in 0..3 {
            f.e[c] = download_vec(self.dev, self.pools.e[self.cur][c], off, len)?;
            f.h[c] = download_vec(self.dev, self.pools.h[self.cur][c], off, len)?;
        }
        if let Some(ed) = &self.edges {
            f.edges = ed.state(self.dev, d, &self.ops[d].edges)?;
        }
        if let Some(sf) = &self.surface {
            f.surface = sf.state(self.dev, d, &self.ops[d].surface)?;
        }
        if let Some(cf) = &self.conformal {
            f.conformal = cf.state(self.dev, d, &self.ops[d].conformal)?;
        }
        Ok(f)
    }

    /// The final fields of design `d`, when they were asked for and it ended normally.
    pub fn take_fields(&mut self, d: usize) -> Option<Fields> {
        self.fields[d].take()
    }
}

impl Batch for FdtdDevBatch<'_> {
    fn len(&self) -> usize {
        self.jobs.len()
    }
    fn job(&self, d: usize) -> &SimJob {
        self.jobs[d]
    }
    fn dt(&self, d: usize) -> f64 {
        self.ops[d].dt
    }
    fn cells(&self, d: usize) -> usize {
        self.jobs[d].mesh.cells()
    }
    fn max_chunk(&self) -> usize {
        self.kcap
    }
    /// The block table and active flags of the running designs; with fewer
    /// designs left, their planes spread over more blocks (z re-chunking).
    fn set_running(&mut self, running: &[bool]) -> Result<(), EngineError> {
        self.running = running.to_vec();
        if self.oc.is_some() {
            // One block per running design.
            let t: Vec<i32> = (0..running.len()).filter(|&d| running[d]).flat_map(|d| [d as i32, 0]).collect();
            self.nblocks = t.len() / 2;
            upload(self.dev, self.live.blocks, 0, &t)?;
            let a: Vec<i32> = running.iter().map(|&r| r as i32).collect();
            return upload(self.dev, self.live.active, 0, &a);
        }
        if self.rechunk {
            let live: Vec<&Operator> = (0..self.ops.len()).filter(|&d| running[d]).map(|d| self.ops[d]).collect();
            let z = batch::choose_zchunk(&live, self.opts.tile, self.opts.origin, self.resident).max(2);
            if z != self.cur_zchunk {
                self.plan.set_zchunk(z);
                upload(self.dev, self.live.designs, 0, &self.plan.designs)?;
                self.cur_zchunk = z;
            }
        }
        if let Some(sl) = &mut self.slim {
            if self.rechunk {
                let live: Vec<&Operator> = (0..self.ops.len()).filter(|&d| running[d]).map(|d| self.ops[d]).collect();
                let len = slim::choose_len(&live, sl.resident);
                if len != sl.len {
                    sl.plan.set_len(&self.ops, len);
                    sl.len = len;
                }
            }
            let t = sl.plan.block_table(running);
            sl.nblocks = t.len() / 3;
            if !t.is_empty() {
                upload(&mut *self.dev, sl.blocks, 0, &t)?;
            }
        }
        let (t, nlean) = self.plan.block_tables(running, self.opts.scheme == Scheme::Fused && self.opts.lean);
        self.nblocks = t.len() / 2;
        self.nlean = nlean;
        upload(self.dev, self.live.blocks, 0, &t)?;
        let a: Vec<i32> = running.iter().map(|&r| r as i32).collect();
        upload(self.dev, self.live.active, 0, &a)
    }
    /// The chunk's source values, then its launches: they depend only on
    /// (steps, field set, blocks), so a chunk is recorded once and replayed.
    fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError> {
        let pulses: Vec<_> = self.jobs.iter().map(|j| j.pulse).collect();
        let dts: Vec<f64> = self.ops.iter().map(|o| o.dt).collect();
        let g = match self.g_next.take() {
            Some((n0, k0, g)) if (n0, k0) == (n, k) => g,
            _ => self.plan.source_values(&pulses, &dts, n, k, self.kcap, &self.running),
        };
        upload(self.dev, self.live.gval, 0, &g)?;
        if let Some(dft) = &self.dft {
            upload(self.dev, dft.phase, 0, &dft.plan.phase_table(&dts, n, k, self.kcap))?;
        }
        self.dev.mark()?;
        if let Some(oc) = &self.oc {
            let pat = oc.pattern.clone();
            self.launch_onchip(k)?;
            // The next chunk's source values while the device runs this one (a chunk of the
            // same length is the usual next; the designs that end meanwhile need none).
            self.g_next = Some((n + k, k, self.plan.source_values(&pulses, &dts, n + k, k, self.kcap, &self.running)));
            for d in (0..self.ops.len()).filter(|&d| self.running[d]) {
                let cells = self.jobs[d].mesh.cells() as f64 * k as f64;
                self.stats.bytes += self.step_bytes[d] * k as f64;
                self.stats.smem_bytes += onchip::step_smem_bytes(self.ops[d], pat[d]) * k as f64;
                self.stats.cell_updates += cells;
                self.stats.onchip_cell_updates += cells;
            }
            self.kk = k;
            return Ok(());
        }
        let cur = self.cur;
        let fused = self.opts.scheme == Scheme::Fused;
        // The two-step pass's block count too: two sets of running designs may give the
        // one-step table the same length and the pass's table a different one.
        let ns = self.slim.as_ref().map_or(0, |s| s.nblocks as u64);
        self.cur = match self.dev.chunk_begin([k as u64, cur as u64, self.nblocks as u64, ns, 0])? {
            // The field set flips once a launch: a two-step pass is one.
            Chunk::Replayed if fused => cur ^ (if self.slim.is_some() { k / 2 + k % 2 } else { k } & 1),
            Chunk::Replayed => cur,
            Chunk::Direct => self.launch_steps(k, cur)?,
            Chunk::Recording => {
                let next = self.launch_steps(k, cur)?;
                if !self.dev.chunk_end()? {
                    self.launch_steps(k, cur)?;
                }
                next
            }
        };
        for d in (0..self.ops.len()).filter(|&d| self.running[d]) {
            self.stats.bytes += self.step_bytes[d] * k as f64;
            self.stats.cell_updates += self.jobs[d].mesh.cells() as f64 * k as f64;
        }
        self.stats.block_steps += (self.nblocks * k) as f64;
        self.stats.lean_block_steps += (self.nlean * k) as f64;
        self.kk = k;
        Ok(())
    }
    /// The energies of the designs due (one launch over the running blocks),
    /// the wait for the device, and the copies of energies and samples.
    fn end_chunk(&mut self, due: &[bool]) -> Result<Vec<f64>, EngineError> {
        let tw = Instant::now();
        let nd = self.ops.len();
        let any_due = due.iter().any(|&x| x);
        // The on-chip kernel left every running design's energy at the chunk end.
        if any_due && self.oc.is_none() {
            self.dev.fill(self.live.energy, 0, 2 * nd * 8, 0)?;
            let mut fpc = self.fptrs[self.cur];
            fpc.e_out = fpc.e;
            fpc.h_out = fpc.h;
            let out = self.dev.ptr(self.live.energy);
            let tiles = self.tile_dims(self.nblocks);
            device::launch(self.dev, self.m, abi::Kernel::Energy as usize, tiles, &[&fpc, &out])?;
        }
        let dt = self.dev.elapsed()?;
        self.stats.kernel_s += dt;
        if self.oc.is_some() {
            self.stats.onchip_kernel_s += dt;
        }
        let w: Vec<f64> = if any_due { download_vec(self.dev, self.live.energy, 0, 2 * nd)? } else { vec![0.0; 2 * nd] };
        let np = self.plan.ports.len();
        if np > 0 {
            download_into(self.dev, self.live.tv, 0, np * self.kcap, &mut self.hv)?;
            download_into(self.dev, self.live.ti, 0, np * self.kcap, &mut self.hi)?;
        }
        self.stats.wait_s += tw.elapsed().as_secs_f64();
        Ok((0..nd).map(|d| w[2 * d] * EPS0 + w[2 * d + 1] * MU0).collect())
    }
    fn samples(&mut self, d: usize, traces: &mut [PortTrace]) {
        let kk = self.kk;
        self.samples_part(d, traces, 0, kk);
    }
    fn samples_part(&mut self, d: usize, traces: &mut [PortTrace], from: usize, to: usize) {
        let kcap = self.kcap;
        for (pi, slot) in self.plan.port_slot[d].iter().enumerate() {
            if let Some(gp) = *slot {
                traces[pi].v.extend_from_slice(&self.hv[gp * kcap + from..gp * kcap + to]);
                traces[pi].i.extend_from_slice(&self.hi[gp * kcap + from..gp * kcap + to]);
            }
        }
    }
    fn checks_per_advance(&self) -> usize {
        self.oc.as_ref().map_or(1, |oc| oc.checks)
    }
    /// The on-chip kernel's energies after each of the launch's `m` checks, the
    /// wait for the device, and the copies of energies and samples.
    fn end_checks(&mut self, m: usize) -> Result<Vec<f64>, EngineError> {
        let tw = Instant::now();
        let nd = self.ops.len();
        let dt = self.dev.elapsed()?;
        self.stats.kernel_s += dt;
        self.stats.onchip_kernel_s += dt;
        let w: Vec<f64> = download_vec(self.dev, self.live.energy, 0, 2 * nd * m)?;
        let np = self.plan.ports.len();
        if np > 0 {
            download_into(self.dev, self.live.tv, 0, np * self.kcap, &mut self.hv)?;
            download_into(self.dev, self.live.ti, 0, np * self.kcap, &mut self.hi)?;
        }
        self.stats.wait_s += tw.elapsed().as_secs_f64();
        Ok((0..nd * m).map(|x| w[2 * x] * EPS0 + w[2 * x + 1] * MU0).collect())
    }
    fn locate_non_finite(&mut self, d: usize) -> Result<String, EngineError> {
        let f = self.download_fields(d)?;
        Ok(crate::engine::fdtd::cpu::locate_non_finite(self.ops[d], &f))
    }
    fn retire(&mut self, d: usize) -> Result<(), EngineError> {
        if self.want_fields {
            self.fields[d] = Some(self.download_fields(d)?);
        }
        if let Some(dft) = &mut self.dft {
            let r = dft.plan.acc_range[d].clone();
            if !r.is_empty() {
                let re: Vec<f64> = download_vec(self.dev, dft.acc_re, r.start, r.len())?;
                let im: Vec<f64> = download_vec(self.dev, dft.acc_im, r.start, r.len())?;
                dft.plan.set_sums(d, &re, &im).map_err(EngineError::Cuda)?;
            }
        }
        Ok(())
    }
    fn finish(&mut self, _d: usize, _traces: &mut [PortTrace]) -> (f64, f64) {
        // V at the full step (E after the update), I half a step earlier (H).
        (1.0, 0.5)
    }
    fn monitors(&mut self, d: usize) -> Vec<MonitorOutput> {
        self.dft.as_ref().map_or_else(Vec::new, |dft| dft.plan.outputs(d))
    }
}

/// Run one sub-batch that fits the device: all designs step together.
pub fn run_sub_batch(
    dev: &mut dyn Device,
    jobs: Vec<&SimJob>,
    ops: Vec<&Operator>,
    init: Option<Vec<&Fields>>,
    want_fields: bool,
    opts: &CudaOptions,
    path: SubPath,
) -> Result<(Vec<Result<JobRun, SimFailure>>, RunStats), EngineError> {
    let t0 = Instant::now();
    // Thin designs get a shorter tile of the same width (fused, adaptive).
    let tile = if opts.scheme == Scheme::Fused && opts.adapt { batch::fit_tile(&ops, opts.tile) } else { opts.tile };
    let opts = CudaOptions { tile, ..opts.clone() };
    dev.set_graphs(opts.graphs);
    let nd = jobs.len();
    let b = FdtdDevBatch::new(dev, jobs, ops, init, want_fields, opts, path);
    let setup_s = t0.elapsed().as_secs_f64();
    // The batch's buffers go back to the pool whether or not the run succeeded.
    let run = b.and_then(|mut b| {
        let outs = stepping::run(&mut b, &[])?;
        let res: Vec<_> = outs.into_iter().enumerate().map(|(d, o)| o.map(|out| JobRun { out, fields: b.take_fields(d) })).collect();
        Ok((res, b.stats.clone()))
    });
    let released = dev.release();
    let (res, stats) = run?;
    released?;
    let wall_s = t0.elapsed().as_secs_f64();
    let (onchip_designs, streaming_designs) = if path == SubPath::Onchip { (nd, 0) } else { (0, nd) };
    let slim_designs = if path == SubPath::TwoStep { nd } else { 0 };
    let st = RunStats { setup_s, wall_s, loop_s: wall_s - setup_s, sub_batches: 1, gpus_used: 1, onchip_designs, streaming_designs, slim_designs, ..stats };
    Ok((res, st))
}

/// The planner's decision for one job: the path it takes and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDecision {
    /// Index of the job in the batch.
    pub job: usize,
    pub path: SubPath,
    /// On-chip: its shared memory and stored components; streaming: why not
    /// on-chip (and, one step a pass, why not two steps a pass).
    pub reason: String,
}

impl PathDecision {
    /// The line `--verbose` prints for it.
    pub fn describe(&self, job: &SimJob) -> String {
        let (label, cells) = (&job.label, job.mesh.cells());
        match self.path {
            SubPath::Onchip => format!("planner: {label} ({cells} cells) on-chip, {}", self.reason),
            SubPath::TwoStep => format!("planner: {label} ({cells} cells) streaming, two steps a pass: {}", self.reason),
            SubPath::Streaming => format!("planner: {label} ({cells} cells) streaming: {}", self.reason),
        }
    }
}

/// The planner: on-chip where the design fits a block of `max_shared` bytes
/// (unless streaming is asked for), with room for the source values of the
/// longest launch any sub-batch may make; else streaming, two steps a pass
/// where the design takes it (fused scheme). `device`: named in the error of
/// `--path onchip` for a design that cannot run on-chip.
pub fn plan_paths(jobs: &[SimJob], ops: &[Option<&Operator>], idx: &[usize], init: Option<&[Fields]>, opts: &CudaOptions, max_shared: usize, device: &str) -> Result<Vec<PathDecision>, EngineError> {
    let all: Vec<&SimJob> = idx.iter().map(|&i| &jobs[i]).collect();
    let gstride = onchip_stride_bound(&all, opts);
    let mut out = Vec::with_capacity(idx.len());
    for &i in idx {
        let o = ops.get(i).copied().flatten().ok_or_else(|| EngineError::Cuda(format!("job {i} has no operator")))?;
        // Field DFT monitors are recorded by the streaming path's fdtd_dft kernel only.
        let fit = if opts.path == PathChoice::Streaming {
            Err("streaming asked for".to_string())
        } else if !jobs[i].monitors.is_empty() {
            Err("field DFT monitors run on the streaming path".to_string())
        } else if !o.edges.is_empty() {
            Err("edge currents (dispersive media, loads) run on the streaming path".to_string())
        } else if !o.surface.is_empty() {
            Err("lossy metal faces run on the streaming path".to_string())
        } else if !o.conformal.is_empty() {
            Err("conformal metal faces run on the streaming path".to_string())
        } else {
            onchip::plan_design(o, jobs[i].drive, max_shared, gstride, init.map(|f| &f[i]))
        };
        out.push(match fit {
            Ok(f) => PathDecision { job: i, path: SubPath::Onchip, reason: format!("{} B shared memory, components stored {:#08b} (H2..E0)", f.bytes, f.pattern) },
            Err(why) if opts.path == PathChoice::Onchip => {
                return Err(EngineError::Cuda(format!("--path onchip: design '{}' cannot run on-chip on {device}: {why}", jobs[i].label)));
            }
            Err(why) => {
                let slim = if !opts.slim || opts.scheme != Scheme::Fused {
                    Err("one step a pass asked for".to_string())
                } else if !o.edges.is_empty() {
                    Err("edge currents need their pass after every step".to_string())
                } else if !o.surface.is_empty() {
                    Err("lossy metal faces need their pass after every step".to_string())
                } else if !o.conformal.is_empty() {
                    Err("conformal metal faces need their pass after every step".to_string())
                } else {
                    slim::fits(o, &jobs[i], opts.slim_min_plane)
                };
                match slim {
                    Ok(()) => PathDecision { job: i, path: SubPath::TwoStep, reason: why },
                    Err(w2) => PathDecision { job: i, path: SubPath::Streaming, reason: format!("{why}; one step a pass: {w2}") },
                }
            }
        });
    }
    Ok(out)
}

/// Run a device's share of a batch (job indices `idx`, their operators in
/// `ops`), in sub-batches that fit its memory.
pub fn run_share(
    dev: &mut dyn Device,
    jobs: &[SimJob],
    ops: &[Option<&Operator>],
    idx: &[usize],
    init: Option<&[Fields]>,
    want_fields: bool,
    opts: &CudaOptions,
) -> Result<(Vec<(usize, Result<JobRun, SimFailure>)>, RunStats), EngineError> {
    let op = |i: usize| ops.get(i).copied().flatten().ok_or_else(|| EngineError::Cuda(format!("job {i} has no operator")));
    let max_shared = if opts.path == PathChoice::Streaming { 0 } else { dev.max_shared() };
    let decisions = plan_paths(jobs, ops, idx, init, opts, max_shared, &dev.describe())?;
    let (mut on, mut off, mut two) = (vec![], vec![], vec![]);
    for d in &decisions {
        if opts.verbose {
            eprintln!("{}", d.describe(&jobs[d.job]));
        }
        match d.path {
            SubPath::Onchip => on.push(d.job),
            SubPath::TwoStep => two.push(d.job),
            SubPath::Streaming => off.push(d.job),
        }
    }
    let mut budget = dev.budget()?;
    if let Some(m) = opts.mem_limit {
        budget = budget.min(m);
    }
    let mut out = vec![];
    let mut st = RunStats::default();
    for (group, path) in [(on, SubPath::Onchip), (two, SubPath::TwoStep), (off, SubPath::Streaming)] {
        let mut needs = vec![];
        for &i in &group {
            // Two steps a pass: the snapshot set of the first step's port taps (six full arrays).
            let snap = if path == SubPath::TwoStep { op(i)?.len * 24 } else { 0 };
            needs.push(batch::device_bytes(op(i)?) + snap + { let o = op(i)?; jobs[i].monitors.iter().map(|m| crate::engine::fdtd::dft::FieldDftMonitor::device_bytes(m, o)).sum::<usize>() });
        }
        let parts = batch::split_to_fit(&needs, budget).map_err(|k| batch::too_big(&jobs[group[k]].label, needs[k], &dev.describe(), budget))?;
        for part in parts {
            let sub: Vec<usize> = group[part].to_vec();
            let js: Vec<&SimJob> = sub.iter().map(|&i| &jobs[i]).collect();
            let mut os = vec![];
            for &i in &sub {
                os.push(op(i)?);
            }
            let init_sub = init.map(|f| sub.iter().map(|&i| &f[i]).collect::<Vec<_>>());
            let (res, s) = run_sub_batch(dev, js, os, init_sub, want_fields, opts, path)?;
            if opts.verbose {
                eprintln!(
                    "sub-batch of {} designs {}: device {:.3} s, {:.2} Gcells/s",
                    sub.len(),
                    path.name(),
                    s.kernel_s,
                    s.cell_updates / s.kernel_s.max(1e-12) / 1e9
                );
            }
            st += &s;
            out.extend(sub.into_iter().zip(res));
        }
    }
    Ok((out, st))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planner_says_which_path_each_design_takes_and_why() {
        let jobs = crate::bench::population_jobs(2, 8_000, 10);
        let owned: Vec<Operator> = jobs.iter().map(|j| Operator::new(j).unwrap()).collect();
        let ops: Vec<Option<&Operator>> = owned.iter().map(Some).collect();
        let auto = CudaOptions::default();
        // Plenty of shared memory: both guides on-chip.
        let d = plan_paths(&jobs, &ops, &[0, 1], None, &auto, usize::MAX / 4, "test device").unwrap();
        assert_eq!(d.iter().map(|x| x.path).collect::<Vec<_>>(), [SubPath::Onchip, SubPath::Onchip]);
        assert!(d[0].reason.contains("B shared memory"), "{}", d[0].reason);
        // No shared memory: streaming, two steps a pass (the guides are slim), the reason kept.
        let d = plan_paths(&jobs, &ops, &[1], None, &auto, 0, "test device").unwrap();
        assert_eq!((d[0].job, d[0].path), (1, SubPath::TwoStep));
        assert!(d[0].describe(&jobs[1]).starts_with(&format!("planner: {} (", jobs[1].label)));
        // One step a pass asked for: the reason says both why nots.
        let one = CudaOptions { slim: false, path: PathChoice::Streaming, ..Default::default() };
        let d = plan_paths(&jobs, &ops, &[0], None, &one, 0, "test device").unwrap();
        assert_eq!(d[0].path, SubPath::Streaming);
        assert_eq!(d[0].reason, "streaming asked for; one step a pass: one step a pass asked for");
        // On-chip demanded where it cannot fit: an error naming the design and the device.
        let onchip = CudaOptions { path: PathChoice::Onchip, ..Default::default() };
        let e = plan_paths(&jobs, &ops, &[0], None, &onchip, 0, "test device").unwrap_err().to_string();
        assert!(e.contains(&jobs[0].label) && e.contains("test device"), "{e}");
    }

    #[test]
    fn the_planned_source_stride_covers_every_sub_batch() {
        // Jobs checking at different intervals: a sub-batch of the slow ones
        // alone takes several checks a launch (its longest chunk), so the
        // planner must size the designs' shared memory for it; a GA
        // generation (one interval) plans exactly its chunk, as before.
        let mut jobs = crate::bench::population_jobs(4, 8_000, 10);
        for (k, j) in jobs.iter_mut().enumerate() {
            j.stop.check_every = if k < 2 { 50 } else { 100 };
        }
        let all: Vec<&SimJob> = jobs.iter().collect();
        for opts in [CudaOptions::default(), CudaOptions { onchip_checks: 1, ..Default::default() }, CudaOptions { trace_chunk: 4096, ..Default::default() }] {
            let bound = onchip_stride_bound(&all, &opts);
            for mask in 1..16u32 {
                let sub: Vec<&SimJob> = (0..4).filter(|k| mask >> k & 1 == 1).map(|k| &jobs[k]).collect();
                for fields in [false, true] {
                    assert!(onchip_chunk(&sub, &opts, fields).0 <= bound, "subset {mask:#b}, fields {fields}: {:?} > {bound}", onchip_chunk(&sub, &opts, fields));
                }
            }
            let same: Vec<&SimJob> = jobs[2..].iter().collect();
            assert_eq!(onchip_stride_bound(&same, &opts), onchip_chunk(&same, &opts, false).0.max(opts.trace_chunk));
        }
    }
}
