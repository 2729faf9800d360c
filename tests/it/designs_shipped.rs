//! The shipped designs load and every candidate the optimiser may visit
//! meshes and voxelises (corners and random points of the parameter box, on
//! the automatic mesh: lines on the metal, grading within the limit); and, on
//! the uniform meshes the designs had before (tests/fixtures/uniform), the
//! voxeliser puts grids, metal and ports where the files say. None is simulated.

use std::path::Path;

use emvolve::design::Design;
use emvolve::job::{Axis, Boundary, PortKind, SimJob};

/// A design as it was with a uniform mesh (76d7f88), at its midpoint.
fn load(name: &str) -> (Design, Vec<SimJob>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uniform").join(name);
    let d = Design::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let values = d.midpoint_values();
    d.check_values(&values).unwrap();
    let drives: Vec<usize> = (0..d.port_names().len()).collect();
    let jobs = d.jobs(&values, &drives, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(jobs.len(), drives.len());
    for (j, job) in jobs.iter().enumerate() {
        assert_eq!(job.drive, j);
        assert_eq!(job.cell_mat.len(), job.mesh.cells());
        assert_eq!(job.freqs.len(), d.freqs().len());
    }
    (d, jobs)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn wr28_iris_filter() {
    let (d, jobs) = load("wr28_iris_filter.ron");
    assert_eq!(d.parameter_names(), ["l1", "l2", "w1", "w2"]);
    assert_eq!(d.drives_needed(), [0]);
    let job = &jobs[0];
    // x: 7.112 / (a/28) = 28 cells; y invariant: one cell of b; z: 36 mm / 0.254 = 141.7
    // -> 142 cells, plus 10 PML cells on each absorbing z face.
    assert_eq!(job.mesh.n(), [28, 1, 162]);
    assert!(close(job.mesh.d(0)[0], 0.254e-3));
    assert!(close(job.mesh.d(1)[0], 3.556e-3));
    assert!(close(job.mesh.d(2)[0], 36e-3 / 142.0));
    assert!(close(job.mesh.origin()[2], -10.0 * 36e-3 / 142.0));
    assert_eq!(job.pml, [[0, 0], [0, 0], [10, 10]]);
    assert_eq!(job.boundaries[1], [Boundary::Pec, Boundary::Pec]);
    // Midpoint l1 = l2 = 5.25: filter 17.75 mm long centred on 18 mm; ports 5 mm
    // outside: z = 4.125 mm -> node 16, z = 31.875 mm -> node 126 (+10 padding).
    let wg = |k: usize| match job.ports[k].kind {
        PortKind::Waveguide { normal, plane, inward, e_axis, width_axis, a, source_offset, shift_m } => {
            assert_eq!((normal, e_axis, width_axis, source_offset, shift_m), (Axis::Z, Axis::Y, Axis::X, 3, 0.0));
            assert!(close(a, 7.112e-3));
            (plane, inward)
        }
        _ => panic!("waveguide port expected"),
    };
    assert_eq!(wg(0), (26, 1));
    assert_eq!(wg(1), (136, -1));
    // Four irises of PEC, two cells thick (0.5 mm / 0.2535 mm), apertures w1 = 3.75
    // mm -> 14 open cells and w2 = 2.75 mm -> 10 open cells (cell-centre rule).
    assert_eq!(job.materials.len(), 2);
    assert!(job.materials[1].pec);
    let closed_per_slice: Vec<usize> = (0..job.mesh.n()[2])
        .map(|k| (0..28).filter(|&i| job.cell_mat[job.mesh.idx(i, 0, k)] == 1).count())
        .filter(|&c| c > 0)
        .collect();
    assert_eq!(closed_per_slice, [14, 14, 18, 18, 18, 18, 14, 14]);
    assert!(job.sheets.is_empty());
}

#[test]
fn patch_2g4() {
    let (d, jobs) = load("patch_2g4.ron");
    assert_eq!(d.parameter_names(), ["L", "W", "feed"]);
    let job = &jobs[0];
    // 72 x 80 x 32 mm at 0.8 mm, PML 10 on every face but z-low (PEC, the ground).
    assert_eq!(job.mesh.n(), [110, 120, 50]);
    assert_eq!(job.pml, [[10, 10], [10, 10], [0, 10]]);
    // Probe at x = -feed = -5.5 mm -> node 38 (+10), y = 0 -> node 50 (+10), z 0..1.6 mm: 2 edges.
    match job.ports[0].kind {
        PortKind::Lumped { axis, start, len, r_ohm } => {
            assert_eq!((axis, start, len, r_ohm), (Axis::Z, [48, 60, 0], 2, 50.0));
        }
        _ => panic!("lumped port expected"),
    }
    // FR-4 fills the two bottom layers everywhere, padding included.
    let fr4 = job.materials.iter().position(|m| m.name == "fr4").unwrap() as u8;
    for (i, j) in [(0, 0), (109, 119), (55, 60)] {
        assert_eq!(job.cell_mat[job.mesh.idx(i, j, 0)], fr4);
        assert_eq!(job.cell_mat[job.mesh.idx(i, j, 1)], fr4);
        assert_eq!(job.cell_mat[job.mesh.idx(i, j, 2)], 0);
    }
    // Ground (whole padded plane at z = 0) and patch (plane z = 2).
    assert_eq!(job.sheets.len(), 2);
    assert_eq!((job.sheets[0].plane, job.sheets[0].lo, job.sheets[0].hi), (0, [0, 0], [110, 120]));
    // Patch L = 29 mm, W = 38 mm centred: x -14.5..14.5 -> nodes 27..63 (+10), y -19..19 -> 26..74 (+10).
    let p = &job.sheets[1];
    assert_eq!((p.normal, p.plane, p.lo, p.hi), (Axis::Z, 2, [27 + 10, 26 + 10], [63 + 10, 74 + 10]));
}

#[test]
fn microstrip_lowpass() {
    let (d, jobs) = load("microstrip_lowpass.ron");
    assert_eq!(d.parameter_names(), ["lc1", "lc3", "ll2", "ll4", "wc", "wl"]);
    assert_eq!(d.drives_needed(), [0]);
    let job = &jobs[0];
    // 76 x 24.4 x 8.8 mm at 0.4 mm: 190 x 61 x 22 cells, PML 10 except at z-low.
    assert_eq!(job.mesh.n(), [210, 81, 32]);
    // Probes at x = -34 / +34 mm (nodes 10 / 180, +10), y = 0.2 mm (node 31, +10).
    let ports: Vec<_> = job
        .ports
        .iter()
        .map(|p| match p.kind {
            PortKind::Lumped { axis, start, len, .. } => (axis, start, len),
            _ => panic!("lumped port expected"),
        })
        .collect();
    assert_eq!(ports, [(Axis::Z, [20, 41, 0], 2), (Axis::Z, [190, 41, 0], 2)]);
    // Ground, two feed lines and seven sections, all on plane z = 2 but the ground.
    assert_eq!(job.sheets.len(), 10);
    assert!(job.sheets[1..].iter().all(|s| s.normal == Axis::Z && s.plane == 2));
    // The central high-impedance section: wl = 1.2 mm (3 cells) at the midpoint.
    let centre = &job.sheets[6];
    assert_eq!(centre.hi[1] - centre.lo[1], 3);
    // Consecutive strips meet on a common node line (no gap along x).
    for w in job.sheets[3..].windows(2) {
        assert_eq!(w[0].hi[0], w[1].lo[0]);
    }
    assert_eq!(job.sheets[1].hi[0], job.sheets[3].lo[0]);
    assert_eq!(job.sheets[9].hi[0], job.sheets[2].lo[0]);
}

/// Every corner of each design's parameter box that satisfies the constraints
/// builds: the optimiser will visit the extremes.
#[test]
fn every_feasible_corner_builds() {
    for name in ["wr28_iris_filter.ron", "wr28_iris_filter_copper.ron", "patch_2g4.ron", "microstrip_lowpass.ron", "circular_patch_2g4.ron"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("designs").join(name);
        let d = Design::load(&path).unwrap();
        let genes = d.genes();
        let mut built = 0;
        for mask in 0..(1u32 << genes.len()) {
            let values = genes
                .iter()
                .enumerate()
                .map(|(k, g)| {
                    let (lo, hi) = g.bounds();
                    (g.name().to_string(), if mask >> k & 1 == 1 { hi } else { lo })
                })
                .collect();
            if d.constraint_violation(&values) > 0.0 {
                continue;
            }
            d.check_values(&values).unwrap_or_else(|e| panic!("{e}"));
            d.jobs(&values, &[0], None).unwrap_or_else(|e| panic!("{name} at {values:?}: {e}"));
            built += 1;
        }
        assert!(built >= 1 << (genes.len() - 1), "{name}: only {built} feasible corners");
    }
}

/// Random candidates over each shipped design's whole box (the optimiser's
/// mutations reach anywhere): every feasible one meshes on the automatic mesh
/// with no cell below the minimum and grading within 1.5, and voxelises.
#[test]
fn random_candidates_mesh_and_voxelise() {
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut uniform = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for (name, count) in [("wr28_iris_filter.ron", 300), ("wr28_iris_filter_copper.ron", 30), ("patch_2g4.ron", 30), ("microstrip_lowpass.ron", 30), ("circular_patch_2g4.ron", 30)] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("designs").join(name);
        let d = Design::load(&path).unwrap();
        let genes = d.genes();
        let mut built = 0;
        for _ in 0..count {
            let values = genes
                .iter()
                .map(|g| {
                    let (lo, hi) = g.bounds();
                    (g.name().to_string(), lo + uniform() * (hi - lo))
                })
                .collect();
            if d.constraint_violation(&values) > 0.0 {
                continue;
            }
            let job = d.jobs(&values, &[0], None).unwrap_or_else(|e| panic!("{name} at {values:?}: {e}")).remove(0);
            for a in 0..3 {
                if job.mesh.n()[a] > 1 {
                    assert!(job.mesh.max_grading(a) <= 1.5 + 1e-6, "{name} at {values:?}: axis {a} grading {}", job.mesh.max_grading(a));
                }
            }
            built += 1;
        }
        assert!(built * 3 >= count, "{name}: only {built} of {count} feasible");
    }
}
