//! Serde types of a design file, one per construct users write in RON
//! (see docs/DESIGN_FORMAT.md). Nothing here is evaluated or checked; that is
//! `validate.rs` (on load) and `resolve.rs` (per set of parameter values).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::expr::Expr;
use crate::ga::GaSettings;
use super::params::ParamSpec;
use crate::job::{Axis, Boundary};

/// A point `(x, y, z)` in design units.
pub type Vec3 = (Expr, Expr, Expr);

/// A point `(u, v)` in a plane normal to an axis, in design units; `(u, v)`
/// are the two other axes in cyclic order (normal z: (x, y); x: (y, z); y: (z, x)).
pub type Vec2 = (Expr, Expr);

/// The whole file: `Design(name: ..., ...)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename = "Design", deny_unknown_fields)]
pub struct DesignFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub units: Units,
    #[serde(default)]
    pub parameters: BTreeMap<String, ParamSpec>,
    #[serde(default)]
    pub constants: BTreeMap<String, f64>,
    #[serde(default)]
    pub materials: BTreeMap<String, MaterialSpec>,
    /// Comparisons that every design must satisfy, e.g. `"w2 < w1"`.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Absent: one objective, the goal violation.
    #[serde(default)]
    pub objectives: Option<Vec<Objective>>,
    pub geometry: Vec<Primitive>,
    pub domain: Domain,
    pub boundaries: Boundaries,
    pub ports: Vec<PortSpec>,
    pub band: Band,
    pub engine: EngineSpec,
    pub goals: Vec<GoalSpec>,
    /// Far fields (NF2FF) of an open problem; implied by pattern goals.
    #[serde(default)]
    pub far_field: Option<FarFieldSpec>,
    #[serde(default)]
    pub optimiser: GaSettings,
}

/// `far_field: (freqs: [2.44e9], step_deg: 5, gap: 3, port: 1)`: a Huygens
/// box inside the absorbing layers records the fields of the driven `port`
/// at `freqs` (and at the sweep frequencies of the pattern goals' bands).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FarFieldSpec {
    /// Frequencies (Hz) of the patterns written out.
    #[serde(default)]
    pub freqs: Vec<f64>,
    /// Grid step of the theta/phi pattern in degrees (a divisor of 90).
    #[serde(default = "default_step_deg")]
    pub step_deg: f64,
    /// Cells between the absorbing layers and the box (default 3).
    #[serde(default)]
    pub gap: Option<usize>,
    /// The driven port (1-based) whose pattern it is.
    #[serde(default = "one")]
    pub port: usize,
}

impl Default for FarFieldSpec {
    fn default() -> Self {
        FarFieldSpec { freqs: vec![], step_deg: default_step_deg(), gap: None, port: 1 }
    }
}

fn default_step_deg() -> f64 {
    5.0
}
fn one() -> usize {
    1
}

/// A direction in degrees: `(theta: 0, phi: 0)` is +z, `(theta: 90, phi: 0)` +x.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Direction {
    pub theta: f64,
    pub phi: f64,
}

/// Length unit of every geometric number (not of frequencies, always Hz).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Units {
    #[serde(alias = "Millimeter")]
    Millimetre,
    #[serde(alias = "Micrometer")]
    Micrometre,
    #[serde(alias = "Meter")]
    Metre,
}

impl Units {
    /// Metres per design unit.
    pub fn metres(self) -> f64 {
        match self {
            Units::Millimetre => 1e-3,
            Units::Micrometre => 1e-6,
            Units::Metre => 1.0,
        }
    }
    /// Short name for messages.
    pub fn symbol(self) -> &'static str {
        match self {
            Units::Millimetre => "mm",
            Units::Micrometre => "um",
            Units::Metre => "m",
        }
    }
}

/// A named material of the `materials` map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum MaterialSpec {
    /// Loss as `tan_delta` or as `sigma` in S/m, not both. A loss tangent is
    /// the conductivity that gives it at the band centre (`loss: BandCentre`,
    /// the default, and always on TLM), or `eps_r` and `tan_delta` at `f_ref`
    /// (default the band centre) of the wideband Djordjevic-Sarkar model
    /// (`loss: Wideband`, FDTD): docs/DESIGN_FORMAT.md says when to choose which.
    Dielectric {
        eps_r: f64,
        #[serde(default)]
        tan_delta: Option<f64>,
        #[serde(default)]
        sigma: Option<f64>,
        #[serde(default)]
        mu_r: Option<f64>,
        #[serde(default)]
        loss: LossModel,
        #[serde(default)]
        f_ref: Option<f64>,
    },
    /// A dispersive medium: `eps_inf` plus the poles' susceptibilities, and a
    /// conductivity `sigma` (S/m). FDTD only.
    Dispersive {
        eps_inf: f64,
        #[serde(default)]
        sigma: Option<f64>,
        poles: Vec<PoleSpec>,
    },
    Pec,
    /// A good conductor (FDTD): drawn as PEC, its loss and skin effect
    /// through a surface impedance. `conductivity` in S/m; `thickness` (m)
    /// of a sheet of it (a `Sheet`, `Disc`, `Polygon` or ground plane; solids
    /// and walls are thick); `roughness` the rms surface roughness (m).
    /// `Copper`, `Aluminium`, `Silver` and `Gold` are built in (thick, smooth).
    Metal {
        conductivity: f64,
        #[serde(default)]
        thickness: Option<f64>,
        #[serde(default)]
        roughness: Option<f64>,
    },
}

/// The built-in metals (S/m at room temperature; Pozar, Microwave
/// Engineering, 4th ed., Appendix F), matched case-insensitively.
pub const BUILTIN_METALS: &[(&str, f64)] = &[("Copper", 5.813e7), ("Aluminium", 3.816e7), ("Aluminum", 3.816e7), ("Silver", 6.173e7), ("Gold", 4.098e7)];

/// The conductivity of built-in metal `name`, if it is one.
pub fn builtin_metal(name: &str) -> Option<f64> {
    BUILTIN_METALS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, s)| s)
}

/// How a `tan_delta` becomes a medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum LossModel {
    /// One conductivity, exact at the band centre (loss falls as 1/f).
    #[default]
    BandCentre,
    /// Djordjevic-Sarkar: nearly constant loss tangent over the band (Debye poles on FDTD).
    Wideband,
}

/// One pole of a `Dispersive` medium (e^{jwt}, SI units).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum PoleSpec {
    /// `delta_eps / (1 + j w tau)`, `tau` in seconds.
    Debye { delta_eps: f64, tau: f64 },
    /// `delta_eps w0^2 / (w0^2 + 2 j w delta - w^2)`, `w0 = 2 pi f0` (f0 in
    /// Hz), damping `delta` in 1/s.
    Lorentz { delta_eps: f64, f0: f64, delta: f64 },
    /// `-wp^2 / (w^2 - j w gamma)`, `wp = 2 pi f_p` (f_p in Hz), collision rate `gamma` in 1/s.
    Drude { f_p: f64, gamma: f64 },
}

impl PoleSpec {
    /// The engine's pole.
    pub fn pole(&self) -> crate::job::Pole {
        use crate::job::Pole;
        let tau = 2.0 * std::f64::consts::PI;
        match *self {
            PoleSpec::Debye { delta_eps, tau: t } => Pole::Debye { delta_eps, tau: t },
            PoleSpec::Lorentz { delta_eps, f0, delta } => Pole::Lorentz { delta_eps, omega0: tau * f0, delta },
            PoleSpec::Drude { f_p, gamma } => Pole::Drude { omega_p: tau * f_p, gamma },
        }
    }
}

/// An extra objective besides the goals (multi-objective runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Objective {
    /// The goal violation (the fitness).
    Goals,
    Minimize(String),
    Maximize(String),
}

/// A geometry primitive. Later primitives win where they overlap earlier ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Primitive {
    /// A block of `material` (a name of `materials`, or `Pec` / `Vacuum`).
    Box { material: String, min: Vec3, max: Vec3 },
    /// A zero-thickness metal rectangle: exactly one axis has min == max;
    /// `material` is `Pec` (default) or a metal.
    Sheet {
        min: Vec3,
        max: Vec3,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A PEC wall across the whole cross-section normal to `axis`, from `z` to
    /// `z + thickness` along it, with a centred aperture of width `aperture` along
    /// the guide's wide axis, open over the full height.
    Iris {
        #[serde(alias = "at")]
        z: Expr,
        thickness: Expr,
        aperture: Expr,
        #[serde(default = "axis_z")]
        axis: Axis,
        /// `Pec` (default) or a metal.
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A cylinder of `material` (default PEC) along `axis` through the whole
    /// domain; `center`'s component along `axis` is ignored.
    Post {
        center: Vec3,
        radius: Expr,
        #[serde(default = "axis_y")]
        axis: Axis,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A dielectric slab over the domain's whole x/y extent from `z0` to
    /// `z0 + thickness`, with a ground sheet at `z0` when `ground` is true,
    /// of `ground_material` (`Pec` by default, or a metal).
    Substrate {
        material: String,
        z0: Expr,
        thickness: Expr,
        #[serde(default)]
        ground: bool,
        #[serde(default = "pec_name")]
        ground_material: String,
    },
    /// A finite cylinder of `material` (default PEC) along `axis`, from `from`
    /// to `to` along it, its axis through `center` (whose component along
    /// `axis` is ignored); hollow inside `inner_radius` when given (a tube).
    Cylinder {
        #[serde(default = "axis_z")]
        axis: Axis,
        center: Vec3,
        radius: Expr,
        #[serde(default)]
        inner_radius: Option<Expr>,
        from: Expr,
        to: Expr,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A polygon (vertices `points` in the plane's `(u, v)`, in order, not
    /// self-intersecting) extruded along `axis` from `from` to `to`.
    Prism {
        #[serde(default = "axis_z")]
        axis: Axis,
        points: Vec<Vec2>,
        from: Expr,
        to: Expr,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A zero-thickness disc (an annulus with `inner_radius`) in the plane
    /// `normal = at`, centred on `center` (the plane's `(u, v)`), of
    /// `material` (`Pec` by default, or a metal).
    Disc {
        #[serde(default = "axis_z")]
        normal: Axis,
        at: Expr,
        center: Vec2,
        radius: Expr,
        #[serde(default)]
        inner_radius: Option<Expr>,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A zero-thickness polygon in the plane `normal = at`, of `material`
    /// (`Pec` by default, or a metal).
    Polygon {
        #[serde(default = "axis_z")]
        normal: Axis,
        at: Expr,
        points: Vec<Vec2>,
        #[serde(default = "pec_name")]
        material: String,
    },
    /// A lumped load (a chip resistor, inductor or capacitor, or an R-L-C
    /// combination) between `from` and `to`, which differ along one axis:
    /// its elements in series (default) or in `parallel`; an element left out
    /// is absent (FDTD only).
    Load {
        name: String,
        from: Vec3,
        to: Vec3,
        #[serde(default)]
        r: Option<Expr>,
        #[serde(default)]
        l: Option<Expr>,
        #[serde(default)]
        c: Option<Expr>,
        #[serde(default)]
        parallel: bool,
    },
    /// `items` moved by `transform` (mirror, then rotate, then translate).
    Group {
        items: Vec<Primitive>,
        #[serde(default)]
        transform: Transform,
    },
    /// `count` copies of `items`: copy k (from 0) is moved by `transform`
    /// applied k times (a step of translation and rotation per copy).
    /// `count` may be an `Int` parameter the optimiser evolves; 0 is allowed.
    Repeat {
        count: Expr,
        items: Vec<Primitive>,
        transform: Transform,
    },
}

/// A rigid motion: an optional mirror, rotation and translation, applied in
/// that order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transform {
    #[serde(default)]
    pub mirror: Option<Mirror>,
    #[serde(default)]
    pub rotate: Option<Rotation>,
    #[serde(default)]
    pub translate: Option<Vec3>,
}

/// Reflection in the plane `axis = at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mirror {
    pub axis: Axis,
    #[serde(default = "zero")]
    pub at: Expr,
}

/// Rotation by `angle` degrees (right-handed) about the line along `axis`
/// through `about` (default the origin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rotation {
    pub axis: Axis,
    pub angle: Expr,
    #[serde(default)]
    pub about: Option<Vec3>,
}

fn zero() -> Expr {
    Expr::Num(0.0)
}

fn axis_z() -> Axis {
    Axis::Z
}
fn axis_y() -> Axis {
    Axis::Y
}
fn pec_name() -> String {
    "Pec".into()
}

impl Primitive {
    pub fn kind(&self) -> &'static str {
        match self {
            Primitive::Box { .. } => "Box",
            Primitive::Sheet { .. } => "Sheet",
            Primitive::Iris { .. } => "Iris",
            Primitive::Post { .. } => "Post",
            Primitive::Substrate { .. } => "Substrate",
            Primitive::Cylinder { .. } => "Cylinder",
            Primitive::Prism { .. } => "Prism",
            Primitive::Disc { .. } => "Disc",
            Primitive::Polygon { .. } => "Polygon",
            Primitive::Load { .. } => "Load",
            Primitive::Group { .. } => "Group",
            Primitive::Repeat { .. } => "Repeat",
        }
    }
}

/// The simulated region `(lo, hi)` per axis, before absorbing padding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    pub x: (Expr, Expr),
    pub y: (Expr, Expr),
    pub z: (Expr, Expr),
}

/// What sits on the two faces of one axis: `Pec` (both faces), or
/// `Faces(Pec, Absorbing)` (low face, high face).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FacePair {
    Pec,
    Pmc,
    Absorbing,
    Faces(Boundary, Boundary),
}

impl FacePair {
    /// (low face, high face).
    pub fn faces(self) -> [Boundary; 2] {
        match self {
            FacePair::Pec => [Boundary::Pec; 2],
            FacePair::Pmc => [Boundary::Pmc; 2],
            FacePair::Absorbing => [Boundary::Absorbing; 2],
            FacePair::Faces(lo, hi) => [lo, hi],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundaries {
    pub x: FacePair,
    pub y: FacePair,
    pub z: FacePair,
    /// The metal of every `Pec` face (a waveguide's or cavity's walls):
    /// a built-in metal or a `Metal` of `materials`; perfect when left out.
    #[serde(default)]
    pub walls: Option<String>,
}

/// A port. Port numbers in goals are positions in `ports` + 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum PortSpec {
    /// A source with series resistance `r` ohm between two points that differ along one axis.
    Lumped {
        name: String,
        from: Vec3,
        to: Vec3,
        #[serde(default = "fifty_ohm")]
        r: Expr,
    },
    /// A TE10 port of the rectangular guide formed by the domain's transverse faces.
    Waveguide {
        name: String,
        plane: PlaneSpec,
        #[serde(default)]
        mode: Mode,
    },
}

fn fifty_ohm() -> Expr {
    Expr::Num(50.0)
}

impl PortSpec {
    pub fn name(&self) -> &str {
        match self {
            PortSpec::Lumped { name, .. } | PortSpec::Waveguide { name, .. } => name,
        }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            PortSpec::Lumped { .. } => "Lumped",
            PortSpec::Waveguide { .. } => "Waveguide",
        }
    }
}

/// The reference plane of a waveguide port: `Z("feed - 5")` is the plane z = feed - 5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PlaneSpec {
    X(Expr),
    Y(Expr),
    Z(Expr),
}

impl PlaneSpec {
    pub fn axis_and_coord(&self) -> (Axis, &Expr) {
        match self {
            PlaneSpec::X(e) => (Axis::X, e),
            PlaneSpec::Y(e) => (Axis::Y, e),
            PlaneSpec::Z(e) => (Axis::Z, e),
        }
    }
}

/// The waveguide mode of a port (only the fundamental one is supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mode {
    #[default]
    TE10,
}

/// The frequency sweep: `points` frequencies from `start` to `stop` Hz inclusive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    pub start: f64,
    pub stop: f64,
    pub points: usize,
}

impl Band {
    pub fn freqs(&self) -> Vec<f64> {
        let n = self.points;
        if n < 2 {
            return vec![self.start; n];
        }
        (0..n).map(|k| self.start + (self.stop - self.start) * k as f64 / (n - 1) as f64).collect()
    }
}

/// The engine and its options: `Fdtd(cell: 0.1, invariant: Y)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EngineSpec {
    Fdtd(EngineOptions),
    Tlm(EngineOptions),
    Tlm2d(EngineOptions),
}

impl EngineSpec {
    pub fn kind(&self) -> crate::job::EngineKind {
        use crate::job::EngineKind;
        match self {
            EngineSpec::Fdtd(_) => EngineKind::Fdtd,
            EngineSpec::Tlm(_) => EngineKind::Tlm,
            EngineSpec::Tlm2d(_) => EngineKind::Tlm2d,
        }
    }
    pub fn options(&self) -> &EngineOptions {
        match self {
            EngineSpec::Fdtd(o) | EngineSpec::Tlm(o) | EngineSpec::Tlm2d(o) => o,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineOptions {
    /// A uniform mesh of this cell size in design units (cubic cells; each
    /// axis stretches it slightly to fit). Without `cell` the mesh follows the
    /// geometry (`mesh`, automatic by default). The TLM engines need `cell`.
    #[serde(default)]
    pub cell: Option<Expr>,
    /// How the mesh follows the geometry when no `cell` is given.
    #[serde(default)]
    pub mesh: Option<MeshSpec>,
    /// An axis along which neither the structure nor the fields vary (one cell).
    #[serde(default)]
    pub invariant: Option<Axis>,
    /// Absorbing padding in cells on every absorbing face.
    #[serde(default = "default_pml")]
    pub pml: usize,
    #[serde(default = "default_courant")]
    pub courant: f64,
    /// End when the field energy is this far below its peak (dB, negative).
    #[serde(default = "default_decay_db")]
    pub decay_db: f64,
    /// The most time steps a simulation may take (default 200,000).
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// The most simulated time (s) a simulation may take, beside `max_steps`:
    /// whichever ends first. The same for every candidate, whatever its mesh.
    #[serde(default)]
    pub max_time: Option<f64>,
}

/// The mesh of a design: `Auto(...)`, every field optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MeshSpec {
    Auto(AutoMeshSpec),
}

/// The automatic mesher's settings (docs/DESIGN_FORMAT.md, "Mesh").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoMeshSpec {
    /// The largest cell, as cells per wavelength at `band.stop` in the densest material.
    #[serde(default = "default_cells_per_wavelength")]
    pub cells_per_wavelength: f64,
    /// An explicit largest cell (design units); the smaller of the two rules.
    #[serde(default)]
    pub max_cell: Option<Expr>,
    /// The smallest cell allowed (design units; default: max cell / 16).
    #[serde(default)]
    pub min_cell: Option<Expr>,
    /// The cell next to a metal edge (design units; default: max cell / 2).
    #[serde(default)]
    pub edge_cell: Option<Expr>,
    /// Largest ratio of neighbouring cells.
    #[serde(default = "default_max_ratio")]
    pub max_ratio: f64,
    /// How metal edges get their lines.
    #[serde(default)]
    pub edges: EdgeRuleSpec,
    /// Cells at least across a dielectric slab (a substrate's thickness).
    #[serde(default = "default_slab_cells")]
    pub slab_cells: usize,
    /// Lines forced on an axis, in design units, from the domain's low face to
    /// its high face (the mesher then leaves that axis alone).
    #[serde(default)]
    pub lines: ForcedLines,
}

impl Default for AutoMeshSpec {
    fn default() -> Self {
        AutoMeshSpec {
            cells_per_wavelength: default_cells_per_wavelength(),
            max_cell: None,
            min_cell: None,
            edge_cell: None,
            max_ratio: default_max_ratio(),
            edges: EdgeRuleSpec::default(),
            slab_cells: default_slab_cells(),
            lines: ForcedLines::default(),
        }
    }
}

/// Lines per axis (`lines: (z: [0, 1.6, 3.2, ...])`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedLines {
    #[serde(default)]
    pub x: Option<Vec<Expr>>,
    #[serde(default)]
    pub y: Option<Vec<Expr>>,
    #[serde(default)]
    pub z: Option<Vec<Expr>>,
}

impl ForcedLines {
    pub fn axis(&self, a: Axis) -> Option<&Vec<Expr>> {
        match a {
            Axis::X => self.x.as_ref(),
            Axis::Y => self.y.as_ref(),
            Axis::Z => self.z.as_ref(),
        }
    }
}

/// How metal edges get their lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub enum EdgeRuleSpec {
    /// Sheets' edges and thin metal's faces (their field is singular across
    /// the edge) by two lines 0.15 of the edge cell inside the metal and 0.85
    /// outside; faces of thick solid metal on a line (docs/ACCURACY.md).
    #[default]
    Auto,
    /// Every metal edge by the thirds rule (1/3 inside the metal, 2/3 outside).
    Thirds,
    /// A line on every metal edge.
    OnEdge,
    /// Like `Auto`, with the edge lines of sheets and thin metal at this
    /// fraction of the edge cell inside the metal (0 to 0.5).
    Inside(f64),
}

fn default_cells_per_wavelength() -> f64 {
    20.0
}
fn default_max_ratio() -> f64 {
    1.5
}
fn default_slab_cells() -> usize {
    4
}

fn default_pml() -> usize {
    10
}
fn default_courant() -> f64 {
    0.99
}
fn default_decay_db() -> f64 {
    -40.0
}

/// A goal over a sub-band, on exactly one quantity: |S_ij| in dB
/// (`Goal(s: (2, 1), band: (31e9, 32.1e9), above_db: -1.0)`), or the far
/// field towards a direction: gain, realised gain or directivity in dBi
/// (`Goal(gain: (theta: 0, phi: 0), band: (2.42e9, 2.46e9), above_dbi: 5.0)`),
/// front-to-back ratio in dB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Goal", deny_unknown_fields)]
pub struct GoalSpec {
    /// (i, j), 1-based port numbers: S_ij, port j driven.
    #[serde(default)]
    pub s: Option<(usize, usize)>,
    #[serde(default)]
    pub gain: Option<Direction>,
    #[serde(default)]
    pub realized_gain: Option<Direction>,
    #[serde(default)]
    pub directivity: Option<Direction>,
    #[serde(default)]
    pub front_to_back: Option<Direction>,
    /// (f1, f2) in Hz.
    pub band: (f64, f64),
    #[serde(default)]
    pub above_db: Option<f64>,
    #[serde(default)]
    pub below_db: Option<f64>,
    #[serde(default)]
    pub above_dbi: Option<f64>,
    #[serde(default)]
    pub below_dbi: Option<f64>,
    #[serde(default = "unit_weight")]
    pub weight: f64,
}

fn unit_weight() -> f64 {
    1.0
}
