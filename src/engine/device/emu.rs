//! [`Device`] backed by CPU emulations of the kernel sources: `kernels/fdtd.cu`
//! and `kernels/tlm.cu` compiled as C++ with small CUDA shims into shared
//! libraries (`scripts/kernel-emu.sh`, `scripts/tlm-emu.sh` build them),
//! loaded at run time. Buffers are host memory and "device pointers" their
//! addresses, so the batches and the stepping loop run exactly as on a GPU
//! and are checked against the CPU engines without one.
//!
//! A library exports `emu_module()` (which kernels it holds: "fdtd" or "tlm"),
//! `emu_defines()` (the `-D` options it was built with) and
//! `emu_kernel(k, grid[3], block[3], args)` (launch kernel k of its module's
//! list with the kernel parameters' addresses, as `cuLaunchKernel` takes them).

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use super::{Buf, Device, Dims, KernelAttrs, ModuleSpec};
use crate::engine::EngineError;

type KernelFn = unsafe extern "C" fn(i32, *const u32, *const u32, *const *mut c_void) -> i32;
type TextFn = unsafe extern "C" fn() -> *const c_char;
type SharedFn = unsafe extern "C" fn(u32);

/// Build an emulation library: `src` (relative to the crate root, e.g.
/// `scripts/tlm-emu/emu.cpp`) with g++ and the `-D` options `defines` into
/// `out`; the floating-point contraction off, as the NVRTC builds have it.
/// Used by the tests that run the emulated kernels.
pub fn build_library(src: &str, out: &Path, defines: &[&str]) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let st = std::process::Command::new("g++")
        .args(["-std=c++20", "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-w"])
        .args(defines)
        .arg("-o")
        .arg(out)
        .arg(root.join(src))
        .status()
        .map_err(|e| format!("running g++ (the emulation needs it): {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("building {src} failed ({st})"))
    }
}

/// The shims keep the launch geometry in globals: one launch at a time per process.
static LAUNCH: Mutex<()> = Mutex::new(());

struct Lib {
    _lib: libloading::Library,
    module: String,
    defines: Vec<String>,
    kernel: KernelFn,
    /// `emu_set_shared(bytes)`: dynamic shared memory of the next launches (libraries with such kernels).
    set_shared: Option<SharedFn>,
}

/// An emulated device over one or more kernel libraries.
pub struct EmuDevice {
    libs: Vec<Lib>,
    /// Loaded modules: (library index, spec).
    modules: Vec<(usize, ModuleSpec)>,
    bufs: Vec<Vec<u64>>,
    t: Option<Instant>,
    /// Launches so far, per module and kernel.
    pub launches: Vec<Vec<usize>>,
}

fn text(f: TextFn) -> String {
    // SAFETY: the emulation libraries return a static NUL-terminated string.
    unsafe { CStr::from_ptr(f()) }.to_string_lossy().into_owned()
}

impl EmuDevice {
    /// Load the emulation libraries (built by the scripts).
    pub fn open(paths: &[&Path]) -> Result<EmuDevice, String> {
        let mut libs = vec![];
        for path in paths {
            // SAFETY: the library is one of our emulations (scripts/*-emu/); loading it runs
            // no initialisers beyond the C++ runtime's.
            let lib = unsafe { libloading::Library::new(*path) }.map_err(|e| format!("loading {}: {e}", path.display()))?;
            // SAFETY: the symbols have the signatures declared in scripts/*-emu/lib.cpp.
            let (module, defines, kernel, set_shared) = unsafe {
                let m: libloading::Symbol<TextFn> = lib.get(b"emu_module").map_err(|e| format!("{}: {e}", path.display()))?;
                let d: libloading::Symbol<TextFn> = lib.get(b"emu_defines").map_err(|e| format!("{}: {e}", path.display()))?;
                let k: libloading::Symbol<KernelFn> = lib.get(b"emu_kernel").map_err(|e| format!("{}: {e}", path.display()))?;
                let sh: Option<SharedFn> = lib.get::<SharedFn>(b"emu_set_shared").ok().map(|f| *f);
                (text(*m), text(*d), *k, sh)
            };
            libs.push(Lib { _lib: lib, module, defines: defines.split_whitespace().map(String::from).collect(), kernel, set_shared });
        }
        Ok(EmuDevice { libs, modules: vec![], bufs: vec![], t: None, launches: vec![] })
    }

    /// The `-D` options the library for `module` was built with.
    pub fn defines(&self, module: &str) -> Option<&[String]> {
        self.libs.iter().find(|l| l.module == module).map(|l| l.defines.as_slice())
    }

    /// The integer value of `-DNAME=V` in the library for `module`.
    pub fn define(&self, module: &str, name: &str) -> Option<i64> {
        let key = format!("-D{name}=");
        self.defines(module)?.iter().find_map(|d| d.strip_prefix(&key)).and_then(|v| v.parse().ok())
    }

    fn bytes_mut(&mut self, b: Buf) -> Result<&mut [u8], EngineError> {
        let v = self.bufs.get_mut(b).ok_or_else(|| EngineError::Cuda(format!("buffer {b} does not exist")))?;
        // SAFETY: a Vec<u64> viewed as its bytes (u8 has no alignment needs).
        Ok(unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 8) })
    }
}

impl Device for EmuDevice {
    fn describe(&self) -> String {
        let libs: Vec<String> = self.libs.iter().map(|l| format!("{} {}", l.module, l.defines.join(" "))).collect();
        format!("CPU emulation ({})", libs.join("; "))
    }

    fn load(&mut self, spec: &ModuleSpec) -> Result<usize, EngineError> {
        if let Some(i) = self.modules.iter().position(|(_, s)| s == spec) {
            return Ok(i);
        }
        let li = self.libs.iter().position(|l| l.module == spec.name).ok_or_else(|| EngineError::Cuda(format!("no emulation library holds the {} kernels", spec.name)))?;
        // Every option the library fixes must be the one asked for.
        for d in &self.libs[li].defines {
            let name = d.split('=').next().unwrap_or(d);
            if let Some(want) = spec.defines.iter().find(|s| s.split('=').next() == Some(name)) {
                if want != d {
                    return Err(EngineError::Cuda(format!("the {} emulation library was built with {d}, the batch needs {want}", spec.name)));
                }
            }
        }
        self.modules.push((li, spec.clone()));
        self.launches.push(vec![0; spec.kernels.len()]);
        Ok(self.modules.len() - 1)
    }

    fn attrs(&mut self, _m: usize, _k: usize, _threads: u32) -> KernelAttrs {
        KernelAttrs::default()
    }

    fn resident_blocks(&mut self, _m: usize, _k: usize, _threads: u32) -> usize {
        16
    }

    fn budget(&mut self) -> Result<usize, EngineError> {
        Ok(8 << 30)
    }

    fn alloc(&mut self, bytes: usize) -> Result<Buf, EngineError> {
        self.bufs.push(vec![0u64; bytes.div_ceil(8).max(2)]);
        Ok(self.bufs.len() - 1)
    }

    fn ptr(&mut self, b: Buf) -> u64 {
        self.bufs.get_mut(b).map_or(0, |v| v.as_mut_ptr() as u64)
    }

    fn upload(&mut self, b: Buf, off: usize, data: &[u8]) -> Result<(), EngineError> {
        let s = self.bytes_mut(b)?;
        if off + data.len() > s.len() {
            return Err(EngineError::Cuda(format!("upload of {} bytes at {off} overruns buffer {b} ({} bytes)", data.len(), s.len())));
        }
        s[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn download(&mut self, b: Buf, off: usize, out: &mut [u8]) -> Result<(), EngineError> {
        let s = self.bytes_mut(b)?;
        if off + out.len() > s.len() {
            return Err(EngineError::Cuda(format!("download of {} bytes at {off} overruns buffer {b}", out.len())));
        }
        out.copy_from_slice(&s[off..off + out.len()]);
        Ok(())
    }

    fn fill(&mut self, b: Buf, off: usize, len: usize, byte: u8) -> Result<(), EngineError> {
        let s = self.bytes_mut(b)?;
        if off + len > s.len() {
            return Err(EngineError::Cuda(format!("fill of {len} bytes at {off} overruns buffer {b}")));
        }
        s[off..off + len].iter_mut().for_each(|x| *x = byte);
        Ok(())
    }

    fn launch(&mut self, m: usize, k: usize, dims: Dims, args: &[*mut c_void]) -> Result<(), EngineError> {
        let (li, _) = self.modules.get(m).ok_or_else(|| EngineError::Cuda(format!("module {m} is not loaded")))?;
        let kernel = self.libs[*li].kernel;
        if let Some(c) = self.launches.get_mut(m).and_then(|v| v.get_mut(k)) {
            *c += 1;
        }
        let _one = LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the argument addresses point to values of the kernel's parameter types,
        // alive for the call; the pointers inside them address this device's buffers, sized
        // by the batch's plan.
        let rc = unsafe { kernel(k as i32, dims.grid.as_ptr(), dims.block.as_ptr(), args.as_ptr()) };
        if rc != 0 {
            return Err(EngineError::Cuda(format!("the emulation refused kernel {k} of module {m}")));
        }
        Ok(())
    }

    /// The largest block any on-chip library emulates (`-DEMU_MAX_SHARED`; 0 without one).
    fn max_shared(&mut self) -> usize {
        ["fdtd_onchip", "tlm_onchip"].iter().filter_map(|m| self.define(m, "EMU_MAX_SHARED")).map(|v| v.max(0) as usize).max().unwrap_or(0)
    }

    fn launch_shared(&mut self, m: usize, k: usize, dims: Dims, shared: u32, args: &[*mut c_void]) -> Result<(), EngineError> {
        let (li, _) = self.modules.get(m).ok_or_else(|| EngineError::Cuda(format!("module {m} is not loaded")))?;
        let Some(set) = self.libs[*li].set_shared else {
            return Err(EngineError::Cuda(format!("the {} emulation library has no dynamic shared memory", self.libs[*li].module)));
        };
        // One launch at a time (LAUNCH in `launch`); the size is set right before it.
        let _one = LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: emu_set_shared only stores the size for the next launch.
        unsafe { set(shared) };
        drop(_one);
        self.launch(m, k, dims, args)
    }

    fn mark(&mut self) -> Result<(), EngineError> {
        self.t = Some(Instant::now());
        Ok(())
    }

    fn elapsed(&mut self) -> Result<f64, EngineError> {
        Ok(self.t.take().map_or(0.0, |t| t.elapsed().as_secs_f64()))
    }

    fn release(&mut self) -> Result<(), EngineError> {
        self.bufs.clear();
        Ok(())
    }
}
