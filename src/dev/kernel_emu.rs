//! `emvolve-lab kernel-emu`: checks `kernels/fdtd.cu`
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
use crate::engine::fdtd::cpu as fcpu;
use crate::engine::fdtd::fields::Fields;
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
    /// Keep no final fields (compare the traces, steps and end decays only): the
    /// on-chip path then spans several energy checks a launch. The jobs get a
    /// pulse that ends within 5 steps and end at the first check whose energy is
    /// below the peak, so that some end inside a launch.
    #[arg(long)]
    pub no_fields: bool,
    /// Instead of the check's jobs: a design file's midpoint, every port driven
    /// (the GA's own jobs: the shipped filter's 2.5D step loop), from zero fields.
    #[arg(long)]
    pub design: Option<PathBuf>,
    /// Tile origin of the fused kernel: auto (the planner's) or X,Y (batch::Origin).
    #[arg(long, default_value = "auto")]
    pub origin: String,
    /// The on-chip kernel's general step loop even for 2.5D designs (CudaOptions::onchip_general).
    #[arg(long)]
    pub onchip_general: bool,
    /// The two-step pass (kernels/fdtd_slim.cuh): the jobs go without field DFT monitors, so that
    /// the guides take it, and at least one design must. Without it every
    /// design steps one step a pass.
    #[arg(long)]
    pub two_step: bool,
}

pub fn run(a: KernelEmuArgs) -> anyhow::Result<i32> {
    let steps = a.steps;
    let mut jobs = if let Some(path) = &a.design {
        let d = crate::design::Design::load(path)?;
        let drives: Vec<usize> = (0..d.port_names().len()).collect();
        d.jobs(&d.midpoint_values(), &drives, None)?
    } else if a.zero {
        zero_jobs(true)
    } else {
        random_jobs(true, steps)
    };
    let zero = a.zero || a.design.is_some();
    // Fixed step count, the energy checked every 4 steps (the energy kernel's
    // values show in the decay the runs end with); jobs meant to blow up are left out.
    jobs.retain(|j| !j.materials.iter().any(|m| m.eps_r < 1.0));
    // Every job carries the field DFT monitors of the device check (kernel fdtd_dft),
    // which run on the streaming path only: the on-chip runs go without.
    let path = PathChoice::parse(&a.path).map_err(|e| anyhow::anyhow!(e))?;
    for j in &mut jobs {
        j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 4, max_time: None };
        if path == PathChoice::Streaming && !a.two_step {
            super::monitor_check::attach(j);
        }
    }
    let mut ops: Vec<Operator> = jobs.iter().map(|j| Operator::new(j).map_err(|e: SimFailure| anyhow::anyhow!("{}: {e}", j.label))).collect::<Result<_, _>>()?;
    if a.no_fields {
        for (j, op) in jobs.iter_mut().zip(&ops) {
            j.pulse.tau = 0.5 * op.dt;
            j.pulse.t0 = 2.0 * op.dt;
            j.stop.decay_db = -1e-4;
        }
        ops = jobs.iter().map(|j| Operator::new(j).map_err(|e: SimFailure| anyhow::anyhow!("{}: {e}", j.label))).collect::<Result<_, _>>()?;
    }
    let init: Vec<Fields> = ops.iter().enumerate().map(|(k, op)| if zero { Fields::new(op) } else { random_fields(op, 7 + k as u64) }).collect();
    let scheme = if a.split { Scheme::Split } else { Scheme::Fused };
    anyhow::ensure!(path == PathChoice::Streaming || a.onchip_lib.is_some(), "--path {}: needs --onchip-lib", a.path);
    let origin = crate::engine::cuda::batch::Origin::parse(&a.origin).map_err(|e| anyhow::anyhow!("--origin: {e}"))?;
    let opts = CudaOptions { scheme, zchunk: Some(a.zchunk), poison: true, trace_chunk: a.trace_chunk, graphs: false, path, verbose: true, origin, slim: a.two_step, slim_min_plane: 0, onchip_general: a.onchip_general, ..Default::default() };
    let mut libs = vec![a.lib.as_path()];
    libs.extend(a.onchip_lib.as_deref());
    let be = CudaBackend::emulated(&libs, opts)?;
    let t = std::time::Instant::now();
    let gpu = be.run_jobs(&jobs, Some(&init), !a.no_fields)?;
    let emu_s = t.elapsed().as_secs_f64();
    let tile = be.options().tile;
    let st = be.last_stats();
    let mut worst = 0.0f64;
    println!(
        "kernel-emu: {} scheme, tile {tile}, zchunk {}, path {} ({} designs on-chip, {} streaming, {} of them two steps a pass; {:.0} % of the streaming blocks lean), {steps} steps, {} designs (emulated in {emu_s:.1} s)",
        scheme.name(),
        a.zchunk,
        path.name(),
        st.onchip_designs,
        st.streaming_designs,
        st.slim_designs,
        100.0 * st.lean_block_steps / st.block_steps.max(1.0),
        jobs.len()
    );
    // The lean kernel (kernels/fdtd_lean.cuh) must have run where the fused scheme streams.
    if scheme == Scheme::Fused && path == PathChoice::Streaming && st.lean_block_steps == 0.0 {
        println!("kernel-emu FAIL: no block ran the lean kernel");
        return Ok(1);
    }
    if a.two_step && scheme == Scheme::Fused && st.slim_designs == 0 {
        println!("kernel-emu FAIL: no design ran two steps a pass");
        return Ok(1);
    }
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
        let db = |e: crate::job::EndReason| match e {
            crate::job::EndReason::EnergyDecay { db } | crate::job::EndReason::MaxSteps { db } => db,
        };
        if a.no_fields {
            let tr = trace_diff(&out.traces, &g.out.traces);
            let rw = (db(g.out.ended) - db(out.ended)).abs() * 1e-3;
            let steps_ok = g.out.steps == out.steps && std::mem::discriminant(&g.out.ended) == std::mem::discriminant(&out.ended);
            let w = if steps_ok { tr.max(rw) } else { f64::INFINITY };
            worst = worst.max(if w.is_nan() { f64::INFINITY } else { w });
            println!(
                "  {:<34} traces {tr:.1e} end {:?} / {:?} steps {}/{} {}",
                job.label,
                g.out.ended,
                out.ended,
                g.out.steps,
                out.steps,
                if w <= a.tol { "ok" } else { "FAIL" }
            );
            continue;
        }
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
        let tr = trace_diff(&out.traces, &g.out.traces);
        // The energy at the end: the end reason's decay is relative, so compare the fields' energies.
        let wc = fcpu::fdtd_energy(op, &f);
        let mut gfe = Fields::new(op);
        gfe.e = gf.e.clone();
        gfe.h = gf.h.clone();
        let wg = fcpu::fdtd_energy(op, &gfe);
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

/// Port traces: max |difference| over max |value|, per port (infinite when the lengths differ).
fn trace_diff(cpu: &[crate::job::PortTrace], gpu: &[crate::job::PortTrace]) -> f64 {
    let mut tr = 0.0f64;
    for (c, e) in cpu.iter().zip(gpu) {
        for (x, y) in [(&c.v, &e.v), (&c.i, &e.i)] {
            let m = x.iter().fold(0f64, |m, v| m.max(v.abs()));
            let dd = if x.len() != y.len() { f64::INFINITY } else { x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) }) };
            tr = tr.max(if m > 0.0 { dd / m } else { dd });
        }
    }
    tr
}
