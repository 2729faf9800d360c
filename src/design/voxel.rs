//! Voxelisation: snap a [`Geometry`] (metres) onto the lines of its mesh and
//! assemble the [`SimJob`] the engines read (conventions in `src/job.rs`).
//!
//! Solids follow the cell-centre rule: each cell takes the material of the
//! last solid containing its centre (the midpoint of its two lines; index 0,
//! vacuum, where none does). Sheets and port nodes go to the nearest line;
//! sheets are kept apart as zero-thickness conductors on mesh planes and are
//! not erased by later solids. Every check that needs the mesh happens here.

use std::ops::Range;

use super::error::DesignError;
use super::format::DesignFile;
use super::budget::{check_grid, MemoryBudget};
use super::geometry::{Geometry, PortGeomKind, Shape, ShapedSheet, SheetGeom, Solid, SolidKind, Units};
use super::mesh::Meshed;
use super::validate::MIN_CELLS_PER_WAVELENGTH;
use crate::consts::C0;
use crate::job::{Axis, Boundary, Load, Mesh, Port, PortKind, Pulse, Sheet, SimJob, StopRule, Surfaces};

/// Cells between a waveguide port's reference plane and its source plane.
pub const SOURCE_OFFSET: usize = 3;
/// Cells a lumped port or load keeps from the absorbing padding.
pub const PORT_MARGIN: usize = 3;

/// A geometry over its mesh: cell centres, cells covered, nearest lines.
struct Snap<'a> {
    geo: &'a Geometry,
    m: &'a Meshed,
}

impl Snap<'_> {
    fn n(&self, a: usize) -> usize {
        self.m.mesh.n()[a]
    }
    /// Centre (metres) of padded cell `i` along `a`. Padding cells take the centre
    /// of the nearest domain cell, so whatever touches a face of the domain (guide
    /// walls, substrates) continues through the absorbing layer.
    fn centre(&self, a: usize, i: usize) -> f64 {
        let lo = self.m.pml[a][0];
        let j = i.clamp(lo, lo + self.m.domain_cells(a) - 1);
        self.m.mesh.centres(a)[j]
    }

    /// Padded cells along `a` whose centre lies in `[lo, hi)` (contiguous: the
    /// centres never decrease).
    fn cells_in(&self, a: usize, lo: f64, hi: f64) -> Range<usize> {
        let n = self.n(a);
        let inside = |i: usize| {
            let c = self.centre(a, i);
            c >= lo && c < hi
        };
        match (0..n).find(|&i| inside(i)) {
            None => 0..0,
            Some(first) => first..(first..n).take_while(|&i| inside(i)).last().map_or(first, |l| l) + 1,
        }
    }

    /// The padded index of the line nearest to `x` along `a`, within the domain.
    fn node(&self, a: usize, x: f64) -> usize {
        let lo = self.m.pml[a][0];
        let nd = self.m.domain_cells(a);
        if let Some(d) = self.m.mesh.uniform_d(a) {
            // The uniform rule in closed form (the same rounding as the grid it replaced).
            let k = ((x - self.geo.domain[a][0]) / d).round().clamp(0.0, nd as f64);
            return lo + k as usize;
        }
        let lines = &self.m.mesh.lines(a)[lo..=lo + nd];
        let k = lines.partition_point(|&l| l < x);
        let best = match k {
            0 => 0,
            k if k > nd => nd,
            k => {
                if x - lines[k - 1] <= lines[k] - x {
                    k - 1
                } else {
                    k
                }
            }
        };
        lo + best
    }

    /// The size of the cell around `x` along `a` (messages).
    fn cell_at(&self, a: usize, x: f64) -> f64 {
        let lines = self.m.mesh.lines(a);
        let i = lines.partition_point(|&l| l <= x).clamp(1, self.n(a)) - 1;
        self.m.mesh.cell(a, i)
    }
}

/// The job for `geo` on `m`, driven at port 0 (callers set `drive` and `label`).
pub(crate) fn voxelise(geo: &Geometry, m: &Meshed, d: &DesignFile, u: &Units, budget: MemoryBudget) -> Result<SimJob, DesignError> {
    // The memory check comes before the first allocation of the grid's size.
    check_grid(m.mesh.n(), budget, &u.file)?;
    let s = Snap { geo, m };
    check_mesh(&s, d, u)?;
    // Per primitive, in the file's order (a substrate's ground after its slab).
    let mut order: Vec<(usize, Option<&Solid>, Option<&SheetGeom>)> = geo.solids.iter().map(|x| (x.origin.index, Some(x), None)).collect();
    order.extend(geo.sheets.iter().map(|x| (x.origin.index, None, Some(x))));
    order.sort_by_key(|x| (x.0, x.1.is_none()));
    let mut sheets = vec![];
    // The field path of each snapped sheet, for messages.
    let mut sheet_at = vec![];
    // (sheet index, conductor) of the lossy ones.
    let mut lossy_sheets = vec![];
    for (_, solid, sheet) in order {
        if let Some(x) = solid {
            check_covers(&s, x, u)?;
        }
        if let Some(x) = sheet {
            if let Some(c) = x.conductor {
                lossy_sheets.push((sheets.len(), c));
            }
            sheets.push(snap_sheet(&s, x, u)?);
            sheet_at.push(x.origin.at.clone());
        }
    }
    let mut ports = vec![];
    for p in &geo.ports {
        ports.push(snap_port(&s, p, u)?);
    }
    check_port_overlaps(&ports, u)?;
    let mut loads = vec![];
    for l in &geo.loads {
        loads.push(snap_load(&s, l, u)?);
    }
    let g = &m.mesh;
    let mut cell_mat = vec![0u8; g.cells()];
    for x in &geo.solids {
        // Perfect cylinders and prisms are conformal on FDTD: not painted.
        if !matches!(x.shape, Shape::Extruded { mat, .. } if super::conformal::is_conformal_solid(geo, mat)) {
            paint(&s, &x.shape, &mut cell_mat);
        }
    }
    let conformal = conformal_fills(geo, m, u)?;
    // Discs and polygons: the cells of their plane whose centre they cover
    // (FDTD takes perfect ones conformally).
    for x in geo.shaped.iter().filter(|x| !super::conformal::is_conformal_sheet(geo, x.conductor)) {
        let before = sheets.len();
        sheets.extend(shaped_rows(&s, x));
        if sheets.len() == before {
            return Err(u.err(x.origin.at.as_str(), "covers no cell centre of its plane: it is smaller than a cell here; refine the mesh or enlarge it"));
        }
        if let Some(c) = x.conductor {
            lossy_sheets.extend((before..sheets.len()).map(|i| (i, c)));
        }
        sheet_at.extend(std::iter::repeat(x.origin.at.clone()).take(sheets.len() - before));
    }
    check_ports_not_shorted(geo, m, &ports, (&sheets, &sheet_at), &cell_mat, u)?;
    check_ports_clear_of_fills(&ports, &conformal, u)?;
    let surfaces = if geo.surfaces.is_empty() { Default::default() } else { Surfaces { sheets: lossy_sheets, ..geo.surfaces.clone() } };
    check_metals(&surfaces, &sheets, &sheet_at, g, d.band.start.max(d.band.stop * 1e-3), u)?;
    let opts = d.engine.options();
    let stop_default = StopRule::default();
    Ok(SimJob {
        label: d.name.clone(),
        engine: geo.kind,
        mesh: g.clone(),
        boundaries: geo.boundaries,
        pml: m.pml,
        materials: geo.materials.clone(),
        cell_mat: cell_mat.into(),
        conformal: conformal.into(),
        sheets,
        loads,
        surfaces,
        ports,
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(d.band.start, d.band.stop),
        freqs: d.band.freqs(),
        stop: StopRule {
            decay_db: opts.decay_db,
            max_steps: opts.max_steps.unwrap_or(stop_default.max_steps),
            check_every: stop_default.check_every,
            max_time: opts.max_time,
        },
        courant: opts.courant,
    })
}

/// Checked before the solids, whose own errors (a layer rounding to 0 cells)
/// would otherwise hide the cause.
fn check_mesh(s: &Snap, d: &DesignFile, u: &Units) -> Result<(), DesignError> {
    // The shortest wavelength is at the top frequency in the densest material used.
    let (name, index) = s.geo.densest();
    let f_top = d.band.stop;
    let lambda = C0 / (f_top * index);
    for a in Axis::ALL {
        if s.geo.collapse == Some(a) {
            continue;
        }
        let per = lambda / s.m.mesh.max_d(a.index());
        if per < MIN_CELLS_PER_WAVELENGTH {
            return Err(u.err(
                "engine.cell",
                format!(
                    "mesh too coarse: {:.1} cells per wavelength along {} at {} GHz in `{}` (sqrt(eps_r mu_r) = {:.3}); \
                     at least {} are needed: use a cell of at most {}",
                    per,
                    a.name(),
                    super::geometry::round_sig(f_top / 1e9),
                    name,
                    index,
                    MIN_CELLS_PER_WAVELENGTH,
                    u.show(lambda / MIN_CELLS_PER_WAVELENGTH)
                ),
            ));
        }
    }
    Ok(())
}

/// A solid must cover at least one cell centre (per axis for blocks).
fn check_covers(s: &Snap, x: &Solid, u: &Units) -> Result<(), DesignError> {
    let at = &x.origin.at;
    match (x.primitive, &x.shape) {
        (SolidKind::Box, Shape::Block { min, max, .. }) => {
            for a in Axis::ALL {
                let i = a.index();
                if s.cells_in(i, min[i], max[i]).is_empty() {
                    return Err(u.err(
                        at.as_str(),
                        format!("covers no cell centre along {}: it is thinner than a cell there or outside the domain", a.name()),
                    ));
                }
            }
        }
        (SolidKind::Substrate, Shape::Block { min, max, .. }) => {
            if s.cells_in(2, min[2], max[2]).is_empty() {
                return Err(u.err(
                    format!("{at}.thickness"),
                    format!("{} rounds to 0 cells (cell {} along z)", u.show(max[2] - min[2]), u.show(s.cell_at(2, min[2]))),
                ));
            }
        }
        (_, &Shape::Iris { axis, z0, z1, .. }) => {
            if s.cells_in(axis.index(), z0, z1).is_empty() {
                return Err(u.err(
                    format!("{at}.thickness"),
                    format!(
                        "{} rounds to 0 cells (cell {} along {}): refine the mesh or thicken the iris",
                        u.show(z1 - z0),
                        u.show(s.cell_at(axis.index(), z0)),
                        axis.name()
                    ),
                ));
            }
        }
        (_, &Shape::Post { axis, centre: c, radius: rad, .. }) => {
            let (p, q) = axis.others();
            let (pi, qi) = (p.index(), q.index());
            let covers = s
                .cells_in(pi, c[pi] - rad, c[pi] + rad)
                .any(|i| s.cells_in(qi, c[qi] - rad, c[qi] + rad).any(|j| (s.centre(pi, i) - c[pi]).hypot(s.centre(qi, j) - c[qi]) <= rad));
            if !covers {
                return Err(u.err(at.as_str(), "covers no cell centre: its radius is below half a cell, or it lies outside the domain"));
            }
        }
        // Conformal bodies are checked on their edges (`conformal_fills`).
        (_, Shape::Extruded { axis, lo, hi, region, mat }) if !super::conformal::is_conformal_solid(s.geo, *mat) => {
            // As for a Post: a shape thinner than a cell would vanish without a word.
            let (p, q) = axis.others();
            let (a, p, q) = (axis.index(), p.index(), q.index());
            let (bl, bh) = region.bbox();
            let covers = !s.cells_in(a, *lo, *hi).is_empty()
                && s.cells_in(p, bl[0], bh[0]).any(|i| s.cells_in(q, bl[1], bh[1]).any(|j| region.contains([s.centre(p, i), s.centre(q, j)])));
            if !covers {
                return Err(u.err(at.as_str(), "covers no cell centre: it is thinner than a cell here, or outside the domain; refine the mesh or enlarge it"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Snap a sheet: its plane to the nearest line, its extents to the nearest
/// lines, extended through the padding where they reach the domain's faces.
fn snap_sheet(s: &Snap, x: &SheetGeom, u: &Units) -> Result<Sheet, DesignError> {
    let at = x.origin.at.as_str();
    let (p, q) = x.normal.others();
    let mut nlo = [0usize; 2];
    let mut nhi = [0usize; 2];
    for (k, a) in [p, q].into_iter().enumerate() {
        let i = a.index();
        let (a0, a1) = (x.lo[k], x.hi[k]);
        let (n0, n1) = (s.node(i, a0), s.node(i, a1));
        if n0 == n1 {
            return Err(u.err(
                at,
                format!(
                    "is narrower than half a cell along {} ({} wide, cell {}): it vanishes on this mesh",
                    a.name(),
                    u.show(a1 - a0),
                    u.show(s.cell_at(i, 0.5 * (a0 + a1)))
                ),
            ));
        }
        let pad_lo = s.m.pml[i][0];
        nlo[k] = if n0 == pad_lo { 0 } else { n0 };
        nhi[k] = if n1 == pad_lo + s.m.domain_cells(i) { s.n(i) } else { n1 };
    }
    Ok(Sheet { normal: x.normal, plane: s.node(x.normal.index(), x.coord), lo: nlo, hi: nhi })
}

/// A load's nodes on the mesh (its ends are mesh lines: geometry events).
fn snap_load(s: &Snap, l: &super::geometry::LoadGeom, u: &Units) -> Result<Load, DesignError> {
    let at = l.origin.at.as_str();
    let (start, len) = snap_segment(s, l.from, l.to, l.axis, at, &format!("load `{}`", l.name), u)?;
    check_margin(s, u, at, "load", &l.name, l.axis, start, len)?;
    Ok(Load { name: l.name.clone(), axis: l.axis, start, len, r: l.r, l: l.l, c: l.c, topology: l.topology })
}

/// The lower node and the edge count of a segment from `f` to `t` along
/// `axis` (a lumped port's or load's), refused where both ends snap to one node.
fn snap_segment(s: &Snap, f: [f64; 3], t: [f64; 3], axis: Axis, at: &str, what: &str, u: &Units) -> Result<([usize; 3], usize), DesignError> {
    let nf: [usize; 3] = std::array::from_fn(|i| s.node(i, f[i]));
    let nt: [usize; 3] = std::array::from_fn(|i| s.node(i, t[i]));
    let ai = axis.index();
    let len = nf[ai].abs_diff(nt[ai]);
    if len == 0 {
        return Err(u.err(at, format!("{what}: both ends snap to the same grid node (length {}, cell {})", u.show((t[ai] - f[ai]).abs()), u.show(s.cell_at(ai, f[ai])))));
    }
    Ok((if nf[ai] <= nt[ai] { nf } else { nt }, len))
}

fn snap_port(s: &Snap, p: &super::geometry::PortGeom, u: &Units) -> Result<Port, DesignError> {
    let at = p.origin.at.as_str();
    let name = &p.name;
    let kind = match p.kind {
        PortGeomKind::Lumped { from: f, to: t, axis, r_ohm } => {
            let (start, len) = snap_segment(s, f, t, axis, at, &format!("port `{name}`"), u)?;
            check_margin(s, u, at, "port", name, axis, start, len)?;
            PortKind::Lumped { axis, start, len, r_ohm }
        }
        PortGeomKind::Waveguide { normal, coord: c, inward, e_axis, width_axis, a } => {
            let i = normal.index();
            let p = s.node(i, c);
            let side = if inward > 0 { 0 } else { 1 };
            let (pad, nd) = (s.m.pml[i][0], s.m.domain_cells(i));
            let room = if inward > 0 { p - pad } else { pad + nd - p };
            let need = SOURCE_OFFSET + 2;
            if room < need {
                // How far the plane must move: to the line `need` cells from the padding.
                let lines = s.m.mesh.lines(i);
                let target = if inward > 0 { pad + need } else { pad + nd - need };
                let by = (lines[target.min(s.n(i))] - lines[p]).abs();
                return Err(u.err(
                    format!("{at}.plane"),
                    format!(
                        "port `{name}` is {room} cells from the absorbing padding on the {}-{} face; its source needs at least {need}: move it {} or more into the domain",
                        normal.name(),
                        ["low", "high"][side],
                        u.show(by)
                    ),
                ));
            }
            PortKind::Waveguide { normal, plane: p, inward, e_axis, width_axis, a, source_offset: SOURCE_OFFSET, shift_m: 0.0 }
        }
    };
    Ok(Port { name: name.clone(), kind })
}

/// A lumped element (`kind` "port" or "load") on `len` edges from `start`
/// along `axis` keeps [`PORT_MARGIN`] cells from the absorbing padding: the
/// CPML is not the open space such an element is meant to see, and a
/// current source in it is partly absorbed.
#[allow(clippy::too_many_arguments)]
fn check_margin(s: &Snap, u: &Units, at: &str, kind: &str, name: &str, axis: Axis, start: [usize; 3], len: usize) -> Result<(), DesignError> {
    for a in Axis::ALL {
        let i = a.index();
        let (n0, n1) = (start[i], start[i] + if a == axis { len } else { 0 });
        let pad = s.m.pml[i][0];
        let too_close = |side: &str, cells: usize| {
            u.err(at, format!("{kind} `{name}` is {cells} cells from the absorbing padding on the {}-{side} face; keep {kind}s at least {PORT_MARGIN} cells inside", a.name()))
        };
        if s.m.pml[i][0] > 0 && n0 - pad < PORT_MARGIN {
            return Err(too_close("low", n0 - pad));
        }
        if s.m.pml[i][1] > 0 && pad + s.m.domain_cells(i) - n1 < PORT_MARGIN {
            return Err(too_close("high", pad + s.m.domain_cells(i) - n1));
        }
    }
    Ok(())
}

/// Grid nodes a lumped port runs through.
pub(crate) fn port_nodes(k: &PortKind) -> Vec<[usize; 3]> {
    match *k {
        PortKind::Lumped { axis, start, len, .. } => (0..=len)
            .map(|m| {
                let mut n = start;
                n[axis.index()] += m;
                n
            })
            .collect(),
        PortKind::Waveguide { .. } => vec![],
    }
}

fn check_port_overlaps(ports: &[Port], u: &Units) -> Result<(), DesignError> {
    for (j, b) in ports.iter().enumerate() {
        for a in &ports[..j] {
            let clash = match (&a.kind, &b.kind) {
                (PortKind::Waveguide { normal: na, plane: pa, .. }, PortKind::Waveguide { normal: nb, plane: pb, .. }) => {
                    (na == nb && pa == pb).then(|| format!("lies on the same grid plane ({} = {pa}) as port `{}`", na.name(), a.name))
                }
                (PortKind::Lumped { .. }, PortKind::Lumped { .. }) => {
                    let na = port_nodes(&a.kind);
                    port_nodes(&b.kind)
                        .into_iter()
                        .find(|n| na.contains(n))
                        .map(|n| format!("shares grid node {n:?} with port `{}`: ports must not touch", a.name))
                }
                _ => None,
            };
            if let Some(m) = clash {
                return Err(u.err(format!("ports[{j}]"), format!("port `{}` {m}", b.name)));
            }
        }
    }
    Ok(())
}

fn paint(s: &Snap, shape: &Shape, cell_mat: &mut [u8]) {
    let g = &s.m.mesh;
    let n = g.n();
    let all = |a: usize| 0..n[a];
    // Cells of a slab, and a per-cell test on the centres.
    let mut fill = |ranges: [Range<usize>; 3], mat: u8, keep: &dyn Fn([usize; 3]) -> bool| {
        for k in ranges[2].clone() {
            for j in ranges[1].clone() {
                for i in ranges[0].clone() {
                    if keep([i, j, k]) {
                        cell_mat[g.idx(i, j, k)] = mat;
                    }
                }
            }
        }
    };
    match *shape {
        Shape::Block { mat, min, max } => {
            let ranges = std::array::from_fn(|a| s.cells_in(a, min[a], max[a]));
            fill(ranges, mat, &|_| true);
        }
        Shape::Iris { mat, axis, wide, z0, z1, centre, half } => {
            let mut ranges: [_; 3] = std::array::from_fn(all);
            ranges[axis.index()] = s.cells_in(axis.index(), z0, z1);
            let w = wide.index();
            // The aperture: cells whose centre is within half the width of the middle.
            fill(ranges, mat, &|c| (s.centre(w, c[w]) - centre).abs() >= half);
        }
        Shape::Post { mat, axis, centre, radius } => {
            let (p, q) = axis.others();
            let (p, q) = (p.index(), q.index());
            let mut ranges: [_; 3] = std::array::from_fn(all);
            ranges[p] = s.cells_in(p, centre[p] - radius, centre[p] + radius);
            ranges[q] = s.cells_in(q, centre[q] - radius, centre[q] + radius);
            fill(ranges, mat, &|c| (s.centre(p, c[p]) - centre[p]).hypot(s.centre(q, c[q]) - centre[q]) <= radius);
        }
        Shape::Extruded { mat, axis, lo, hi, ref region } => {
            let (p, q) = axis.others();
            let (a, p, q) = (axis.index(), p.index(), q.index());
            let (bl, bh) = region.bbox();
            let mut ranges: [_; 3] = std::array::from_fn(all);
            ranges[a] = s.cells_in(a, lo, hi);
            ranges[p] = s.cells_in(p, bl[0], bh[0]);
            ranges[q] = s.cells_in(q, bl[1], bh[1]);
            fill(ranges, mat, &|c| region.contains([s.centre(p, c[p]), s.centre(q, c[q])]));
        }
    }
}

/// The conformal fills of `geo` (FDTD), refusing a conformal body that
/// covers no whole E edge: thinner than a cell there, it would all but
/// vanish from the grid.
fn conformal_fills(geo: &Geometry, m: &Meshed, u: &Units) -> Result<crate::job::Conformal, DesignError> {
    let (fills, seen) = super::conformal::fills(geo, m);
    let origins = geo
        .solids
        .iter()
        .filter(|x| matches!(x.shape, Shape::Extruded { mat, .. } if super::conformal::is_conformal_solid(geo, mat)))
        .map(|x| &x.origin)
        .chain(geo.shaped.iter().filter(|x| super::conformal::is_conformal_sheet(geo, x.conductor)).map(|x| &x.origin));
    for (origin, seen) in origins.zip(&seen) {
        if !seen {
            return Err(u.err(
                origin.at.as_str(),
                "covers no whole E edge of the mesh: it is thinner than a cell here and would all but vanish; refine the mesh (`max_cell`, `edge_cell`) or make it larger",
            ));
        }
    }
    Ok(fills)
}

/// A Disc or Polygon sheet on the cell-centre rule: per row of cells
/// of its plane, runs of cells whose centre it covers, each a rectangle.
fn shaped_rows(s: &Snap, x: &ShapedSheet) -> Vec<Sheet> {
    let (p, q) = x.normal.others();
    let (p, q) = (p.index(), q.index());
    let plane = s.node(x.normal.index(), x.coord);
    let (bl, bh) = x.region.bbox();
    let mut out = vec![];
    let cells = s.cells_in(p, bl[0], bh[0]);
    let end = cells.end;
    for j in s.cells_in(q, bl[1], bh[1]) {
        let mut run: Option<usize> = None;
        for i in cells.clone().chain(std::iter::once(end)) {
            let inside = i < end && x.region.contains([s.centre(p, i), s.centre(q, j)]);
            match (inside, run) {
                (true, None) => run = Some(i),
                (false, Some(i0)) => {
                    out.push(Sheet { normal: x.normal, plane, lo: [i0, j], hi: [i, j + 1] });
                    run = None;
                }
                _ => {}
            }
        }
    }
    out
}


/// A lumped port's edges must not be cut by conformal metal (it would short
/// or load the port where the file does not say so).
fn check_ports_clear_of_fills(ports: &[Port], fills: &crate::job::Conformal, u: &Units) -> Result<(), DesignError> {
    if fills.edges.is_empty() {
        return Ok(());
    }
    let cut: std::collections::HashSet<(usize, [u32; 3])> = fills.edges.iter().map(|f| (f.comp.index(), f.at)).collect();
    for (pi, port) in ports.iter().enumerate() {
        let PortKind::Lumped { axis, .. } = port.kind else { continue };
        let nodes = port_nodes(&port.kind);
        for n in &nodes[..nodes.len() - 1] {
            if cut.contains(&(axis.index(), n.map(|x| x as u32))) {
                return Err(u.err(
                    format!("ports[{pi}]"),
                    format!("port `{}` is short-circuited: one of its edges along {} lies in or is cut by a conformal metal shape (Cylinder, Prism, Disc or Polygon)", port.name, axis.name()),
                ));
            }
        }
    }
    Ok(())
}

/// A lumped port whose E edges touch a conductor would be short-circuited: the
/// engines force every E edge touching a PEC cell, lying in a sheet or lying on a
/// PEC face to zero.
fn check_ports_not_shorted(
    geo: &Geometry,
    m: &Meshed,
    ports: &[Port],
    (sheets, sheet_at): (&[Sheet], &[String]),
    cell_mat: &[u8],
    u: &Units,
) -> Result<(), DesignError> {
    let g = &m.mesh;
    let gn = g.n();
    // A node or cell corner in design units, as users wrote the geometry.
    let at = |c: [usize; 3]| {
        let v: Vec<String> = (0..3).map(|a| crate::numfmt::short(super::geometry::round_sig(g.lines(a)[c[a].min(gn[a])] / u.u))).collect();
        format!("({}) {}", v.join(", "), u.symbol)
    };
    for (pi, port) in ports.iter().enumerate() {
        let PortKind::Lumped { axis, .. } = port.kind else { continue };
        let nodes = port_nodes(&port.kind);
        let a = axis.index();
        let (p, q) = axis.others();
        let (p, q) = (p.index(), q.index());
        for n in &nodes[..nodes.len() - 1] {
            let shorted_by = |why: String| {
                u.err(
                    format!("ports[{pi}]"),
                    format!("port `{}` is short-circuited: its edge from {} along {} {why}", port.name, at(*n), axis.name()),
                )
            };
            // The four cells sharing the edge.
            for dp in [0, 1] {
                for dq in [0, 1] {
                    let (Some(cp), Some(cq)) = (n[p].checked_sub(dp), n[q].checked_sub(dq)) else { continue };
                    if cp >= gn[p] || cq >= gn[q] {
                        continue;
                    }
                    let mut c = [0usize; 3];
                    c[a] = n[a];
                    c[p] = cp;
                    c[q] = cq;
                    let mat = &geo.materials[cell_mat[g.idx(c[0], c[1], c[2])] as usize];
                    if mat.pec {
                        let far = [c[0] + 1, c[1] + 1, c[2] + 1];
                        return Err(shorted_by(format!("touches the PEC cell from {} to {} (`{}`)", at(c), at(far), mat.name)));
                    }
                }
            }
            for (si, s) in sheets.iter().enumerate() {
                let ni = s.normal.index();
                if ni == a || n[ni] != s.plane {
                    continue;
                }
                let (o1, o2) = s.normal.others();
                let inside = [o1, o2].iter().enumerate().all(|(k, o)| {
                    let oi = o.index();
                    let top = if oi == a { n[oi] + 1 } else { n[oi] };
                    n[oi] >= s.lo[k] && top <= s.hi[k]
                });
                if inside {
                    let plane = crate::numfmt::short(super::geometry::round_sig(g.lines(ni)[s.plane.min(gn[ni])] / u.u));
                    return Err(shorted_by(format!("lies in sheet {si} ({}, in the plane {} = {plane} {})", sheet_at[si], s.normal.name(), u.symbol)));
                }
            }
            for b in [p, q] {
                for (side, at) in [(0, 0), (1, gn[b])] {
                    if n[b] == at && geo.boundaries[b][side] == Boundary::Pec {
                        let face = format!("{}-{}", Axis::from_index(b).name(), ["low", "high"][side]);
                        return Err(shorted_by(format!("lies on the Pec {face} face of the domain")));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Lossy metal the surface impedance can model: a sheet no thicker than
/// the cells beside it (a thicker one is a solid), and a skin depth below
/// half the smallest cell at the band's low edge (else the metal is not a
/// good conductor at this mesh: a dielectric with `sigma` models it).
fn check_metals(sf: &Surfaces, sheets: &[Sheet], sheet_at: &[String], g: &Mesh, f_lo: f64, u: &Units) -> Result<(), DesignError> {
    let w = 2.0 * std::f64::consts::PI * f_lo;
    let dmin = (0..3).map(|a| g.min_d(a)).fold(f64::INFINITY, f64::min);
    for c in &sf.conductors {
        let delta = c.skin_depth(w);
        if delta > 0.5 * dmin && c.thickness.is_none_or(|t| t > delta) {
            return Err(u.err(
                format!("materials.{}", c.name).as_str(),
                format!(
                    "a conductivity of {} S/m has a skin depth of {} at the band's low edge, more than half the smallest cell ({}): \
                     the surface impedance needs a good conductor; model it as Dielectric(eps_r: 1, sigma: {})",
                    crate::numfmt::short(c.sigma), u.show(delta), u.show(dmin), crate::numfmt::short(c.sigma)
                ),
            ));
        }
    }
    for &(i, c) in &sf.sheets {
        let (s, cond) = (&sheets[i], &sf.conductors[c as usize]);
        let Some(t) = cond.thickness else { continue };
        let a = s.normal.index();
        let beside = [s.plane.checked_sub(1), (s.plane < g.n()[a]).then_some(s.plane)];
        let d = beside.iter().flatten().map(|&k| g.d(a)[k]).fold(f64::INFINITY, f64::min);
        if t > d {
            return Err(u.err(
                sheet_at[i].as_str(),
                format!(
                    "its metal `{}` is {} thick, more than the {} cell beside it along {}: draw it as a Box of `{}` (a solid) instead of a sheet",
                    cond.name,
                    u.show(t),
                    u.show(d),
                    s.normal.name(),
                    cond.name
                ),
            ));
        }
    }
    Ok(())
}
