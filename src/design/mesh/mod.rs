//! Meshers: lay the lines of a [`Mesh`] over a [`Geometry`] (in metres),
//! padding included. The design's engine options choose one
//! ([`from_design`]): `cell` asks for the uniform rule ([`UniformMesher`]);
//! otherwise the mesh follows the geometry ([`AutoMesher`], which reads
//! [`Geometry::events`] and meshes each axis with [`axis`]).

pub mod auto;
pub mod axis;
pub mod report;
pub mod uniform;

use std::collections::BTreeMap;

pub use auto::{AutoMesher, AutoSettings};
pub use axis::Topology;
pub use uniform::UniformMesher;

use super::budget::MemoryBudget;
use super::error::DesignError;
use super::expr::Scope;
use super::format::{AutoMeshSpec, DesignFile, MeshSpec};
use super::geometry::{Geometry, Units};
use crate::job::{Axis, Mesh};

/// A mesh laid over a geometry: its lines and how many cells of each face
/// are absorbing padding. The domain spans lines `pml[a][0]` to
/// `n[a] - pml[a][1]` along each axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Meshed {
    pub mesh: Mesh,
    /// Padding cells on each face, `[axis][low, high]`.
    pub pml: [[usize; 2]; 3],
}

impl Meshed {
    /// Cells of the domain (without padding) along `a`.
    pub fn domain_cells(&self, a: usize) -> usize {
        self.mesh.n()[a] - self.pml[a][0] - self.pml[a][1]
    }
}

/// Lays lines over a geometry.
pub trait Mesher {
    /// The mesh of `geo`; errors name the design field at fault (`units`
    /// knows the file and how to print lengths).
    fn mesh(&self, geo: &Geometry, units: &Units) -> Result<Meshed, DesignError>;
}

/// The mesher the design's engine options ask for, its lengths evaluated at
/// `values`.
/// `reference`: the counts an automatic mesh keeps where they fit.
pub(crate) fn from_design(
    d: &DesignFile,
    file: &str,
    values: &BTreeMap<String, f64>,
    budget: MemoryBudget,
    reference: Option<std::sync::Arc<[Topology; 3]>>,
) -> Result<Box<dyn Mesher>, DesignError> {
    match auto_from_design(d, file, values, budget)? {
        Some(mut m) => {
            m.reference = reference;
            Ok(Box::new(m))
        }
        None => {
            let units = Units::of(d, file);
            let opts = d.engine.options();
            let scope = Scope::new(file, &d.constants, values);
            let cell = opts.cell.as_ref().map(|e| scope.eval(e, "engine.cell")).transpose()?.unwrap_or(f64::NAN) * units.u;
            if !(cell > 0.0 && cell.is_finite()) {
                return Err(units.err("engine.cell", format!("must be positive (got {})", units.show(cell))));
            }
            Ok(Box::new(UniformMesher { cell, pml: opts.pml, budget }))
        }
    }
}

/// The automatic mesher of the design (None when it asks for uniform cells).
pub(crate) fn auto_from_design(
    d: &DesignFile,
    file: &str,
    values: &BTreeMap<String, f64>,
    budget: MemoryBudget,
) -> Result<Option<AutoMesher>, DesignError> {
    let units = Units::of(d, file);
    let opts = d.engine.options();
    let scope = Scope::new(file, &d.constants, values);
    let len = |e: &super::expr::Expr, at: &str| -> Result<f64, DesignError> {
        let v = scope.eval(e, at)? * units.u;
        if !(v > 0.0 && v.is_finite()) {
            return Err(units.err(at, format!("must be positive (got {})", units.show(v))));
        }
        Ok(v)
    };
    if opts.cell.is_some() {
        return Ok(None);
    }
    let spec = match &opts.mesh {
        Some(MeshSpec::Auto(s)) => s.clone(),
        None => AutoMeshSpec::default(),
    };
    let opt = |e: &Option<super::expr::Expr>, at: &str| e.as_ref().map(|e| len(e, at)).transpose();
    let mut forced: [Option<Vec<f64>>; 3] = [None, None, None];
    for a in Axis::ALL {
        if let Some(v) = spec.lines.axis(a) {
            let mut out = Vec::with_capacity(v.len());
            for (i, e) in v.iter().enumerate() {
                out.push(scope.eval(e, &format!("engine.mesh.lines.{}[{i}]", a.name()))? * units.u);
            }
            forced[a.index()] = Some(out);
        }
    }
    let settings = AutoSettings {
        cells_per_wavelength: spec.cells_per_wavelength,
        f_top: d.band.stop,
        max_cell: opt(&spec.max_cell, "engine.mesh.max_cell")?,
        min_cell: opt(&spec.min_cell, "engine.mesh.min_cell")?,
        edge_cell: opt(&spec.edge_cell, "engine.mesh.edge_cell")?,
        max_ratio: spec.max_ratio,
        edges: spec.edges,
        slab_cells: spec.slab_cells,
        pml: opts.pml,
        forced,
    };
    Ok(Some(AutoMesher { settings, budget, reference: None }))
}
