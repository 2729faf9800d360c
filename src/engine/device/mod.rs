//! The device layer: one GPU, or a CPU emulation of one, as the methods'
//! batches see it: buffers from a pool, copies, kernel launches, timing and
//! chunks of launches replayed as graphs. The CUDA context, stream, NVRTC
//! compilation and the pool live behind [`Device`] ([`cuda::CudaDevice`]); the
//! emulation ([`emu::EmuDevice`]) runs the same kernel sources compiled as C++
//! on the CPU, so the FDTD and TLM batches (`engine::cuda`) and the stepping
//! loop are checked without a GPU. Nothing above this layer calls cudarc.

pub mod cuda;
pub mod emu;
pub mod graphs;
pub mod nvrtc;

use std::ffi::c_void;

pub use graphs::Chunk;

use super::EngineError;

/// A buffer of a device (an index of the current batch's buffers).
pub type Buf = usize;

/// What a chunk of launches depends on (its graph's key).
pub type ChunkKey = [u64; 5];

/// A kernel source and how to compile it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleSpec {
    /// "fdtd" or "tlm": the emulation library that holds these kernels says so.
    pub name: &'static str,
    /// The source as NVRTC compiles it (headers inlined).
    pub source: String,
    /// `-D` options of this variant (tile, launch shape).
    pub defines: Vec<String>,
    /// The kernels to load, in the order launches name them.
    pub kernels: Vec<&'static str>,
    /// A define tried when the first build fails (e.g. plain loads instead of cp.async).
    pub fallback: Option<&'static str>,
}

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl Dims {
    /// `grid` blocks of `block` threads along x.
    pub fn linear(grid: u32, block: u32) -> Dims {
        Dims { grid: [grid, 1, 1], block: [block, 1, 1] }
    }
}

/// A value passed to a kernel by value (the parameter ABI copies its bytes):
/// numbers, device pointers (`u64`) and the `#[repr(C)]` pointer structs.
///
/// # Safety
/// The type's bytes must be what the kernel's parameter of that position
/// expects (C layout, checked against the headers by the ABI tests).
pub unsafe trait KernelArg {
    /// The address of the value, as kernel launches take it.
    fn param(&self) -> *mut c_void
    where
        Self: Sized,
    {
        self as *const Self as *mut c_void
    }
}

// SAFETY: numbers and device addresses are passed as such.
unsafe impl KernelArg for i32 {}
// SAFETY: as above (a device pointer is a 64-bit address).
unsafe impl KernelArg for u64 {}

/// Registers, spills and occupancy of a loaded kernel (for reports).
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelAttrs {
    pub regs: i32,
    pub local_bytes: i32,
    pub shared_bytes: i32,
    pub blocks_per_sm: u32,
}

/// One device, as a batch drives it. Buffers start zeroed and live until
/// [`Device::release`]; launches and copies run in order on one queue.
pub trait Device: Send {
    /// "NVIDIA H100 80GB HBM3 (GPU 0, sm_90, 132 SMs)", "CPU emulation (...)".
    fn describe(&self) -> String;
    /// Compile (once per process) and load a module; returns its id for launches.
    fn load(&mut self, spec: &ModuleSpec) -> Result<usize, EngineError>;
    /// Registers, spills, shared memory and blocks per SM of kernel `k` of module `m`.
    fn attrs(&mut self, m: usize, k: usize, threads: u32) -> KernelAttrs;
    /// Blocks of kernel `k` of module `m` resident on the whole device at once.
    fn resident_blocks(&mut self, m: usize, k: usize, threads: u32) -> usize;
    /// [`Device::resident_blocks`] of blocks with `shared` bytes of dynamic shared memory each.
    fn resident_blocks_shared(&mut self, m: usize, k: usize, threads: u32, shared: u32) -> usize {
        let _ = shared;
        self.resident_blocks(m, k, threads)
    }
    /// Bytes a batch may use (what is free, the pool counted as free, less a reserve).
    fn budget(&mut self) -> Result<usize, EngineError>;
    /// A zeroed buffer of at least `bytes` bytes.
    fn alloc(&mut self, bytes: usize) -> Result<Buf, EngineError>;
    /// The device address of a buffer.
    fn ptr(&mut self, b: Buf) -> u64;
    fn upload(&mut self, b: Buf, off: usize, data: &[u8]) -> Result<(), EngineError>;
    /// Copy to the host, waiting for the work queued before.
    fn download(&mut self, b: Buf, off: usize, out: &mut [u8]) -> Result<(), EngineError>;
    /// Set `len` bytes from `off` to `byte` (0: zeros; 0xFF: a NaN pattern for f32).
    fn fill(&mut self, b: Buf, off: usize, len: usize, byte: u8) -> Result<(), EngineError>;
    /// Launch kernel `k` of module `m` with the arguments in order.
    fn launch(&mut self, m: usize, k: usize, dims: Dims, args: &[*mut c_void]) -> Result<(), EngineError>;
    /// The most dynamic shared memory one block may ask for (bytes; 0: the
    /// device runs no kernel that needs it).
    fn max_shared(&mut self) -> usize {
        0
    }
    /// [`Device::launch`] with `shared` bytes of dynamic shared memory per block.
    fn launch_shared(&mut self, m: usize, k: usize, dims: Dims, shared: u32, args: &[*mut c_void]) -> Result<(), EngineError> {
        if shared == 0 {
            return self.launch(m, k, dims, args);
        }
        Err(EngineError::Cuda(format!("{}: no dynamic shared memory", self.describe())))
    }
    /// Shared-memory bandwidth of the whole device (bytes/s; every SM), for reports.
    fn shared_bandwidth(&mut self) -> Option<f64> {
        None
    }
    /// Mark the start of timed device work.
    fn mark(&mut self) -> Result<(), EngineError>;
    /// Wait for the device; seconds of device work since [`Device::mark`].
    fn elapsed(&mut self) -> Result<f64, EngineError>;
    /// Before a chunk of launches that depends only on `key`: replay its
    /// recording, or start recording it, or say to launch it directly.
    fn chunk_begin(&mut self, _key: ChunkKey) -> Result<Chunk, EngineError> {
        Ok(Chunk::Direct)
    }
    /// After the launches of a chunk begun as [`Chunk::Recording`]: keep and run
    /// the recording; false when that failed and the chunk must be launched again.
    fn chunk_end(&mut self) -> Result<bool, EngineError> {
        Ok(true)
    }
    /// Use recorded chunks from now on (when the device can).
    fn set_graphs(&mut self, _on: bool) {}
    /// The batch is over: its buffers return to the pool, its recordings are dropped.
    fn release(&mut self) -> Result<(), EngineError>;
    /// Device-to-device copy bandwidth (bytes read + written per second), median of `reps`.
    fn copy_bandwidth(&mut self, _bytes: usize, _reps: usize) -> Result<f64, EngineError> {
        Err(EngineError::Cuda(format!("{}: no copy bandwidth to measure", self.describe())))
    }
}

/// Plain data that may be viewed as bytes for copies.
///
/// # Safety
/// Every byte pattern of the type must be a valid value, and its bytes must
/// be what the kernels read (numbers and `#[repr(C)]` structs of numbers).
pub unsafe trait Pod: Copy + Default {}
// SAFETY: numbers.
unsafe impl Pod for u8 {}
// SAFETY: numbers.
unsafe impl Pod for i32 {}
// SAFETY: numbers.
unsafe impl Pod for u32 {}
// SAFETY: numbers.
unsafe impl Pod for f32 {}
// SAFETY: numbers.
unsafe impl Pod for f64 {}

/// The bytes of a slice of plain data.
pub fn bytes<T: Pod>(v: &[T]) -> &[u8] {
    // SAFETY: T: Pod (plain data of C layout); any byte of it may be read.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Upload a slice at element `off` of a buffer.
pub fn upload<T: Pod>(dev: &mut dyn Device, b: Buf, off: usize, v: &[T]) -> Result<(), EngineError> {
    if v.is_empty() {
        return Ok(());
    }
    dev.upload(b, off * std::mem::size_of::<T>(), bytes(v))
}

/// A buffer holding `v` (at least `min_elems` elements, never empty: kernels get valid pointers).
pub fn alloc_with<T: Pod>(dev: &mut dyn Device, v: &[T], min_elems: usize) -> Result<Buf, EngineError> {
    let n = std::mem::size_of_val(v).max(min_elems * std::mem::size_of::<T>()).max(16);
    let b = dev.alloc(n)?;
    upload(dev, b, 0, v)?;
    Ok(b)
}

/// `n` elements from element `off` of a buffer.
pub fn download_vec<T: Pod>(dev: &mut dyn Device, b: Buf, off: usize, n: usize) -> Result<Vec<T>, EngineError> {
    let mut v = Vec::new();
    download_into(dev, b, off, n, &mut v)?;
    Ok(v)
}

/// [`download_vec`] into `v`, resized to `n` and reusing its memory: the
/// per-chunk copies of port samples (megabytes a chunk for a GA generation)
/// would otherwise land in fresh pages every chunk, and the page faults cost
/// more than the copy (H100 host: 44 ms of a 0.19 s on-chip generation).
pub fn download_into<T: Pod>(dev: &mut dyn Device, b: Buf, off: usize, n: usize, v: &mut Vec<T>) -> Result<(), EngineError> {
    v.resize(n, T::default());
    let sz = std::mem::size_of::<T>();
    // SAFETY: T: Pod, so every byte pattern the device writes is a valid T.
    let out = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, n * sz) };
    if n > 0 {
        dev.download(b, off * sz, out)?;
    }
    Ok(())
}

/// [`launch`] with `shared` bytes of dynamic shared memory per block.
pub fn launch_shared(dev: &mut dyn Device, m: usize, k: usize, dims: Dims, shared: u32, args: &[&dyn ArgRef]) -> Result<(), EngineError> {
    let params: Vec<*mut c_void> = args.iter().map(|a| a.addr()).collect();
    dev.launch_shared(m, k, dims, shared, &params)
}

/// Launch with typed arguments (their addresses, as launches take them).
pub fn launch(dev: &mut dyn Device, m: usize, k: usize, dims: Dims, args: &[&dyn ArgRef]) -> Result<(), EngineError> {
    let params: Vec<*mut c_void> = args.iter().map(|a| a.addr()).collect();
    dev.launch(m, k, dims, &params)
}

/// A borrowed kernel argument (object-safe view of [`KernelArg`]).
pub trait ArgRef {
    fn addr(&self) -> *mut c_void;
}

impl<T: KernelArg> ArgRef for T {
    fn addr(&self) -> *mut c_void {
        self.param()
    }
}

/// A CUDA driver error as an engine error.
pub(crate) fn drv(e: cudarc::driver::DriverError) -> EngineError {
    EngineError::Cuda(format!("{e:?}"))
}

/// True when the CUDA driver and NVRTC libraries load and at least one
/// device exists. Never panics.
pub fn available() -> bool {
    cuda::available()
}

/// Why [`available`] is false, for messages.
pub fn unavailable_reason() -> String {
    cuda::unavailable_reason()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_data_round_trips_as_bytes() {
        let v = [1.5f32, -2.0, f32::MIN_POSITIVE];
        let b = bytes(&v);
        assert_eq!(b.len(), 12);
        assert_eq!(f32::from_le_bytes(b[4..8].try_into().unwrap()), -2.0);
        let x = 7i32;
        assert_eq!(x.addr() as *const i32, &x as *const i32);
    }
}
