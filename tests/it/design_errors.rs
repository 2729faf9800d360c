//! Each class of design error gives a message that names the file, the place and
//! what is wrong (asserted on the message, never a panic).

use emvolve::design::{Design, DesignError};

/// A two-iris WR-28 section, simulated in 2.5D.
const WG: &str = r#"Design(
    name: "wg",
    units: Millimetre,
    parameters: { "w1": Real(min: 2.0, max: 5.0), "w2": Real(min: 1.5, max: 4.5) },
    constants: { "a": 7.112, "b": 3.556, "t": 0.5 },
    constraints: ["w2 < w1"],
    geometry: [
        Iris(z: 10, thickness: "t", aperture: "w1"),
        Iris(z: 15, thickness: "t", aperture: "w2"),
    ],
    domain: (x: (0, "a"), y: (0, "b"), z: (0, 25)),
    boundaries: (x: Pec, y: Pec, z: Absorbing),
    ports: [
        Waveguide(name: "in", plane: Z(5), mode: TE10),
        Waveguide(name: "out", plane: Z(20)),
    ],
    band: (start: 26e9, stop: 38e9, points: 25),
    engine: Fdtd(cell: "a/28", invariant: Y),
    goals: [
        Goal(s: (2, 1), band: (31e9, 32e9), above_db: -1.0),
    ],
)"#;

/// A microstrip line between two probes.
const MS: &str = r#"Design(
    name: "ms",
    units: Millimetre,
    parameters: { "len": Real(min: 10.0, max: 20.0) },
    constants: { "h": 0.8 },
    materials: { "sub": Dielectric(eps_r: 3.55, tan_delta: 0.0027) },
    geometry: [
        Substrate(material: "sub", z0: 0, thickness: "h", ground: true),
        Sheet(min: ("-len", -1, "h"), max: ("len", 1, "h")),
    ],
    domain: (x: (-24, 24), y: (-8, 8), z: (0, 6)),
    boundaries: (x: Absorbing, y: Absorbing, z: Faces(Pec, Absorbing)),
    ports: [
        Lumped(name: "p1", from: ("-len", 0, 0), to: ("-len", 0, "h")),
        Lumped(name: "p2", from: ("len", 0, 0), to: ("len", 0, "h")),
    ],
    band: (start: 1e9, stop: 6e9, points: 51),
    engine: Fdtd(cell: 0.4),
    goals: [ Goal(s: (2, 1), band: (1e9, 2e9), above_db: -1.0) ],
)"#;

/// Parse `base` with `from` replaced by `to` (which must occur), expecting an error.
fn err(base: &str, origin: &str, from: &str, to: &str) -> DesignError {
    assert!(base.contains(from), "test setup: `{from}` not in the base design");
    match Design::parse(&base.replacen(from, to, 1), origin) {
        Ok(_) => panic!("expected an error after replacing `{from}` with `{to}`"),
        Err(e) => e,
    }
}

/// The message contains every fragment.
fn says(e: &DesignError, parts: &[&str]) {
    let m = e.to_string();
    for p in parts {
        assert!(m.contains(p), "message lacks `{p}`:\n{m}");
    }
}

#[test]
fn bases_are_valid() {
    for (base, name) in [(WG, "wg.ron"), (MS, "ms.ron")] {
        let d = Design::parse(base, name).unwrap_or_else(|e| panic!("{e}"));
        d.jobs(&d.midpoint_values(), &[0, 1], None).unwrap();
    }
}

#[test]
fn ron_syntax_error_gives_line_and_column() {
    // The missing comma after `units: Millimetre` is noticed at the next field, line 4.
    let e = err(WG, "wg.ron", "units: Millimetre,", "units: Millimetre");
    assert!(matches!(e, DesignError::Syntax { line: 4, .. }), "{e:?}");
    says(&e, &["wg.ron:4:", "comma"]);
}

#[test]
fn unknown_field_gives_line_column_and_field() {
    let e = err(WG, "wg.ron", r#"Iris(z: 15, thickness: "t""#, r#"Iris(z: 15, thikness: "t""#);
    assert!(matches!(e, DesignError::Syntax { line: 9, .. }), "{e:?}");
    says(&e, &["wg.ron:9:", "unknown field `thikness`", "thickness"]);
}

#[test]
fn unknown_name_in_expression() {
    let e = err(WG, "wg.ron", r#"aperture: "w2""#, r#"aperture: "w3 + t""#);
    says(&e, &["wg.ron", "geometry[1] (Iris).aperture", "unknown name `w3`", "w1, w2"]);
}

#[test]
fn expression_that_is_not_a_number() {
    let e = err(WG, "wg.ron", r#"aperture: "w1""#, r#"aperture: "w1 > 2""#);
    says(&e, &["wg.ron", "geometry[0] (Iris).aperture", "\"w1 > 2\"", "is not a number"]);
}

#[test]
fn parameter_value_outside_bounds() {
    let d = Design::parse(WG, "wg.ron").unwrap();
    let e = d.values_from_sets(&["w1=9"]).unwrap_err();
    assert!(matches!(e, DesignError::OutOfBounds { .. }));
    says(&e, &["wg.ron", "parameters.w1", "value 9", "outside its bounds [2, 5]"]);
    let e = d.values_from_sets(&["w9=3"]).unwrap_err();
    says(&e, &["wg.ron", "`w9` is not a parameter", "w1, w2"]);
}

#[test]
fn bounds_with_min_not_below_max() {
    let e = err(WG, "wg.ron", r#""w1": Real(min: 2.0, max: 5.0)"#, r#""w1": Real(min: 5.0, max: 5.0)"#);
    says(&e, &["wg.ron", "parameters.w1", "min (5) must be below max (5)"]);
}

#[test]
fn port_outside_the_domain() {
    let e = err(WG, "wg.ron", "plane: Z(20)", "plane: Z(27)");
    says(
        &e,
        &["wg.ron", "ports[1].plane", "port `out`", "z = 27 mm lies outside the domain 0..25 mm", "absorbing padding"],
    );
    let e =
        err(MS, "ms.ron", r#"from: ("len", 0, 0), to: ("len", 0, "h")"#, r#"from: ("len", 9, 0), to: ("len", 9, "h")"#);
    says(&e, &["ms.ron", "ports[1].from", "y = 9 mm lies outside the domain -8..8 mm"]);
}

#[test]
fn ports_at_the_same_place() {
    let e = err(WG, "wg.ron", "plane: Z(20)", "plane: Z(5)");
    says(&e, &["wg.ron", "ports[1]", "port `out` lies on the same grid plane", "port `in`"]);
    let e = err(
        MS,
        "ms.ron",
        r#"from: ("len", 0, 0), to: ("len", 0, "h")"#,
        r#"from: ("-len", 0, 0), to: ("-len", 0, "h")"#,
    );
    says(&e, &["ms.ron", "ports[1]", "port `p2` shares grid node", "port `p1`"]);
}

#[test]
fn port_too_close_to_the_absorbing_padding() {
    // Cells are 0.254 mm: z = 1 mm is 4 cells from the PML; the source needs 5.
    let e = err(WG, "wg.ron", "plane: Z(5)", "plane: Z(1)");
    says(
        &e,
        &[
            "wg.ron",
            "ports[0].plane",
            "port `in` is 4 cells from the absorbing padding on the z-low face",
            "at least 5",
        ],
    );
    // A probe 0.8 mm (2 cells) from the x-low padding.
    let e = err(
        MS,
        "ms.ron",
        r#"from: ("-len", 0, 0), to: ("-len", 0, "h")"#,
        r#"from: (-23.2, 0, 0), to: (-23.2, 0, "h")"#,
    );
    says(
        &e,
        &["ms.ron", "ports[0]", "port `p1` is 2 cells from the absorbing padding on the x-low face", "at least 3"],
    );
}

#[test]
fn load_too_close_to_the_absorbing_padding() {
    // The lumped ports' rule and message: a 50 ohm load 0.8 mm (2 cells) from
    // the x-low padding, and one along x ending 0.4 mm (1 cell) from the x-high padding.
    let sheet = r#"Sheet(min: ("-len", -1, "h"), max: ("len", 1, "h")),"#;
    let e = err(MS, "ms.ron", sheet, &format!(r#"{sheet} Load(name: "r1", from: (-23.2, 0, 0), to: (-23.2, 0, "h"), r: 50),"#));
    assert_eq!(
        e.to_string(),
        "ms.ron: geometry[2] (Load): load `r1` is 2 cells from the absorbing padding on the x-low face; keep loads at least 3 cells inside"
    );
    let e = err(MS, "ms.ron", sheet, &format!(r#"{sheet} Load(name: "c2", from: (20, 0, "h"), to: (23.6, 0, "h"), c: 1e-12),"#));
    assert_eq!(
        e.to_string(),
        "ms.ron: geometry[2] (Load): load `c2` is 1 cells from the absorbing padding on the x-high face; keep loads at least 3 cells inside"
    );
    // Three cells away is accepted, as for a port.
    assert!(Design::parse(&MS.replacen(sheet, &format!(r#"{sheet} Load(name: "r1", from: (-22.8, 0, 0), to: (-22.8, 0, "h"), r: 50),"#), 1), "ms.ron").is_ok());
}

#[test]
fn mesh_coarser_than_15_cells_per_wavelength() {
    // 38 GHz in vacuum: 7.9 mm; a/8 = 0.89 mm gives 8.9 cells per wavelength.
    let e = err(WG, "wg.ron", r#"cell: "a/28""#, r#"cell: "a/8""#);
    says(
        &e,
        &["wg.ron", "engine.cell", "mesh too coarse: 8.9 cells per wavelength along x", "`vacuum`", "at least 15"],
    );
    // 6 GHz in eps_r 3.55: 26.5 mm; 2 mm cells give 13.3 (along x; z has 3 cells of 2 mm).
    let e = err(MS, "ms.ron", "cell: 0.4", "cell: 2.0");
    says(
        &e,
        &["ms.ron", "engine.cell", "13.3 cells per wavelength", "`sub`", "sqrt(eps_r mu_r) = 1.884", "at most 1.76"],
    );
}

#[test]
fn courant_number_above_one() {
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, courant: 1.2)");
    says(&e, &["wg.ron", "engine.courant", "1.2 is above 1", "stability"]);
}

#[test]
fn goal_on_a_port_that_does_not_exist() {
    let e = err(WG, "wg.ron", "s: (2, 1)", "s: (3, 1)");
    says(&e, &["wg.ron", "goals[0].s", "S31 refers to port 3, which does not exist", "1 = `in`, 2 = `out`"]);
}

#[test]
fn constraint_violated() {
    let d = Design::parse(WG, "wg.ron").unwrap();
    let e = d.values_from_sets(&["w1=3", "w2=4"]).unwrap_err();
    assert!(matches!(e, DesignError::ConstraintViolated { .. }));
    says(&e, &["wg.ron", "constraints[0]", "\"w2 < w1\" is violated", "left side 4, right side 3"]);
    let mut v = d.midpoint_values();
    v.insert("w2".into(), 4.0);
    v.insert("w1".into(), 3.0);
    assert!((d.constraint_violation(&v) - 1.0).abs() < 1e-6);
}

#[test]
fn sheet_with_no_zero_thickness_axis() {
    let e = err(MS, "ms.ron", r#"max: ("len", 1, "h")"#, r#"max: ("len", 1, "h + 0.4")"#);
    says(&e, &["ms.ron", "geometry[1] (Sheet)", "equal along exactly one axis", "equal along none"]);
}

#[test]
fn domain_with_hi_not_above_lo() {
    let e = err(WG, "wg.ron", "z: (0, 25)", "z: (25, 25)");
    says(&e, &["wg.ron", "domain.z", "hi (25 mm) must be above lo (25 mm)"]);
}

#[test]
fn invariant_axis_not_bounded_by_conducting_faces() {
    let e = err(WG, "wg.ron", "y: Pec,", "y: Faces(Pec, Absorbing),");
    says(&e, &["wg.ron", "engine.invariant", "invariant axis y must be bounded by Pec faces", "Pec/Absorbing"]);
    // PMC would force the kept field (E along y, normal to the faces) to zero.
    let e = err(WG, "wg.ron", "y: Pec,", "y: Pmc,");
    says(&e, &["wg.ron", "engine.invariant", "Pmc/Pmc", "only PEC faces support"]);
}

#[test]
fn primitive_not_spanning_the_invariant_axis() {
    let e = err(WG, "wg.ron", "geometry: [", r#"geometry: [ Box(material: "Pec", min: (0, 0, 12), max: (1, 1, 13)),"#);
    says(&e, &["wg.ron", "geometry[0] (Box)", "does not span the whole domain along y, the invariant axis"]);
}

#[test]
fn iris_thinner_than_a_cell() {
    let e = err(WG, "wg.ron", r#"Iris(z: 15, thickness: "t""#, r#"Iris(z: 15.05, thickness: 0.1"#);
    says(&e, &["wg.ron", "geometry[1] (Iris).thickness", "0.1 mm rounds to 0 cells"]);
}

#[test]
fn lumped_port_shorter_than_half_a_cell() {
    let e = err(MS, "ms.ron", r#"to: ("len", 0, "h")"#, r#"to: ("len", 0, 0.1)"#);
    says(&e, &["ms.ron", "ports[1]", "port `p2`: both ends snap to the same grid node"]);
}

#[test]
fn lumped_port_short_circuited_by_a_sheet() {
    // A horizontal port lying in the strip.
    let e = err(MS, "ms.ron", r#"from: ("len", 0, 0), to: ("len", 0, "h")"#, r#"from: (1, 0, "h"), to: (3, 0, "h")"#);
    says(&e, &["ms.ron", "ports[1]", "port `p2` is short-circuited", "lies in sheet 1"]);
}

#[test]
fn unknown_material_and_unreadable_file() {
    let e = err(MS, "ms.ron", r#"Substrate(material: "sub""#, r#"Substrate(material: "fr4""#);
    says(&e, &["ms.ron", "geometry[0] (Substrate).material", "unknown material `fr4`", "Pec, Vacuum, Copper, Aluminium, Aluminum, Silver, Gold, sub"]);
    let e = Design::load(std::path::Path::new("/nonexistent/x.ron")).unwrap_err();
    says(&e, &["/nonexistent/x.ron", "cannot read"]);
}

#[test]
fn goal_with_both_or_no_levels() {
    let e = err(WG, "wg.ron", "above_db: -1.0", "above_db: -1.0, below_db: -3.0");
    says(&e, &["wg.ron", "goals[0]", "exactly one of above_db and below_db"]);
}

#[test]
fn tlm2d_without_an_axis_to_collapse() {
    let e = err(MS, "ms.ron", "Fdtd(cell: 0.4)", "Tlm2d(cell: 0.4)");
    says(&e, &["ms.ron", "engine.invariant", "Tlm2d needs an invariant axis"]);
}

#[test]
fn gain_goal_on_a_closed_or_waveguide_problem() {
    let gain = r#"Goal(gain: (theta: 0, phi: 0), band: (31e9, 32e9), above_dbi: 5.0)"#;
    let e = err(WG, "wg.ron", r#"Goal(s: (2, 1), band: (31e9, 32e9), above_db: -1.0)"#, gain);
    says(&e, &["wg.ron", "goals[0] (gain)", "a far field needs an open problem", "x- is Pec", "radiates nowhere"]);
    // A far_field section on it is refused the same way.
    let e = err(WG, "wg.ron", "engine: Fdtd(", "far_field: (freqs: [31e9]),\n    engine: Fdtd(");
    says(&e, &["wg.ron", "far_field", "open problem"]);
}

#[test]
fn bad_pattern_goals_and_far_field_settings() {
    let s_goal = r#"Goal(s: (2, 1), band: (1e9, 2e9), above_db: -1.0)"#;
    // The level of a gain goal is in dBi.
    let e = err(MS, "ms.ron", s_goal, r#"Goal(gain: (theta: 0, phi: 0), band: (1e9, 2e9), above_db: 3.0)"#);
    says(&e, &["ms.ron", "goals[0] (gain)", "dBi", "above_dbi"]);
    // One quantity per goal.
    let e = err(MS, "ms.ron", s_goal, r#"Goal(s: (1, 1), directivity: (theta: 0, phi: 0), band: (1e9, 2e9), above_db: 3.0)"#);
    says(&e, &["ms.ron", "goals[0]", "exactly one quantity", "s, directivity"]);
    // Directions in range.
    let e = err(MS, "ms.ron", s_goal, r#"Goal(realized_gain: (theta: 200, phi: 0), band: (1e9, 2e9), above_dbi: 3.0)"#);
    says(&e, &["ms.ron", "goals[0].realized_gain.theta", "0..=180", "200"]);
    // Front-to-back is infinite behind a ground plane (the z- face is PEC).
    let e = err(MS, "ms.ron", s_goal, r#"Goal(front_to_back: (theta: 0, phi: 0), band: (1e9, 2e9), above_db: 10.0)"#);
    says(&e, &["ms.ron", "goals[0] (front_to_back)", "Pec face z-", "infinite"]);
    // The far-field section's settings.
    let ff = |x: &str| err(MS, "ms.ron", "engine: Fdtd(", &format!("far_field: {x},\n    engine: Fdtd("));
    says(&ff("(freqs: [9e9])"), &["ms.ron", "far_field.freqs[0]", "outside the simulated band"]);
    says(&ff("(freqs: [2e9], step_deg: 7)"), &["ms.ron", "far_field.step_deg", "divide 90", "got 7"]);
    says(&ff("(freqs: [2e9], port: 3)"), &["ms.ron", "far_field.port", "port 3 does not exist"]);
    says(&ff("()"), &["ms.ron", "far_field.freqs", "at least one frequency"]);
    says(&ff("(freqs: [2e9], gap: 40)"), &["ms.ron", "far_field", "no room along y", "lower far_field.gap"]);
    // A valid far field loads, and its drive carries the six-face box minus the
    // ground, and the box's absorbed-power monitor (the second efficiency route).
    let d = Design::parse(&MS.replacen("engine: Fdtd(", "far_field: (freqs: [2e9, 3e9]),\n    engine: Fdtd(", 1), "ms.ron").unwrap();
    let jobs = d.jobs(&d.midpoint_values(), &[0, 1], None).unwrap();
    assert_eq!(jobs[0].monitors.len(), 6);
    assert!(matches!(&jobs[0].monitors[5], emvolve::job::Monitor::Absorbed { freqs, .. } if freqs == &vec![2e9, 3e9]));
    assert!(jobs[1].monitors.is_empty());
}

// Issue 35: bad input never hangs, aborts or gives a silent wrong answer.

/// A shipped design with `from` replaced by `to`, parsed under a small memory budget.
fn shipped_err(design: &str, from: &str, to: &str) -> DesignError {
    let base = std::fs::read_to_string(format!("designs/{design}")).unwrap();
    assert!(base.contains(from), "test setup: `{from}` not in {design}");
    let budget = emvolve::design::MemoryBudget::bytes(512 << 20);
    match Design::parse_with_budget(&base.replacen(from, to, 1), design, budget) {
        Ok(_) => panic!("expected an error after replacing `{from}` with `{to}` in {design}"),
        Err(e) => e,
    }
}

#[test]
fn literal_nan_and_infinite_numbers_are_refused_with_their_path() {
    // Item 1: a literal NaN domain bound hung the mesher; an infinite one was
    // reported as a sheet of zero thickness.
    let e = shipped_err("patch_2g4.ron", "y: (-40, 40)", "y: (NaN, 40)");
    assert_eq!(
        e.to_string(),
        "patch_2g4.ron: domain.y[0]: NaN is not a finite number: NaN and infinities are not allowed in a design file"
    );
    let e = err(WG, "wg.ron", "z: (0, 25)", "z: (0, inf)");
    says(&e, &["wg.ron: domain.z[1]: inf is not a finite number"]);
    let e = err(MS, "ms.ron", r#"max: ("len", 1, "h")"#, r#"max: ("len", -inf, "h")"#);
    says(&e, &["ms.ron: geometry[1] (Sheet).max.y: -inf is not a finite number"]);
    // 1e999 is read as infinity, too; and numbers outside the geometry: band, goals, settings.
    let e = err(WG, "wg.ron", "start: 26e9", "start: 1e999");
    says(&e, &["wg.ron: band.start: inf is not a finite number"]);
    let e = err(WG, "wg.ron", "above_db: -1.0", "above_db: NaN");
    says(&e, &["wg.ron: goals[0].above_db: NaN is not a finite number"]);
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, decay_db: -inf)");
    says(&e, &["wg.ron: engine.decay_db: -inf is not a finite number"]);
}

#[test]
fn nan_port_planes_and_resistances_are_refused_at_load() {
    // Item 2: Z(NaN) simulated and wrote |S21| = 2.28; r: NaN failed only in the fields.
    let e = err(WG, "wg.ron", "plane: Z(5)", "plane: Z(NaN)");
    says(&e, &["wg.ron: ports[0].plane: NaN is not a finite number"]);
    let e = err(MS, "ms.ron", r#"to: ("len", 0, "h"))"#, r#"to: ("len", 0, "h"), r: NaN)"#);
    says(&e, &["ms.ron: ports[1].r: NaN is not a finite number"]);
    // A number set in code rather than read from a file is refused when evaluated.
    let scope = emvolve::design::expr::Scope::new("wg.ron", &Default::default(), &Default::default());
    let e = scope.eval(&emvolve::design::expr::Expr::Num(f64::NAN), "ports[0].plane").unwrap_err();
    assert_eq!(e.to_string(), "wg.ron: ports[0].plane: \"NaN\" is not a finite number");
}

#[test]
fn huge_counts_are_refused_before_anything_is_allocated() {
    // Item 3: pml: 4294967296 aborted in Mesh::from_lines ("memory allocation of 68719477040 bytes failed").
    let e = shipped_err("patch_2g4.ron", "Fdtd(mesh: Auto())", "Fdtd(mesh: Auto(), pml: 4294967296)");
    assert_eq!(
        e.to_string(),
        "patch_2g4.ron: engine.pml: 4294967296 cells of absorbing padding is more than any problem needs: at most 1000 (8-10 is usual)"
    );
    // Padding within the cap still counts in the grid check, before the lines exist.
    let e = shipped_err("patch_2g4.ron", "Fdtd(mesh: Auto())", "Fdtd(mesh: Auto(), pml: 1000)");
    says(
        &e,
        &["patch_2g4.ron: engine.cell: the grid of", "more than the memory budget (0.5 GiB)", "or less absorbing padding (engine.pml)"],
    );
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, max_steps: 18446744073709551615)");
    says(&e, &["wg.ron: engine.max_steps: 18446744073709551615 steps is more than allowed: at most 100000000"]);
    let e = err(MS, "ms.ron", "Fdtd(cell: 0.4)", "Fdtd(mesh: Auto(slab_cells: 4294967296))");
    says(&e, &["ms.ron: engine.mesh.slab_cells: must be at most 1000 (4 is usual; got 4294967296)"]);
    let e = err(WG, "wg.ron", "goals: [", "optimiser: Ga(population: 4294967296),\n    goals: [");
    says(&e, &["wg.ron: optimiser.population: must be at most 100000 individuals, got 4294967296"]);
    let e = err(MS, "ms.ron", "engine: Fdtd(", "far_field: (freqs: [2e9], step_deg: 1e-9),\n    engine: Fdtd(");
    says(&e, &["ms.ron: far_field.step_deg: must divide 90 degrees and lie in 0.5..=30"]);
}

#[test]
fn names_that_would_be_paths_or_header_lines_are_refused() {
    // Item 4: a port named "in/x" simulated and then failed writing
    // timeseries_drive_in/x.csv; a newline injected a line into the .s2p header.
    let e = err(WG, "wg.ron", r#"Waveguide(name: "in""#, r#"Waveguide(name: "in/x""#);
    assert_eq!(
        e.to_string(),
        "wg.ron: ports[0].name: \"in/x\" contains '/': names appear in file names and output headers, so they may hold only letters, digits, _, -, + and ."
    );
    let e = err(WG, "wg.ron", r#"Waveguide(name: "out""#, r#"Waveguide(name: "out\n1 2 3""#);
    says(&e, &["wg.ron: ports[1].name: \"out\\n1 2 3\" contains '\\n'"]);
    let e = err(WG, "wg.ron", r#"name: "wg""#, r#"name: "..""#);
    says(&e, &["wg.ron: name: \"..\" must start with a letter or a digit (it names files)"]);
    let e = err(MS, "ms.ron", r#"materials: { "sub""#, r#"materials: { "s\"ub""#);
    says(&e, &["ms.ron: materials.s\"ub: \"s\\\"ub\" contains '\"'"]);
}

#[test]
fn settings_that_do_not_parse_are_errors_not_absent() {
    // Item 5: `stagnation: foo` and `nan` became "no stagnation rule".
    for word in ["foo", "nan"] {
        let e = err(WG, "wg.ron", "goals: [", &format!("optimiser: Ga(stop: (stagnation: {word})),\n    goals: ["));
        assert!(matches!(e, DesignError::Syntax { line: 19, .. }), "{e:?}");
        says(&e, &["wg.ron:19:", "expected a non-negative integer, Some(..) or None; a bare word or () is not a value here"]);
    }
    // `Maximize("")` passed load and then failed every design.
    let e = err(WG, "wg.ron", "geometry: [", "objectives: [Goals, Maximize(\"\")],\n    geometry: [");
    assert_eq!(
        e.to_string(),
        "wg.ron: objectives[1]: \"\" does not parse: the expression is empty (write a number or an expression over the parameters)"
    );
    let e = err(WG, "wg.ron", "geometry: [", "objectives: [Goals, Minimize(\"w1 > w2\")],\n    geometry: [");
    says(&e, &["wg.ron: objectives[1]: \"w1 > w2\" is not a number"]);
}

#[test]
fn unit_slips_get_a_message_that_says_what_to_write() {
    // Item 9: a band in GHz gave only "minimum cell (292766000 mm)".
    let e = err(WG, "wg.ron", "band: (start: 26e9, stop: 38e9", "band: (start: 26, stop: 38");
    assert_eq!(
        e.to_string(),
        "wg.ron: band: the band 26-38 Hz lies below 1 MHz: frequencies are in Hz, and these look like GHz; write start: 26e9, stop: 38e9"
    );
    let e = err(WG, "wg.ron", "band: (31e9, 32e9)", "band: (31, 32)");
    says(&e, &["wg.ron: goals[0].band: the goal's band 31-32 Hz lies below 1 MHz", "look like GHz; write band: (31e9, 32e9)"]);
    let e = err(MS, "ms.ron", "start: 1e9, stop: 6e9", "start: 1000, stop: 6000");
    says(&e, &["the band 1000-6000 Hz", "look like MHz; write start: 1000e6, stop: 6000e6"]);
    // tan_delta: 2 is a percentage typed as a number.
    let e = err(MS, "ms.ron", "tan_delta: 0.0027", "tan_delta: 2");
    assert_eq!(
        e.to_string(),
        "ms.ron: materials.sub.tan_delta: 2 is not a loss tangent (it is a ratio, at most 1; laminates lie near 0.0001-0.03): if you meant 2 %, write tan_delta: 0.02"
    );
    // A port shorted by the substrate's ground is placed in millimetres, not node indices.
    let e = err(MS, "ms.ron", r#"from: ("len", 0, 0), to: ("len", 0, "h")"#, r#"from: (2, 0, 0), to: (4, 0, 0)"#);
    assert_eq!(
        e.to_string(),
        "ms.ron: ports[1]: port `p2` is short-circuited: its edge from (2, 0, 0) mm along x lies in sheet 0 (geometry[0] (Substrate), in the plane z = 0 mm)"
    );
}

/// Parse `base` with `from` replaced by `to` and build its midpoint's jobs,
/// expecting an error at one of the two.
fn err_built(base: &str, from: &str, to: &str) -> String {
    assert!(base.contains(from), "test setup: `{from}` not in the base design");
    match Design::parse(&base.replacen(from, to, 1), "metal.ron") {
        Err(e) => e.to_string(),
        Ok(d) => match d.jobs(&d.midpoint_values(), &[0], None) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("expected an error after replacing `{from}` with `{to}`"),
        },
    }
}

/// Lossy metal the surface impedance cannot model, or written wrong: each
/// named with its field and what to do instead.
#[test]
fn bad_metals_are_named_with_the_fix() {
    let sub = r#""sub": Dielectric(eps_r: 3.55, tan_delta: 0.0027)"#;
    let with = |metal: &str| format!("{sub}, \"cu\": {metal}");
    let sheet = r#"Sheet(min: ("-len", -1, "h"), max: ("len", 1, "h"))"#;
    let cu_sheet = r#"Sheet(min: ("-len", -1, "h"), max: ("len", 1, "h"), material: "cu")"#;
    let ms = MS.replacen(sheet, cu_sheet, 1);
    let m = err_built(&ms, sub, &with("Metal(conductivity: -5.8e7)"));
    assert!(m.contains("materials.cu.conductivity") && m.contains("positive conductivity"), "{m}");
    let m = err_built(&ms, sub, &with("Metal(conductivity: 5.8e7, thickness: 0)"));
    assert!(m.contains("materials.cu.thickness"), "{m}");
    let m = err_built(&ms, sub, &with("Metal(conductivity: 5.8e7, roughness: -1e-6)"));
    assert!(m.contains("materials.cu.roughness"), "{m}");
    // A sheet of 1 mm copper on 0.4 mm cells is a solid.
    let m = err_built(&ms, sub, &with("Metal(conductivity: 5.8e7, thickness: 1e-3)"));
    assert!(m.contains("geometry[1] (Sheet)") && m.contains("draw it as a Box"), "{m}");
    // Carbon-loaded foam is no good conductor at 1 GHz on 0.4 mm cells.
    let m = err_built(&ms, sub, &with("Metal(conductivity: 10)"));
    assert!(m.contains("skin depth") && m.contains("Dielectric(eps_r: 1, sigma: 10)"), "{m}");
    // A sheet of a dielectric.
    let m = err_built(MS, sheet, r#"Sheet(min: ("-len", -1, "h"), max: ("len", 1, "h"), material: "sub")"#);
    assert!(m.contains("geometry[1] (Sheet).material") && m.contains("is not a metal"), "{m}");
    // Copper walls on the TLM engine.
    let m2 = err_built(&WG.replace("engine: Fdtd(cell: \"a/28\", invariant: Y)", "engine: Tlm2d(cell: \"a/28\")"), "boundaries: (x: Pec, y: Pec, z: Absorbing)", r#"boundaries: (x: Pec, y: Pec, z: Absorbing, walls: "Copper")"#);
    assert!(m2.contains("boundaries.walls") && m2.contains("TLM"), "{m2}");
    // A user material may not take a built-in metal's name.
    let m = err_built(MS, sub, &format!("{sub}, \"Gold\": Pec"));
    assert!(m.contains("materials.Gold") && m.contains("built-in"), "{m}");
}

/// A cap in simulated time: positive, in seconds, longer than the excitation.
#[test]
fn max_time_is_a_positive_time_in_seconds_after_the_source() {
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, max_time: -1e-9)");
    says(&e, &["wg.ron: engine.max_time: must be a positive time in seconds (got -0.000000001)"]);
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, max_time: 15)");
    says(&e, &["wg.ron: engine.max_time: 15 s is 5.700e11 periods at 38 GHz: the time is in seconds (write 15e-9 for 15 ns)"]);
    // 26-38 GHz: the Gaussian of the band ends after 9.3 of its 80.5 ps widths.
    let e = err(WG, "wg.ron", "invariant: Y)", "invariant: Y, max_time: 0.5e-9)");
    says(&e, &["wg.ron: engine.max_time: 0.5 ns ends before the excitation does (0.748669 ns for this band)", "give several times that"]);
    // The job takes it as given beside the step cap.
    let d = Design::parse(&WG.replacen("invariant: Y)", "invariant: Y, max_time: 12e-9, max_steps: 50000)", 1), "wg.ron").unwrap();
    let job = d.jobs(&d.midpoint_values(), &[0], None).unwrap().remove(0);
    assert_eq!((job.stop.max_time, job.stop.max_steps), (Some(12e-9), 50_000));
}
