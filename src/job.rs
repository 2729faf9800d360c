//! The simulation job: one design, with its parameter values applied, voxelised
//! onto a mesh. This is the seam between the design layer (which builds jobs)
//! and the engine backends (which turn a batch of jobs into port signals).
//!
//! Everything here is in SI units and mesh indices; nothing refers back to the
//! design file, so CPU and CUDA, FDTD and TLM all read the same description.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub mod conductor;
pub mod huygens;
pub mod mesh;
pub use conductor::{Conductor, Surfaces};
pub use mesh::{Mesh, MeshError};

/// A Cartesian axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
    pub fn from_index(i: usize) -> Axis {
        Axis::ALL[i % 3]
    }
    /// The two other axes, in cyclic order (X -> (Y, Z), Y -> (Z, X), Z -> (X, Y)).
    pub fn others(self) -> (Axis, Axis) {
        let i = self.index();
        (Axis::from_index(i + 1), Axis::from_index(i + 2))
    }
    pub fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// What sits on one face of the simulation domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Boundary {
    /// Perfect electric conductor: tangential E is zero.
    Pec,
    /// Perfect magnetic conductor: tangential H is zero.
    Pmc,
    /// Open: a convolutional PML (FDTD) or a matched termination (TLM).
    Absorbing,
}

/// A medium of the coefficient table. Index 0 of [`SimJob::materials`] is the background.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Material {
    pub name: String,
    /// Relative permittivity (>= 1).
    pub eps_r: f64,
    /// Electric conductivity in S/m (dielectric loss).
    pub sigma: f64,
    /// Relative permeability (>= 1); FDTD and TLM stubs both honour it.
    pub mu_r: f64,
    /// A perfect conductor: every E edge touching it is forced to zero.
    pub pec: bool,
    /// Dispersion poles added to `eps_r` (then the permittivity at infinite
    /// frequency): eps(w) = eps_r + sum of the poles' susceptibilities, plus
    /// `sigma / (j w eps0)`. FDTD only (auxiliary differential equations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poles: Vec<Pole>,
}

/// One term of a dispersive susceptibility chi(w) (e^{jwt} convention).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Pole {
    /// Debye relaxation: `delta_eps / (1 + j w tau)`; `tau` in seconds.
    Debye { delta_eps: f64, tau: f64 },
    /// Lorentz resonance: `delta_eps w0^2 / (w0^2 + 2 j w delta - w^2)`;
    /// `omega0` and `delta` (damping) in rad/s and 1/s.
    Lorentz { delta_eps: f64, omega0: f64, delta: f64 },
    /// Drude: `-omega_p^2 / (w^2 - j w gamma)` (rad/s, 1/s).
    Drude { omega_p: f64, gamma: f64 },
}

impl Pole {
    /// The pole's susceptibility at angular frequency `w`.
    pub fn chi(&self, w: f64) -> num_complex::Complex64 {
        use num_complex::Complex64 as C;
        let j = C::new(0.0, 1.0);
        match *self {
            Pole::Debye { delta_eps, tau } => C::from(delta_eps) / (1.0 + j * w * tau),
            Pole::Lorentz { delta_eps, omega0, delta } => C::from(delta_eps * omega0 * omega0) / (omega0 * omega0 + 2.0 * j * w * delta - w * w),
            Pole::Drude { omega_p, gamma } => -C::from(omega_p * omega_p) / (w * w - j * w * gamma),
        }
    }
}

/// How a lumped load's elements are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Topology {
    Series,
    Parallel,
}

/// A lumped R, L, C load spread over `len` E edges along `axis` from mesh
/// node `start` (as a lumped port, without a source). `None` means the
/// element is absent: a short in series (R = 0, L = 0, C = infinite), an open
/// in parallel (R, L infinite, C = 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub name: String,
    pub axis: Axis,
    pub start: [usize; 3],
    pub len: usize,
    pub r: Option<f64>,
    pub l: Option<f64>,
    pub c: Option<f64>,
    pub topology: Topology,
}

impl Load {
    /// The load's impedance at angular frequency `w` (ohms).
    pub fn impedance(&self, w: f64) -> num_complex::Complex64 {
        use num_complex::Complex64 as C;
        let j = C::new(0.0, 1.0);
        match self.topology {
            Topology::Series => {
                let mut z = C::from(self.r.unwrap_or(0.0)) + j * w * self.l.unwrap_or(0.0);
                if let Some(c) = self.c {
                    z += 1.0 / (j * w * c);
                }
                z
            }
            Topology::Parallel => {
                let mut y = j * w * self.c.unwrap_or(0.0);
                if let Some(r) = self.r {
                    y += 1.0 / r;
                }
                if let Some(l) = self.l {
                    y += 1.0 / (j * w * l);
                }
                1.0 / y
            }
        }
    }
}

impl Material {
    pub fn vacuum() -> Self {
        Material { name: "vacuum".into(), eps_r: 1.0, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] }
    }
    pub fn pec() -> Self {
        Material { name: "pec".into(), eps_r: 1.0, sigma: 0.0, mu_r: 1.0, pec: true, poles: vec![] }
    }
}

/// Perfect metal off the mesh lines (FDTD; TLM jobs have none): what
/// cylinders, prisms, discs and polygons cover of each E edge and cell face
/// they cut, for the locally conformal update of Dey & Mittra (IEEE MGWL
/// 1997; `crate::engine::fdtd::conformal`). Shared by the jobs of one
/// structure, like `cell_mat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conformal {
    /// Edges the metal covers in part or whole (`open` 0: a PEC edge).
    pub edges: Vec<EdgeFill>,
    /// Faces (H nodes) next to those edges, with their open area.
    pub faces: Vec<FaceFill>,
}

impl Conformal {
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty() && self.faces.is_empty()
    }
}

/// An E edge that metal covers in part: `open` is the fraction of its
/// length outside the metal, in `[0, 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EdgeFill {
    /// The edge's direction (its E component).
    pub comp: Axis,
    /// Its node index `(i, j, k)` over the whole mesh (padding included).
    pub at: [u32; 3],
    pub open: f32,
}

/// A cell face (the node of H component `comp`, spanned by the two other
/// axes from node `at`) beside conformal metal: `open` is the fraction of
/// its area outside the metal, in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FaceFill {
    pub comp: Axis,
    pub at: [u32; 3],
    pub open: f32,
}

/// A zero-thickness perfectly conducting rectangle lying on mesh plane `plane`
/// normal to `normal`. It covers node indices `lo..=hi` along the two other
/// axes (in the order of [`Axis::others`]). FDTD zeroes the tangential E edges
/// lying in it; TLM shorts the links that cross it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sheet {
    pub normal: Axis,
    pub plane: usize,
    pub lo: [usize; 2],
    pub hi: [usize; 2],
}

/// Where and how a port couples to the fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PortKind {
    /// A resistor `r_ohm` in series with the source, spread over `len` E edges
    /// along `axis`, starting at mesh node `start` (edge m spans node
    /// `start + m` to `start + m + 1` along `axis`). The port voltage is
    /// `V = -sum E dl` (positive terminal at the upper end), the current `I`
    /// flows along +axis through the port into the structure.
    Lumped { axis: Axis, start: [usize; 3], len: usize, r_ohm: f64 },
    /// TE10 port of a rectangular guide whose walls are the domain's
    /// transverse faces. The reference plane is mesh plane `plane` normal to
    /// `normal`; `inward` (+1/-1) is the direction of travel into the device.
    /// The mode's E field lies along `e_axis`, its sine profile spans the
    /// domain along `width_axis` (width `a` metres). The source plane sits
    /// `source_offset` cells behind the reference plane (outside the device).
    /// `shift_m` moves the reported reference plane towards the device.
    Waveguide {
        normal: Axis,
        plane: usize,
        inward: i8,
        e_axis: Axis,
        width_axis: Axis,
        a: f64,
        source_offset: usize,
        shift_m: f64,
    },
}

/// A named port. Port numbers in S-parameters are positions in [`SimJob::ports`] + 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Port {
    pub name: String,
    pub kind: PortKind,
}

impl Port {
    /// Reference impedance in ohms at frequency `f` (TE10 wave impedance for guides).
    pub fn z_ref(&self, f: f64) -> num_complex::Complex64 {
        use num_complex::Complex64;
        match &self.kind {
            PortKind::Lumped { r_ohm, .. } => Complex64::new(*r_ohm, 0.0),
            PortKind::Waveguide { a, .. } => {
                let fc = crate::consts::C0 / (2.0 * a);
                let x = 1.0 - (fc / f).powi(2);
                if x > 0.0 {
                    Complex64::new(crate::consts::ETA0 / x.sqrt(), 0.0)
                } else {
                    // Below cutoff the wave impedance is imaginary (inductive).
                    Complex64::new(0.0, crate::consts::ETA0 / (-x).sqrt())
                }
            }
        }
    }
}

/// Excitation waveform: `exp(-((t - t0)/tau)^2) * sin(2 pi f0 (t - t0))`, or a
/// plain Gaussian when `f0 == 0` (bands that reach down towards DC).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pulse {
    pub f0: f64,
    pub tau: f64,
    pub t0: f64,
}

impl Pulse {
    /// A pulse whose spectrum stays within 20 dB of its peak over `[f_lo, f_hi]`.
    pub fn covering(f_lo: f64, f_hi: f64) -> Pulse {
        // |G(f)| ~ exp(-(pi tau (f - f0))^2); -20 dB at the band edge.
        let k = (10f64).ln().sqrt() / std::f64::consts::PI;
        let half = 0.5 * (f_hi - f_lo);
        if f_lo < half {
            // Low-pass band: a baseband Gaussian, -20 dB at f_hi.
            let tau = k / f_hi;
            Pulse { f0: 0.0, tau, t0: 4.0 * tau }
        } else {
            let tau = k / half;
            Pulse { f0: 0.5 * (f_lo + f_hi), tau, t0: 4.0 * tau }
        }
    }
    #[inline]
    pub fn value(&self, t: f64) -> f64 {
        let u = (t - self.t0) / self.tau;
        let g = (-u * u).exp();
        if self.f0 > 0.0 {
            g * (2.0 * std::f64::consts::PI * self.f0 * (t - self.t0)).sin()
        } else {
            g
        }
    }
    /// Time after which the source is negligible (below 1e-12 of its peak).
    pub fn end_time(&self) -> f64 {
        self.t0 + 5.3 * self.tau
    }
}

/// Which field components a [`Monitor::FieldDft`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DftFields {
    /// E and H tangential to planes normal to this axis (a Huygens surface).
    Tangential(Axis),
    /// All six components.
    All,
}

/// A field quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Field {
    E,
    H,
}

/// What an engine records besides the port signals (the ports themselves
/// are always monitored: [`SimOutput::traces`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Monitor {
    /// A running DFT (f64 sums) of the fields over the mesh nodes `lo..=hi`
    /// (a box; a plane where `lo == hi` along one axis), at `freqs` (Hz). Each
    /// component is sampled where Yee keeps it inside that range (see
    /// [`ComponentDft`]), E at `t = (n + 1) dt`, H at `(n + 1/2) dt` after step
    /// n: `X(f) = sum x(t) exp(-j 2 pi f t) dt`.
    FieldDft { name: String, lo: [usize; 3], hi: [usize; 3], fields: DftFields, freqs: Vec<f64> },
    /// The power the structure absorbs inside the mesh nodes `lo..=hi` at
    /// `freqs` (Hz), from running DFTs of the fields on its lossy parts only:
    /// H on every lossy-metal surface node, E on every edge with a
    /// conductivity, dispersive poles or a load (see `engine::fdtd::absorbed`).
    /// Keep the region outside the absorbing layers (a Huygens box is).
    Absorbed { name: String, lo: [usize; 3], hi: [usize; 3], freqs: Vec<f64> },
}

impl Monitor {
    pub fn name(&self) -> &str {
        match self {
            Monitor::FieldDft { name, .. } | Monitor::Absorbed { name, .. } => name,
        }
    }
    pub fn freqs(&self) -> &[f64] {
        match self {
            Monitor::FieldDft { freqs, .. } | Monitor::Absorbed { freqs, .. } => freqs,
        }
    }
}

/// One field component of a [`Monitor::FieldDft`]. Along axis `a` its
/// samples are `first[a] .. first[a] + count[a]`: mesh nodes (lines) where
/// `at_nodes[a]`, else cells (cell i centred between lines i and i+1; Yee
/// keeps E_c between lines along c and H_c between lines across c). On an
/// axis where the monitor is flat, a component kept between lines is the mean
/// of its two samples either side, placed on the monitor's line.
/// `values[((f * count[2] + k) * count[1] + j) * count[0] + i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentDft {
    pub field: Field,
    pub axis: Axis,
    pub first: [usize; 3],
    pub count: [usize; 3],
    pub at_nodes: [bool; 3],
    pub values: Vec<num_complex::Complex64>,
}

/// What a monitor recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MonitorOutput {
    FieldDft { name: String, freqs: Vec<f64>, components: Vec<ComponentDft> },
    /// Per frequency, the time-averaged power (W for a 1 V source, in the
    /// units of the port's `Re(V I*) / 2` from DFTs `sum x(t) exp(-j w t) dt`)
    /// absorbed by the lossy metal faces, by the lossy and dispersive
    /// dielectric edges, and by the lumped loads.
    Absorbed { name: String, freqs: Vec<f64>, conductor: Vec<f64>, dielectric: Vec<f64>, loads: Vec<f64> },
}

/// When a simulation ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Stop once the field energy is this many dB below its peak (e.g. -40),
    /// and the source has finished.
    pub decay_db: f64,
    /// Hard cap on time steps.
    pub max_steps: usize,
    /// Check the energy every this many steps.
    pub check_every: usize,
    /// A cap in simulated time (s), beside `max_steps`: whichever comes first.
    /// Designs of one optimisation run get meshes, so time steps, that differ
    /// by up to 3x; a cap in time gives each the same ring-down, where a cap in
    /// steps would cut the finest short.
    #[serde(default)]
    pub max_time: Option<f64>,
}

impl StopRule {
    /// The step cap of a run with time step `dt`: `max_steps`, or fewer where
    /// `max_time` ends first (at least one step).
    pub fn cap(&self, dt: f64) -> usize {
        match self.max_time {
            Some(t) if dt > 0.0 => {
                let n = (t / dt).ceil();
                if n < self.max_steps as f64 { (n as usize).max(1) } else { self.max_steps }
            }
            _ => self.max_steps,
        }
    }
}

impl Default for StopRule {
    fn default() -> Self {
        StopRule { decay_db: -40.0, max_steps: 200_000, check_every: 64, max_time: None }
    }
}

/// Which time-domain method simulates the job (also the CLI's `--engine
/// fdtd|tlm|tlm2d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum EngineKind {
    Fdtd,
    Tlm,
    Tlm2d,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Fdtd => "fdtd",
            EngineKind::Tlm => "tlm",
            EngineKind::Tlm2d => "tlm2d",
        }
    }
}

/// One simulation: a voxelised structure, its ports, and which port is driven.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimJob {
    /// A short label for messages ("design 12, port 1 driven").
    pub label: String,
    pub engine: EngineKind,
    /// The mesh (padding included); every length the engines use comes from it.
    pub mesh: Mesh,
    /// `boundaries[axis][0]` is the low face, `[1]` the high face.
    pub boundaries: [[Boundary; 2]; 3],
    /// Absorbing padding in cells on each face (0 where not absorbing). The
    /// padding is part of `mesh`; materials are extruded into it.
    pub pml: [[usize; 2]; 3],
    pub materials: Vec<Material>,
    /// Material index per cell (`mesh.idx`), shared by the jobs of one
    /// structure (one per driven port).
    pub cell_mat: Arc<Vec<u8>>,
    /// Conformal metal (FDTD only).
    #[serde(default, skip_serializing_if = "is_unshared_empty")]
    pub conformal: Arc<Conformal>,
    pub sheets: Vec<Sheet>,
    /// Lumped R, L, C loads (FDTD only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<Load>,
    /// Lossy metal surfaces (FDTD only; empty: every metal is perfect).
    #[serde(default, skip_serializing_if = "Surfaces::is_empty")]
    pub surfaces: Surfaces,
    pub ports: Vec<Port>,
    /// Field monitors beyond the ports (results in [`SimOutput::monitors`]).
    pub monitors: Vec<Monitor>,
    /// Index into `ports` of the excited port.
    pub drive: usize,
    pub pulse: Pulse,
    /// Frequencies (Hz) at which results are wanted.
    pub freqs: Vec<f64>,
    pub stop: StopRule,
    /// Courant number S (FDTD: fraction of the 3D stability limit).
    pub courant: f64,
}

impl SimJob {
    /// The cell materials, to change them (copied first if shared).
    pub fn cell_mat_mut(&mut self) -> &mut Vec<u8> {
        Arc::make_mut(&mut self.cell_mat)
    }

    /// Whether `other` simulates the same structure (the jobs of one design's
    /// drives): the same cell materials (shared, not merely equal) and the same
    /// mesh, faces, padding, media, sheets, ports, pulse, Courant number and
    /// method, so that one operator serves both.
    pub fn shares_structure(&self, other: &SimJob) -> bool {
        Arc::ptr_eq(&self.cell_mat, &other.cell_mat)
            && (Arc::ptr_eq(&self.conformal, &other.conformal) || (self.conformal.is_empty() && other.conformal.is_empty()))
            && self.engine == other.engine
            && self.mesh == other.mesh
            && self.boundaries == other.boundaries
            && self.pml == other.pml
            && self.materials == other.materials
            && self.sheets == other.sheets
            && self.loads == other.loads
            && self.surfaces == other.surfaces
            && self.ports == other.ports
            && self.pulse == other.pulse
            && self.courant == other.courant
    }
}

/// Why a simulation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum EndReason {
    /// Field energy fell below the threshold (dB relative to its peak).
    EnergyDecay { db: f64 },
    /// The step cap was reached first; `db` is the decay reached by then.
    MaxSteps { db: f64 },
}

/// Port signals of one port over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortTrace {
    /// Voltage samples, sample n taken at `t = (n + v_offset) * dt`.
    pub v: Vec<f64>,
    /// Current samples, sample n taken at `t = (n + i_offset) * dt`.
    pub i: Vec<f64>,
}

/// What an engine returns for one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimOutput {
    pub dt: f64,
    pub steps: usize,
    /// Time offsets (in steps) of the voltage and current samples.
    pub v_offset: f64,
    pub i_offset: f64,
    /// One trace per port, same order as `SimJob::ports`.
    pub traces: Vec<PortTrace>,
    /// One result per monitor, same order as `SimJob::monitors`.
    pub monitors: Vec<MonitorOutput>,
    /// How the run ended, with the energy decay (dB below its peak) reached
    /// at its last step.
    pub ended: EndReason,
    /// Cells (or nodes) updated per step.
    pub cells: usize,
}

/// Why one design's simulation produced no result. The run goes on; the GA
/// penalises the design and records the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum SimFailure {
    #[error("fields became non-finite at step {step} ({location})")]
    NonFinite { step: usize, location: String },
    #[error("invalid job: {0}")]
    Invalid(String),
}

fn is_unshared_empty(c: &Arc<Conformal>) -> bool {
    c.is_empty()
}
