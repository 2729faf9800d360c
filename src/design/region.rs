//! Plane regions — polygons, discs and annuli in the `(u, v)` plane of an
//! axis — and what the voxeliser and mesher need from them: whether a point
//! lies inside (the cell-centre rule), which parts of a segment lie inside
//! (exact, for the conformal edge and face fractions), their extremes (the
//! mesher's lines) and the checks on a polygon as written.

/// A region of the plane normal to some axis, in metres, coordinates `(u, v)`
/// in the order of [`crate::job::Axis::others`].
#[derive(Debug, Clone, PartialEq)]
pub enum Region {
    /// A simple polygon (even-odd rule), vertices in order, not closed.
    Polygon(Vec<[f64; 2]>),
    /// Points within `r` of `c` and not within `r_in` (0: a full disc).
    Disc { c: [f64; 2], r: f64, r_in: f64 },
}

impl Region {
    /// `(min, max)` corners of the bounding box.
    pub fn bbox(&self) -> ([f64; 2], [f64; 2]) {
        match self {
            Region::Polygon(p) => {
                let mut lo = [f64::INFINITY; 2];
                let mut hi = [f64::NEG_INFINITY; 2];
                for q in p {
                    for k in 0..2 {
                        lo[k] = lo[k].min(q[k]);
                        hi[k] = hi[k].max(q[k]);
                    }
                }
                (lo, hi)
            }
            Region::Disc { c, r, .. } => ([c[0] - r, c[1] - r], [c[0] + r, c[1] + r]),
        }
    }

    pub fn contains(&self, p: [f64; 2]) -> bool {
        match self {
            Region::Polygon(v) => {
                let mut inside = false;
                let n = v.len();
                for i in 0..n {
                    let (a, b) = (v[i], v[(i + 1) % n]);
                    if (a[1] > p[1]) != (b[1] > p[1]) {
                        let x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
                        if p[0] < x {
                            inside = !inside;
                        }
                    }
                }
                inside
            }
            Region::Disc { c, r, r_in } => {
                let d2 = (p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2);
                d2 <= r * r && d2 >= r_in * r_in
            }
        }
    }

    /// `contains`, with the boundary (to within `tol`) counted inside: an
    /// edge lying on a metal face is metal.
    pub fn contains_closed(&self, p: [f64; 2], tol: f64) -> bool {
        if self.contains(p) {
            return true;
        }
        match self {
            Region::Polygon(v) => {
                let n = v.len();
                (0..n).any(|i| seg_dist(p, v[i], v[(i + 1) % n]) <= tol)
            }
            Region::Disc { c, r, r_in } => {
                let d = (p[0] - c[0]).hypot(p[1] - c[1]);
                (d - r).abs() <= tol || (*r_in > 0.0 && (d - r_in).abs() <= tol)
            }
        }
    }

    /// The parameter intervals `t in [0, 1]` of the segment `a + t (b - a)`
    /// that lie inside (boundary within `tol` included), sorted and disjoint. Exact up to rounding, and
    /// continuous in the region's coordinates (what makes conformal edge
    /// fractions move smoothly with the parameters).
    pub fn segment_inside(&self, a: [f64; 2], b: [f64; 2], tol: f64) -> Vec<(f64, f64)> {
        let d = [b[0] - a[0], b[1] - a[1]];
        let mut cuts = vec![0.0, 1.0];
        match self {
            Region::Polygon(v) => {
                let n = v.len();
                for i in 0..n {
                    let (p, q) = (v[i], v[(i + 1) % n]);
                    let e = [q[0] - p[0], q[1] - p[1]];
                    let den = d[0] * e[1] - d[1] * e[0];
                    if den.abs() < 1e-300 {
                        continue; // parallel: its ends are crossings of its neighbours
                    }
                    let w = [p[0] - a[0], p[1] - a[1]];
                    let t = (w[0] * e[1] - w[1] * e[0]) / den;
                    let s = (w[0] * d[1] - w[1] * d[0]) / den;
                    if (0.0..=1.0).contains(&s) && t > 0.0 && t < 1.0 {
                        cuts.push(t);
                    }
                }
            }
            Region::Disc { c, r, r_in } => {
                for rad in [*r, *r_in] {
                    if rad <= 0.0 {
                        continue;
                    }
                    let f = [a[0] - c[0], a[1] - c[1]];
                    let qa = d[0] * d[0] + d[1] * d[1];
                    let qb = 2.0 * (f[0] * d[0] + f[1] * d[1]);
                    let qc = f[0] * f[0] + f[1] * f[1] - rad * rad;
                    let disc = qb * qb - 4.0 * qa * qc;
                    if qa > 0.0 && disc > 0.0 {
                        let s = disc.sqrt();
                        for t in [(-qb - s) / (2.0 * qa), (-qb + s) / (2.0 * qa)] {
                            if t > 0.0 && t < 1.0 {
                                cuts.push(t);
                            }
                        }
                    }
                }
            }
        }
        cuts.sort_by(f64::total_cmp);
        let mut out: Vec<(f64, f64)> = vec![];
        for w in cuts.windows(2) {
            let (t0, t1) = (w[0], w[1]);
            if t1 <= t0 {
                continue;
            }
            let tm = 0.5 * (t0 + t1);
            if self.contains_closed([a[0] + tm * d[0], a[1] + tm * d[1]], tol) {
                match out.last_mut() {
                    Some(last) if last.1 >= t0 => last.1 = t1,
                    _ => out.push((t0, t1)),
                }
            }
        }
        out
    }

    /// Why a polygon cannot be used (None: it can): fewer than three
    /// vertices, two equal neighbours, no area, or edges that cross.
    pub fn polygon_problem(p: &[[f64; 2]], tol: f64) -> Option<String> {
        let n = p.len();
        if n < 3 {
            return Some(format!("a polygon needs at least 3 points (got {n})"));
        }
        for i in 0..n {
            let (a, b) = (p[i], p[(i + 1) % n]);
            if (a[0] - b[0]).hypot(a[1] - b[1]) <= tol {
                return Some(format!("points {i} and {} coincide", (i + 1) % n));
            }
        }
        // O(n^2) is fine for the polygons people write (tens of points).
        for i in 0..n {
            for j in i + 1..n {
                if j == i + 1 || (i == 0 && j == n - 1) {
                    continue; // neighbours share a vertex
                }
                if segments_cross(p[i], p[(i + 1) % n], p[j], p[(j + 1) % n]) {
                    return Some(format!("it intersects itself: edge {i}-{} crosses edge {j}-{}", (i + 1) % n, (j + 1) % n));
                }
            }
        }
        let area: f64 = (0..n).map(|i| p[i][0] * p[(i + 1) % n][1] - p[(i + 1) % n][0] * p[i][1]).sum::<f64>() * 0.5;
        let (lo, hi) = Region::Polygon(p.to_vec()).bbox();
        if area.abs() <= tol * (hi[0] - lo[0]).max(hi[1] - lo[1]) {
            return Some("the polygon has no area (its points lie on one line)".into());
        }
        None
    }
}

/// Distance from `p` to the segment `a..b`.
fn seg_dist(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let d = [b[0] - a[0], b[1] - a[1]];
    let l2 = d[0] * d[0] + d[1] * d[1];
    let t = if l2 > 0.0 { (((p[0] - a[0]) * d[0] + (p[1] - a[1]) * d[1]) / l2).clamp(0.0, 1.0) } else { 0.0 };
    (p[0] - a[0] - t * d[0]).hypot(p[1] - a[1] - t * d[1])
}

/// Whether two closed segments share a point.
fn segments_cross(a: [f64; 2], b: [f64; 2], c: [f64; 2], d: [f64; 2]) -> bool {
    let orient = |p: [f64; 2], q: [f64; 2], r: [f64; 2]| (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
    let on = |p: [f64; 2], q: [f64; 2], r: [f64; 2]| {
        r[0] >= p[0].min(q[0]) && r[0] <= p[0].max(q[0]) && r[1] >= p[1].min(q[1]) && r[1] <= p[1].max(q[1])
    };
    let (o1, o2, o3, o4) = (orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b));
    if o1 * o2 < 0.0 && o3 * o4 < 0.0 {
        return true;
    }
    (o1 == 0.0 && on(a, b, c)) || (o2 == 0.0 && on(a, b, d)) || (o3 == 0.0 && on(c, d, a)) || (o4 == 0.0 && on(c, d, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_inside_discs_annuli_and_concave_polygons() {
        let ring = Region::Disc { c: [1.0, 0.0], r: 1.0, r_in: 0.5 };
        assert!(ring.contains([1.8, 0.0]) && !ring.contains([1.2, 0.0]) && !ring.contains([2.1, 0.0]));
        // A U shape: the notch between the arms is outside.
        let u = Region::Polygon(vec![[0.0, 0.0], [3.0, 0.0], [3.0, 3.0], [2.0, 3.0], [2.0, 1.0], [1.0, 1.0], [1.0, 3.0], [0.0, 3.0]]);
        assert!(u.contains([0.5, 2.0]) && u.contains([2.5, 2.0]) && u.contains([1.5, 0.5]) && !u.contains([1.5, 2.0]));
        assert_eq!(u.bbox(), ([0.0, 0.0], [3.0, 3.0]));
        assert_eq!(ring.bbox(), ([0.0, -1.0], [2.0, 1.0]));
    }

    fn len(iv: &[(f64, f64)]) -> f64 {
        iv.iter().map(|(a, b)| b - a).sum()
    }

    #[test]
    fn a_segment_through_a_disc_is_inside_over_its_chord() {
        let d = Region::Disc { c: [0.0, 0.0], r: 1.0, r_in: 0.0 };
        let iv = d.segment_inside([-2.0, 0.5], [2.0, 0.5], 1e-12);
        let chord = 2.0 * (1.0f64 - 0.25).sqrt();
        assert!((len(&iv) * 4.0 - chord).abs() < 1e-12, "{iv:?}");
        let ring = Region::Disc { c: [0.0, 0.0], r: 1.0, r_in: 0.5 };
        let iv = ring.segment_inside([-2.0, 0.0], [2.0, 0.0], 1e-12);
        assert_eq!(iv.len(), 2);
        assert!((len(&iv) * 4.0 - 1.0).abs() < 1e-12, "{iv:?}");
        assert!(d.segment_inside([2.0, 2.0], [3.0, 2.0], 1e-12).is_empty());
    }

    #[test]
    fn a_segment_through_a_concave_polygon_is_inside_where_it_should_be() {
        // A U shape: the segment at v = 2 crosses both arms.
        let u = Region::Polygon(vec![[0.0, 0.0], [3.0, 0.0], [3.0, 3.0], [2.0, 3.0], [2.0, 1.0], [1.0, 1.0], [1.0, 3.0], [0.0, 3.0]]);
        let iv = u.segment_inside([-1.0, 2.0], [4.0, 2.0], 1e-12);
        assert_eq!(iv.len(), 2, "{iv:?}");
        assert!((len(&iv) * 5.0 - 2.0).abs() < 1e-12);
        // Up the left arm: inside from v = 0 to v = 3.
        let iv = u.segment_inside([0.5, -1.0], [0.5, 4.0], 1e-12);
        assert!((len(&iv) * 5.0 - 3.0).abs() < 1e-12, "{iv:?}");
        // Along the inner edge of the left arm (x = 1), boundary included:
        // the arm's edge from v = 1 to 3 and the base below it.
        let iv = u.segment_inside([1.0, -1.0], [1.0, 4.0], 1e-12);
        assert!((len(&iv) * 5.0 - 3.0).abs() < 1e-12, "{iv:?}");
        assert!(u.contains([0.5, 2.0]) && !u.contains([1.5, 2.0]));
    }

    #[test]
    fn bad_polygons_are_named() {
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0]], 1e-12).unwrap().contains("at least 3"));
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], 1e-12).unwrap().contains("no area"));
        let bow = [[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]];
        assert!(Region::polygon_problem(&bow, 1e-12).unwrap().contains("intersects itself"));
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], 1e-12).is_none());
    }
}
