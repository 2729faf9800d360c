//! The FDTD table of `emvolve bench`: a box with CPML (or PEC walls) and a
//! population of waveguide sections, on the CPU or per CUDA kernel variant
//! (scheme, tile, z-chunk, graphs).

use super::table::{measure, print_table, row};
use super::{BenchArgs, GraphsChoice, SchemeChoice, TuningArgs};
use crate::engine::cuda::batch::{step_bytes, Origin, Tile};
use crate::engine::cuda::{CudaBackend, CudaOptions, Scheme};
use crate::engine::fdtd::Operator;
use crate::engine::{Backend, RunCtx, cpu::CpuBackend};
use crate::job::SimJob;

/// Time the FDTD workloads at `s1` and `s2` steps and print the table.
pub fn run(a: &BenchArgs, tune: &TuningArgs, s1: usize, s2: usize, use_cuda: bool, gpus: &[usize]) -> anyhow::Result<()> {
    let pop = a.population;
    let cells = a.cells;
    let n = a.n;
    let origins = super::parse_origins(&tune.origins)?;
    if let Some(p) = a.box_pml {
        anyhow::ensure!(2 * p < n, "--box-pml {p}: the {n}^3 box leaves no interior; at most {} CPML cells per face", n.saturating_sub(1) / 2);
    }
    let box_pml = a.box_pml;
    let box_jobs = move |s: usize| vec![box_pml.map_or_else(|| super::box_job(n, s), |p| super::box_job_pml(n, s, p))];
    let box_name = match a.box_pml {
        Some(0) => format!("box {n}^3, PEC walls (no CPML), dielectric"),
        Some(p) => format!("box {n}^3, CPML {p} cells all faces, dielectric"),
        None => format!("box {n}^3, CPML all faces, dielectric"),
    };
    let pop_jobs = move |s: usize| super::population_jobs(pop, cells, s);
    let graded_jobs = move |s: usize| box_jobs(s).into_iter().map(super::workloads::graded).collect::<Vec<_>>();
    let graded_name = format!("{box_name}, graded lines");
    let mut rows = vec![];
    let header;
    if !use_cuda {
        let cpu = CpuBackend;
        header = format!("backend: {}", cpu.name());
        let (w1, w2, u) = measure(&cpu, &box_jobs, s1, s2)?;
        rows.push(row(format!("{box_name} block"), &box_jobs(1), s1, s2, w1, w2, u));
        if a.graded {
            let (w1, w2, u) = measure(&cpu, &graded_jobs, s1, s2)?;
            rows.push(row(format!("{graded_name} block"), &graded_jobs(1), s1, s2, w1, w2, u));
        }
        if pop > 0 {
            let (w1, w2, u) = measure(&cpu, &pop_jobs, s1, s2)?;
            rows.push(row(format!("population {pop} x {cells} cells, 2 TE10 ports"), &pop_jobs(1), s1, s2, w1, w2, u));
        }
        print_table(&header, None, "cell", "workload", &rows);
        return Ok(());
    }
    // (tile, adapt): "auto" is the backend's default (tile fitted to the designs, z re-chunked as they finish).
    let tiles: Vec<(Tile, bool)> = tune
        .tiles
        .iter()
        .map(|t| Tile::parse_choice(t))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    let mut be = CudaBackend::new(gpus)?;
    header = format!("backend: cuda on {}", be.devices().join("; "));
    // Device-to-device copy: 1 GiB each way, median of 10.
    let copy = be.copy_bandwidth(0, 1 << 30, 10)?;
    let schemes: Vec<Scheme> = match tune.scheme {
        SchemeChoice::Fused => vec![Scheme::Fused],
        SchemeChoice::Split => vec![Scheme::Split],
        SchemeChoice::Both => vec![Scheme::Fused, Scheme::Split],
    };
    let mut variants = vec![];
    for &sc in &schemes {
        for (k, &(t, adapt)) in tiles.iter().enumerate() {
            match sc {
                Scheme::Fused if tune.zchunks.is_empty() => variants.push((sc, t, adapt, None)),
                Scheme::Fused => variants.extend(tune.zchunks.iter().map(|&z| (sc, t, adapt, Some(z)))),
                Scheme::Split if k == 0 => {
                    if tune.split_zchunks.is_empty() {
                        variants.push((sc, t, false, None));
                    }
                    for &z in &tune.split_zchunks {
                        variants.push((sc, t, false, Some(z)));
                    }
                }
                Scheme::Split => {}
            }
        }
    }
    let mut workloads: Vec<(String, Box<dyn Fn(usize) -> Vec<SimJob>>)> = vec![(box_name, Box::new(box_jobs))];
    if a.graded {
        workloads.push((graded_name, Box::new(graded_jobs)));
    }
    if pop > 0 {
        workloads.push((format!("population {pop} x {cells} cells, TE10 ports"), Box::new(pop_jobs)));
    }
    for (name, make) in &workloads {
        let ops: Vec<Operator> = make(1).iter().map(|j| Operator::new(j).map_err(|e| anyhow::anyhow!("{e}"))).collect::<Result<_, _>>()?;
        let refs: Vec<&Operator> = ops.iter().collect();
        // Two steps a pass or one: timed both ways only where a design could take it.
        let jobs1 = make(1);
        let any_slim = ops.iter().zip(&jobs1).any(|(o, j)| crate::engine::cuda::slim::fits(o, j, tune.slim_min_plane).is_ok());
        for &(sc, t, adapt, zchunk) in &variants {
            let leans = if sc == Scheme::Fused { tune.lean.values() } else { vec![false] };
            let slims = if sc == Scheme::Fused && any_slim { tune.slim.values() } else { vec![true] };
            for (g, lean, org, slim) in super::combos(tune.graphs, &leans, &origins, &slims) {
                be.set_options(CudaOptions { scheme: sc, tile: t, zchunk, graphs: g, adapt, lean, origin: org, slim, slim_min_plane: tune.slim_min_plane, ..Default::default() })?;
                // Warm-up: compiles the tile variant once and grows the buffer pool.
                be.run(&make(2), &RunCtx::NONE)?;
                let (w1, w2, u) = measure(&be, make.as_ref(), s1, s2)?;
                let st = be.last_stats();
                let gr = if tune.graphs == GraphsChoice::Both { format!(", graphs {}", if g { "on" } else { "off" }) } else { String::new() };
                let gr = if org == Origin::Auto { gr } else { format!("{gr}, origin {org}") };
                let gr = if st.slim_designs > 0 { format!("{gr}, 2 steps a pass") } else if any_slim && sc == Scheme::Fused { format!("{gr}, 1 step a pass") } else { gr };
                let what = match sc {
                    Scheme::Fused => format!(
                        "{name} [fused {}, z {}{gr}, lean {:.0} %]",
                        if adapt { "auto".to_string() } else { t.to_string() },
                        st.zchunk,
                        100.0 * st.lean_block_steps / st.block_steps.max(1.0)
                    ),
                    Scheme::Split => format!("{name} [split {}x{}, {} plane(s)/thread{gr}]", t.tx, t.ty, st.zchunk),
                };
                let mut r = row(what, &make(1), s1, s2, w1, w2, u);
                r.setup_s = Some(st.setup_s);
                r.kernel = Some(st.cell_updates / st.kernel_s / 1e9);
                // Bytes a cell update (the two-step pass moves the fields once for two steps).
                r.bytes = Some(if st.slim_designs > 0 { st.bytes / st.cell_updates } else { step_bytes(&refs, sc == Scheme::Fused) / r.n as f64 });
                r.bw = Some(st.bytes / st.kernel_s);
                rows.push(r);
            }
        }
    }
    print_table(&header, Some(copy), "cell", "workload", &rows);
    Ok(())
}
