//! The automatic mesher: a rectilinear mesh that follows the geometry.
//!
//! Per axis it reads [`Geometry::events`] (metal edges, interfaces, ports,
//! domain faces) and lays lines with [`super::axis`]: exact lines on
//! interfaces, sheet planes and ports; the edges of sheets and thin metal by a
//! line pair straddling the edge ([`AUTO_INSIDE`]), faces of thick metal on a
//! line -- `edges` chooses; graded cells in between up to the largest cell the
//! band allows; at least `slab_cells` across a dielectric slab. Each candidate
//! gets its own line counts: lines move continuously with the parameters, and
//! a count changes only where an interval's need crosses a whole cell. With a
//! reference topology (the design's mesh at its parameters' midpoint, which
//! [`crate::design::Design`] keeps) a candidate keeps the reference's counts
//! wherever they still fit, so counts change far more rarely (the smoothness
//! this gives the optimiser is measured in tests/it/smoothness.rs).

use std::sync::Arc;

use super::axis::{self, AxisOptions, EdgeRule, Feature, Kind, MeshProblem, MinCells, Topology};
use super::{Meshed, Mesher};
use crate::design::budget::{check_grid, MemoryBudget};
use crate::consts::C0;
use crate::design::error::DesignError;
use crate::design::format::EdgeRuleSpec;
use crate::design::geometry::{EventId, EventKind, Face, Geometry, Owner, Shape, Side, Units};
use crate::job::{Axis, Boundary, Mesh};

/// The automatic mesher's settings, lengths in metres.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoSettings {
    /// The largest cell is the shortest wavelength (at `f_top` in the densest
    /// material) over this, or `max_cell` if that is smaller.
    pub cells_per_wavelength: f64,
    pub f_top: f64,
    pub max_cell: Option<f64>,
    /// Defaults: max cell / 16 and max cell / 2.
    pub min_cell: Option<f64>,
    pub edge_cell: Option<f64>,
    pub max_ratio: f64,
    pub edges: EdgeRuleSpec,
    pub slab_cells: usize,
    /// Absorbing padding cells on each absorbing face.
    pub pml: usize,
    /// Lines forced per axis (domain only, low face to high face).
    pub forced: [Option<Vec<f64>>; 3],
}

/// Where `edges: Auto` puts a thin edge's line pair: this fraction of the edge
/// cell inside the metal. On-edge lines (0) put the iris filter's passband
/// edges 0.5-0.9 % high against a converged (a/448) run, the thirds rule (1/3)
/// 0.6-1.4 % low; 0.15 is within 0.16 % on three independent candidates
/// (docs/ACCURACY.md has the table and commands).
pub const AUTO_INSIDE: f64 = 0.15;

/// The field paths errors name.
const AT: &str = "engine.mesh";

impl AutoSettings {
    /// The largest, smallest and edge cell for `geo` (metres).
    pub fn cells(&self, geo: &Geometry) -> (f64, f64, f64) {
        let (_, index) = geo.densest();
        let lambda = C0 / (self.f_top * index);
        let mut max = lambda / self.cells_per_wavelength;
        if let Some(m) = self.max_cell {
            max = max.min(m);
        }
        let min = self.min_cell.unwrap_or(max / 16.0).min(max);
        let edge = self.edge_cell.unwrap_or(max / 2.0).clamp(min, max);
        (max, min, edge)
    }

    /// The rule for a metal edge; `thin`: the edge of a sheet, or the face of a
    /// solid that is thin across it (a knife-like edge whose field is singular).
    fn rule(&self, thin: bool) -> EdgeRule {
        match (self.edges, thin) {
            (EdgeRuleSpec::Auto, true) => EdgeRule::Inside(AUTO_INSIDE),
            (EdgeRuleSpec::Thirds, _) => EdgeRule::Thirds,
            (EdgeRuleSpec::Inside(f), true) => EdgeRule::Inside(f),
            (EdgeRuleSpec::OnEdge, _) | (EdgeRuleSpec::Auto | EdgeRuleSpec::Inside(_), false) => EdgeRule::OnEdge,
        }
    }
}

/// A stable number for an event's identity (the axis mesher's feature key).
fn key(id: &EventId) -> u64 {
    let owner = match id.owner {
        Owner::Primitive(i) => 1 + i as u64,
        Owner::Port(i) => 1 + (1 << 24) + i as u64,
        Owner::Domain => 0,
    };
    let face = match id.face {
        Face::Min => 0,
        Face::Max => 1,
        Face::Plane => 2,
        Face::ApertureLow => 3,
        Face::ApertureHigh => 4,
        Face::From => 5,
        Face::To => 6,
        Face::Across => 7,
        Face::Reference => 8,
        Face::Centre => 9,
    };
    owner * 16 + face
}

/// How far the edge cell of the end of a close pair that gives way shrinks
/// while the other keeps the full edge cell: the gap between the pairs is then
/// one cell of 0.74 E (the grading's room), which the fill accepts next to a
/// cell down to 0.55 E (0.9 x the ratio); below, both shrink together.
const KNEE: f64 = 0.6;

/// A solid face is "thin" (meshed like a sheet's edge) when the solid extends
/// less than this many edge cells across it.
const THIN_CELLS: f64 = 3.0;

/// Whether the face `id` of a PEC solid, normal to axis `a`, belongs to a solid
/// thinner than `limit` along some other meshed axis: then the face is an edge
/// of a plate (an iris's aperture side), whose field is singular like a
/// sheet's, not a wall (where a line on the face is exact).
fn thin_face(geo: &Geometry, a: usize, id: &EventId, limit: f64) -> bool {
    let Owner::Primitive(index) = id.owner else { return false };
    let meshed = |b: usize| b != a && geo.collapse.map(|c| c.index()) != Some(b);
    geo.solids.iter().filter(|s| s.origin.key() == index).any(|s| match s.shape {
        Shape::Block { min, max, .. } => (0..3).filter(|&b| meshed(b)).any(|b| max[b] - min[b] < limit),
        Shape::Iris { axis, z0, z1, .. } => meshed(axis.index()) && z1 - z0 < limit,
        Shape::Post { .. } => false,
        // A plate thinner than a few cells along its axis has edges like a sheet's.
        Shape::Extruded { axis, lo, hi, .. } => meshed(axis.index()) && hi - lo < limit,
    })
}

/// What one axis must respect: its features and slab minimums.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AxisInput {
    pub features: Vec<Feature>,
    pub slabs: Vec<MinCells>,
}

/// Lays lines that follow the geometry.
#[derive(Debug, Clone)]
pub struct AutoMesher {
    pub settings: AutoSettings,
    /// The grid is refused from a lower bound of its counts (the domain in
    /// largest cells), before any line exists, above this.
    pub budget: MemoryBudget,
    /// Counts to keep where they fit, per axis (see [`axis::lines_following`]).
    pub reference: Option<Arc<[Topology; 3]>>,
}

impl AutoMesher {
    /// The features and slabs of every axis of `geo`.
    pub fn inputs(&self, geo: &Geometry) -> [AxisInput; 3] {
        let (max, min, edge) = self.settings.cells(geo);
        let events = geo.events();
        let sheet_owners: Vec<usize> = geo.sheets.iter().map(|s| s.origin.key()).chain(geo.shaped.iter().map(|s| s.origin.key())).collect();
        let mut out: [AxisInput; 3] = Default::default();
        for a in 0..3 {
            if geo.collapse.map(|c| c.index()) == Some(a) {
                continue;
            }
            let ev = &events[a];
            // Every event's line pair, as fractions of its edge cell reaching
            // below and above its coordinate (0 for exact lines, on-edge lines
            // and domain faces), merged per coordinate: sorted, so a
            // neighbour is a binary search away (a design may repeat a
            // primitive thousands of times).
            // The rule of each metal edge and its reach (down, up).
            let rules: Vec<Option<(EdgeRule, f64, f64)>> = ev
                .iter()
                .map(|e| match e.kind {
                    EventKind::MetalEdge { metal: metal @ (Side::Low | Side::High) } => {
                        let sheet = matches!(e.id.owner, Owner::Primitive(i) if sheet_owners.contains(&i));
                        let thin = sheet || thin_face(geo, a, &e.id, THIN_CELLS * edge);
                        let rule = self.settings.rule(thin);
                        let q = rule.inside();
                        Some(if metal == Side::Low { (rule, q, 1.0 - q) } else { (rule, 1.0 - q, q) })
                    }
                    _ => None,
                })
                .collect();
            let mut reach: Vec<(f64, f64, f64, bool)> =
                ev.iter().zip(&rules).map(|(e, r)| r.map_or((e.coord, 0.0, 0.0, false), |(_, d, u)| (e.coord, d, u, true))).collect();
            reach.sort_by(|x, y| x.0.total_cmp(&y.0));
            let mut merged: Vec<(f64, f64, f64, bool)> = Vec::with_capacity(reach.len());
            for r in reach {
                match merged.last_mut() {
                    Some(m) if (r.0 - m.0).abs() <= geo.tol => {
                        m.1 = m.1.max(r.1);
                        m.2 = m.2.max(r.2);
                        m.3 |= r.3;
                    }
                    _ => merged.push(r),
                }
            }
            // The largest edge cell the neighbours of x allow. Two neighbouring
            // coordinates d apart whose line pairs reach r1 and r2 of their edge
            // cells h1, h2 into the gap between them leave d - r1 h1 - r2 h2,
            // which must hold a cell within the grading limit of both (0.92 x
            // the ratio, as the fill's growth): `room` x the larger. Both ends
            // keep the full edge cell E where that fits. Closer, the end that
            // reaches further into the gap gives way alone, down to KNEE x E, while
            // the other keeps E: a close pair of edges (an iris pair's
            // apertures, the metal on the same side) then moves one edge's cell
            // and not the interval beyond the other. Closer still, both shrink
            // in proportion to d. Every branch is continuous in d, and both ends
            // of a gap reckon the same split, so the pairs always fit.
            // (2 % over the bare need: the fill's placement is discrete.)
            let room = 1.02 / (0.92 * self.settings.max_ratio);
            let split = |d: f64, mine: f64, theirs: f64, metal: bool| -> f64 {
                if !metal {
                    // An exact line or a domain face: its own cell adapts.
                    return d / (mine + room);
                }
                if (mine - theirs).abs() <= 1e-12 {
                    return edge.min(d / (mine + theirs + room));
                }
                let (give, keep) = if mine > theirs { (mine, theirs) } else { (theirs, mine) };
                if d >= (give + keep + room) * edge {
                    return edge;
                }
                let knee = (KNEE * give + keep + room) * edge;
                let (h_give, h_keep) = if d >= knee { ((d - (keep + room) * edge) / give, edge) } else { (KNEE * edge * d / knee, edge * d / knee) };
                if mine > theirs { h_give } else { h_keep }
            };
            let bound = |x: f64, down: f64, up: f64| -> f64 {
                let i = merged.partition_point(|m| m.0 < x - geo.tol);
                let below = merged[..i].last().map_or(f64::INFINITY, |m| split(x - m.0, down, m.2, m.3));
                let j = merged.partition_point(|m| m.0 <= x + geo.tol);
                let above = merged.get(j).map_or(f64::INFINITY, |m| split(m.0 - x, up, m.1, m.3));
                below.min(above)
            };
            for (e, r) in ev.iter().zip(&rules) {
                let kind = match e.kind {
                    EventKind::DomainFace { .. } => continue,
                    EventKind::MetalEdge { metal: Side::Both } => {
                        // Cells beside a sheet of the edge cell, or of its
                        // narrowest width where that is smaller (a strip 1 mm
                        // wide varies its field over 1 mm normal to it too).
                        let width = match e.id.owner {
                            Owner::Primitive(i) => geo
                                .sheets
                                .iter()
                                .filter(|s| s.origin.index == i)
                                .map(|s| (s.hi[0] - s.lo[0]).min(s.hi[1] - s.lo[1]))
                                .fold(f64::INFINITY, f64::min),
                            _ => f64::INFINITY,
                        };
                        Kind::Sheet { h: edge.min(width).max(1.25 * min) }
                    }
                    EventKind::MetalEdge { metal } => {
                        let (rule, down, up) = r.expect("metal edges have a rule");
                        // Never so small that the graded fill next to it (whose end
                        // cells are 0.83 of the anchor's) falls below the minimum cell.
                        let h = bound(e.coord, down, up).min(edge).max(1.25 * min);
                        Kind::Metal { below: metal == Side::Low, rule, h }
                    }
                    EventKind::Interface | EventKind::PortNode | EventKind::PortPlane { .. } => Kind::Exact,
                };
                out[a].features.push(Feature { pos: e.coord, kind, key: key(&e.id) });
            }
            for s in &geo.solids {
                if let Shape::Block { mat, min: lo, max: hi } = s.shape {
                    let m = &geo.materials[mat as usize];
                    if mat != 0 && !m.pec {
                        let (l, h) = (lo[a].max(geo.domain[a][0]), hi[a].min(geo.domain[a][1]));
                        if h > l {
                            out[a].slabs.push(MinCells { lo: l, hi: h, cells: self.settings.slab_cells });
                        }
                    }
                }
            }
        }
        let _ = max;
        out
    }

    fn options(&self, geo: &Geometry) -> AxisOptions {
        let (max_cell, min_cell, _) = self.settings.cells(geo);
        AxisOptions { max_cell, min_cell, max_ratio: self.settings.max_ratio }
    }

    /// The domain lines of axis `a` (no padding).
    fn axis_lines(&self, geo: &Geometry, a: usize, input: &AxisInput, o: &AxisOptions, u: &Units) -> Result<(Vec<f64>, Topology), DesignError> {
        let ax = Axis::from_index(a);
        let [lo, hi] = geo.domain[a];
        if geo.collapse == Some(ax) {
            return Ok((vec![lo, hi], Topology::default()));
        }
        let at = |what: &str| format!("{AT}.{what}");
        if let Some(v) = &self.settings.forced[a] {
            let field = at(&format!("lines.{}", ax.name()));
            let tol = geo.tol.max(1e-12);
            if v.len() < 2 {
                return Err(u.err(field, "needs at least the domain's two faces"));
            }
            if (v[0] - lo).abs() > tol || (v[v.len() - 1] - hi).abs() > tol {
                return Err(u.err(
                    field,
                    format!("must run from the domain's low face to its high face ({}), got {}", u.range(lo, hi), u.range(v[0], v[v.len() - 1])),
                ));
            }
            for (i, w) in v.windows(2).enumerate() {
                if !(w[1] > w[0]) {
                    let what = if w[1] == w[0] { "a zero-width cell" } else { "not increasing" };
                    return Err(u.err(
                        format!("{field}[{}]", i + 1),
                        format!("{what}: {} follows {}", u.show(w[1]), u.show(w[0])),
                    ));
                }
            }
            let mut v = v.clone();
            v[0] = lo;
            let n = v.len() - 1;
            v[n] = hi;
            axis::check_lines(&v, 0.0, o.max_ratio).map_err(|p| problem(u, &field, p))?;
            return Ok((v, Topology::default()));
        }
        let prefer = self.reference.as_ref().map(|r| &r[a]);
        // Crowded edges can leave a gap the graded fill cannot bridge within
        // the grading limit: then the edges' cells shrink (by 3/4, up to four
        // times) before the axis is given up with the first error.
        let scaled = |scale: f64| -> Vec<Feature> {
            input
                .features
                .iter()
                .map(|f| match f.kind {
                    Kind::Metal { below, rule, h } => Feature { kind: Kind::Metal { below, rule, h: (h * scale).max(1.25 * o.min_cell) }, ..*f },
                    _ => *f,
                })
                .collect()
        };
        let first = match axis::lines_following(lo, hi, &input.features, &input.slabs, o, prefer) {
            Ok(v) => return Ok(v),
            Err(p) => p,
        };
        for k in 1..5 {
            if let Ok(v) = axis::lines_following(lo, hi, &scaled(0.75f64.powi(k)), &input.slabs, o, prefer) {
                return Ok(v);
            }
        }
        // Still crowded: gaps between one and two minimum cells may split
        // below the minimum (see [`axis::lines_crowded`]).
        for k in 0..5 {
            let f = if k == 0 { input.features.clone() } else { scaled(0.75f64.powi(k)) };
            if let Ok(v) = axis::lines_crowded(lo, hi, &f, &input.slabs, o, prefer) {
                return Ok(v);
            }
        }
        Err(problem(u, &format!("{AT} ({} axis)", ax.name()), first))
    }
}

/// A mesh problem as a design error at `field`, lengths in design units.
fn problem(u: &Units, field: &str, p: MeshProblem) -> DesignError {
    let m = match p {
        MeshProblem::TooClose { a, b, min_cell } => format!(
            "features at {} and {} are closer than the minimum cell ({}): lower `min_cell` or move them apart",
            u.show(a),
            u.show(b),
            u.show(min_cell)
        ),
        MeshProblem::CellTooSmall { at, size, min_cell } => {
            format!("the cell at {} is {} wide, below the minimum cell {}", u.show(at), u.show(size), u.show(min_cell))
        }
        MeshProblem::Grading { at, ratio, max_ratio } => {
            format!("neighbouring cells at {} differ by a ratio of {ratio:.3}, above the limit {max_ratio} (`max_ratio`)", u.show(at))
        }
        MeshProblem::Outside { pos } => format!("a feature at {} lies outside the domain", u.show(pos)),
        MeshProblem::Options(s) => s,
    };
    u.err(field, m)
}

impl Mesher for AutoMesher {
    fn mesh(&self, geo: &Geometry, u: &Units) -> Result<Meshed, DesignError> {
        self.mesh_with_topology(geo, u).map(|(m, _)| m)
    }
}

impl AutoMesher {
    /// The mesh of `geo` and its topology (the counts a later mesh can keep).
    pub fn mesh_with_topology(&self, geo: &Geometry, u: &Units) -> Result<(Meshed, [Topology; 3]), DesignError> {
        let o = self.options(geo);
        // The fewest cells the grid can have, absorbing padding included, so
        // that neither the lines nor the padding are allocated for a grid too large.
        let least = std::array::from_fn(|a| {
            let l = geo.domain[a][1] - geo.domain[a][0];
            let inner = if geo.collapse.map(|c| c.index()) == Some(a) { 1 } else { ((l / o.max_cell).ceil() as usize).max(1) };
            let pad = |s: usize| if geo.boundaries[a][s] == Boundary::Absorbing { self.settings.pml } else { 0 };
            inner.saturating_add(pad(0)).saturating_add(pad(1))
        });
        check_grid(least, self.budget, &u.file)?;
        let inputs = self.inputs(geo);
        let mut lines: [Vec<f64>; 3] = [vec![], vec![], vec![]];
        let mut pml = [[0usize; 2]; 3];
        let mut topo: [Topology; 3] = Default::default();
        for a in 0..3 {
            let (dom, t) = self.axis_lines(geo, a, &inputs[a], &o, u)?;
            topo[a] = t;
            // Absorbing padding: uniform cells of the outermost cell's size (the
            // CPML's profile assumes a uniform layer).
            for s in 0..2 {
                pml[a][s] = if geo.boundaries[a][s] == Boundary::Absorbing { self.settings.pml } else { 0 };
            }
            let (d0, d1) = (dom[1] - dom[0], dom[dom.len() - 1] - dom[dom.len() - 2]);
            let mut v = Vec::with_capacity(dom.len() + pml[a][0] + pml[a][1]);
            v.extend((1..=pml[a][0]).rev().map(|k| dom[0] - k as f64 * d0));
            v.extend_from_slice(&dom);
            let last = dom[dom.len() - 1];
            v.extend((1..=pml[a][1]).map(|k| last + k as f64 * d1));
            lines[a] = v;
        }
        let mesh = Mesh::from_lines(lines).map_err(|e| u.err(AT, e.to_string()))?;
        Ok((Meshed { mesh, pml }, topo))
    }
}

#[cfg(test)]
mod tests {
    use crate::design::Design;
    use std::collections::BTreeMap;

    fn iris(extra: &str) -> Design {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/designs/wr28_iris_filter.ron")).unwrap();
        let text = text.replace("engine: Fdtd(mesh: Auto(),", &format!("engine: Fdtd({extra}"));
        Design::parse(&text, "iris.ron").unwrap()
    }

    fn values(d: &Design, w1: f64) -> BTreeMap<String, f64> {
        let mut v = d.midpoint_values();
        v.insert("w1".into(), w1);
        v
    }

    #[test]
    fn lines_lie_on_every_metal_face_and_interface() {
        let d = iris("mesh: Auto(edges: OnEdge),");
        let v = values(&d, 3.7);
        let geo = d.geometry(&v, None).unwrap();
        let job = d.job_with(&v, None, None).unwrap();
        for a in [0usize, 2] {
            for e in &geo.events()[a] {
                let hit = job.mesh.lines(a).iter().any(|&l| (l - e.coord).abs() < 1e-12);
                assert!(hit, "axis {a}: no line at {} ({:?})", e.coord, e.kind);
            }
            assert!(job.mesh.max_grading(a) <= 1.5 + 1e-6, "axis {a} grading {}", job.mesh.max_grading(a));
        }
    }

    /// The edge cells the mesher asks for at the x coordinates of the outer
    /// (w1) and inner (w2) apertures' low edges, and the full edge cell.
    fn edge_cells(d: &Design, w1: f64, w2: f64) -> (f64, f64, f64) {
        let mut v = values(d, w1);
        v.insert("w2".into(), w2);
        let geo = d.geometry(&v, None).unwrap();
        let mesher = super::super::auto_from_design(d.file(), "iris.ron", &v, crate::design::MemoryBudget::machine()).unwrap().unwrap();
        let (_, _, edge) = mesher.settings.cells(&geo);
        let a = 7.112e-3;
        let at = |x: f64| {
            mesher.inputs(&geo)[0]
                .features
                .iter()
                .find_map(|f| match f.kind {
                    super::Kind::Metal { h, .. } if (f.pos - x).abs() < 1e-12 => Some(h),
                    _ => None,
                })
                .unwrap()
        };
        (at((a - w1 * 1e-3) / 2.0), at((a - w2 * 1e-3) / 2.0), edge)
    }

    #[test]
    fn close_apertures_shrink_one_edge_cell_continuously_and_leave_the_other() {
        let d = iris("mesh: Auto(),");
        let w2 = 2.7;
        let mut prev: Option<(f64, f64)> = None;
        let mut w1 = 3.0;
        while w1 <= 4.0 + 1e-9 {
            let (h1, h2, e) = edge_cells(&d, w1, w2);
            let gap = (w1 - w2) / 2.0 * 1e-3;
            // Same-side edges: the inner aperture's edge keeps the full cell
            // down to a gap of (0.6 x 0.85 + 0.15 + room) E, the outer one gives way.
            let knee = (super::KNEE * 0.85 + 0.15 + 1.02 / (0.92 * 1.5)) * e;
            if gap >= knee {
                assert_eq!(h2, e, "w1 = {w1}: the inner edge's cell moved");
            }
            assert!(h1 <= e && h1 >= super::KNEE * e * (gap / knee).min(1.0) * (1.0 - 1e-9), "w1 = {w1}: {h1} of {e}");
            if let Some((p1, p2)) = prev {
                // 5 um steps of w1: the cells follow continuously.
                assert!((h1 - p1).abs() < 0.02 * e && (h2 - p2).abs() < 0.02 * e, "w1 = {w1}: {p1} -> {h1}, {p2} -> {h2}");
            }
            prev = Some((h1, h2));
            // Every candidate meshes with these cells: its line pairs straddle
            // the edges as asked (the crowded-edge retry would have scaled them).
            let mut v = values(&d, w1);
            v.insert("w2".into(), w2);
            let job = d.job_with(&v, None, None).unwrap();
            let lines = job.mesh.lines(0);
            for (x, h) in [((7.112 - w1) / 2.0 * 1e-3, h1), ((7.112 - w2) / 2.0 * 1e-3, h2)] {
                for y in [x - super::AUTO_INSIDE * h, x + (1.0 - super::AUTO_INSIDE) * h] {
                    assert!(lines.iter().any(|&l| (l - y).abs() < 1e-12), "w1 = {w1}: no line at {y}");
                }
            }
            w1 += 0.005;
        }
    }

    #[test]
    fn a_free_standing_strip_gets_fine_cells_beside_it_on_every_axis() {
        // A strip dipole 1 mm wide in the plane z = 0, fed across a 1 mm gap;
        // largest cell 5 mm (20 a wavelength at 3 GHz), edge cell 2.5 mm.
        let text = r#"Design(
            name: "strip_dipole", units: Millimetre,
            parameters: { "L": Real(min: 50, max: 60) },
            geometry: [
                Sheet(min: ("-L/2", -0.5, 0), max: (-0.5, 0.5, 0)),
                Sheet(min: (0.5, -0.5, 0), max: ("L/2", 0.5, 0)),
            ],
            domain: (x: (-60, 60), y: (-40, 40), z: (-40, 40)),
            boundaries: (x: Absorbing, y: Absorbing, z: Absorbing),
            ports: [Lumped(name: "feed", from: (-0.5, 0, 0), to: (0.5, 0, 0), r: 73)],
            band: (start: 2e9, stop: 3e9, points: 11),
            engine: Fdtd(mesh: Auto()),
            goals: [Goal(s: (1, 1), band: (2.4e9, 2.5e9), below_db: -10)],
            optimiser: Ga(population: 8, generations: 2, seed: 1),
        )"#;
        let d = Design::parse(text, "strip.ron").unwrap();
        let m = d.mesh(&d.midpoint_values()).unwrap();
        // The cells on both sides of a line at `x` (metres) along axis `a`.
        let beside = |a: usize, x: f64| {
            let v = m.mesh.lines(a);
            let i = v.partition_point(|&l| l < x);
            (v[i] - v[i - 1], v[i + 1] - v[i])
        };
        // Normal to the strip: cells of its width (1 mm) on both sides of its plane.
        let (below, above) = beside(2, 0.0);
        assert!(m.mesh.lines(2).contains(&0.0));
        assert!(below <= 1.0e-3 * (1.0 + 1e-9) && above <= 1.0e-3 * (1.0 + 1e-9), "z cells beside the strip {below} {above}");
        // Across the strip (y): at most its width; at its ends (x): the edge cell.
        for (a, x, h) in [(1, -0.5e-3, 1.0e-3), (1, 0.5e-3, 1.0e-3), (0, -27.5e-3, 2.5e-3), (0, 27.5e-3, 2.5e-3)] {
            let (l, r) = beside(a, x);
            assert!(l <= h * (1.0 + 1e-9) && r <= h * (1.0 + 1e-9), "axis {a} at {x}: cells {l} {r}");
        }
        for a in 0..3 {
            assert!(m.mesh.max_grading(a) <= 1.5 * (1.0 + 1e-9), "axis {a}: {}", m.mesh.max_grading(a));
        }
    }

    #[test]
    fn forced_lines_are_checked() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/designs/wr28_iris_filter.ron")).unwrap();
        for (lines, want) in [
            ("x: [0, 1, 0.5, 7.112]", "engine.mesh.lines.x[2]"),
            ("x: [0, 1, 1, 7.112]", "zero-width cell"),
            ("x: [0, 1, 7.112]", "ratio"),
            ("x: [0, 1, 2, 7]", "high face"),
        ] {
            let t = text.replace("engine: Fdtd(mesh: Auto(),", &format!("engine: Fdtd(mesh: Auto(lines: ({lines})),"));
            let e = Design::parse(&t, "iris.ron").unwrap_err().to_string();
            assert!(e.contains(want), "{lines}: {e}");
        }
    }
}
