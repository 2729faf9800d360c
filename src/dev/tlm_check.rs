//! TLM on CUDA, checked: the jobs `emvolve-lab device-check` compares between
//! the CPU TLM engines and the CUDA TLM kernels, and that `emvolve-lab tlm-emu`
//! compares with a CPU emulation of the same kernel source. (The TLM rows of
//! `emvolve bench --engine tlm` are in `bench/tlm.rs`.)

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::compare::{self, end_name, fdtd_reference, tlm_reference, FDTD_RULES, TLM_RULES};
use crate::design::DesignError;
use crate::engine::cuda::tlm::{self as ctlm, TlmConfig};
use crate::engine::cuda::{CudaBackend, CudaOptions, JobRun, PathChoice};
use crate::engine::tlm::pack::TlmPack;
use crate::job::*;

/// The shipped iris filter at its parameter midpoints, both ports driven, on `engine`
/// (its jobs exercise the guide ends, 2D and 3D).
pub fn iris_filter_jobs(engine: EngineKind) -> Result<Vec<SimJob>, DesignError> {
    let d = crate::bench::workloads::shipped_iris_filter()?;
    d.jobs(&d.midpoint_values(), &[0, 1], Some(engine))
}

fn mat(name: &str, eps_r: f64, sigma: f64, mu_r: f64) -> Material {
    Material { name: name.into(), eps_r, sigma, mu_r, pec: false, poles: vec![] }
}

fn fill(job: &mut SimJob, lo: [usize; 3], hi: [usize; 3], m: u8) {
    for k in lo[2]..hi[2] {
        for j in lo[1]..hi[1] {
            for i in lo[0]..hi[0] {
                let p = job.mesh.idx(i, j, k);
                std::sync::Arc::make_mut(&mut job.cell_mat)[p] = m;
            }
        }
    }
}

fn lumped(name: &str, axis: Axis, start: [usize; 3], len: usize, r: f64) -> Port {
    Port { name: name.into(), kind: PortKind::Lumped { axis, start, len, r_ohm: r } }
}

fn guide_port(name: &str, plane: usize, inward: i8, a: f64) -> Port {
    Port {
        name: name.into(),
        kind: PortKind::Waveguide { normal: Axis::Z, plane, inward, e_axis: Axis::Y, width_axis: Axis::X, a, source_offset: 3, shift_m: 0.0 },
    }
}

/// A 3D cavity exercising every node feature: dielectric, magnetic and lossy
/// blocks (stubs), a PEC block and a sheet, absorbing faces with graded padding,
/// PMC and PEC faces, two lumped ports.
pub fn loaded_cavity(engine: EngineKind, small: bool) -> SimJob {
    let n = if small { [14, 10, 12] } else { [26, 20, 24] };
    let mesh = Mesh::uniform(n, [0.5e-3, 0.5e-3, 0.6e-3], [0.0; 3]);
    let mut j = SimJob {
        label: format!("3D cavity {}x{}x{}: stubs, loss, padding, PEC, sheet, 2 lumped", n[0], n[1], n[2]),
        engine,
        cell_mat: vec![0; mesh.cells()].into(),
        conformal: Default::default(),
        mesh,
        boundaries: [[Boundary::Absorbing; 2], [Boundary::Pec; 2], [Boundary::Pmc, Boundary::Pec]],
        pml: [[3, 4], [0, 0], [0, 0]],
        materials: vec![Material::vacuum(), Material::pec(), mat("lossy", 3.0, 0.05, 1.0), mat("magnetic", 2.2, 0.0, 1.5)],
        sheets: vec![Sheet { normal: Axis::Z, plane: n[2] / 2, lo: [5, 2], hi: [9, 6] }],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![lumped("a", Axis::Y, [6, 2, 3], 3, 50.0), lumped("b", Axis::Z, [n[0] - 6, n[1] - 4, 2], 2, 75.0)],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(5e9, 30e9),
        freqs: (0..11).map(|i| 5e9 + 2.5e9 * i as f64).collect(),
        stop: StopRule { decay_db: -1000.0, max_steps: if small { 120 } else { 500 }, check_every: 40, max_time: None },
        courant: 0.99,
    };
    fill(&mut j, [3, 1, 1], [7, 5, 4], 2);
    fill(&mut j, [8, 5, 6], [12, 9, 9], 3);
    fill(&mut j, [n[0] - 9, 1, n[2] - 4], [n[0] - 7, 4, n[2] - 2], 1);
    j
}

/// A 3D WR-28 guide section with cells stretched along the guide (stubs in
/// air), two TE10 ports at modal ends and a lumped probe inside (both kinds of
/// port: face samples averaged onto whole steps).
pub fn stretched_guide_probe(small: bool) -> SimJob {
    let a = 7.112e-3;
    let (nx, ny, nz) = if small { (12, 6, 40) } else { (24, 12, 90) };
    let mesh = Mesh::uniform([nx, ny, nz], [a / nx as f64, 0.5 * a / ny as f64, 1.04 * a / nx as f64], [0.0; 3]);
    SimJob {
        label: format!("3D WR-28 {nx}x{ny}x{nz} stretched, 2 TE10 + lumped probe"),
        engine: EngineKind::Tlm,
        cell_mat: vec![0; mesh.cells()].into(),
        conformal: Default::default(),
        mesh,
        boundaries: [[Boundary::Pec; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]],
        pml: [[0; 2]; 3],
        materials: vec![Material::vacuum(), Material::pec()],
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![guide_port("p1", 6, 1, a), guide_port("p2", nz - 6, -1, a), lumped("probe", Axis::Y, [nx / 3, 0, nz / 2], ny, 1e4)],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(28e9, 40e9),
        freqs: (0..9).map(|i| 30e9 + 1e9 * i as f64).collect(),
        stop: StopRule { decay_db: -40.0, max_steps: if small { 150 } else { 4000 }, check_every: 32, max_time: None },
        courant: 0.99,
    }
}

/// A 2D shunt-node job with non-square cells (stubs), a dielectric and a lossy
/// block, a PEC post, a sheet, graded padding and two lumped ports.
pub fn loaded_2d(small: bool) -> SimJob {
    let (nx, nz) = if small { (20, 26) } else { (40, 60) };
    let mesh = Mesh::uniform([nx, 1, nz], [0.5e-3, 2e-3, 0.6e-3], [0.0; 3]);
    let mut j = SimJob {
        label: format!("2D {nx}x{nz}: stubs, loss, padding, post, sheet, 2 lumped"),
        engine: EngineKind::Tlm2d,
        cell_mat: vec![0; mesh.cells()].into(),
        conformal: Default::default(),
        mesh,
        boundaries: [[Boundary::Absorbing; 2], [Boundary::Pec; 2], [Boundary::Pec, Boundary::Pmc]],
        pml: [[4, 4], [0, 0], [0, 0]],
        materials: vec![Material::vacuum(), Material::pec(), mat("lossy", 2.5, 0.08, 1.0), mat("magnetic", 3.0, 0.0, 1.3)],
        sheets: vec![Sheet { normal: Axis::Z, plane: nz / 2, lo: [6, 0], hi: [11, 1] }],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![lumped("a", Axis::Y, [7, 0, 4], 1, 50.0), lumped("b", Axis::Y, [nx - 8, 0, nz - 5], 1, 100.0)],
        drive: 1,
        monitors: vec![],
        pulse: Pulse::covering(3e9, 25e9),
        freqs: (0..12).map(|i| 3e9 + 2e9 * i as f64).collect(),
        stop: StopRule { decay_db: -1000.0, max_steps: if small { 200 } else { 1500 }, check_every: 50, max_time: None },
        courant: 0.99,
    };
    fill(&mut j, [5, 0, 8], [12, 1, 12], 2);
    fill(&mut j, [10, 0, 14], [16, 1, 20], 3);
    fill(&mut j, [13, 0, 5], [15, 1, 7], 1);
    j
}

/// The TLM check list: the shipped iris filter in 2D (both drives, run to its
/// own -50 dB decay), 3D iris sections ending by decay at different steps, the
/// filter's first drive in 3D (a one-cell slab), the loaded 3D cavity, the
/// stretched guide with a probe, the loaded 2D job and the same as a 3D slab, and
/// two jobs that must fail (NaN source) at the same step with the same message.
/// `small` shortens everything (CPU emulation).
pub fn check_jobs(small: bool) -> Result<Vec<SimJob>, DesignError> {
    let mut v = iris_filter_jobs(EngineKind::Tlm2d)?;
    for (k, j) in v.iter_mut().enumerate() {
        j.label = format!("2D TLM {}", j.label);
        if small {
            // Both end by decay, at different steps (the first one much earlier).
            j.stop.max_steps = 6000;
            j.stop.decay_db = if k == 0 { -12.0 } else { -25.0 };
        }
    }
    if small {
        v.extend(crate::bench::tlm::iris_sections(2, 6_000, 140, -40.0));
    } else {
        v.extend(crate::bench::tlm::iris_sections(3, 40_000, 20_000, -40.0));
    }
    // The filter's collapsed invariant axis on the SCN: a one-cell slab between PEC
    // faces, run as a cubic slab with its port signals scaled back (scn::meshed).
    let Some(mut f3) = iris_filter_jobs(EngineKind::Tlm)?.into_iter().next() else {
        return Err(DesignError::invalid("designs/wr28_iris_filter.ron", "ports", "the shipped filter gave no job"));
    };
    f3.label = format!("3D TLM slab {}", f3.label);
    if small {
        f3.stop.max_steps = 3000;
        f3.stop.decay_db = -20.0;
    }
    v.push(f3);
    v.push(loaded_cavity(EngineKind::Tlm, small));
    v.push(stretched_guide_probe(small));
    v.push(loaded_2d(small));
    // The same job on the SCN: a one-cell slab with lumped ports (R and V scaled).
    let mut s3 = loaded_2d(small);
    s3.engine = EngineKind::Tlm;
    s3.label = format!("3D slab {}", s3.label.trim_start_matches("2D "));
    v.push(s3);
    let mut bad = loaded_cavity(EngineKind::Tlm, true);
    bad.label = "3D NaN source (must fail)".into();
    bad.pulse.tau = f64::NAN;
    v.push(bad);
    let mut bad = loaded_2d(true);
    bad.label = "2D NaN source (must fail)".into();
    bad.pulse.tau = f64::NAN;
    v.push(bad);
    Ok(v)
}

/// One line per job; returns (worst difference, any failure).
pub fn report(tag: &str, jobs: &[SimJob], cpu: &[Result<SimOutput, SimFailure>], dev: &[Result<SimOutput, SimFailure>], tol: f64) -> (f64, bool) {
    let (mut worst, mut bad) = (0.0f64, false);
    for (k, j) in jobs.iter().enumerate() {
        let d = compare::diff(j, cpu[k].as_ref(), dev[k].as_ref(), TLM_RULES);
        worst = worst.max(d.worst());
        let ok = d.ok(tol);
        bad |= !ok;
        let steps = match (&cpu[k], &dev[k]) {
            (Ok(c), Ok(g)) => format!("{}/{} {}", c.steps, g.steps, end_name(&g.ended)),
            (Err(e), Err(_)) => format!("both fail: {e}"),
            _ => "differ".into(),
        };
        println!(
            "{tag} {:<62} {:>7} nodes  steps {:<24} V {:>7.1e} I {:>7.1e} S {:>7} {}{}",
            j.label.chars().take(62).collect::<String>(),
            j.mesh.cells(),
            steps,
            d.v,
            d.i,
            d.s.map_or("-".into(), |s| format!("{s:.1e}")),
            if ok { "ok" } else { "FAIL" },
            d.mismatch.map(|m| format!(" ({m})")).unwrap_or_default()
        );
    }
    (worst, bad)
}

/// Block sizes of the 2D on-chip kernel device-check compiles and compares.
pub const ONCHIP_THREADS: [usize; 3] = [256, 512, 1024];

/// device-check's TLM part: the check list in one mixed batch (plus one FDTD
/// job, compared with the CPU FDTD engine), on the streaming kernels for each
/// launch shape, then with the 2D designs on-chip for each block size (one
/// energy check a launch, as the list's jobs check at different intervals),
/// then its 2D jobs checking at one interval (several checks a launch, jobs
/// ending at different checks inside one); with `generation` > 0, that many
/// random candidates of the shipped iris filter in 2D through the user's path,
/// on-chip and streaming, against the CPU (S-parameters and steps).
pub fn device_check(be: &mut CudaBackend, configs: &[TlmConfig], tol: f64, generation: usize) -> anyhow::Result<(f64, bool)> {
    for &c in configs {
        match be.tlm_compile_report(c) {
            Ok(r) => print!("{r}"),
            Err(e) => {
                println!("TLM kernel compilation FAILED for {c}:\n{e}");
                return Ok((f64::INFINITY, true));
            }
        }
    }
    let tjobs = check_jobs(false)?;
    let t = Instant::now();
    let cpu = tlm_reference(&tjobs);
    println!("TLM CPU reference: {} jobs, {:.1} s", tjobs.len(), t.elapsed().as_secs_f64());
    let fjob = crate::bench::box_job(16, 60);
    let fcpu = fdtd_reference(std::slice::from_ref(&fjob), None);
    let mut batch = tjobs.clone();
    batch.push(fjob.clone());
    let (mut worst, mut bad) = (0.0f64, false);
    let base = be.options().clone();
    let mut variants: Vec<(String, CudaOptions)> = configs.iter().map(|c| (format!("tlm {c}"), CudaOptions { path: PathChoice::Streaming, ..base.clone() })).collect();
    for t in ONCHIP_THREADS {
        variants.push((format!("tlm onchip {t}"), CudaOptions { path: PathChoice::Auto, onchip_threads: t, ..base.clone() }));
    }
    for (k, (tag, opts)) in variants.into_iter().enumerate() {
        if let Some(&c) = configs.get(k) {
            be.set_tlm_config(c)?;
        }
        be.set_options(opts)?;
        let t = Instant::now();
        let res = be.run_jobs(&batch, None, false)?;
        let st = be.last_stats();
        println!(
            "[{tag}] mixed batch of {} TLM + 1 FDTD jobs: {:.2} s wall, {:.2} s kernels ({} TLM designs on-chip, {:.3} s)",
            tjobs.len(),
            t.elapsed().as_secs_f64(),
            st.kernel_s,
            st.onchip_designs,
            st.onchip_kernel_s
        );
        let mut res: Vec<Result<JobRun, SimFailure>> = res;
        let fres = res.pop().ok_or_else(|| anyhow::anyhow!("the backend returned no result for the FDTD job of the batch"))?;
        let dev: Vec<Result<SimOutput, SimFailure>> = res.into_iter().map(|r| r.map(|j| j.out)).collect();
        let (w, b) = report(&format!("[{tag}]"), &tjobs, &cpu, &dev, tol);
        worst = worst.max(w);
        bad |= b;
        let d = compare::diff(&fjob, fcpu[0].0.as_ref(), fres.as_ref().map(|g| &g.out), FDTD_RULES);
        let ok = d.ok(tol);
        bad |= !ok;
        println!("[{tag}] FDTD job in the same batch: {} V {:.1e} I {:.1e} {}", fjob.label, d.v, d.i, if ok { "ok" } else { "FAIL" });
    }
    // The 2D jobs checking every 64 steps: launches of 8 checks.
    let mut j2: Vec<SimJob> = tjobs.iter().filter(|j| j.engine == EngineKind::Tlm2d).cloned().collect();
    j2.iter_mut().for_each(|j| j.stop.check_every = 64);
    let cpu2 = tlm_reference(&j2);
    be.set_options(CudaOptions { path: PathChoice::Onchip, onchip_threads: 512, onchip_checks: 8, ..base.clone() })?;
    let t = Instant::now();
    let dev: Vec<Result<SimOutput, SimFailure>> = be.run_jobs(&j2, None, false)?.into_iter().map(|r| r.map(|j| j.out)).collect();
    println!("[tlm onchip 512 x8 checks] {} 2D jobs checking every 64 steps: {:.2} s wall, {:.3} s kernels", j2.len(), t.elapsed().as_secs_f64(), be.last_stats().kernel_s);
    let (w, b) = report("[tlm onchip 512 x8 checks]", &j2, &cpu2, &dev, tol);
    worst = worst.max(w);
    bad |= b;
    if generation > 0 {
        // The TLM engines are uniform-mesh methods: the filter as it shipped on a/28.
        let f = std::path::Path::new("tests/fixtures/uniform/wr28_iris_filter.ron");
        for path in [PathChoice::Auto, PathChoice::Streaming] {
            be.set_options(CudaOptions { path, ..base.clone() })?;
            println!("[tlm generation, path {}]", path.name());
            bad |= super::device_designs::check_generation(f, generation, Some(EngineKind::Tlm2d), &*be, tol)?;
            let st = be.last_stats();
            println!("  path {}: {} designs on-chip, {} streaming, device {:.3} s", path.name(), st.onchip_designs, st.streaming_designs, st.kernel_s);
        }
    }
    be.set_options(base)?;
    println!(
        "device-check TLM {}: worst relative CPU/CUDA TLM difference {worst:.2e} (tolerance {tol:.0e}) over {} jobs, launch shapes {}, on-chip blocks {:?}",
        if bad { "FAIL" } else { "PASS" },
        tjobs.len(),
        configs.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","),
        ONCHIP_THREADS
    );
    Ok((worst, bad))
}

#[derive(Args, Debug)]
pub struct TlmEmuArgs {
    /// Emulator library built by scripts/tlm-emu.sh.
    #[arg(long)]
    pub lib: PathBuf,
    /// Largest accepted relative difference.
    #[arg(long, default_value_t = 1e-9)]
    pub tol: f64,
    /// Steps between trace copies (small values exercise the chunking).
    #[arg(long, default_value_t = 37)]
    pub trace_chunk: usize,
    /// Emulator library of the on-chip kernel (scripts/tlm-emu/onchip.cpp): the
    /// batch then runs through the backend's planner, the 2D designs that fit a
    /// block on-chip, the others (3D) on the streaming kernels.
    #[arg(long)]
    pub onchip_lib: Option<PathBuf>,
    /// With --onchip-lib: energy checks one on-chip launch may span (1: a launch ends at every check).
    #[arg(long, default_value_t = 3)]
    pub onchip_checks: usize,
    /// Only the 2D jobs of the check list (the on-chip path's).
    #[arg(long)]
    pub only_2d: bool,
    /// Every job checks its energy at this interval (the same for all: an
    /// on-chip launch then spans several checks, jobs ending at different ones inside it).
    #[arg(long)]
    pub check_every: Option<usize>,
}

/// `emvolve-lab tlm-emu`: the TLM check list (small) through the CUDA
/// backend's stepping loop on the CPU emulation of kernels/tlm.cu, against the
/// CPU engines.
pub fn emu(a: TlmEmuArgs) -> anyhow::Result<i32> {
    if let Some(oc) = &a.onchip_lib {
        return emu_onchip(&a, oc);
    }
    let mut dev = crate::engine::device::emu::EmuDevice::open(&[a.lib.as_path()]).map_err(|e| anyhow::anyhow!(e))?;
    let cfg = TlmConfig {
        threads: dev.define("tlm", "TLM_THREADS").unwrap_or(256) as u32,
        npt: dev.define("tlm", "TLM_NPT").unwrap_or(1) as u32,
        minb: 0,
        split: dev.define("tlm", "TLM_SPLIT").unwrap_or(0) != 0,
    };
    let port_threads = dev.define("tlm", "TLM_PORT_THREADS").unwrap_or(128) as u32;
    let jobs = check_jobs(true)?;
    let t = Instant::now();
    let cpu = tlm_reference(&jobs);
    println!("CPU reference: {:.1} s", t.elapsed().as_secs_f64());
    let mut dev_res: Vec<Option<Result<SimOutput, SimFailure>>> = (0..jobs.len()).map(|_| None).collect();
    let mut packs: Vec<(usize, TlmPack)> = vec![];
    for (i, j) in jobs.iter().enumerate() {
        match crate::engine::tlm::pack(j) {
            Ok(p) => packs.push((i, p)),
            Err(e) => dev_res[i] = Some(Err(e)),
        }
    }
    let t = Instant::now();
    for dim3 in [true, false] {
        let sel: Vec<&(usize, TlmPack)> = packs.iter().filter(|(_, p)| p.dim3 == dim3).collect();
        if sel.is_empty() {
            continue;
        }
        let js: Vec<&SimJob> = sel.iter().map(|(i, _)| &jobs[*i]).collect();
        let ps: Vec<&TlmPack> = sel.iter().map(|(_, p)| p).collect();
        let (res, _) = ctlm::drive(&mut dev, &js, &ps, cfg, port_threads, a.trace_chunk, None)?;
        crate::engine::device::Device::release(&mut dev)?;
        for ((i, _), r) in sel.iter().zip(res) {
            dev_res[*i] = Some(r);
        }
    }
    println!("emulated batch: {:.1} s, launches per kernel {:?}", t.elapsed().as_secs_f64(), dev.launches.concat());
    let dev_res: Vec<Result<SimOutput, SimFailure>> = dev_res
        .into_iter()
        .zip(&jobs)
        .map(|(r, j)| r.ok_or_else(|| anyhow::anyhow!("{}: the emulation returned no result", j.label)))
        .collect::<anyhow::Result<_>>()?;
    let (worst, bad) = report("[emu]", &jobs, &cpu, &dev_res, a.tol);
    println!("tlm-emu {}: worst relative CPU/emulated difference {worst:.2e} (tolerance {:.0e})", if bad { "FAIL" } else { "PASS" }, a.tol);
    Ok(if bad { 1 } else { 0 })
}

/// `emvolve-lab tlm-emu --onchip-lib`: the check list (small; `--only-2d`: its
/// 2D jobs) through the emulated backend's planner, the 2D designs on the
/// emulated on-chip kernel, against the CPU engines. Fails when no design ran on-chip.
fn emu_onchip(a: &TlmEmuArgs, oclib: &std::path::Path) -> anyhow::Result<i32> {
    let mut jobs = check_jobs(true)?;
    if a.only_2d {
        jobs.retain(|j| j.engine == EngineKind::Tlm2d);
    }
    if let Some(ce) = a.check_every {
        jobs.iter_mut().for_each(|j| j.stop.check_every = ce);
    }
    let opts = CudaOptions { path: PathChoice::Auto, trace_chunk: a.trace_chunk, onchip_checks: a.onchip_checks, verbose: true, ..Default::default() };
    let be = CudaBackend::emulated(&[a.lib.as_path(), oclib], opts)?;
    let t = Instant::now();
    let cpu = tlm_reference(&jobs);
    println!("CPU reference: {:.1} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let dev: Vec<Result<SimOutput, SimFailure>> = be.run_jobs(&jobs, None, false)?.into_iter().map(|r| r.map(|j| j.out)).collect();
    let st = be.last_stats();
    println!(
        "emulated batch: {:.1} s, {} designs on-chip ({} threads a block, {} checks a launch), {} streaming",
        t.elapsed().as_secs_f64(),
        st.onchip_designs,
        be.options().onchip_threads,
        a.onchip_checks,
        st.streaming_designs
    );
    let (worst, bad) = report("[emu onchip]", &jobs, &cpu, &dev, a.tol);
    let none = st.onchip_designs == 0;
    if none {
        println!("tlm-emu FAIL: no design ran on-chip");
    }
    println!("tlm-emu on-chip {}: worst relative CPU/emulated difference {worst:.2e} (tolerance {:.0e})", if bad || none { "FAIL" } else { "PASS" }, a.tol);
    Ok(if bad || none { 1 } else { 0 })
}
