//! Design files: parsing and validating them, evaluating them at parameter
//! values, and turning them into simulation jobs.
//!
//! A design is loaded once ([`Design::load`]); the optimiser then asks for its
//! genes, checks candidate values, and gets [`SimJob`]s for each candidate
//! ([`Design::jobs`]); the S-parameters of those jobs are scored by
//! [`Design::fitness`]. A job is made in three steps: the design evaluated at
//! the values into a [`Geometry`] in metres ([`geometry`]), a mesher laying
//! lines over it ([`mesh`]), and the voxeliser snapping it onto them
//! (`voxel`).

pub mod budget;
pub mod conformal;
pub mod error;
pub mod expr;
mod finite;
pub mod format;
pub mod geometry;
pub mod mesh;
pub mod params;
pub mod placement;
mod reciprocity;
pub mod region;
mod validate;
mod values;
mod voxel;
pub mod wideband;

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

pub use budget::MemoryBudget;
pub use error::DesignError;
pub use format::{DesignFile, FarFieldSpec};
pub use crate::ga::GaSettings;
pub use crate::ga::GeneSpec;
pub use geometry::Geometry;
pub use validate::MIN_CELLS_PER_WAVELENGTH;
pub use voxel::{PORT_MARGIN, SOURCE_OFFSET};

use crate::analysis::sparams::SParams;
use crate::fitness::{self, Fitness, FitnessError, Goal};
use crate::job::{EngineKind, SimJob};

/// A loaded and checked design file.
#[derive(Debug, Clone)]
pub struct Design {
    origin: String,
    text: String,
    file: DesignFile,
    goals: Vec<Goal>,
    notes: Vec<String>,
    /// Memory a job's grid may need; larger grids are refused before allocation.
    budget: MemoryBudget,
    /// The automatic mesh's line counts at the parameters' midpoint, which
    /// every candidate keeps where they fit (None: uniform mesh, or no
    /// feasible midpoint).
    reference: Option<std::sync::Arc<[mesh::Topology; 3]>>,
}

impl Design {
    /// Read and check the design file at `path`.
    pub fn load(path: &Path) -> Result<Design, DesignError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| DesignError::Io { file: origin.clone(), source })?;
        Design::parse(&text, &origin)
    }

    /// Parse and check design text; `origin` names it in errors (a path, usually).
    ///
    /// Besides the checks that need no values, the geometry is built once at the
    /// parameters' midpoint (when that point satisfies the constraints), so that a
    /// port outside the domain or a mesh too coarse fails here rather than on every
    /// evaluation.
    pub fn parse(text: &str, origin: &str) -> Result<Design, DesignError> {
        Design::parse_with_budget(text, origin, MemoryBudget::machine())
    }

    /// [`Design::parse`] with grids limited to `budget` (the machine's memory by default).
    pub fn parse_with_budget(text: &str, origin: &str, budget: MemoryBudget) -> Result<Design, DesignError> {
        let file: DesignFile = ron_options().from_str(text).map_err(|e| DesignError::from_ron(origin, e))?;
        finite::check(&file, text, origin)?;
        let checked = validate::check_static(&file, origin)?;
        let mut design = Design {
            origin: origin.to_string(),
            text: text.to_string(),
            file,
            goals: checked.goals,
            notes: checked.notes,
            budget,
            reference: None,
        };
        let mid = design.midpoint_values();
        if design.constraint_violation(&mid) == 0.0 {
            // jobs() rather than job(): it also places the far-field box.
            let drive = design.far_field().map_or(0, |f| f.port - 1);
            design.jobs(&mid, &[drive], None)?;
            design.reference = design.reference_topology(&mid)?;
        }
        // An objective that is no number (a comparison, say) fails here, not
        // on every design of a run; one that is merely not finite at the
        // midpoint (a division by a parameter there) may still be fine elsewhere.
        match design.extra_objectives(&mid) {
            Err(DesignError::BadExpression { problem, .. }) if problem.starts_with("is not a finite number") => {}
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        Ok(design)
    }

    /// The automatic mesh's topology at `values` (None for a uniform mesh).
    fn reference_topology(&self, values: &BTreeMap<String, f64>) -> Result<Option<std::sync::Arc<[mesh::Topology; 3]>>, DesignError> {
        let Some(m) = mesh::auto_from_design(&self.file, &self.origin, values, self.budget)? else { return Ok(None) };
        let geo = self.geometry(values, None)?;
        let units = geometry::Units::of(&self.file, &self.origin);
        let (_, topo) = m.mesh_with_topology(&geo, &units)?;
        Ok(Some(std::sync::Arc::new(topo)))
    }

    /// The file name (or origin) errors refer to.
    pub fn origin(&self) -> &str {
        &self.origin
    }
    pub fn name(&self) -> &str {
        &self.file.name
    }
    pub fn description(&self) -> &str {
        &self.file.description
    }
    /// The text as loaded (what a run directory keeps a copy of).
    pub fn text(&self) -> &str {
        &self.text
    }
    /// The parsed file, as written.
    pub fn file(&self) -> &DesignFile {
        &self.file
    }
    /// Goals in the form [`fitness::evaluate`] reads.
    pub fn goals(&self) -> &[Goal] {
        &self.goals
    }
    pub fn optimiser(&self) -> &GaSettings {
        &self.file.optimiser
    }
    /// Port names in port-number order.
    pub fn port_names(&self) -> Vec<String> {
        self.file.ports.iter().map(|p| p.name().to_string()).collect()
    }
    /// The frequencies (Hz) every job reports.
    pub fn freqs(&self) -> Vec<f64> {
        self.file.band.freqs()
    }
    /// The engine the file asks for.
    pub fn engine_kind(&self) -> EngineKind {
        self.file.engine.kind()
    }
    /// Things the user should know that are not errors (e.g. an inferred invariant axis).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// SHA-256 (hex) of the file text with line endings and trailing blanks
    /// normalised. Any other edit, comments included, changes it: resuming a run
    /// against an edited file is refused rather than guessed about.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for line in self.text.lines() {
            h.update(line.trim_end().as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// One job per driven port (`drives`, 0-based), identical but for `drive` and
    /// `label`. Values must be complete and within bounds; constraints are not
    /// checked here (see [`Design::constraint_violation`]). `engine_override`
    /// swaps the engine and keeps the cell size and every option.
    pub fn jobs(
        &self,
        values: &BTreeMap<String, f64>,
        drives: &[usize],
        engine_override: Option<EngineKind>,
    ) -> Result<Vec<SimJob>, DesignError> {
        let n = self.file.ports.len();
        if let Some(&j) = drives.iter().find(|&&j| j >= n) {
            return Err(DesignError::invalid(
                &self.origin,
                "ports",
                format!("cannot drive port index {j}: there are {n} ports (0-based)"),
            ));
        }
        let job = self.job(values, engine_override)?;
        // The Huygens box rides on the far-field port's drive only.
        let far = match self.far_field() {
            Some(f) => {
                let hb = crate::job::huygens::HuygensBox::place(&job, f.gap.unwrap_or(crate::job::huygens::DEFAULT_GAP))
                    .map_err(|m| DesignError::invalid(&self.origin, "far_field", m))?;
                let freqs = self.far_field_freqs();
                let mut monitors = hb.monitors(&freqs);
                monitors.push(hb.absorbed(&freqs));
                Some((f.port - 1, monitors))
            }
            None => None,
        };
        let values_text = values.iter().map(|(k, v)| format!("{k}={}", crate::numfmt::short(*v))).collect::<Vec<_>>().join(",");
        Ok(drives
            .iter()
            .map(|&j| {
                let mut jb = job.clone();
                jb.drive = j;
                if let Some((port, monitors)) = &far {
                    if *port == j {
                        jb.monitors.extend(monitors.iter().cloned());
                    }
                }
                jb.label = format!("{} [{values_text}] drive {}", self.file.name, job.ports[j].name);
                jb
            })
            .collect())
    }

    /// The design at `values` in metres, before any mesh (`engine_override`
    /// as in [`Design::jobs`]). Values must be complete and within bounds.
    pub fn geometry(&self, values: &BTreeMap<String, f64>, engine_override: Option<EngineKind>) -> Result<Geometry, DesignError> {
        self.check_bounds(values)?;
        let kind = engine_override.unwrap_or(self.file.engine.kind());
        geometry::evaluate(&self.file, &self.origin, values, kind)
    }

    /// The job of the design at `values` meshed by `mesher` (the design's own
    /// mesher when None), driven at port 0.
    pub fn job_with(
        &self,
        values: &BTreeMap<String, f64>,
        engine_override: Option<EngineKind>,
        mesher: Option<&dyn mesh::Mesher>,
    ) -> Result<SimJob, DesignError> {
        let geo = self.geometry(values, engine_override)?;
        let units = geometry::Units::of(&self.file, &self.origin);
        let own;
        let mesher = match mesher {
            Some(m) => m,
            None => {
                own = mesh::from_design(&self.file, &self.origin, values, self.budget, self.reference.clone())?;
                own.as_ref()
            }
        };
        let meshed = mesher.mesh(&geo, &units)?;
        voxel::voxelise(&geo, &meshed, &self.file, &units, self.budget)
    }

    /// The design's own mesh at `values`: the lines [`Design::jobs`] lays
    /// before voxelising, without building the job (mesh checks and tests).
    pub fn mesh(&self, values: &BTreeMap<String, f64>) -> Result<mesh::Meshed, DesignError> {
        let geo = self.geometry(values, None)?;
        let units = geometry::Units::of(&self.file, &self.origin);
        mesh::from_design(&self.file, &self.origin, values, self.budget, self.reference.clone())?.mesh(&geo, &units)
    }

    fn job(&self, values: &BTreeMap<String, f64>, over: Option<EngineKind>) -> Result<SimJob, DesignError> {
        self.job_with(values, over, None)
    }

    /// Score S-parameters against the goals (S goals only; pattern goals
    /// need the far field: [`crate::evaluate::score`]).
    pub fn fitness(&self, sp: &SParams) -> Result<Fitness, FitnessError> {
        fitness::evaluate_reading(&self.goals, sp, None, self.reading())
    }

    /// How the goals read S_ij: also from S_ji where the design is reciprocal
    /// (see [`Design::reciprocity`]), so that the drives of [`Design::drives_needed`] suffice.
    pub fn reading(&self) -> fitness::Reading {
        if self.reciprocity().is_ok() {
            fitness::Reading::Reciprocal
        } else {
            fitness::Reading::Direct
        }
    }

    /// The far-field settings: the file's section, or its defaults where
    /// only pattern goals ask for a far field; `None` without either.
    pub fn far_field(&self) -> Option<FarFieldSpec> {
        match &self.file.far_field {
            Some(f) => Some(f.clone()),
            None if self.goals.iter().any(|g| g.kind.is_pattern()) => Some(FarFieldSpec::default()),
            None => None,
        }
    }

    /// The frequencies (Hz) of the far field: the section's, and the sweep's
    /// inside the bands of the pattern goals; sorted.
    pub fn far_field_freqs(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.file.far_field.as_ref().map_or(vec![], |f| f.freqs.clone());
        for g in self.goals.iter().filter(|g| g.kind.is_pattern()) {
            v.extend(self.freqs().into_iter().filter(|&f| g.contains(f)));
        }
        v.sort_by(f64::total_cmp);
        v.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs().max(1.0));
        v
    }
}

/// RON as design files are written: `Fdtd(cell: 0.1)` for a variant holding a
/// struct, and `tan_delta: 0.02` for an optional field.
fn ron_options() -> ron::Options {
    use ron::extensions::Extensions;
    ron::Options::default()
        .with_default_extension(Extensions::UNWRAP_VARIANT_NEWTYPES)
        .with_default_extension(Extensions::IMPLICIT_SOME)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod primitive_tests;
