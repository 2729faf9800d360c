//! [`Dev`] backed by a CPU emulation of `kernels/tlm.cu`: the kernel source
//! compiled as C++ with `scripts/tlm-emu/shim.h` into a shared library
//! (`scripts/tlm-emu.sh` builds it), loaded at run time. Buffers are host
//! memory; "device pointers" are their addresses. Lets the kernels and the
//! stepping loop ([`super::drive`]) be checked against the CPU engine without a GPU.

use std::path::Path;
use std::time::Instant;

use super::abi::TlmPtrs;
use super::{Dev, TlmConfig};
use crate::engine::EngineError;

type LaunchFn = unsafe extern "C" fn(i32, u32, u32, *const TlmPtrs, i32, i32) -> i32;
type ConfigFn = unsafe extern "C" fn(*mut i32);

pub struct EmuDev {
    _lib: libloading::Library,
    launch: LaunchFn,
    cfg: TlmConfig,
    port_threads: u32,
    bufs: Vec<Vec<u64>>,
    t: Option<Instant>,
    /// Launches so far, per kernel.
    pub launches: [usize; 8],
}

impl EmuDev {
    /// Load the emulator library built by `scripts/tlm-emu.sh`.
    pub fn open(path: &Path) -> Result<EmuDev, String> {
        // SAFETY: the library is our own emulator (scripts/tlm-emu/emu.cpp); loading runs no
        // initialisers beyond the C++ runtime's.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("loading {}: {e}", path.display()))?;
        // SAFETY: the symbols have the signatures declared in emu.cpp.
        let (launch, config) = unsafe {
            let l: libloading::Symbol<LaunchFn> = lib.get(b"emu_tlm_launch").map_err(|e| e.to_string())?;
            let c: libloading::Symbol<ConfigFn> = lib.get(b"emu_tlm_config").map_err(|e| e.to_string())?;
            (*l, *c)
        };
        let mut c = [0i32; 4];
        // SAFETY: writes four ints.
        unsafe { config(c.as_mut_ptr()) };
        let cfg = TlmConfig { threads: c[0] as u32, npt: c[1] as u32, minb: 0, split: c[3] != 0 };
        Ok(EmuDev { _lib: lib, launch, cfg, port_threads: c[2] as u32, bufs: vec![], t: None, launches: [0; 8] })
    }

    fn bytes_mut(&mut self, id: usize) -> &mut [u8] {
        let v = &mut self.bufs[id];
        // SAFETY: a Vec<u64> viewed as its bytes.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 8) }
    }
}

impl Dev for EmuDev {
    fn alloc(&mut self, bytes: usize) -> Result<usize, EngineError> {
        self.bufs.push(vec![0u64; bytes.div_ceil(8).max(2)]);
        Ok(self.bufs.len() - 1)
    }
    fn ptr(&mut self, id: usize) -> u64 {
        self.bufs[id].as_mut_ptr() as u64
    }
    fn upload(&mut self, id: usize, off: usize, data: &[u8]) -> Result<(), EngineError> {
        let b = self.bytes_mut(id);
        if off + data.len() > b.len() {
            return Err(EngineError::Cuda(format!("upload of {} bytes at {off} overruns buffer {id} ({} bytes)", data.len(), b.len())));
        }
        b[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn download(&mut self, id: usize, off: usize, out: &mut [u8]) -> Result<(), EngineError> {
        let b = self.bytes_mut(id);
        if off + out.len() > b.len() {
            return Err(EngineError::Cuda(format!("download of {} bytes at {off} overruns buffer {id}", out.len())));
        }
        out.copy_from_slice(&b[off..off + out.len()]);
        Ok(())
    }
    fn zero(&mut self, id: usize) -> Result<(), EngineError> {
        self.bufs[id].iter_mut().for_each(|x| *x = 0);
        Ok(())
    }
    fn launch(&mut self, k: usize, grid: u32, block: u32, p: &TlmPtrs, a0: i32, a1: i32) -> Result<(), EngineError> {
        self.launches[k] += 1;
        // SAFETY: the pointers in `p` address buffers of this emulator sized by the plan.
        let rc = unsafe { (self.launch)(k as i32, grid, block, p, a0, a1) };
        if rc != 0 {
            return Err(EngineError::Cuda(format!("emulator refused kernel {k}")));
        }
        Ok(())
    }
    fn mark(&mut self) -> Result<(), EngineError> {
        self.t = Some(Instant::now());
        Ok(())
    }
    fn elapsed(&mut self) -> Result<f64, EngineError> {
        Ok(self.t.take().map_or(0.0, |t| t.elapsed().as_secs_f64()))
    }
    fn config(&self) -> (TlmConfig, u32) {
        (self.cfg, self.port_threads)
    }
}
