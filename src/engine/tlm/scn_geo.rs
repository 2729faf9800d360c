//! The SCN's node mesh as the step reads it: the node flags (dead, special,
//! reflecting faces and their shorts), the coefficient kinds and table, and
//! the runs of alike nodes that the step sweeps ([`node_runs`]). Built by
//! `Geo::build` in scn.rs; swept by scn_runs.rs and scn.rs.

use super::scn_node::Coef;

/// Flag of a PEC node: never stepped.
pub(super) const DEAD: u16 = 1 << 12;
/// Flag of a port or guide-end node: stepped by the port code, not in a run.
pub(super) const SPECIAL: u16 = 1 << 13;
/// Face bit f (= 2*axis + side): the link pair on that face is reflected, not connected.
pub(super) const fn face_bit(f: usize) -> u16 {
    1 << f
}
/// Override bit of face f: the reflection is -1 (PEC neighbour or sheet).
pub(super) const fn short_bit(f: usize) -> u16 {
    1 << (6 + f)
}

/// Geometry and coefficients of the node mesh (read-only while stepping).
pub(crate) struct Geo {
    pub n: [usize; 3],
    pub stride: [usize; 3],
    pub flags: Vec<u16>,
    pub kind: Vec<u32>,
    pub coefs: Vec<Coef>,
    /// Whether any node has stubs or loss (else the stub arrays are empty).
    pub loaded: bool,
    /// The stepped nodes in runs of alike ones ([`node_runs`]; swept by
    /// scn_runs.rs); rebuilt once the ports have flagged theirs special.
    pub runs: Vec<Run>,
}

/// Consecutive nodes `[start, end)` of one z-plane with equal flags and kind
/// (never DEAD or SPECIAL).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run {
    pub start: usize,
    pub end: usize,
    pub flags: u16,
    pub kind: u32,
}

/// The runs of every node that the step updates (not DEAD, not SPECIAL).
pub(crate) fn node_runs(flags: &[u16], kind: &[u32], plane: usize) -> Vec<Run> {
    let mut runs = vec![];
    let mut i = 0;
    while i < flags.len() {
        if flags[i] & (DEAD | SPECIAL) != 0 {
            i += 1;
            continue;
        }
        let (s, f, k) = (i, flags[i], kind[i]);
        let plane_end = (i / plane + 1) * plane;
        while i < plane_end && flags[i] == f && kind[i] == k {
            i += 1;
        }
        runs.push(Run { start: s, end: i, flags: f, kind: k });
    }
    runs
}
