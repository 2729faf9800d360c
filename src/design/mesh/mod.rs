//! Meshers: lay the lines of a [`Mesh`] over a [`Geometry`] (in metres),
//! padding included. The design's engine options choose one
//! ([`from_design`]); today's only mesher is [`UniformMesher`], the uniform
//! rule. A mesher that follows the geometry reads [`Geometry::events`].

pub mod uniform;

use std::collections::BTreeMap;

pub use uniform::UniformMesher;

use super::error::DesignError;
use super::expr::Scope;
use super::format::DesignFile;
use super::geometry::{Geometry, Units};
use crate::job::Mesh;

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

/// The mesher the design's engine options ask for, its lengths evaluated at `values`.
pub(crate) fn from_design(d: &DesignFile, file: &str, values: &BTreeMap<String, f64>) -> Result<Box<dyn Mesher>, DesignError> {
    let units = Units::of(d, file);
    let opts = d.engine.options();
    let scope = Scope::new(file, &d.constants, values);
    let cell = scope.eval(&opts.cell, "engine.cell")? * units.u;
    if cell <= 0.0 {
        return Err(units.err("engine.cell", format!("must be positive (got {})", units.show(cell))));
    }
    Ok(Box::new(UniformMesher { cell, pml: opts.pml }))
}
