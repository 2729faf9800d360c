//! NVRTC compilation of a module for a device's architecture, once per
//! process (PTX cached by architecture and module). Every build has
//! `--fmad=false`: the CPU engines round every product, and so must the kernels.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

use super::ModuleSpec;
use crate::engine::EngineError;

fn compile_error_text(e: &CompileError) -> String {
    match e {
        CompileError::CompileError { nvrtc, options, log } => {
            format!("NVRTC {nvrtc:?} with options {options:?}:\n{}", log.to_string_lossy())
        }
        other => format!("NVRTC: {other:?}"),
    }
}

fn build(spec: &ModuleSpec, arch: &'static str, extra: Option<&str>) -> Result<Ptx, CompileError> {
    let opts = CompileOptions {
        arch: Some(arch),
        // No contraction into fused multiply-adds: the CPU engine rounds every product.
        fmad: Some(false),
        // EMVOLVE_NVRTC_OPTS (space separated, e.g. "-lineinfo"): extra options for
        // profiling builds; they change no arithmetic unless they say so.
        options: spec
            .defines
            .iter()
            .cloned()
            .chain(extra.map(String::from))
            .chain(std::env::var("EMVOLVE_NVRTC_OPTS").unwrap_or_default().split_whitespace().map(String::from))
            .collect(),
        ..Default::default()
    };
    compile_ptx_with_opts(&spec.source, opts)
}

/// The PTX of `spec` for `arch` (e.g. "sm_90").
pub(crate) fn compile(spec: &ModuleSpec, arch: &'static str) -> Result<Ptx, EngineError> {
    static CACHE: OnceLock<Mutex<HashMap<(&'static str, ModuleSpec), Ptx>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (arch, spec.clone());
    if let Some(p) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(p.clone());
    }
    let ptx = match build(spec, arch, None) {
        Ok(p) => p,
        // Some NVRTC versions give no PTX for a real (sm_) target: retry with the virtual one.
        Err(CompileError::GetPtxError(_)) if arch.starts_with("sm_") => {
            let virt: &'static str = Box::leak(arch.replace("sm_", "compute_").into_boxed_str());
            build(spec, virt, None).map_err(|e| EngineError::Cuda(compile_error_text(&e)))?
        }
        Err(e) => match spec.fallback {
            // The first build did not compile: say why, and build the fallback variant.
            Some(f) => {
                eprintln!("warning: {} kernels failed to compile for {arch} with {:?}; retrying with {f}:\n{}", spec.name, spec.defines, compile_error_text(&e));
                build(spec, arch, Some(f)).map_err(|e| EngineError::Cuda(compile_error_text(&e)))?
            }
            None => return Err(EngineError::Cuda(compile_error_text(&e))),
        },
    };
    cache.lock().unwrap_or_else(|p| p.into_inner()).insert(key, ptx.clone());
    Ok(ptx)
}
