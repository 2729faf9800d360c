//! The CUDA backend: every FDTD job of a batch advances together on the GPU,
//! one kernel launch per step for the whole batch (the fused `fdtd_step`), or
//! one per half step (`fdtd_update_h`, `fdtd_pmc_ghosts`, `fdtd_update_e`:
//! the split scheme, kept as the plain reference). Kernels come from
//! `kernels/fdtd.cu`, compiled once per process by NVRTC for the device's
//! compute capability, with the same arithmetic as the CPU engine
//! (`engine::fdtd::cpu`), so the two agree to float rounding.
//!
//! The host side (operator, coefficient tables, CPML profiles, ports) is the
//! shared [`Operator`]; [`batch::Plan`] packs a batch into flat pools. Each
//! design stops contributing when its own end criterion is met: it leaves the
//! block table and the port kernels skip it. Device buffers live in a pool
//! per GPU that grows when a batch needs more; batches larger than the card
//! run in sub-batches; `gpus` spreads jobs over several devices (one context
//! and stream each, a host thread per device).
//!
//! TLM jobs run on the TLM kernels ([`tlm`]: `kernels/tlm.cu`).

pub mod abi;
pub mod batch;
pub mod graphs;
// --- TLM on CUDA (branch tlmcuda): kernels/tlm.cu, src/engine/cuda/tlm/ ---
pub mod tlm;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};
use rayon::prelude::*;

use self::abi::{FdtdPtrs, PortPtrs};
use self::batch::{Plan, Tile};
use super::fdtd::cpu::Fields;
use super::fdtd::Operator;
use super::{Backend, BatchResult, EngineError};
use crate::consts::{EPS0, MU0};
use crate::job::{EndReason, PortTrace, SimFailure, SimJob, SimOutput};

/// True when the CUDA driver and NVRTC libraries load and at least one
/// device exists. Never panics.
pub fn available() -> bool {
    std::panic::catch_unwind(|| {
        // SAFETY: only probes whether the shared libraries can be opened.
        let libs = unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nvrtc::sys::is_culib_present() };
        libs && CudaContext::device_count().map(|n| n > 0).unwrap_or(false)
    })
    .unwrap_or(false)
}

/// Why [`available`] is false, for messages.
pub fn unavailable_reason() -> String {
    // SAFETY: as in `available`.
    let drv = unsafe { cudarc::driver::sys::is_culib_present() };
    let rtc = std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
    if !drv {
        "the CUDA driver library (libcuda) was not found".into()
    } else if !rtc {
        "the NVRTC library (libnvrtc) was not found".into()
    } else {
        match std::panic::catch_unwind(CudaContext::device_count) {
            Ok(Ok(0)) => "no CUDA device".into(),
            Ok(Ok(_)) => "CUDA is available".into(),
            Ok(Err(e)) => format!("cuInit failed: {e:?}"),
            Err(_) => "the CUDA driver panicked while loading".into(),
        }
    }
}

/// Which kernels advance the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `fdtd_step`: H, ghosts and E in one launch (ping-pong field sets).
    Fused,
    /// `fdtd_update_h`, `fdtd_pmc_ghosts`, `fdtd_update_e`: one launch per half step, in place.
    Split,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Fused => "fused",
            Scheme::Split => "split",
        }
    }
}

/// Planes per thread of the split kernels unless set.
pub const SPLIT_ZCHUNK: usize = 2;

/// Tuning and checking knobs of the backend.
#[derive(Debug, Clone)]
pub struct CudaOptions {
    pub scheme: Scheme,
    pub tile: Tile,
    /// Planes per z-chunk; None chooses from the device's occupancy.
    pub zchunk: Option<usize>,
    /// Fill the write-only field set with NaN before a run: any position the
    /// fused kernel failed to write then poisons the result.
    pub poison: bool,
    /// Steps between copies of the port samples to the host.
    pub trace_chunk: usize,
    /// Cap on the device bytes a batch may use per GPU (None: what the card has free).
    pub mem_limit: Option<usize>,
    /// Replay each chunk of steps (FDTD and TLM) as a captured CUDA graph
    /// (one launch instead of three per step) when the driver allows it.
    pub graphs: bool,
    /// Fused scheme: let each sub-batch use a shorter tile of the same width
    /// when its designs are thin (batch::fit_tile), and re-chunk z as designs
    /// finish (unless `zchunk` is set). Off: exactly `tile`, one z-chunking.
    pub adapt: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions { scheme: Scheme::Fused, tile: Tile::DEFAULT, zchunk: None, poison: false, trace_chunk: 256, mem_limit: None, graphs: true, adapt: true }
    }
}

/// Timings of the last batch.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Host work before the first step (operators, packing, uploads), seconds.
    pub setup_s: f64,
    /// Device time of the stepping kernels (events around each chunk of steps), seconds.
    pub kernel_s: f64,
    /// Whole call, seconds.
    pub wall_s: f64,
    /// Host time of the stepping loops (launches, uploads, waits, trace
    /// handling), and the part of it spent waiting for the device, seconds.
    pub loop_s: f64,
    pub wait_s: f64,
    /// Sum over jobs of cells x steps.
    pub cell_updates: f64,
    /// Compulsory device bytes of all steps (batch::step_bytes).
    pub bytes: f64,
    pub sub_batches: usize,
    /// Devices that ran jobs.
    pub gpus_used: usize,
    /// z-chunk chosen for the last sub-batch.
    pub zchunk: usize,
}

/// Result of one job with, on request, its final fields.
pub struct JobRun {
    pub out: SimOutput,
    pub fields: Option<Fields>,
}

/// Runs FDTD jobs on one or more CUDA devices.
pub struct CudaBackend {
    gpus: Vec<Mutex<Gpu>>,
    opts: CudaOptions,
    stats: Mutex<RunStats>,
}

struct Kernels {
    update_h: CudaFunction,
    pmc_ghosts: CudaFunction,
    update_e: CudaFunction,
    step: CudaFunction,
    inject: CudaFunction,
    sample: CudaFunction,
    energy: CudaFunction,
}

struct Pool {
    field_cap: usize,
    psi_cap: usize,
    e: [[CudaSlice<f32>; 3]; 2],
    h: [[CudaSlice<f32>; 3]; 2],
    mat: [CudaSlice<u8>; 3],
    psi_e: CudaSlice<f32>,
    psi_h: [CudaSlice<f32>; 2],
}

impl Pool {
    fn bytes(&self) -> usize {
        self.field_cap * (12 * 4 + 3) + self.psi_cap * 3 * 4
    }
}

struct Gpu {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    arch: &'static str,
    sms: u32,
    kernels: HashMap<Tile, Arc<Kernels>>,
    pool: Option<Pool>,
    /// TLM launch shape and modules (tlm.rs).
    tlm: tlm::TlmGpu,
}

fn drv(e: cudarc::driver::DriverError) -> EngineError {
    EngineError::Cuda(format!("{e:?}"))
}

fn compile_error_text(e: &CompileError) -> String {
    match e {
        CompileError::CompileError { nvrtc, options, log } => {
            format!("NVRTC {nvrtc:?} with options {options:?}:\n{}", log.to_string_lossy())
        }
        other => format!("NVRTC: {other:?}"),
    }
}

/// PTX per (arch, tile), compiled once per process.
fn ptx_for(arch: &'static str, tile: Tile) -> Result<Ptx, EngineError> {
    static CACHE: OnceLock<Mutex<HashMap<(&'static str, Tile), Ptx>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut c = cache.lock().unwrap();
    if let Some(p) = c.get(&(arch, tile)) {
        return Ok(p.clone());
    }
    let src = abi::kernel_source();
    let opts = |arch: &'static str, plain: bool| CompileOptions {
        arch: Some(arch),
        // No contraction into fused multiply-adds: the CPU engine rounds every product.
        fmad: Some(false),
        options: tile.defines().into_iter().chain(plain.then(|| "-DEMV_NO_CPASYNC=1".to_string())).collect(),
        ..Default::default()
    };
    let ptx = match compile_ptx_with_opts(&src, opts(arch, false)) {
        Ok(p) => p,
        // Some NVRTC versions give no PTX for a real (sm_) target: retry with the virtual one.
        Err(CompileError::GetPtxError(_)) if arch.starts_with("sm_") => {
            let virt: &'static str = Box::leak(arch.replace("sm_", "compute_").into_boxed_str());
            compile_ptx_with_opts(&src, opts(virt, false)).map_err(|e| EngineError::Cuda(compile_error_text(&e)))?
        }
        // The asynchronous-copy pipeline did not build: say why, and build the plain-load variant.
        Err(e) => {
            eprintln!("warning: kernels with cp.async failed to compile for {arch}, tile {tile}; using plain loads:\n{}", compile_error_text(&e));
            compile_ptx_with_opts(&src, opts(arch, true)).map_err(|e| EngineError::Cuda(compile_error_text(&e)))?
        }
    };
    c.insert((arch, tile), ptx.clone());
    Ok(ptx)
}

impl Gpu {
    fn open(ordinal: usize) -> Result<Gpu, EngineError> {
        let n = CudaContext::device_count().map_err(drv)? as usize;
        if ordinal >= n {
            return Err(EngineError::CudaUnavailable(format!("GPU {ordinal} requested, {n} device(s) present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(drv)?;
        // One stream per worker orders all its work; no per-buffer events needed.
        // SAFETY: buffers of this backend are only used on the stream that made them.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(drv)?;
        let (maj, min) = ctx.compute_capability().map_err(drv)?;
        let arch: &'static str = Box::leak(format!("sm_{maj}{min}").into_boxed_str());
        let sms = ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(drv)? as u32;
        let name = ctx.name().map_err(drv)?;
        Ok(Gpu { ordinal, ctx, stream, name, arch, sms, kernels: HashMap::new(), pool: None, tlm: Default::default() })
    }

    fn kernels(&mut self, tile: Tile) -> Result<Arc<Kernels>, EngineError> {
        if let Some(k) = self.kernels.get(&tile) {
            return Ok(k.clone());
        }
        let ptx = ptx_for(self.arch, tile)?;
        let m = self.ctx.load_module(ptx).map_err(drv)?;
        let f = |n: &str| m.load_function(n).map_err(|e| EngineError::Cuda(format!("loading kernel {n}: {e:?}")));
        let k = Arc::new(Kernels {
            update_h: f("fdtd_update_h")?,
            pmc_ghosts: f("fdtd_pmc_ghosts")?,
            update_e: f("fdtd_update_e")?,
            step: f("fdtd_step")?,
            inject: f("fdtd_inject")?,
            sample: f("fdtd_sample_ports")?,
            energy: f("fdtd_energy")?,
        });
        self.kernels.insert(tile, k.clone());
        Ok(k)
    }

    /// Blocks of the stepping kernel that are resident on the whole device at once.
    fn resident_blocks(&self, k: &Kernels, opts: &CudaOptions) -> usize {
        let f = match opts.scheme {
            Scheme::Fused => &k.step,
            Scheme::Split => &k.update_e,
        };
        let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(opts.tile.threads() as u32, 0, None).unwrap_or(1).max(1);
        per_sm as usize * self.sms as usize
    }

    /// Free device bytes a batch may use (the pool's own buffers count as free).
    fn budget(&self) -> Result<usize, EngineError> {
        self.ctx.bind_to_thread().map_err(drv)?;
        let (free, total) = self.ctx.mem_get_info().map_err(drv)?;
        let pool = self.pool.as_ref().map_or(0, |p| p.bytes());
        let reserve = (total / 32).max(256 << 20);
        Ok((free + pool).saturating_sub(reserve))
    }

    fn ensure_pool(&mut self, field_len: usize, psi_len: usize) -> Result<(), EngineError> {
        if let Some(p) = &self.pool {
            if p.field_cap >= field_len && p.psi_cap >= psi_len {
                return Ok(());
            }
        }
        let (field_cap, psi_cap) = match &self.pool {
            Some(p) => (p.field_cap.max(field_len), p.psi_cap.max(psi_len)),
            None => (field_len, psi_len),
        };
        // Free the old pool before allocating the larger one.
        self.pool = None;
        self.stream.synchronize().map_err(drv)?;
        let s = &self.stream;
        let f = |n: usize| s.alloc_zeros::<f32>(n.max(1)).map_err(drv);
        let u = |n: usize| s.alloc_zeros::<u8>(n.max(1)).map_err(drv);
        self.pool = Some(Pool {
            field_cap,
            psi_cap,
            e: [[f(field_cap)?, f(field_cap)?, f(field_cap)?], [f(field_cap)?, f(field_cap)?, f(field_cap)?]],
            h: [[f(field_cap)?, f(field_cap)?, f(field_cap)?], [f(field_cap)?, f(field_cap)?, f(field_cap)?]],
            mat: [u(field_cap)?, u(field_cap)?, u(field_cap)?],
            psi_e: f(psi_cap)?,
            psi_h: [f(psi_cap)?, f(psi_cap)?],
        });
        Ok(())
    }
}

/// Device pointer of a buffer (one stream per context: no event bookkeeping).
fn dptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// Upload a host table (at least one element, so that empty tables still get a valid pointer).
fn table<T: cudarc::driver::DeviceRepr + Default + Clone>(stream: &Arc<CudaStream>, v: &[T]) -> Result<CudaSlice<T>, EngineError> {
    if v.is_empty() {
        stream.clone_htod(&[T::default()][..]).map_err(drv)
    } else {
        stream.clone_htod(v).map_err(drv)
    }
}

/// Per-design bookkeeping of the stepping loop (mirrors cpu.rs `run_from`).
struct DesignRun {
    traces: Vec<PortTrace>,
    peak: f64,
    ended: EndReason,
    steps: usize,
    done: Option<Result<(), SimFailure>>,
    fields: Option<Fields>,
}

impl CudaBackend {
    /// Open the listed GPUs (ordinals) with default options.
    pub fn new(gpus: &[usize]) -> Result<Self, EngineError> {
        Self::with_options(gpus, CudaOptions::default())
    }

    pub fn with_options(gpus: &[usize], opts: CudaOptions) -> Result<Self, EngineError> {
        if !available() {
            return Err(EngineError::CudaUnavailable(unavailable_reason()));
        }
        opts.tile.validate().map_err(EngineError::Cuda)?;
        if gpus.is_empty() {
            return Err(EngineError::CudaUnavailable("no GPU listed".into()));
        }
        // One worker (context, stream, buffer pool, host thread) per listed GPU. A GPU
        // listed twice gets two workers: the multi-GPU path can be tested on one device.
        let mut list = vec![];
        for &g in gpus {
            list.push(Mutex::new(Gpu::open(g)?));
        }
        Ok(CudaBackend { gpus: list, opts, stats: Mutex::new(RunStats::default()) })
    }

    pub fn options(&self) -> &CudaOptions {
        &self.opts
    }

    pub fn set_options(&mut self, opts: CudaOptions) -> Result<(), EngineError> {
        opts.tile.validate().map_err(EngineError::Cuda)?;
        self.opts = opts;
        Ok(())
    }

    /// "NVIDIA H100 80GB HBM3 (GPU 0, sm_90, 132 SMs)" per device.
    pub fn devices(&self) -> Vec<String> {
        self.gpus
            .iter()
            .map(|g| {
                let g = g.lock().unwrap();
                format!("{} (GPU {}, {}, {} SMs)", g.name, g.ordinal, g.arch, g.sms)
            })
            .collect()
    }

    /// Timings of the last batch.
    pub fn last_stats(&self) -> RunStats {
        self.stats.lock().unwrap().clone()
    }

    /// Compile the kernels for `tile` on every device and report registers,
    /// local memory (spills) and static shared memory per kernel.
    pub fn compile_report(&self, tile: Tile) -> Result<String, EngineError> {
        let mut out = String::new();
        for g in &self.gpus {
            let mut g = g.lock().unwrap();
            let t = Instant::now();
            let k = g.kernels(tile)?;
            out += &format!("GPU {} ({}), tile {tile}: compiled and loaded in {:.2} s\n", g.ordinal, g.arch, t.elapsed().as_secs_f64());
            for (n, f) in [
                ("fdtd_update_h", &k.update_h),
                ("fdtd_pmc_ghosts", &k.pmc_ghosts),
                ("fdtd_update_e", &k.update_e),
                ("fdtd_step", &k.step),
                ("fdtd_inject", &k.inject),
                ("fdtd_sample_ports", &k.sample),
                ("fdtd_energy", &k.energy),
            ] {
                let occ = f.occupancy_max_active_blocks_per_multiprocessor(if n == "fdtd_inject" || n == "fdtd_sample_ports" { 128 } else { tile.threads() as u32 }, 0, None).unwrap_or(0);
                out += &format!(
                    "  {n:<18} regs {:>3}  local {:>4} B  shared {:>6} B  blocks/SM {occ}\n",
                    f.num_regs().unwrap_or(-1),
                    f.local_size_bytes().unwrap_or(-1),
                    f.shared_size_bytes().unwrap_or(-1)
                );
            }
        }
        Ok(out)
    }

    /// Device-to-device copy bandwidth of GPU `idx` (bytes read + written per second), median of `reps`.
    pub fn copy_bandwidth(&self, idx: usize, bytes: usize, reps: usize) -> Result<f64, EngineError> {
        let g = self.gpus[idx].lock().unwrap();
        let s = &g.stream;
        let n = bytes / 4;
        let src = s.alloc_zeros::<f32>(n).map_err(drv)?;
        let mut dst = s.alloc_zeros::<f32>(n).map_err(drv)?;
        s.memcpy_dtod(&src, &mut dst).map_err(drv)?;
        let mut times = vec![];
        for _ in 0..reps.max(1) {
            let a = s.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?;
            s.memcpy_dtod(&src, &mut dst).map_err(drv)?;
            let b = s.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?;
            times.push(a.elapsed_ms(&b).map_err(drv)? as f64 * 1e-3);
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Ok(2.0 * (n * 4) as f64 / times[times.len() / 2])
    }

    /// Run `jobs` (optionally from the given initial fields, one per job)
    /// and return the outputs (and the final fields when `want_fields`).
    /// FDTD jobs run on the GPUs, others on the CPU.
    pub fn run_jobs(&self, jobs: &[SimJob], init: Option<&[Fields]>, want_fields: bool) -> Result<Vec<Result<JobRun, SimFailure>>, EngineError> {
        let t0 = Instant::now();
        if let Some(i) = init {
            if i.len() != jobs.len() {
                return Err(EngineError::Cuda(format!("{} initial fields for {} jobs", i.len(), jobs.len())));
            }
        }
        let mut results: Vec<Option<Result<JobRun, SimFailure>>> = (0..jobs.len()).map(|_| None).collect();
        // --- TLM on CUDA: TLM jobs of the batch run on the TLM kernels (cuda/tlm), before the FDTD ones.
        let tlm_idx: Vec<usize> = (0..jobs.len()).filter(|&i| tlm::is_tlm(&jobs[i])).collect();
        let mut tlm_st = RunStats::default();
        if !tlm_idx.is_empty() {
            if init.is_some() {
                return Err(EngineError::Cuda("initial fields are an FDTD feature; this batch holds TLM jobs".into()));
            }
            let (res, s) = self.run_tlm(jobs, &tlm_idx)?;
            for (i, r) in res {
                results[i] = Some(r.map(|out| JobRun { out, fields: None }));
            }
            tlm_st = s;
        }
        // --- end TLM
        // Operators on all cores; invalid jobs and other engines are settled here.
        let ops: Vec<Option<Result<Operator, SimFailure>>> =
            jobs.par_iter().map(|j| if batch::is_fdtd(j) { Some(Operator::new(j)) } else { None }).collect();
        let mut gpu_jobs = vec![];
        let mut ops_ok: Vec<Option<Operator>> = (0..jobs.len()).map(|_| None).collect();
        for (i, o) in ops.into_iter().enumerate() {
            match o {
                None if results[i].is_some() => {}
                None => results[i] = Some(super::cpu::run_job(&jobs[i]).map(|out| JobRun { out, fields: None })),
                Some(Err(e)) => results[i] = Some(Err(e)),
                Some(Ok(op)) => {
                    if let Some(f) = init {
                        let f = &f[i];
                        if f.e.iter().chain(&f.h).any(|a| a.len() != op.len) {
                            return Err(EngineError::Cuda(format!("initial fields of job {i} do not match its grid")));
                        }
                    }
                    ops_ok[i] = Some(op);
                    gpu_jobs.push(i);
                }
            }
        }
        let setup_ops = t0.elapsed().as_secs_f64();
        // Spread over the GPUs by work (cells x steps).
        let cost: Vec<f64> = gpu_jobs.iter().map(|&i| jobs[i].mesh.cells() as f64 * jobs[i].stop.max_steps as f64).collect();
        let shares = batch::spread(&cost, self.gpus.len());
        let ops_ref = &ops_ok;
        let per_gpu: Vec<Result<(Vec<(usize, Result<JobRun, SimFailure>)>, RunStats), EngineError>> = std::thread::scope(|sc| {
            let hs: Vec<_> = shares
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .map(|(g, share)| {
                    let idx: Vec<usize> = share.iter().map(|&k| gpu_jobs[k]).collect();
                    let gpu = &self.gpus[g];
                    let opts = &self.opts;
                    sc.spawn(move || {
                        let mut gpu = gpu.lock().unwrap();
                        gpu.ctx.bind_to_thread().map_err(drv)?;
                        gpu.run_share(jobs, ops_ref, &idx, init, want_fields, opts)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Cuda("GPU worker panicked".into())))).collect()
        });
        let mut st = RunStats { setup_s: setup_ops, ..Default::default() };
        for r in per_gpu {
            let (res, s) = r?;
            st.setup_s = st.setup_s.max(setup_ops + s.setup_s);
            st.kernel_s = st.kernel_s.max(s.kernel_s);
            st.loop_s = st.loop_s.max(s.loop_s);
            st.wait_s = st.wait_s.max(s.wait_s);
            st.cell_updates += s.cell_updates;
            st.bytes += s.bytes;
            st.sub_batches += s.sub_batches;
            st.zchunk = s.zchunk;
            st.gpus_used += 1;
            for (i, r) in res {
                results[i] = Some(r);
            }
        }
        // TLM sub-batches ran before the FDTD ones: their times add.
        st.setup_s += tlm_st.setup_s;
        st.kernel_s += tlm_st.kernel_s;
        st.cell_updates += tlm_st.cell_updates;
        st.bytes += tlm_st.bytes;
        st.sub_batches += tlm_st.sub_batches;
        st.gpus_used = st.gpus_used.max(tlm_st.gpus_used);
        st.wall_s = t0.elapsed().as_secs_f64();
        *self.stats.lock().unwrap() = st;
        Ok(results.into_iter().map(|r| r.expect("every job has a result")).collect())
    }
}

impl Gpu {
    /// Run this device's share of a batch, in sub-batches that fit its memory.
    fn run_share(
        &mut self,
        jobs: &[SimJob],
        ops: &[Option<Operator>],
        idx: &[usize],
        init: Option<&[Fields]>,
        want_fields: bool,
        opts: &CudaOptions,
    ) -> Result<(Vec<(usize, Result<JobRun, SimFailure>)>, RunStats), EngineError> {
        let needs: Vec<usize> = idx.iter().map(|&i| batch::device_bytes(ops[i].as_ref().unwrap())).collect();
        let mut budget = self.budget()?;
        if let Some(m) = opts.mem_limit {
            budget = budget.min(m);
        }
        let parts = batch::split_to_fit(&needs, budget).map_err(|k| {
            EngineError::Cuda(format!(
                "design '{}' needs {:.2} GiB of device memory, GPU {} ({}) can give {:.2} GiB",
                jobs[idx[k]].label,
                needs[k] as f64 / (1u64 << 30) as f64,
                self.ordinal,
                self.name,
                budget as f64 / (1u64 << 30) as f64
            ))
        })?;
        let mut out = vec![];
        let mut st = RunStats::default();
        for part in parts {
            let sub: Vec<usize> = idx[part].to_vec();
            let (res, s) = self.run_sub_batch(jobs, ops, &sub, init, want_fields, opts)?;
            st.setup_s += s.setup_s;
            st.kernel_s += s.kernel_s;
            st.loop_s += s.loop_s;
            st.wait_s += s.wait_s;
            st.cell_updates += s.cell_updates;
            st.bytes += s.bytes;
            st.zchunk = s.zchunk;
            st.sub_batches += 1;
            out.extend(sub.into_iter().zip(res));
        }
        Ok((out, st))
    }

    /// One sub-batch that fits the device: all designs step together.
    fn run_sub_batch(
        &mut self,
        jobs: &[SimJob],
        ops_all: &[Option<Operator>],
        idx: &[usize],
        init: Option<&[Fields]>,
        want_fields: bool,
        opts: &CudaOptions,
    ) -> Result<(Vec<Result<JobRun, SimFailure>>, RunStats), EngineError> {
        let t0 = Instant::now();
        let ops: Vec<&Operator> = idx.iter().map(|&i| ops_all[i].as_ref().unwrap()).collect();
        let js: Vec<&SimJob> = idx.iter().map(|&i| &jobs[i]).collect();
        let nd = ops.len();
        let fused = opts.scheme == Scheme::Fused;
        let adapt = fused && opts.adapt;
        let fitted;
        let opts = if adapt {
            fitted = CudaOptions { tile: batch::fit_tile(&ops, opts.tile), ..opts.clone() };
            &fitted
        } else {
            opts
        };
        let k = self.kernels(opts.tile)?;
        let resident = self.resident_blocks(&k, opts);
        let rechunk = adapt && opts.zchunk.is_none();
        let zchunk = match opts.scheme {
            // The fused kernel walks z through its chunk (software pipeline); chunk 0 must own planes 0 and 1.
            Scheme::Fused => opts.zchunk.unwrap_or_else(|| batch::choose_zchunk(&ops, opts.tile, resident)).max(2),
            // The split kernels want every cell on its own thread: a plane or two per block.
            Scheme::Split => opts.zchunk.unwrap_or(SPLIT_ZCHUNK).max(1),
        };
        let mut plan = Plan::new(&ops, opts.tile, zchunk).map_err(EngineError::Cuda)?;
        let mut cur_zchunk = zchunk;
        self.ensure_pool(plan.field_len, plan.psi_len)?;
        let stream = self.stream.clone();
        let pool = self.pool.as_mut().unwrap();
        let fl = plan.field_len;

        // Fields: zero (or the given initial fields) in set 0; set 1 zero or poisoned.
        for set in 0..2 {
            for c in 0..3 {
                stream.memset_zeros(&mut pool.e[set][c].slice_mut(0..fl)).map_err(drv)?;
                stream.memset_zeros(&mut pool.h[set][c].slice_mut(0..fl)).map_err(drv)?;
                if set == 1 && opts.poison && fused {
                    for buf in [&mut pool.e[1][c], &mut pool.h[1][c]] {
                        let mut view = buf.slice_mut(0..fl);
                        let (p, _s) = view.device_ptr_mut(&stream);
                        // SAFETY: p points to fl f32 of this context; 0xFF bytes are a NaN pattern.
                        unsafe { cudarc::driver::result::memset_d8_async(p, 0xFF, fl * 4, stream.cu_stream()) }.map_err(drv)?;
                    }
                }
            }
        }
        if let Some(init) = init {
            for (d, &i) in idx.iter().enumerate() {
                let o = plan.designs[d].off as usize;
                let f = &init[i];
                for c in 0..3 {
                    stream.memcpy_htod(&f.e[c], &mut pool.e[0][c].slice_mut(o..o + f.e[c].len())).map_err(drv)?;
                    stream.memcpy_htod(&f.h[c], &mut pool.h[0][c].slice_mut(o..o + f.h[c].len())).map_err(drv)?;
                }
            }
        }
        for c in 0..3 {
            stream.memcpy_htod(&plan.mat[c], &mut pool.mat[c].slice_mut(0..fl)).map_err(drv)?;
        }
        let pl = plan.psi_len.max(1);
        stream.memset_zeros(&mut pool.psi_e.slice_mut(0..pl)).map_err(drv)?;
        stream.memset_zeros(&mut pool.psi_h[0].slice_mut(0..pl)).map_err(drv)?;
        stream.memset_zeros(&mut pool.psi_h[1].slice_mut(0..pl)).map_err(drv)?;

        // Small tables.
        let mut designs = table(&stream, &plan.designs)?;
        let ca = table(&stream, &plan.ca)?;
        let cb = table(&stream, &plan.cb)?;
        let eps = table(&stream, &plan.eps)?;
        let pe_b = table(&stream, &plan.pe_b)?;
        let pe_c = table(&stream, &plan.pe_c)?;
        let pe_k = table(&stream, &plan.pe_k)?;
        let ph_b = table(&stream, &plan.ph_b)?;
        let ph_c = table(&stream, &plan.ph_c)?;
        let ph_k = table(&stream, &plan.ph_k)?;
        let slab_e = table(&stream, &plan.slab_e)?;
        let slab_h = table(&stream, &plan.slab_h)?;
        let inv_e = table(&stream, &plan.inv_e)?;
        let inv_h = table(&stream, &plan.inv_h)?;
        let rel_e = table(&stream, &plan.rel_e)?;
        let rel_h = table(&stream, &plan.rel_h)?;
        let ports = table(&stream, &plan.ports)?;
        let t_idx0 = table(&stream, &plan.t_idx0)?;
        let t_idx1 = table(&stream, &plan.t_idx1)?;
        let t_idx2 = table(&stream, &plan.t_idx2)?;
        let t_w = table(&stream, &plan.t_w)?;
        let src_design = table(&stream, &plan.src_design)?;
        let src_comp = table(&stream, &plan.src_comp)?;
        let src_idx = table(&stream, &plan.src_idx)?;
        let src_coef = table(&stream, &plan.src_coef)?;
        let kcap = opts.trace_chunk.max(1);
        let n_src = plan.src_design.len();
        let mut gval = stream.alloc_zeros::<f32>((nd * kcap).max(1)).map_err(drv)?;
        let np = plan.ports.len();
        let tv = stream.alloc_zeros::<f64>((np * kcap).max(1)).map_err(drv)?;
        let ti = stream.alloc_zeros::<f64>((np * kcap).max(1)).map_err(drv)?;
        let mut energy = stream.alloc_zeros::<f64>(2 * nd).map_err(drv)?;
        let mut active_d = stream.alloc_zeros::<i32>(nd).map_err(drv)?;
        // Room for the longest block table: every design, chunks of 2 planes when re-chunking.
        let longest = if rechunk {
            2 * plan.designs.iter().map(|d| d.tiles[0] as usize * d.tiles[1] as usize * (d.dims[2] as usize).div_ceil(2)).sum::<usize>()
        } else {
            plan.block_table(&vec![true; nd]).len()
        };
        let mut blocks = stream.alloc_zeros::<i32>(longest.max(2)).map_err(drv)?;

        // Pointer structs for each parity of the fused ping-pong (split: parity 0, in place).
        let fp = |set: usize| -> FdtdPtrs {
            let o = 1 - set;
            FdtdPtrs {
                e: [0, 1, 2].map(|c| dptr(&pool.e[set][c], &stream)),
                h: [0, 1, 2].map(|c| dptr(&pool.h[set][c], &stream)),
                e_out: [0, 1, 2].map(|c| dptr(&pool.e[o][c], &stream)),
                h_out: [0, 1, 2].map(|c| dptr(&pool.h[o][c], &stream)),
                mat: [0, 1, 2].map(|c| dptr(&pool.mat[c], &stream)),
                ca: dptr(&ca, &stream),
                cb: dptr(&cb, &stream),
                eps: dptr(&eps, &stream),
                pe_b: dptr(&pe_b, &stream),
                pe_c: dptr(&pe_c, &stream),
                pe_k: dptr(&pe_k, &stream),
                ph_b: dptr(&ph_b, &stream),
                ph_c: dptr(&ph_c, &stream),
                ph_k: dptr(&ph_k, &stream),
                slab_e: dptr(&slab_e, &stream),
                slab_h: dptr(&slab_h, &stream),
                psi_e: dptr(&pool.psi_e, &stream),
                psi_h: dptr(&pool.psi_h[set], &stream),
                psi_h_out: dptr(&pool.psi_h[o], &stream),
                designs: dptr(&designs, &stream),
                blocks: dptr(&blocks, &stream),
                inv_e: dptr(&inv_e, &stream),
                inv_h: dptr(&inv_h, &stream),
                rel_e: dptr(&rel_e, &stream),
                rel_h: dptr(&rel_h, &stream),
            }
        };
        let fptrs = [fp(0), fp(1)];
        let pp = |set: usize| -> PortPtrs {
            PortPtrs {
                e: [0, 1, 2].map(|c| dptr(&pool.e[set][c], &stream)),
                h: [0, 1, 2].map(|c| dptr(&pool.h[set][c], &stream)),
                designs: dptr(&designs, &stream),
                ports: dptr(&ports, &stream),
                t_idx0: dptr(&t_idx0, &stream),
                t_idx1: dptr(&t_idx1, &stream),
                t_idx2: dptr(&t_idx2, &stream),
                t_w: dptr(&t_w, &stream),
                src_design: dptr(&src_design, &stream),
                src_comp: dptr(&src_comp, &stream),
                src_idx: dptr(&src_idx, &stream),
                src_coef: dptr(&src_coef, &stream),
                gval: dptr(&gval, &stream),
                active: dptr(&active_d, &stream),
                tv: dptr(&tv, &stream),
                ti: dptr(&ti, &stream),
                n_src: n_src as i32,
                n_ports: np as i32,
                gstride: kcap as i32,
                tstride: kcap as i32,
            }
        };
        let pptrs = [pp(0), pp(1)];

        let mut runs: Vec<DesignRun> = js
            .iter()
            .map(|j| DesignRun { traces: vec![PortTrace::default(); j.ports.len()], peak: 0.0, ended: EndReason::MaxSteps { db: 0.0 }, steps: 0, done: None, fields: None })
            .collect();
        let mut active: Vec<bool> = js.iter().map(|j| j.stop.max_steps > 0).collect();
        for (d, r) in runs.iter_mut().enumerate() {
            if !active[d] {
                r.done = Some(Ok(()));
            }
        }
        let pulses: Vec<_> = js.iter().map(|j| j.pulse).collect();
        let dts: Vec<f64> = ops.iter().map(|o| o.dt).collect();
        let thresholds: Vec<f64> = js.iter().map(|j| 10f64.powf(j.stop.decay_db / 10.0)).collect();
        let mut nblocks = 0usize;
        let mut table_dirty = true;
        let mut cur = 0usize; // field set holding the current fields
        let mut n = 0usize; // steps done
        let mut kernel_s = 0.0;
        let mut bytes = 0.0;
        let step_bytes: Vec<f64> = ops.iter().map(|o| batch::step_bytes(&[o], fused)).collect();
        let any_pmc = ops.iter().any(|o| o.pmc.iter().flatten().any(|&b| b));
        let tile_cfg = |blocks: usize| LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (opts.tile.tx as u32, opts.tile.ty as u32, 1), shared_mem_bytes: 0 };
        // Launch kk steps starting from field set `cur` (recorded instead of
        // run while the stream is capturing); returns the set then current.
        let launch_steps = |kk: usize, mut cur: usize, nblocks: usize| -> Result<usize, EngineError> {
            for s in 0..kk {
                let si = s as i32;
                // SAFETY (all launches): the pointer structs address live buffers of this context
                // sized by the plan; the kernels stay inside them (ranges from the same plan).
                unsafe {
                    match opts.scheme {
                        Scheme::Fused => {
                            stream.launch_builder(&k.step).arg(&fptrs[cur]).launch(tile_cfg(nblocks)).map_err(drv)?;
                            cur = 1 - cur;
                        }
                        Scheme::Split => {
                            stream.launch_builder(&k.update_h).arg(&fptrs[0]).launch(tile_cfg(nblocks)).map_err(drv)?;
                            if any_pmc {
                                stream.launch_builder(&k.pmc_ghosts).arg(&fptrs[0]).launch(tile_cfg(nblocks)).map_err(drv)?;
                            }
                            stream.launch_builder(&k.update_e).arg(&fptrs[0]).launch(tile_cfg(nblocks)).map_err(drv)?;
                        }
                    }
                    if n_src > 0 {
                        let cfg = LaunchConfig {
                            grid_dim: ((n_src as u32).div_ceil(abi::INJECT_THREADS), 1, 1),
                            block_dim: (abi::INJECT_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        stream.launch_builder(&k.inject).arg(&pptrs[cur]).arg(&si).launch(cfg).map_err(drv)?;
                    }
                    if np > 0 {
                        let cfg = LaunchConfig { grid_dim: (np as u32, 1, 1), block_dim: (abi::SAMPLE_THREADS, 1, 1), shared_mem_bytes: 0 };
                        stream.launch_builder(&k.sample).arg(&pptrs[cur]).arg(&si).launch(cfg).map_err(drv)?;
                    }
                }
            }
            Ok(cur)
        };
        let mut graphs = graphs::ChunkGraphs::new(stream.clone(), opts.graphs, "FDTD steps");
        let mut wait_s = 0.0;
        let setup_s = t0.elapsed().as_secs_f64();

        while active.iter().any(|&a| a) {
            if table_dirty {
                if rechunk {
                    // Fewer designs left: spread their planes over more blocks.
                    let live: Vec<&Operator> = (0..nd).filter(|&d| active[d]).map(|d| ops[d]).collect();
                    let z = batch::choose_zchunk(&live, opts.tile, resident).max(2);
                    if z != cur_zchunk {
                        plan.set_zchunk(z);
                        stream.memcpy_htod(&plan.designs, &mut designs).map_err(drv)?;
                        cur_zchunk = z;
                    }
                }
                let t = plan.block_table(&active);
                nblocks = t.len() / 2;
                stream.memcpy_htod(&t, &mut blocks.slice_mut(0..t.len())).map_err(drv)?;
                let a: Vec<i32> = active.iter().map(|&a| a as i32).collect();
                stream.memcpy_htod(&a, &mut active_d).map_err(drv)?;
                table_dirty = false;
            }
            // Steps until the next check of any running design (cpu.rs: steps % check_every == 0 or the cap).
            let mut kk = kcap;
            for d in 0..nd {
                if active[d] {
                    let ce = js[d].stop.check_every.max(1);
                    let next = ((n / ce) + 1) * ce;
                    kk = kk.min(next.min(js[d].stop.max_steps) - n);
                }
            }
            let g = plan.source_values(&pulses, &dts, n, kk, kcap);
            stream.memcpy_htod(&g, &mut gval).map_err(drv)?;
            let ev0 = stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?;
            // A chunk's launches depend only on (kk, cur, nblocks): recorded once, replayed.
            cur = match graphs.begin((kk, cur, nblocks))? {
                graphs::Chunk::Replayed if fused => cur ^ (kk & 1),
                graphs::Chunk::Replayed => cur,
                graphs::Chunk::Direct => launch_steps(kk, cur, nblocks)?,
                graphs::Chunk::Recording => {
                    let next = launch_steps(kk, cur, nblocks)?;
                    if !graphs.end()? {
                        launch_steps(kk, cur, nblocks)?;
                    }
                    next
                }
            };
            let ev1 = stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)?;
            for d in 0..nd {
                if active[d] {
                    bytes += step_bytes[d] * kk as f64;
                }
            }
            n += kk;
            let due: Vec<usize> = (0..nd).filter(|&d| active[d] && (n % js[d].stop.check_every.max(1) == 0 || n == js[d].stop.max_steps)).collect();
            let mut w = vec![0.0f64; 2 * nd];
            // From here the host waits for the chunk (the copies to host memory block).
            let tw = Instant::now();
            if !due.is_empty() {
                stream.memset_zeros(&mut energy).map_err(drv)?;
                let mut fpc = fptrs[cur];
                fpc.e_out = fpc.e;
                fpc.h_out = fpc.h;
                // SAFETY: as above.
                unsafe { stream.launch_builder(&k.energy).arg(&fpc).arg(&mut energy).launch(tile_cfg(nblocks)) }.map_err(drv)?;
                stream.memcpy_dtoh(&energy, &mut w).map_err(drv)?;
            }
            let mut hv = vec![0.0f64; np * kcap];
            let mut hi = vec![0.0f64; np * kcap];
            if np > 0 {
                stream.memcpy_dtoh(&tv, &mut hv).map_err(drv)?;
                stream.memcpy_dtoh(&ti, &mut hi).map_err(drv)?;
            }
            stream.synchronize().map_err(drv)?;
            wait_s += tw.elapsed().as_secs_f64();
            kernel_s += ev0.elapsed_ms(&ev1).map_err(drv)? as f64 * 1e-3;
            for d in 0..nd {
                if !active[d] {
                    continue;
                }
                for (pi, slot) in plan.port_slot[d].iter().enumerate() {
                    if let Some(gp) = slot {
                        runs[d].traces[pi].v.extend_from_slice(&hv[gp * kcap..gp * kcap + kk]);
                        runs[d].traces[pi].i.extend_from_slice(&hi[gp * kcap..gp * kcap + kk]);
                    }
                }
                runs[d].steps = n;
            }
            for &d in &due {
                let wd = w[2 * d] * EPS0 + w[2 * d + 1] * MU0;
                let r = &mut runs[d];
                let mut finish = n == js[d].stop.max_steps;
                if !wd.is_finite() || r.traces.iter().any(|t| !t.v.last().unwrap_or(&0.0).is_finite()) {
                    let f = self::download_fields(&stream, pool, cur, plan.designs[d].off as usize, ops[d])?;
                    let loc = super::fdtd::cpu::locate_non_finite(ops[d], &f);
                    r.done = Some(Err(SimFailure::NonFinite { step: n, location: loc }));
                    active[d] = false;
                    table_dirty = true;
                    continue;
                }
                r.peak = r.peak.max(wd);
                let db = if r.peak > 0.0 { 10.0 * (wd / r.peak).max(1e-300).log10() } else { 0.0 };
                r.ended = EndReason::MaxSteps { db };
                if n as f64 * dts[d] > js[d].pulse.end_time() && r.peak > 0.0 && wd <= thresholds[d] * r.peak {
                    r.ended = EndReason::EnergyDecay { db };
                    finish = true;
                }
                if finish {
                    r.done = Some(Ok(()));
                    active[d] = false;
                    table_dirty = true;
                }
            }
            if want_fields {
                for d in 0..nd {
                    if !active[d] && runs[d].fields.is_none() && matches!(runs[d].done, Some(Ok(()))) {
                        runs[d].fields = Some(download_fields(&stream, pool, cur, plan.designs[d].off as usize, ops[d])?);
                    }
                }
            }
        }
        drop(graphs);
        let wall_s = t0.elapsed().as_secs_f64();
        let st = RunStats {
            setup_s,
            kernel_s,
            wall_s,
            loop_s: wall_s - setup_s,
            wait_s,
            cell_updates: js.iter().zip(&runs).map(|(j, r)| j.mesh.cells() as f64 * r.steps as f64).sum(),
            bytes,
            sub_batches: 1,
            gpus_used: 1,
            zchunk,
        };
        let res = runs
            .into_iter()
            .enumerate()
            .map(|(d, r)| match r.done.expect("every design finished") {
                Err(e) => Err(e),
                Ok(()) => Ok(JobRun {
                    out: SimOutput { dt: dts[d], steps: r.steps, v_offset: 1.0, i_offset: 0.5, traces: r.traces, ended: r.ended, cells: js[d].mesh.cells() },
                    fields: r.fields,
                }),
            })
            .collect();
        Ok((res, st))
    }
}

/// Copy one design's current fields back into a CPU [`Fields`] (psi left empty).
fn download_fields(stream: &Arc<CudaStream>, pool: &Pool, set: usize, off: usize, op: &Operator) -> Result<Fields, EngineError> {
    let mut f = Fields { e: [vec![], vec![], vec![]], h: [vec![], vec![], vec![]], psi_e: Default::default(), psi_h: Default::default() };
    for c in 0..3 {
        f.e[c] = stream.clone_dtoh(&pool.e[set][c].slice(off..off + op.len)).map_err(drv)?;
        f.h[c] = stream.clone_dtoh(&pool.h[set][c].slice(off..off + op.len)).map_err(drv)?;
    }
    stream.synchronize().map_err(drv)?;
    Ok(f)
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{} [{} {}]", self.devices().join(", "), self.opts.scheme.name(), self.opts.tile)
    }
    fn run_batch_progress(&self, jobs: &[SimJob], done: &(dyn Fn(usize) + Sync)) -> BatchResult {
        // The whole batch advances together on the device: it finishes at once.
        let out: Vec<_> = self.run_jobs(jobs, None, false)?.into_iter().map(|r| r.map(|j| j.out)).collect();
        done(jobs.len());
        Ok(out)
    }
}
