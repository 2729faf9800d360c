//! Checks of a parsed design file that need no parameter values: names,
//! expressions, bounds, materials, ports, band, engine options, goals, optimiser.

use std::collections::BTreeSet;

use super::error::DesignError;
use super::expr::{self, Expr, BUILTIN_NAMES};
use super::format::{DesignFile, EdgeRuleSpec, EngineSpec, MaterialSpec, Objective, PortSpec, Primitive, Vec3};
use super::params::spec_problem;
use crate::fitness::{Goal, GoalKind, Limit};
use crate::job::{Axis, Boundary};

/// The coarsest mesh accepted, in cells per wavelength at the top frequency
/// (checked here for an automatic mesh's setting, by the voxeliser for every mesh).
pub const MIN_CELLS_PER_WAVELENGTH: f64 = 15.0;

/// The most frequencies a sweep may have (each is a running DFT per port).
pub const MAX_BAND_POINTS: usize = 100_000;

/// Built-in material names (matched case-insensitively).
pub const BUILTIN_MATERIALS: &[&str] = &["Pec", "Vacuum"];

/// What the static checks produce: the goals in fitness form and notes for the user.
pub(crate) struct Checked {
    pub goals: Vec<Goal>,
    pub notes: Vec<String>,
}

pub(crate) fn check_static(d: &DesignFile, file: &str) -> Result<Checked, DesignError> {
    let bad = |at: &str, m: String| Err(DesignError::invalid(file, at, m));
    if d.name.trim().is_empty() {
        return bad("name", "must not be empty".into());
    }
    // The design's name names its run directory and output files.
    if let Some(m) = file_name_problem(&d.name) {
        return bad("name", m);
    }

    // Names: identifiers that evalexpr reads as variables, each declared once.
    for (name, spec) in &d.parameters {
        let at = format!("parameters.{name}");
        if let Some(m) = name_problem(name) {
            return bad(&at, m);
        }
        if d.constants.contains_key(name) {
            return bad(&at, format!("`{name}` is declared both as a parameter and as a constant"));
        }
        if let Some(m) = spec_problem(spec) {
            return bad(&at, m);
        }
    }
    for (name, v) in &d.constants {
        let at = format!("constants.{name}");
        if let Some(m) = name_problem(name) {
            return bad(&at, m);
        }
        if !v.is_finite() {
            return bad(&at, format!("must be a finite number (got {v})"));
        }
    }
    let known: BTreeSet<String> = d.parameters.keys().chain(d.constants.keys()).cloned().collect();

    for (name, m) in &d.materials {
        let at = format!("materials.{name}");
        if BUILTIN_MATERIALS.iter().any(|b| b.eq_ignore_ascii_case(name)) || super::format::builtin_metal(name).is_some() {
            return bad(&at, format!("`{name}` is a built-in material; choose another name"));
        }
        if let MaterialSpec::Metal { conductivity, thickness, roughness } = *m {
            if !(conductivity > 0.0 && conductivity.is_finite()) {
                return bad(&format!("{at}.conductivity"), format!("must be a positive conductivity in S/m (got {conductivity}; copper is 5.8e7)"));
            }
            if let Some(t) = thickness {
                if !(t > 0.0 && t.is_finite()) {
                    return bad(&format!("{at}.thickness"), format!("must be a positive thickness in metres (got {t}; 1 oz copper is 35e-6)"));
                }
            }
            if let Some(r) = roughness {
                if !(r >= 0.0 && r.is_finite()) {
                    return bad(&format!("{at}.roughness"), format!("must be an rms roughness >= 0 in metres (got {r})"));
                }
            }
        }
        if let Some(m) = file_name_problem(name) {
            return bad(&at, m);
        }
        if let MaterialSpec::Dispersive { eps_inf, sigma, poles } = m {
            if let Some((f, msg)) = dispersive_problem(&at, *eps_inf, *sigma, poles) {
                return bad(&f, msg);
            }
        }
        if let MaterialSpec::Dielectric { f_ref: Some(f), .. } = *m {
            if !(f > 0.0 && f.is_finite()) {
                return bad(&format!("{at}.f_ref"), format!("must be a positive frequency in Hz (got {f})"));
            }
        }
        if let MaterialSpec::Dielectric { eps_r, tan_delta, sigma, mu_r, .. } = *m {
            if !(eps_r >= 1.0 && eps_r.is_finite()) {
                return bad(&format!("{at}.eps_r"), format!("must be a finite number >= 1 (got {eps_r})"));
            }
            if let Some(mu) = mu_r {
                if !(mu >= 1.0 && mu.is_finite()) {
                    return bad(&format!("{at}.mu_r"), format!("must be a finite number >= 1 (got {mu})"));
                }
            }
            if tan_delta.is_some() && sigma.is_some() {
                return bad(&at, "give the loss as tan_delta or as sigma, not both".into());
            }
            for (f, v) in [("tan_delta", tan_delta), ("sigma", sigma)] {
                if let Some(v) = v {
                    if !(v >= 0.0 && v.is_finite()) {
                        return bad(&format!("{at}.{f}"), format!("must be a finite number >= 0 (got {v})"));
                    }
                }
            }
            // Circuit-board laminates lie near 1e-4..0.03; even lossy absorbers
            // stay below 1. A larger value is a percentage typed as a number.
            if let Some(t) = tan_delta {
                if t > MAX_TAN_DELTA {
                    return bad(
                        &format!("{at}.tan_delta"),
                        format!(
                            "{t} is not a loss tangent (it is a ratio, at most {MAX_TAN_DELTA}; laminates lie near 0.0001-0.03): \
                             if you meant {t} %, write tan_delta: {}",
                            crate::numfmt::short(t / 100.0)
                        ),
                    );
                }
            }
        }
    }

    for (at, e) in numeric_fields(d) {
        if let Expr::Text(t) = e {
            expr::check(file, &at, t, &known)?;
        }
    }

    for (at, p) in leaves(d) {
        let material = match p {
            Primitive::Box { material, .. }
            | Primitive::Post { material, .. }
            | Primitive::Cylinder { material, .. }
            | Primitive::Prism { material, .. }
            | Primitive::Substrate { material, .. } => material,
            _ => continue,
        };
        let builtin = BUILTIN_MATERIALS.iter().any(|b| b.eq_ignore_ascii_case(material)) || super::format::builtin_metal(material).is_some();
        if !builtin && !d.materials.contains_key(material) {
            let mut names: Vec<&str> = BUILTIN_MATERIALS.to_vec();
            names.extend(super::format::BUILTIN_METALS.iter().map(|m| m.0));
            names.extend(d.materials.keys().map(String::as_str));
            return bad(&format!("{at}.material"), format!("unknown material `{material}` (known: {})", names.join(", ")));
        }
    }

    for (i, c) in d.constraints.iter().enumerate() {
        let at = format!("constraints[{i}]");
        expr::check(file, &at, c, &known)?;
        if let Err(m) = expr::comparison(c) {
            return Err(DesignError::BadExpression { file: file.into(), at, expr: c.clone(), problem: m });
        }
    }

    if let Some(objs) = &d.objectives {
        if objs.is_empty() {
            return bad("objectives", "must list at least one objective (or be left out)".into());
        }
        if objs.iter().filter(|o| matches!(o, Objective::Goals)).count() > 1 {
            return bad("objectives", "`Goals` may appear only once".into());
        }
        for (i, o) in objs.iter().enumerate() {
            if let Objective::Minimize(t) | Objective::Maximize(t) = o {
                expr::check(file, &format!("objectives[{i}]"), t, &known)?;
            }
        }
    }

    if d.ports.is_empty() {
        return bad("ports", "must list at least one port".into());
    }
    for (i, p) in d.ports.iter().enumerate() {
        if p.name().trim().is_empty() {
            return bad(&format!("ports[{i}].name"), "must not be empty".into());
        }
        // Port names become file names (timeseries_drive_NAME.csv), Touchstone
        // header lines and CSV column names.
        if let Some(m) = file_name_problem(p.name()) {
            return bad(&format!("ports[{i}].name"), m);
        }
        if let Some(k) = d.ports[..i].iter().position(|q| q.name() == p.name()) {
            return bad(&format!("ports[{i}].name"), format!("`{}` is also the name of ports[{k}]", p.name()));
        }
    }

    let b = &d.band;
    if !(b.start >= 0.0 && b.start.is_finite() && b.stop.is_finite()) {
        return bad("band", format!("start ({}) and stop ({}) must be finite and >= 0", b.start, b.stop));
    }
    if b.stop <= b.start {
        return bad("band", format!("stop ({}) must be above start ({})", b.stop, b.start));
    }
    if b.stop < MIN_BAND_STOP_HZ {
        return bad("band", unit_slip("the band", b.start, b.stop, |a, b| format!("start: {a}, stop: {b}")));
    }
    if b.points < 2 {
        return bad("band.points", format!("must be at least 2 (got {})", b.points));
    }
    if b.points > MAX_BAND_POINTS {
        return bad("band.points", format!("must be at most {MAX_BAND_POINTS} (got {}): every point is a DFT kept at every step", b.points));
    }

    let notes = check_engine(d, file)?;
    let goals = check_goals(d, file)?;
    check_far_field(d, file)?;

    match d.optimiser.validate() {
        Ok(()) => {}
        Err(crate::ga::GaError::InvalidSetting { field, why }) => return bad(&format!("optimiser.{field}"), why),
        Err(e) => return bad("optimiser", e.to_string()),
    }
    Ok(Checked { goals, notes })
}

/// The longest design, port or material name.
pub const MAX_NAME_LEN: usize = 64;

/// The lowest top frequency of a band: below 1 MHz a wavelength is 300 m and
/// more, no structure an FDTD grid holds; such a band is a unit slip (GHz or
/// MHz written where Hz are meant).
pub const MIN_BAND_STOP_HZ: f64 = 1e6;

/// The largest loss tangent accepted (a ratio; above it, a percentage typed as a number).
pub const MAX_TAN_DELTA: f64 = 1.0;

/// The most cells the automatic mesh may be asked to put across a slab.
pub const MAX_SLAB_CELLS: usize = 1000;

/// The most cells of absorbing padding a face may have (8-10 is usual).
pub const MAX_PML: usize = 1000;

/// The most steps a job may be given (its port traces grow by a sample per step).
pub const MAX_STEPS: usize = 100_000_000;

/// The most periods of the band's top frequency `engine.max_time` may span
/// (above it, nanoseconds were probably typed as seconds).
pub const MAX_TIME_PERIODS: f64 = 1e6;

/// What a band of `start`..`stop` "Hz" probably meant, and what to write
/// (`write` renders the corrected pair in the field's own form).
fn unit_slip(what: &str, start: f64, stop: f64, write: impl Fn(String, String) -> String) -> String {
    let (unit, exp) = if stop < 1e3 { ("GHz", "e9") } else { ("MHz", "e6") };
    let (a, b) = (crate::numfmt::short(start), crate::numfmt::short(stop));
    format!(
        "{what} {a}-{b} Hz lies below 1 MHz: frequencies are in Hz, and these look like {unit}; write {}",
        write(format!("{a}{exp}"), format!("{b}{exp}"))
    )
}

/// Why `name` cannot name a file or a line of an output file, if it cannot:
/// design, port and material names appear in file names, Touchstone headers,
/// CSV columns and reports, so they keep to letters, digits, `_`, `-`, `+`
/// and `.`, start with a letter or digit, and are at most [`MAX_NAME_LEN`] long.
pub fn file_name_problem(name: &str) -> Option<String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "_-+.".contains(c);
    let shown = format!("{name:?}");
    if let Some(c) = name.chars().find(|&c| !ok_char(c)) {
        return Some(format!(
            "{shown} contains {:?}: names appear in file names and output headers, so they may hold only letters, digits, _, -, + and .",
            c
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Some(format!("{shown} must start with a letter or a digit (it names files)"));
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!("{shown} is {} characters long; names are limited to {MAX_NAME_LEN}", name.len()));
    }
    None
}

/// A parameter or constant name must be an identifier evalexpr reads as one variable.
fn name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let ok_start = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !ok_start || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!("`{name}` is not a name (letters, digits and _, not starting with a digit)"));
    }
    if BUILTIN_NAMES.contains(&name) || ["true", "false"].contains(&name) {
        return Some(format!("`{name}` is reserved"));
    }
    None
}

fn check_engine(d: &DesignFile, file: &str) -> Result<Vec<String>, DesignError> {
    let bad = |at: &str, m: String| Err(DesignError::invalid(file, at, m));
    let o = d.engine.options();
    if o.courant.is_nan() || o.courant <= 0.0 {
        return bad("engine.courant", format!("must be positive (got {})", o.courant));
    }
    if o.courant > 1.0 {
        return bad(
            "engine.courant",
            format!(
                "{} is above 1: the time step would exceed the stability limit and the fields would blow up",
                o.courant
            ),
        );
    }
    if o.pml < 1 {
        return bad("engine.pml", "must be at least 1 cell (8-10 is usual)".into());
    }
    if o.pml > MAX_PML {
        return bad("engine.pml", format!("{} cells of absorbing padding is more than any problem needs: at most {MAX_PML} (8-10 is usual)", o.pml));
    }
    if let Some(n) = o.max_steps.filter(|&n| n > MAX_STEPS) {
        return bad("engine.max_steps", format!("{n} steps is more than allowed: at most {MAX_STEPS} (the default is {})", crate::job::StopRule::default().max_steps));
    }
    if o.decay_db.is_nan() || o.decay_db >= 0.0 {
        return bad("engine.decay_db", format!("must be negative, in dB below the peak (got {})", o.decay_db));
    }
    if o.max_steps == Some(0) {
        return bad("engine.max_steps", "must be at least 1".into());
    }
    if let Some(t) = o.max_time {
        if !(t > 0.0 && t.is_finite()) {
            return bad("engine.max_time", format!("must be a positive time in seconds (got {t})"));
        }
        // Seconds typed as nanoseconds: a million periods of the top frequency
        // is far beyond any ring-down a time-domain run resolves.
        if t * d.band.stop > MAX_TIME_PERIODS {
            return bad(
                "engine.max_time",
                format!(
                    "{} s is {:.3e} periods at {} GHz: the time is in seconds (write {}e-9 for {} ns)",
                    crate::numfmt::short(t),
                    t * d.band.stop,
                    crate::numfmt::short(d.band.stop / 1e9),
                    crate::numfmt::short(t),
                    crate::numfmt::short(t)
                ),
            );
        }
        let pulse = crate::job::Pulse::covering(d.band.start, d.band.stop);
        if t <= pulse.end_time() {
            return bad(
                "engine.max_time",
                format!(
                    "{} ns ends before the excitation does ({} ns for this band): every run would stop with its source still on; give several times that",
                    crate::numfmt::short(t * 1e9),
                    crate::numfmt::short(pulse.end_time() * 1e9)
                ),
            );
        }
    }
    if o.cell.is_some() && o.mesh.is_some() {
        return bad(
            "engine.mesh",
            "give either `cell` (a uniform mesh) or `mesh` (a mesh that follows the geometry), not both".into(),
        );
    }
    if o.cell.is_none() && !matches!(d.engine, EngineSpec::Fdtd(_)) {
        return bad(
            "engine.cell",
            "the TLM engines run on uniform cells: give `cell` (a mesh that follows the geometry is FDTD only)".into(),
        );
    }
    if let Some(super::format::MeshSpec::Auto(m)) = &o.mesh {
        if !(m.cells_per_wavelength.is_finite() && m.cells_per_wavelength >= MIN_CELLS_PER_WAVELENGTH) {
            return bad(
                "engine.mesh.cells_per_wavelength",
                format!("must be at least {MIN_CELLS_PER_WAVELENGTH} (got {})", m.cells_per_wavelength),
            );
        }
        if let EdgeRuleSpec::Inside(f) = m.edges {
            if !(f.is_finite() && (0.0..0.5).contains(&f)) {
                return bad("engine.mesh.edges", format!("Inside(f) needs 0 <= f < 0.5 (got {f})"));
            }
        }
        if !(m.max_ratio > 1.0 && m.max_ratio <= 3.0) {
            return bad("engine.mesh.max_ratio", format!("must lie in (1, 3]; 1.3-1.5 is usual (got {})", m.max_ratio));
        }
        if m.slab_cells == 0 {
            return bad("engine.mesh.slab_cells", "must be at least 1".into());
        }
        if m.slab_cells > MAX_SLAB_CELLS {
            return bad("engine.mesh.slab_cells", format!("must be at most {MAX_SLAB_CELLS} (4 is usual; got {})", m.slab_cells));
        }
    }
    let faces = boundary_faces(d);
    let mut notes = vec![];
    if let Some(inv) = o.invariant {
        if let Some(m) = invariant_faces_problem(&faces, inv) {
            return bad("engine.invariant", m);
        }
    } else if matches!(d.engine, EngineSpec::Tlm2d(_)) {
        if !d.ports.iter().any(|p| matches!(p, PortSpec::Waveguide { .. })) {
            return bad(
                "engine.invariant",
                "Tlm2d needs an invariant axis: declare one (e.g. `invariant: Y`); there is no waveguide port to infer it from"
                    .into(),
            );
        }
        notes.push(
            "engine Tlm2d: no invariant axis declared; the axis along the waveguide ports' E field (the guide's narrow side) is collapsed to one cell".into(),
        );
    }
    Ok(notes)
}

/// `boundaries[axis]` as (low face, high face).
pub(crate) fn boundary_faces(d: &DesignFile) -> [[Boundary; 2]; 3] {
    [d.boundaries.x.faces(), d.boundaries.y.faces(), d.boundaries.z.faces()]
}

/// Why `inv` cannot be an invariant axis, if it cannot.
///
/// Collapsing an axis to one cell is exact when neither the structure nor the
/// fields vary along it. The fields kept are those with E along the axis (TE_m0
/// of an H-plane guide whose narrow side is the axis, or a lumped port running
/// face to face along it), with H across it. PEC faces hold exactly those fields:
/// they ask for zero tangential E, and with one cell the only tangential E edges
/// lie on the faces themselves. A PMC face would instead force E normal to it, the
/// very component kept, to zero, and an absorbing face has nothing to absorb.
pub(crate) fn invariant_faces_problem(faces: &[[Boundary; 2]; 3], inv: Axis) -> Option<String> {
    let f = faces[inv.index()];
    f.iter().any(|b| *b != Boundary::Pec).then(|| {
        format!(
            "the invariant axis {0} must be bounded by Pec faces (boundaries.{0} is {1:?}/{2:?}): the fields kept uniform \
             along it have E along {0}, which only PEC faces support",
            inv.name(),
            f[0],
            f[1]
        )
    })
}

fn check_goals(d: &DesignFile, file: &str) -> Result<Vec<Goal>, DesignError> {
    let bad = |at: String, m: String| Err(DesignError::invalid(file, at, m));
    if d.goals.is_empty() {
        return bad("goals".into(), "must list at least one goal".into());
    }
    let n = d.ports.len();
    let freqs = d.band.freqs();
    let mut goals = Vec::with_capacity(d.goals.len());
    let pattern_goal = d.goals.iter().any(|g| g.s.is_none());
    let ff_problem = (pattern_goal || d.far_field.is_some()).then(|| far_field_problem(d)).flatten();
    for (k, g) in d.goals.iter().enumerate() {
        let at = format!("goals[{k}]");
        let quantities: Vec<(&str, Option<GoalKind>)> = vec![
            ("s", g.s.map(|(i, j)| GoalKind::S { i, j })),
            ("gain", g.gain.map(|x| GoalKind::Gain { theta: x.theta, phi: x.phi })),
            ("realized_gain", g.realized_gain.map(|x| GoalKind::RealizedGain { theta: x.theta, phi: x.phi })),
            ("directivity", g.directivity.map(|x| GoalKind::Directivity { theta: x.theta, phi: x.phi })),
            ("front_to_back", g.front_to_back.map(|x| GoalKind::FrontToBack { theta: x.theta, phi: x.phi })),
        ];
        let given: Vec<(&str, GoalKind)> = quantities.into_iter().filter_map(|(n, q)| q.map(|q| (n, q))).collect();
        let (what, kind) = match given.as_slice() {
            [one] => *one,
            _ => {
                return bad(
                    at,
                    format!(
                        "give exactly one quantity: s, gain, realized_gain, directivity or front_to_back (got {})",
                        if given.is_empty() { "none".to_string() } else { given.iter().map(|g| g.0).collect::<Vec<_>>().join(", ") }
                    ),
                )
            }
        };
        let at_q = format!("{at} ({what})");
        if let GoalKind::S { i, j } = kind {
            for p in [i, j] {
                if p < 1 || p > n {
                    let names: Vec<String> =
                        d.ports.iter().enumerate().map(|(q, p)| format!("{} = `{}`", q + 1, p.name())).collect();
                    return bad(
                        format!("{at}.s"),
                        format!("S{i}{j} refers to port {p}, which does not exist (ports: {})", names.join(", ")),
                    );
                }
            }
        } else {
            if let Some(m) = &ff_problem {
                return bad(at_q, m.clone());
            }
            let dir = g.gain.or(g.realized_gain).or(g.directivity).or(g.front_to_back).unwrap_or(super::format::Direction { theta: 0.0, phi: 0.0 });
            if !(dir.theta.is_finite() && (0.0..=180.0).contains(&dir.theta)) {
                return bad(format!("{at}.{what}.theta"), format!("must lie in 0..=180 degrees (got {})", dir.theta));
            }
            if !(dir.phi.is_finite() && (-360.0..=360.0).contains(&dir.phi)) {
                return bad(format!("{at}.{what}.phi"), format!("must lie in -360..=360 degrees (got {})", dir.phi));
            }
            if matches!(kind, GoalKind::FrontToBack { .. }) {
                if let Ok(Some(m)) = crate::job::huygens::open_problem(&boundary_faces(d)) {
                    return bad(
                        at_q,
                        format!(
                            "the {:?} face {}{} mirrors the fields: the back lies behind it, where nothing radiates, so front-to-back is infinite",
                            m.boundary,
                            m.axis.name(),
                            if m.side == 0 { "-" } else { "+" }
                        ),
                    );
                }
            }
        }
        let dbi = kind.unit() == "dBi";
        let limit = match (g.above_db, g.below_db, g.above_dbi, g.below_dbi) {
            (Some(a), None, None, None) if !dbi => Limit::Above(a),
            (None, Some(b), None, None) if !dbi => Limit::Below(b),
            (None, None, Some(a), None) if dbi => Limit::Above(a),
            (None, None, None, Some(b)) if dbi => Limit::Below(b),
            _ if dbi => return bad(at_q, format!("a {what} goal's level is in dBi: give exactly one of above_dbi and below_dbi")),
            _ => return bad(at_q, "give exactly one of above_db and below_db".into()),
        };
        let (Limit::Above(level) | Limit::Below(level)) = limit;
        if !level.is_finite() {
            return bad(at, format!("the level must be finite (got {level})"));
        }
        if !(g.weight >= 0.0 && g.weight.is_finite()) {
            return bad(format!("{at}.weight"), format!("must be a finite number >= 0 (got {})", g.weight));
        }
        let (f1, f2) = g.band;
        if f1.is_nan() || f2.is_nan() || f1 >= f2 {
            return bad(format!("{at}.band"), format!("f2 ({f2}) must be above f1 ({f1})"));
        }
        if f2 < MIN_BAND_STOP_HZ {
            return bad(format!("{at}.band"), unit_slip("the goal's band", f1, f2, |a, b| format!("band: ({a}, {b})")));
        }
        let goal = Goal { kind, band: g.band, limit, weight: g.weight };
        let tol = 1e-9 * d.band.stop;
        if f1 < d.band.start - tol || f2 > d.band.stop + tol {
            return bad(
                format!("{at}.band"),
                format!("{f1}-{f2} Hz reaches outside the simulated band {}-{} Hz", d.band.start, d.band.stop),
            );
        }
        if !freqs.iter().any(|&f| goal.contains(f)) {
            return bad(format!("{at}.band"), "contains no frequency of the sweep; add band points".into());
        }
        goals.push(goal);
    }
    Ok(goals)
}

/// Why `d` can have no far field, if it cannot: a closed or waveguide
/// problem, or an engine without field monitors.
fn far_field_problem(d: &DesignFile) -> Option<String> {
    if !matches!(d.engine, EngineSpec::Fdtd(_)) {
        return Some("a far field needs the Fdtd engine (its field DFT monitors record the Huygens box)".into());
    }
    crate::job::huygens::open_problem(&boundary_faces(d)).err()
}

/// Checks of the `far_field` section (and of what pattern goals imply).
fn check_far_field(d: &DesignFile, file: &str) -> Result<(), DesignError> {
    let Some(ff) = &d.far_field else { return Ok(()) };
    let bad = |at: &str, m: String| Err(DesignError::invalid(file, at, m));
    if let Some(m) = far_field_problem(d) {
        return bad("far_field", m);
    }
    for (k, &f) in ff.freqs.iter().enumerate() {
        let tol = 1e-9 * d.band.stop;
        if !(f.is_finite() && f >= d.band.start - tol && f <= d.band.stop + tol) {
            return bad(&format!("far_field.freqs[{k}]"), format!("{f} Hz lies outside the simulated band {}-{} Hz", d.band.start, d.band.stop));
        }
    }
    if ff.freqs.is_empty() && !d.goals.iter().any(|g| g.s.is_none()) {
        return bad("far_field.freqs", "give at least one frequency (or a gain/directivity goal, whose band sets them)".into());
    }
    let steps = 90.0 / ff.step_deg;
    // At least half a degree: the pattern grid (and its memory) grows as 1/step².
    if !(ff.step_deg >= 0.5 && ff.step_deg <= 30.0 && (steps - steps.round()).abs() < 1e-9) {
        return bad("far_field.step_deg", format!("must divide 90 degrees and lie in 0.5..=30 (1, 2, 2.5, 5, 10, ...; got {})", ff.step_deg));
    }
    if let Some(g) = ff.gap.filter(|&g| g > MAX_PML) {
        return bad("far_field.gap", format!("{g} cells between the absorbing layers and the box is more than any domain holds: at most {MAX_PML} (3 is usual)"));
    }
    if ff.port < 1 || ff.port > d.ports.len() {
        return bad("far_field.port", format!("port {} does not exist (there are {} ports, numbered from 1)", ff.port, d.ports.len()));
    }
    Ok(())
}

/// What is wrong with a `Dispersive` medium, if anything: (field path, message).
/// Passive, causal poles have non-negative strengths and damping and positive
/// time constants and frequencies.
fn dispersive_problem(at: &str, eps_inf: f64, sigma: Option<f64>, poles: &[super::format::PoleSpec]) -> Option<(String, String)> {
    use super::format::PoleSpec;
    if !(eps_inf >= 1.0 && eps_inf.is_finite()) {
        return Some((format!("{at}.eps_inf"), format!("must be a finite number >= 1 (got {eps_inf})")));
    }
    if let Some(s) = sigma {
        if !(s >= 0.0 && s.is_finite()) {
            return Some((format!("{at}.sigma"), format!("must be a finite number >= 0 (got {s})")));
        }
    }
    if poles.is_empty() {
        return Some((format!("{at}.poles"), "is empty: give at least one Debye, Lorentz or Drude pole (or use Dielectric)".into()));
    }
    for (k, p) in poles.iter().enumerate() {
        let pat = format!("{at}.poles[{k}]");
        let checks: Vec<(&str, f64, bool)> = match *p {
            PoleSpec::Debye { delta_eps, tau } => vec![("delta_eps", delta_eps, false), ("tau", tau, true)],
            PoleSpec::Lorentz { delta_eps, f0, delta } => vec![("delta_eps", delta_eps, false), ("f0", f0, true), ("delta", delta, false)],
            PoleSpec::Drude { f_p, gamma } => vec![("f_p", f_p, true), ("gamma", gamma, false)],
        };
        for (f, v, strict) in checks {
            let ok = v.is_finite() && if strict { v > 0.0 } else { v >= 0.0 };
            if !ok {
                let want = if strict { "> 0" } else { ">= 0" };
                return Some((
                    format!("{pat}.{f}"),
                    format!("must be a finite number {want} (got {v}): a negative strength or damping makes the medium active (energy from nowhere), a zero time constant or frequency is not a pole"),
                ));
            }
        }
    }
    None
}

/// Every primitive that is not a `Group` or `Repeat`, with its path, in order.
pub(crate) fn leaves(d: &DesignFile) -> Vec<(String, &Primitive)> {
    fn walk<'a>(at: String, p: &'a Primitive, out: &mut Vec<(String, &'a Primitive)>) {
        match p {
            Primitive::Group { items, .. } | Primitive::Repeat { items, .. } => {
                for (k, it) in items.iter().enumerate() {
                    walk(format!("{at}.items[{k}] ({})", it.kind()), it, out);
                }
            }
            _ => out.push((at, p)),
        }
    }
    let mut out = vec![];
    for (i, p) in d.geometry.iter().enumerate() {
        walk(format!("geometry[{i}] ({})", p.kind()), p, &mut out);
    }
    out
}

/// Every expression-valued field with its path, for the load-time checks.
pub(crate) fn numeric_fields(d: &DesignFile) -> Vec<(String, &Expr)> {
    fn vec3(at: String, v: &Vec3) -> Vec<(String, &Expr)> {
        [("x", &v.0), ("y", &v.1), ("z", &v.2)].into_iter().map(|(c, e)| (format!("{at}.{c}"), e)).collect()
    }
    fn vec2(at: String, v: &super::format::Vec2) -> Vec<(String, &Expr)> {
        [("u", &v.0), ("v", &v.1)].into_iter().map(|(c, e)| (format!("{at}.{c}"), e)).collect()
    }
    fn transform<'a>(at: &str, t: &'a super::format::Transform, out: &mut Vec<(String, &'a Expr)>) {
        if let Some(m) = &t.mirror {
            out.push((format!("{at}.transform.mirror.at"), &m.at));
        }
        if let Some(r) = &t.rotate {
            out.push((format!("{at}.transform.rotate.angle"), &r.angle));
            if let Some(p) = &r.about {
                out.extend(vec3(format!("{at}.transform.rotate.about"), p));
            }
        }
        if let Some(v) = &t.translate {
            out.extend(vec3(format!("{at}.transform.translate"), v));
        }
    }
    let mut out: Vec<(String, &Expr)> = vec![];
    let mut stack: Vec<(String, &Primitive)> = d.geometry.iter().enumerate().map(|(i, p)| (format!("geometry[{i}] ({})", p.kind()), p)).collect();
    stack.reverse();
    while let Some((at, p)) = stack.pop() {
        match p {
            Primitive::Group { items, transform: t } | Primitive::Repeat { items, transform: t, .. } => {
                if let Primitive::Repeat { count, .. } = p {
                    out.push((format!("{at}.count"), count));
                }
                transform(&at, t, &mut out);
                for (k, it) in items.iter().enumerate().rev() {
                    stack.push((format!("{at}.items[{k}] ({})", it.kind()), it));
                }
            }
            Primitive::Cylinder { center, radius, inner_radius, from, to, .. } => {
                out.extend(vec3(format!("{at}.center"), center));
                out.push((format!("{at}.radius"), radius));
                if let Some(e) = inner_radius {
                    out.push((format!("{at}.inner_radius"), e));
                }
                out.push((format!("{at}.from"), from));
                out.push((format!("{at}.to"), to));
            }
            Primitive::Prism { points, from, to, .. } => {
                for (k, p) in points.iter().enumerate() {
                    out.extend(vec2(format!("{at}.points[{k}]"), p));
                }
                out.push((format!("{at}.from"), from));
                out.push((format!("{at}.to"), to));
            }
            Primitive::Disc { at: z, center, radius, inner_radius, .. } => {
                out.push((format!("{at}.at"), z));
                out.extend(vec2(format!("{at}.center"), center));
                out.push((format!("{at}.radius"), radius));
                if let Some(e) = inner_radius {
                    out.push((format!("{at}.inner_radius"), e));
                }
            }
            Primitive::Polygon { at: z, points, .. } => {
                out.push((format!("{at}.at"), z));
                for (k, p) in points.iter().enumerate() {
                    out.extend(vec2(format!("{at}.points[{k}]"), p));
                }
            }
            Primitive::Load { from, to, r, l, c, .. } => {
                out.extend(vec3(format!("{at}.from"), from));
                out.extend(vec3(format!("{at}.to"), to));
                for (f, e) in [("r", r), ("l", l), ("c", c)] {
                    if let Some(e) = e {
                        out.push((format!("{at}.{f}"), e));
                    }
                }
            }
            Primitive::Box { min, max, .. } | Primitive::Sheet { min, max, .. } => {
                out.extend(vec3(format!("{at}.min"), min));
                out.extend(vec3(format!("{at}.max"), max));
            }
            Primitive::Iris { z, thickness, aperture, .. } => {
                out.push((format!("{at}.z"), z));
                out.push((format!("{at}.thickness"), thickness));
                out.push((format!("{at}.aperture"), aperture));
            }
            Primitive::Post { center, radius, .. } => {
                out.extend(vec3(format!("{at}.center"), center));
                out.push((format!("{at}.radius"), radius));
            }
            Primitive::Substrate { z0, thickness, .. } => {
                out.push((format!("{at}.z0"), z0));
                out.push((format!("{at}.thickness"), thickness));
            }
        }
    }
    for (a, (lo, hi)) in [("x", &d.domain.x), ("y", &d.domain.y), ("z", &d.domain.z)] {
        out.push((format!("domain.{a}[0]"), lo));
        out.push((format!("domain.{a}[1]"), hi));
    }
    for (i, p) in d.ports.iter().enumerate() {
        match p {
            PortSpec::Lumped { from, to, r, .. } => {
                out.extend(vec3(format!("ports[{i}].from"), from));
                out.extend(vec3(format!("ports[{i}].to"), to));
                out.push((format!("ports[{i}].r"), r));
            }
            PortSpec::Waveguide { plane, .. } => out.push((format!("ports[{i}].plane"), plane.axis_and_coord().1)),
        }
    }
    let o = d.engine.options();
    if let Some(c) = &o.cell {
        out.push(("engine.cell".into(), c));
    }
    if let Some(super::format::MeshSpec::Auto(m)) = &o.mesh {
        for (name, e) in [("max_cell", &m.max_cell), ("min_cell", &m.min_cell), ("edge_cell", &m.edge_cell)] {
            if let Some(e) = e {
                out.push((format!("engine.mesh.{name}"), e));
            }
        }
        for a in Axis::ALL {
            if let Some(v) = m.lines.axis(a) {
                out.extend(v.iter().enumerate().map(|(i, e)| (format!("engine.mesh.lines.{}[{i}]", a.name()), e)));
            }
        }
    }
    out
}
