//! Whether a design's S-matrix is symmetric (S_ij = S_ji), and so which ports
//! its goals need driven: a goal on S_ij reads column j (port j driven) or, for
//! a reciprocal design, the same numbers from column i. The GA then drives the
//! fewest ports that give every goal its column ([`Design::drives_needed`]).
//!
//! Reciprocity (Lorentz; Pozar, *Microwave Engineering*, 4th ed., 1.9 and 4.2)
//! holds for media whose permittivity, permeability and conductivity are
//! symmetric tensors, which every medium emvolve models is (scalars). Whether
//! the *computed* S-matrix is symmetric also takes port waves whose products
//! are the power the port carries: lumped ports (V I is the power; power waves
//! on real reference resistances give S = S^T whatever the resistances), or
//! waveguide ports of one cross-section (their modal V and I are integrals over
//! it, so V I is the power times one factor common to all of them). Media,
//! boundaries and port kinds are matched exhaustively, so that a new one
//! (a magnetised ferrite, a biased plasma, another mode normalisation) cannot
//! compile until it says whether it keeps the shortcut.
//!
//! The two ways of getting S_ij agree to the discretisation and truncation
//! error of the simulations, not bit for bit: driving port i and port j are
//! different runs (different sources, different decays).

use super::format::{FacePair, MaterialSpec, PlaneSpec, PortSpec};
use super::Design;
use crate::fitness::GoalKind;
use crate::job::{Axis, Boundary};

/// Above this many candidate ports the cover is not searched exhaustively:
/// every goal's own column is driven instead (still correct, maybe more drives).
const MAX_SEARCHED_PORTS: usize = 16;

impl Design {
    /// `Ok` when the design's S-matrix is symmetric (S_ij = S_ji), so that a
    /// goal's S_ij may be read from port i's drive; else why not.
    pub fn reciprocity(&self) -> Result<(), String> {
        for m in self.file.materials.values() {
            match m {
                // Scalar eps, sigma and mu: symmetric tensors.
                MaterialSpec::Dielectric { .. } | MaterialSpec::Dispersive { .. } => {}
                // A scalar surface impedance is reciprocal too.
                MaterialSpec::Pec | MaterialSpec::Metal { .. } => {}
            }
        }
        for pair in [self.file.boundaries.x, self.file.boundaries.y, self.file.boundaries.z] {
            let faces = match pair {
                FacePair::Pec | FacePair::Pmc | FacePair::Absorbing => vec![],
                FacePair::Faces(a, b) => vec![a, b],
            };
            for f in faces {
                match f {
                    // Perfect walls and the CPML (a complex coordinate stretch) are reciprocal.
                    Boundary::Pec | Boundary::Pmc | Boundary::Absorbing => {}
                }
            }
        }
        let (mut lumped, mut guide_axes) = (0usize, Vec::<Axis>::new());
        for p in &self.file.ports {
            match p {
                PortSpec::Lumped { .. } => lumped += 1,
                PortSpec::Waveguide { plane, .. } => {
                    let axis = match plane {
                        PlaneSpec::X(_) => Axis::X,
                        PlaneSpec::Y(_) => Axis::Y,
                        PlaneSpec::Z(_) => Axis::Z,
                    };
                    if !guide_axes.contains(&axis) {
                        guide_axes.push(axis);
                    }
                }
            }
        }
        if lumped > 0 && !guide_axes.is_empty() {
            return Err("lumped and waveguide ports together: a guide's modal voltage and current are normalised to its cross-section, so S_ij and S_ji differ by that factor".into());
        }
        if guide_axes.len() > 1 {
            return Err("waveguide ports on planes normal to different axes have different cross-sections, so S_ij and S_ji differ by their modal normalisations".into());
        }
        Ok(())
    }

    /// The 0-based port indices that must be driven for the goals: S_ij needs
    /// port j driven, or port i where the design is reciprocal
    /// ([`Design::reciprocity`]); the far field needs its own port's drive. Of
    /// the sets that give every goal its column, the smallest, then the one
    /// that reads the most goals directly, then the lowest ports.
    pub fn drives_needed(&self) -> Vec<usize> {
        let reciprocal = self.reciprocity().is_ok();
        // Each S goal's alternatives: (its own column j, port i's column if reciprocal).
        let wants: Vec<(usize, Option<usize>)> = self
            .goals
            .iter()
            .filter_map(|g| match g.kind {
                GoalKind::S { i, j } => Some((j.checked_sub(1)?, if reciprocal && i != j { i.checked_sub(1) } else { None })),
                _ => None,
            })
            .collect();
        let forced: Vec<usize> = self.far_field().map(|f| f.port - 1).into_iter().collect();
        cover(&wants, &forced)
    }
}

/// The drives (sorted) that give every want `(direct, alternative)` a column,
/// `forced` included: the fewest, then the most wants read directly, then the
/// lexicographically lowest.
pub(crate) fn cover(wants: &[(usize, Option<usize>)], forced: &[usize]) -> Vec<usize> {
    let mut ports: Vec<usize> = wants.iter().flat_map(|&(d, a)| std::iter::once(d).chain(a)).chain(forced.iter().copied()).collect();
    ports.sort_unstable();
    ports.dedup();
    let direct_only = || {
        let mut v: Vec<usize> = wants.iter().map(|w| w.0).chain(forced.iter().copied()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if ports.len() > MAX_SEARCHED_PORTS {
        return direct_only();
    }
    let bit = |p: usize| 1u32 << ports.iter().position(|&q| q == p).unwrap_or(0);
    let must: u32 = forced.iter().map(|&p| bit(p)).fold(0, |a, b| a | b);
    // (drives, -direct reads, the set) as the ranking key; the lowest wins.
    let mut best: Option<(u32, usize, Vec<usize>)> = None;
    for mask in 0u32..(1u32 << ports.len()) {
        if mask & must != must {
            continue;
        }
        let has = |p: usize| mask & bit(p) != 0;
        if !wants.iter().all(|&(d, a)| has(d) || a.is_some_and(has)) {
            continue;
        }
        let direct = wants.iter().filter(|w| has(w.0)).count();
        let set: Vec<usize> = ports.iter().copied().filter(|&p| has(p)).collect();
        let key = (mask.count_ones(), wants.len() - direct, set);
        if best.as_ref().is_none_or(|b| key < *b) {
            best = Some(key);
        }
    }
    best.map_or_else(direct_only, |b| b.2)
}

#[cfg(test)]
mod tests {
    use super::cover;

    #[test]
    fn the_cover_is_smallest_then_direct_then_lowest() {
        // S11 and S21 (column 1): port 1 alone.
        assert_eq!(cover(&[(0, None), (0, Some(1))], &[]), [0]);
        // S12 alone: port 2 reads it directly, port 1 through reciprocity; direct wins.
        assert_eq!(cover(&[(1, Some(0))], &[]), [1]);
        // S11 and S12: port 1 gives both (S12 = S21), one drive instead of two.
        assert_eq!(cover(&[(0, None), (1, Some(0))], &[]), [0]);
        // S11 and S22 need both columns whatever reciprocity says.
        assert_eq!(cover(&[(0, None), (1, None)], &[]), [0, 1]);
        // Not reciprocal: S11 and S12 need both.
        assert_eq!(cover(&[(0, None), (1, None)], &[]), [0, 1]);
        // S21 and S12 both: one column gives both; the lower port.
        assert_eq!(cover(&[(0, Some(1)), (1, Some(0))], &[]), [0]);
        // A forced drive (the far field's port 2) serves S12 directly and S21 through reciprocity.
        assert_eq!(cover(&[(0, Some(1)), (1, Some(0))], &[1]), [1]);
        // Three ports, S31, S32, S21: port 1 gives S21, S31; S32 = S23 needs port 2 or 3.
        assert_eq!(cover(&[(0, Some(2)), (1, Some(2)), (0, Some(1))], &[]), [0, 1]);
        // Nothing asked: nothing driven.
        assert!(cover(&[], &[]).is_empty());
    }
}
