//! The uniform mesher: cells of one size per axis, stretched to fit the domain.

use super::{Meshed, Mesher};
use crate::design::budget::{check_grid, MemoryBudget};
use crate::design::error::DesignError;
use crate::design::geometry::{Geometry, Units};
use crate::job::{Axis, Boundary, Mesh};

/// Uniform cells per axis: `n = round(L / cell)` (at least 1) and `d = L / n`,
/// so a cell differs from `cell` by at most half a cell spread over the whole
/// domain and the domain's faces always lie on lines. The invariant axis has
/// one cell spanning the domain. Each absorbing face gets `pml` cells of the
/// same size outside the domain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UniformMesher {
    /// Cell size (metres, > 0).
    pub cell: f64,
    /// Padding cells on every absorbing face.
    pub pml: usize,
    /// The grid is refused from its counts, before its lines exist, above this.
    pub budget: MemoryBudget,
}

impl Mesher for UniformMesher {
    fn mesh(&self, geo: &Geometry, units: &Units) -> Result<Meshed, DesignError> {
        let mut n = [0usize; 3];
        let mut d = [0.0; 3];
        let mut origin = [0.0; 3];
        let mut pml = [[0usize; 2]; 3];
        for a in Axis::ALL {
            let i = a.index();
            let l = geo.domain[i][1] - geo.domain[i][0];
            let n_dom = if geo.collapse == Some(a) { 1 } else { ((l / self.cell).round() as usize).max(1) };
            d[i] = l / n_dom as f64;
            for s in 0..2 {
                pml[i][s] = if geo.boundaries[i][s] == Boundary::Absorbing { self.pml } else { 0 };
            }
            n[i] = n_dom.saturating_add(pml[i][0]).saturating_add(pml[i][1]);
            origin[i] = geo.domain[i][0] - pml[i][0] as f64 * d[i];
        }
        check_grid(n, self.budget, &units.file)?;
        Ok(Meshed { mesh: Mesh::uniform(n, d, origin), pml })
    }
}
