//! `emvolve bench`: throughput of the engines on fixed workloads.
//!
//! Every workload runs twice, for `steps` and `steps2` steps: "whole-run" is
//! cells x steps2 over the wall time of the second run (operators, uploads
//! and all included), "marginal" the extra cell updates over the extra time
//! (setup removed). On CUDA also "kernel": cell updates over the device time
//! of the stepping kernels, the bytes per cell the kernels must move, and
//! that traffic as a fraction of the device-to-device copy bandwidth measured
//! in the same run.

use std::time::Instant;

use clap::{Args, ValueEnum};

use crate::bench::table::{measure, print_table, row};
use crate::engine::cuda::batch::{step_bytes, Tile};
use crate::engine::cuda::{self, CudaBackend, CudaOptions, Scheme};
use crate::engine::fdtd::Operator;
use crate::engine::{cpu::CpuBackend, Backend};
use crate::job::SimJob;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    Cpu,
    Cuda,
    /// CUDA when available, else the CPU (said once).
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeChoice {
    Fused,
    Split,
    Both,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Also time a design file at its midpoint, every port driven, to its own end criterion.
    #[arg(long)]
    pub design: Option<std::path::PathBuf>,
    /// With --design: also time one GA generation, this many random feasible
    /// candidates of the design (fixed seed) simulated as one batch, per --tiles
    /// variant on CUDA (exactly that tile; "auto": the backend's adaptive default).
    #[arg(long, default_value_t = 0)]
    pub generation: usize,
    /// Edge of the cubic benchmark grid (cells).
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    /// CPML cells on each face of the box (default 10; 0: PEC walls, no CPML).
    #[arg(long)]
    pub box_pml: Option<usize>,
    /// Time steps of the first measurement.
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Time steps of the second measurement (default 2 x steps); the
    /// difference gives the marginal rate.
    #[arg(long)]
    pub steps2: Option<usize>,
    /// Population size of the batch benchmark (0 to skip).
    #[arg(long, default_value_t = 8)]
    pub population: usize,
    /// Cells per design in the batch benchmark.
    #[arg(long, default_value_t = 60_000)]
    pub cells: usize,
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// GPUs (ordinals, comma separated) for the CUDA backend.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub gpus: Vec<usize>,
    /// CUDA kernels: fused step, split half steps, or both.
    #[arg(long, value_enum, default_value_t = SchemeChoice::Fused)]
    pub scheme: SchemeChoice,
    /// CUDA thread-block tiles to time (TXxTY[:stages[:minblocks]] or "auto", comma separated).
    #[arg(long, value_delimiter = ',', default_value = "32x8")]
    pub tiles: Vec<String>,
    /// Engine to time: FDTD, or TLM (3D box, 3D and 2D populations).
    #[arg(long, value_enum, default_value_t = EngineChoice::Fdtd)]
    pub engine: EngineChoice,
    /// TLM launch shapes (THREADSxNODES[xMINBLOCKS][s], comma separated).
    #[arg(long, value_delimiter = ',', default_value = "256x2")]
    pub tlm_shapes: Vec<String>,
    /// CUDA graphs for the chunks of steps: on, off, or both (timed one after the other).
    #[arg(long, value_enum, default_value_t = GraphsChoice::On)]
    pub graphs: GraphsChoice,
    /// Planes per thread of the split kernels to time (comma separated; default: the backend's).
    #[arg(long, value_delimiter = ',')]
    pub split_zchunks: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphsChoice {
    On,
    Off,
    Both,
}

impl GraphsChoice {
    fn values(self) -> Vec<bool> {
        match self {
            GraphsChoice::On => vec![true],
            GraphsChoice::Off => vec![false],
            GraphsChoice::Both => vec![true, false],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineChoice {
    Fdtd,
    Tlm,
}

/// One design as the optimiser runs it: midpoint values, every port driven, the design's end criterion.
fn bench_design(path: &std::path::Path, use_cuda: bool, gpus: &[usize]) -> anyhow::Result<()> {
    let design = crate::design::Design::load(path)?;
    let backend: Box<dyn crate::engine::Backend> = if use_cuda { Box::new(cuda::CudaBackend::new(gpus)?) } else { Box::new(CpuBackend) };
    let drives: Vec<usize> = (0..design.port_names().len()).collect();
    let values = design.midpoint_values();
    // Once to warm up (kernel compilation, allocation), once timed.
    crate::evaluate::evaluate_designs(&design, std::slice::from_ref(&values), &drives, None, backend.as_ref(), &|_| {})?;
    let t = Instant::now();
    let r = crate::evaluate::evaluate_designs(&design, std::slice::from_ref(&values), &drives, None, backend.as_ref(), &|_| {})?.remove(0);
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
fn random_candidates(design: &crate::design::Design, n: usize) -> Vec<std::collections::BTreeMap<String, f64>> {
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

/// One GA generation of a design as one batch: wall time, designs/s and
/// cell updates/s, per tile variant on CUDA (where the kernel time is also known).
fn bench_generation(path: &std::path::Path, n: usize, use_cuda: bool, gpus: &[usize], tiles: &[String], graphs: GraphsChoice) -> anyhow::Result<()> {
    let design = crate::design::Design::load(path)?;
    let drives: Vec<usize> = (0..design.port_names().len()).collect();
    let cands = random_candidates(&design, n);
    anyhow::ensure!(!cands.is_empty(), "{}: no feasible random candidate in {} draws", design.name(), 100 * n);
    let t = Instant::now();
    for c in &cands {
        design.jobs(c, &drives, None)?;
    }
    println!("generation of {} {} candidates: their jobs (geometry, voxels) built in {:.2} s", cands.len(), design.name(), t.elapsed().as_secs_f64());
    let time = |backend: &dyn Backend| -> anyhow::Result<(f64, f64, usize, usize)> {
        let t = Instant::now();
        let rs = crate::evaluate::evaluate_designs(&design, &cands, &drives, None, backend, &|_| {})?;
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
        return Ok(());
    }
    let mut be = CudaBackend::new(gpus)?;
    for t in tiles {
        // "auto": the backend's defaults (tile fitted to the designs, z re-chunked as they finish).
        let auto = t == "auto";
        let tile = if auto { Tile::DEFAULT } else { Tile::parse(t).map_err(|e| anyhow::anyhow!(e))? };
        for g in graphs.values() {
            be.set_options(CudaOptions { tile, graphs: g, adapt: auto, ..Default::default() })?;
            time(&be)?; // warm-up: compiles the variant, grows the pool
            let (secs, upd, lo, hi) = time(&be)?;
            let st = be.last_stats();
            let extra = format!(
                "; backend {:.2} s = setup {:.2} + stepping loop {:.2} (device busy {:.2} s = {:.2} Gcells/s, host waiting {:.2} s)",
                st.wall_s,
                st.setup_s,
                st.loop_s,
                st.kernel_s,
                st.cell_updates / st.kernel_s / 1e9,
                st.wait_s
            );
            let what = if auto { "auto".to_string() } else { tile.to_string() };
            line(&format!("cuda [fused {what}, graphs {}]", if g { "on" } else { "off" }), secs, upd, lo, hi, extra);
        }
    }
    Ok(())
}

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    let s1 = a.steps;
    let s2 = a.steps2.unwrap_or(2 * a.steps).max(s1 + 1);
    let use_cuda = match a.backend {
        BackendChoice::Cpu => false,
        BackendChoice::Cuda => {
            if !cuda::available() {
                anyhow::bail!("--backend cuda: {}", cuda::unavailable_reason());
            }
            true
        }
        BackendChoice::Auto => {
            let ok = cuda::available();
            if !ok {
                eprintln!("note: CUDA not available ({}), benchmarking the CPU", cuda::unavailable_reason());
            }
            ok
        }
    };
    if let Some(path) = &a.design {
        bench_design(path, use_cuda, &a.gpus)?;
        if a.generation > 0 {
            bench_generation(path, a.generation, use_cuda, &a.gpus, &a.tiles, a.graphs)?;
        }
    }
    // --- TLM on CUDA (cli/tlm_check.rs)
    if a.engine == EngineChoice::Tlm {
        let shapes: Vec<crate::engine::cuda::tlm::TlmConfig> =
            a.tlm_shapes.iter().map(|t| crate::engine::cuda::tlm::TlmConfig::parse(t)).collect::<Result<_, _>>().map_err(|e| anyhow::anyhow!(e))?;
        anyhow::ensure!(!shapes.is_empty(), "--tlm-shapes: at least one");
        return crate::dev::tlm_check::bench(a.n, s1, s2, a.population, a.cells, use_cuda, &a.gpus, &shapes);
    }
    // --- end TLM
    let pop = a.population;
    let cells = a.cells;
    let n = a.n;
    if let Some(p) = a.box_pml {
        anyhow::ensure!(2 * p < n, "--box-pml {p}: the {n}^3 box leaves no interior; at most {} CPML cells per face", n.saturating_sub(1) / 2);
    }
    let box_pml = a.box_pml;
    let box_jobs = move |s: usize| vec![box_pml.map_or_else(|| crate::bench::box_job(n, s), |p| crate::bench::box_job_pml(n, s, p))];
    let box_name = match a.box_pml {
        Some(0) => format!("box {n}^3, PEC walls (no CPML), dielectric"),
        Some(p) => format!("box {n}^3, CPML {p} cells all faces, dielectric"),
        None => format!("box {n}^3, CPML all faces, dielectric"),
    };
    let pop_jobs = move |s: usize| crate::bench::population_jobs(pop, cells, s);
    let mut rows = vec![];
    let header;
    if !use_cuda {
        let cpu = CpuBackend;
        header = format!("backend: {}", cpu.name());
        let (w1, w2, u) = measure(&cpu, &box_jobs, s1, s2)?;
        rows.push(row(format!("{box_name} block"), &box_jobs(1), s1, s2, w1, w2, u));
        if pop > 0 {
            let (w1, w2, u) = measure(&cpu, &pop_jobs, s1, s2)?;
            rows.push(row(format!("population {pop} x {cells} cells, 2 TE10 ports"), &pop_jobs(1), s1, s2, w1, w2, u));
        }
        print_table(&header, None, "cell", "workload", &rows);
        return Ok(0);
    }
    // (tile, adapt): "auto" is the backend's default (tile fitted to the designs, z re-chunked as they finish).
    let tiles: Vec<(Tile, bool)> = a
        .tiles
        .iter()
        .map(|t| if t == "auto" { Ok((Tile::DEFAULT, true)) } else { Tile::parse(t).map(|x| (x, false)) })
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    let mut be = CudaBackend::new(&a.gpus)?;
    header = format!("backend: cuda on {}", be.devices().join("; "));
    // Device-to-device copy: 1 GiB each way, median of 10.
    let copy = be.copy_bandwidth(0, 1 << 30, 10)?;
    let schemes: Vec<Scheme> = match a.scheme {
        SchemeChoice::Fused => vec![Scheme::Fused],
        SchemeChoice::Split => vec![Scheme::Split],
        SchemeChoice::Both => vec![Scheme::Fused, Scheme::Split],
    };
    let mut variants = vec![];
    for &sc in &schemes {
        for (k, &(t, adapt)) in tiles.iter().enumerate() {
            match sc {
                Scheme::Fused => variants.push((sc, t, adapt, None)),
                Scheme::Split if k == 0 => {
                    if a.split_zchunks.is_empty() {
                        variants.push((sc, t, false, None));
                    }
                    for &z in &a.split_zchunks {
                        variants.push((sc, t, false, Some(z)));
                    }
                }
                Scheme::Split => {}
            }
        }
    }
    let mut workloads: Vec<(String, Box<dyn Fn(usize) -> Vec<SimJob>>)> = vec![(box_name, Box::new(box_jobs))];
    if pop > 0 {
        workloads.push((format!("population {pop} x {cells} cells, TE10 ports"), Box::new(pop_jobs)));
    }
    for (name, make) in &workloads {
        let ops: Vec<Operator> = make(1).iter().map(|j| Operator::new(j).map_err(|e| anyhow::anyhow!("{e}"))).collect::<Result<_, _>>()?;
        let refs: Vec<&Operator> = ops.iter().collect();
        for &(sc, t, adapt, zchunk) in &variants {
            for g in a.graphs.values() {
                be.set_options(CudaOptions { scheme: sc, tile: t, zchunk, graphs: g, adapt, ..Default::default() })?;
                // Warm-up: compiles the tile variant once and grows the buffer pool.
                be.run_batch(&make(2))?;
                let (w1, w2, u) = measure(&be, make.as_ref(), s1, s2)?;
                let st = be.last_stats();
                let gr = if a.graphs == GraphsChoice::Both { format!(", graphs {}", if g { "on" } else { "off" }) } else { String::new() };
                let what = match sc {
                    Scheme::Fused => format!("{name} [fused {}, z {}{gr}]", if adapt { "auto".to_string() } else { t.to_string() }, st.zchunk),
                    Scheme::Split => format!("{name} [split {}x{}, {} plane(s)/thread{gr}]", t.tx, t.ty, st.zchunk),
                };
                let mut r = row(what, &make(1), s1, s2, w1, w2, u);
                r.setup_s = Some(st.setup_s);
                r.kernel = Some(st.cell_updates / st.kernel_s / 1e9);
                r.bytes = Some(step_bytes(&refs, sc == Scheme::Fused) / r.n as f64);
                r.bw = Some(st.bytes / st.kernel_s);
                rows.push(r);
            }
        }
    }
    print_table(&header, Some(copy), "cell", "workload", &rows);
    Ok(0)
}
