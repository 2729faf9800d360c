//! The Huygens box of a far-field (NF2FF) job: a closed surface of mesh
//! planes a few cells inside the absorbing layers, recorded as one
//! [`Monitor::FieldDft`] per face (tangential E and H, `DftFields::Tangential`).
//! Plain field DFT monitors, so every engine that runs those (CPU, CUDA)
//! records the box; `analysis::nf2ff` turns them into far fields. A far-field
//! job also records the box's [`Monitor::Absorbed`] (what its lossy parts
//! absorb inside the box), the second route to the radiation efficiency.
//!
//! An open problem has absorbing faces all round, or all round but one PEC or
//! PMC face (a ground plane, a symmetry plane): that face is not part of the
//! box, which reaches down to it, and the transform adds the image currents.

use super::{Axis, Boundary, DftFields, Monitor, SimJob};

/// Monitor names of the faces start with this ("nf2ff x-", "nf2ff z+").
pub const FACE_PREFIX: &str = "nf2ff ";

/// The name of the absorbed-power monitor over the box (the power lost
/// inside it, for the efficiency by the second route: accepted minus absorbed).
pub const ABSORBED: &str = "absorbed power";

/// Cells between the absorbing layer's inner edge and the box, by default:
/// far enough from the CPML's grading, close enough to enclose everything.
pub const DEFAULT_GAP: usize = 3;

/// A mirror plane of the far-field problem: the domain face `side` (0 low,
/// 1 high) along `axis`, PEC or PMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mirror {
    pub axis: Axis,
    pub side: usize,
    pub boundary: Boundary,
}

/// The closed surface: mesh nodes `lo..=hi`, with a face on each side that
/// is not the mirror plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuygensBox {
    pub lo: [usize; 3],
    pub hi: [usize; 3],
    pub mirror: Option<Mirror>,
}

/// Why a problem has no far field (the problem named, e.g. "boundaries x are Pec/Pec").
pub fn open_problem(boundaries: &[[Boundary; 2]; 3]) -> Result<Option<Mirror>, String> {
    let closed: Vec<(Axis, usize, Boundary)> = Axis::ALL
        .iter()
        .flat_map(|&a| (0..2).map(move |s| (a, s, boundaries[a.index()][s])))
        .filter(|x| x.2 != Boundary::Absorbing)
        .collect();
    match closed.as_slice() {
        [] => Ok(None),
        [(axis, side, boundary)] => Ok(Some(Mirror { axis: *axis, side: *side, boundary: *boundary })),
        _ => {
            let names: Vec<String> =
                closed.iter().map(|(a, s, b)| format!("{}{} is {b:?}", a.name(), if *s == 0 { "-" } else { "+" })).collect();
            Err(format!(
                "a far field needs an open problem (absorbing faces all round, or all but one PEC/PMC ground or symmetry plane), \
                 but faces {} (a closed or waveguide problem radiates nowhere)",
                names.join(", ")
            ))
        }
    }
}

impl HuygensBox {
    /// The box of `job`, `gap` cells inside its absorbing layers.
    pub fn place(job: &SimJob, gap: usize) -> Result<HuygensBox, String> {
        let mirror = open_problem(&job.boundaries)?;
        let n = job.mesh.n();
        let mut lo = [0; 3];
        let mut hi = [0; 3];
        for a in 0..3 {
            let is_mirror = |s: usize| mirror.is_some_and(|m| m.axis.index() == a && m.side == s);
            lo[a] = if is_mirror(0) { 0 } else { job.pml[a][0].saturating_add(gap) };
            hi[a] = if is_mirror(1) { n[a] } else { n[a].saturating_sub(job.pml[a][1].saturating_add(gap)) };
            if hi[a] < lo[a].saturating_add(2) {
                return Err(format!(
                    "the far-field box {gap} cells inside the absorbing layers leaves no room along {} ({} cells in all, {}+{} absorbing): \
                     lower far_field.gap or widen the domain",
                    Axis::from_index(a).name(),
                    n[a],
                    job.pml[a][0],
                    job.pml[a][1]
                ));
            }
        }
        // Every port inside (not on) the box: their fields are what radiates.
        for p in &job.ports {
            if let super::PortKind::Lumped { axis, start, len, .. } = p.kind {
                for a in 0..3 {
                    let end = start[a] + if a == axis.index() { len } else { 0 };
                    let inside_lo = start[a] > lo[a] || mirror.is_some_and(|m| m.axis.index() == a && m.side == 0);
                    let inside_hi = end < hi[a] || mirror.is_some_and(|m| m.axis.index() == a && m.side == 1);
                    if !(inside_lo && inside_hi) {
                        return Err(format!(
                            "port `{}` is not inside the far-field box (nodes {}..={} along {}): lower far_field.gap",
                            p.name,
                            lo[a],
                            hi[a],
                            Axis::from_index(a).name()
                        ));
                    }
                }
            }
        }
        Ok(HuygensBox { lo, hi, mirror })
    }

    /// The faces: (normal axis, side 0 = low / 1 = high).
    pub fn faces(&self) -> Vec<(Axis, usize)> {
        Axis::ALL
            .iter()
            .flat_map(|&a| (0..2).map(move |s| (a, s)))
            .filter(|&(a, s)| !self.mirror.is_some_and(|m| m.axis == a && m.side == s))
            .collect()
    }

    /// The absorbed-power monitor over the box at `freqs` (Hz): what the box
    /// holds of lossy metal, dielectric and loads; records nothing without them.
    pub fn absorbed(&self, freqs: &[f64]) -> Monitor {
        Monitor::Absorbed { name: ABSORBED.into(), lo: self.lo, hi: self.hi, freqs: freqs.to_vec() }
    }

    /// One field DFT monitor per face at `freqs` (Hz).
    pub fn monitors(&self, freqs: &[f64]) -> Vec<Monitor> {
        self.faces()
            .into_iter()
            .map(|(a, s)| {
                let i = a.index();
                let (mut lo, mut hi) = (self.lo, self.hi);
                let plane = if s == 0 { self.lo[i] } else { self.hi[i] };
                lo[i] = plane;
                hi[i] = plane;
                Monitor::FieldDft { name: face_name(a, s), lo, hi, fields: DftFields::Tangential(a), freqs: freqs.to_vec() }
            })
            .collect()
    }

    /// The box whose faces `job` monitors, if it has any (their extents give it).
    pub fn of_job(job: &SimJob) -> Option<HuygensBox> {
        let faces: Vec<_> = job
            .monitors
            .iter()
            .filter_map(|m| match m {
                Monitor::FieldDft { name, lo, hi, .. } if name.starts_with(FACE_PREFIX) => Some((*lo, *hi)),
                _ => None,
            })
            .collect();
        if faces.is_empty() {
            return None;
        }
        let lo = std::array::from_fn(|a| faces.iter().map(|f| f.0[a]).min().unwrap_or(0));
        let hi = std::array::from_fn(|a| faces.iter().map(|f| f.1[a]).max().unwrap_or(0));
        let mirror = open_problem(&job.boundaries).ok().flatten();
        Some(HuygensBox { lo, hi, mirror })
    }
}

/// "nf2ff x-", "nf2ff z+".
pub fn face_name(a: Axis, side: usize) -> String {
    format!("{FACE_PREFIX}{}{}", a.name(), if side == 0 { "-" } else { "+" })
}

/// The face a monitor name stands for, if it is one.
pub fn parse_face(name: &str) -> Option<(Axis, usize)> {
    let rest = name.strip_prefix(FACE_PREFIX)?;
    let mut c = rest.chars();
    let a = match c.next()? {
        'x' => Axis::X,
        'y' => Axis::Y,
        'z' => Axis::Z,
        _ => return None,
    };
    let s = match c.next()? {
        '-' => 0,
        '+' => 1,
        _ => return None,
    };
    c.next().is_none().then_some((a, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Boundary::{Absorbing, Pec, Pmc};

    #[test]
    fn face_names_round_trip_and_others_are_not_faces() {
        for a in Axis::ALL {
            for s in 0..2 {
                assert_eq!(parse_face(&face_name(a, s)), Some((a, s)));
            }
        }
        for bad in ["nf2ff", "nf2ff w-", "nf2ff x", "nf2ff x-y", "field x-"] {
            assert_eq!(parse_face(bad), None, "{bad}");
        }
    }

    #[test]
    fn open_problems_have_at_most_one_mirror_face() {
        assert_eq!(open_problem(&[[Absorbing; 2]; 3]), Ok(None));
        let ground = [[Absorbing; 2], [Absorbing; 2], [Pec, Absorbing]];
        assert_eq!(open_problem(&ground), Ok(Some(Mirror { axis: Axis::Z, side: 0, boundary: Pec })));
        let sym = [[Absorbing, Pmc], [Absorbing; 2], [Absorbing; 2]];
        assert_eq!(open_problem(&sym), Ok(Some(Mirror { axis: Axis::X, side: 1, boundary: Pmc })));
        let guide = [[Pec; 2], [Pec; 2], [Absorbing; 2]];
        let e = open_problem(&guide).unwrap_err();
        assert!(e.contains("x- is Pec, x+ is Pec, y- is Pec, y+ is Pec") && e.contains("radiates nowhere"), "{e}");
    }
}
