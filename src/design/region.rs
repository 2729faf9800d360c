//! Plane regions — polygons, discs and annuli in the `(u, v)` plane of an
//! axis — and what the voxeliser and mesher need from them: whether a point
//! lies inside (the cell-centre rule), their extremes (the mesher's lines)
//! and the checks on a polygon as written.

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

    #[test]
    fn bad_polygons_are_named() {
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0]], 1e-12).unwrap().contains("at least 3"));
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], 1e-12).unwrap().contains("no area"));
        let bow = [[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]];
        assert!(Region::polygon_problem(&bow, 1e-12).unwrap().contains("intersects itself"));
        assert!(Region::polygon_problem(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], 1e-12).is_none());
    }
}
