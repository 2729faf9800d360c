//! The rectilinear mesh every engine reads: per axis the node coordinates
//! ("lines", padding included), the primal spacings between them, the dual
//! spacings around each line and the cell centres. Yee's E components lie on
//! primal edges (length `d`), H components on dual edges (length `dual`);
//! TLM nodes sit at cell centres or on lines. Engines take every length from
//! here and derive none themselves.
//!
//! [`Mesh::uniform`] keeps the exact spacing it is given (`d[a][i] == d` bit
//! for bit and `lines[a][p] == origin + p d`), which is what keeps the answers
//! of uniform meshes identical to those of the uniform grid it replaced.

use serde::{Deserialize, Serialize};

use super::Axis;

/// Why a list of lines is not a mesh.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    #[error("{axis}: a mesh needs at least 2 lines per axis (got {got})")]
    TooFewLines { axis: &'static str, got: usize },
    #[error("{axis}: line {index} is not finite ({value})")]
    NotFinite { axis: &'static str, index: usize, value: f64 },
    #[error("{axis}: lines must increase strictly, but line {index} ({value} m) does not lie above line {prev_index} ({prev} m)")]
    NotIncreasing { axis: &'static str, index: usize, value: f64, prev_index: usize, prev: f64 },
}

/// A rectilinear mesh of `n[0] x n[1] x n[2]` cells. Cell `(i, j, k)` spans
/// `lines[0][i]..lines[0][i+1]` along x (and so on); x varies fastest in
/// [`Mesh::idx`]. Absorbing padding is part of the mesh (see `SimJob::pml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mesh {
    n: [usize; 3],
    lines: [Vec<f64>; 3],
    d: [Vec<f64>; 3],
    dual: [Vec<f64>; 3],
    centres: [Vec<f64>; 3],
    /// The one spacing of an axis built uniform, as given.
    uniform: [Option<f64>; 3],
}

/// Spacings that agree to this relative tolerance count as uniform (for
/// methods that need a uniform mesh and meshes built from line lists).
const UNIFORM_TOL: f64 = 1e-9;

impl Mesh {
    /// `n[a]` cells of size `d[a]` from `origin[a]` along each axis.
    pub fn uniform(n: [usize; 3], d: [f64; 3], origin: [f64; 3]) -> Mesh {
        let (x, y, z) = (uniform_axis(n[0], d[0], origin[0]), uniform_axis(n[1], d[1], origin[1]), uniform_axis(n[2], d[2], origin[2]));
        Mesh {
            n,
            lines: [x.0, y.0, z.0],
            d: [x.1, y.1, z.1],
            dual: [x.2, y.2, z.2],
            centres: [x.3, y.3, z.3],
            uniform: [Some(d[0]), Some(d[1]), Some(d[2])],
        }
    }

    /// A mesh through the given lines (padding included), checked.
    pub fn from_lines(lines: [Vec<f64>; 3]) -> Result<Mesh, MeshError> {
        for (a, l) in lines.iter().enumerate() {
            let axis = Axis::from_index(a).name();
            if l.len() < 2 {
                return Err(MeshError::TooFewLines { axis, got: l.len() });
            }
            if let Some(index) = l.iter().position(|x| !x.is_finite()) {
                return Err(MeshError::NotFinite { axis, index, value: l[index] });
            }
            if let Some(i) = (1..l.len()).find(|&i| l[i] <= l[i - 1]) {
                return Err(MeshError::NotIncreasing { axis, index: i, value: l[i], prev_index: i - 1, prev: l[i - 1] });
            }
        }
        let n = [lines[0].len() - 1, lines[1].len() - 1, lines[2].len() - 1];
        let d: [Vec<f64>; 3] = std::array::from_fn(|a| lines[a].windows(2).map(|w| w[1] - w[0]).collect());
        let dual = std::array::from_fn(|a| dual_of(&d[a]));
        let centres = std::array::from_fn(|a| lines[a].windows(2).map(|w| 0.5 * (w[0] + w[1])).collect());
        let uniform = std::array::from_fn(|a| d[a].iter().all(|&x| x == d[a][0]).then_some(d[a][0]));
        Ok(Mesh { n, lines, d, dual, centres, uniform })
    }

    /// This mesh with axis `a` replaced by `n[a]` uniform cells of size `d`
    /// from the same first line.
    pub fn with_uniform_axis(&self, a: usize, d: f64) -> Mesh {
        let mut m = self.clone();
        (m.lines[a], m.d[a], m.dual[a], m.centres[a]) = uniform_axis(self.n[a], d, self.lines[a][0]);
        m.uniform[a] = Some(d);
        m
    }

    /// Cells per axis.
    pub fn n(&self) -> [usize; 3] {
        self.n
    }
    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }
    /// Linear index of cell (i, j, k); x varies fastest.
    #[inline]
    pub fn idx(&self, i: usize, j: usize, k: usize) -> usize {
        (k * self.n[1] + j) * self.n[0] + i
    }
    /// The `n[a] + 1` node coordinates (metres) along axis `a`.
    pub fn lines(&self, a: usize) -> &[f64] {
        &self.lines[a]
    }
    /// Coordinate (metres) of line `p` along `axis` (p = 0..=n).
    pub fn plane(&self, axis: Axis, p: usize) -> f64 {
        self.lines[axis.index()][p]
    }
    /// Low corner of the mesh (metres).
    pub fn origin(&self) -> [f64; 3] {
        [self.lines[0][0], self.lines[1][0], self.lines[2][0]]
    }
    /// Primal spacings along `a`: `d[i] = lines[i+1] - lines[i]` (n of them).
    pub fn d(&self, a: usize) -> &[f64] {
        &self.d[a]
    }
    /// Size of cell `i` along `a`.
    pub fn cell(&self, a: usize, i: usize) -> f64 {
        self.d[a][i]
    }
    /// Dual spacings along `a` (n + 1): around line p the mean of its two
    /// cells; at the two end lines, the end cell.
    pub fn dual(&self, a: usize) -> &[f64] {
        &self.dual[a]
    }
    /// Cell centres along `a` (n of them).
    pub fn centres(&self, a: usize) -> &[f64] {
        &self.centres[a]
    }
    /// Smallest cell along `a`.
    pub fn min_d(&self, a: usize) -> f64 {
        self.d[a].iter().copied().fold(f64::INFINITY, f64::min)
    }
    /// Largest cell along `a`.
    pub fn max_d(&self, a: usize) -> f64 {
        self.d[a].iter().copied().fold(0.0, f64::max)
    }
    /// The spacing of axis `a` when its cells are all equal (to 1e-9): as built
    /// for a uniform axis, else the mean cell.
    pub fn uniform_d(&self, a: usize) -> Option<f64> {
        if let Some(d) = self.uniform[a] {
            return Some(d);
        }
        let n = self.n[a] as f64;
        let mean = (self.lines[a][self.n[a]] - self.lines[a][0]) / n;
        let (lo, hi) = (self.min_d(a), self.max_d(a));
        (hi - lo <= UNIFORM_TOL * mean).then_some(mean)
    }
    /// Whether every cell along `a` has the same size (see [`Mesh::uniform_d`]).
    pub fn is_uniform(&self, a: usize) -> bool {
        self.uniform_d(a).is_some()
    }
    /// The uniform spacing per axis, or the first axis that is not uniform.
    pub fn uniform_spacing(&self) -> Result<[f64; 3], Axis> {
        let mut d = [0.0; 3];
        for (a, x) in d.iter_mut().enumerate() {
            *x = self.uniform_d(a).ok_or(Axis::from_index(a))?;
        }
        Ok(d)
    }
    /// Ratio of neighbouring cells' sizes, largest over the axis (>= 1).
    pub fn max_grading(&self, a: usize) -> f64 {
        self.d[a].windows(2).map(|w| (w[1] / w[0]).max(w[0] / w[1])).fold(1.0, f64::max)
    }
}

/// Lines, primal and dual spacings and centres of `n` cells of size `d` from `origin`.
fn uniform_axis(n: usize, d: f64, origin: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let lines = (0..=n).map(|p| origin + p as f64 * d).collect();
    let centres = (0..n).map(|i| origin + (i as f64 + 0.5) * d).collect();
    (lines, vec![d; n], vec![d; n + 1], centres)
}

fn dual_of(d: &[f64]) -> Vec<f64> {
    let n = d.len();
    (0..=n)
        .map(|p| match (p, n) {
            (_, 0) => 0.0,
            (0, _) => d[0],
            (p, n) if p == n => d[n - 1],
            (p, _) => 0.5 * (d[p - 1] + d[p]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_mesh_keeps_its_spacing_exactly() {
        let d = [0.254e-3, 3.556e-3, 36e-3 / 142.0];
        let o = [0.0, 0.0, -10.0 * d[2]];
        let m = Mesh::uniform([28, 1, 162], d, o);
        for a in 0..3 {
            assert!(m.d(a).iter().all(|x| x.to_bits() == d[a].to_bits()));
            assert!(m.dual(a).iter().all(|x| x.to_bits() == d[a].to_bits()));
            for p in 0..=m.n()[a] {
                assert_eq!(m.lines(a)[p].to_bits(), (o[a] + p as f64 * d[a]).to_bits());
            }
            assert_eq!(m.uniform_d(a), Some(d[a]));
            assert_eq!(m.min_d(a), d[a]);
        }
        assert_eq!(m.cells(), 28 * 162);
        assert_eq!(m.idx(1, 0, 2), 2 * 28 + 1);
    }

    #[test]
    fn graded_lines_give_primal_dual_and_centres() {
        let m = Mesh::from_lines([vec![0.0, 1.0, 3.0, 7.0], vec![0.0, 2.0], vec![-1.0, 0.0, 1.0]]).unwrap();
        assert_eq!(m.n(), [3, 1, 2]);
        assert_eq!(m.d(0), [1.0, 2.0, 4.0]);
        assert_eq!(m.dual(0), [1.0, 1.5, 3.0, 4.0]);
        assert_eq!(m.centres(0), [0.5, 2.0, 5.0]);
        assert_eq!((m.min_d(0), m.max_d(0), m.max_grading(0)), (1.0, 4.0, 2.0));
        assert!(!m.is_uniform(0) && m.is_uniform(1) && m.is_uniform(2));
        assert_eq!(m.uniform_spacing(), Err(Axis::X));
        let u = m.with_uniform_axis(0, 2.0);
        assert_eq!(u.lines(0), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(u.uniform_spacing(), Ok([2.0, 2.0, 1.0]));
    }

    #[test]
    fn bad_lines_are_refused_with_the_place() {
        let e = Mesh::from_lines([vec![0.0, 1.0], vec![0.0, 1.0, 1.0], vec![0.0, 1.0]]).unwrap_err();
        assert_eq!(e, MeshError::NotIncreasing { axis: "y", index: 2, value: 1.0, prev_index: 1, prev: 1.0 });
        assert!(e.to_string().contains("line 2"));
        assert!(matches!(Mesh::from_lines([vec![0.0], vec![0.0, 1.0], vec![0.0, 1.0]]), Err(MeshError::TooFewLines { axis: "x", .. })));
        assert!(matches!(Mesh::from_lines([vec![0.0, 1.0], vec![0.0, 1.0], vec![0.0, f64::NAN]]), Err(MeshError::NotFinite { axis: "z", .. })));
    }
}
