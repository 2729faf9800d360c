//! One CUDA GPU behind [`Device`]: its context and stream (all work of a
//! worker is ordered on one stream, so no per-buffer events are tracked), its
//! modules (NVRTC-compiled for the device's compute capability), a pool of
//! buffers reused from batch to batch, and the chunk graphs.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::graphs::{Chunk, ChunkGraphs};
use super::{drv, Buf, ChunkKey, Device, Dims, KernelAttrs, ModuleSpec};
use crate::engine::EngineError;

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
    let drv = std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false);
    // SAFETY: as in `available`.
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

/// The number of CUDA devices.
pub fn device_count() -> Result<usize, EngineError> {
    Ok(CudaContext::device_count().map_err(drv)? as usize)
}

/// The recorded chunks of the current batch.
struct Graphs(ChunkGraphs<ChunkKey>);

// SAFETY: a CUDA graph handle is not tied to the thread that made it; the
// device that owns these is used by one thread at a time (the backend keeps
// each device behind a mutex, and its worker binds the context before any
// work), so the graphs are recorded, launched and dropped by that thread only.
unsafe impl Send for Graphs {}

/// A GPU with its stream, modules, buffer pool and graphs.
pub struct CudaDevice {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    arch: &'static str,
    sms: u32,
    /// Loaded modules: spec and kernels.
    modules: Vec<(ModuleSpec, Vec<CudaFunction>)>,
    /// Buffers of the current batch (by [`Buf`]) and the pool of free ones.
    live: Vec<CudaSlice<u8>>,
    free: Vec<CudaSlice<u8>>,
    graphs: Graphs,
    graphs_on: bool,
    start: Option<CudaEvent>,
}

impl CudaDevice {
    /// Open GPU `ordinal` (a context and a stream of its own).
    pub fn open(ordinal: usize) -> Result<CudaDevice, EngineError> {
        let n = device_count()?;
        if ordinal >= n {
            return Err(EngineError::CudaUnavailable(format!("GPU {ordinal} requested, {n} device(s) present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(drv)?;
        // One stream per worker orders all its work; no per-buffer events needed.
        // SAFETY: buffers of this device are only used on the stream that made them.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(drv)?;
        let (maj, min) = ctx.compute_capability().map_err(drv)?;
        let arch: &'static str = Box::leak(format!("sm_{maj}{min}").into_boxed_str());
        let sms = ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(drv)? as u32;
        let name = ctx.name().map_err(drv)?;
        let graphs = Graphs(ChunkGraphs::new(stream.clone(), true, "steps"));
        Ok(CudaDevice { ordinal, ctx, stream, name, arch, sms, modules: vec![], live: vec![], free: vec![], graphs, graphs_on: true, start: None })
    }

    fn buf(&self, b: Buf) -> Result<&CudaSlice<u8>, EngineError> {
        self.live.get(b).ok_or_else(|| EngineError::Cuda(format!("buffer {b} does not exist ({} live)", self.live.len())))
    }

    fn kernel(&self, m: usize, k: usize) -> Result<&CudaFunction, EngineError> {
        self.modules.get(m).and_then(|(_, ks)| ks.get(k)).ok_or_else(|| EngineError::Cuda(format!("kernel {k} of module {m} is not loaded")))
    }

    fn event(&self) -> Result<CudaEvent, EngineError> {
        self.stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)
    }
}

impl Device for CudaDevice {
    fn describe(&self) -> String {
        format!("{} (GPU {}, {}, {} SMs)", self.name, self.ordinal, self.arch, self.sms)
    }

    fn load(&mut self, spec: &ModuleSpec) -> Result<usize, EngineError> {
        if let Some(i) = self.modules.iter().position(|(s, _)| s == spec) {
            return Ok(i);
        }
        self.ctx.bind_to_thread().map_err(drv)?;
        let ptx = super::nvrtc::compile(spec, self.arch)?;
        let m = self.ctx.load_module(ptx).map_err(drv)?;
        let mut ks = vec![];
        for n in &spec.kernels {
            ks.push(m.load_function(n).map_err(|e| EngineError::Cuda(format!("loading kernel {n}: {e:?}")))?);
        }
        self.modules.push((spec.clone(), ks));
        Ok(self.modules.len() - 1)
    }

    fn attrs(&mut self, m: usize, k: usize, threads: u32) -> KernelAttrs {
        match self.kernel(m, k) {
            Ok(f) => KernelAttrs {
                regs: f.num_regs().unwrap_or(-1),
                local_bytes: f.local_size_bytes().unwrap_or(-1),
                shared_bytes: f.shared_size_bytes().unwrap_or(-1),
                blocks_per_sm: f.occupancy_max_active_blocks_per_multiprocessor(threads, 0, None).unwrap_or(0),
            },
            Err(_) => KernelAttrs::default(),
        }
    }

    fn resident_blocks(&mut self, m: usize, k: usize, threads: u32) -> usize {
        let per_sm = self.kernel(m, k).ok().and_then(|f| f.occupancy_max_active_blocks_per_multiprocessor(threads, 0, None).ok()).unwrap_or(1).max(1);
        per_sm as usize * self.sms as usize
    }

    fn resident_blocks_shared(&mut self, m: usize, k: usize, threads: u32, shared: u32) -> usize {
        use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAXDYN;
        let per_sm = self
            .kernel(m, k)
            .ok()
            .and_then(|f| {
                // The occupancy of more than 48 KiB needs the kernel's opt-in first.
                f.set_attribute(MAXDYN, shared as i32).ok()?;
                f.occupancy_max_active_blocks_per_multiprocessor(threads, shared as usize, None).ok()
            })
            .unwrap_or(1)
            .max(1);
        per_sm as usize * self.sms as usize
    }

    fn budget(&mut self) -> Result<usize, EngineError> {
        self.ctx.bind_to_thread().map_err(drv)?;
        let (free, total) = self.ctx.mem_get_info().map_err(drv)?;
        let pool: usize = self.free.iter().chain(&self.live).map(|s| s.len()).sum();
        let reserve = (total / 32).max(256 << 20);
        Ok((free + pool).saturating_sub(reserve))
    }

    fn alloc(&mut self, bytes: usize) -> Result<Buf, EngineError> {
        let bytes = bytes.max(16);
        // The smallest free buffer that fits; on a miss the free ones too small go
        // first (batches grow: they would not fit the next one either).
        let pick = self.free.iter().enumerate().filter(|(_, s)| s.len() >= bytes).min_by_key(|(_, s)| s.len()).map(|(i, _)| i);
        let mut s = match pick {
            Some(i) => self.free.swap_remove(i),
            None => {
                self.free.retain(|s| s.len() >= bytes);
                self.stream.synchronize().map_err(drv)?;
                match self.stream.alloc_zeros::<u8>(bytes) {
                    Ok(s) => s,
                    Err(_) => {
                        // Out of memory with the pool kept: give it back and try once more.
                        self.free.clear();
                        self.stream.synchronize().map_err(drv)?;
                        self.stream.alloc_zeros::<u8>(bytes).map_err(drv)?
                    }
                }
            }
        };
        self.stream.memset_zeros(&mut s).map_err(drv)?;
        self.live.push(s);
        Ok(self.live.len() - 1)
    }

    fn ptr(&mut self, b: Buf) -> u64 {
        match self.live.get(b) {
            Some(s) => {
                let (p, _sync) = s.device_ptr(&self.stream);
                p
            }
            None => 0,
        }
    }

    fn upload(&mut self, b: Buf, off: usize, data: &[u8]) -> Result<(), EngineError> {
        if data.is_empty() {
            return Ok(());
        }
        let len = self.buf(b)?.len();
        if off + data.len() > len {
            return Err(EngineError::Cuda(format!("upload of {} bytes at {off} overruns buffer {b} ({len} bytes)", data.len())));
        }
        let (stream, s) = (&self.stream, &mut self.live[b]);
        let mut v = s.slice_mut(off..off + data.len());
        stream.memcpy_htod(data, &mut v).map_err(drv)
    }

    fn download(&mut self, b: Buf, off: usize, out: &mut [u8]) -> Result<(), EngineError> {
        if out.is_empty() {
            return Ok(());
        }
        let s = self.buf(b)?;
        if off + out.len() > s.len() {
            return Err(EngineError::Cuda(format!("download of {} bytes at {off} overruns buffer {b} ({} bytes)", out.len(), s.len())));
        }
        let v = s.slice(off..off + out.len());
        self.stream.memcpy_dtoh(&v, out).map_err(drv)?;
        self.stream.synchronize().map_err(drv)
    }

    fn fill(&mut self, b: Buf, off: usize, len: usize, byte: u8) -> Result<(), EngineError> {
        if len == 0 {
            return Ok(());
        }
        let total = self.buf(b)?.len();
        if off + len > total {
            return Err(EngineError::Cuda(format!("fill of {len} bytes at {off} overruns buffer {b} ({total} bytes)")));
        }
        let (stream, s) = (&self.stream, &mut self.live[b]);
        let mut view = s.slice_mut(off..off + len);
        let (p, _sync) = view.device_ptr_mut(stream);
        // SAFETY: p addresses len bytes of a live buffer of this context; the fill is ordered on its stream.
        unsafe { cudarc::driver::result::memset_d8_async(p, byte, len, stream.cu_stream()) }.map_err(drv)
    }

    fn launch(&mut self, m: usize, k: usize, dims: Dims, args: &[*mut c_void]) -> Result<(), EngineError> {
        let f = self.kernel(m, k)?.cu_function();
        self.ctx.bind_to_thread().map_err(drv)?;
        let mut params = args.to_vec();
        let g = (dims.grid[0], dims.grid[1], dims.grid[2]);
        let b = (dims.block[0], dims.block[1], dims.block[2]);
        // SAFETY: `f` is a kernel of a module loaded in this context; `params` point to
        // argument values of the types its parameters have (KernelArg, checked against
        // the headers), alive for the call (the driver copies them at launch or capture);
        // the pointers inside them address live buffers of this stream, sized by the plan
        // whose ranges the kernels keep to.
        unsafe { cudarc::driver::result::launch_kernel(f, g, b, 0, self.stream.cu_stream(), &mut params) }.map_err(drv)
    }

    fn max_shared(&mut self) -> usize {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as OPTIN;
        self.ctx.attribute(OPTIN).map_or(0, |v| v.max(0) as usize)
    }

    fn launch_shared(&mut self, m: usize, k: usize, dims: Dims, shared: u32, args: &[*mut c_void]) -> Result<(), EngineError> {
        use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAXDYN;
        self.ctx.bind_to_thread().map_err(drv)?;
        let kf = self.kernel(m, k)?;
        // Above 48 KiB a kernel must opt in to its dynamic shared memory.
        kf.set_attribute(MAXDYN, shared as i32).map_err(drv)?;
        let f = kf.cu_function();
        let mut params = args.to_vec();
        let g = (dims.grid[0], dims.grid[1], dims.grid[2]);
        let b = (dims.block[0], dims.block[1], dims.block[2]);
        // SAFETY: as in `launch`; `shared` is within what the function was just allowed.
        unsafe { cudarc::driver::result::launch_kernel(f, g, b, shared, self.stream.cu_stream(), &mut params) }.map_err(drv)
    }

    fn shared_bandwidth(&mut self) -> Option<f64> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE as CLOCK;
        // 32 banks x 4 bytes per clock and SM (Volta to Hopper), at the boost clock.
        let khz = self.ctx.attribute(CLOCK).ok()? as f64;
        Some(self.sms as f64 * 128.0 * khz * 1e3)
    }

    fn mark(&mut self) -> Result<(), EngineError> {
        self.start = Some(self.event()?);
        Ok(())
    }

    fn elapsed(&mut self) -> Result<f64, EngineError> {
        let e = self.event()?;
        self.stream.synchronize().map_err(drv)?;
        let a = self.start.take().ok_or_else(|| EngineError::Cuda("elapsed without mark".into()))?;
        Ok(a.elapsed_ms(&e).map_err(drv)? as f64 * 1e-3)
    }

    fn chunk_begin(&mut self, key: ChunkKey) -> Result<Chunk, EngineError> {
        self.graphs.0.begin(key)
    }

    fn chunk_end(&mut self) -> Result<bool, EngineError> {
        self.graphs.0.end()
    }

    fn set_graphs(&mut self, on: bool) {
        self.graphs_on = on;
        self.graphs = Graphs(ChunkGraphs::new(self.stream.clone(), on, "steps"));
    }

    fn release(&mut self) -> Result<(), EngineError> {
        // Recordings hold the batch's pointers: drop them with it.
        self.graphs = Graphs(ChunkGraphs::new(self.stream.clone(), self.graphs_on, "steps"));
        self.stream.synchronize().map_err(drv)?;
        self.free.append(&mut self.live);
        Ok(())
    }

    fn copy_bandwidth(&mut self, bytes: usize, reps: usize) -> Result<f64, EngineError> {
        let s = self.stream.clone();
        let n = bytes / 4;
        let src = s.alloc_zeros::<f32>(n.max(1)).map_err(drv)?;
        let mut dst = s.alloc_zeros::<f32>(n.max(1)).map_err(drv)?;
        s.memcpy_dtod(&src, &mut dst).map_err(drv)?;
        let mut times = vec![];
        for _ in 0..reps.max(1) {
            let a = self.event()?;
            s.memcpy_dtod(&src, &mut dst).map_err(drv)?;
            let b = self.event()?;
            times.push(a.elapsed_ms(&b).map_err(drv)? as f64 * 1e-3);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        Ok(2.0 * (n * 4) as f64 / times[times.len() / 2])
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // Buffers free on the stream; wait so that whatever follows finds the memory.
        let _ = self.stream.synchronize();
    }
}
