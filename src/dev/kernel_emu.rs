//! `emvolve dev kernel-emu`: checks `kernels/fdtd.cu`
//! without a GPU. The batch is packed exactly as the CUDA backend packs it
//! ([`Plan`]), written to a file, stepped by `scripts/kernel-emu/emu.cpp`
//! (the kernels compiled as C++ with a shim that runs each block's threads
//! as OS threads with a barrier), and the result compared with the CPU
//! engine: every field position, the port traces and the energy.
//! `scripts/kernel-emu.sh` builds the emulator and runs this.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::device_check::{random_fields, random_jobs, zero_jobs};
use crate::engine::cuda::batch::{Plan, Tile};
use crate::engine::fdtd::cpu::{self as fcpu, Fields};
use crate::engine::fdtd::Operator;
use crate::job::{SimFailure, StopRule};

#[derive(Args, Debug)]
pub struct KernelEmuArgs {
    /// Emulator binary (built for the same tile by scripts/kernel-emu.sh).
    #[arg(long)]
    pub emu: PathBuf,
    /// Tile the emulator was built for (TXxTY).
    #[arg(long, default_value = "8x4")]
    pub tile: String,
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
    /// Largest accepted relative difference.
    #[arg(long, default_value_t = 1e-6)]
    pub tol: f64,
}

fn put<T: Copy>(w: &mut Vec<u8>, name: &str, v: &[T]) {
    w.extend_from_slice(&(name.len() as u32).to_le_bytes());
    w.extend_from_slice(name.as_bytes());
    let n = std::mem::size_of_val(v);
    w.extend_from_slice(&(n as u64).to_le_bytes());
    // SAFETY: T is plain data (numbers and #[repr(C)] structs of numbers).
    w.extend_from_slice(unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, n) });
}

/// The emulator's output: named byte records, each `u32 name length, name, u64 byte count, bytes`.
fn read_records(b: &[u8]) -> anyhow::Result<std::collections::HashMap<String, Vec<u8>>> {
    let mut m = std::collections::HashMap::new();
    let mut p = 0;
    while p < b.len() {
        let nl = u32::from_le_bytes(array::<4>(b, &mut p)?) as usize;
        let name = String::from_utf8_lossy(slice(b, &mut p, nl)?).to_string();
        let n = u64::from_le_bytes(array::<8>(b, &mut p)?) as usize;
        m.insert(name, slice(b, &mut p, n)?.to_vec());
    }
    Ok(m)
}

/// The next `n` bytes of `b` from `*p`, moving `*p` past them.
fn slice<'a>(b: &'a [u8], p: &mut usize, n: usize) -> anyhow::Result<&'a [u8]> {
    let s = b.get(*p..*p + n).ok_or_else(|| anyhow::anyhow!("emulator output cut short at byte {} of {}", *p, b.len()))?;
    *p += n;
    Ok(s)
}

fn array<const N: usize>(b: &[u8], p: &mut usize) -> anyhow::Result<[u8; N]> {
    let mut a = [0u8; N];
    a.copy_from_slice(slice(b, p, N)?);
    Ok(a)
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
}

pub fn run(a: KernelEmuArgs) -> anyhow::Result<i32> {
    let tile = Tile::parse(&a.tile).map_err(|e| anyhow::anyhow!(e))?;
    let steps = a.steps;
    let mut jobs = if a.zero { zero_jobs(true) } else { random_jobs(true, steps) };
    // Fixed step count, no early end; jobs meant to blow up are left out.
    jobs.retain(|j| !j.materials.iter().any(|m| m.eps_r < 1.0));
    for j in &mut jobs {
        j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 1 << 30 };
    }
    let ops: Vec<Operator> = jobs.iter().map(|j| Operator::new(j).map_err(|e: SimFailure| anyhow::anyhow!("{}: {e}", j.label))).collect::<Result<_, _>>()?;
    let refs: Vec<&Operator> = ops.iter().collect();
    let init: Vec<Fields> = ops.iter().enumerate().map(|(k, op)| if a.zero { Fields::new(op) } else { random_fields(op, 7 + k as u64) }).collect();
    let plan = Plan::new(&refs, tile, a.zchunk).map_err(|e| anyhow::anyhow!(e))?;
    let nd = ops.len();
    let blocks = plan.block_table(&vec![true; nd]);
    let any_pmc = ops.iter().any(|o| o.pmc.iter().flatten().any(|&b| b));
    let pulses: Vec<_> = jobs.iter().map(|j| j.pulse).collect();
    let dts: Vec<f64> = ops.iter().map(|o| o.dt).collect();
    let gval = plan.source_values(&pulses, &dts, 0, steps, steps);

    let mut w = vec![];
    let params: [i64; 11] = [
        plan.field_len as i64,
        plan.psi_len as i64,
        nd as i64,
        plan.ports.len() as i64,
        plan.src_design.len() as i64,
        steps as i64,
        (!a.split) as i64,
        tile.tx as i64,
        tile.ty as i64,
        (blocks.len() / 2) as i64,
        any_pmc as i64,
    ];
    put(&mut w, "params", &params);
    put(&mut w, "designs", &plan.designs);
    put(&mut w, "blocks", &blocks);
    for c in 0..3 {
        put(&mut w, &format!("mat{c}"), &plan.mat[c]);
        let mut e = vec![0f32; plan.field_len];
        let mut h = vec![0f32; plan.field_len];
        for (d, f) in init.iter().enumerate() {
            let o = plan.designs[d].off as usize;
            e[o..o + f.e[c].len()].copy_from_slice(&f.e[c]);
            h[o..o + f.h[c].len()].copy_from_slice(&f.h[c]);
        }
        put(&mut w, &format!("e{c}"), &e);
        put(&mut w, &format!("h{c}"), &h);
    }
    for (n, v) in [("ca", &plan.ca), ("cb", &plan.cb), ("eps", &plan.eps), ("pe_b", &plan.pe_b), ("pe_c", &plan.pe_c), ("pe_k", &plan.pe_k), ("ph_b", &plan.ph_b), ("ph_c", &plan.ph_c), ("ph_k", &plan.ph_k), ("src_coef", &plan.src_coef), ("gval", &gval), ("inv_e", &plan.inv_e), ("inv_h", &plan.inv_h), ("rel_e", &plan.rel_e), ("rel_h", &plan.rel_h)] {
        put(&mut w, n, v);
    }
    for (n, v) in [("slab_e", &plan.slab_e), ("slab_h", &plan.slab_h), ("t_idx0", &plan.t_idx0), ("t_idx1", &plan.t_idx1), ("t_idx2", &plan.t_idx2), ("src_design", &plan.src_design), ("src_comp", &plan.src_comp), ("src_idx", &plan.src_idx)] {
        put(&mut w, n, v);
    }
    put(&mut w, "t_w", &plan.t_w);
    put(&mut w, "ports", &plan.ports);
    let dir = std::env::temp_dir().join(format!("emvolve-emu-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (fin, fout) = (dir.join("in.bin"), dir.join("out.bin"));
    std::fs::File::create(&fin)?.write_all(&w)?;
    let t = std::time::Instant::now();
    let st = std::process::Command::new(&a.emu).arg(&fin).arg(&fout).status()?;
    anyhow::ensure!(st.success(), "emulator failed: {st}");
    let emu_s = t.elapsed().as_secs_f64();
    let rec = read_records(&std::fs::read(&fout)?)?;
    std::fs::remove_dir_all(&dir).ok();
    let record = |name: &str| rec.get(name).ok_or_else(|| anyhow::anyhow!("the emulator wrote no `{name}` record"));

    let tv = f64s(record("tv")?);
    let ti = f64s(record("ti")?);
    let energy = f64s(record("energy")?);
    let ge: Vec<Vec<f32>> = (0..3).map(|c| record(&format!("e{c}")).map(|r| f32s(r))).collect::<anyhow::Result<_>>()?;
    let gh: Vec<Vec<f32>> = (0..3).map(|c| record(&format!("h{c}")).map(|r| f32s(r))).collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(
        tv.len() >= plan.ports.len() * steps && ti.len() == tv.len() && energy.len() >= 2 * nd && ge.iter().chain(&gh).all(|f| f.len() >= plan.field_len),
        "the emulator's records are shorter than the batch it was given"
    );
    let mut worst = 0.0f64;
    println!("kernel-emu: {} scheme, tile {tile}, zchunk {}, {steps} steps, {nd} designs (emulated in {emu_s:.1} s)", if a.split { "split" } else { "fused" }, a.zchunk);
    for (d, job) in jobs.iter().enumerate() {
        let op = &ops[d];
        let mut f = Fields::new(op);
        f.e = init[d].e.clone();
        f.h = init[d].h.clone();
        let out = fcpu::run_from(job, op, &mut f).map_err(|e| anyhow::anyhow!("{}: {e}", job.label))?;
        let o = plan.designs[d].off as usize;
        let mut fe = 0.0f64;
        let mut fh = 0.0f64;
        let mut first = None;
        for c in 0..3 {
            for p in 0..op.len {
                for (is_e, g, r) in [(true, ge[c][o + p], f.e[c][p]), (false, gh[c][o + p], f.h[c][p])] {
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
        for (pi, slot) in plan.port_slot[d].iter().enumerate() {
            if let Some(gp) = slot {
                for (c, g) in [(&out.traces[pi].v, &tv), (&out.traces[pi].i, &ti)] {
                    let m = c.iter().fold(0f64, |m, x| m.max(x.abs()));
                    let dd = (0..steps).map(|s| (g[gp * steps + s] - c[s]).abs()).fold(0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) });
                    tr = tr.max(if m > 0.0 { dd / m } else { dd });
                }
            }
        }
        let wc = fcpu::fdtd_energy(op, &f);
        let wg = energy[2 * d] * crate::consts::EPS0 + energy[2 * d + 1] * crate::consts::MU0;
        let rw = (wg - wc).abs() / wc.abs().max(1e-300);
        let w = re.max(rh).max(tr).max(rw);
        worst = worst.max(if w.is_nan() { f64::INFINITY } else { w });
        println!(
            "  {:<34} E {re:.1e} H {rh:.1e} traces {tr:.1e} energy {rw:.1e} {}{}",
            job.label,
            if w <= a.tol { "ok" } else { "FAIL" },
            first.map(|s| format!("  first difference: {s}")).unwrap_or_default()
        );
    }
    println!("kernel-emu {}: worst {worst:.2e}", if worst <= a.tol { "PASS" } else { "FAIL" });
    Ok(if worst <= a.tol { 0 } else { 1 })
}
