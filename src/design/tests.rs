//! Unit tests of the design layer on small inline designs: grid, painting,
//! padding, snapping, ports, collapse, jobs, values, objectives, hash, optimiser.

use std::collections::BTreeMap;

use super::*;
use crate::consts::EPS0;
use crate::job::{Axis, Boundary, PortKind};

/// A 10 x 6 x 8 mm box of cells of 0.5 mm (x: 20, y: 12, z: 16), absorbing in x
/// and at z-high (4 PML cells), with the given pieces spliced in.
pub(super) fn design(geometry: &str, ports: &str, engine: &str, extra: &str) -> Design {
    let text = format!(
        r#"Design(
            name: "t",
            units: Millimetre,
            parameters: {{ "p": Real(min: 1.0, max: 3.0), "q": Real(min: 0.0, max: 1.0) }},
            materials: {{ "d4": Dielectric(eps_r: 4.0, tan_delta: 0.01), "d2": Dielectric(eps_r: 2.0, sigma: 0.5) }},
            geometry: [{geometry}],
            domain: (x: (0, 10), y: (0, 6), z: (0, 8)),
            boundaries: (x: Absorbing, y: Pec, z: Faces(Pec, Absorbing)),
            ports: [{ports}],
            band: (start: 1e9, stop: 9e9, points: 9),
            engine: {engine},
            goals: [Goal(s: (1, 1), band: (2e9, 3e9), below_db: -10.0)],
            {extra}
        )"#
    );
    Design::parse(&text, "t.ron").unwrap_or_else(|e| panic!("{e}"))
}

pub(super) const PROBE: &str = r#"Lumped(name: "a", from: (5, 3, 0), to: (5, 3, 1))"#;
pub(super) const FDTD: &str = "Fdtd(cell: 0.5, pml: 4)";

pub(super) fn job_at(d: &Design, values: &[(&str, f64)]) -> SimJob {
    let mut v = d.midpoint_values();
    for (k, x) in values {
        v.insert(k.to_string(), *x);
    }
    d.jobs(&v, &[0], None).unwrap_or_else(|e| panic!("{e}")).remove(0)
}

pub(super) fn mat_at(job: &SimJob, i: usize, j: usize, k: usize) -> &str {
    &job.materials[job.cell_mat[job.mesh.idx(i, j, k)] as usize].name
}

#[test]
fn cells_stretch_to_fit_and_absorbing_faces_get_padding() {
    // 0.3 mm cells: x 10/0.3 = 33.3 -> 33 cells, y 20, z 26.7 -> 27.
    let d = design(r#"Box(material: "d4", min: (2, 0, 0), max: (3, 6, 1))"#, PROBE, "Fdtd(cell: 0.3, pml: 4)", "");
    let job = job_at(&d, &[]);
    assert_eq!(job.mesh.n(), [33 + 8, 20, 27 + 4]);
    assert_eq!(job.pml, [[4, 4], [0, 0], [0, 4]]);
    assert!((job.mesh.d(0)[0] - 10e-3 / 33.0).abs() < 1e-15);
    assert!((job.mesh.d(2)[0] - 8e-3 / 27.0).abs() < 1e-15);
    assert!((job.mesh.origin()[0] + 4.0 * 10e-3 / 33.0).abs() < 1e-15);
    assert_eq!(job.mesh.origin()[1], 0.0);
    assert_eq!(job.boundaries[2], [Boundary::Pec, Boundary::Absorbing]);
    assert_eq!(job.courant, 0.99);
    assert_eq!(job.stop.decay_db, -40.0);
    assert_eq!(job.freqs, (1..=9).map(|k| k as f64 * 1e9).collect::<Vec<_>>());
    assert_eq!(job.pulse, crate::job::Pulse::covering(1e9, 9e9));
}

#[test]
fn later_primitives_win_and_materials_are_listed_once() {
    let geometry = r#"
        Box(material: "d4", min: (0, 0, 0), max: (10, 6, 2)),
        Box(material: "Pec", min: (4, 2, 0), max: (6, 4, 2)),
        Box(material: "Vacuum", min: (4.5, 2.5, 0), max: (5.5, 3.5, 2)),
        Box(material: "d4", min: (0, 0, 4), max: (1, 1, 5)),
    "#;
    let d = design(geometry, r#"Lumped(name: "a", from: (2, 3, 0), to: (2, 3, 1))"#, FDTD, "");
    let job = job_at(&d, &[]);
    let names: Vec<&str> = job.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["vacuum", "d4", "pec"]);
    // Padded x index = domain index + 4; cell (i, j, k) has centre ((i + 0.5) * 0.5 mm, ...).
    assert_eq!(mat_at(&job, 4 + 1, 1, 1), "d4");
    assert_eq!(mat_at(&job, 4 + 8, 4, 1), "pec"); // x 4.25, y 2.25
    assert_eq!(mat_at(&job, 4 + 9, 5, 1), "vacuum"); // x 4.75, y 2.75: carved out
    assert_eq!(mat_at(&job, 4 + 1, 1, 5), "vacuum");
    assert_eq!(mat_at(&job, 4 + 1, 1, 8), "d4");
    // tan_delta becomes the conductivity at the band centre (5 GHz).
    let d4 = &job.materials[1];
    let sigma = 2.0 * std::f64::consts::PI * 5e9 * EPS0 * 4.0 * 0.01;
    assert!((d4.sigma - sigma).abs() < 1e-12 * sigma);
    assert_eq!((d4.eps_r, d4.mu_r, d4.pec), (4.0, 1.0, false));
}

#[test]
fn solids_touching_a_face_continue_through_the_padding() {
    let geometry = r#"
        Substrate(material: "d2", z0: 0, thickness: 1, ground: true),
        Box(material: "d4", min: (0, 2, 2), max: (1, 3, 3)),
        Box(material: "Pec", min: (1, 2, 4), max: (9, 3, 5)),
        Box(material: "Pec", min: (3, 0, 7.5), max: (4, 6, 8)),
    "#;
    let d = design(geometry, r#"Lumped(name: "a", from: (5, 3, 1), to: (5, 3, 3))"#, FDTD, "");
    let job = job_at(&d, &[]);
    let nx = job.mesh.n()[0];
    // The substrate fills its layers over the whole padded x extent; sigma as given.
    for i in [0, 3, nx / 2, nx - 1] {
        assert_eq!(mat_at(&job, i, 0, 0), "d2");
        assert_eq!(mat_at(&job, i, 11, 1), "d2");
        assert_eq!(mat_at(&job, i, 5, 2), "vacuum");
    }
    assert_eq!(job.materials.iter().find(|m| m.name == "d2").unwrap().sigma, 0.5);
    // The box at x = 0 continues into the x-low padding; the box at x = 1..9 does not.
    for i in 0..4 {
        assert_eq!(mat_at(&job, i, 5, 5), "d4");
        assert_eq!(mat_at(&job, i, 5, 9), "vacuum");
    }
    assert_eq!(mat_at(&job, 4 + 2, 5, 9), "pec");
    assert_eq!(mat_at(&job, nx - 1, 5, 9), "vacuum");
    // The box at the z-high face continues into the z-high padding.
    let nz = job.mesh.n()[2];
    assert_eq!(nz, 16 + 4);
    for k in 15..nz {
        assert_eq!(mat_at(&job, 4 + 7, 0, k), "pec");
    }
    // The ground sheet covers the whole padded plane z = 0.
    assert_eq!(
        (job.sheets[0].normal, job.sheets[0].plane, job.sheets[0].lo, job.sheets[0].hi),
        (Axis::Z, 0, [0, 0], [nx, 12])
    );
}

#[test]
fn sheets_snap_to_the_nearest_nodes() {
    let geometry = r#"
        Sheet(min: (2.2, 1.1, 3.1), max: (6.8, 4.9, 3.1)),
        Sheet(min: (0, 2, 1), max: (10, 2, 5)),
        Sheet(min: ("p", 0, 2), max: (9, 6, 2)),
    "#;
    let d = design(geometry, PROBE, FDTD, "");
    let job = job_at(&d, &[("p", 2.6)]);
    let s = &job.sheets;
    // z 3.1 -> node 6; x 2.2..6.8 -> nodes 4..14 (+4 padding), y 1.1..4.9 -> 2..10.
    assert_eq!((s[0].normal, s[0].plane, s[0].lo, s[0].hi), (Axis::Z, 6, [8, 2], [18, 10]));
    // Normal y at node 4; it reaches both x faces, so it runs through the x padding.
    // Others of Y are (Z, X): lo/hi are [z, x].
    assert_eq!((s[1].normal, s[1].plane, s[1].lo, s[1].hi), (Axis::Y, 4, [2, 0], [10, 28]));
    // x from p = 2.6 -> node 5 (+4); to 9 -> node 18 (+4); y covers the PEC faces only.
    assert_eq!((s[2].normal, s[2].plane, s[2].lo, s[2].hi), (Axis::Z, 4, [9, 0], [22, 12]));
}

#[test]
fn lumped_ports_start_at_their_lower_node() {
    let ports = r#"
        Lumped(name: "a", from: (5, 3, 2.9), to: (5, 3, 0.1), r: "25 * 2"),
        Lumped(name: "b", from: (1.6, 2, 4), to: (8.4, 2, 4), r: 75),
    "#;
    let d = design("", ports, FDTD, "");
    let job = job_at(&d, &[]);
    // z 2.9 -> node 6, 0.1 -> node 0: start at the lower end, 6 edges.
    assert_eq!(job.ports[0].kind, PortKind::Lumped { axis: Axis::Z, start: [14, 6, 0], len: 6, r_ohm: 50.0 });
    // x 1.6 -> node 3 (+4), 8.4 -> node 17 (+4).
    assert_eq!(job.ports[1].kind, PortKind::Lumped { axis: Axis::X, start: [7, 4, 8], len: 14, r_ohm: 75.0 });
    assert_eq!(job.ports[1].name, "b");
}

#[test]
fn waveguide_ports_face_into_the_domain() {
    // A guide along x: 10 mm long, 6 x 8 mm cross-section (E along y, the narrower side).
    let text = r#"Design(
        name: "g", units: Millimetre,
        geometry: [],
        domain: (x: (0, 10), y: (0, 6), z: (0, 8)),
        boundaries: (x: Absorbing, y: Pec, z: Pec),
        ports: [Waveguide(name: "l", plane: X(3.1)), Waveguide(name: "r", plane: X(7))],
        band: (start: 20e9, stop: 30e9, points: 11),
        engine: Fdtd(cell: 0.5),
        goals: [Goal(s: (2, 1), band: (20e9, 30e9), above_db: -1)],
    )"#;
    let d = Design::parse(text, "g.ron").unwrap();
    let job = d.jobs(&BTreeMap::new(), &[0, 1], None).unwrap();
    let expect = |plane, inward| PortKind::Waveguide {
        normal: Axis::X,
        plane,
        inward,
        e_axis: Axis::Y,
        width_axis: Axis::Z,
        a: 8e-3,
        source_offset: 3,
        shift_m: 0.0,
    };
    // x 3.1 -> node 6 (+10 PML), inward +x; x 7 -> node 14 (+10), inward -x.
    assert_eq!(job[0].ports[0].kind, expect(16, 1));
    assert_eq!(job[0].ports[1].kind, expect(24, -1));
    assert_eq!((job[0].drive, job[1].drive), (0, 1));
    assert_eq!(job[1].label, "g [] drive r");
}

#[test]
fn invariant_axis_has_one_cell_and_the_iris_aperture_is_centred() {
    let text = r#"Design(
        name: "i", units: Millimetre,
        parameters: { "w": Real(min: 2, max: 4) },
        geometry: [Iris(z: 5, thickness: 0.5, aperture: "w"), Post(center: (2, 0, 8), radius: 0.5)],
        domain: (x: (0, 7), y: (0, 3.5), z: (0, 12)),
        boundaries: (x: Pec, y: Pec, z: Absorbing),
        ports: [Waveguide(name: "l", plane: Z(2)), Waveguide(name: "r", plane: Z(10))],
        band: (start: 26e9, stop: 38e9, points: 13),
        engine: Fdtd(cell: 0.25, invariant: Y),
        goals: [Goal(s: (2, 1), band: (30e9, 32e9), above_db: -1)],
    )"#;
    let d = Design::parse(text, "i.ron").unwrap();
    let job = d.jobs(&BTreeMap::from([("w".to_string(), 3.0)]), &[0], None).unwrap().remove(0);
    assert_eq!(job.mesh.n(), [28, 1, 48 + 20]);
    assert_eq!(job.mesh.d(1)[0], 3.5e-3);
    let pec = |i: usize, k: usize| job.materials[job.cell_mat[job.mesh.idx(i, 0, k)] as usize].pec;
    // Iris: z 5..5.5 -> cells 20, 21 (+10). Aperture 3 mm centred on x = 3.5: cells 8..19 open.
    for k in [30, 31] {
        let row: Vec<bool> = (0..28).map(|i| pec(i, k)).collect();
        assert!(
            row[..8].iter().all(|&p| p) && row[8..20].iter().all(|&p| !p) && row[20..].iter().all(|&p| p),
            "{row:?}"
        );
    }
    assert!(!(0..28).any(|i| pec(i, 29) || pec(i, 32)));
    // Post of radius 0.5 at (x 2, z 8): cells 6..=9 along x and 40..=43 along z have
    // centres 0.125 or 0.375 mm off; the corners (0.53 mm) fall outside.
    let post: usize = (0..28).flat_map(|i| (34..46).map(move |k| (i, k))).filter(|&(i, k)| pec(i, k)).count();
    assert_eq!(post, 12);
    assert!(pec(6, 41) && pec(9, 42) && !pec(6, 40) && !pec(9, 43) && !pec(5, 41));
}

#[test]
fn tlm2d_collapses_the_guides_narrow_side_and_override_keeps_options() {
    let text = r#"Design(
        name: "c", units: Millimetre,
        geometry: [Iris(z: 5, thickness: 0.5, aperture: 3)],
        domain: (x: (0, 7), y: (0, 3.5), z: (0, 12)),
        boundaries: (x: Pec, y: Pec, z: Absorbing),
        ports: [Waveguide(name: "l", plane: Z(2)), Waveguide(name: "r", plane: Z(10))],
        band: (start: 26e9, stop: 38e9, points: 13),
        engine: Tlm2d(cell: 0.25, pml: 6, courant: 0.5, decay_db: -50, max_steps: 1234),
        goals: [Goal(s: (2, 1), band: (30e9, 32e9), above_db: -1)],
    )"#;
    let d = Design::parse(text, "c.ron").unwrap();
    assert!(d.notes()[0].contains("Tlm2d"), "{:?}", d.notes());
    let v = BTreeMap::new();
    let tlm2d = d.jobs(&v, &[0], None).unwrap().remove(0);
    assert_eq!((tlm2d.engine, tlm2d.mesh.n()), (EngineKind::Tlm2d, [28, 1, 48 + 12]));
    let fdtd = d.jobs(&v, &[0], Some(EngineKind::Fdtd)).unwrap().remove(0);
    assert_eq!(fdtd.engine, EngineKind::Fdtd);
    assert_eq!(
        (fdtd.mesh.clone(), fdtd.pml, fdtd.courant, fdtd.stop),
        (tlm2d.mesh.clone(), tlm2d.pml, 0.5, tlm2d.stop)
    );
    assert_eq!((fdtd.stop.decay_db, fdtd.stop.max_steps), (-50.0, 1234));
    assert_eq!(fdtd.cell_mat, tlm2d.cell_mat);
    // An Fdtd design overridden to Tlm2d collapses too.
    let d3 = Design::parse(&text.replace("Tlm2d(", "Fdtd("), "c.ron").unwrap();
    assert_eq!(d3.jobs(&v, &[0], None).unwrap()[0].mesh.n(), [28, 14, 60]);
    assert_eq!(d3.jobs(&v, &[0], Some(EngineKind::Tlm2d)).unwrap()[0].mesh.n(), [28, 1, 60]);
}

#[test]
fn jobs_differ_only_in_drive_and_label() {
    let ports =
        r#"Lumped(name: "a", from: (3, 3, 0), to: (3, 3, 1)), Lumped(name: "b", from: (7, 3, 0), to: (7, 3, 1))"#;
    let d = design("", ports, FDTD, "");
    let v = d.midpoint_values();
    let jobs = d.jobs(&v, &[1, 0], None).unwrap();
    assert_eq!((jobs[0].drive, jobs[1].drive), (1, 0));
    assert_eq!(jobs[0].label, "t [p=2,q=0.5] drive b");
    let mut a = jobs[0].clone();
    a.drive = 0;
    a.label = jobs[1].label.clone();
    assert_eq!(a, jobs[1]);
    assert!(d.jobs(&v, &[2], None).unwrap_err().to_string().contains("cannot drive port index 2"));
    // Values are checked for presence and bounds before anything is built.
    let mut partial = v.clone();
    partial.remove("q");
    assert!(d.jobs(&partial, &[0], None).unwrap_err().to_string().contains("parameters.q: no value given"));
}

#[test]
fn drives_follow_the_goal_columns() {
    let ports =
        r#"Lumped(name: "a", from: (3, 3, 0), to: (3, 3, 1)), Lumped(name: "b", from: (7, 3, 0), to: (7, 3, 1))"#;
    let d = design("", ports, FDTD, "");
    assert_eq!(d.drives_needed(), [0]);
    assert_eq!(d.reciprocity(), Ok(()));
    // S12 = S21 in this reciprocal design: port 1's drive gives it (before
    // reciprocity was used, S12 forced port 2's drive).
    let goal = |s: &str| format!("goals: [Goal(s: {s}, band: (2e9, 3e9), below_db: -20), ");
    let text = d.text().replace("goals: [", &goal("(1, 2)"));
    let d12 = Design::parse(&text, "t.ron").unwrap();
    assert_eq!(d12.drives_needed(), [0]);
    // S22 is no other entry's mirror: it forces port 2's column.
    let d22 = Design::parse(&d12.text().replace("goals: [", &goal("(2, 2)")), "t.ron").unwrap();
    assert_eq!(d22.drives_needed(), [0, 1]);
    // A lumped port beside a waveguide port: their waves are normalised differently
    // (S12 != S21), so the shortcut is refused and S12 needs port 2 driven.
    // (The guide's walls: PEC x faces.)
    let mixed = text
        .replace(r#"Lumped(name: "b", from: (7, 3, 0), to: (7, 3, 1))"#, r#"Waveguide(name: "b", plane: Z(5))"#)
        .replace("boundaries: (x: Absorbing,", "boundaries: (x: Pec,");
    let dm = Design::parse(&mixed, "t.ron").unwrap();
    assert!(dm.reciprocity().unwrap_err().contains("lumped and waveguide"), "{:?}", dm.reciprocity());
    assert_eq!(dm.drives_needed(), [0, 1]);
}

#[test]
fn constraints_objectives_and_lattices() {
    let extra = r#"
        constraints: ["q <= p - 1.5", "p > 2"],
        objectives: [Goals, Minimize("2*p + q"), Maximize("q")],
    "#;
    let d = design("", PROBE, FDTD, extra);
    let v = |p: f64, q: f64| BTreeMap::from([("p".to_string(), p), ("q".to_string(), q)]);
    assert_eq!(d.constraint_violation(&v(2.5, 1.0)), 0.0);
    assert_eq!(d.constraint_violation(&v(3.0, 1.5)), 0.0); // "<=" holds at equality
                                                           // q <= p - 1.5 misses by 0.25; p > 2 fails at equality (0 + epsilon).
    let c = d.constraint_violation(&v(2.0, 0.75));
    assert!(c > 0.25 && c < 0.25 + 1e-6, "{c}");
    assert!(d.check_values(&v(2.0, 0.75)).unwrap_err().to_string().contains("\"q <= p - 1.5\" is violated"));
    assert_eq!(d.objective_labels(), ["goals", "min 2*p + q", "max q"]);
    assert_eq!(d.extra_objectives(&v(2.5, 0.5)).unwrap(), [5.5, -0.5]);
    // Without `objectives`, the goals are the only objective.
    assert_eq!(design("", PROBE, FDTD, "").extra_objectives(&v(2.5, 0.5)).unwrap(), Vec::<f64>::new());

    let text = d.text().replace(
        r#""q": Real(min: 0.0, max: 1.0)"#,
        r#""q": Stepped(min: 0.0, max: 1.0, step: 0.25), "n": Int(min: 1, max: 4)"#,
    );
    let d = Design::parse(&text, "t.ron").unwrap();
    assert_eq!(d.parameter_names(), ["n", "p", "q"]);
    assert_eq!(d.midpoint_values(), BTreeMap::from([("n".into(), 3.0), ("p".into(), 2.0), ("q".into(), 0.5)]));
    let genes = d.genes();
    assert_eq!(genes[0], GeneSpec::Int { name: "n".into(), min: 1, max: 4 });
    assert!(d.values_from_sets(&["n=2.5", "p=2.5"]).unwrap_err().to_string().contains("2.5 is not an integer"));
    assert!(d.values_from_sets(&["q=0.3", "p=2.5"]).unwrap_err().to_string().contains("not min + k*step"));
    assert!(d.values_from_sets(&["q=0.75", "p=2.5", "n=4"]).is_ok());
}

#[test]
fn midpoint_probe_is_skipped_when_the_midpoint_is_infeasible() {
    // At the midpoint (p = 2) the box is inverted, but the midpoint violates p > 2.5.
    let geometry = r#"Box(material: "d4", min: (2, 0, 0), max: ("p", 6, 1))"#;
    let d = design(geometry, PROBE, FDTD, r#"constraints: ["p > 2.5"],"#);
    assert!(d
        .jobs(&d.midpoint_values(), &[0], None)
        .unwrap_err()
        .to_string()
        .contains("min.x (2 mm) must be below max.x (2 mm)"));
    assert!(d.jobs(&BTreeMap::from([("p".into(), 2.8), ("q".into(), 0.0)]), &[0], None).is_ok());
}

#[test]
fn hash_ignores_line_endings_and_trailing_blanks_only() {
    let d = design("", PROBE, FDTD, "");
    let crlf = Design::parse(&d.text().replace('\n', "  \r\n"), "x.ron").unwrap();
    assert_eq!(d.hash(), crlf.hash());
    assert_eq!(d.hash().len(), 64);
    let edited = Design::parse(&d.text().replace("points: 9", "points: 17"), "x.ron").unwrap();
    assert_ne!(d.hash(), edited.hash());
}

#[test]
fn optimiser_settings_default_field_by_field() {
    let d = design("", PROBE, FDTD, "");
    assert_eq!(*d.optimiser(), GaSettings::default());
    let g = GaSettings::default();
    // Without an optimiser block a run stops when every goal is met, or on stagnation.
    assert_eq!((g.population, g.tournament, g.stop.target, g.stop.stagnation), (32, 2, Some(0.0), Some(12)));
    assert_eq!(g.mutation_probability(4), 0.25);
    let d = design(
        "",
        PROBE,
        FDTD,
        "optimiser: Ga(population: 10, mutation: Polynomial(probability: 0.5), stop: (wall_seconds: 60)),",
    );
    let o = d.optimiser();
    assert_eq!((o.population, o.generations, o.elitism), (10, 40, 2));
    assert_eq!(o.mutation, crate::ga::Mutation::Polynomial { probability: Some(0.5), eta: 20.0 });
    assert_eq!(o.crossover, crate::ga::Crossover::Sbx { probability: 0.9, eta: 15.0 });
    // The stop rules not written keep their defaults.
    assert_eq!((o.stop.wall_seconds, o.stop.target, o.stop.stagnation), (Some(60.0), Some(0.0), Some(12)));
    // A bad setting is named.
    let text = d.text().replace("population: 10", "population: 10, elitism: 10");
    let e = Design::parse(&text, "t.ron").unwrap_err().to_string();
    assert!(e.contains("optimiser.elitism") && e.contains("must be below the population"), "{e}");
}

#[test]
fn ports_touching_conductors_are_refused() {
    // A probe whose edges run along a PEC block's face is shorted.
    let d = Design::parse(
        &design("", PROBE, FDTD, "")
            .text()
            .replace("geometry: [", r#"geometry: [Box(material: "Pec", min: (5, 0, 0), max: (6, 6, 8)), "#),
        "t.ron",
    );
    let e = d.unwrap_err().to_string();
    assert!(e.contains("ports[0]") && e.contains("touches the PEC cell"), "{e}");
    // A port lying on the PEC z-low face is shorted.
    let d = Design::parse(
        &design("", PROBE, FDTD, "")
            .text()
            .replace(r#"from: (5, 3, 0), to: (5, 3, 1)"#, r#"from: (4, 3, 0), to: (6, 3, 0)"#),
        "t.ron",
    );
    let e = d.unwrap_err().to_string();
    assert!(e.contains("lies on the Pec z-low face"), "{e}");
}

/// The iris/post guide of `invariant_axis_has_one_cell_and_the_iris_aperture_is_centred`.
const IRIS_GUIDE: &str = r#"Design(
    name: "i", units: Millimetre,
    parameters: { "w": Real(min: 2, max: 4) },
    geometry: [Iris(z: 5, thickness: 0.5, aperture: "w"), Post(center: (2, 0, 8), radius: 0.5)],
    domain: (x: (0, 7), y: (0, 3.5), z: (0, 12)),
    boundaries: (x: Pec, y: Pec, z: Absorbing),
    ports: [Waveguide(name: "l", plane: Z(2)), Waveguide(name: "r", plane: Z(10))],
    band: (start: 26e9, stop: 38e9, points: 13),
    engine: Fdtd(cell: 0.25, invariant: Y),
    goals: [Goal(s: (2, 1), band: (30e9, 32e9), above_db: -1)],
)"#;

#[test]
fn geometry_lists_every_edge_with_its_side_and_identity() {
    use super::geometry::{EventKind, Face, Owner, Side};
    let d = Design::parse(IRIS_GUIDE, "i.ron").unwrap();
    let g = d.geometry(&BTreeMap::from([("w".to_string(), 3.0)]), None).unwrap();
    assert_eq!(g.domain[2], [0.0, 12e-3]);
    let ev = g.events();
    // y is invariant: only its faces.
    assert_eq!(ev[1].len(), 2);
    let find = |a: usize, owner: Owner, face: Face| ev[a].iter().find(|e| e.id.owner == owner && e.id.face == face).copied();
    // The iris: faces at z 5 and 5.5 mm with metal between them, aperture edges at x 2 and 5 mm with metal outside.
    let z0 = find(2, Owner::Primitive(0), Face::Min).unwrap();
    assert!((z0.coord - 5e-3).abs() < 1e-12 && z0.kind == EventKind::MetalEdge { metal: Side::High });
    let z1 = find(2, Owner::Primitive(0), Face::Max).unwrap();
    assert!((z1.coord - 5.5e-3).abs() < 1e-12 && z1.kind == EventKind::MetalEdge { metal: Side::Low });
    let lo = find(0, Owner::Primitive(0), Face::ApertureLow).unwrap();
    assert!((lo.coord - 2e-3).abs() < 1e-12 && lo.kind == EventKind::MetalEdge { metal: Side::Low });
    let hi = find(0, Owner::Primitive(0), Face::ApertureHigh).unwrap();
    assert!((hi.coord - 5e-3).abs() < 1e-12 && hi.kind == EventKind::MetalEdge { metal: Side::High });
    // The post's extent across its axis, the ports' planes looking inwards, the domain faces.
    assert!((find(0, Owner::Primitive(1), Face::Min).unwrap().coord - 1.5e-3).abs() < 1e-12);
    assert!((find(2, Owner::Primitive(1), Face::Max).unwrap().coord - 8.5e-3).abs() < 1e-12);
    assert_eq!(find(2, Owner::Port(1), Face::Reference).unwrap().kind, EventKind::PortPlane { inward: -1 });
    assert_eq!(find(2, Owner::Domain, Face::Max).unwrap().kind, EventKind::DomainFace { side: Side::High });
    assert!(ev.iter().all(|v| v.windows(2).all(|w| w[0].coord <= w[1].coord)));
    // The same identities at another aperture: only the coordinates move.
    let g2 = d.geometry(&BTreeMap::from([("w".to_string(), 3.5)]), None).unwrap();
    let ids = |g: &Geometry| g.events().map(|v| v.iter().map(|e| (e.id, e.kind)).collect::<Vec<_>>());
    assert_eq!(ids(&g), ids(&g2));
}

/// A mesher that returns the lines it was given (padding included).
struct Lines(mesh::Meshed);

impl mesh::Mesher for Lines {
    fn mesh(&self, _g: &Geometry, _u: &geometry::Units) -> Result<mesh::Meshed, DesignError> {
        Ok(self.0.clone())
    }
}

#[test]
fn voxelisation_snaps_to_graded_lines_by_cell_centres_and_nearest_lines() {
    let d = Design::parse(IRIS_GUIDE, "i.ron").unwrap();
    let v = BTreeMap::from([("w".to_string(), 3.0)]);
    // x: 0.5 mm cells, but 0.2 mm from 1.8 to 2.2 mm around the aperture's low edge;
    // z: 10 padding cells of 0.5 mm, 0.25 mm cells from 0 to 2, 4 to 6 and 10 to 12 mm, 0.5 mm elsewhere.
    let mut x = vec![0.0, 0.5, 1.0, 1.5, 1.8, 2.0, 2.2, 2.5];
    x.extend((0..10).map(|i| 3.0 + 0.5 * i as f64));
    let mut z: Vec<f64> = (0..=10).map(|i| -5.0 + 0.5 * i as f64).collect();
    z.extend((1..8).map(|i| 0.25 * i as f64));
    z.extend((0..4).map(|i| 2.0 + 0.5 * i as f64));
    z.extend((0..8).map(|i| 4.0 + 0.25 * i as f64));
    z.extend((0..8).map(|i| 6.0 + 0.5 * i as f64));
    z.extend((0..=8).map(|i| 10.0 + 0.25 * i as f64));
    z.extend((1..=10).map(|i| 12.0 + 0.5 * i as f64));
    let mm = |v: Vec<f64>| v.into_iter().map(|c| c * 1e-3).collect::<Vec<f64>>();
    let mesh = crate::job::Mesh::from_lines([mm(x.clone()), vec![0.0, 3.5e-3], mm(z.clone())]).unwrap();
    assert!(!mesh.is_uniform(0) && !mesh.is_uniform(2));
    let job = d.job_with(&v, None, Some(&Lines(mesh::Meshed { mesh, pml: [[0, 0], [0, 0], [10, 10]] }))).unwrap();
    let pec = |i: usize, k: usize| job.materials[job.cell_mat[job.mesh.idx(i, 0, k)] as usize].pec;
    // Iris z 5..5.5 mm: the cells centred at 5.125 and 5.375 mm.
    let kz: Vec<usize> = (0..job.mesh.n()[2]).filter(|&k| pec(0, k)).collect();
    let centre = |k: usize| job.mesh.centres(2)[k] * 1e3;
    let iris: Vec<usize> = kz.iter().copied().filter(|&k| centre(k) > 4.0 && centre(k) < 6.0).collect();
    assert_eq!(iris.iter().map(|&k| centre(k)).collect::<Vec<_>>().len(), 2);
    assert!(iris.iter().all(|&k| (5.0..5.5).contains(&centre(k))), "{:?}", iris.iter().map(|&k| centre(k)).collect::<Vec<_>>());
    // The aperture (x 2..5 mm) by cell centres: 1.9 mm is metal, 2.1 mm open.
    let k = iris[0];
    let cx = |i: usize| job.mesh.centres(0)[i] * 1e3;
    for i in 0..job.mesh.n()[0] {
        assert_eq!(pec(i, k), (cx(i) - 3.5).abs() >= 1.5, "x centre {} mm", cx(i));
    }
    // Ports on the nearest lines: z = 2 mm and 10 mm are lines.
    let plane = |p: usize| match job.ports[p].kind {
        crate::job::PortKind::Waveguide { plane, .. } => plane,
        _ => unreachable!(),
    };
    assert!((job.mesh.lines(2)[plane(0)] - 2e-3).abs() < 1e-12);
    assert!((job.mesh.lines(2)[plane(1)] - 10e-3).abs() < 1e-12);
    // A line list that puts the port too near the padding is refused with the place.
    let tight = crate::job::Mesh::from_lines([mm(x), vec![0.0, 3.5e-3], mm((0..=30).map(|i| -1.5 + 0.5 * i as f64).collect())]).unwrap();
    let e = d.job_with(&v, None, Some(&Lines(mesh::Meshed { mesh: tight, pml: [[0, 0], [0, 0], [3, 3]] }))).unwrap_err();
    assert!(e.to_string().contains("ports[0].plane") && e.to_string().contains("cells from the absorbing padding"), "{e}");
}
