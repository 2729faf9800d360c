//! `emvolve bench`: throughput of the engines on fixed workloads.
//!
//! Every workload runs twice, for `steps` and `steps2` steps: "whole-run" is
//! cells x steps2 over the wall time of the second run (operators, uploads
//! and all included), "marginal" the extra cell updates over the extra time
//! (setup removed). On CUDA also "kernel": cell updates over the device time
//! of the stepping kernels, the bytes per cell the kernels must move, and
//! that traffic as a fraction of the device-to-device copy bandwidth measured
//! in the same run. A design file can be timed too: once at its midpoint, and
//! as one GA generation in one batch.

use clap::{Args, ValueEnum};

use crate::engine::cuda;
use crate::engine::select::BackendChoice;

pub mod design;
pub mod fdtd;
pub mod table;
pub mod tlm;
pub mod workloads;

pub use workloads::{box_job, box_job_pml, population_jobs};

/// What to time, and where: the options of `emvolve bench`, with the same
/// defaults as every other command. The kernel-tuning knobs are
/// [`TuningArgs`], given only by the developers' `emvolve-lab bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Also time a design file at its midpoint, the ports the GA drives (or
    /// every port: --all-ports) driven, to its own end criterion.
    #[arg(long)]
    pub design: Option<std::path::PathBuf>,
    /// With --design: simulate it with this engine instead of its own (fdtd,
    /// tlm, tlm2d; e.g. tlm2d times the 2D TLM generation).
    #[arg(long, value_enum)]
    pub design_engine: Option<crate::job::EngineKind>,
    /// With --design: also time one GA generation, this many random feasible
    /// candidates of the design (fixed seed) simulated as one batch.
    #[arg(long, default_value_t = 0)]
    pub generation: usize,
    /// With --design: drive every port, as `best/` and Touchstone files need
    /// (default: only the ports the goals need, as the GA drives them).
    #[arg(long)]
    pub all_ports: bool,
    /// Edge of the cubic benchmark grid (cells).
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    /// CPML cells on each face of the box (default 10; 0: PEC walls, no CPML).
    #[arg(long)]
    pub box_pml: Option<usize>,
    /// Also time the box on graded lines (the same cell count, cell sizes
    /// 0.75-1.25 mm): what the non-uniform spacing arrays cost the update.
    #[arg(long)]
    pub graded: bool,
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
    /// cpu, cuda, or auto (CUDA when available, else the CPU, said once).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1` (a batch is spread over them).
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// Engine to time: FDTD, or TLM (3D box, 3D and 2D populations).
    #[arg(long, value_enum, default_value_t = EngineChoice::Fdtd)]
    pub engine: EngineChoice,
}

/// The kernel-tuning knobs of `emvolve-lab bench` (paths, tiles, kernel
/// variants, launch shapes): developers' measurements, not the user's
/// program. Their defaults are the lab's fixed baselines (the streaming path,
/// the 32x8 tile); [`TuningArgs::backend_choices`] is what the backends
/// choose unasked.
#[derive(Args, Debug, Clone)]
pub struct TuningArgs {
    /// With --generation on CUDA: paths to time (onchip, streaming, auto; comma
    /// separated): FDTD's, or with --design-engine tlm2d the 2D TLM's. With
    /// --engine tlm, onchip (or auto) adds the 2D population on the on-chip kernel.
    #[arg(long, value_delimiter = ',', default_value = "streaming")]
    pub paths: Vec<String>,
    /// Threads per block of the on-chip kernel to time (comma separated; --generation, --engine tlm).
    #[arg(long, value_delimiter = ',', default_value = "1024")]
    pub onchip_threads: Vec<usize>,
    /// With --generation: energy checks an on-chip launch may span, to time
    /// (comma separated; 1: a launch ends at every check).
    #[arg(long, value_delimiter = ',', default_value = "8")]
    pub onchip_checks: Vec<usize>,
    /// With --generation: the on-chip kernel's general step loop even for
    /// 2.5D designs (which have their own), to time one loop against the other.
    #[arg(long)]
    pub onchip_general: bool,
    /// Print the on-chip planner's choice per design (stderr).
    #[arg(long)]
    pub verbose: bool,
    /// CUDA kernels: fused step, split half steps, or both.
    #[arg(long, value_enum, default_value_t = SchemeChoice::Fused)]
    pub scheme: SchemeChoice,
    /// CUDA thread-block tiles to time (TXxTY[:stages[:minblocks]], "auto" or
    /// "auto/TXxTY..." for the adaptive planner from that tile; comma separated).
    #[arg(long, value_delimiter = ',', default_value = "32x8")]
    pub tiles: Vec<String>,
    /// TLM launch shapes (THREADSxNODES[xMINBLOCKS][s], comma separated).
    #[arg(long, value_delimiter = ',', default_value = "256x2")]
    pub tlm_shapes: Vec<String>,
    /// CUDA graphs for the chunks of steps: on, off, or both (timed one after the other).
    #[arg(long, value_enum, default_value_t = GraphsChoice::On)]
    pub graphs: GraphsChoice,
    /// FDTD fused scheme: the lean kernel for the plain interior's blocks
    /// (kernels/fdtd_lean.cuh): on, off (fdtd_step everywhere), or both.
    #[arg(long, value_enum, default_value_t = GraphsChoice::On)]
    pub lean: GraphsChoice,
    /// FDTD fused scheme: two steps a pass for the slim designs of the
    /// population (kernels/fdtd_slim.cuh): on, off (one step a pass), or both.
    #[arg(long, value_enum, default_value_t = GraphsChoice::On)]
    pub slim: GraphsChoice,
    /// Fewest padded plane positions a design needs for the two-step pass
    /// (default: half a block, slim::MIN_PLANE; 0: every slim design).
    #[arg(long, default_value_t = crate::engine::cuda::slim::MIN_PLANE)]
    pub slim_min_plane: usize,
    /// Planes per thread of the split kernels to time (comma separated; default: the backend's).
    #[arg(long, value_delimiter = ',')]
    pub split_zchunks: Vec<usize>,
    /// Planes per block (z-chunk) of the fused kernel to time, instead of the
    /// planner's choice (comma separated; default: the planner's).
    #[arg(long, value_delimiter = ',')]
    pub zchunks: Vec<usize>,
    /// Where the fused kernel's xy tiles start: "auto" (the planner's choice
    /// per design, batch::LeanInfo) or "X,Y" for every design ("0,0": from
    /// position 0). Repeat the option to time several.
    #[arg(long = "origin", default_value = "auto")]
    pub origins: Vec<String>,
}

impl Default for TuningArgs {
    /// The options' own defaults (as `emvolve-lab bench` with none of them given).
    fn default() -> TuningArgs {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            tuning: TuningArgs,
        }
        <Only as clap::Parser>::parse_from(["bench"]).tuning
    }
}

impl TuningArgs {
    /// What the backends choose unasked, as a run gets it: the planner's path
    /// per design and the adaptive tile (the user's `emvolve bench`).
    pub fn backend_choices() -> TuningArgs {
        TuningArgs { paths: vec!["auto".into()], tiles: vec!["auto".into()], ..TuningArgs::default() }
    }
}

/// The options of `emvolve-lab bench`: the user's and the tuning knobs.
#[derive(Args, Debug)]
pub struct LabBenchArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    #[command(flatten)]
    pub tuning: TuningArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeChoice {
    Fused,
    Split,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphsChoice {
    On,
    Off,
    Both,
}

impl GraphsChoice {
    pub fn values(self) -> Vec<bool> {
        match self {
            GraphsChoice::On => vec![true],
            GraphsChoice::Off => vec![false],
            GraphsChoice::Both => vec![true, false],
        }
    }
}

/// The `--origin` values, checked on every backend (the CPU has no tiles,
/// but a malformed option is still an error that names it).
pub fn parse_origins(origins: &[String]) -> anyhow::Result<Vec<cuda::batch::Origin>> {
    origins.iter().map(|o| cuda::batch::Origin::parse(o).map_err(|e| anyhow::anyhow!("--origin: {e}"))).collect()
}

/// Every (CUDA graphs, lean step, tile origin, two steps a pass) combination a CUDA variant is timed with.
pub fn combos(graphs: GraphsChoice, leans: &[bool], origins: &[cuda::batch::Origin], slims: &[bool]) -> Vec<(bool, bool, cuda::batch::Origin, bool)> {
    let mut v = vec![];
    for g in graphs.values() {
        for &l in leans {
            for &o in origins {
                for &s in slims {
                    v.push((g, l, o, s));
                }
            }
        }
    }
    v
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineChoice {
    Fdtd,
    Tlm,
}

/// The GPU ordinals of `--gpus` (`all`: every device; none on the CPU).
fn gpu_list(gpus: &str, use_cuda: bool) -> anyhow::Result<Vec<usize>> {
    let list = crate::engine::select::parse_gpus(gpus).map_err(anyhow::Error::msg)?;
    match list {
        Some(l) => Ok(l),
        None if use_cuda => Ok((0..crate::engine::device::cuda::device_count()?).collect()),
        None => Ok(vec![0]),
    }
}

/// Whether `choice` means the CUDA backend here (`auto` says once when it falls back).
fn use_cuda(choice: BackendChoice) -> anyhow::Result<bool> {
    match choice {
        BackendChoice::Cpu => Ok(false),
        BackendChoice::Cuda => {
            if !cuda::available() {
                anyhow::bail!("--backend cuda: {}", cuda::unavailable_reason());
            }
            Ok(true)
        }
        BackendChoice::Auto => {
            let ok = cuda::available();
            if !ok {
                eprintln!("note: CUDA not available ({}), benchmarking the CPU", cuda::unavailable_reason());
            }
            Ok(ok)
        }
    }
}

/// Time what `a` asks for, with the kernel variants `t`, and print the tables.
pub fn run(a: &BenchArgs, t: &TuningArgs) -> anyhow::Result<()> {
    let s1 = a.steps;
    let s2 = a.steps2.unwrap_or(2 * a.steps).max(s1 + 1);
    let use_cuda = use_cuda(a.backend)?;
    let gpus = gpu_list(&a.gpus, use_cuda)?;
    if let Some(path) = &a.design {
        let engine = a.design_engine;
        design::midpoint(path, engine, use_cuda, &gpus, a.all_ports)?;
        if a.generation > 0 {
            design::generation(path, engine, a.generation, use_cuda, &gpus, a.all_ports, t)?;
        }
    }
    if a.engine == EngineChoice::Tlm {
        let shapes: Vec<cuda::tlm::TlmConfig> =
            t.tlm_shapes.iter().map(|t| cuda::tlm::TlmConfig::parse(t)).collect::<Result<_, _>>().map_err(|e| anyhow::anyhow!(e))?;
        anyhow::ensure!(!shapes.is_empty(), "--tlm-shapes: at least one");
        return tlm::run(a.n, s1, s2, a.population, a.cells, use_cuda, &gpus, &shapes, &t.paths, &t.onchip_threads);
    }
    fdtd::run(a, t, s1, s2, use_cuda, &gpus)
}
