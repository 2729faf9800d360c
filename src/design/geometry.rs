//! One design at one set of parameter values, in metres and without any mesh:
//! the evaluated domain, its faces, the materials, the solids to paint, the
//! sheets and the ports. Every check that needs values but no mesh happens
//! here; the mesher ([`super::mesh`]) then lays lines over it and the
//! voxeliser ([`super::voxel`]) snaps it onto them.
//!
//! [`Geometry::events`] lists, per axis, every coordinate where something
//! happens (a metal edge and the side its metal is on, a material interface,
//! a port, a domain face), each with a stable identity, so that a mesher can
//! put lines there and keep their number as the parameters move.

use std::collections::BTreeMap;

use super::error::DesignError;
use super::expr::{Expr, Scope};
use super::format::{builtin_metal, DesignFile, LossModel, MaterialSpec, PortSpec, Primitive, Transform, Vec2, Vec3};
use super::placement::Affine;
pub use super::region::Region;
use super::validate::{boundary_faces, invariant_faces_problem};
use crate::consts::EPS0;
use crate::job::{Axis, Boundary, Conductor, EngineKind, Material, Surfaces, Topology};

/// A solid to paint onto the cells (cell-centre rule; later solids win).
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Cells whose centre lies in `[min, max)` on every axis.
    Block { mat: u8, min: [f64; 3], max: [f64; 3] },
    /// Cells whose centre lies in `[z0, z1)` along `axis`, except those within
    /// `half` of `centre` along `wide` (the aperture).
    Iris { mat: u8, axis: Axis, wide: Axis, z0: f64, z1: f64, centre: f64, half: f64 },
    /// Cells whose centre lies within `radius` of `centre`, across `axis`.
    Post { mat: u8, axis: Axis, centre: [f64; 3], radius: f64 },
    /// Cells whose centre lies in `region` (in the plane normal to `axis`)
    /// and in `[lo, hi)` along `axis`: cylinders, tubes, prisms.
    Extruded { mat: u8, axis: Axis, lo: f64, hi: f64, region: Region },
}

/// Which primitive of the design file a piece of geometry comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// Index into the file's `geometry` (or `ports`).
    pub index: usize,
    /// Which leaf of a `Group`/`Repeat` at `index` (0 for a plain primitive).
    pub part: usize,
    /// The field path messages name, e.g. `geometry[2] (Iris)`.
    pub at: String,
}

/// A solid of the geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct Solid {
    pub shape: Shape,
    pub origin: Origin,
    /// The primitive it was written as (messages differ).
    pub primitive: SolidKind,
}

/// The design-file primitive a [`Solid`] was written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolidKind {
    Box,
    Iris,
    Post,
    Substrate,
    Cylinder,
    Prism,
}

/// A zero-thickness PEC rectangle at `coord` along `normal`, spanning
/// `lo..hi` (metres, clipped to the domain) along the two other axes in the
/// order of [`Axis::others`].
#[derive(Debug, Clone, PartialEq)]
pub struct SheetGeom {
    pub normal: Axis,
    pub coord: f64,
    pub lo: [f64; 2],
    pub hi: [f64; 2],
    pub origin: Origin,
    /// Its metal (index into [`Geometry::surfaces`]' conductors); perfect when `None`.
    pub conductor: Option<u8>,
}

/// A zero-thickness PEC region (a `Disc` or `Polygon`) in the plane
/// `normal = coord`, snapped like a [`SheetGeom`]: the cells of its plane
/// whose centre it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapedSheet {
    pub normal: Axis,
    pub coord: f64,
    pub region: Region,
    pub origin: Origin,
    pub conductor: Option<u8>,
}

/// A port in metres.
#[derive(Debug, Clone, PartialEq)]
pub enum PortGeomKind {
    /// From `from` to `to` (differing along `axis` only), resistance `r_ohm`.
    Lumped { from: [f64; 3], to: [f64; 3], axis: Axis, r_ohm: f64 },
    /// TE10 reference plane at `coord` along `normal`, looking into the domain
    /// along `inward`; E along `e_axis`, the sine across `width_axis` of width `a`.
    Waveguide { normal: Axis, coord: f64, inward: i8, e_axis: Axis, width_axis: Axis, a: f64 },
}

/// A lumped load in metres (`from`, `to` differ along `axis` only).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadGeom {
    pub name: String,
    pub from: [f64; 3],
    pub to: [f64; 3],
    pub axis: Axis,
    pub r: Option<f64>,
    pub l: Option<f64>,
    pub c: Option<f64>,
    pub topology: Topology,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PortGeom {
    pub name: String,
    pub kind: PortGeomKind,
    pub origin: Origin,
}

/// A design at one set of values, in metres: what the mesher and the
/// voxeliser read.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    pub kind: EngineKind,
    /// The invariant axis (one cell), if any.
    pub collapse: Option<Axis>,
    /// `[axis][lo, hi]` in metres.
    pub domain: [[f64; 2]; 3],
    pub boundaries: [[Boundary; 2]; 3],
    /// Index 0 is the background (vacuum).
    pub materials: Vec<Material>,
    pub solids: Vec<Solid>,
    pub sheets: Vec<SheetGeom>,
    pub shaped: Vec<ShapedSheet>,
    pub loads: Vec<LoadGeom>,
    pub ports: Vec<PortGeom>,
    /// Lossy metal: the conductors, which PEC materials are one, the walls
    /// (the sheets' own are in [`SheetGeom::conductor`]).
    pub surfaces: Surfaces,
    /// Lengths closer than this are equal (metres).
    pub tol: f64,
}

/// What happens at a coordinate of one axis ([`Geometry::events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The edge of a PEC solid or sheet; `metal` says on which side of the
    /// coordinate the metal lies (a sheet lying in the plane: [`Side::Both`]).
    MetalEdge { metal: Side },
    /// A face between two media (a dielectric solid's face).
    Interface,
    /// A lumped port's end or position across it (lines go through it).
    PortNode,
    /// A waveguide port's reference plane; its source lies behind it (on the
    /// side away from `inward`).
    PortPlane { inward: i8 },
    /// A face of the domain.
    DomainFace { side: Side },
}

/// A side of a coordinate along its axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Low,
    High,
    Both,
}

/// Who an event belongs to, and which of its faces it is: stable while the
/// parameters move (the same primitive keeps the same identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId {
    pub owner: Owner,
    pub face: Face,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// `geometry[i]` of the design file.
    Primitive(usize),
    /// `ports[i]`.
    Port(usize),
    Domain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Face {
    /// The low / high face of a solid, sheet or domain along the axis.
    Min,
    Max,
    /// A sheet's own plane.
    Plane,
    /// The two edges of an iris's aperture.
    ApertureLow,
    ApertureHigh,
    /// A lumped port's two ends along its axis, its position across it.
    From,
    To,
    Across,
    /// A waveguide port's reference plane.
    Reference,
    /// The axis of a cylinder or disc: a line there puts a node inside even
    /// a via thinner than a cell.
    Centre,
}

/// One coordinate where something happens along an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeshEvent {
    /// Metres.
    pub coord: f64,
    pub kind: EventKind,
    pub id: EventId,
}

impl Geometry {
    /// Per axis, every coordinate inside the domain (faces included) where a
    /// solid, sheet or port begins or ends, sorted by coordinate. The
    /// invariant axis lists its domain faces only.
    pub fn events(&self) -> [Vec<MeshEvent>; 3] {
        let mut ev: [Vec<MeshEvent>; 3] = [vec![], vec![], vec![]];
        let inside = |a: usize, x: f64| x.is_finite() && x >= self.domain[a][0] - self.tol && x <= self.domain[a][1] + self.tol;
        let mut push = |a: usize, coord: f64, kind: EventKind, owner: Owner, face: Face| {
            if inside(a, coord) && self.collapse.map(|c| c.index()) != Some(a) {
                ev[a].push(MeshEvent { coord, kind, id: EventId { owner, face } });
            }
        };
        for s in &self.solids {
            let owner = Owner::Primitive(s.origin.key());
            let edge = |mat: u8, metal: Side| if self.materials[mat as usize].pec { EventKind::MetalEdge { metal } } else { EventKind::Interface };
            match s.shape {
                Shape::Block { mat, min, max } => {
                    for a in 0..3 {
                        push(a, min[a], edge(mat, Side::High), owner, Face::Min);
                        push(a, max[a], edge(mat, Side::Low), owner, Face::Max);
                    }
                }
                Shape::Iris { mat, axis, wide, z0, z1, centre, half } => {
                    push(axis.index(), z0, edge(mat, Side::High), owner, Face::Min);
                    push(axis.index(), z1, edge(mat, Side::Low), owner, Face::Max);
                    // Metal lies outside the aperture.
                    push(wide.index(), centre - half, edge(mat, Side::Low), owner, Face::ApertureLow);
                    push(wide.index(), centre + half, edge(mat, Side::High), owner, Face::ApertureHigh);
                }
                Shape::Post { mat, axis, centre, radius } => {
                    let (p, q) = axis.others();
                    for a in [p.index(), q.index()] {
                        push(a, centre[a] - radius, edge(mat, Side::High), owner, Face::Min);
                        push(a, centre[a] + radius, edge(mat, Side::Low), owner, Face::Max);
                    }
                }
                Shape::Extruded { mat, axis, lo, hi, ref region } => {
                    push(axis.index(), lo, edge(mat, Side::High), owner, Face::Min);
                    push(axis.index(), hi, edge(mat, Side::Low), owner, Face::Max);
                    region_events(&mut push, axis, region, edge(mat, Side::High), edge(mat, Side::Low), owner);
                }
            }
        }
        for s in &self.shaped {
            let owner = Owner::Primitive(s.origin.key());
            push(s.normal.index(), s.coord, EventKind::MetalEdge { metal: Side::Both }, owner, Face::Plane);
            let (lo, hi) = (EventKind::MetalEdge { metal: Side::High }, EventKind::MetalEdge { metal: Side::Low });
            region_events(&mut push, s.normal, &s.region, lo, hi, owner);
        }
        for s in &self.sheets {
            let owner = Owner::Primitive(s.origin.key());
            push(s.normal.index(), s.coord, EventKind::MetalEdge { metal: Side::Both }, owner, Face::Plane);
            let (p, q) = s.normal.others();
            for (k, a) in [p.index(), q.index()].into_iter().enumerate() {
                push(a, s.lo[k], EventKind::MetalEdge { metal: Side::High }, owner, Face::Min);
                push(a, s.hi[k], EventKind::MetalEdge { metal: Side::Low }, owner, Face::Max);
            }
        }
        // A load's ends and position are mesh lines, as a lumped port's.
        for l in &self.loads {
            let owner = Owner::Primitive(l.origin.key());
            for a in 0..3 {
                if a == l.axis.index() {
                    push(a, l.from[a], EventKind::PortNode, owner, Face::From);
                    push(a, l.to[a], EventKind::PortNode, owner, Face::To);
                } else {
                    push(a, l.from[a], EventKind::PortNode, owner, Face::Across);
                }
            }
        }
        for (pi, p) in self.ports.iter().enumerate() {
            let owner = Owner::Port(pi);
            match p.kind {
                PortGeomKind::Lumped { from, to, axis, .. } => {
                    for a in 0..3 {
                        if a == axis.index() {
                            push(a, from[a], EventKind::PortNode, owner, Face::From);
                            push(a, to[a], EventKind::PortNode, owner, Face::To);
                        } else {
                            push(a, from[a], EventKind::PortNode, owner, Face::Across);
                        }
                    }
                }
                PortGeomKind::Waveguide { normal, coord, inward, .. } => {
                    push(normal.index(), coord, EventKind::PortPlane { inward }, owner, Face::Reference);
                }
            }
        }
        for (a, list) in ev.iter_mut().enumerate() {
            for (side, face, x) in [(Side::Low, Face::Min, self.domain[a][0]), (Side::High, Face::Max, self.domain[a][1])] {
                list.push(MeshEvent { coord: x, kind: EventKind::DomainFace { side }, id: EventId { owner: Owner::Domain, face } });
            }
            list.sort_by(|x, y| x.coord.total_cmp(&y.coord).then(x.id.cmp(&y.id)));
        }
        ev
    }

    /// The densest material any solid uses: its name and sqrt(eps_r mu_r).
    pub fn densest(&self) -> (String, f64) {
        let mut best = ("vacuum".to_string(), 1.0);
        for s in &self.solids {
            let mat = match s.shape {
                Shape::Block { mat, .. } | Shape::Iris { mat, .. } | Shape::Post { mat, .. } | Shape::Extruded { mat, .. } => mat,
            };
            let m = &self.materials[mat as usize];
            // A dispersive medium's eps_r is its value at infinite frequency: its
            // static value (plus the Debye and Lorentz strengths) bounds it in the band.
            let eps = m.eps_r
                + m.poles.iter().map(|p| match *p {
                    crate::job::Pole::Debye { delta_eps, .. } | crate::job::Pole::Lorentz { delta_eps, .. } => delta_eps.max(0.0),
                    crate::job::Pole::Drude { .. } => 0.0,
                }).sum::<f64>();
            if !m.pec && eps * m.mu_r > best.1 {
                best = (m.name.clone(), eps * m.mu_r);
            }
        }
        (best.0, best.1.sqrt())
    }
}

impl Origin {
    /// A number unique per leaf primitive (the mesher's identity of its lines).
    pub fn key(&self) -> usize {
        self.index | (self.part << 32)
    }
}

/// A plane region's events: its extremes along the plane's two axes (metal
/// inside) and, for a disc, its centre.
fn region_events(push: &mut impl FnMut(usize, f64, EventKind, Owner, Face), normal: Axis, r: &Region, lo: EventKind, hi: EventKind, owner: Owner) {
    let (p, q) = normal.others();
    let (bl, bh) = r.bbox();
    for (k, a) in [p.index(), q.index()].into_iter().enumerate() {
        push(a, bl[k], lo, owner, Face::Min);
        push(a, bh[k], hi, owner, Face::Max);
        if let Region::Disc { c, .. } = r {
            push(a, c[k], EventKind::Interface, owner, Face::Centre);
        }
    }
}

/// Lengths in messages: the design's units, 6 significant digits.
#[derive(Debug, Clone)]
pub struct Units {
    pub file: String,
    /// Metres per design unit.
    pub u: f64,
    pub symbol: &'static str,
}

impl Units {
    pub fn of(d: &DesignFile, file: &str) -> Units {
        Units { file: file.to_string(), u: d.units.metres(), symbol: d.units.symbol() }
    }
    pub fn err(&self, at: impl Into<String>, m: impl Into<String>) -> DesignError {
        DesignError::invalid(&self.file, at, m)
    }
    /// A length in design units ("0.25 mm").
    pub fn show(&self, m: f64) -> String {
        format!("{} {}", round_sig(m / self.u), self.symbol)
    }
    /// "0..25 mm".
    pub fn range(&self, lo: f64, hi: f64) -> String {
        format!("{}..{} {}", round_sig(lo / self.u), round_sig(hi / self.u), self.symbol)
    }
}

/// Round for display (6 significant digits, no float noise).
pub(crate) fn round_sig(x: f64) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    let p = 10f64.powi(5 - x.abs().log10().floor() as i32);
    (x * p).round() / p
}

struct Ctx<'a> {
    d: &'a DesignFile,
    units: Units,
    scope: Scope,
    /// Lengths closer than this are equal (metres).
    tol: f64,
}

impl Ctx<'_> {
    fn err(&self, at: impl Into<String>, m: impl Into<String>) -> DesignError {
        self.units.err(at, m)
    }
    /// A length field in metres.
    fn len(&self, e: &Expr, at: &str) -> Result<f64, DesignError> {
        Ok(self.scope.eval(e, at)? * self.units.u)
    }
    fn point(&self, v: &Vec3, at: &str) -> Result<[f64; 3], DesignError> {
        Ok([self.len(&v.0, &format!("{at}.x"))?, self.len(&v.1, &format!("{at}.y"))?, self.len(&v.2, &format!("{at}.z"))?])
    }
    fn show(&self, m: f64) -> String {
        self.units.show(m)
    }
    fn range(&self, lo: f64, hi: f64) -> String {
        self.units.range(lo, hi)
    }
}

/// Evaluate and check `d` at `values` for engine `kind`: the geometry in metres.
pub(crate) fn evaluate(d: &DesignFile, file: &str, values: &BTreeMap<String, f64>, kind: EngineKind) -> Result<Geometry, DesignError> {
    let domain_u = [&d.domain.x, &d.domain.y, &d.domain.z];
    let cx = Ctx { d, units: Units::of(d, file), scope: Scope::new(file, &d.constants, values), tol: 0.0 };
    let mut domain = [[0.0; 2]; 3];
    for a in Axis::ALL {
        let (lo, hi) = domain_u[a.index()];
        let at = format!("domain.{}", a.name());
        let lo = cx.len(lo, &format!("{at}[0]"))?;
        let hi = cx.len(hi, &format!("{at}[1]"))?;
        if hi <= lo {
            return Err(cx.err(at, format!("hi ({}) must be above lo ({})", cx.show(hi), cx.show(lo))));
        }
        domain[a.index()] = [lo, hi];
    }
    let extent = |a: Axis| domain[a.index()][1] - domain[a.index()][0];
    let tol = 1e-9 * Axis::ALL.iter().map(|&a| extent(a)).fold(0.0, f64::max);
    let cx = Ctx { tol, ..cx };

    let opts = d.engine.options();
    // The invariant axis (declared, or inferred for Tlm2d) gets one cell spanning
    // the domain. For an H-plane structure (uniform along y, PEC faces at both y
    // ends) the TE_m0 fields are Ey, Hx, Hz, uniform in y. On a Yee grid of one
    // cell along y, Ey sits on edges spanning the full height, Hx and Hz on faces
    // between them, and the only Ex, Ez edges lie on the PEC faces where they are
    // zero; every y-difference in the curl equations then vanishes identically and
    // the update is exactly the 2D TE update: no discretisation error along y, and
    // the large dy only relaxes the time step limit. TLM's 2D shunt node solves the
    // same 2D problem; the 3D SCN runs the one cell as a cubic slab (its time step
    // would shrink with the cell's aspect ratio) and scales the port signals back.
    let faces = boundary_faces(d);
    let collapse = match opts.invariant {
        Some(a) => Some(a),
        None if kind == EngineKind::Tlm2d || d.engine.kind() == EngineKind::Tlm2d => {
            let a = infer_collapse(&cx, &domain)?;
            if let Some(m) = invariant_faces_problem(&faces, a) {
                return Err(cx.err("engine.invariant", format!("Tlm2d collapses {} (inferred): {m}", a.name())));
            }
            Some(a)
        }
        None => None,
    };
    let mut g = Geometry {
        kind,
        collapse,
        domain,
        boundaries: faces,
        materials: vec![Material::vacuum()],
        solids: vec![],
        sheets: vec![],
        shaped: vec![],
        loads: vec![],
        ports: vec![],
        surfaces: Surfaces::default(),
        tol,
    };
    if let Some(w) = &d.boundaries.walls {
        let c = metal_of(&cx, &mut g, w, "boundaries.walls", false)?.ok_or_else(|| cx.err("boundaries.walls", "`Pec` walls are the default: name a metal (Copper, ...) or leave `walls` out"))?;
        for (a, faces) in g.boundaries.iter().enumerate() {
            for (side, f) in faces.iter().enumerate() {
                if *f == Boundary::Pec {
                    g.surfaces.walls[a][side] = Some(c);
                }
            }
        }
    }
    for (i, p) in d.geometry.iter().enumerate() {
        let mut part = 0;
        place(&cx, &mut g, p, i, &mut part, &format!("geometry[{i}] ({})", p.kind()), &Affine::IDENTITY)?;
    }
    for (i, p) in d.ports.iter().enumerate() {
        let port = port(&cx, &g, p, Origin { index: i, part: 0, at: format!("ports[{i}]") })?;
        g.ports.push(port);
    }
    Ok(g)
}

/// Tlm2d without a declared invariant axis: the axis along the waveguide ports'
/// E field (the narrower transverse side), which all ports must agree on.
fn infer_collapse(cx: &Ctx, domain: &[[f64; 2]; 3]) -> Result<Axis, DesignError> {
    let mut found: Option<Axis> = None;
    for p in &cx.d.ports {
        if let PortSpec::Waveguide { plane, .. } = p {
            let (normal, _) = plane.axis_and_coord();
            let (e, _) = guide_axes(domain, normal);
            match found {
                Some(f) if f != e => {
                    return Err(cx.err(
                        "engine.invariant",
                        "Tlm2d cannot infer the invariant axis: the waveguide ports' E fields lie along different axes; declare it",
                    ))
                }
                _ => found = Some(e),
            }
        }
    }
    found.ok_or_else(|| {
        cx.err("engine.invariant", "Tlm2d needs an invariant axis: declare one (e.g. `invariant: Y`); there is no waveguide port to infer it from")
    })
}

/// (E axis, width axis) of a guide along `normal`: E lies along the narrower side.
pub(crate) fn guide_axes(domain: &[[f64; 2]; 3], normal: Axis) -> (Axis, Axis) {
    let (p, q) = normal.others();
    let ext = |a: Axis| domain[a.index()][1] - domain[a.index()][0];
    if ext(p) < ext(q) {
        (p, q)
    } else {
        (q, p)
    }
}

fn material(cx: &Ctx, g: &mut Geometry, name: &str, at: &str) -> Result<u8, DesignError> {
    let m = if name.eq_ignore_ascii_case("vacuum") {
        return Ok(0);
    } else if name.eq_ignore_ascii_case("pec") {
        Material::pec()
    } else if builtin_metal(name).is_some() || matches!(cx.d.materials.get(name), Some(MaterialSpec::Metal { .. })) {
        // A solid of metal: PEC on the grid, lossy through its (thick) faces.
        let c = metal_of(cx, g, name, at, false)?.expect("a metal");
        let k = material_slot(cx, g, Material { name: name.into(), ..Material::pec() }, at)?;
        if g.surfaces.of_material(k).is_none() {
            g.surfaces.materials.push((k, c));
        }
        return Ok(k);
    } else {
        match cx.d.materials.get(name) {
            Some(MaterialSpec::Pec) => Material { name: name.into(), ..Material::pec() },
            Some(MaterialSpec::Metal { .. }) => unreachable!("handled above"),
            Some(&MaterialSpec::Dielectric { eps_r, tan_delta, sigma, mu_r, loss, f_ref }) => {
                let fc = 0.5 * (cx.d.band.start + cx.d.band.stop);
                let mu_r = mu_r.unwrap_or(1.0);
                match (tan_delta, sigma) {
                    // The wideband model's Debye poles (FDTD only: TLM keeps the band-centre conductivity).
                    (Some(t), None) if t > 0.0 && loss == LossModel::Wideband && g.kind == EngineKind::Fdtd => {
                        let ds = super::wideband::DjordjevicSarkar::new(eps_r, t, f_ref.unwrap_or(fc));
                        let fit = super::wideband::fit_debye(|w| ds.eps(w), cx.d.band.start, cx.d.band.stop);
                        Material { name: name.into(), eps_r: fit.eps_inf, sigma: fit.sigma, mu_r, pec: false, poles: fit.poles }
                    }
                    _ => {
                        // A loss tangent becomes the conductivity that gives it at the band centre.
                        let sigma = sigma.unwrap_or_else(|| 2.0 * std::f64::consts::PI * fc * EPS0 * eps_r * tan_delta.unwrap_or(0.0));
                        Material { name: name.into(), eps_r, sigma, mu_r, pec: false, poles: vec![] }
                    }
                }
            }
            Some(MaterialSpec::Dispersive { eps_inf, sigma, poles }) => {
                if g.kind != EngineKind::Fdtd {
                    return Err(cx.err(format!("materials.{name}"), "a Dispersive medium needs the FDTD engine (the TLM engines model constant eps, sigma, mu)"));
                }
                Material { name: name.into(), eps_r: *eps_inf, sigma: sigma.unwrap_or(0.0), mu_r: 1.0, pec: false, poles: poles.iter().map(|p| p.pole()).collect() }
            }
            None => return Err(cx.err(at, format!("unknown material `{name}`"))),
        }
    };
    material_slot(cx, g, m, at)
}

/// The index of medium `m` in the geometry's table (added if new).
fn material_slot(cx: &Ctx, g: &mut Geometry, m: Material, at: &str) -> Result<u8, DesignError> {
    if let Some(k) = g.materials.iter().position(|x| x.name == m.name) {
        return Ok(k as u8);
    }
    if g.materials.len() > u8::MAX as usize {
        return Err(cx.err(at, "more than 255 distinct materials"));
    }
    g.materials.push(m);
    Ok((g.materials.len() - 1) as u8)
}

/// The conductor of metal `name` as a sheet (`sheet`: with the thickness
/// the material gives) or as a thick solid or wall; `None` for `Pec`.
fn metal_of(cx: &Ctx, g: &mut Geometry, name: &str, at: &str, sheet: bool) -> Result<Option<u8>, DesignError> {
    let c = if name.eq_ignore_ascii_case("pec") {
        return Ok(None);
    } else if let Some(sigma) = builtin_metal(name) {
        Conductor { name: name.into(), sigma, thickness: None, roughness: 0.0 }
    } else {
        match cx.d.materials.get(name) {
            Some(MaterialSpec::Pec) => return Ok(None),
            Some(&MaterialSpec::Metal { conductivity, thickness, roughness }) => {
                Conductor { name: name.into(), sigma: conductivity, thickness: if sheet { thickness } else { None }, roughness: roughness.unwrap_or(0.0) }
            }
            Some(_) => return Err(cx.err(at, format!("`{name}` is not a metal: this needs `Pec`, a built-in metal (Copper, Aluminium, Silver, Gold) or a `Metal` of `materials`"))),
            None => return Err(cx.err(at, format!("unknown material `{name}`"))),
        }
    };
    if g.kind != EngineKind::Fdtd {
        return Err(cx.err(at, format!("metal `{name}` is lossy: the TLM engines model perfect metal only (use the FDTD engine, or `Pec`)")));
    }
    if let Some(k) = g.surfaces.conductors.iter().position(|x| *x == c) {
        return Ok(Some(k as u8));
    }
    if g.surfaces.conductors.len() >= u8::MAX as usize {
        return Err(cx.err(at, "more than 254 distinct lossy metals"));
    }
    g.surfaces.conductors.push(c);
    Ok(Some((g.surfaces.conductors.len() - 1) as u8))
}

/// Whether `lo..hi` covers the whole domain along `a` (to the tolerance).
pub(crate) fn spans(g: &Geometry, a: Axis, lo: f64, hi: f64) -> bool {
    lo <= g.domain[a.index()][0] + g.tol && hi >= g.domain[a.index()][1] - g.tol
}

fn not_invariant(cx: &Ctx, at: &str, inv: Axis, why: &str) -> DesignError {
    cx.err(
        at,
        format!("does not span the whole domain along {}, the invariant axis ({why}); every primitive must be uniform along it", inv.name()),
    )
}

/// Copies a `Repeat` may make (each a primitive the mesher and voxeliser visit).
pub const MAX_COPIES: f64 = 10_000.0;

/// One primitive of the file, moved by `xf`: a `Group`'s or `Repeat`'s
/// leaves in order, each with its own `part` number.
fn place(cx: &Ctx, g: &mut Geometry, p: &Primitive, index: usize, part: &mut usize, at: &str, xf: &Affine) -> Result<(), DesignError> {
    match p {
        Primitive::Group { items, transform } => {
            let inner = xf.then_after(&affine(cx, transform, &format!("{at}.transform"))?);
            for (k, it) in items.iter().enumerate() {
                place(cx, g, it, index, part, &format!("{at}.items[{k}] ({})", it.kind()), &inner)?;
            }
        }
        Primitive::Repeat { count, items, transform } => {
            let n = cx.scope.eval(count, &format!("{at}.count"))?;
            if !(n >= 0.0 && (n - n.round()).abs() < 1e-9 && n <= MAX_COPIES) {
                return Err(cx.err(format!("{at}.count"), format!("must be a whole number from 0 to {MAX_COPIES} (got {n}); use an `Int` parameter")));
            }
            let step = affine(cx, transform, &format!("{at}.transform"))?;
            let mut copy_xf = *xf;
            for copy in 0..n.round() as usize {
                for (k, it) in items.iter().enumerate() {
                    place(cx, g, it, index, part, &format!("{at}[copy {copy}].items[{k}] ({})", it.kind()), &copy_xf)?;
                }
                copy_xf = copy_xf.then_after(&step);
            }
        }
        _ => {
            let origin = Origin { index, part: *part, at: at.to_string() };
            *part += 1;
            primitive(cx, g, p, origin, xf)?;
        }
    }
    Ok(())
}

/// A `transform` in metres: mirror, then rotate, then translate.
fn affine(cx: &Ctx, t: &Transform, at: &str) -> Result<Affine, DesignError> {
    let mut a = Affine::IDENTITY;
    if let Some(m) = &t.mirror {
        a = Affine::mirror(m.axis, cx.len(&m.at, &format!("{at}.mirror.at"))?);
    }
    if let Some(r) = &t.rotate {
        let deg = cx.scope.eval(&r.angle, &format!("{at}.rotate.angle"))?;
        let about = match &r.about {
            Some(p) => cx.point(p, &format!("{at}.rotate.about"))?,
            None => [0.0; 3],
        };
        a = Affine::rotate(r.axis, deg, about).then_after(&a);
    }
    if let Some(v) = &t.translate {
        a = Affine::translate(cx.point(v, &format!("{at}.translate"))?).then_after(&a);
    }
    Ok(a)
}

/// `(lo, hi)` corners of the box `lo..hi` moved by `xf` (which keeps the axes).
fn moved_box(xf: &Affine, lo: [f64; 3], hi: [f64; 3]) -> ([f64; 3], [f64; 3]) {
    let (a, b) = (xf.apply(lo), xf.apply(hi));
    (std::array::from_fn(|i| a[i].min(b[i])), std::array::from_fn(|i| a[i].max(b[i])))
}

/// A plane region along `axis` from `from` to `to`, moved by `xf`: the new
/// axis, span and region. Refused where `xf` tilts the axis off the axes.
fn moved_region(cx: &Ctx, at: &str, what: &str, xf: &Affine, axis: Axis, from: f64, to: f64, r: Region) -> Result<(Axis, f64, f64, Region), DesignError> {
    let Some(nax) = xf.map_axis(axis) else {
        return Err(cx.err(
            at,
            format!("the transform tilts this {what}'s axis ({}) off the mesh axes: rotate it about its own axis, or by quarter turns", axis.name()),
        ));
    };
    let (p, q) = axis.others();
    let (np, nq) = nax.others();
    let lift = |uv: [f64; 2], h: f64| {
        let mut x = [0.0; 3];
        x[axis.index()] = h;
        x[p.index()] = uv[0];
        x[q.index()] = uv[1];
        xf.apply(x)
    };
    let drop = |x: [f64; 3]| [x[np.index()], x[nq.index()]];
    let (a, b) = (lift([0.0, 0.0], from)[nax.index()], lift([0.0, 0.0], to)[nax.index()]);
    let region = match r {
        Region::Polygon(v) => Region::Polygon(v.iter().map(|&uv| drop(lift(uv, from))).collect()),
        Region::Disc { c, r, r_in } => Region::Disc { c: drop(lift(c, from)), r, r_in },
    };
    Ok((nax, a.min(b), a.max(b), region))
}

fn vec2(cx: &Ctx, v: &Vec2, at: &str) -> Result<[f64; 2], DesignError> {
    Ok([cx.len(&v.0, &format!("{at}.u"))?, cx.len(&v.1, &format!("{at}.v"))?])
}

/// A polygon's points in metres, checked.
fn polygon(cx: &Ctx, pts: &[Vec2], at: &str) -> Result<Region, DesignError> {
    let v: Vec<[f64; 2]> = pts.iter().enumerate().map(|(i, p)| vec2(cx, p, &format!("{at}.points[{i}]"))).collect::<Result<_, _>>()?;
    if let Some(m) = Region::polygon_problem(&v, cx.tol) {
        return Err(cx.err(format!("{at}.points"), m));
    }
    Ok(Region::Polygon(v))
}

/// A disc's radii in metres, checked.
fn radii(cx: &Ctx, radius: &Expr, inner: &Option<Expr>, at: &str) -> Result<(f64, f64), DesignError> {
    let r = cx.len(radius, &format!("{at}.radius"))?;
    if r <= 0.0 {
        return Err(cx.err(format!("{at}.radius"), format!("must be positive (got {})", cx.show(r))));
    }
    let r_in = match inner {
        Some(e) => cx.len(e, &format!("{at}.inner_radius"))?,
        None => 0.0,
    };
    if r_in < 0.0 || r_in >= r {
        return Err(cx.err(format!("{at}.inner_radius"), format!("{} must lie in [0, radius = {})", cx.show(r_in), cx.show(r))));
    }
    Ok((r, r_in))
}

/// Refuse a shape whose bounding box misses the domain (an array element
/// pushed out of it, say).
fn inside_domain(cx: &Ctx, g: &Geometry, at: &str, axis: Axis, lo: f64, hi: f64, r: &Region) -> Result<(), DesignError> {
    let (p, q) = axis.others();
    let (bl, bh) = r.bbox();
    for (a, l, h) in [(axis, lo, hi), (p, bl[0], bh[0]), (q, bl[1], bh[1])] {
        let [dlo, dhi] = g.domain[a.index()];
        if h < dlo - cx.tol || l > dhi + cx.tol {
            return Err(cx.err(at, format!("lies outside the domain along {}: it spans {}, the domain {}", a.name(), cx.range(l, h), cx.range(dlo, dhi))));
        }
    }
    Ok(())
}

fn primitive(cx: &Ctx, g: &mut Geometry, p: &Primitive, origin: Origin, xf: &Affine) -> Result<(), DesignError> {
    let inv = g.collapse;
    let at = origin.at.clone();
    let at = at.as_str();
    let fixed = |what: &str| -> Result<(), DesignError> {
        if xf.is_identity() {
            Ok(())
        } else {
            Err(cx.err(at, format!("{what} spans the domain and cannot be moved by a Group or Repeat transform")))
        }
    };
    let axis_kept = |what: &str| -> Result<(), DesignError> {
        if xf.keeps_axes() {
            Ok(())
        } else {
            Err(cx.err(at, format!("the transform turns this {what} off the mesh axes: write it as a Prism (a polygon extruded along an axis), which any rotation about its axis keeps")))
        }
    };
    match p {
        Primitive::Group { .. } | Primitive::Repeat { .. } => unreachable!("place() unfolds groups"),
        Primitive::Cylinder { axis, center, radius, inner_radius, from, to, material: name } => {
            let c = cx.point(center, &format!("{at}.center"))?;
            let (r, r_in) = radii(cx, radius, inner_radius, at)?;
            let (f, t) = (cx.len(from, &format!("{at}.from"))?, cx.len(to, &format!("{at}.to"))?);
            if t - f <= cx.tol {
                return Err(cx.err(at, format!("`to` ({}) must be above `from` ({})", cx.show(t), cx.show(f))));
            }
            let (p, q) = axis.others();
            let region = Region::Disc { c: [c[p.index()], c[q.index()]], r, r_in };
            let (ax, lo, hi, region) = moved_region(cx, at, "Cylinder", xf, *axis, f, t, region)?;
            extruded(cx, g, name, origin, SolidKind::Cylinder, ax, lo, hi, region)?;
        }
        Primitive::Prism { axis, points, from, to, material: name } => {
            let region = polygon(cx, points, at)?;
            let (f, t) = (cx.len(from, &format!("{at}.from"))?, cx.len(to, &format!("{at}.to"))?);
            if t - f <= cx.tol {
                return Err(cx.err(at, format!("`to` ({}) must be above `from` ({})", cx.show(t), cx.show(f))));
            }
            let (ax, lo, hi, region) = moved_region(cx, at, "Prism", xf, *axis, f, t, region)?;
            extruded(cx, g, name, origin, SolidKind::Prism, ax, lo, hi, region)?;
        }
        Primitive::Disc { normal, at: z, center, radius, inner_radius, material } => {
            let z = cx.len(z, &format!("{at}.at"))?;
            let c = vec2(cx, center, &format!("{at}.center"))?;
            let (r, r_in) = radii(cx, radius, inner_radius, at)?;
            let (n, c0, _, region) = moved_region(cx, at, "Disc", xf, *normal, z, z, Region::Disc { c, r, r_in })?;
            let conductor = metal_of(cx, g, material, &format!("{at}.material"), true)?;
            shaped_sheet(cx, g, origin, n, c0, region, conductor)?;
        }
        Primitive::Polygon { normal, at: z, points, material } => {
            let z = cx.len(z, &format!("{at}.at"))?;
            let region = polygon(cx, points, at)?;
            let (n, c0, _, region) = moved_region(cx, at, "Polygon", xf, *normal, z, z, region)?;
            let conductor = metal_of(cx, g, material, &format!("{at}.material"), true)?;
            shaped_sheet(cx, g, origin, n, c0, region, conductor)?;
        }
        Primitive::Load { name, from, to, r, l, c, parallel } => {
            if g.kind != EngineKind::Fdtd {
                return Err(cx.err(at, "a Load needs the FDTD engine (the TLM engines have no lumped loads)"));
            }
            axis_kept("Load")?;
            let f = xf.apply(cx.point(from, &format!("{at}.from"))?);
            let t = xf.apply(cx.point(to, &format!("{at}.to"))?);
            let mut el = [None; 3];
            for (k, (fname, e)) in [("r", r), ("l", l), ("c", c)].into_iter().enumerate() {
                if let Some(e) = e {
                    let v = cx.scope.eval(e, &format!("{at}.{fname}"))?;
                    if !(v > 0.0 && v.is_finite()) {
                        return Err(cx.err(format!("{at}.{fname}"), format!("must be a positive value in SI units (ohm, henry, farad; got {v}); leave the element out for none")));
                    }
                    el[k] = Some(v);
                }
            }
            if el.iter().all(|x| x.is_none()) {
                return Err(cx.err(at, format!("load `{name}` has no element: give r (ohm), l (henry) and/or c (farad)")));
            }
            let axis = segment_axis(cx, g, f, t, at, &format!("load `{name}`"))?;
            if g.loads.iter().any(|x| x.name == *name) {
                return Err(cx.err(at, format!("a load named `{name}` already exists (in a Repeat, name each copy apart or use one Load per copy)")));
            }
            let topology = if *parallel { Topology::Parallel } else { Topology::Series };
            g.loads.push(LoadGeom { name: name.clone(), from: f, to: t, axis, r: el[0], l: el[1], c: el[2], topology, origin });
        }
        Primitive::Box { material: name, min, max } => {
            let lo = cx.point(min, &format!("{at}.min"))?;
            let hi = cx.point(max, &format!("{at}.max"))?;
            axis_kept("Box")?;
            let (lo, hi) = moved_box(xf, lo, hi);
            for a in Axis::ALL {
                let i = a.index();
                if hi[i] - lo[i] <= cx.tol {
                    return Err(cx.err(
                        at,
                        format!("min.{0} ({1}) must be below max.{0} ({2}); use a Sheet for zero thickness", a.name(), cx.show(lo[i]), cx.show(hi[i])),
                    ));
                }
                if inv == Some(a) && !spans(g, a, lo[i], hi[i]) {
                    return Err(not_invariant(cx, at, a, "a Box must reach both faces"));
                }
            }
            let mat = material(cx, g, name, &format!("{at}.material"))?;
            g.solids.push(Solid { shape: Shape::Block { mat, min: lo, max: hi }, primitive: SolidKind::Box, origin });
        }
        Primitive::Sheet { min, max, material } => {
            let lo = cx.point(min, &format!("{at}.min"))?;
            let hi = cx.point(max, &format!("{at}.max"))?;
            axis_kept("Sheet")?;
            let (lo, hi) = moved_box(xf, lo, hi);
            let conductor = metal_of(cx, g, material, &format!("{at}.material"), true)?;
            let mut s = sheet(cx, g, lo, hi, origin)?;
            s.conductor = conductor;
            g.sheets.push(s);
        }
        Primitive::Iris { z, thickness, aperture, axis, material: iris_metal } => {
            fixed("an Iris")?;
            let z0 = cx.len(z, &format!("{at}.z"))?;
            let t = cx.len(thickness, &format!("{at}.thickness"))?;
            let w = cx.len(aperture, &format!("{at}.aperture"))?;
            let (narrow, wide) = guide_axes(&g.domain, *axis);
            let [lo, hi] = g.domain[axis.index()];
            let [wlo, whi] = g.domain[wide.index()];
            if t <= 0.0 {
                return Err(cx.err(format!("{at}.thickness"), format!("must be positive (got {})", cx.show(t))));
            }
            if w < 0.0 || w > whi - wlo + cx.tol {
                return Err(cx.err(
                    format!("{at}.aperture"),
                    format!("{} must lie between 0 and the guide width along {} ({})", cx.show(w), wide.name(), cx.show(whi - wlo)),
                ));
            }
            if z0 < lo - cx.tol || z0 + t > hi + cx.tol {
                return Err(cx.err(at, format!("spans {} along {}, outside the domain {}", cx.range(z0, z0 + t), axis.name(), cx.range(lo, hi))));
            }
            if let Some(a) = inv {
                if a == *axis || a == wide {
                    return Err(not_invariant(cx, at, a, "an iris's wall and aperture vary along its axis and its wide side"));
                }
                debug_assert_eq!(a, narrow);
            }
            // A wall of metal: metal_of refuses anything else.
            metal_of(cx, g, iris_metal, &format!("{at}.material"), false)?;
            let mat = material(cx, g, iris_metal, &format!("{at}.material"))?;
            let centre = 0.5 * (wlo + whi);
            let shape = Shape::Iris { mat, axis: *axis, wide, z0, z1: z0 + t, centre, half: 0.5 * w };
            g.solids.push(Solid { shape, primitive: SolidKind::Iris, origin });
        }
        Primitive::Post { center, radius, axis, material: name } => {
            let Some(axis) = &xf.map_axis(*axis) else {
                return Err(cx.err(at, "the transform tilts this Post off the mesh axes: rotate it about its own axis, or by quarter turns"));
            };
            let c = xf.apply(cx.point(center, &format!("{at}.center"))?);
            let rad = cx.len(radius, &format!("{at}.radius"))?;
            if rad <= 0.0 {
                return Err(cx.err(format!("{at}.radius"), format!("must be positive (got {})", cx.show(rad))));
            }
            if let Some(a) = inv {
                if a != *axis {
                    return Err(not_invariant(cx, at, a, "a Post is uniform only along its own axis"));
                }
            }
            let mat = material(cx, g, name, &format!("{at}.material"))?;
            g.solids.push(Solid { shape: Shape::Post { mat, axis: *axis, centre: c, radius: rad }, primitive: SolidKind::Post, origin });
        }
        Primitive::Substrate { material: name, z0, thickness, ground, ground_material } => {
            fixed("a Substrate")?;
            let z0 = cx.len(z0, &format!("{at}.z0"))?;
            let t = cx.len(thickness, &format!("{at}.thickness"))?;
            let [lo, hi] = g.domain[2];
            if inv == Some(Axis::Z) {
                return Err(not_invariant(cx, at, Axis::Z, "a substrate is layered along z"));
            }
            if t <= 0.0 {
                return Err(cx.err(format!("{at}.thickness"), format!("must be positive (got {})", cx.show(t))));
            }
            if z0 < lo - cx.tol || z0 >= hi {
                return Err(cx.err(format!("{at}.z0"), format!("{} lies outside the domain {} along z", cx.show(z0), cx.range(lo, hi))));
            }
            let mat = material(cx, g, name, &format!("{at}.material"))?;
            let inf = f64::INFINITY;
            let shape = Shape::Block { mat, min: [-inf, -inf, z0], max: [inf, inf, z0 + t] };
            g.solids.push(Solid { shape, primitive: SolidKind::Substrate, origin: origin.clone() });
            if *ground {
                let conductor = metal_of(cx, g, ground_material, &format!("{at}.ground_material"), true)?;
                let (x, y) = (g.domain[0], g.domain[1]);
                g.sheets.push(SheetGeom { normal: Axis::Z, coord: z0, lo: [x[0], y[0]], hi: [x[1], y[1]], origin, conductor });
            }
        }
    }
    Ok(())
}

/// A cylinder or prism in metres, checked against the domain and the invariant axis.
#[allow(clippy::too_many_arguments)]
fn extruded(cx: &Ctx, g: &mut Geometry, name: &str, origin: Origin, kind: SolidKind, axis: Axis, lo: f64, hi: f64, region: Region) -> Result<(), DesignError> {
    let at = origin.at.as_str();
    inside_domain(cx, g, at, axis, lo, hi, &region)?;
    if let Some(a) = g.collapse {
        if a != axis || !spans(g, a, lo, hi) {
            return Err(not_invariant(cx, at, a, "a Cylinder or Prism must run along it from face to face"));
        }
    }
    let mat = material(cx, g, name, &format!("{at}.material"))?;
    g.solids.push(Solid { shape: Shape::Extruded { mat, axis, lo, hi, region }, primitive: kind, origin });
    Ok(())
}

/// A Disc or Polygon sheet in metres, checked.
#[allow(clippy::too_many_arguments)]
fn shaped_sheet(cx: &Ctx, g: &mut Geometry, origin: Origin, normal: Axis, coord: f64, region: Region, conductor: Option<u8>) -> Result<(), DesignError> {
    let at = origin.at.as_str();
    inside_domain(cx, g, at, normal, coord, coord, &region)?;
    if g.collapse.is_some() {
        return Err(cx.err(at, "a Disc or Polygon sheet is not uniform along the invariant axis: use Sheet or Prism there"));
    }
    g.shaped.push(ShapedSheet { normal, coord, region, origin, conductor });
    Ok(())
}

/// A Sheet in metres: exactly one flat axis, inside the domain, clipped to it.
fn sheet(cx: &Ctx, g: &Geometry, lo: [f64; 3], hi: [f64; 3], origin: Origin) -> Result<SheetGeom, DesignError> {
    let at = origin.at.as_str();
    let flat: Vec<Axis> = Axis::ALL.into_iter().filter(|a| (hi[a.index()] - lo[a.index()]).abs() <= cx.tol).collect();
    if flat.len() != 1 {
        let which = if flat.is_empty() { "none".to_string() } else { flat.iter().map(|a| a.name()).collect::<Vec<_>>().join(" and ") };
        return Err(cx.err(at, format!("a Sheet has zero thickness: min and max must be equal along exactly one axis (they are equal along {which})")));
    }
    let normal = flat[0];
    let ni = normal.index();
    if g.collapse == Some(normal) {
        return Err(not_invariant(cx, at, normal, "a Sheet normal to it lies at one position along it"));
    }
    let [dlo, dhi] = g.domain[ni];
    if lo[ni] < dlo - cx.tol || lo[ni] > dhi + cx.tol {
        return Err(cx.err(at, format!("lies at {} = {}, outside the domain {}", normal.name(), cx.show(lo[ni]), cx.range(dlo, dhi))));
    }
    let (p, q) = normal.others();
    let mut clo = [0.0; 2];
    let mut chi = [0.0; 2];
    for (k, a) in [p, q].into_iter().enumerate() {
        let i = a.index();
        if lo[i] > hi[i] {
            return Err(cx.err(at, format!("min.{0} ({1}) exceeds max.{0} ({2})", a.name(), cx.show(lo[i]), cx.show(hi[i]))));
        }
        if g.collapse == Some(a) && !spans(g, a, lo[i], hi[i]) {
            return Err(not_invariant(cx, at, a, "a Sheet must reach both faces"));
        }
        let [dlo, dhi] = g.domain[i];
        let (a0, a1) = (lo[i].max(dlo), hi[i].min(dhi));
        if a1 <= a0 {
            return Err(cx.err(at, format!("lies outside the domain along {}", a.name())));
        }
        clo[k] = a0;
        chi[k] = a1;
    }
    Ok(SheetGeom { normal, coord: lo[ni], lo: clo, hi: chi, origin, conductor: None })
}

/// Where `x` lies outside the domain along `a`, as a message (None: inside).
fn outside(cx: &Ctx, g: &Geometry, a: Axis, x: f64) -> Option<String> {
    let [lo, hi] = g.domain[a.index()];
    let side = if x < lo - cx.tol {
        0
    } else if x > hi + cx.tol {
        1
    } else {
        return None;
    };
    let padding = if g.boundaries[a.index()][side] == Boundary::Absorbing { ", in the absorbing padding" } else { "" };
    Some(format!("{} = {} lies outside the domain {}{padding}", a.name(), cx.show(x), cx.range(lo, hi)))
}

/// The axis along which a lumped port's or load's `from` and `to` differ (the
/// only one), both ends inside the domain; `what` names it in messages.
fn segment_axis(cx: &Ctx, g: &Geometry, f: [f64; 3], t: [f64; 3], at: &str, what: &str) -> Result<Axis, DesignError> {
    let differ: Vec<Axis> = Axis::ALL.into_iter().filter(|a| (t[a.index()] - f[a.index()]).abs() > cx.tol).collect();
    if differ.len() != 1 {
        let which = if differ.is_empty() { "none".into() } else { differ.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ") };
        return Err(cx.err(at, format!("{what}: from and to must differ along exactly one axis (they differ along {which})")));
    }
    for (end, pt) in [("from", f), ("to", t)] {
        for a in Axis::ALL {
            if let Some(m) = outside(cx, g, a, pt[a.index()]) {
                return Err(cx.err(format!("{at}.{end}"), format!("{what}: {m}")));
            }
        }
    }
    Ok(differ[0])
}

fn port(cx: &Ctx, g: &Geometry, p: &PortSpec, origin: Origin) -> Result<PortGeom, DesignError> {
    let at = origin.at.as_str();
    let name = p.name().to_string();
    let kind = match p {
        PortSpec::Lumped { from, to, r: res, .. } => {
            let f = cx.point(from, &format!("{at}.from"))?;
            let t = cx.point(to, &format!("{at}.to"))?;
            let r_ohm = cx.scope.eval(res, &format!("{at}.r"))?;
            if r_ohm <= 0.0 {
                return Err(cx.err(format!("{at}.r"), format!("must be positive (got {r_ohm})")));
            }
            let axis = segment_axis(cx, g, f, t, at, &format!("port `{name}`"))?;
            if let Some(inv) = g.collapse {
                let i = inv.index();
                if axis != inv || !spans(g, inv, f[i].min(t[i]), f[i].max(t[i])) {
                    return Err(cx.err(
                        at,
                        format!("port `{name}` must run from face to face along {}, the invariant axis, to be uniform along it", inv.name()),
                    ));
                }
            }
            PortGeomKind::Lumped { from: f, to: t, axis, r_ohm }
        }
        PortSpec::Waveguide { plane, .. } => {
            let (normal, e) = plane.axis_and_coord();
            let at_plane = format!("{at}.plane");
            let c = cx.len(e, &at_plane)?;
            let i = normal.index();
            let [lo, hi] = g.domain[i];
            if let Some(m) = outside(cx, g, normal, c) {
                return Err(cx.err(at_plane, format!("port `{name}`: {m}")));
            }
            let (e_axis, width_axis) = guide_axes(&g.domain, normal);
            let ext = |a: Axis| g.domain[a.index()][1] - g.domain[a.index()][0];
            if (ext(e_axis) - ext(width_axis)).abs() <= cx.tol {
                return Err(cx.err(at, format!("port `{name}`: the guide's cross-section is square, so TE10 is ambiguous")));
            }
            let walls = g.boundaries[width_axis.index()];
            if walls.iter().any(|b| *b != Boundary::Pec) {
                return Err(cx.err(
                    at,
                    format!("port `{name}`: a TE10 port needs Pec faces on both {} faces (the guide's broad walls' ends); boundaries.{} is {:?}/{:?}", width_axis.name(), width_axis.name(), walls[0], walls[1]),
                ));
            }
            // TE10's E runs across the guide from one e_axis face to the other: normal
            // to those faces, which a PEC face allows and a PMC face forbids.
            let tops = g.boundaries[e_axis.index()];
            if tops.iter().any(|b| *b != Boundary::Pec) {
                return Err(cx.err(
                    at,
                    format!("port `{name}`: a TE10 port needs Pec faces on both {} faces (its E field ends on them); boundaries.{} is {:?}/{:?}", e_axis.name(), e_axis.name(), tops[0], tops[1]),
                ));
            }
            if let Some(inv) = g.collapse {
                if inv != e_axis {
                    return Err(cx.err(
                        at,
                        format!("port `{name}`: the invariant axis {} must be the one along the TE10 E field ({}): only then is the mode uniform along it", inv.name(), e_axis.name()),
                    ));
                }
            }
            let inward: i8 = if c < 0.5 * (lo + hi) { 1 } else { -1 };
            let side = if inward > 0 { 0 } else { 1 };
            if g.boundaries[i][side] != Boundary::Absorbing {
                return Err(cx.err(
                    at_plane,
                    format!("port `{name}` needs an Absorbing face behind it; the {}-{} face is {:?}", normal.name(), ["low", "high"][side], g.boundaries[i][side]),
                ));
            }
            PortGeomKind::Waveguide { normal, coord: c, inward, e_axis, width_axis, a: ext(width_axis) }
        }
    };
    Ok(PortGeom { name, kind, origin })
}
