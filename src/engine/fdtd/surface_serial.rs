//! The sequential reference of the surface-term build (tests only): the
//! solids' edges painted cell after cell, the H nodes scanned one by one and
//! the E edges' gather lists kept in an ordered map, as the build was before
//! it ran per z plane; the parallel build must give the same terms, bit for
//! bit and in the same order (the CPU and CUDA updates follow that order).

use super::*;
use crate::job::{Axis, Material, Sheet, Surfaces};
use std::collections::BTreeMap;

/// The terms of `job`, sequentially.
fn build_serial(job: &SimJob, op: &Operator) -> Result<SurfaceTerms, SimFailure> {
    let Some((mut t, ab)) = SurfaceTerms::networks(job, op)? else { return Ok(SurfaceTerms::default()) };
    let metal = edge_metals_serial(job, op);
    let ctx = NodeCtx { job, op, metal: &metal, ab: &ab };
    let n = op.n;
    t.first.push(0);
    let mut reads: BTreeMap<(u8, u32), Vec<(u32, f32)>> = BTreeMap::new();
    for c in 0..3 {
        let mut hr = [n[0], n[1], n[2]];
        hr[c] = n[c] + 1;
        for k in 0..hr[2] {
            for j in 0..hr[1] {
                for i in 0..hr[0] {
                    let Some(x) = ctx.term(c, [i, j, k]) else { continue };
                    let term = t.comp.len() as u32;
                    t.push_term(&x);
                    for (ec, q, w) in x.reads {
                        if w != 0.0 {
                            reads.entry((ec, q)).or_default().push((term, w));
                        }
                    }
                }
            }
        }
    }
    t.carry.e_first.push(0);
    for ((c, q), list) in reads {
        t.carry.e_comp.push(c);
        t.carry.e_idx.push(q);
        for (term, w) in list {
            t.carry.e_term.push(term);
            t.carry.e_w.push(w);
        }
        t.carry.e_first.push(t.carry.e_term.len() as u32);
    }
    Ok(t)
}

/// `edge_metals` with the solids painted cell after cell onto their twelve edges.
#[allow(clippy::needless_range_loop)] // the original loop, as it was
fn edge_metals_serial(job: &SimJob, op: &Operator) -> [Vec<u8>; 3] {
    let sf = &job.surfaces;
    let mut out = [vec![0u8; op.len], vec![0u8; op.len], vec![0u8; op.len]];
    let n = op.n;
    let by_mat: Vec<u8> = (0..job.materials.len()).map(|m| sf.of_material(m as u8).map_or(0, |c| c + 1)).collect();
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let m = by_mat[job.cell_mat[job.mesh.idx(i, j, k)] as usize];
                if m == 0 {
                    continue;
                }
                let cell = [i as isize, j as isize, k as isize];
                for c in 0..3 {
                    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
                    for (da, db) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let mut q = cell;
                        q[a] += da;
                        q[b] += db;
                        out[c][op.at3(q)] = m;
                    }
                }
            }
        }
    }
    mark_sheets_and_walls(job, op, &mut out);
    out
}

/// Every array of two term sets, floats by their bits.
fn assert_same(a: &SurfaceTerms, b: &SurfaceTerms, label: &str) {
    fn same<T: PartialEq + std::fmt::Debug>(what: &str, a: &[T], b: &[T]) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!("{what}: first difference at {i}: {:?} vs {:?}", a[i], b[i]);
        }
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (what, x, y) in [("comp", &a.comp, &b.comp), ("metal", &a.metal, &b.metal), ("e_comp", &a.carry.e_comp, &b.carry.e_comp)] {
        same(&format!("{label}: {what}"), x, y);
    }
    for (what, x, y) in [("idx", &a.idx, &b.idx), ("e_idx", &a.carry.e_idx, &b.carry.e_idx), ("e_first", &a.carry.e_first, &b.carry.e_first), ("e_term", &a.carry.e_term, &b.carry.e_term), ("first", &a.first, &b.first), ("cell_first", &a.cell_first, &b.cell_first)] {
        same(&format!("{label}: {what}"), x, y);
    }
    for (what, x, y) in [("k", &a.k, &b.k), ("inv_den", &a.inv_den, &b.inv_den), ("kb", &a.kb, &b.kb), ("e_w", &a.carry.e_w, &b.carry.e_w), ("alpha", &a.alpha, &b.alpha), ("beta", &a.beta, &b.beta), ("rho", &a.rho, &b.rho)] {
        same(&format!("{label}: {what}"), &bits(x), &bits(y));
    }
}

/// A PEC box (PMC x faces, CPML along z) holding two lossy solids of
/// different metals that touch (their shared edges take the later cell's
/// metal), a perfect block touching one of them, a lossy sheet lying on the
/// other's top face and rough lossy y walls: every way an edge gets its metal.
fn two_metals_job() -> SimJob {
    let n = [14, 12, 20];
    let mut job = super::super::tests::empty_job(n, [0.5e-3; 3], [[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]], [[0, 0], [0, 0], [5, 5]], (5e9, 25e9));
    job.label = "two metals".into();
    job.materials.push(Material { name: "brass".into(), ..Material::pec() });
    job.materials.push(Material { name: "gold".into(), ..Material::pec() });
    let paint = |job: &mut SimJob, lo: [usize; 3], hi: [usize; 3], m: u8| {
        for k in lo[2]..hi[2] {
            for j in lo[1]..hi[1] {
                for i in lo[0]..hi[0] {
                    let x = job.mesh.idx(i, j, k);
                    job.cell_mat_mut()[x] = m;
                }
            }
        }
    };
    paint(&mut job, [3, 2, 7], [7, 9, 11], 2);
    paint(&mut job, [7, 4, 8], [10, 10, 12], 3);
    paint(&mut job, [10, 4, 8], [12, 6, 10], 1);
    job.sheets.push(Sheet { normal: Axis::Z, plane: 11, lo: [2, 1], hi: [8, 10] });
    let metal = |name: &str, sigma: f64, thickness: Option<f64>, roughness: f64| Conductor { name: name.into(), sigma, thickness, roughness };
    job.surfaces = Surfaces {
        conductors: vec![metal("brass", 1.6e7, None, 0.0), metal("gold", 4.1e7, None, 0.0), metal("copper 35 um", 5.8e7, Some(35e-6), 0.0), metal("rough copper", 5.8e7, None, 1e-6)],
        materials: vec![(2, 0), (3, 1)],
        sheets: vec![(0, 2)],
        walls: [[None; 2], [Some(3); 2], [None; 2]],
    };
    job
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

#[test]
fn the_parallel_build_gives_the_sequential_terms() {
    let mut jobs = vec![two_metals_job()];
    // The device check's lossy jobs: walls and irises (3D and a graded 2.5D
    // guide), a thin sheet with rough walls, PMC faces, CPML and edge currents.
    jobs.extend(crate::dev::device_check::random_jobs(false, 10).into_iter().filter(|j| !j.surfaces.is_empty()));
    for name in ["microstrip_lowpass", "wr28_iris_filter_copper"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("designs/{name}.ron"));
        let design = crate::design::Design::load(&path).unwrap();
        jobs.extend(design.jobs(&design.midpoint_values(), &[0], None).unwrap());
    }
    assert_eq!(jobs.len(), 6, "the lossy jobs");
    for job in &jobs {
        let op = Operator::new(job).unwrap_or_else(|e| panic!("{}: {e}", job.label));
        let reference = build_serial(job, &op).unwrap();
        assert!(!reference.is_empty() && !reference.carry.e_comp.is_empty(), "{}: no terms", job.label);
        eprintln!("{}: {} terms, {} E edges", job.label, reference.len(), reference.carry.e_comp.len());
        for threads in [1, 3, 8] {
            let t = in_pool(threads, || SurfaceTerms::build(job, &op)).unwrap();
            assert_same(&t, &reference, &format!("{} on {threads} threads", job.label));
        }
    }
    // Both metals of the touching solids, the sheet's and the walls' are all used.
    let t = build_serial(&jobs[0], &Operator::new(&jobs[0]).unwrap()).unwrap();
    for m in 0..4 {
        assert!(t.metal.contains(&m), "conductor {m} has no term");
    }
}
