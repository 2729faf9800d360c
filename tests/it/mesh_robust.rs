//! The automatic mesher is robust for every candidate a GA can produce
//! (issue 31): thousands of random candidates of every shipped design and of
//! the SIW filter fixture (108 vias, whose faces pass close to each other as
//! the irises move) are meshed -- mesh only, as `Design::jobs` lays it before
//! voxelising -- and every one must mesh, with no two neighbouring cells
//! differing by more than the design's `max_ratio`. The lines are checked
//! here, not by the mesher's own check.
//!
//! Candidates are drawn as a GA's first generation is: uniform over each
//! parameter's range (snapped to its lattice), with a fixed seed; those that
//! break a constraint are drawn again (the GA never simulates them).
//! `MESH_CASES=n` changes the count per design.

use std::collections::BTreeMap;
use std::path::Path;

use emvolve::design::format::MeshSpec;
use emvolve::design::Design;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

const CASES: usize = 1000;

fn cases() -> usize {
    std::env::var("MESH_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES)
}

fn load(rel: &str) -> Design {
    Design::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `n` feasible candidates of `d`, uniform over the ranges.
fn candidates(d: &Design, n: usize, seed: u64) -> Vec<BTreeMap<String, f64>> {
    let genes = d.genes();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut tries = 0;
    while out.len() < n {
        tries += 1;
        assert!(tries < 100 * n, "{}: too few candidates satisfy the constraints", d.name());
        let v: BTreeMap<String, f64> = genes
            .iter()
            .map(|g| {
                let (lo, hi) = g.bounds();
                (g.name().to_string(), g.snap(rng.random_range(lo..=hi)))
            })
            .collect();
        if d.constraint_violation(&v) == 0.0 {
            out.push(v);
        }
    }
    out
}

/// What is wrong with one axis' lines, if anything: not increasing, or two
/// neighbouring cells beyond `max_ratio`.
fn line_problem(v: &[f64], max_ratio: f64) -> Option<String> {
    if let Some(w) = v.windows(2).find(|w| !(w[1] > w[0])) {
        return Some(format!("lines not increasing: {} then {}", w[0], w[1]));
    }
    v.windows(3).find_map(|w| {
        let (a, b) = (w[1] - w[0], w[2] - w[1]);
        let r = (a / b).max(b / a);
        (r > max_ratio * (1.0 + 1e-9)).then(|| format!("cells {a:.4e} and {b:.4e} at {:.6e}: ratio {r:.4}", w[1]))
    })
}

/// An error message with its numbers blanked, so failures group by kind.
fn kind(msg: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in msg.chars() {
        if c.is_ascii_digit() || (in_num && (c == '.' || c == '-' || c == 'e')) {
            if !in_num {
                if out.ends_with('-') {
                    out.pop();
                }
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

/// Meshes `n` candidates of the design at `rel`; returns the failures by kind
/// (mesher errors and broken lines) and prints them.
fn run(rel: &str, n: usize, seed: u64) -> (usize, BTreeMap<String, (usize, String)>) {
    let d = load(rel);
    let max_ratio = match &d.file().engine.options().mesh {
        Some(MeshSpec::Auto(s)) => s.max_ratio,
        None => 1.5,
    };
    let cands = candidates(&d, n, seed);
    let t0 = std::time::Instant::now();
    let results: Vec<Result<(), String>> = cands
        .par_iter()
        .map(|v| {
            let m = d.mesh(v).map_err(|e| e.to_string())?;
            for a in 0..3 {
                if let Some(p) = line_problem(m.mesh.lines(a), max_ratio) {
                    return Err(format!("axis {a}: {p}"));
                }
            }
            Ok(())
        })
        .collect();
    let mut fails: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (v, r) in cands.iter().zip(&results) {
        if let Err(e) = r {
            let entry = fails.entry(kind(e)).or_insert((0, format!("{e} at {v:?}")));
            entry.0 += 1;
        }
    }
    let total: usize = fails.values().map(|f| f.0).sum();
    eprintln!(
        "{rel}: {total} of {n} candidates failed ({:.1} per 1000), meshed in {:.2} s",
        1000.0 * total as f64 / n as f64,
        t0.elapsed().as_secs_f64()
    );
    for (k, (c, example)) in &fails {
        eprintln!("  {c:5} x {k}\n        e.g. {example}");
    }
    (total, fails)
}

fn assert_robust(rel: &str, seed: u64) {
    let (total, fails) = run(rel, cases(), seed);
    assert!(total == 0, "{rel}: {total} mesh failures: {:?}", fails.values().map(|f| &f.1).collect::<Vec<_>>());
}

#[test]
fn iris_filter_candidates_all_mesh() {
    assert_robust("designs/wr28_iris_filter.ron", 1);
}

#[test]
fn microstrip_lowpass_candidates_all_mesh() {
    assert_robust("designs/microstrip_lowpass.ron", 2);
}

#[test]
fn patch_candidates_all_mesh() {
    assert_robust("designs/patch_2g4.ron", 3);
}

#[test]
fn circular_patch_candidates_all_mesh() {
    assert_robust("tests/fixtures/circular_patch_2g4.ron", 5);
}

#[test]
fn siw_filter_candidates_all_mesh() {
    assert_robust("tests/fixtures/siw_bandpass_filter.ron", 4);
}

#[test]
fn line_checker_sees_broken_grading() {
    assert!(line_problem(&[0.0, 1.0, 2.0, 3.5], 1.5).is_none());
    assert!(line_problem(&[0.0, 1.0, 2.0, 3.6], 1.5).is_some());
    assert!(line_problem(&[0.0, 1.0, 1.0, 2.0], 1.5).is_some());
    assert_eq!(kind("cell at -5.456 mm is 1e-3 wide"), "cell at # mm is # wide");
}
