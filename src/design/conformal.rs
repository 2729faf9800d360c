//! Conformal metal for FDTD: what perfect cylinders, prisms, discs and
//! polygons cover of the mesh, edge by edge and face by face, for the
//! locally conformal update of Dey & Mittra ("A locally conformal
//! finite-difference time-domain (FDTD) algorithm for modeling
//! three-dimensional perfectly conducting objects", IEEE Microwave and
//! Guided Wave Letters 7(9), 1997).
//!
//! Per E edge the fraction of its length left outside the metal
//! ([`EdgeFill`]), per cell face (an H node) the fraction of its area left
//! outside ([`FaceFill`]). Both are exact intersections (the area by 16
//! strips, each cut exactly), so they move continuously with the
//! parameters: no staircase plateaus and cliffs. The engine's use of them
//! is `crate::engine::fdtd::conformal`.
//!
//! Metal beats dielectric here whatever the file's order (a via through a
//! substrate needs no ordering); bodies touching a face of the domain carry
//! on through the absorbing padding, as painted cells do. Lossy metal keeps
//! the cell-centre rule (its surface impedance sits on cell faces), as does
//! TLM.

use std::collections::{HashMap, HashSet};

use super::geometry::{Geometry, Region, Shape};
use super::mesh::Meshed;
use crate::job::{Axis, Conformal, EdgeFill, FaceFill};

/// Below this open fraction an edge is taken as wholly metal, above
/// `1 - OPEN_MIN` as wholly open.
pub const OPEN_MIN: f64 = 1e-3;

/// Strips a face's covered area is summed over (midpoint rule, each strip's
/// covered length exact): exact for straight cuts, within ~1e-3 of a cell's
/// area for curves.
const STRIPS: usize = 16;

/// One perfect body as the walk sees it: a region of the plane normal to
/// `axis`, over `[lo, hi]` along it (a sheet: `lo == hi`).
struct Body<'a> {
    axis: Axis,
    lo: f64,
    hi: f64,
    region: &'a Region,
}

impl Body<'_> {
    /// The parts of the axis-aligned segment from `a` along axis `d` for
    /// `len` that lie in the body, as `(from, to)` coordinates along `d`.
    fn chord(&self, a: [f64; 3], d: usize, len: f64, tol: f64) -> Vec<(f64, f64)> {
        let ax = self.axis.index();
        let (p, q) = self.axis.others();
        let (p, q) = (p.index(), q.index());
        if d == ax {
            if !self.region.contains_closed([a[p], a[q]], tol) {
                return vec![];
            }
            let (x0, x1) = (a[d].max(self.lo), (a[d] + len).min(self.hi));
            if x1 <= x0 {
                return vec![];
            }
            vec![(x0, x1)]
        } else {
            if a[ax] < self.lo - tol || a[ax] > self.hi + tol {
                return vec![];
            }
            let mut b = a;
            b[d] += len;
            self.region.segment_inside([a[p], a[q]], [b[p], b[q]], tol).into_iter().map(|(t0, t1)| (a[d] + t0 * len, a[d] + t1 * len)).collect()
        }
    }
}

/// Length of the union of intervals.
fn union_len(mut iv: Vec<(f64, f64)>) -> f64 {
    iv.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut total, mut end) = (0.0, f64::NEG_INFINITY);
    for (a, b) in iv {
        let a = a.max(end);
        if b > a {
            total += b - a;
            end = b;
        }
    }
    total
}

/// Whether `geo` has metal the conformal update takes: perfect (not lossy)
/// extruded solids and shaped sheets, on FDTD.
pub(crate) fn is_conformal_solid(geo: &Geometry, mat: u8) -> bool {
    geo.kind == crate::job::EngineKind::Fdtd && geo.materials[mat as usize].pec && geo.surfaces.of_material(mat).is_none()
}

/// Whether shaped sheet `s` of `geo` is taken conformally.
pub(crate) fn is_conformal_sheet(geo: &Geometry, conductor: Option<u8>) -> bool {
    geo.kind == crate::job::EngineKind::Fdtd && conductor.is_none()
}

/// The conformal fills of `geo` on `m`, and per conformal body (the
/// conformal `Extruded` solids, then the conformal shaped sheets, in order)
/// whether some E edge lies wholly in it: one that none does would vanish on
/// this mesh.
pub(crate) fn fills(geo: &Geometry, m: &Meshed) -> (Conformal, Vec<bool>) {
    let mesh = &m.mesh;
    let n = mesh.n();
    let tol = geo.tol;
    let mut bodies = vec![];
    for s in &geo.solids {
        if let Shape::Extruded { mat, axis, lo, hi, ref region } = s.shape {
            if is_conformal_solid(geo, mat) {
                // Reaching a face: on through the padding.
                let a = axis.index();
                let lo = if lo <= geo.domain[a][0] + tol { f64::NEG_INFINITY } else { lo };
                let hi = if hi >= geo.domain[a][1] - tol { f64::INFINITY } else { hi };
                bodies.push(Body { axis, lo, hi, region });
            }
        }
    }
    for s in geo.shaped.iter().filter(|s| is_conformal_sheet(geo, s.conductor)) {
        let a = s.normal.index();
        // A sheet lies on its nearest line, as rectangular sheets do.
        let z = mesh.lines(a)[nearest(mesh.lines(a), s.coord)];
        bodies.push(Body { axis: s.normal, lo: z, hi: z, region: &s.region });
    }
    if bodies.is_empty() {
        return (Conformal::default(), vec![]);
    }
    // Node coordinates inside the domain (padding nodes take the face's).
    let node = |a: usize, i: usize| -> f64 {
        let l = mesh.lines(a);
        let lo = m.pml[a][0];
        l[i.clamp(lo, lo + m.domain_cells(a))]
    };
    let corner = |idx: [usize; 3]| -> [f64; 3] { std::array::from_fn(|a| node(a, idx[a])) };
    // Per body the node index ranges (per axis) its bounding box can touch.
    let ranges = |b: &Body| -> [(usize, usize); 3] {
        let ax = b.axis.index();
        let (p, q) = b.axis.others();
        let (bl, bh) = b.region.bbox();
        let mut lo3 = [0.0; 3];
        let mut hi3 = [0.0; 3];
        (lo3[ax], hi3[ax]) = (b.lo, b.hi);
        (lo3[p.index()], hi3[p.index()]) = (bl[0], bh[0]);
        (lo3[q.index()], hi3[q.index()]) = (bl[1], bh[1]);
        std::array::from_fn(|a| {
            let l = mesh.lines(a);
            let first = l.partition_point(|&x| x < lo3[a] - tol).saturating_sub(1);
            let last = l.partition_point(|&x| x <= hi3[a] + tol).min(n[a]);
            (first.min(n[a]), last)
        })
    };
    let mut seen = vec![false; bodies.len()];
    // Per E edge (component, node index): the bodies that reach it.
    let mut edge_bodies: HashMap<(usize, [u32; 3]), Vec<usize>> = HashMap::new();
    for (bi, b) in bodies.iter().enumerate() {
        let r = ranges(b);
        for c in 0..3 {
            for k in r[2].0..=r[2].1 {
                for j in r[1].0..=r[1].1 {
                    for i in r[0].0..=r[0].1 {
                        let idx = [i, j, k];
                        if idx[c] >= n[c] {
                            continue; // no edge beyond the last line
                        }
                        let len = node(c, idx[c] + 1) - node(c, idx[c]);
                        if len <= 0.0 {
                            continue; // a padding edge: copied from the domain's below
                        }
                        let iv = b.chord(corner(idx), c, len, tol);
                        if iv.is_empty() {
                            continue;
                        }
                        seen[bi] |= union_len(iv) >= (1.0 - OPEN_MIN) * len;
                        edge_bodies.entry((c, idx.map(|x| x as u32))).or_default().push(bi);
                    }
                }
            }
        }
    }
    let open_of = |c: usize, idx: [usize; 3], bs: &[usize]| -> f64 {
        let len = node(c, idx[c] + 1) - node(c, idx[c]);
        let iv: Vec<_> = bs.iter().flat_map(|&bi| bodies[bi].chord(corner(idx), c, len, tol)).collect();
        (1.0 - union_len(iv) / len).clamp(0.0, 1.0)
    };
    let mut edges: Vec<EdgeFill> = vec![];
    for (&(c, at), bs) in &edge_bodies {
        let open = open_of(c, at.map(|x| x as usize), bs);
        if open >= 1.0 - OPEN_MIN {
            continue;
        }
        let open = if open < OPEN_MIN { 0.0 } else { open };
        edges.push(EdgeFill { comp: Axis::from_index(c), at, open: open as f32 });
    }
    // Faces: those with a listed edge (a face the metal enters without
    // touching an edge belongs to a body thinner than a cell, refused above).
    let listed: HashSet<(usize, [u32; 3])> = edges.iter().map(|e| (e.comp.index(), e.at)).collect();
    let mut faces_seen: HashSet<(usize, [u32; 3])> = HashSet::new();
    let mut faces = vec![];
    for e in &edges {
        let ec = e.comp.index();
        // The faces holding edge `ec` at `at`: normal c != ec, at the edge's
        // node or one back along the third axis.
        for c in (0..3).filter(|&c| c != ec) {
            let o = 3 - c - ec;
            for back in [0usize, 1] {
                let mut at = e.at.map(|x| x as usize);
                if back == 1 {
                    if at[o] == 0 {
                        continue;
                    }
                    at[o] -= 1;
                }
                if at[o] >= n[o] || at[ec] >= n[ec] || !faces_seen.insert((c, at.map(|x| x as u32))) {
                    continue;
                }
                if let Some(f) = face_fill(c, at, &node, &corner, &bodies, &edge_bodies, &listed, tol) {
                    faces.push(f);
                }
            }
        }
    }
    let mut out = Conformal { edges, faces };
    extrude_into_padding(&mut out, m);
    // A fixed order: the terms (and so the bits) must not depend on hashing.
    out.edges.sort_by_key(|f| (f.comp.index(), f.at[2], f.at[1], f.at[0]));
    out.faces.sort_by_key(|f| (f.comp.index(), f.at[2], f.at[1], f.at[0]));
    (out, seen)
}

/// The open area fraction of the face of H component `c` at node `at`
/// (spanned by the two other axes from that node), when some metal covers
/// part of it or of its edges; `None` when the face is wholly metal (every
/// edge covered: its H never changes) or untouched.
#[allow(clippy::too_many_arguments)]
fn face_fill(
    c: usize,
    at: [usize; 3],
    node: &dyn Fn(usize, usize) -> f64,
    corner: &dyn Fn([usize; 3]) -> [f64; 3],
    bodies: &[Body],
    edge_bodies: &HashMap<(usize, [u32; 3]), Vec<usize>>,
    listed: &HashSet<(usize, [u32; 3])>,
    tol: f64,
) -> Option<FaceFill> {
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (la, lb) = (node(a, at[a] + 1) - node(a, at[a]), node(b, at[b] + 1) - node(b, at[b]));
    if la <= 0.0 || lb <= 0.0 {
        return None;
    }
    // The bodies that reach any of its four edges.
    let mut bs: Vec<usize> = vec![];
    let mut edge_keys = vec![];
    for (ec, off) in [(a, None), (a, Some(b)), (b, None), (b, Some(a))] {
        let mut idx = at;
        if let Some(o) = off {
            idx[o] += 1;
        }
        let key = (ec, idx.map(|x| x as u32));
        edge_keys.push(key);
        if let Some(v) = edge_bodies.get(&key) {
            bs.extend(v);
        }
    }
    bs.sort_unstable();
    bs.dedup();
    if !edge_keys.iter().any(|k| listed.contains(k)) {
        return None;
    }
    // Strips along a at midpoints along b, each cut exactly.
    let p0 = corner(at);
    let mut covered = 0.0;
    for s in 0..STRIPS {
        let mut p = p0;
        p[b] += lb * (s as f64 + 0.5) / STRIPS as f64;
        let iv: Vec<_> = bs.iter().flat_map(|&bi| bodies[bi].chord(p, a, la, tol)).collect();
        covered += union_len(iv);
    }
    let open = (1.0 - covered / (la * STRIPS as f64)).clamp(0.0, 1.0);
    Some(FaceFill { comp: Axis::from_index(c), at: at.map(|x| x as u32), open: open as f32 })
}

/// The fills on the domain's outermost lines repeated through the
/// absorbing padding beyond them, axis after axis (corners included).
fn extrude_into_padding(out: &mut Conformal, m: &Meshed) {
    let n = m.mesh.n();
    for a in 0..3 {
        let (plo, nd) = (m.pml[a][0], m.domain_cells(a));
        if plo == 0 && m.pml[a][1] == 0 {
            continue;
        }
        // Along a (edges along a; faces across a... whose node index along a
        // counts cells): cells plo..plo+nd-1; otherwise nodes plo..=plo+nd.
        let copies = |i: usize, cells: bool| -> Vec<usize> {
            let (first, last, top) = if cells { (plo, plo + nd - 1, n[a] - 1) } else { (plo, plo + nd, n[a]) };
            if i == first {
                (0..first).collect()
            } else if i == last {
                (last + 1..=top).collect()
            } else {
                vec![]
            }
        };
        let mut extra = vec![];
        for f in &out.edges {
            for x in copies(f.at[a] as usize, f.comp.index() == a) {
                let mut g = *f;
                g.at[a] = x as u32;
                extra.push(g);
            }
        }
        out.edges.extend(extra);
        let mut extra = vec![];
        for f in &out.faces {
            // A face of H_c spans the two axes other than c: along those it
            // counts cells, along c nodes.
            for x in copies(f.at[a] as usize, f.comp.index() != a) {
                let mut g = *f;
                g.at[a] = x as u32;
                extra.push(g);
            }
        }
        out.faces.extend(extra);
    }
}

/// The index of the line nearest to `x`.
pub(crate) fn nearest(lines: &[f64], x: f64) -> usize {
    let k = lines.partition_point(|&l| l < x);
    match k {
        0 => 0,
        k if k >= lines.len() => lines.len() - 1,
        k => {
            if x - lines[k - 1] <= lines[k] - x {
                k - 1
            } else {
                k
            }
        }
    }
}
