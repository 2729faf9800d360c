//! `emvolve dev kernel-emu`: checks `kernels/fdtd.cu`
//! without a GPU. The CUDA backend runs on the CPU emulation of the device
//! (`scripts/kernel-emu/lib.cpp`: the kernels compiled as C++ with a shim
//! that runs each block's threads as OS threads with a barrier), through the
//! same batch and stepping loop as on a GPU, and the result is compared with
//! the CPU engine: every field position, the port traces, the energy and the
//! field DFT monitors every job carries (`monitor_check`).
//! `scripts/kernel-emu.sh` builds the emulator and runs this.

use std::path::PathBuf;

use clap::Args;

use super::device_check::{random_fields, random_jobs, zero_jobs};
use crate::engine::cuda::{CudaBackend, CudaOptions, PathChoice, Scheme};
use crate::engine::fdtd::cpu::{self as fcpu, Fields};
use crate::engine::fdtd::Operator;
use crate::job::{SimFailure, StopRule};

#[derive(Args, Debug)]
pub struct KernelEmuArgs {
    /// Emulation library (built for one tile by scripts/kernel-emu.sh).
    #[arg(long)]
    pub lib: PathBuf,
    #[arg(long, default_value_t = 12)]
    pub steps: usize,
    /// Planes per z-chunk.
    #[arg(long, default_value_t = 4)]
    pub zchunk: usize,
    /// Use the split kernels instead of the fused step.
    #[arg(long)]
    pub split: bool,
    /// Start the benchmark-like jobs from zero instead of random fields.
    #[arg(long)]
    pub zero: bool,
    /// Steps between copies of the port samples (small values exercise the chunking).
    #[arg(long, default_value_t = 5)]
    pub trace_chunk: usize,
    /// Largest accepted relative difference.
    #[arg(long, default_value_t = 1e-6)]
    pub tol: f64,
    /// Emulation library of the on-chip kernel (kernels/fdtd_onchip.cu), for --path auto/onchip.
    #[arg(long)]
    pub onchip_lib: Option<PathBuf>,
    /// FDTD path: auto (on-chip where a design fits, needs --onchip-lib), onchip, streaming.
    #[arg(long, default_value = "streaming")]
    pub path: String,
}

pub fn run(a: KernelEmuArgs) -> anyhow::Result<i32> {
    let steps = a.steps;
    let mut jobs = if a.zero { zero_jobs(true) } else { random_jobs(true, steps) };
    // Fixed step count, the energy checked every 4 steps (the energy kernel's
    // values show in the decay the runs end with); jobs meant to blow up are left out.
    jobs.retain(|j| !j.materials.iter().any(|m| m.eps_r < 1.0));
    // Every job carries the field DFT monitors of the device check (kernel fdtd_dft).
    for j in &mut jobs {
        j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 4 };
        super::monitor_check::attach(j);
    }
    let ops: Vec<Operator> = jobs.iter().map(|j| Operator::new(j).map_err(|e: SimFailure| anyhow::anyhow!("{}: {e}", j.label))).collect::<Result<_, _>>()?;
    let init: Vec<Fields> = ops.iter().enumerate().map(|(k, op)| if a.zero { Fields::new(op) } else { random_fields(op, 7 + k as u64) }).collect();
    let scheme = if a.split { Scheme::Split } else { Scheme::Fused };
    let path = PathChoice::parse(&a.path).map_err(|e| anyhow::anyhow!(e))?;
    anyhow::ensure!(path == PathChoice::Streaming || a.onchip_lib.is_some(), "--path {}: needs --onchip-lib", a.path);
    let opts = CudaOptions { scheme, zchunk: Some(a.zchunk), poison: true, trace_chunk: a.trace_chunk, graphs: false, path, verbose: true, ..Default::default() };
    let mut libs = vec![a.lib.as_path()];
    libs.extend(a.onchip_lib.as_deref());
    let be = CudaBackend::emulated(&libs, opts)?;
    let t = std::time::Instant::now();
    let gpu = be.run_jobs(&jobs, Some(&init), true)?;
    let emu_s = t.elapsed().as_secs_f64();
    let tile = be.options().tile;
    let st = be.last_stats();
    let mut worst = 0.0f64;
    println!(
        "kernel-emu: {} scheme, tile {tile}, zchunk {}, path {} ({} designs on-chip, {} streaming), {steps} steps, {} designs (emulated in {emu_s:.1} s)",
        scheme.name(),
        a.zchunk,
        path.name(),
        st.onchip_designs,
        st.streaming_designs,
        jobs.len()
    );
    if path != PathChoice::Streaming && st.onchip_designs == 0 {
        println!("kernel-emu FAIL: no design ran on-chip");
        return Ok(1);
    }
    for (d, job) in jobs.iter().enumerate() {
        let op = &ops[d];
        let mut f = Fields::new(op);
        f.e = init[d].e.clone();
        f.h = init[d].h.clone();
        let out = fcpu::run_from(job, op, &mut f).map_err(|e| anyhow::anyhow!("{}: {e}", job.label))?;
        let g = gpu[d].as_ref().map_err(|e| anyhow::anyhow!("{}: emulated: {e}", job.label))?;
        let gf = g.fields.as_ref().ok_or_else(|| anyhow::anyhow!("{}: no fields came back", job.label))?;
        let mut fe = 0.0f64;
        let mut fh = 0.0f64;
        let mut first = None;
        for c in 0..3 {
            for p in 0..op.len {
                for (is_e, g, r) in [(true, gf.e[c][p], f.e[c][p]), (false, gf.h[c][p], f.h[c][p])] {
                    let dd = if g.is_nan() { f64::INFINITY } else { (g as f64 - r as f64).abs() };
                    if dd > 0.0 && first.is_none() {
                        let (i, j, k) = (p % op.dims[0], (p / op.dims[0]) % op.dims[1], p / op.stride[2]);
                        first = Some(format!("{}{} at padded ({i},{j},{k}): cuda {g} cpu {r}", if is_e { "E" } else { "H" }, ["x", "y", "z"][c]));
                    }
                    if is_e {
                        fe = fe.max(dd);
                    } else {
                        fh = fh.max(dd);
                    }
                }
            }
        }
        let me = f.e.iter().flatten().fold(0f32, |m, x| m.max(x.abs())) as f64;
        let mh = f.h.iter().flatten().fold(0f32, |m, x| m.max(x.abs())) as f64;
        let (re, rh) = (fe / me.max(1e-300), fh / mh.max(1e-300));
        // Port traces: max |difference| over max |value|, per port.
        let mut tr = 0.0f64;
        for (c, e) in out.traces.iter().zip(&g.out.traces) {
            for (x, y) in [(&c.v, &e.v), (&c.i, &e.i)] {
                let m = x.iter().fold(0f64, |m, v| m.max(v.abs()));
                let dd = if x.len() != y.len() { f64::INFINITY } else { x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) }) };
                tr = tr.max(if m > 0.0 { dd / m } else { dd });
            }
        }
        // The energy at the end: the end reason's decay is relative, so compare the fields' energies.
        let wc = fcpu::fdtd_energy(op, &f);
        let mut gfe = Fields::new(op);
        gfe.e = gf.e.clone();
        gfe.h = gf.h.clone();
        let wg = fcpu::fdtd_energy(op, &gfe);
        let db = |e: crate::job::EndReason| match e {
            crate::job::EndReason::EnergyDecay { db } | crate::job::EndReason::MaxSteps { db } => db,
        };
        // The decay from the energy kernel's sums against the CPU's (dB, absolute).
        let rw = ((wg - wc).abs() / wc.abs().max(1e-300)).max((db(g.out.ended) - db(out.ended)).abs() * 1e-3);
        let dft = super::monitor_check::diff(&out.monitors, &g.out.monitors);
        let steps_ok = g.out.steps == out.steps;
        let w = if steps_ok { re.max(rh).max(tr).max(rw).max(dft) } else { f64::INFINITY };
        worst = worst.max(if w.is_nan() { f64::INFINITY } else { w });
        println!(
            "  {:<34} E {re:.1e} H {rh:.1e} traces {tr:.1e} energy {rw:.1e} DFT {dft:.1e} steps {}/{} {}{}",
            job.label,
            g.out.steps,
            out.steps,
            if w <= a.tol { "ok" } else { "FAIL" },
            first.map(|s| format!("  first difference: {s}")).unwrap_or_default()
        );
    }
    println!("kernel-emu {}: worst {worst:.2e}", if worst <= a.tol { "PASS" } else { "FAIL" });
    Ok(if worst <= a.tol { 0 } else { 1 })
}
