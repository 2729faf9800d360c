//! Unit tests of the shaped primitives (Cylinder, Prism, Disc, Polygon) and
//! of Group/Repeat transforms: what they paint, the mesher lines they ask
//! for, and the errors a user meets (paths named, the fix suggested).

use super::geometry::{EventKind, Face, Owner};
use super::tests::{design, job_at, mat_at, FDTD, PROBE};
use super::*;
use crate::job::Axis;

/// Parse a design with `geometry`, expecting an error; its text.
fn refused(geometry: &str) -> String {
    let text = design("", PROBE, FDTD, "").text().replace("geometry: [", &format!("geometry: [{geometry}"));
    match Design::parse(&text, "t.ron") {
        Ok(_) => panic!("accepted: {geometry}"),
        Err(e) => e.to_string(),
    }
}

/// Cells of `job` whose material is `name`.
fn count(job: &SimJob, name: &str) -> usize {
    let n = job.mesh.n();
    let mut c = 0;
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                c += (mat_at(job, i, j, k) == name) as usize;
            }
        }
    }
    c
}

#[test]
fn a_finite_cylinder_and_a_tube_paint_their_cell_centres() {
    // Radius 2 mm along z from 1 to 5 mm at (5, 3): cells of 0.5 mm, so 8 layers
    // of the cells whose centre is within 2 mm of the axis (48 per layer).
    let d = design(r#"Cylinder(axis: Z, center: (5, 3, 0), radius: 2, from: 1, to: 5, material: "d4")"#, PROBE, FDTD, "");
    let job = job_at(&d, &[]);
    let per_layer = (0..8).flat_map(|i| (0..8).map(move |j| (i, j))).filter(|&(i, j)| (0.25 + 0.5 * i as f64 - 2.0f64).hypot(0.25 + 0.5 * j as f64 - 2.0) <= 2.0).count();
    assert_eq!(per_layer, 52);
    assert_eq!(count(&job, "d4"), 8 * per_layer);
    // The padding starts 4 cells below x = 0: the axis at x = 5 mm is cell 4 + 10.
    assert_eq!(mat_at(&job, 14, 6, 2), "d4");
    assert_eq!(mat_at(&job, 14, 6, 1), "vacuum", "below `from`");
    assert_eq!(mat_at(&job, 14, 6, 10), "vacuum", "above `to`");
    // A tube: the same minus the cells within 1 mm.
    let d = design(r#"Cylinder(axis: Z, center: (5, 3, 0), radius: 2, inner_radius: 1, from: 1, to: 5, material: "d4")"#, PROBE, FDTD, "");
    let hole = (0..4).flat_map(|i| (0..4).map(move |j| (i, j))).filter(|&(i, j)| (0.25 + 0.5 * i as f64 - 1.0f64).hypot(0.25 + 0.5 * j as f64 - 1.0) < 1.0).count();
    assert_eq!(count(&job_at(&d, &[]), "d4"), 8 * (per_layer - hole));
}

#[test]
fn cylinders_ask_for_lines_at_their_extremes_and_centre() {
    let d = design(r#"Cylinder(axis: Y, center: (5, 0, 4), radius: "p", from: 0, to: 6)"#, PROBE, FDTD, "");
    let g = d.geometry(&d.midpoint_values(), None).unwrap();
    let ev = g.events();
    let find = |a: usize, face: Face| ev[a].iter().find(|e| e.id.owner == Owner::Primitive(0) && e.id.face == face).map(|e| (e.coord, e.kind));
    // Axis y: across it x and z (p = 2 mm at the midpoint).
    assert_eq!(find(0, Face::Min).unwrap(), (3e-3, EventKind::MetalEdge { metal: geometry::Side::High }));
    assert!((find(2, Face::Max).unwrap().0 - 6e-3).abs() < 1e-15);
    assert_eq!(find(0, Face::Centre).unwrap().0, 5e-3);
    assert!(find(1, Face::Centre).is_none(), "no centre line along the axis");
}

#[test]
fn a_prism_and_a_polygon_sheet_follow_their_outline() {
    // A right triangle (legs 4 mm along x and y) extruded along z from 0 to 2 mm.
    let d = design(r#"Prism(axis: Z, points: [(2, 1), (6, 1), (2, 5)], from: 0, to: 2, material: "d4")"#, PROBE, FDTD, "");
    let job = job_at(&d, &[]);
    // Cells whose centre is inside x - 2 + y - 1 < 4 (x, y > the legs): 8 x 8 cells of 0.5 mm under the hypotenuse.
    let tri = (0..8).flat_map(|i| (0..8).map(move |j| (i, j))).filter(|&(i, j)| (0.5 + 0.5 * (i + j) as f64) < 4.0).count();
    assert_eq!(count(&job, "d4"), 4 * tri);
    // The same outline as a PEC sheet at z = 4 mm: TLM takes a run of
    // rectangles per row of cells; FDTD covers it conformally, its faces
    // in the plane adding up to the triangle's 8 mm^2.
    let d = design(r#"Polygon(normal: Z, at: 4, points: [(2, 1), (6, 1), (2, 5)])"#, PROBE, "Tlm(cell: 0.5, pml: 4)", "");
    let job = job_at(&d, &[]);
    let covered: usize = job.sheets.iter().map(|s| (s.hi[0] - s.lo[0]) * (s.hi[1] - s.lo[1])).sum();
    assert_eq!(covered, tri);
    assert!(job.sheets.iter().all(|s| s.normal == Axis::Z && s.plane == 8));
    let job = job_at(&design(r#"Polygon(normal: Z, at: 4, points: [(2, 1), (6, 1), (2, 5)])"#, PROBE, FDTD, ""), &[]);
    assert!(job.sheets.is_empty());
    assert!((covered_area(&job, Axis::Z, 8) - 8e-6).abs() < 1e-12, "{}", covered_area(&job, Axis::Z, 8));
}

/// The metal area of the conformal faces of H along `normal` on node plane `plane`.
fn covered_area(job: &crate::job::SimJob, normal: Axis, plane: u32) -> f64 {
    let (a, b) = normal.others();
    let g = &job.mesh;
    job.conformal
        .faces
        .iter()
        .filter(|f| f.comp == normal && f.at[normal.index()] == plane)
        .map(|f| (1.0 - f.open as f64) * g.cell(a.index(), f.at[a.index()] as usize) * g.cell(b.index(), f.at[b.index()] as usize))
        .sum()
}

#[test]
fn a_disc_sheet_covers_its_cell_centres_on_tlm_and_its_area_on_fdtd() {
    let g = r#"Disc(normal: Z, at: 4, center: (5, 3), radius: 2)"#;
    let job = job_at(&design(g, PROBE, "Tlm(cell: 0.5, pml: 4)", ""), &[]);
    let covered: usize = job.sheets.iter().map(|s| (s.hi[0] - s.lo[0]) * (s.hi[1] - s.lo[1])).sum();
    assert_eq!(covered, 52);
    // FDTD: conformal, the disc's own area (to 0.1 %: the strips' midpoint rule on its rim).
    let job = job_at(&design(g, PROBE, FDTD, ""), &[]);
    let area = covered_area(&job, Axis::Z, 8);
    let exact = std::f64::consts::PI * 4e-6;
    assert!((area - exact).abs() < 1e-3 * exact, "{area} against {exact}");
}

/// The test design with `geometry` and an `Int` parameter `n` in place of `q`.
fn with_n(geometry: &str) -> String {
    design("", PROBE, FDTD, "")
        .text()
        .replace(r#""q": Real(min: 0.0, max: 1.0)"#, r#""n": Int(min: 0, max: 5)"#)
        .replace("geometry: [", &format!("geometry: [{geometry}"))
}

#[test]
fn repeat_makes_count_copies_and_count_can_be_a_parameter() {
    // Posts of radius 0.5 mm every 2 mm along x from x = 1 mm: `n` copies.
    let g = r#"Repeat(count: "n", transform: (translate: (2, 0, 0)), items: [Cylinder(axis: Z, center: (1, 1, 0), radius: 0.5, from: 0, to: 8, material: "d4")])"#;
    for n in [0, 1, 3, 5] {
        let text = with_n(g);
        let d = Design::parse(&text, "t.ron").unwrap_or_else(|e| panic!("{e}"));
        let geo = d.geometry(&[("p".to_string(), 2.0), ("n".to_string(), n as f64)].into_iter().collect(), None).unwrap();
        assert_eq!(geo.solids.len(), n);
        for (k, s) in geo.solids.iter().enumerate() {
            assert_eq!(s.origin.index, 0);
            assert_eq!(s.origin.part, k);
            assert!(s.origin.at.contains(&format!("[copy {k}]")), "{}", s.origin.at);
            let geometry::Shape::Extruded { region: geometry::Region::Disc { c, .. }, .. } = &s.shape else { panic!() };
            assert!((c[0] - (1e-3 + 2e-3 * k as f64)).abs() < 1e-15);
        }
        // Every copy has its own line identities.
        let mut ids: Vec<_> = geo.events()[0].iter().filter(|e| matches!(e.id.owner, Owner::Primitive(_))).map(|e| e.id).collect();
        let all = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all);
    }
    let text = with_n(&g.replace("\"n\"", "2.5"));
    let e = Design::parse(&text, "t.ron").unwrap_err().to_string();
    assert!(e.contains("geometry[0] (Repeat).count") && e.contains("whole number"), "{e}");
}

#[test]
fn groups_rotate_and_mirror_what_stays_on_the_axes() {
    // A quarter turn about z through (5, 3): the 4 x 1 mm box becomes 1 x 4 mm.
    let g = r#"Group(transform: (rotate: (axis: Z, angle: 90, about: (5, 3, 0))), items: [Box(material: "d4", min: (3, 2.5, 0), max: (7, 3.5, 2))])"#;
    let d = design(g, PROBE, FDTD, "");
    let geo = d.geometry(&d.midpoint_values(), None).unwrap();
    let geometry::Shape::Block { min, max, .. } = geo.solids[0].shape else { panic!() };
    for (got, want) in min.iter().chain(&max).zip([4.5e-3, 1e-3, 0.0, 5.5e-3, 5e-3, 2e-3]) {
        assert!((got - want).abs() < 1e-15, "{min:?} {max:?}");
    }
    // A prism turned 30 degrees about its own axis: its points turn.
    let g = r#"Group(transform: (rotate: (axis: Z, angle: 30, about: (5, 3, 0)), translate: (0, 0, 1)), items: [Prism(axis: Z, points: [(4, 2), (6, 2), (6, 4), (4, 4)], from: 0, to: 1)])"#;
    let d = design(g, PROBE, FDTD, "");
    let geo = d.geometry(&d.midpoint_values(), None).unwrap();
    let geometry::Shape::Extruded { lo, hi, region: geometry::Region::Polygon(ref p), .. } = geo.solids[0].shape else { panic!() };
    assert!((lo - 1e-3).abs() < 1e-15 && (hi - 2e-3).abs() < 1e-15);
    let (s, c) = (30f64.to_radians().sin(), 30f64.to_radians().cos());
    let want = [5e-3 + (-1e-3) * c - (-1e-3) * s, 3e-3 + (-1e-3) * s + (-1e-3) * c];
    assert!((p[0][0] - want[0]).abs() < 1e-15 && (p[0][1] - want[1]).abs() < 1e-15, "{p:?}");
    // A mirror in x = 5 mm.
    let g = r#"Group(transform: (mirror: (axis: X, at: 5)), items: [Disc(normal: Z, at: 4, center: (2, 3), radius: 1)])"#;
    let d = design(g, PROBE, FDTD, "");
    let geo = d.geometry(&d.midpoint_values(), None).unwrap();
    assert_eq!(geo.shaped[0].region, geometry::Region::Disc { c: [8e-3, 3e-3], r: 1e-3, r_in: 0.0 });
}

#[test]
fn shapes_users_get_wrong_are_named_with_the_fix() {
    let e = refused(r#"Group(transform: (rotate: (axis: Z, angle: 30)), items: [Box(material: "d4", min: (3, 2, 0), max: (7, 3, 2))]), "#);
    assert!(e.contains("geometry[0] (Group).items[0] (Box)") && e.contains("Prism"), "{e}");
    let e = refused(r#"Polygon(normal: Z, at: 4, points: [(1, 1), (3, 3), (3, 1), (1, 3)]), "#);
    assert!(e.contains("geometry[0] (Polygon).points") && e.contains("intersects itself"), "{e}");
    let e = refused(r#"Prism(axis: Z, points: [(1, 1), (2, 2), (3, 3)], from: 0, to: 1), "#);
    assert!(e.contains("no area"), "{e}");
    let e = refused(r#"Cylinder(axis: Z, center: (5, 3, 0), radius: 1, inner_radius: 1, from: 0, to: 1), "#);
    assert!(e.contains("inner_radius") && e.contains("must lie in [0, radius"), "{e}");
    let e = refused(r#"Cylinder(axis: Z, center: (5, 3, 0), radius: 1, from: 2, to: 2), "#);
    assert!(e.contains("must be above `from`"), "{e}");
    let e = refused(r#"Group(transform: (rotate: (axis: X, angle: 45)), items: [Cylinder(axis: Z, center: (5, 3, 0), radius: 1, from: 0, to: 1)]), "#);
    assert!(e.contains("tilts this Cylinder's axis"), "{e}");
    // The fifth copy of an array pitched 3 mm leaves the 10 mm domain.
    let e = refused(r#"Repeat(count: 5, transform: (translate: (3, 0, 0)), items: [Cylinder(axis: Z, center: (1, 1, 0), radius: 0.5, from: 0, to: 8)]), "#);
    assert!(e.contains("geometry[0] (Repeat)[copy 4].items[0] (Cylinder)") && e.contains("outside the domain along x"), "{e}");
    let e = refused(r#"Group(transform: (translate: (1, 0, 0)), items: [Substrate(material: "d4", z0: 0, thickness: 1)]), "#);
    assert!(e.contains("cannot be moved"), "{e}");
    let e = refused(r#"Cylinder(axis: Z, center: (4, 2, 0), radius: 0.1, from: 0, to: 8, material: "d4"), "#);
    assert!(e.contains("geometry[0] (Cylinder)") && e.contains("covers no cell centre"), "{e}");
    // FDTD takes a perfect disc conformally: refused when no E edge lies wholly in it.
    let e = refused(r#"Disc(normal: Z, at: 4, center: (5, 3), radius: 0.1), "#);
    assert!(e.contains("geometry[0] (Disc)") && e.contains("covers no whole E edge"), "{e}");
    let e = refused(r#"Group(items: [Cylinder(axis: Z, center: (5, 3, 0), radius: 1, from: 0, to: 1, material: "unobtainium")]), "#);
    assert!(e.contains("geometry[0] (Group).items[0] (Cylinder).material") && e.contains("unknown material `unobtainium`"), "{e}");
}

#[test]
fn a_load_snaps_to_the_nodes_of_its_ends() {
    let d = design(r#"Load(name: "c1", from: (2, 3, 0), to: (2, 3, 1), c: "p * 1e-12")"#, PROBE, FDTD, "");
    let job = job_at(&d, &[("p", 2.0)]);
    // x = 2 mm is node 4 (padding) + 4; y = 3 mm node 6; z from the PEC floor, 1 mm = 2 cells.
    assert_eq!(job.loads.len(), 1);
    let l = &job.loads[0];
    assert_eq!((l.axis, l.start, l.len), (Axis::Z, [8, 6, 0], 2));
    assert_eq!((l.r, l.l, l.c, l.topology), (None, None, Some(2e-12), crate::job::Topology::Series));
    let d = design(r#"Load(name: "tank", from: (2, 3, 0), to: (2, 3, 1), r: 50, l: 1e-9, c: 1e-12, parallel: true)"#, PROBE, FDTD, "");
    assert_eq!(job_at(&d, &[]).loads[0].topology, crate::job::Topology::Parallel);
}

#[test]
fn loads_without_elements_off_axis_or_on_tlm_are_refused_with_the_path() {
    let e = refused(r#"Load(name: "x", from: (2, 3, 0), to: (2, 3, 1)), "#);
    assert!(e.contains("geometry[0]") && e.contains("no element"), "{e}");
    let e = refused(r#"Load(name: "x", from: (2, 3, 0), to: (2, 3, 1), r: "-5"), "#);
    assert!(e.contains("geometry[0]") && e.contains(".r") && e.contains("positive"), "{e}");
    let e = refused(r#"Load(name: "x", from: (2, 3, 0), to: (3, 3, 1), r: 5), "#);
    assert!(e.contains("exactly one axis"), "{e}");
    let tlm = design("", PROBE, "Tlm(cell: 0.5)", "").text().replace("geometry: [", r#"geometry: [Load(name: "x", from: (2, 3, 0), to: (2, 3, 1), r: 5), "#);
    let e = Design::parse(&tlm, "t.ron").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("FDTD"), "{e}");
}

#[test]
fn a_wideband_loss_tangent_is_debye_poles_on_fdtd_and_the_default_a_band_centre_conductivity() {
    let with = |loss: &str, engine: &str| {
        let text = design("", PROBE, engine, "")
            .text()
            .replace("tan_delta: 0.01)", &format!("tan_delta: 0.01{loss})"))
            .replace("geometry: [", r#"geometry: [Box(material: "d4", min: (2, 0, 0), max: (3, 6, 1)), "#);
        let job = job_at(&Design::parse(&text, "t.ron").unwrap_or_else(|e| panic!("{e}")), &[]);
        job.materials.iter().find(|m| m.name == "d4").unwrap().clone()
    };
    let m = with(", loss: Wideband", FDTD);
    assert!(!m.poles.is_empty() && m.eps_r < 4.0, "{m:?}");
    // eps' = 4 and tan delta = 0.01 at the band centre (5 GHz), within 2 % over the 1-9 GHz band.
    let eps = |f: f64| {
        let w = 2.0 * std::f64::consts::PI * f;
        m.eps_r + m.poles.iter().map(|p| p.chi(w)).sum::<num_complex::Complex64>() + m.sigma / (num_complex::Complex64::new(0.0, w * crate::consts::EPS0))
    };
    let c = eps(5e9);
    assert!((c.re - 4.0).abs() < 0.01 && (-c.im / c.re - 0.01).abs() < 2e-4, "{c}");
    for f in [1e9, 3e9, 9e9] {
        let e = eps(f);
        assert!((-e.im / e.re / 0.01 - 1.0).abs() < 0.02, "tan delta {} at {f}", -e.im / e.re);
    }
    let centre = 2.0 * std::f64::consts::PI * 5e9 * crate::consts::EPS0 * 4.0 * 0.01;
    for m in [with("", FDTD), with(", loss: BandCentre", FDTD), with(", loss: Wideband", "Tlm(cell: 0.5)")] {
        assert!(m.poles.is_empty() && m.eps_r == 4.0 && (m.sigma - centre).abs() < 1e-12, "{m:?}");
    }
}

#[test]
fn dispersive_media_are_checked_for_passivity_with_the_path() {
    let text = |poles: &str| {
        design("", PROBE, FDTD, "")
            .text()
            .replace(r#""d2": Dielectric(eps_r: 2.0, sigma: 0.5)"#, &format!(r#""d2": Dispersive(eps_inf: 2.0, poles: [{poles}])"#))
    };
    let e = Design::parse(&text("Debye(delta_eps: -1, tau: 1e-11)"), "t.ron").unwrap_err().to_string();
    assert!(e.contains("materials.d2.poles[0].delta_eps") && e.contains("active"), "{e}");
    let e = Design::parse(&text("Lorentz(delta_eps: 1, f0: 0, delta: 1e9)"), "t.ron").unwrap_err().to_string();
    assert!(e.contains("poles[0].f0"), "{e}");
    assert!(Design::parse(&text("Drude(f_p: 5e9, gamma: 1e9), Debye(delta_eps: 2, tau: 1e-11)"), "t.ron").is_ok());
}

/// A design file with a lumped port and a `Load` beside it, joined by the PEC
/// floor and a sheet: through parse, mesh, voxels and the CPU engine, the
/// port sees the load's resistance (plus the 1 mm loop it closes: about 1 nH,
/// 3 ohm at 0.5 GHz, hence the low band).
fn loaded_port_s11(load: &str) -> Vec<f64> {
    loaded_port_s11_with(&format!("Sheet(min: (1, 2, 1), max: (2, 2.5, 1)), {load}"), "cell: 0.25")
}

/// `loaded_port_s11` with the whole geometry and the engine's mesh given.
fn loaded_port_s11_with(geometry: &str, mesh: &str) -> Vec<f64> {
    let text = format!(
        r#"Design(
            name: "loaded",
            units: Millimetre,
            parameters: {{ "r": Real(min: 10.0, max: 100.0) }},
            geometry: [{geometry}],
            domain: (x: (0, 4), y: (0, 4), z: (0, 2)),
            boundaries: (x: Pec, y: Pec, z: Pec),
            ports: [Lumped(name: "p", from: (1, 2, 0), to: (1, 2, 1))],
            band: (start: 0.1e9, stop: 0.5e9, points: 9),
            engine: Fdtd({mesh}),
            goals: [Goal(s: (1, 1), band: (0.2e9, 0.3e9), below_db: -10.0)],
        )"#
    );
    let d = Design::parse(&text, "loaded.ron").unwrap_or_else(|e| panic!("{e}"));
    let mut job = job_at(&d, &[]);
    job.stop.decay_db = -60.0;
    assert_eq!(job.loads.len(), 1);
    let out = crate::engine::fdtd::cpu_batch::run(&job).unwrap();
    let sp = crate::analysis::SParams::from_runs(&[&job], &[&out]);
    sp.db(1, 1).unwrap()
}

#[test]
fn a_load_in_a_design_file_terminates_a_port() {
    // 50 ohm against the 50 ohm port: matched; 20 ohm: |S11| = 30/70 = -7.4 dB.
    let matched = loaded_port_s11(r#"Load(name: "r50", from: (2, 2, 0), to: (2, 2, 1), r: 50)"#);
    assert!(matched.iter().all(|&x| x < -25.0), "{matched:?}");
    let low = loaded_port_s11(r#"Load(name: "r20", from: (2, 2, 0), to: (2, 2, 1), r: 20)"#);
    assert!(low.iter().all(|&x| (x - 20.0 * (30.0f64 / 70.0).log10()).abs() < 0.3), "{low:?}");
}

#[test]
fn moving_a_load_in_small_steps_moves_the_answer_smoothly() {
    // A 50 ohm load 1.00 to 1.42 mm from the port in 0.07 mm steps (under a third of a
    // cell): the loop it closes grows, so |S11| at 0.5 GHz rises with every step,
    // with no plateau or cliff (the load's ends are mesh lines of the automatic mesh).
    let s11: Vec<f64> = (0..=6)
        .map(|k| {
            let x = 2.0 + 0.07 * k as f64;
            let geometry = format!("Sheet(min: (1, 2, 1), max: ({x}, 2.5, 1)), Load(name: \"r50\", from: ({x}, 2, 0), to: ({x}, 2, 1), r: 50)");
            *loaded_port_s11_with(&geometry, "mesh: Auto(max_cell: 0.25, edge_cell: 0.25)").last().unwrap()
        })
        .collect();
    let steps: Vec<f64> = s11.windows(2).map(|w| w[1] - w[0]).collect();
    let mut sorted = steps.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    eprintln!("|S11| at 0.5 GHz: {s11:.3?}; steps {steps:.3?}");
    assert!(steps.iter().all(|&d| d > 0.0), "not monotonic: {steps:?}");
    assert!(steps.iter().all(|&d| d < 3.0 * median && d > median / 3.0), "uneven steps: {steps:?}");
}
