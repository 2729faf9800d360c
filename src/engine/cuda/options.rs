//! Options of the CUDA backend (scheme, tile, chunking, graphs, memory) and
//! the timings of its last batch, shared by its FDTD and TLM halves.

use super::batch::{Origin, Tile};

/// Which kernels advance the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `fdtd_step`: H, ghosts and E in one launch (ping-pong field sets).
    Fused,
    /// `fdtd_update_h`, `fdtd_pmc_ghosts`, `fdtd_update_e`: one launch per half step, in place.
    Split,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Fused => "fused",
            Scheme::Split => "split",
        }
    }
}

/// Which FDTD path a design takes (`onchip.rs` plans it per design).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathChoice {
    /// On-chip where the design fits a block's shared memory, else streaming.
    Auto,
    /// Every design on-chip; a design that does not fit is an error naming why.
    Onchip,
    /// Every design on the streaming kernels (`fdtd_step` or the split ones).
    Streaming,
}

impl PathChoice {
    pub fn name(self) -> &'static str {
        match self {
            PathChoice::Auto => "auto",
            PathChoice::Onchip => "onchip",
            PathChoice::Streaming => "streaming",
        }
    }
    pub fn parse(s: &str) -> Result<PathChoice, String> {
        match s.trim() {
            "auto" => Ok(PathChoice::Auto),
            "onchip" => Ok(PathChoice::Onchip),
            "streaming" => Ok(PathChoice::Streaming),
            o => Err(format!("path '{o}': expected auto, onchip or streaming")),
        }
    }
}

/// Planes per thread of the split kernels unless set.
pub const SPLIT_ZCHUNK: usize = 2;

/// Tuning and checking knobs of the backend.
#[derive(Debug, Clone)]
pub struct CudaOptions {
    pub scheme: Scheme,
    pub tile: Tile,
    /// Planes per z-chunk; None chooses from the device's occupancy.
    pub zchunk: Option<usize>,
    /// Fill the write-only field set with NaN before a run: any position the
    /// fused kernel failed to write then poisons the result.
    pub poison: bool,
    /// Steps between copies of the port samples to the host.
    pub trace_chunk: usize,
    /// Cap on the device bytes a batch may use per GPU (None: what the card has free).
    pub mem_limit: Option<usize>,
    /// Replay each chunk of steps (FDTD and TLM) as a captured CUDA graph
    /// (one launch instead of three per step) when the driver allows it.
    pub graphs: bool,
    /// Fused scheme: let each sub-batch use a shorter tile of the same width
    /// when its designs are thin (batch::fit_tile), and re-chunk z as designs
    /// finish (unless `zchunk` is set). Off: exactly `tile`, one z-chunking.
    pub adapt: bool,
    /// FDTD path per design: on-chip, streaming, or the planner's choice.
    pub path: PathChoice,
    /// Threads per block of the on-chip kernel (a multiple of 64, at most 1024).
    pub onchip_threads: usize,
    /// Energy checks one on-chip launch may span (the kernel computes the
    /// energy at each): fewer launches and host round trips. 1: a launch ends
    /// at every check. Batches that keep final fields use 1.
    pub onchip_checks: usize,
    /// The on-chip kernel's general step loop even for 2.5D designs, which
    /// have their own (fdtd_onchip.cu EMV_OC_GENERAL): to time and check one
    /// loop against the other.
    pub onchip_general: bool,
    /// Print the planner's choice per design and sub-batch (stderr).
    pub verbose: bool,
    /// Fused scheme: run the blocks of a design's plain interior (no CPML,
    /// ghost or out-of-range plane in the block) on the lean kernel
    /// (kernels/fdtd_lean.cuh, same arithmetic). Off: fdtd_step everywhere.
    pub lean: bool,
    /// Where each design's xy tiles start (batch::Origin): Auto puts a CPML
    /// slab into as few tile columns and rows as it can, so that more tiles
    /// take the lean step; Fixed([0, 0]) tiles from position 0.
    pub origin: Origin,
    /// Fused scheme: designs whose padded xy plane fits one block (and need
    /// no PMC, x/y CPML or field monitor: slim::fits) advance two steps a
    /// pass (fdtd_step2, kernels/fdtd_slim.cuh) in sub-batches of their own.
    /// Off: one step a pass for every design.
    pub slim: bool,
    /// Fewest padded xy positions a design needs for the two-step pass
    /// (slim::MIN_PLANE: half a block; 0 lets every slim design take it).
    pub slim_min_plane: usize,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions { scheme: Scheme::Fused, tile: Tile::DEFAULT, zchunk: None, poison: false, trace_chunk: 256, mem_limit: None, graphs: true, adapt: true, path: PathChoice::Auto, onchip_threads: 1024, onchip_checks: 8, onchip_general: false, verbose: false, lean: true, origin: Origin::Auto, slim: true, slim_min_plane: super::slim::MIN_PLANE }
    }
}

/// Timings of the last batch.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Host work before the first step (operators, packing, uploads), seconds.
    pub setup_s: f64,
    /// Device time of the stepping kernels (events around each chunk of steps), seconds.
    pub kernel_s: f64,
    /// Whole call, seconds.
    pub wall_s: f64,
    /// Host time of the stepping loops (launches, uploads, waits, trace
    /// handling), and the part of it spent waiting for the device, seconds.
    pub loop_s: f64,
    pub wait_s: f64,
    /// Sum over jobs of cells x steps.
    pub cell_updates: f64,
    /// Compulsory device bytes of all steps (batch::step_bytes).
    pub bytes: f64,
    pub sub_batches: usize,
    /// Devices that ran jobs.
    pub gpus_used: usize,
    /// z-chunk chosen for the last sub-batch.
    pub zchunk: usize,
    /// Designs run on-chip and on the streaming kernels.
    pub onchip_designs: usize,
    pub streaming_designs: usize,
    /// Device time of the on-chip launches (part of `kernel_s`), seconds.
    pub onchip_kernel_s: f64,
    /// Cell updates of the on-chip designs (part of `cell_updates`).
    pub onchip_cell_updates: f64,
    /// Modelled shared-memory bytes of the on-chip steps (onchip::step_smem_bytes).
    pub smem_bytes: f64,
    /// Streaming block-steps launched, and those on the lean kernel (kernels/fdtd_lean.cuh).
    pub block_steps: f64,
    pub lean_block_steps: f64,
    /// Designs run two steps a pass (fdtd_step2), part of `streaming_designs`.
    pub slim_designs: usize,
}

/// Sub-batches run one after another: times and counts add, the z-chunk is
/// the later one's, the devices the most either used.
impl std::ops::AddAssign<&RunStats> for RunStats {
    fn add_assign(&mut self, s: &RunStats) {
        self.setup_s += s.setup_s;
        self.kernel_s += s.kernel_s;
        self.wall_s += s.wall_s;
        self.loop_s += s.loop_s;
        self.wait_s += s.wait_s;
        self.onchip_kernel_s += s.onchip_kernel_s;
        self.add_counts(s);
        self.zchunk = s.zchunk;
        self.gpus_used = self.gpus_used.max(s.gpus_used);
    }
}

impl RunStats {
    /// Another device's share, run at the same time: counts add, each time is
    /// the longer of the two, and one more device was used.
    pub fn alongside(&mut self, s: &RunStats) {
        self.setup_s = self.setup_s.max(s.setup_s);
        self.kernel_s = self.kernel_s.max(s.kernel_s);
        self.wall_s = self.wall_s.max(s.wall_s);
        self.loop_s = self.loop_s.max(s.loop_s);
        self.wait_s = self.wait_s.max(s.wait_s);
        self.onchip_kernel_s = self.onchip_kernel_s.max(s.onchip_kernel_s);
        self.add_counts(s);
        self.zchunk = s.zchunk;
        self.gpus_used += 1;
    }

    fn add_counts(&mut self, s: &RunStats) {
        self.cell_updates += s.cell_updates;
        self.bytes += s.bytes;
        self.sub_batches += s.sub_batches;
        self.onchip_designs += s.onchip_designs;
        self.streaming_designs += s.streaming_designs;
        self.onchip_cell_updates += s.onchip_cell_updates;
        self.smem_bytes += s.smem_bytes;
        self.block_steps += s.block_steps;
        self.lean_block_steps += s.lean_block_steps;
        self.slim_designs += s.slim_designs;
    }
}
