//! TLM on CUDA: the 3D SCN and 2D shunt-node jobs of a batch advance together
//! on a device, one engine kind per sub-batch (`kernels/tlm.cu`, NVRTC-compiled
//! like the FDTD kernels, `--fmad=false`, CPU twins in `src/engine/tlm/`).
//!
//! The host side packs every job with the CPU engine's own setup
//! ([`crate::engine::tlm::pack`]), lays the batch out ([`plan::Plan`]) and
//! steps it through the one stepping loop ([`drive`]): per step the node
//! kernel, the port kernel (guide-end convolutions, lumped ports, sources)
//! and, after the swap, the guide-port sampler; at checks the energy kernel.
//! Each design leaves the launch tables when it ends. 2D designs that fit a
//! thread block's shared memory may take the on-chip path instead ([`onchip`]:
//! one launch per chunk of steps, one block per design). The device is a
//! [`Device`]: a GPU, or the CPU emulation of the same kernel sources
//! (`scripts/tlm-emu.sh`), which checks kernels and host loop without a GPU.

pub mod abi;
#[cfg(test)]
mod emu_tests;
pub mod onchip;
mod onchip_run;
pub mod plan;

use self::onchip_run::OcRun;
pub use self::onchip_run::OnchipRun;
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use self::abi::{Kernel, TlmPtrs, KERNELS};
use self::plan::Plan;
use super::batch::{split_to_fit, spread, too_big};
use super::options::{CudaOptions, PathChoice, RunStats};
use crate::engine::device::{self, alloc_with, download_into, download_vec, upload, Buf, Chunk, Device, Dims, KernelArg, ModuleSpec};
use crate::engine::stepping::{self, Batch};
use crate::engine::tlm::pack::TlmPack;
use crate::engine::EngineError;
use crate::job::{EngineKind, PortTrace, SimFailure, SimJob, SimOutput};

// SAFETY: a #[repr(C)] mirror of tlm.cuh, passed by value (checked by the abi tests).
unsafe impl KernelArg for TlmPtrs {}

/// Whether a job runs on the TLM kernels.
pub fn is_tlm(job: &SimJob) -> bool {
    matches!(job.engine, EngineKind::Tlm | EngineKind::Tlm2d)
}

/// Launch shape of the node kernels (compile-time constants of the kernel source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TlmConfig {
    /// Threads per block of the node kernels.
    pub threads: u32,
    /// Nodes per thread.
    pub npt: u32,
    /// Minimum resident blocks per SM asked of the compiler (0: none), which caps registers.
    pub minb: u32,
    /// Interior nodes take a separate gather without wall tests (`TLM_SPLIT`).
    pub split: bool,
}

impl TlmConfig {
    /// Fastest on an H100 (docs/BENCHMARKS.md): 256 threads, 2 nodes each, branch-free gather.
    pub const DEFAULT: TlmConfig = TlmConfig { threads: 256, npt: 2, minb: 0, split: false };
    pub fn validate(&self) -> Result<(), String> {
        if !(self.threads.is_power_of_two() && (32..=1024).contains(&self.threads) && (1..=8).contains(&self.npt) && self.minb * self.threads <= 2048) {
            return Err(format!("TLM launch shape {self}: threads a power of two in 32..=1024, 1..=8 nodes per thread, threads x min blocks <= 2048"));
        }
        Ok(())
    }
    /// `THREADSxNODES[xMINBLOCKS][s]`, e.g. `256x1`, `256x2x4`, `256x2s` (s: split gather).
    pub fn parse(s: &str) -> Result<TlmConfig, String> {
        let (body, split) = match s.strip_suffix('s') {
            Some(b) => (b, true),
            None => (s, false),
        };
        let v: Vec<&str> = body.split('x').collect();
        let num = |t: &str| t.parse::<u32>().map_err(|_| format!("'{s}': expected THREADSxNODES[xMINBLOCKS][s], e.g. 256x1"));
        let c = match v.as_slice() {
            [t, n] => TlmConfig { threads: num(t)?, npt: num(n)?, minb: 0, split },
            [t, n, m] => TlmConfig { threads: num(t)?, npt: num(n)?, minb: num(m)?, split },
            _ => return Err(format!("'{s}': expected THREADSxNODES[xMINBLOCKS][s], e.g. 256x1")),
        };
        c.validate()?;
        Ok(c)
    }
}

impl std::fmt::Display for TlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.threads, self.npt)?;
        if self.minb > 0 {
            write!(f, "x{}", self.minb)?;
        }
        if self.split {
            write!(f, "s")?;
        }
        Ok(())
    }
}

/// The TLM kernels of launch shape `cfg` (port kernels of `port_threads`) as a module.
pub fn module(cfg: TlmConfig, port_threads: u32) -> ModuleSpec {
    ModuleSpec {
        name: "tlm",
        source: abi::kernel_source(),
        defines: vec![
            format!("-DTLM_THREADS={}", cfg.threads),
            format!("-DTLM_NPT={}", cfg.npt),
            format!("-DTLM_MINB={}", cfg.minb),
            format!("-DTLM_SPLIT={}", cfg.split as u32),
            format!("-DTLM_PORT_THREADS={port_threads}"),
        ],
        kernels: KERNELS.to_vec(),
        fallback: None,
    }
}

/// Timing of one [`drive`] call.
#[derive(Debug, Clone, Default)]
pub struct DriveStats {
    pub setup_s: f64,
    pub kernel_s: f64,
    pub node_updates: f64,
    pub bytes: f64,
    /// Modelled shared-memory bytes of the on-chip steps.
    pub smem_bytes: f64,
}

/// Buffers the loop rewrites or reads back.
struct Bufs {
    links: [Buf; 2],
    /// The stub pool (the tests start it from given states: drive_from).
    #[cfg_attr(not(test), allow(dead_code))]
    stub: Buf,
    blocks: Buf,
    jobs: Buf,
    wg_list: Buf,
    gval: Buf,
    due: Buf,
    tv: Buf,
    ti: Buf,
    energy: Buf,
    step0: Buf,
}

/// A batch of packed TLM jobs of one engine kind on a [`Dev`], as the
/// stepping loop ([`stepping::run`]) drives it: per step the node kernel, the
/// port kernel (guide-end convolutions, lumped ports, sources) and, after the
/// swap, the guide-port sampler; the energy kernel at checks.
struct TlmDevBatch<'a> {
    dev: &'a mut dyn Device,
    /// The loaded module.
    m: usize,
    jobs: &'a [&'a SimJob],
    packs: &'a [&'a TlmPack],
    plan: Plan,
    bufs: Bufs,
    pp: [TlmPtrs; 2],
    cfg: TlmConfig,
    port_threads: u32,
    kernels: [usize; 4],
    kcap: usize,
    running: Vec<bool>,
    /// Launch sizes of the running designs: node blocks, port jobs, guide ports.
    sizes: (u32, u32, u32),
    /// Field set holding the current pulses.
    cur: usize,
    /// Steps of the chunk in flight, and its samples once fetched.
    kk: usize,
    hv: Vec<f64>,
    hi: Vec<f64>,
    stats: DriveStats,
    oc: Option<OcRun>,
}

impl<'a> TlmDevBatch<'a> {
    /// Lay the batch out and upload it (allocations, tables).
    fn new(dev: &'a mut dyn Device, jobs: &'a [&'a SimJob], packs: &'a [&'a TlmPack], cfg: TlmConfig, port_threads: u32, trace_chunk: usize, onchip: Option<OnchipRun>) -> Result<Self, EngineError> {
        let nd = jobs.len();
        let m = dev.load(&module(cfg, port_threads))?;
        let max_steps: Vec<usize> = jobs.iter().zip(packs).map(|(j, pk)| j.stop.cap(pk.dt)).collect();
        let plan = Plan::new(packs, &max_steps, (cfg.threads * cfg.npt) as usize).map_err(EngineError::Cuda)?;
        let dim3 = plan.dim3;
        let (kcap, checks) = match onchip {
            Some(o) => onchip_run::chunk(jobs, trace_chunk, o.checks),
            None => (trace_chunk.max(1), 1),
        };
        let all = vec![true; nd];

        let link_bytes = plan.links * plan.l * 4;
        let b0 = dev.alloc(link_bytes)?;
        let b1 = dev.alloc(link_bytes)?;
        let stub = dev.alloc((plan.stubs * plan.ls * 4).max(16))?;
        let meta = alloc_with(dev, &plan.meta, 0)?;
        let plain = alloc_with(dev, &plan.plain, 0)?;
        let coef = alloc_with(dev, &plan.coef, 0)?;
        let designs = alloc_with(dev, &plan.designs, 0)?;
        let blocks = alloc_with(dev, &plan.block_table(&all), 0)?;
        let jobs_b = alloc_with(dev, &plan.port_jobs(&all, port_threads as usize), 0)?;
        let ends = alloc_with(dev, &plan.ends, 0)?;
        let end_node = alloc_with(dev, &plan.end_node, 0)?;
        let end_phi = alloc_with(dev, &plan.end_phi, 0)?;
        let end_kern = alloc_with(dev, &plan.end_kern, 0)?;
        let end_hist = dev.alloc((plan.hist_len * 8).max(16))?;
        let end_a = dev.alloc((plan.slots * 4).max(16))?;
        let specials = alloc_with(dev, &plan.specials, 0)?;
        let lumped = alloc_with(dev, &plan.lumped, 0)?;
        let lumped_node = alloc_with(dev, &plan.lumped_node, 0)?;
        let wgs = alloc_with(dev, &plan.wgs, 0)?;
        let wg_list = alloc_with(dev, &plan.wg_list(&all), 0)?;
        let wg_lo = alloc_with(dev, &plan.wg_lo, 0)?;
        let wg_hi = alloc_with(dev, &plan.wg_hi, 0)?;
        let wg_w = alloc_with(dev, &plan.wg_w, 0)?;
        let gval = dev.alloc(nd * kcap * 8)?;
        let due = dev.alloc((nd * 4).max(16))?;
        let tv = dev.alloc((plan.nslots * kcap * 8).max(16))?;
        let ti = dev.alloc((plan.nslots * kcap * 8).max(16))?;
        let energy = dev.alloc((nd * 8).max(16))?;
        let step0 = dev.alloc(16)?;

        let mut ptrs = |set: usize| -> TlmPtrs {
            let (cur, nxt) = if set == 0 { (b0, b1) } else { (b1, b0) };
            TlmPtrs {
                b: dev.ptr(cur),
                nb: dev.ptr(nxt),
                stub: dev.ptr(stub),
                meta: dev.ptr(meta),
                plain: dev.ptr(plain),
                coef: dev.ptr(coef),
                designs: dev.ptr(designs),
                blocks: dev.ptr(blocks),
                jobs: dev.ptr(jobs_b),
                ends: dev.ptr(ends),
                end_node: dev.ptr(end_node),
                end_phi: dev.ptr(end_phi),
                end_kern: dev.ptr(end_kern),
                end_hist: dev.ptr(end_hist),
                end_a: dev.ptr(end_a),
                specials: dev.ptr(specials),
                lumped: dev.ptr(lumped),
                lumped_node: dev.ptr(lumped_node),
                wgs: dev.ptr(wgs),
                wg_list: dev.ptr(wg_list),
                wg_lo: dev.ptr(wg_lo),
                wg_hi: dev.ptr(wg_hi),
                wg_w: dev.ptr(wg_w),
                gval: dev.ptr(gval),
                due: dev.ptr(due),
                tv: dev.ptr(tv),
                ti: dev.ptr(ti),
                energy: dev.ptr(energy),
                step0: dev.ptr(step0),
                l: plan.l as i64,
                ls: plan.ls as i64,
                gstride: kcap as i32,
                tstride: kcap as i32,
            }
        };
        let pp = [ptrs(0), ptrs(1)];
        let kernels = [Kernel::Step.index(dim3), Kernel::Ports.index(dim3), Kernel::Sample.index(dim3), Kernel::Energy.index(dim3)];
        let bufs = Bufs { links: [b0, b1], stub, blocks, jobs: jobs_b, wg_list, gval, due, tv, ti, energy, step0 };
        let oc = match onchip {
            Some(o) => Some(OcRun::new(dev, jobs, packs, &plan, o, checks)?),
            None => None,
        };
        Ok(TlmDevBatch {
            dev,
            m,
            jobs,
            packs,
            plan,
            bufs,
            pp,
            cfg,
            port_threads,
            kernels,
            kcap,
            running: vec![false; nd],
            sizes: (0, 0, 0),
            cur: 0,
            kk: 0,
            hv: vec![],
            hi: vec![],
            stats: DriveStats::default(),
            oc,
        })
    }
}

impl Batch for TlmDevBatch<'_> {
    fn len(&self) -> usize {
        self.jobs.len()
    }
    fn job(&self, d: usize) -> &SimJob {
        self.jobs[d]
    }
    fn dt(&self, d: usize) -> f64 {
        self.packs[d].dt
    }
    fn cells(&self, d: usize) -> usize {
        self.packs[d].cells
    }
    fn max_chunk(&self) -> usize {
        self.kcap
    }
    /// Launch tables of the running designs: node blocks, port jobs, guide ports.
    fn set_running(&mut self, running: &[bool]) -> Result<(), EngineError> {
        self.running = running.to_vec();
        if self.oc.is_some() {
            // One block per running design.
            let t: Vec<i32> = (0..running.len()).filter(|&d| running[d]).flat_map(|d| [d as i32, 0]).collect();
            upload(self.dev, self.bufs.blocks, 0, &t)?;
            self.sizes = ((t.len() / 2) as u32, 0, 0);
            return Ok(());
        }
        let t = self.plan.block_table(running);
        let nblocks = (t.len() / 2) as u32;
        upload(self.dev, self.bufs.blocks, 0, &t)?;
        let t = self.plan.port_jobs(running, self.port_threads as usize);
        let njobs = (t.len() / 3) as u32;
        upload(self.dev, self.bufs.jobs, 0, &t)?;
        let t = self.plan.wg_list(running);
        let nwg = t.len() as u32;
        upload(self.dev, self.bufs.wg_list, 0, &t)?;
        self.sizes = (nblocks, njobs, nwg);
        Ok(())
    }
    /// The chunk's source values, then its launches (replayed as a CUDA graph:
    /// they depend only on the chunk's key, the step count coming from step0).
    fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError> {
        let (nd, kcap) = (self.jobs.len(), self.kcap);
        let mut g = vec![0.0f64; nd * kcap];
        for d in (0..nd).filter(|&d| self.running[d]) {
            for s in 0..k {
                g[d * kcap + s] = self.jobs[d].pulse.value((n + s) as f64 * self.packs[d].dt);
            }
            self.stats.node_updates += self.packs[d].nodes() as f64 * k as f64;
            if self.oc.is_none() {
                self.stats.bytes += self.plan.step_bytes[d] * k as f64;
            }
        }
        upload(self.dev, self.bufs.gval, 0, &g)?;
        upload(self.dev, self.bufs.step0, 0, &[n as i32])?;
        self.dev.mark()?;
        if let Some(oc) = &self.oc {
            let smem: f64 = (0..nd).filter(|&d| self.running[d]).map(|d| oc.step_smem[d]).sum();
            self.stats.smem_bytes += smem * k as f64;
            self.launch_onchip(k)?;
            self.kk = k;
            return Ok(());
        }
        let (nblocks, njobs, nwg) = self.sizes;
        let (m, cfg, port_threads, [k_step, k_ports, k_sample, _], pp) = (self.m, self.cfg, self.port_threads, self.kernels, self.pp);
        let launch_chunk = |dev: &mut dyn Device, mut cur: usize| -> Result<usize, EngineError> {
            for s in 0..k {
                let si = s as i32;
                if nblocks > 0 {
                    device::launch(dev, m, k_step, Dims::linear(nblocks, cfg.threads), &[&pp[cur], &0i32, &0i32])?;
                }
                if njobs > 0 {
                    device::launch(dev, m, k_ports, Dims::linear(njobs, port_threads), &[&pp[cur], &si, &si])?;
                }
                cur = 1 - cur;
                if nwg > 0 {
                    device::launch(dev, m, k_sample, Dims::linear(nwg, port_threads), &[&pp[cur], &0i32, &si])?;
                }
            }
            Ok(cur)
        };
        let cur = self.cur;
        self.cur = match self.dev.chunk_begin([k as u64, cur as u64, nblocks as u64, njobs as u64, nwg as u64])? {
            Chunk::Replayed => cur ^ (k & 1),
            Chunk::Direct => launch_chunk(self.dev, cur)?,
            Chunk::Recording => {
                let next = launch_chunk(self.dev, cur)?;
                if !self.dev.chunk_end()? {
                    launch_chunk(self.dev, cur)?;
                }
                next
            }
        };
        self.kk = k;
        Ok(())
    }
    /// The energy kernel for the designs due, then the wait for the device
    /// (the chunk's kernel time) and the copies of energies and samples.
    fn end_chunk(&mut self, due: &[bool]) -> Result<Vec<f64>, EngineError> {
        let nd = self.jobs.len();
        if self.oc.is_some() {
            // The on-chip kernel left every running design's energy at the chunk end.
            return self.end_checks(1);
        }
        let any_due = due.iter().any(|&x| x);
        if any_due && self.sizes.0 > 0 {
            let flags: Vec<i32> = due.iter().map(|&x| x as i32).collect();
            upload(self.dev, self.bufs.due, 0, &flags)?;
            self.dev.fill(self.bufs.energy, 0, nd * 8, 0)?;
            device::launch(self.dev, self.m, self.kernels[3], Dims::linear(self.sizes.0, self.cfg.threads), &[&self.pp[self.cur], &0i32, &0i32])?;
        }
        self.stats.kernel_s += self.dev.elapsed()?;
        let w: Vec<f64> = if any_due { download_vec(self.dev, self.bufs.energy, 0, nd)? } else { vec![0.0; nd] };
        if self.plan.nslots > 0 {
            let len = self.plan.nslots * self.kcap;
            download_into(self.dev, self.bufs.tv, 0, len, &mut self.hv)?;
            download_into(self.dev, self.bufs.ti, 0, len, &mut self.hi)?;
        }
        Ok(w)
    }
    fn samples(&mut self, d: usize, traces: &mut [PortTrace]) {
        let kk = self.kk;
        self.samples_part(d, traces, 0, kk);
    }
    fn samples_part(&mut self, d: usize, traces: &mut [PortTrace], from: usize, to: usize) {
        for s in from..to {
            for (pi, &slot) in self.plan.port_slot[d].iter().enumerate() {
                traces[pi].v.push(self.hv[slot * self.kcap + s]);
                traces[pi].i.push(self.hi[slot * self.kcap + s]);
            }
        }
    }
    fn checks_per_advance(&self) -> usize {
        self.oc.as_ref().map_or(1, |oc| oc.checks)
    }
    /// The on-chip kernel's energies after each of the launch's `m` checks, the
    /// wait for the device (the launch's kernel time), and the copies of energies and samples.
    fn end_checks(&mut self, m: usize) -> Result<Vec<f64>, EngineError> {
        let Some(oc) = &self.oc else {
            return Err(EngineError::Cuda("the streaming TLM batch has no energy checks inside an advance".into()));
        };
        let (en, nd) = (oc.en, self.jobs.len());
        self.stats.kernel_s += self.dev.elapsed()?;
        let w: Vec<f64> = download_vec(self.dev, en, 0, nd * m)?;
        if self.plan.nslots > 0 {
            let len = self.plan.nslots * self.kcap;
            download_into(self.dev, self.bufs.tv, 0, len, &mut self.hv)?;
            download_into(self.dev, self.bufs.ti, 0, len, &mut self.hi)?;
        }
        Ok(w)
    }
    fn locate_non_finite(&mut self, d: usize) -> Result<String, EngineError> {
        let off = self.plan.designs[d].off as usize;
        let mut b = vec![];
        for q in 0..self.plan.links {
            b.push(download_vec::<f32>(self.dev, self.bufs.links[self.cur], q * self.plan.l + off, self.packs[d].nodes())?);
        }
        Ok(crate::engine::tlm::locate_non_finite(self.packs[d], b))
    }
    fn finish(&mut self, d: usize, traces: &mut [PortTrace]) -> (f64, f64) {
        self.packs[d].finish(traces)
    }
}

/// Step a batch of packed TLM jobs of one engine kind on `dev` until each
/// design ends, through the one stepping loop (the stop rule and failures as
/// the CPU engines have them). `trace_chunk`: steps between copies of the
/// samples; `onchip`: every design on the on-chip kernel (2D, each fitting a block).
pub(crate) fn drive(
    dev: &mut dyn Device,
    jobs: &[&SimJob],
    packs: &[&TlmPack],
    cfg: TlmConfig,
    port_threads: u32,
    trace_chunk: usize,
    onchip: Option<OnchipRun>,
) -> Result<(Vec<Result<SimOutput, SimFailure>>, DriveStats), EngineError> {
    let t0 = Instant::now();
    let mut b = TlmDevBatch::new(dev, jobs, packs, cfg, port_threads, trace_chunk, onchip)?;
    b.stats.setup_s = t0.elapsed().as_secs_f64();
    let out = stepping::run(&mut b, &[])?;
    Ok((out, b.stats))
}


/// Run a device's share of TLM jobs (indices into `jobs`, packs alongside),
/// one engine kind at a time, in sub-batches that fit its memory. 2D designs
/// are planned per design (`opts.path`): on-chip where one fits a block, else
/// on the streaming kernels; on-chip and streaming designs run as separate sub-batches.
fn run_share(
    dev: &mut dyn Device,
    jobs: &[SimJob],
    packs: &[Option<TlmPack>],
    idx: &[usize],
    cfg: TlmConfig,
    port_threads: u32,
    opts: &CudaOptions,
) -> Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError> {
    let budget = dev.budget()?;
    let budget = opts.mem_limit.map_or(budget, |m| budget.min(m));
    let pack = |i: usize| packs.get(i).and_then(|p| p.as_ref()).ok_or_else(|| EngineError::Cuda(format!("TLM job {i} has no pack")));
    let max_shared = if opts.path == PathChoice::Streaming { 0 } else { dev.max_shared() };
    let mut out = vec![];
    let mut st = RunStats::default();
    for dim3 in [true, false] {
        let (mut on, mut off) = (vec![], vec![]);
        for &i in idx {
            let pk = pack(i)?;
            if pk.dim3 != dim3 {
                continue;
            }
            // The planner: on-chip where the design fits a block, unless streaming is asked for.
            let fit = if opts.path == PathChoice::Streaming { Err("streaming asked for".to_string()) } else { onchip::plan_design(pk, max_shared) };
            match fit {
                Ok(f) => {
                    if opts.verbose {
                        eprintln!("planner: {} ({} nodes) on-chip, {} B shared memory, stubs {}", jobs[i].label, pk.nodes(), f.bytes, if f.stubs_on_chip { "on chip" } else if pk.loaded { "in the pool" } else { "none" });
                    }
                    on.push(i);
                }
                Err(why) if opts.path == PathChoice::Onchip => {
                    return Err(EngineError::Cuda(format!("--path onchip: design '{}' cannot run on-chip on {}: {why}", jobs[i].label, dev.describe())));
                }
                Err(why) => {
                    if opts.verbose {
                        eprintln!("planner: {} ({} nodes) streaming: {why}", jobs[i].label, pk.nodes());
                    }
                    off.push(i);
                }
            }
        }
        for (sel, onchip) in [(on, true), (off, false)] {
            if sel.is_empty() {
                continue;
            }
            let mut needs = vec![];
            for &i in &sel {
                let pk = pack(i)?;
                needs.push(Plan::job_bytes(pk, jobs[i].stop.cap(pk.dt)));
            }
            let parts = split_to_fit(&needs, budget).map_err(|q| too_big(&jobs[sel[q]].label, needs[q], &dev.describe(), budget))?;
            for part in parts {
                let sub: Vec<usize> = sel[part].to_vec();
                let js: Vec<&SimJob> = sub.iter().map(|&i| &jobs[i]).collect();
                let mut pk = vec![];
                for &i in &sub {
                    pk.push(pack(i)?);
                }
                dev.set_graphs(opts.graphs);
                let oc = onchip.then_some(OnchipRun { threads: opts.onchip_threads, checks: opts.onchip_checks });
                let res = drive(dev, &js, &pk, cfg, port_threads, opts.trace_chunk, oc);
                dev.release()?;
                let (res, s) = res?;
                if opts.verbose {
                    eprintln!(
                        "sub-batch of {} TLM {} designs {}: device {:.3} s, {:.2} Gnodes/s",
                        sub.len(),
                        if dim3 { "3D" } else { "2D" },
                        if onchip { "on-chip" } else { "streaming" },
                        s.kernel_s,
                        s.node_updates / s.kernel_s.max(1e-12) / 1e9
                    );
                }
                st.setup_s += s.setup_s;
                st.kernel_s += s.kernel_s;
                st.cell_updates += s.node_updates;
                st.bytes += s.bytes;
                st.sub_batches += 1;
                if onchip {
                    st.onchip_designs += sub.len();
                    st.onchip_kernel_s += s.kernel_s;
                    st.onchip_cell_updates += s.node_updates;
                    st.smem_bytes += s.smem_bytes;
                } else {
                    st.streaming_designs += sub.len();
                }
                out.extend(sub.into_iter().zip(res));
            }
        }
    }
    Ok((out, st))
}

/// Run the TLM jobs `idx` of `jobs` on the devices (spread by work); results by job index.
pub(crate) fn run(
    devices: &[Mutex<Box<dyn Device>>],
    jobs: &[SimJob],
    idx: &[usize],
    cfg: TlmConfig,
    port_threads: u32,
    opts: &CudaOptions,
) -> Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError> {
    let t0 = Instant::now();
    let packed: Vec<(usize, Result<TlmPack, SimFailure>)> =
        idx.par_iter().map(|&i| (i, crate::engine::tlm::refuse_monitors(&jobs[i]).and_then(|()| crate::engine::tlm::pack(&jobs[i])))).collect();
    let mut packs: Vec<Option<TlmPack>> = (0..jobs.len()).map(|_| None).collect();
    let mut results = vec![];
    let mut ok = vec![];
    for (i, p) in packed {
        match p {
            Ok(p) => {
                packs[i] = Some(p);
                ok.push(i);
            }
            Err(e) => results.push((i, Err(e))),
        }
    }
    let setup = t0.elapsed().as_secs_f64();
    let cost: Vec<f64> = ok.iter().map(|&i| jobs[i].mesh.cells() as f64 * jobs[i].stop.max_steps as f64).collect();
    let shares = spread(&cost, devices.len());
    let packs_ref = &packs;
    let per_dev: Vec<Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError>> = std::thread::scope(|sc| {
        let hs: Vec<_> = shares
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(g, share)| {
                let sel: Vec<usize> = share.iter().map(|&k| ok[k]).collect();
                let dev = &devices[g];
                sc.spawn(move || {
                    let mut dev = dev.lock().unwrap_or_else(|p| p.into_inner());
                    run_share(dev.as_mut(), jobs, packs_ref, &sel, cfg, port_threads, opts)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Cuda("GPU worker panicked".into())))).collect()
    });
    let mut st = RunStats { setup_s: setup, ..Default::default() };
    for r in per_dev {
        let (res, mut s) = r?;
        s.setup_s += setup;
        st.alongside(&s);
        results.extend(res);
    }
    st.wall_s = t0.elapsed().as_secs_f64();
    st.loop_s = (st.wall_s - st.setup_s).max(0.0);
    Ok((results, st))
}
