//! The CUDA backend: every job of a batch advances together on the GPUs,
//! FDTD jobs on the kernels of `kernels/fdtd.cu` ([`fdtd`]), TLM jobs on those
//! of `kernels/tlm.cu` ([`tlm`]), each through the one stepping loop with the
//! same arithmetic as the CPU engines (CPU twins in `engine::fdtd::cpu` and
//! `engine::tlm`), so the two agree to float rounding.
//!
//! The devices are [`Device`]s (`engine::device`: context, stream, NVRTC,
//! buffer pool and graphs of one GPU, or its CPU emulation). Jobs are spread
//! over them by work (one host thread per device), and each device's share
//! runs in sub-batches that fit its memory. FDTD jobs of one structure (a
//! design's driven ports) share one host operator.

pub mod abi;
pub mod batch;
pub mod dft;
pub mod edges;
pub mod fdtd;
pub mod onchip;
pub mod options;
pub mod slim;
pub mod conformal;
pub mod surface;
pub mod tlm;

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

pub use self::fdtd::JobRun;
pub use self::options::{CudaOptions, PathChoice, RunStats, Scheme, SPLIT_ZCHUNK};
use self::batch::Tile;
use self::tlm::TlmConfig;
use super::device::cuda::CudaDevice;
use super::device::emu::EmuDevice;
use super::device::Device;
use super::fdtd::fields::Fields;
use super::fdtd::Operator;
use super::{Backend, BatchResult, EngineError, RunCtx};
use crate::job::{EngineKind, SimFailure, SimJob};

/// Whether the CUDA backend can run here (libraries and a device present).
pub fn available() -> bool {
    super::device::available()
}

/// Why [`available`] is false, for messages.
pub fn unavailable_reason() -> String {
    super::device::unavailable_reason()
}

/// Runs FDTD and TLM jobs on one or more devices.
pub struct CudaBackend {
    devices: Vec<Mutex<Box<dyn Device>>>,
    opts: CudaOptions,
    tlm_cfg: Mutex<TlmConfig>,
    /// TLM port-kernel threads the kernels are built for.
    tlm_port_threads: u32,
    stats: Mutex<RunStats>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        if gpus.is_empty() {
            return Err(EngineError::CudaUnavailable("no GPU listed".into()));
        }
        // One worker (context, stream, buffer pool, host thread) per listed GPU. A GPU
        // listed twice gets two workers: the multi-GPU path can be tested on one device.
        let mut list: Vec<Box<dyn Device>> = vec![];
        for &g in gpus {
            list.push(Box::new(CudaDevice::open(g)?));
        }
        Self::on(list, opts, TlmConfig::DEFAULT, tlm::abi::PORT_THREADS)
    }

    /// Every GPU present.
    pub fn all(opts: CudaOptions) -> Result<Self, EngineError> {
        let n = super::device::cuda::device_count()?;
        Self::with_options(&(0..n).collect::<Vec<_>>(), opts)
    }

    /// The backend on the CPU emulation of the kernels (the libraries built
    /// by `scripts/kernel-emu.sh` / `scripts/tlm-emu.sh`): the same batches and
    /// stepping loop as on a GPU. The FDTD tile and the TLM launch shape are
    /// the libraries'; adaptive tiles are off (the library holds one tile).
    pub fn emulated(libs: &[&Path], opts: CudaOptions) -> Result<Self, EngineError> {
        let dev = EmuDevice::open(libs).map_err(EngineError::Cuda)?;
        let mut opts = opts;
        if let (Some(tx), Some(ty), Some(ns)) = (dev.define("fdtd", "EMV_TX"), dev.define("fdtd", "EMV_TY"), dev.define("fdtd", "EMV_NS")) {
            opts.tile = Tile { tx: tx as usize, ty: ty as usize, ns: ns as usize, minb: 0 };
        }
        opts.adapt = false;
        if let Some(t) = dev.define("fdtd_onchip", "EMV_OC_NT").or_else(|| dev.define("tlm_onchip", "TLM_OC_NT")) {
            opts.onchip_threads = t as usize;
        }
        let mut cfg = TlmConfig::DEFAULT;
        let mut port_threads = tlm::abi::PORT_THREADS;
        if let (Some(t), Some(n), Some(s)) = (dev.define("tlm", "TLM_THREADS"), dev.define("tlm", "TLM_NPT"), dev.define("tlm", "TLM_SPLIT")) {
            cfg = TlmConfig { threads: t as u32, npt: n as u32, minb: 0, split: s != 0 };
        }
        if let Some(p) = dev.define("tlm", "TLM_PORT_THREADS") {
            port_threads = p as u32;
        }
        Self::on(vec![Box::new(dev)], opts, cfg, port_threads)
    }

    fn on(devices: Vec<Box<dyn Device>>, opts: CudaOptions, tlm_cfg: TlmConfig, tlm_port_threads: u32) -> Result<Self, EngineError> {
        opts.tile.validate().map_err(EngineError::Cuda)?;
        Ok(CudaBackend { devices: devices.into_iter().map(Mutex::new).collect(), opts, tlm_cfg: Mutex::new(tlm_cfg), tlm_port_threads, stats: Mutex::new(RunStats::default()) })
    }

    pub fn options(&self) -> &CudaOptions {
        &self.opts
    }

    pub fn set_options(&mut self, opts: CudaOptions) -> Result<(), EngineError> {
        opts.tile.validate().map_err(EngineError::Cuda)?;
        self.opts = opts;
        Ok(())
    }

    /// Set the node-kernel launch shape of the TLM kernels on every device.
    pub fn set_tlm_config(&self, cfg: TlmConfig) -> Result<(), EngineError> {
        cfg.validate().map_err(EngineError::Cuda)?;
        *lock(&self.tlm_cfg) = cfg;
        Ok(())
    }

    /// "NVIDIA H100 80GB HBM3 (GPU 0, sm_90, 132 SMs)" per device.
    pub fn devices(&self) -> Vec<String> {
        self.devices.iter().map(|d| lock(d).describe()).collect()
    }

    /// Timings of the last batch.
    pub fn last_stats(&self) -> RunStats {
        lock(&self.stats).clone()
    }

    /// Compile the FDTD kernels for `tile` on every device and report registers,
    /// local memory (spills) and static shared memory per kernel.
    pub fn compile_report(&self, tile: Tile) -> Result<String, EngineError> {
        let spec = fdtd::module(tile);
        let mut out = String::new();
        for (i, d) in self.devices.iter().enumerate() {
            let mut d = lock(d);
            let t = Instant::now();
            let m = d.load(&spec)?;
            out += &format!("device {i} ({}), tile {tile}: compiled and loaded in {:.2} s\n", d.describe(), t.elapsed().as_secs_f64());
            for (k, n) in abi::KERNELS.iter().enumerate() {
                let threads = match *n {
                    "fdtd_inject" => abi::INJECT_THREADS,
                    "fdtd_sample_ports" => abi::SAMPLE_THREADS,
                    "fdtd_dft" => abi::DFT_THREADS,
                    "fdtd_step2" => abi::SLIM_NT as u32,
                    _ => tile.threads() as u32,
                };
                out += &report_line(n, d.attrs(m, k, threads));
            }
            let t = self.opts.onchip_threads;
            let m = d.load(&onchip::module(t, &[]))?;
            out += &format!("  on-chip, {t} threads a block, up to {} B of shared memory a block:\n", d.max_shared());
            out += &report_line(onchip::KERNELS[0], d.attrs(m, 0, t as u32));
        }
        Ok(out)
    }

    /// Compile the on-chip kernel for the options' block size on every device
    /// and report its compile time, registers, local memory and occupancy.
    pub fn onchip_compile_report(&self) -> Result<String, EngineError> {
        let mut out = String::new();
        let t = self.opts.onchip_threads;
        for (i, d) in self.devices.iter().enumerate() {
            let mut d = lock(d);
            // Every pattern's step loop, then the 2.5D one alone (a GA batch of such designs).
            for pats in [&[][..], &[42][..]] {
                let t0 = Instant::now();
                let m = d.load(&onchip::module(t, pats))?;
                let what = if pats.is_empty() { "every pattern".to_string() } else { format!("patterns {pats:?}") };
                out += &format!("device {i} ({}), on-chip, {t} threads a block, {what}: compiled and loaded in {:.2} s, up to {} B of shared memory a block\n", d.describe(), t0.elapsed().as_secs_f64(), d.max_shared());
                out += &report_line(onchip::KERNELS[0], d.attrs(m, 0, t as u32));
            }
        }
        Ok(out)
    }

    /// Compile the TLM kernels for `cfg` on every device and report registers,
    /// local memory (spills) and occupancy per kernel.
    pub fn tlm_compile_report(&self, cfg: TlmConfig) -> Result<String, EngineError> {
        let spec = tlm::module(cfg, self.tlm_port_threads);
        let mut out = String::new();
        for (i, d) in self.devices.iter().enumerate() {
            let mut d = lock(d);
            let t = Instant::now();
            let m = d.load(&spec)?;
            out += &format!("device {i} ({}), TLM {cfg}: compiled and loaded in {:.2} s\n", d.describe(), t.elapsed().as_secs_f64());
            for (k, name) in tlm::abi::KERNELS.iter().enumerate() {
                let threads = if name.ends_with("_step") || name.ends_with("_energy") { cfg.threads } else { self.tlm_port_threads };
                out += &report_line(name, d.attrs(m, k, threads));
            }
        }
        Ok(out)
    }

    /// Compile the 2D TLM on-chip kernel for blocks of `threads` on every device
    /// and report its registers, local memory, static shared memory and occupancy.
    pub fn tlm_onchip_compile_report(&self, threads: usize) -> Result<String, EngineError> {
        tlm::onchip::validate_threads(threads).map_err(EngineError::Cuda)?;
        let mut out = String::new();
        for (i, d) in self.devices.iter().enumerate() {
            let mut d = lock(d);
            let t = Instant::now();
            let m = d.load(&tlm::onchip::module(threads as u32))?;
            out += &format!("device {i} ({}), TLM on-chip, {threads} threads a block: compiled and loaded in {:.2} s, up to {} B of shared memory a block\n", d.describe(), t.elapsed().as_secs_f64(), d.max_shared());
            out += &report_line(tlm::onchip::KERNELS[0], d.attrs(m, 0, threads as u32));
        }
        Ok(out)
    }

    /// Shared-memory bandwidth of device `idx` (all SMs, bytes/s), when known.
    pub fn shared_bandwidth(&self, idx: usize) -> Option<f64> {
        self.devices.get(idx).and_then(|d| lock(d).shared_bandwidth())
    }

    /// Device-to-device copy bandwidth of device `idx` (bytes read + written per second), median of `reps`.
    pub fn copy_bandwidth(&self, idx: usize, bytes: usize, reps: usize) -> Result<f64, EngineError> {
        let d = self.devices.get(idx).ok_or_else(|| EngineError::Cuda(format!("no device {idx}")))?;
        lock(d).copy_bandwidth(bytes, reps)
    }

    /// Run `jobs` (optionally from the given initial fields, one per job)
    /// and return the outputs (and the final fields when `want_fields`).
    pub fn run_jobs(&self, jobs: &[SimJob], init: Option<&[Fields]>, want_fields: bool) -> Result<Vec<Result<JobRun, SimFailure>>, EngineError> {
        let t0 = Instant::now();
        if let Some(i) = init {
            if i.len() != jobs.len() {
                return Err(EngineError::Cuda(format!("{} initial fields for {} jobs", i.len(), jobs.len())));
            }
        }
        let mut results: Vec<Option<Result<JobRun, SimFailure>>> = (0..jobs.len()).map(|_| None).collect();
        // TLM jobs run on the TLM kernels, before the FDTD ones.
        let tlm_idx: Vec<usize> = (0..jobs.len()).filter(|&i| tlm::is_tlm(&jobs[i])).collect();
        let mut tlm_st = RunStats::default();
        if !tlm_idx.is_empty() {
            if init.is_some() {
                return Err(EngineError::Cuda("initial fields are an FDTD feature; this batch holds TLM jobs".into()));
            }
            let cfg = *lock(&self.tlm_cfg);
            let (res, s) = tlm::run(&self.devices, jobs, &tlm_idx, cfg, self.tlm_port_threads, &self.opts)?;
            for (i, r) in res {
                results[i] = Some(r.map(|out| JobRun { out, fields: None }));
            }
            tlm_st = s;
        }
        // The FDTD part's own setup time starts here (the TLM part's is in tlm_st).
        let t_fdtd = Instant::now();
        // FDTD: one operator per structure (a design's drives share it), on all cores;
        // invalid jobs are settled here.
        let groups = super::cpu::structure_groups(jobs);
        let firsts: Vec<usize> = (0..jobs.len()).filter(|&i| groups[i] == i && jobs[i].engine == EngineKind::Fdtd).collect();
        let built: Vec<Result<Operator, SimFailure>> = firsts.par_iter().map(|&i| Operator::new(&jobs[i])).collect();
        let op_of = |i: usize| firsts.iter().position(|&f| f == groups[i]).map(|k| &built[k]);
        let mut gpu_jobs = vec![];
        let mut ops: Vec<Option<&Operator>> = vec![None; jobs.len()];
        for i in 0..jobs.len() {
            if results[i].is_some() {
                continue;
            }
            match op_of(i) {
                // Every TLM job was settled above: only FDTD jobs have operators.
                None => results[i] = Some(Err(SimFailure::Invalid(format!("{}: no CUDA engine for this job", jobs[i].label)))),
                Some(Err(e)) => results[i] = Some(Err(e.clone())),
                Some(Ok(op)) => {
                    if let Err(e) = op.check_drive(&jobs[i]).and_then(|()| check_monitors(&jobs[i], op)) {
                        results[i] = Some(Err(e));
                        continue;
                    }
                    if let Some(f) = init {
                        if f[i].e.iter().chain(&f[i].h).any(|a| a.len() != op.len) {
                            return Err(EngineError::Cuda(format!("initial fields of job {i} do not match its mesh")));
                        }
                    }
                    ops[i] = Some(op);
                    gpu_jobs.push(i);
                }
            }
        }
        let setup_ops = t_fdtd.elapsed().as_secs_f64();
        // Spread over the devices by work (cells x steps).
        let cost: Vec<f64> = gpu_jobs.iter().map(|&i| jobs[i].mesh.cells() as f64 * jobs[i].stop.max_steps as f64).collect();
        let shares = batch::spread(&cost, self.devices.len());
        let ops_ref = &ops;
        let opts = &self.opts;
        let per_gpu: Vec<Result<(Vec<(usize, Result<JobRun, SimFailure>)>, RunStats), EngineError>> = std::thread::scope(|sc| {
            let hs: Vec<_> = shares
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .map(|(g, share)| {
                    let idx: Vec<usize> = share.iter().map(|&k| gpu_jobs[k]).collect();
                    let dev = &self.devices[g];
                    sc.spawn(move || {
                        let mut dev = lock(dev);
                        fdtd::run_share(dev.as_mut(), jobs, ops_ref, &idx, init, want_fields, opts)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Cuda("GPU worker panicked".into())))).collect()
        });
        let mut st = RunStats { setup_s: setup_ops, ..Default::default() };
        for r in per_gpu {
            let (res, mut s) = r?;
            s.setup_s += setup_ops;
            st.alongside(&s);
            for (i, r) in res {
                results[i] = Some(r);
            }
        }
        // TLM sub-batches ran before the FDTD ones: their times add.
        tlm_st += &st;
        let mut st = tlm_st;
        st.wall_s = t0.elapsed().as_secs_f64();
        *lock(&self.stats) = st;
        Ok(results
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.unwrap_or_else(|| Err(SimFailure::Invalid(format!("{}: no engine ran this job", jobs[i].label)))))
            .collect())
    }
}

fn report_line(name: &str, a: super::device::KernelAttrs) -> String {
    format!("  {name:<18} regs {:>3}  local {:>4} B  shared {:>6} B  blocks/SM {}\n", a.regs, a.local_bytes, a.shared_bytes, a.blocks_per_sm)
}

/// The job's field monitors against its mesh: the CPU engine's checks, so a
/// bad monitor fails its job with the same message on either backend.
fn check_monitors(job: &SimJob, op: &Operator) -> Result<(), SimFailure> {
    for m in &job.monitors {
        crate::engine::fdtd::dft::FieldDftMonitor::check(m, op)?;
    }
    Ok(())
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{} [{} {}]", self.devices().join(", "), self.opts.scheme.name(), self.opts.tile)
    }
    fn run(&self, jobs: &[SimJob], ctx: &RunCtx) -> BatchResult {
        // The whole batch advances together on the device: it finishes at once
        // (and the watches are left as they are).
        let out: Vec<_> = self.run_jobs(jobs, None, false)?.into_iter().map(|r| r.map(|j| j.out)).collect();
        (ctx.done)(jobs.len());
        Ok(out)
    }
}

/// Builds the CUDA backend for [`super::select`]: over the given devices (`None`: all).
pub fn backend(gpus: Option<Vec<usize>>) -> Result<Box<dyn Backend>, EngineError> {
    if !available() {
        return Err(EngineError::CudaUnavailable(unavailable_reason()));
    }
    let list = match gpus {
        Some(l) => l,
        None => (0..super::device::cuda::device_count()?).collect(),
    };
    Ok(Box::new(CudaBackend::new(&list)?))
}
