//! A design file timed as the optimiser runs it: once at its midpoint (its
//! own end criterion), and one GA generation of random feasible candidates
//! simulated as one batch; on its own engine or another (`--design-engine`).
//! The ports driven are those the GA drives (the goals' columns, see
//! `Design::drives_needed`), or every port (`--all-ports`, as `best/` needs).

use std::time::Instant;

use super::TuningArgs;
use crate::engine::cuda::batch::{Origin, Tile};
use crate::engine::cuda::{CudaBackend, CudaOptions, PathChoice};
use crate::engine::{Backend, RunCtx, cpu::CpuBackend};

/// The ports a benchmark drives: the GA's, or every port.
fn drives(design: &crate::design::Design, all_ports: bool) -> Vec<usize> {
    if all_ports {
        (0..design.port_names().len()).collect()
    } else {
        design.drives_needed()
    }
}

/// One design as the optimiser runs it: midpoint values, the GA's drives (or
/// every port), the design's end criterion.
pub fn midpoint(path: &std::path::Path, engine: Option<crate::job::EngineKind>, use_cuda: bool, gpus: &[usize], all_ports: bool) -> anyhow::Result<()> {
    let design = crate::design::Design::load(path)?;
    let backend: Box<dyn crate::engine::Backend> = if use_cuda { Box::new(CudaBackend::new(gpus)?) } else { Box::new(CpuBackend) };
    let drives = drives(&design, all_ports);
    let values = design.midpoint_values();
    // Once to warm up (kernel compilation, allocation), once timed.
    // (A failed design shows in the timed run below.)
    let _ = crate::evaluate::evaluate_one(&design, &values, &drives, engine, backend.as_ref())?;
    let t = Instant::now();
    let r = crate::evaluate::evaluate_one(&design, &values, &drives, engine, backend.as_ref())?;
    let secs = t.elapsed().as_secs_f64();
    let s = r.map_err(|e| anyhow::anyhow!("{}: {e}", design.name()))?;
    println!(
        "design {} on {}: {:.3} s, {:.1} Mcells/s ({})",
        design.name(),
        backend.name(),
        secs,
        s.cell_updates() / secs / 1e6,
        s.run_summary()
    );
    Ok(())
}

/// `n` random feasible candidates of a design (seed 1), as a GA's first generation draws them.
pub fn random_candidates(design: &crate::design::Design, n: usize) -> Vec<std::collections::BTreeMap<String, f64>> {
    use rand::SeedableRng;
    let genes = design.genes();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
    let mut out = Vec::with_capacity(n);
    for _ in 0..100 * n {
        if out.len() == n {
            break;
        }
        let x = crate::ga::genome::random_genome(&genes, &mut rng);
        let values: std::collections::BTreeMap<String, f64> = design.parameter_names().into_iter().zip(x).collect();
        if design.constraint_violation(&values) == 0.0 {
            out.push(values);
        }
    }
    out
}

/// The host's share of a generation before any stepping: the candidates'
/// jobs (geometry, mesh, voxels) and the FDTD operators (coefficients, CPML,
/// ports), one after the other on one thread, then on every core as a batch
/// builds them (`evaluate::simulate_batch`, the backends' operator build).
fn host_build(design: &crate::design::Design, cands: &[std::collections::BTreeMap<String, f64>], drives: &[usize], engine: Option<crate::job::EngineKind>) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let build = |c: &std::collections::BTreeMap<String, f64>| -> anyhow::Result<(f64, f64)> {
        let t = Instant::now();
        let jobs = design.jobs(c, drives, engine)?;
        let t_jobs = t.elapsed().as_secs_f64();
        // One operator per candidate: its drives share it.
        if let Some(j) = jobs.first().filter(|j| j.engine == crate::job::EngineKind::Fdtd) {
            crate::engine::fdtd::Operator::new(j).map_err(|e| anyhow::anyhow!("{}: {e}", design.name()))?;
        }
        Ok((t_jobs, t.elapsed().as_secs_f64() - t_jobs))
    };
    let t = Instant::now();
    let (mut jobs_s, mut ops_s) = (0.0, 0.0);
    for c in cands {
        let (a, b) = build(c)?;
        jobs_s += a;
        ops_s += b;
    }
    let one = t.elapsed().as_secs_f64();
    let t = Instant::now();
    cands.par_iter().map(build).collect::<anyhow::Result<Vec<_>>>()?;
    let all = t.elapsed().as_secs_f64();
    println!(
        "generation of {} {} candidates ({} drives each): host build {one:.2} s on one thread (jobs: geometry, mesh, voxels {jobs_s:.2} s; operators {ops_s:.2} s), {all:.2} s on {} threads",
        cands.len(),
        design.name(),
        drives.len(),
        rayon::current_num_threads()
    );
    Ok(())
}

/// One GA generation of a design as one batch: wall time, designs/s and
/// cell updates/s, per tile variant on CUDA (where the kernel time is also known).
#[allow(clippy::too_many_arguments)]
pub fn generation(path: &std::path::Path, engine: Option<crate::job::EngineKind>, n: usize, use_cuda: bool, gpus: &[usize], all_ports: bool, tune: &TuningArgs) -> anyhow::Result<()> {
    let (graphs, lean, slim, slim_min_plane, verbose, onchip_general) = (tune.graphs, tune.lean, tune.slim, tune.slim_min_plane, tune.verbose, tune.onchip_general);
    let (tiles, paths, onchip_threads, onchip_checks) = (&tune.tiles[..], &tune.paths[..], &tune.onchip_threads[..], &tune.onchip_checks[..]);
    let origins = super::parse_origins(&tune.origins)?;
    let design = crate::design::Design::load(path)?;
    let drives = drives(&design, all_ports);
    let cands = random_candidates(&design, n);
    anyhow::ensure!(!cands.is_empty(), "{}: no feasible random candidate in {} draws", design.name(), 100 * n);
    host_build(&design, &cands, &drives, engine)?;
    let time = |backend: &dyn Backend| -> anyhow::Result<(f64, f64, usize, usize)> {
        let t = Instant::now();
        let rs = crate::evaluate::evaluate_designs(&design, &cands, &drives, engine, backend, &RunCtx::NONE)?;
        let secs = t.elapsed().as_secs_f64();
        let mut upd = 0.0;
        let (mut lo, mut hi) = (usize::MAX, 0);
        for r in rs.iter().flatten() {
            upd += r.cell_updates();
            for o in &r.outputs {
                lo = lo.min(o.steps);
                hi = hi.max(o.steps);
            }
        }
        Ok((secs, upd, lo, hi))
    };
    let line = |what: &str, secs: f64, upd: f64, lo: usize, hi: usize, extra: String| {
        println!(
            "generation of {} {} candidates on {what}: {secs:.2} s wall, {:.1} designs/s, {:.2} Gcells/s whole-run, steps {lo}..{hi}{extra}",
            cands.len(),
            design.name(),
            cands.len() as f64 / secs,
            upd / secs / 1e9
        )
    };
    if !use_cuda {
        let (secs, upd, lo, hi) = time(&CpuBackend)?;
        line("cpu", secs, upd, lo, hi, String::new());
        if verbose {
            // Each job's grid and step count: what an on-chip generation's length
            // follows (the longest-ringing jobs and the widest set each launch's time).
            let rs = crate::evaluate::evaluate_designs(&design, &cands, &drives, engine, &CpuBackend, &RunCtx::NONE)?;
            println!("job: candidate drive n_x n_y n_z cells steps");
            for (ci, r) in rs.iter().enumerate() {
                if let Ok(r) = r {
                    for (di, (j, o)) in r.jobs.iter().zip(&r.outputs).enumerate() {
                        let n = crate::engine::fdtd::Operator::new(j).map(|op| op.n).unwrap_or([0; 3]);
                        println!("job: {ci} {di} {} {} {} {} {}", n[0], n[1], n[2], o.cells, o.steps);
                    }
                }
            }
        }
        return Ok(());
    }
    let mut be = CudaBackend::new(gpus)?;
    let paths: Vec<PathChoice> = paths.iter().map(|p| PathChoice::parse(p)).collect::<Result<_, _>>().map_err(|e| anyhow::anyhow!(e))?;
    anyhow::ensure!(!paths.is_empty(), "--paths: at least one of onchip, streaming, auto");
    // Ceilings: device copy bandwidth (streaming), shared-memory bandwidth of every SM (on-chip).
    let copy_bw = be.copy_bandwidth(0, 1 << 28, 5).unwrap_or(f64::NAN);
    let smem_bw = be.shared_bandwidth(0).unwrap_or(f64::NAN);
    let mut rows = vec![];
    for &p in &paths {
        // The on-chip kernel has no tile: its variants are its block sizes and checks a launch.
        let first = (onchip_threads.first().copied().unwrap_or(1024), onchip_checks.first().copied().unwrap_or(8));
        let variants: Vec<(String, (usize, usize))> = if p == PathChoice::Onchip {
            onchip_threads.iter().flat_map(|&n| onchip_checks.iter().map(move |&c| ("auto".to_string(), (n, c)))).collect()
        } else {
            tiles.iter().map(|t| (t.clone(), first)).collect()
        };
        for (t, (threads, checks)) in &variants {
            let (t, threads, checks) = (t, *threads, *checks);
            // "auto": the backend's defaults (tile fitted to the designs, z re-chunked as they finish).
            let (tile, auto) = Tile::parse_choice(t).map_err(|e| anyhow::anyhow!(e))?;
            // The lean step (streaming blocks of the CPML-free interior) varies where streaming may run.
            let leans = if p == PathChoice::Onchip { vec![true] } else { lean.values() };
            // The tiles' origin, too (the on-chip kernel has none).
            let origins = if p == PathChoice::Onchip { vec![Origin::Auto] } else { origins.clone() };
            // Two steps a pass for the slim designs among those streaming, or one.
            let slims = if p == PathChoice::Onchip { vec![true] } else { slim.values() };
            for (g, ln, org, sl) in super::combos(graphs, &leans, &origins, &slims) {
                be.set_options(CudaOptions { tile, graphs: g, adapt: auto, path: p, verbose, onchip_threads: threads, onchip_checks: checks, onchip_general, lean: ln, origin: org, slim: sl, slim_min_plane, ..Default::default() })?;
                // Warm-up (compiles the variant, grows the pool), then timed; a path that
                // cannot run this generation (--paths onchip with a design too large) says why.
                let (secs, upd, lo, hi) = match time(&be).and_then(|_| time(&be)) {
                    Ok(t) => t,
                    Err(e) => {
                        println!("generation of {} {} candidates on cuda [path {}]: not run: {e}", cands.len(), design.name(), p.name());
                        continue;
                    }
                };
                let st = be.last_stats();
                let extra = format!(
                    "; backend {:.2} s = setup {:.2} + stepping loop {:.2} (device busy {:.3} s = {:.2} Gcells/s, host waiting {:.2} s); {} on-chip, {} streaming ({} two steps a pass)",
                    st.wall_s,
                    st.setup_s,
                    st.loop_s,
                    st.kernel_s,
                    st.cell_updates / st.kernel_s / 1e9,
                    st.wait_s,
                    st.onchip_designs,
                    st.streaming_designs,
                    st.slim_designs
                );
                let what = if p == PathChoice::Onchip { format!("{threads} threads, {checks} checks a launch") } else if t == "auto" { "auto".to_string() } else if auto { format!("auto/{tile}") } else { tile.to_string() };
                let what = if ln { what } else { format!("{what}, no lean step") };
                let what = if org == Origin::Auto { what } else { format!("{what}, origin {org}") };
                let what = if sl { what } else { format!("{what}, 1 step a pass") };
                line(&format!("cuda [path {}, {what}, graphs {}]", p.name(), if g { "on" } else { "off" }), secs, upd, lo, hi, extra);
                // Per path of the planner: device time, rate, modelled bytes per cell update and ceiling fraction.
                let (on_s, on_u) = (st.onchip_kernel_s, st.onchip_cell_updates);
                let (st_s, st_u) = (st.kernel_s - on_s, st.cell_updates - on_u);
                let label = format!("{} {what}{}", p.name(), if g { "" } else { " no graphs" });
                rows.push((label, st.kernel_s, secs, upd, on_s, on_u, st.smem_bytes, st_s, st_u, st.bytes));
            }
        }
    }
    println!(
        "\n| path (tile) | device s | wall s | designs/s | Gcells/s (device) | on-chip: s, Gcells/s, B/cell (shared, modelled), % of {:.1} TB/s | streaming: s, Gcells/s, B/cell (modelled), % of copy {:.2} TB/s |",
        smem_bw / 1e12,
        copy_bw / 1e12
    );
    println!("|---|---|---|---|---|---|---|");
    let nc = cands.len() as f64;
    for (label, ks, secs, upd, on_s, on_u, smem, st_s, st_u, bytes) in rows {
        let on = if on_u > 0.0 { format!("{on_s:.3} s, {:.2}, {:.0}, {:.1} %", on_u / on_s / 1e9, smem / on_u, 100.0 * smem / on_s / smem_bw) } else { "-".into() };
        let stc = if st_u > 0.0 { format!("{st_s:.3} s, {:.2}, {:.0}, {:.1} %", st_u / st_s / 1e9, bytes / st_u, 100.0 * bytes / st_s / copy_bw) } else { "-".into() };
        println!("| {label} | {ks:.3} | {secs:.2} | {:.1} | {:.2} | {on} | {stc} |", nc / secs, upd / ks / 1e9);
    }
    Ok(())
}
