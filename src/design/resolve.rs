//! One design at one set of parameter values, in metres and grid indices: the
//! evaluated domain, the padded grid, the shapes to paint, the snapped sheets and
//! ports. Every check that needs values happens here.

use std::collections::BTreeMap;
use std::ops::Range;

use super::budget::{check_grid, MemoryBudget};
use super::error::DesignError;
use super::expr::{Expr, Scope};
use super::format::{DesignFile, MaterialSpec, PortSpec, Primitive, Vec3};
use super::validate::{boundary_faces, invariant_faces_problem};
use crate::consts::{C0, EPS0};
use crate::job::{Axis, Boundary, EngineKind, Grid, Material, Port, PortKind, Sheet};
use crate::numfmt::short;

/// Cells between a waveguide port's reference plane and its source plane.
pub const SOURCE_OFFSET: usize = 3;
/// Cells a lumped port keeps from the absorbing padding.
pub const PORT_MARGIN: usize = 3;
/// The coarsest mesh accepted, in cells per wavelength at the top frequency.
pub const MIN_CELLS_PER_WAVELENGTH: f64 = 15.0;

/// A solid to paint onto the cells (cell-centre rule; later shapes win).
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// Cells whose centre lies in `[min, max)` on every axis.
    Block { mat: u8, min: [f64; 3], max: [f64; 3] },
    /// Cells whose centre lies in `[z0, z1)` along `axis`, except those within
    /// `half` of `centre` along `wide` (the aperture).
    Iris { mat: u8, axis: Axis, wide: Axis, z0: f64, z1: f64, centre: f64, half: f64 },
    /// Cells whose centre lies within `radius` of `centre`, across `axis`.
    Post { mat: u8, axis: Axis, centre: [f64; 3], radius: f64 },
}

/// A design at one set of values, ready to voxelise.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub kind: EngineKind,
    /// The invariant axis (one cell), if any.
    pub collapse: Option<Axis>,
    /// `[axis][lo, hi]` in metres, without padding.
    pub domain: [[f64; 2]; 3],
    /// Cells of the domain along each axis, without padding.
    pub n_dom: [usize; 3],
    /// The padded grid.
    pub grid: Grid,
    pub boundaries: [[Boundary; 2]; 3],
    pub pml: [[usize; 2]; 3],
    pub materials: Vec<Material>,
    pub shapes: Vec<Shape>,
    pub sheets: Vec<Sheet>,
    pub ports: Vec<Port>,
}

impl Resolved {
    /// Centre (metres) of padded cell `i` along `a`. Padding cells take the centre of
    /// the nearest domain cell, so whatever touches a face of the domain (guide
    /// walls, substrates) continues through the absorbing layer.
    pub fn centre(&self, a: usize, i: usize) -> f64 {
        let lo = self.pml[a][0];
        let j = i.clamp(lo, lo + self.n_dom[a] - 1);
        self.grid.origin[a] + (j as f64 + 0.5) * self.grid.d[a]
    }

    /// Padded cells along `a` whose centre lies in `[lo, hi)` (contiguous: the
    /// centres never decrease).
    pub fn cells_in(&self, a: usize, lo: f64, hi: f64) -> Range<usize> {
        let n = self.grid.n[a];
        let inside = |i: usize| {
            let c = self.centre(a, i);
            c >= lo && c < hi
        };
        match (0..n).find(|&i| inside(i)) {
            None => 0..0,
            Some(first) => first..(first..n).take_while(|&i| inside(i)).last().map_or(first, |l| l) + 1,
        }
    }

    /// The padded index of the grid node nearest to `x` along `a` (within the domain).
    pub fn node(&self, a: usize, x: f64) -> usize {
        let k = ((x - self.domain[a][0]) / self.grid.d[a]).round().clamp(0.0, self.n_dom[a] as f64);
        self.pml[a][0] + k as usize
    }
}

struct Ctx<'a> {
    d: &'a DesignFile,
    file: &'a str,
    scope: Scope,
    /// Metres per design unit.
    u: f64,
    /// Lengths closer than this are equal (metres).
    tol: f64,
}

impl Ctx<'_> {
    fn err(&self, at: impl Into<String>, m: impl Into<String>) -> DesignError {
        DesignError::invalid(self.file, at, m)
    }
    /// A length field in metres.
    fn len(&self, e: &Expr, at: &str) -> Result<f64, DesignError> {
        Ok(self.scope.eval(e, at)? * self.u)
    }
    fn point(&self, v: &Vec3, at: &str) -> Result<[f64; 3], DesignError> {
        Ok([
            self.len(&v.0, &format!("{at}.x"))?,
            self.len(&v.1, &format!("{at}.y"))?,
            self.len(&v.2, &format!("{at}.z"))?,
        ])
    }
    /// A length in design units for messages.
    fn show(&self, m: f64) -> String {
        format!("{} {}", short(m / self.u), self.d.units.symbol())
    }
    /// "0..25 mm".
    fn range(&self, lo: f64, hi: f64) -> String {
        format!("{}..{} {}", short(lo / self.u), short(hi / self.u), self.d.units.symbol())
    }
}

/// Evaluate and check `d` at `values` for engine `kind`.
pub(crate) fn resolve(
    d: &DesignFile,
    file: &str,
    values: &BTreeMap<String, f64>,
    kind: EngineKind,
    budget: MemoryBudget,
) -> Result<Resolved, DesignError> {
    let domain_u = [&d.domain.x, &d.domain.y, &d.domain.z];
    let cx = Ctx { d, file, scope: Scope::new(file, &d.constants, values), u: d.units.metres(), tol: 0.0 };
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
    let cell = cx.len(&opts.cell, "engine.cell")?;
    if cell <= 0.0 {
        return Err(cx.err("engine.cell", format!("must be positive (got {})", cx.show(cell))));
    }

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

    // Uniform cells per axis: n = round(L / cell) (at least 1) and d = L / n, so a
    // cell differs from `cell` by at most half a cell spread over the whole domain
    // and the domain's faces always lie on grid planes. The invariant axis has one
    // cell spanning the whole domain.
    let mut n_dom = [0usize; 3];
    let mut dd = [0.0; 3];
    let mut pml = [[0usize; 2]; 3];
    let mut n = [0usize; 3];
    let mut origin = [0.0; 3];
    for a in Axis::ALL {
        let i = a.index();
        let l = extent(a);
        n_dom[i] = if collapse == Some(a) { 1 } else { ((l / cell).round() as usize).max(1) };
        dd[i] = l / n_dom[i] as f64;
        for s in 0..2 {
            pml[i][s] = if faces[i][s] == Boundary::Absorbing { opts.pml } else { 0 };
        }
        n[i] = n_dom[i].saturating_add(pml[i][0]).saturating_add(pml[i][1]);
        origin[i] = domain[i][0] - pml[i][0] as f64 * dd[i];
    }
    // Before any loop over the cells (cells_in, the painting): a grid too large
    // for memory is refused from its counts.
    check_grid(n, budget, file)?;
    let mut r = Resolved {
        kind,
        collapse,
        domain,
        n_dom,
        grid: Grid { n, d: dd, origin },
        boundaries: faces,
        pml,
        materials: vec![Material::vacuum()],
        shapes: vec![],
        sheets: vec![],
        ports: vec![],
    };

    check_mesh(&cx, &r)?;
    for (i, p) in d.geometry.iter().enumerate() {
        primitive(&cx, &mut r, p, &format!("geometry[{i}] ({})", p.kind()))?;
    }
    for (i, p) in d.ports.iter().enumerate() {
        let port = port(&cx, &r, p, &format!("ports[{i}]"))?;
        r.ports.push(port);
    }
    check_port_overlaps(&cx, &r)?;
    Ok(r)
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
fn guide_axes(domain: &[[f64; 2]; 3], normal: Axis) -> (Axis, Axis) {
    let (p, q) = normal.others();
    let ext = |a: Axis| domain[a.index()][1] - domain[a.index()][0];
    if ext(p) < ext(q) {
        (p, q)
    } else {
        (q, p)
    }
}

fn material(cx: &Ctx, r: &mut Resolved, name: &str, at: &str) -> Result<u8, DesignError> {
    let m = if name.eq_ignore_ascii_case("vacuum") {
        return Ok(0);
    } else if name.eq_ignore_ascii_case("pec") {
        Material::pec()
    } else {
        match cx.d.materials.get(name) {
            Some(MaterialSpec::Pec) => Material { name: name.into(), ..Material::pec() },
            Some(&MaterialSpec::Dielectric { eps_r, tan_delta, sigma, mu_r }) => {
                // A loss tangent becomes the conductivity that gives it at the band centre.
                let fc = 0.5 * (cx.d.band.start + cx.d.band.stop);
                let sigma =
                    sigma.unwrap_or_else(|| 2.0 * std::f64::consts::PI * fc * EPS0 * eps_r * tan_delta.unwrap_or(0.0));
                Material { name: name.into(), eps_r, sigma, mu_r: mu_r.unwrap_or(1.0), pec: false }
            }
            None => return Err(cx.err(at, format!("unknown material `{name}`"))),
        }
    };
    if let Some(k) = r.materials.iter().position(|x| x.name == m.name) {
        return Ok(k as u8);
    }
    if r.materials.len() > u8::MAX as usize {
        return Err(cx.err(at, "more than 255 distinct materials"));
    }
    r.materials.push(m);
    Ok((r.materials.len() - 1) as u8)
}

fn spans(cx: &Ctx, r: &Resolved, a: Axis, lo: f64, hi: f64) -> bool {
    lo <= r.domain[a.index()][0] + cx.tol && hi >= r.domain[a.index()][1] - cx.tol
}

fn not_invariant(cx: &Ctx, at: &str, inv: Axis, why: &str) -> DesignError {
    cx.err(
        at,
        format!("does not span the whole domain along {}, the invariant axis ({why}); every primitive must be uniform along it", inv.name()),
    )
}

fn primitive(cx: &Ctx, r: &mut Resolved, p: &Primitive, at: &str) -> Result<(), DesignError> {
    let inv = r.collapse;
    match p {
        Primitive::Box { material: name, min, max } => {
            let lo = cx.point(min, &format!("{at}.min"))?;
            let hi = cx.point(max, &format!("{at}.max"))?;
            for a in Axis::ALL {
                let i = a.index();
                if hi[i] - lo[i] <= cx.tol {
                    return Err(cx.err(
                        at,
                        format!(
                            "min.{0} ({1}) must be below max.{0} ({2}); use a Sheet for zero thickness",
                            a.name(),
                            cx.show(lo[i]),
                            cx.show(hi[i])
                        ),
                    ));
                }
                if inv == Some(a) && !spans(cx, r, a, lo[i], hi[i]) {
                    return Err(not_invariant(cx, at, a, "a Box must reach both faces"));
                }
                if r.cells_in(i, lo[i], hi[i]).is_empty() {
                    return Err(cx.err(
                        at,
                        format!(
                            "covers no cell centre along {}: it is thinner than a cell there or outside the domain",
                            a.name()
                        ),
                    ));
                }
            }
            let mat = material(cx, r, name, &format!("{at}.material"))?;
            r.shapes.push(Shape::Block { mat, min: lo, max: hi });
        }
        Primitive::Sheet { min, max } => {
            let lo = cx.point(min, &format!("{at}.min"))?;
            let hi = cx.point(max, &format!("{at}.max"))?;
            let sheet = sheet(cx, r, lo, hi, at)?;
            r.sheets.push(sheet);
        }
        Primitive::Iris { z, thickness, aperture, axis } => {
            let z0 = cx.len(z, &format!("{at}.z"))?;
            let t = cx.len(thickness, &format!("{at}.thickness"))?;
            let w = cx.len(aperture, &format!("{at}.aperture"))?;
            let (narrow, wide) = guide_axes(&r.domain, *axis);
            let [lo, hi] = r.domain[axis.index()];
            let [wlo, whi] = r.domain[wide.index()];
            if t <= 0.0 {
                return Err(cx.err(format!("{at}.thickness"), format!("must be positive (got {})", cx.show(t))));
            }
            if w < 0.0 || w > whi - wlo + cx.tol {
                return Err(cx.err(
                    format!("{at}.aperture"),
                    format!(
                        "{} must lie between 0 and the guide width along {} ({})",
                        cx.show(w),
                        wide.name(),
                        cx.show(whi - wlo)
                    ),
                ));
            }
            if z0 < lo - cx.tol || z0 + t > hi + cx.tol {
                return Err(cx.err(
                    at,
                    format!(
                        "spans {} along {}, outside the domain {}",
                        cx.range(z0, z0 + t),
                        axis.name(),
                        cx.range(lo, hi)
                    ),
                ));
            }
            if let Some(a) = inv {
                if a == *axis || a == wide {
                    return Err(not_invariant(
                        cx,
                        at,
                        a,
                        "an iris's wall and aperture vary along its axis and its wide side",
                    ));
                }
                debug_assert_eq!(a, narrow);
            }
            if r.cells_in(axis.index(), z0, z0 + t).is_empty() {
                return Err(cx.err(
                    format!("{at}.thickness"),
                    format!(
                        "{} rounds to 0 cells (cell {} along {}): refine the mesh or thicken the iris",
                        cx.show(t),
                        cx.show(r.grid.d[axis.index()]),
                        axis.name()
                    ),
                ));
            }
            let mat = material(cx, r, "Pec", at)?;
            let centre = 0.5 * (wlo + whi);
            r.shapes.push(Shape::Iris { mat, axis: *axis, wide, z0, z1: z0 + t, centre, half: 0.5 * w });
        }
        Primitive::Post { center, radius, axis, material: name } => {
            let c = cx.point(center, &format!("{at}.center"))?;
            let rad = cx.len(radius, &format!("{at}.radius"))?;
            if rad <= 0.0 {
                return Err(cx.err(format!("{at}.radius"), format!("must be positive (got {})", cx.show(rad))));
            }
            if let Some(a) = inv {
                if a != *axis {
                    return Err(not_invariant(cx, at, a, "a Post is uniform only along its own axis"));
                }
            }
            let (p, q) = axis.others();
            let (pi, qi) = (p.index(), q.index());
            let covers = r.cells_in(pi, c[pi] - rad, c[pi] + rad).any(|i| {
                r.cells_in(qi, c[qi] - rad, c[qi] + rad)
                    .any(|j| (r.centre(pi, i) - c[pi]).hypot(r.centre(qi, j) - c[qi]) <= rad)
            });
            if !covers {
                return Err(
                    cx.err(at, "covers no cell centre: its radius is below half a cell, or it lies outside the domain")
                );
            }
            let mat = material(cx, r, name, &format!("{at}.material"))?;
            r.shapes.push(Shape::Post { mat, axis: *axis, centre: c, radius: rad });
        }
        Primitive::Substrate { material: name, z0, thickness, ground } => {
            let z0 = cx.len(z0, &format!("{at}.z0"))?;
            let t = cx.len(thickness, &format!("{at}.thickness"))?;
            let [lo, hi] = r.domain[2];
            if inv == Some(Axis::Z) {
                return Err(not_invariant(cx, at, Axis::Z, "a substrate is layered along z"));
            }
            if t <= 0.0 {
                return Err(cx.err(format!("{at}.thickness"), format!("must be positive (got {})", cx.show(t))));
            }
            if z0 < lo - cx.tol || z0 >= hi {
                return Err(cx.err(
                    format!("{at}.z0"),
                    format!("{} lies outside the domain {} along z", cx.show(z0), cx.range(lo, hi)),
                ));
            }
            if r.cells_in(2, z0, z0 + t).is_empty() {
                return Err(cx.err(
                    format!("{at}.thickness"),
                    format!("{} rounds to 0 cells (cell {} along z)", cx.show(t), cx.show(r.grid.d[2])),
                ));
            }
            let mat = material(cx, r, name, &format!("{at}.material"))?;
            let inf = f64::INFINITY;
            r.shapes.push(Shape::Block { mat, min: [-inf, -inf, z0], max: [inf, inf, z0 + t] });
            if *ground {
                let plane = r.node(2, z0);
                r.sheets.push(Sheet { normal: Axis::Z, plane, lo: [0, 0], hi: [r.grid.n[0], r.grid.n[1]] });
            }
        }
    }
    Ok(())
}

/// Snap a Sheet to the grid: its plane to the nearest node plane, its extents to
/// the nearest nodes, extended through the padding where they reach the domain's faces.
fn sheet(cx: &Ctx, r: &Resolved, lo: [f64; 3], hi: [f64; 3], at: &str) -> Result<Sheet, DesignError> {
    let flat: Vec<Axis> = Axis::ALL.into_iter().filter(|a| (hi[a.index()] - lo[a.index()]).abs() <= cx.tol).collect();
    if flat.len() != 1 {
        let which = if flat.is_empty() {
            "none".to_string()
        } else {
            flat.iter().map(|a| a.name()).collect::<Vec<_>>().join(" and ")
        };
        return Err(cx.err(
            at,
            format!("a Sheet has zero thickness: min and max must be equal along exactly one axis (they are equal along {which})"),
        ));
    }
    let normal = flat[0];
    let ni = normal.index();
    if r.collapse == Some(normal) {
        return Err(not_invariant(cx, at, normal, "a Sheet normal to it lies at one position along it"));
    }
    let [dlo, dhi] = r.domain[ni];
    if lo[ni] < dlo - cx.tol || lo[ni] > dhi + cx.tol {
        return Err(cx.err(
            at,
            format!("lies at {} = {}, outside the domain {}", normal.name(), cx.show(lo[ni]), cx.range(dlo, dhi)),
        ));
    }
    let (p, q) = normal.others();
    let mut nlo = [0usize; 2];
    let mut nhi = [0usize; 2];
    for (k, a) in [p, q].into_iter().enumerate() {
        let i = a.index();
        if lo[i] > hi[i] {
            return Err(
                cx.err(at, format!("min.{0} ({1}) exceeds max.{0} ({2})", a.name(), cx.show(lo[i]), cx.show(hi[i])))
            );
        }
        if r.collapse == Some(a) && !spans(cx, r, a, lo[i], hi[i]) {
            return Err(not_invariant(cx, at, a, "a Sheet must reach both faces"));
        }
        let [dlo, dhi] = r.domain[i];
        let (a0, a1) = (lo[i].max(dlo), hi[i].min(dhi));
        if a1 <= a0 {
            return Err(cx.err(at, format!("lies outside the domain along {}", a.name())));
        }
        let (n0, n1) = (r.node(i, a0), r.node(i, a1));
        if n0 == n1 {
            return Err(cx.err(
                at,
                format!(
                    "is narrower than half a cell along {} ({} wide, cell {}): it vanishes on this mesh",
                    a.name(),
                    cx.show(a1 - a0),
                    cx.show(r.grid.d[i])
                ),
            ));
        }
        let pad_lo = r.pml[i][0];
        nlo[k] = if n0 == pad_lo { 0 } else { n0 };
        nhi[k] = if n1 == pad_lo + r.n_dom[i] { r.grid.n[i] } else { n1 };
    }
    Ok(Sheet { normal, plane: r.node(ni, lo[ni]), lo: nlo, hi: nhi })
}

/// Checked before the primitives, whose own errors (a layer rounding to 0 cells)
/// would otherwise hide the cause.
fn check_mesh(cx: &Ctx, r: &Resolved) -> Result<(), DesignError> {
    // The shortest wavelength is at the top frequency in the densest material used.
    let (mut name, mut n2) = ("vacuum".to_string(), 1.0);
    for p in &cx.d.geometry {
        let (Primitive::Box { material, .. }
        | Primitive::Post { material, .. }
        | Primitive::Substrate { material, .. }) = p
        else {
            continue;
        };
        if let Some(&MaterialSpec::Dielectric { eps_r, mu_r, .. }) = cx.d.materials.get(material) {
            if eps_r * mu_r.unwrap_or(1.0) > n2 {
                (name, n2) = (material.clone(), eps_r * mu_r.unwrap_or(1.0));
            }
        }
    }
    let index: f64 = n2.sqrt();
    let f_top = cx.d.band.stop;
    let lambda = C0 / (f_top * index);
    for a in Axis::ALL {
        if r.collapse == Some(a) {
            continue;
        }
        let per = lambda / r.grid.d[a.index()];
        if per < MIN_CELLS_PER_WAVELENGTH {
            return Err(cx.err(
                "engine.cell",
                format!(
                    "mesh too coarse: {:.1} cells per wavelength along {} at {} GHz in `{}` (sqrt(eps_r mu_r) = {:.3}); \
                     at least {} are needed: use a cell of at most {}",
                    per,
                    a.name(),
                    short(f_top / 1e9),
                    name,
                    index,
                    MIN_CELLS_PER_WAVELENGTH,
                    cx.show(lambda / MIN_CELLS_PER_WAVELENGTH)
                ),
            ));
        }
    }
    Ok(())
}

fn outside(cx: &Ctx, r: &Resolved, a: Axis, x: f64) -> Option<String> {
    let [lo, hi] = r.domain[a.index()];
    let side = if x < lo - cx.tol {
        0
    } else if x > hi + cx.tol {
        1
    } else {
        return None;
    };
    let padding = if r.boundaries[a.index()][side] == Boundary::Absorbing { ", in the absorbing padding" } else { "" };
    Some(format!("{} = {} lies outside the domain {}{padding}", a.name(), cx.show(x), cx.range(lo, hi)))
}

fn port(cx: &Ctx, r: &Resolved, p: &PortSpec, at: &str) -> Result<Port, DesignError> {
    let name = p.name().to_string();
    let kind = match p {
        PortSpec::Lumped { from, to, r: res, .. } => {
            let f = cx.point(from, &format!("{at}.from"))?;
            let t = cx.point(to, &format!("{at}.to"))?;
            let r_ohm = cx.scope.eval(res, &format!("{at}.r"))?;
            if r_ohm <= 0.0 {
                return Err(cx.err(format!("{at}.r"), format!("must be positive (got {r_ohm})")));
            }
            let differ: Vec<Axis> =
                Axis::ALL.into_iter().filter(|a| (t[a.index()] - f[a.index()]).abs() > cx.tol).collect();
            if differ.len() != 1 {
                let which = if differ.is_empty() {
                    "none".into()
                } else {
                    differ.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
                };
                return Err(cx.err(
                    at,
                    format!(
                        "port `{name}`: from and to must differ along exactly one axis (they differ along {which})"
                    ),
                ));
            }
            let axis = differ[0];
            for (end, pt) in [("from", f), ("to", t)] {
                for a in Axis::ALL {
                    if let Some(m) = outside(cx, r, a, pt[a.index()]) {
                        return Err(cx.err(format!("{at}.{end}"), format!("port `{name}`: {m}")));
                    }
                }
            }
            if let Some(inv) = r.collapse {
                let i = inv.index();
                if axis != inv || !spans(cx, r, inv, f[i].min(t[i]), f[i].max(t[i])) {
                    return Err(cx.err(
                        at,
                        format!("port `{name}` must run from face to face along {}, the invariant axis, to be uniform along it", inv.name()),
                    ));
                }
            }
            let nf: [usize; 3] = std::array::from_fn(|i| r.node(i, f[i]));
            let nt: [usize; 3] = std::array::from_fn(|i| r.node(i, t[i]));
            let ai = axis.index();
            let len = nf[ai].abs_diff(nt[ai]);
            if len == 0 {
                return Err(cx.err(
                    at,
                    format!(
                        "port `{name}`: both ends snap to the same grid node (length {}, cell {})",
                        cx.show((t[ai] - f[ai]).abs()),
                        cx.show(r.grid.d[ai])
                    ),
                ));
            }
            let start = if nf[ai] <= nt[ai] { nf } else { nt };
            for a in Axis::ALL {
                let i = a.index();
                let (n0, n1) = (start[i], start[i] + if a == axis { len } else { 0 });
                let pad = r.pml[i][0];
                if r.pml[i][0] > 0 && n0 - pad < PORT_MARGIN {
                    return Err(too_close(cx, at, &name, a, "low", n0 - pad));
                }
                if r.pml[i][1] > 0 && pad + r.n_dom[i] - n1 < PORT_MARGIN {
                    return Err(too_close(cx, at, &name, a, "high", pad + r.n_dom[i] - n1));
                }
            }
            PortKind::Lumped { axis, start, len, r_ohm }
        }
        PortSpec::Waveguide { plane, .. } => {
            let (normal, e) = plane.axis_and_coord();
            let at_plane = format!("{at}.plane");
            let c = cx.len(e, &at_plane)?;
            let i = normal.index();
            let [lo, hi] = r.domain[i];
            if let Some(m) = outside(cx, r, normal, c) {
                return Err(cx.err(at_plane, format!("port `{name}`: {m}")));
            }
            let (e_axis, width_axis) = guide_axes(&r.domain, normal);
            let ext = |a: Axis| r.domain[a.index()][1] - r.domain[a.index()][0];
            if (ext(e_axis) - ext(width_axis)).abs() <= cx.tol {
                return Err(
                    cx.err(at, format!("port `{name}`: the guide's cross-section is square, so TE10 is ambiguous"))
                );
            }
            let walls = r.boundaries[width_axis.index()];
            if walls.iter().any(|b| *b != Boundary::Pec) {
                return Err(cx.err(
                    at,
                    format!("port `{name}`: a TE10 port needs Pec faces on both {} faces (the guide's broad walls' ends); boundaries.{} is {:?}/{:?}", width_axis.name(), width_axis.name(), walls[0], walls[1]),
                ));
            }
            // TE10's E runs across the guide from one e_axis face to the other: normal
            // to those faces, which a PEC face allows and a PMC face forbids.
            let tops = r.boundaries[e_axis.index()];
            if tops.iter().any(|b| *b != Boundary::Pec) {
                return Err(cx.err(
                    at,
                    format!("port `{name}`: a TE10 port needs Pec faces on both {} faces (its E field ends on them); boundaries.{} is {:?}/{:?}", e_axis.name(), e_axis.name(), tops[0], tops[1]),
                ));
            }
            if let Some(inv) = r.collapse {
                if inv != e_axis {
                    return Err(cx.err(
                        at,
                        format!("port `{name}`: the invariant axis {} must be the one along the TE10 E field ({}): only then is the mode uniform along it", inv.name(), e_axis.name()),
                    ));
                }
            }
            let p = r.node(i, c);
            let inward: i8 = if c < 0.5 * (lo + hi) { 1 } else { -1 };
            let side = if inward > 0 { 0 } else { 1 };
            if r.boundaries[i][side] != Boundary::Absorbing {
                return Err(cx.err(
                    at_plane,
                    format!(
                        "port `{name}` needs an Absorbing face behind it; the {}-{} face is {:?}",
                        normal.name(),
                        ["low", "high"][side],
                        r.boundaries[i][side]
                    ),
                ));
            }
            let room = if inward > 0 { p - r.pml[i][0] } else { r.pml[i][0] + r.n_dom[i] - p };
            let need = SOURCE_OFFSET + 2;
            if room < need {
                return Err(cx.err(
                    at_plane,
                    format!("port `{name}` is {room} cells from the absorbing padding on the {}-{} face; its source needs at least {need}: move it {} or more into the domain", normal.name(), ["low", "high"][side], cx.show((need - room) as f64 * r.grid.d[i])),
                ));
            }
            PortKind::Waveguide {
                normal,
                plane: p,
                inward,
                e_axis,
                width_axis,
                a: ext(width_axis),
                source_offset: SOURCE_OFFSET,
                shift_m: 0.0,
            }
        }
    };
    Ok(Port { name, kind })
}

fn too_close(cx: &Ctx, at: &str, name: &str, a: Axis, side: &str, cells: usize) -> DesignError {
    cx.err(
        at,
        format!("port `{name}` is {cells} cells from the absorbing padding on the {}-{side} face; keep ports at least {PORT_MARGIN} cells inside", a.name()),
    )
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

fn check_port_overlaps(cx: &Ctx, r: &Resolved) -> Result<(), DesignError> {
    for (j, b) in r.ports.iter().enumerate() {
        for a in &r.ports[..j] {
            let clash = match (&a.kind, &b.kind) {
                (
                    PortKind::Waveguide { normal: na, plane: pa, .. },
                    PortKind::Waveguide { normal: nb, plane: pb, .. },
                ) => (na == nb && pa == pb)
                    .then(|| format!("lies on the same grid plane ({} = {pa}) as port `{}`", na.name(), a.name)),
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
                return Err(cx.err(format!("ports[{j}]"), format!("port `{}` {m}", b.name)));
            }
        }
    }
    Ok(())
}
