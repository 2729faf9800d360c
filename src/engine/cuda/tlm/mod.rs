//! TLM on CUDA: the 3D SCN and 2D shunt-node jobs of a batch advance together
//! on the GPU, one engine kind per sub-batch (`kernels/tlm.cu`, NVRTC-compiled
//! like the FDTD kernels, `--fmad=false`, CPU twins in `src/engine/tlm/`).
//!
//! The host side packs every job with the CPU engine's own setup
//! ([`crate::engine::tlm::pack`]), lays the batch out ([`plan::Plan`]) and
//! steps it ([`drive`]): per step the node kernel, the port kernel (guide-end
//! convolutions, lumped ports, sources) and, after the swap, the guide-port
//! sampler; every `check_every` steps of a design its energy, judged by the
//! CPU engine's own stop rule. Each design leaves the launch tables when it
//! ends. [`drive`] talks to the device through the small [`Dev`] trait:
//! [`CudaDev`] here, and a CPU emulation of the same kernel source
//! ([`emu::EmuDev`], `scripts/tlm-emu.sh`) that checks kernels and host loop
//! without a GPU.

pub mod abi;
pub mod emu;
pub mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
use rayon::prelude::*;

use self::abi::{bytes, Kernel, Pod, TlmPtrs, KERNELS, PORT_THREADS};
use self::plan::Plan;
use super::graphs::{Chunk, ChunkGraphs};
use super::{compile_error_text, drv, CudaBackend, Gpu, RunStats};
use crate::engine::tlm::pack::{self, non_finite, non_finite_port, Stopper, TlmPack};
use crate::engine::EngineError;
use crate::job::{EndReason, EngineKind, PortTrace, SimFailure, SimJob, SimOutput};

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

/// Per-GPU TLM state: launch shape and compiled modules.
pub struct TlmGpu {
    pub cfg: TlmConfig,
    kernels: HashMap<TlmConfig, Arc<Vec<CudaFunction>>>,
}

impl Default for TlmGpu {
    fn default() -> Self {
        TlmGpu { cfg: TlmConfig::DEFAULT, kernels: HashMap::new() }
    }
}

/// The device operations the stepping loop needs. Buffers are numbered;
/// every buffer starts zeroed.
pub trait Dev {
    fn alloc(&mut self, bytes: usize) -> Result<usize, EngineError>;
    fn ptr(&mut self, id: usize) -> u64;
    fn upload(&mut self, id: usize, off: usize, data: &[u8]) -> Result<(), EngineError>;
    fn download(&mut self, id: usize, off: usize, out: &mut [u8]) -> Result<(), EngineError>;
    fn zero(&mut self, id: usize) -> Result<(), EngineError>;
    /// Launch kernel `k` (index into [`KERNELS`]) as `(P, a0, a1)`.
    fn launch(&mut self, k: usize, grid: u32, block: u32, p: &TlmPtrs, a0: i32, a1: i32) -> Result<(), EngineError>;
    /// Mark the start of timed device work.
    fn mark(&mut self) -> Result<(), EngineError>;
    /// Wait for the device; seconds of device work since [`Dev::mark`].
    fn elapsed(&mut self) -> Result<f64, EngineError>;
    /// Node-kernel launch shape and port-kernel threads the kernels were built for.
    fn config(&self) -> (TlmConfig, u32);
    /// Before a chunk of launches that depends only on `key`: replay it if it
    /// was recorded, else start recording it (or say to launch directly).
    fn chunk_begin(&mut self, _key: ChunkKey) -> Result<Chunk, EngineError> {
        Ok(Chunk::Direct)
    }
    /// After the launches of a chunk begun as [`Chunk::Recording`]: keep and
    /// run the recording; false when that failed and the chunk must be launched again directly.
    fn chunk_end(&mut self) -> Result<bool, EngineError> {
        Ok(true)
    }
}

/// What a chunk's launches are made of: (steps, buffer parity, node blocks, port jobs, guide ports).
pub type ChunkKey = (usize, usize, u32, u32, u32);

fn upload<T: Pod>(dev: &mut dyn Dev, id: usize, v: &[T]) -> Result<(), EngineError> {
    dev.upload(id, 0, bytes(v))
}

fn alloc_with<T: Pod>(dev: &mut dyn Dev, v: &[T], min_elems: usize) -> Result<usize, EngineError> {
    let n = std::mem::size_of_val(v).max(min_elems * std::mem::size_of::<T>()).max(16);
    let id = dev.alloc(n)?;
    if !v.is_empty() {
        upload(dev, id, v)?;
    }
    Ok(id)
}

fn download_vec<T: Pod + Default>(dev: &mut dyn Dev, id: usize, off_elems: usize, n: usize) -> Result<Vec<T>, EngineError> {
    let mut v = vec![T::default(); n];
    let sz = std::mem::size_of::<T>();
    // SAFETY: T is plain data; every byte pattern written by the device is a valid T.
    let b = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, n * sz) };
    dev.download(id, off_elems * sz, b)?;
    Ok(v)
}

/// Timing of one [`drive`] call.
#[derive(Debug, Clone, Default)]
pub struct DriveStats {
    pub setup_s: f64,
    pub kernel_s: f64,
    pub node_updates: f64,
    pub bytes: f64,
}

struct Run {
    traces: Vec<PortTrace>,
    stop: Stopper,
    ended: Option<EndReason>,
    steps: usize,
    done: Option<Result<(), SimFailure>>,
}

/// Step a batch of packed TLM jobs of one engine kind on `dev` until each
/// design ends (energy decay, step cap, or a failure the CPU engine would
/// report the same way). `trace_chunk`: steps between copies of the samples.
pub(crate) fn drive(dev: &mut dyn Dev, jobs: &[&SimJob], packs: &[&TlmPack], trace_chunk: usize) -> Result<(Vec<Result<SimOutput, SimFailure>>, DriveStats), EngineError> {
    let t0 = Instant::now();
    let nd = jobs.len();
    let (cfg, port_threads) = dev.config();
    let refs: Vec<&TlmPack> = packs.to_vec();
    let max_steps: Vec<usize> = jobs.iter().map(|j| j.stop.max_steps).collect();
    let plan = Plan::new(&refs, &max_steps, (cfg.threads * cfg.npt) as usize).map_err(EngineError::Cuda)?;
    let dim3 = plan.dim3;
    let kcap = trace_chunk.max(1);
    let all = vec![true; nd];

    let link_bytes = plan.links * plan.l * 4;
    let b0 = dev.alloc(link_bytes)?;
    let b1 = dev.alloc(link_bytes)?;
    let stub = dev.alloc((plan.stubs * plan.ls * 4).max(16))?;
    let meta = alloc_with(dev, &plan.meta, 0)?;
    let plain = alloc_with(dev, &plan.plain, 0)?;
    let coef = alloc_with(dev, &plan.coef, 0)?;
    let designs = alloc_with(dev, &plan.designs, 0)?;
    let full_blocks = plan.block_table(&all);
    let blocks = alloc_with(dev, &full_blocks, 0)?;
    let full_jobs = plan.port_jobs(&all, port_threads as usize);
    let jobs_b = alloc_with(dev, &full_jobs, 0)?;
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
    let full_wg = plan.wg_list(&all);
    let wg_list = alloc_with(dev, &full_wg, 0)?;
    let wg_lo = alloc_with(dev, &plan.wg_lo, 0)?;
    let wg_hi = alloc_with(dev, &plan.wg_hi, 0)?;
    let wg_w = alloc_with(dev, &plan.wg_w, 0)?;
    let gval = dev.alloc(nd * kcap * 8)?;
    let due_b = dev.alloc((nd * 4).max(16))?;
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
            due: dev.ptr(due_b),
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
    let bufs = [b0, b1];

    let mut runs: Vec<Run> = jobs
        .iter()
        .map(|j| Run { traces: vec![PortTrace::default(); j.ports.len()], stop: Stopper::new(j), ended: None, steps: 0, done: None })
        .collect();
    let mut active: Vec<bool> = jobs.iter().map(|j| j.stop.max_steps > 0).collect();
    for (d, r) in runs.iter_mut().enumerate() {
        if !active[d] {
            r.done = Some(Ok(()));
        }
    }
    let dts: Vec<f64> = packs.iter().map(|p| p.dt).collect();
    let (k_step, k_ports, k_sample, k_energy) = (Kernel::Step.index(dim3), Kernel::Ports.index(dim3), Kernel::Sample.index(dim3), Kernel::Energy.index(dim3));
    let (mut nblocks, mut njobs, mut nwg) = (0u32, 0u32, 0u32);
    let mut dirty = true;
    let mut cur = 0usize;
    let mut n = 0usize;
    let mut st = DriveStats { setup_s: t0.elapsed().as_secs_f64(), ..Default::default() };
    while active.iter().any(|&a| a) {
        if dirty {
            let t = plan.block_table(&active);
            nblocks = (t.len() / 2) as u32;
            upload(dev, blocks, &t)?;
            let t = plan.port_jobs(&active, port_threads as usize);
            njobs = (t.len() / 3) as u32;
            upload(dev, jobs_b, &t)?;
            let t = plan.wg_list(&active);
            nwg = t.len() as u32;
            upload(dev, wg_list, &t)?;
            dirty = false;
        }
        // Steps until the next check (or cap) of any running design.
        let mut kk = kcap;
        for d in 0..nd {
            if active[d] {
                let ce = jobs[d].stop.check_every.max(1);
                let next = (n / ce + 1) * ce;
                kk = kk.min(next.min(jobs[d].stop.max_steps) - n);
            }
        }
        let mut g = vec![0.0f64; nd * kcap];
        for d in 0..nd {
            if active[d] {
                for s in 0..kk {
                    g[d * kcap + s] = jobs[d].pulse.value((n + s) as f64 * dts[d]);
                }
            }
        }
        upload(dev, gval, &g)?;
        let due: Vec<i32> = (0..nd).map(|d| (active[d] && (n + kk) % jobs[d].stop.check_every.max(1) == 0) as i32).collect();
        let any_due = due.iter().any(|&x| x != 0);
        if any_due {
            upload(dev, due_b, &due)?;
            dev.zero(energy)?;
        }
        upload(dev, step0, &[n as i32])?;
        dev.mark()?;
        // A chunk's launches depend only on its key (the step count from step0
        // is an argument relative to the chunk): replayed as a CUDA graph.
        let launch_chunk = |dev: &mut dyn Dev, mut cur: usize| -> Result<usize, EngineError> {
            for s in 0..kk {
                if nblocks > 0 {
                    dev.launch(k_step, nblocks, cfg.threads, &pp[cur], 0, 0)?;
                }
                if njobs > 0 {
                    dev.launch(k_ports, njobs, port_threads, &pp[cur], s as i32, s as i32)?;
                }
                cur = 1 - cur;
                if nwg > 0 {
                    dev.launch(k_sample, nwg, port_threads, &pp[cur], 0, s as i32)?;
                }
            }
            Ok(cur)
        };
        cur = match dev.chunk_begin((kk, cur, nblocks, njobs, nwg))? {
            Chunk::Replayed => cur ^ (kk & 1),
            Chunk::Direct => launch_chunk(dev, cur)?,
            Chunk::Recording => {
                let next = launch_chunk(dev, cur)?;
                if !dev.chunk_end()? {
                    launch_chunk(dev, cur)?;
                }
                next
            }
        };
        if any_due && nblocks > 0 {
            dev.launch(k_energy, nblocks, cfg.threads, &pp[cur], 0, 0)?;
        }
        st.kernel_s += dev.elapsed()?;
        let w: Vec<f64> = if any_due { download_vec(dev, energy, 0, nd)? } else { vec![] };
        let (hv, hi): (Vec<f64>, Vec<f64>) =
            if plan.nslots > 0 { (download_vec(dev, tv, 0, plan.nslots * kcap)?, download_vec(dev, ti, 0, plan.nslots * kcap)?) } else { (vec![], vec![]) };
        let n0 = n;
        n += kk;
        for d in 0..nd {
            if !active[d] {
                continue;
            }
            st.node_updates += packs[d].nodes() as f64 * kk as f64;
            st.bytes += plan.step_bytes[d] * kk as f64;
            let r = &mut runs[d];
            let mut failed = None;
            for s in 0..kk {
                for (pi, &slot) in plan.port_slot[d].iter().enumerate() {
                    r.traces[pi].v.push(hv[slot * kcap + s]);
                    r.traces[pi].i.push(hi[slot * kcap + s]);
                }
                if let Some(pi) = non_finite_port(&r.traces) {
                    failed = Some(non_finite(n0 + s, format!("port {}", jobs[d].ports[pi].name)));
                    break;
                }
            }
            r.steps = n;
            if failed.is_none() && due[d] != 0 {
                let en = w[d];
                if !en.is_finite() {
                    let off = plan.designs[d].off as usize;
                    let mut b = vec![];
                    for q in 0..plan.links {
                        b.push(download_vec::<f32>(dev, bufs[cur], q * plan.l + off, packs[d].nodes())?);
                    }
                    failed = Some(non_finite(n - 1, packs[d].locate(b)));
                } else if let Some(e) = r.stop.check(n as f64 * dts[d], en) {
                    r.ended = Some(e);
                    r.done = Some(Ok(()));
                }
            }
            if let Some(f) = failed {
                r.done = Some(Err(f));
            } else if n == jobs[d].stop.max_steps {
                r.done = Some(Ok(()));
            }
            if r.done.is_some() {
                active[d] = false;
                dirty = true;
            }
        }
    }
    let out = runs
        .into_iter()
        .enumerate()
        .map(|(d, r)| match r.done.expect("every design finished") {
            Err(e) => Err(e),
            Ok(()) => {
                let mut traces = r.traces;
                let (v_offset, i_offset) = packs[d].finish(&mut traces);
                let ended = r.ended.unwrap_or(r.stop.at_cap());
                Ok(SimOutput { dt: dts[d], steps: r.steps, v_offset, i_offset, traces, ended, cells: packs[d].cells })
            }
        })
        .collect();
    Ok((out, st))
}

// ---------------------------------------------------------------------------
// The CUDA device.

/// PTX of `kernels/tlm.cu` per (arch, launch shape), compiled once per process.
fn tlm_ptx(arch: &'static str, cfg: TlmConfig) -> Result<Ptx, EngineError> {
    static CACHE: OnceLock<Mutex<HashMap<(&'static str, TlmConfig), Ptx>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut c = cache.lock().unwrap();
    if let Some(p) = c.get(&(arch, cfg)) {
        return Ok(p.clone());
    }
    let src = abi::kernel_source();
    let opts = |arch: &'static str| CompileOptions {
        arch: Some(arch),
        // No contraction into fused multiply-adds: the CPU engine rounds every product.
        fmad: Some(false),
        options: vec![format!("-DTLM_THREADS={}", cfg.threads), format!("-DTLM_NPT={}", cfg.npt), format!("-DTLM_MINB={}", cfg.minb), format!("-DTLM_SPLIT={}", cfg.split as u32)],
        ..Default::default()
    };
    let ptx = match compile_ptx_with_opts(&src, opts(arch)) {
        Ok(p) => p,
        Err(CompileError::GetPtxError(_)) if arch.starts_with("sm_") => {
            let virt: &'static str = Box::leak(arch.replace("sm_", "compute_").into_boxed_str());
            compile_ptx_with_opts(&src, opts(virt)).map_err(|e| EngineError::Cuda(compile_error_text(&e)))?
        }
        Err(e) => return Err(EngineError::Cuda(compile_error_text(&e))),
    };
    c.insert((arch, cfg), ptx.clone());
    Ok(ptx)
}

impl Gpu {
    fn tlm_kernels(&mut self, cfg: TlmConfig) -> Result<Arc<Vec<CudaFunction>>, EngineError> {
        if let Some(k) = self.tlm.kernels.get(&cfg) {
            return Ok(k.clone());
        }
        let ptx = tlm_ptx(self.arch, cfg)?;
        let m = self.ctx.load_module(ptx).map_err(drv)?;
        let mut v = vec![];
        for name in KERNELS {
            v.push(m.load_function(name).map_err(|e| EngineError::Cuda(format!("loading kernel {name}: {e:?}")))?);
        }
        let k = Arc::new(v);
        self.tlm.kernels.insert(cfg, k.clone());
        Ok(k)
    }
}

/// [`Dev`] on one CUDA stream.
pub struct CudaDev {
    stream: Arc<CudaStream>,
    k: Arc<Vec<CudaFunction>>,
    cfg: TlmConfig,
    bufs: Vec<CudaSlice<u8>>,
    start: Option<CudaEvent>,
    graphs: ChunkGraphs<ChunkKey>,
}

impl Dev for CudaDev {
    fn alloc(&mut self, bytes: usize) -> Result<usize, EngineError> {
        self.bufs.push(self.stream.alloc_zeros::<u8>(bytes.max(16)).map_err(drv)?);
        Ok(self.bufs.len() - 1)
    }
    fn ptr(&mut self, id: usize) -> u64 {
        let (p, _sync) = self.bufs[id].device_ptr(&self.stream);
        p
    }
    fn upload(&mut self, id: usize, off: usize, data: &[u8]) -> Result<(), EngineError> {
        if data.is_empty() {
            return Ok(());
        }
        let mut v = self.bufs[id].slice_mut(off..off + data.len());
        self.stream.memcpy_htod(data, &mut v).map_err(drv)
    }
    fn download(&mut self, id: usize, off: usize, out: &mut [u8]) -> Result<(), EngineError> {
        if out.is_empty() {
            return Ok(());
        }
        let v = self.bufs[id].slice(off..off + out.len());
        self.stream.memcpy_dtoh(&v, out).map_err(drv)?;
        self.stream.synchronize().map_err(drv)
    }
    fn zero(&mut self, id: usize) -> Result<(), EngineError> {
        let (stream, buf) = (&self.stream, &mut self.bufs[id]);
        stream.memset_zeros(buf).map_err(drv)
    }
    fn launch(&mut self, k: usize, grid: u32, block: u32, p: &TlmPtrs, a0: i32, a1: i32) -> Result<(), EngineError> {
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the pointer struct addresses live buffers of this stream sized by the plan;
        // the kernels stay inside them (ranges from the same plan).
        unsafe { self.stream.launch_builder(&self.k[k]).arg(p).arg(&a0).arg(&a1).launch(cfg) }.map_err(drv)?;
        Ok(())
    }
    fn mark(&mut self) -> Result<(), EngineError> {
        self.start = Some(self.stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?);
        Ok(())
    }
    fn elapsed(&mut self) -> Result<f64, EngineError> {
        let e = self.stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?;
        self.stream.synchronize().map_err(drv)?;
        let a = self.start.take().ok_or_else(|| EngineError::Cuda("elapsed without mark".into()))?;
        Ok(a.elapsed_ms(&e).map_err(drv)? as f64 * 1e-3)
    }
    fn config(&self) -> (TlmConfig, u32) {
        (self.cfg, PORT_THREADS)
    }
    fn chunk_begin(&mut self, key: ChunkKey) -> Result<Chunk, EngineError> {
        self.graphs.begin(key)
    }
    fn chunk_end(&mut self) -> Result<bool, EngineError> {
        self.graphs.end()
    }
}

impl Drop for CudaDev {
    fn drop(&mut self) {
        // Buffers free on the stream; wait so that a following batch finds the memory.
        let _ = self.stream.synchronize();
    }
}

impl Gpu {
    /// Run this device's share of TLM jobs (indices into `jobs`, packs alongside),
    /// one engine kind at a time, in sub-batches that fit its memory.
    fn run_tlm_share(&mut self, jobs: &[SimJob], packs: &[Option<TlmPack>], idx: &[usize], trace_chunk: usize, mem_cap: Option<usize>, graphs: bool) -> Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError> {
        let cfg = self.tlm.cfg;
        let k = self.tlm_kernels(cfg)?;
        let mut budget = self.budget()?;
        if let Some(m) = mem_cap {
            budget = budget.min(m);
        }
        let mut out = vec![];
        let mut st = RunStats::default();
        for dim3 in [true, false] {
            let sel: Vec<usize> = idx.iter().copied().filter(|&i| packs[i].as_ref().unwrap().dim3 == dim3).collect();
            if sel.is_empty() {
                continue;
            }
            let needs: Vec<usize> = sel.iter().map(|&i| Plan::job_bytes(packs[i].as_ref().unwrap(), jobs[i].stop.max_steps)).collect();
            let parts = super::batch::split_to_fit(&needs, budget).map_err(|q| {
                EngineError::Cuda(format!(
                    "design '{}' needs {:.2} GiB of device memory, GPU {} ({}) can give {:.2} GiB",
                    jobs[sel[q]].label,
                    needs[q] as f64 / (1u64 << 30) as f64,
                    self.ordinal,
                    self.name,
                    budget as f64 / (1u64 << 30) as f64
                ))
            })?;
            for part in parts {
                let sub: Vec<usize> = sel[part].to_vec();
                let js: Vec<&SimJob> = sub.iter().map(|&i| &jobs[i]).collect();
                let pk: Vec<&TlmPack> = sub.iter().map(|&i| packs[i].as_ref().unwrap()).collect();
                let mut dev = CudaDev { stream: self.stream.clone(), k: k.clone(), cfg, bufs: vec![], start: None, graphs: ChunkGraphs::new(self.stream.clone(), graphs, "TLM steps") };
                let (res, s) = drive(&mut dev, &js, &pk, trace_chunk)?;
                drop(dev);
                st.setup_s += s.setup_s;
                st.kernel_s += s.kernel_s;
                st.cell_updates += s.node_updates;
                st.bytes += s.bytes;
                st.sub_batches += 1;
                out.extend(sub.into_iter().zip(res));
            }
        }
        Ok((out, st))
    }
}

impl CudaBackend {
    /// Set the node-kernel launch shape of the TLM kernels on every device.
    pub fn set_tlm_config(&self, cfg: TlmConfig) -> Result<(), EngineError> {
        cfg.validate().map_err(EngineError::Cuda)?;
        for g in &self.gpus {
            g.lock().unwrap().tlm.cfg = cfg;
        }
        Ok(())
    }

    /// Compile the TLM kernels for `cfg` on every device and report registers,
    /// local memory (spills) and occupancy per kernel.
    pub fn tlm_compile_report(&self, cfg: TlmConfig) -> Result<String, EngineError> {
        let mut out = String::new();
        for g in &self.gpus {
            let mut g = g.lock().unwrap();
            let t = Instant::now();
            let k = g.tlm_kernels(cfg)?;
            out += &format!("GPU {} ({}), TLM {cfg}: compiled and loaded in {:.2} s\n", g.ordinal, g.arch, t.elapsed().as_secs_f64());
            for (name, f) in KERNELS.iter().zip(k.iter()) {
                let threads = if name.ends_with("_step") || name.ends_with("_energy") { cfg.threads } else { PORT_THREADS };
                let occ = f.occupancy_max_active_blocks_per_multiprocessor(threads, 0, None).unwrap_or(0);
                out += &format!(
                    "  {name:<18} regs {:>3}  local {:>4} B  shared {:>6} B  blocks/SM {occ}\n",
                    f.num_regs().unwrap_or(-1),
                    f.local_size_bytes().unwrap_or(-1),
                    f.shared_size_bytes().unwrap_or(-1)
                );
            }
        }
        Ok(out)
    }

    /// Run the TLM jobs `idx` of `jobs` on the GPUs (spread by work); results by job index.
    pub(super) fn run_tlm(&self, jobs: &[SimJob], idx: &[usize]) -> Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError> {
        let t0 = Instant::now();
        let packed: Vec<(usize, Result<TlmPack, SimFailure>)> = idx.par_iter().map(|&i| (i, pack::pack(&jobs[i]))).collect();
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
        let shares = super::batch::spread(&cost, self.gpus.len());
        let packs_ref = &packs;
        let chunk = self.opts.trace_chunk;
        let graphs = self.opts.graphs;
        // No cap beyond what the card has free (a merge may pass CudaOptions' memory limit here).
        let cap: Option<usize> = None;
        let per_gpu: Vec<Result<(Vec<(usize, Result<SimOutput, SimFailure>)>, RunStats), EngineError>> = std::thread::scope(|sc| {
            let hs: Vec<_> = shares
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .map(|(g, share)| {
                    let sel: Vec<usize> = share.iter().map(|&k| ok[k]).collect();
                    let gpu = &self.gpus[g];
                    sc.spawn(move || {
                        let mut gpu = gpu.lock().unwrap();
                        gpu.ctx.bind_to_thread().map_err(drv)?;
                        gpu.run_tlm_share(jobs, packs_ref, &sel, chunk, cap, graphs)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Cuda("GPU worker panicked".into())))).collect()
        });
        let mut st = RunStats { setup_s: setup, ..Default::default() };
        for r in per_gpu {
            let (res, s) = r?;
            st.setup_s = st.setup_s.max(setup + s.setup_s);
            st.kernel_s = st.kernel_s.max(s.kernel_s);
            st.cell_updates += s.cell_updates;
            st.bytes += s.bytes;
            st.sub_batches += s.sub_batches;
            st.gpus_used += 1;
            results.extend(res);
        }
        st.wall_s = t0.elapsed().as_secs_f64();
        Ok((results, st))
    }
}
