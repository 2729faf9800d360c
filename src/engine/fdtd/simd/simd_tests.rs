//! The SIMD stepper against the reference step, bit for bit: random fields
//! (and CPML memories) stepped by both must stay identical, on uniform and
//! graded meshes, with CPML, PMC faces, lumped and waveguide ports, on every
//! instruction-set level this CPU has and with several slabs.

use super::super::cpu;
use super::super::fields::Fields;
use super::super::operator::Operator;
use super::super::tests::{empty_job, wr28_job};
use super::{advance, step, SimdPlan, Level};
use crate::job::*;

/// A tiny deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// Fields with every array (ghosts and CPML memories included) random.
fn random_fields(op: &Operator, seed: u64) -> Fields {
    let mut f = Fields::new(op);
    let mut rng = Rng(seed | 1);
    let mut fill = |v: &mut Vec<f32>| v.iter_mut().for_each(|x| *x = rng.next());
    for c in 0..3 {
        fill(&mut f.e[c]);
        fill(&mut f.h[c]);
        for a in 0..3 {
            fill(&mut f.psi_e[c][a]);
            fill(&mut f.psi_h[c][a]);
        }
    }
    f
}

fn same_bits(a: &Fields, b: &Fields) -> Result<(), String> {
    let arrays = |f: &Fields| -> Vec<(String, Vec<u32>)> {
        let mut v = vec![];
        for c in 0..3 {
            v.push((format!("E{c}"), f.e[c].iter().map(|x| x.to_bits()).collect()));
            v.push((format!("H{c}"), f.h[c].iter().map(|x| x.to_bits()).collect()));
            for a in 0..3 {
                v.push((format!("psiE{c}{a}"), f.psi_e[c][a].iter().map(|x| x.to_bits()).collect()));
                v.push((format!("psiH{c}{a}"), f.psi_h[c][a].iter().map(|x| x.to_bits()).collect()));
            }
        }
        v
    };
    for ((name, x), (_, y)) in arrays(a).iter().zip(arrays(b).iter()) {
        if let Some(p) = x.iter().zip(y).position(|(p, q)| p != q) {
            return Err(format!("{name} differs first at flat {p}: {} vs {}", f32::from_bits(x[p]), f32::from_bits(y[p])));
        }
    }
    Ok(())
}

/// Step `job`'s random fields `steps` times with the reference (the driven
/// port's source included) and with the SIMD stepper at every level and
/// slab count; every array must keep the same bits.
fn check(job: &SimJob, steps: usize) {
    let op = Operator::new(job).unwrap();
    for level in Level::available() {
        for (threads, by_component) in [(1, false), (1, true), (2, false), (3, true), (5, false)] {
            let mut plan = SimdPlan::with(&op, threads, level, 0);
            plan.by_component = by_component;
            let mut r = random_fields(&op, 0x5eed + threads as u64);
            let mut f = random_fields(&op, 0x5eed + threads as u64);
            for s in 0..steps {
                cpu::fdtd_step(&op, &mut r);
                cpu::fdtd_inject(&op, &mut r, job.drive, job.pulse.value((s as f64 + 0.5) * op.dt));
                step(&op, &plan, &mut f);
                cpu::fdtd_inject(&op, &mut f, job.drive, job.pulse.value((s as f64 + 0.5) * op.dt));
                if let Err(e) = same_bits(&r, &f) {
                    panic!("{}: {level:?}, {} slabs, by component {by_component}, step {s}: {e}", job.label, plan.slabs.len());
                }
            }
        }
    }
}

/// Lines over `0..len` in `n` cells: `pad` equal cells at each end (where a
/// CPML may lie), growing by up to 1.3x toward the middle in between.
/// Step `job`'s random fields with the reference loop (step, source, port
/// samples) and with `advance` on wavefront plans (several block lengths and
/// thread counts, chunks that end mid-block): fields and port traces must
/// keep the same bits.
fn check_wave(job: &SimJob, steps: usize) {
    let op = Operator::new(job).unwrap();
    let mut r = random_fields(&op, 77);
    let mut want = vec![PortTrace::default(); job.ports.len()];
    for s in 0..steps {
        cpu::fdtd_step(&op, &mut r);
        cpu::fdtd_inject(&op, &mut r, job.drive, job.pulse.value((s as f64 + 0.5) * op.dt));
        cpu::fdtd_sample_ports(&op, &mut r, &mut want);
    }
    assert!(want.iter().all(|t| t.v.len() == steps), "every port sampled every step");
    for (per_thread, threads) in [(1, 1), (3, 1), (2, 2), (4, 2), (1, 3)] {
        let plan = SimdPlan::with(&op, threads, Level::detect(), per_thread);
        let w = plan.wave.as_ref().unwrap();
        let mut f = random_fields(&op, 77);
        let mut got = vec![PortTrace::default(); job.ports.len()];
        let mut n = 0;
        for k in [5, 1, 7].iter().cycle() {
            let k = (*k).min(steps - n);
            advance(&op, &plan, &mut f, job.drive, &job.pulse, n, k, &mut got, &mut []);
            n += k;
            if n == steps {
                break;
            }
        }
        let what = format!("{}: {per_thread} steps x {threads} threads, {} port groups", job.label, w.ports.len());
        same_bits(&r, &f).unwrap_or_else(|e| panic!("{what}: {e}"));
        for (a, b) in want.iter().zip(&got) {
            assert!(a.v.iter().zip(&b.v).all(|(x, y)| x.to_bits() == y.to_bits()) && a.v.len() == b.v.len(), "{what}: V differs");
            assert!(a.i.iter().zip(&b.i).all(|(x, y)| x.to_bits() == y.to_bits()) && a.i.len() == b.i.len(), "{what}: I differs");
        }
    }
}

#[test]
fn wavefront_blocks_match_reference_steps_sources_and_samples() {
    let mut j = crate::bench::box_job_pml(14, 10, 3);
    j.label = "cpml box, lumped port".into();
    check_wave(&j, 23);
    let mut j = crate::bench::box_job_pml(12, 10, 0);
    j.label = "pec box, lumped port".into();
    check_wave(&j, 23);
    let mut j = wr28_job(10.0, (26e9, 40e9));
    j.label = "wr28 guide, two ports".into();
    check_wave(&j, 17);
    j.drive = 1;
    check_wave(&j, 17);
}

fn graded(len: f64, n: usize, pad: usize) -> Vec<f64> {
    let w: Vec<f64> = (0..n).map(|i| if i < pad || i + pad >= n { 1.0 } else { 1.0 + 0.3 * ((i as f64 + 0.5) / n as f64 * std::f64::consts::PI).sin() }).collect();
    let tot: f64 = w.iter().sum();
    let mut x = vec![0.0];
    for v in w {
        x.push(x.last().unwrap() + v / tot * len);
    }
    x
}

#[test]
fn pec_box_with_dielectric_block_matches_reference_bits() {
    let mut j = crate::bench::box_job_pml(14, 10, 0);
    j.label = "pec box".into();
    check(&j, 4);
    // Rows long enough that E_y and E_z rows, ending on the PEC x faces with
    // one material between, look up only their ends; E_x rows cross the
    // block: every way of finding a row's materials is used.
    let mut j = crate::bench::box_job_pml(50, 10, 0);
    j.label = "pec box 50".into();
    let plan = SimdPlan::new(&Operator::new(&j).unwrap());
    let modes = |f: fn(u16) -> bool| plan.e_mat.iter().flatten().any(|&m| f(m));
    assert!(modes(|m| m < 256) && modes(|m| m != super::plan::MIXED && m & super::plan::WALLS != 0) && modes(|m| m == super::plan::MIXED));
    check(&j, 2);
}

#[test]
fn cpml_box_with_lumped_port_matches_reference_bits() {
    let mut j = crate::bench::box_job_pml(18, 10, 4);
    j.label = "cpml box".into();
    check(&j, 4);
}

#[test]
fn graded_mesh_with_cpml_and_pmc_faces_matches_reference_bits() {
    // Graded lines on every axis, CPML on x and the low z face, PMC on y and the high z face, PEC walls elsewhere.
    let mut j = empty_job([13, 11, 12], [1e-3; 3], [[Boundary::Absorbing; 2], [Boundary::Pmc; 2], [Boundary::Absorbing, Boundary::Pmc]], [[3, 3], [0, 0], [3, 0]], (1e9, 10e9));
    j.mesh = Mesh::from_lines([graded(13e-3, 13, 3), graded(11e-3, 11, 0), graded(12e-3, 12, 3)]).unwrap();
    j.label = "graded cpml/pmc".into();
    // A dielectric and a metal block so E rows have several material runs.
    let cells = j.mesh.cells();
    let mut mat = vec![0u8; cells];
    j.materials.push(Material { name: "fr4".into(), eps_r: 4.4, sigma: 0.02, mu_r: 1.0, pec: false, poles: vec![] });
    for k in 2..7 {
        for jj in 3..8 {
            for i in 4..9 {
                mat[j.mesh.idx(i, jj, k)] = if i < 6 { 2 } else { 1 };
            }
        }
    }
    j.cell_mat = mat.into();
    check(&j, 5);
}

#[test]
fn waveguide_ports_on_graded_cells_match_reference_bits() {
    // The guide with x graded (the TE10 profile and the port sums read per-line spacings).
    let mut j = wr28_job(12.0, (26e9, 40e9));
    let x = graded(7.112e-3, j.mesh.n()[0], 0);
    j.mesh = Mesh::from_lines([x, j.mesh.lines(1).to_vec(), j.mesh.lines(2).to_vec()]).unwrap();
    j.label = "wr28 guide".into();
    check(&j, 3);
}

#[test]
fn long_rows_with_cpml_runs_and_masked_tails_match_reference_bits() {
    // Rows of 37-38 cells: full vectors, masked tails of every length class,
    // x runs of 5 stretched cells at each end beside 27-28 plain ones.
    let mut j = crate::bench::box_job_pml(37, 10, 5);
    j.label = "cpml box 37".into();
    check(&j, 3);
    let mut j = crate::bench::workloads::graded(crate::bench::box_job_pml(23, 10, 7));
    j.label = "graded cpml box 23".into();
    check(&j, 3);
    // E rows long enough to look up only their ends, which lie in the x layers' runs.
    let mut j = crate::bench::box_job_pml(49, 10, 6);
    j.label = "cpml box 49".into();
    check(&j, 2);
}

/// A box whose E rows cross `count` dielectrics (one per x cell, cycling),
/// so the per-cell material lookups run with tables of every size class.
fn many_materials(count: usize) -> SimJob {
    let n = 21;
    let mut j = crate::bench::box_job_pml(n, 10, 3);
    j.materials.truncate(1);
    for m in 0..count {
        j.materials.push(Material { name: format!("d{m}"), eps_r: 1.5 + 0.1 * m as f64, sigma: 0.001 * m as f64, mu_r: 1.0, pec: m % 7 == 3, poles: vec![] });
    }
    let mut mat = vec![0u8; j.mesh.cells()];
    for k in 4..17 {
        for jj in 2..19 {
            for i in 0..n {
                mat[j.mesh.idx(i, jj, k)] = if jj == 9 { 0 } else { 1 + (i % count) as u8 };
            }
        }
    }
    j.cell_mat = mat.into();
    j.label = format!("{count} materials");
    j
}

#[test]
fn rows_of_many_materials_match_reference_bits() {
    // Tables of < 8, 8-16, 16-32 and > 32 entries (edge averages add more).
    for count in [3, 6, 12, 40] {
        let j = many_materials(count);
        let op = Operator::new(&j).unwrap();
        assert!(op.ca.len() > count, "{}: {} table entries", j.label, op.ca.len());
        check(&j, 3);
    }
}

#[test]
fn shipped_iris_filter_on_one_y_cell_matches_reference_bits() {
    // The GA's workload: 2.5D (one cell along y), graded x rows, CPML along z, TE10 ports.
    let d = crate::bench::workloads::shipped_iris_filter().unwrap();
    let mut j = d.jobs(&d.midpoint_values(), &[0], None).unwrap().remove(0);
    j.label = "iris filter".into();
    check(&j, 3);
}

#[test]
fn irregular_x_cpml_steps_with_the_reference() {
    // A stretched cell between unstretched ones: the plan's runs would not be
    // the reference's split, so the plan falls back to the reference step.
    let j = crate::bench::box_job_pml(16, 10, 4);
    let mut op = Operator::new(&j).unwrap();
    let cp = op.pml[0].as_mut().unwrap();
    cp.e_b[8] = 0.5;
    cp.e_c[8] = -0.25;
    let plan = SimdPlan::with(&op, 1, Level::detect(), 0);
    assert!(plan.reference);
    let mut r = random_fields(&op, 9);
    let mut f = random_fields(&op, 9);
    for _ in 0..3 {
        cpu::fdtd_step(&op, &mut r);
        step(&op, &plan, &mut f);
    }
    same_bits(&r, &f).unwrap();
    let regular = SimdPlan::with(&Operator::new(&j).unwrap(), 1, Level::detect(), 0);
    assert!(!regular.reference);
}


#[test]
fn pmc_ghosts_of_rows_without_updates_match_reference_bits() {
    // PMC faces beside PEC ones: rows on the PEC faces update no component,
    // yet their H ghosts on the PMC faces are mirrored as in the reference.
    for (bnd, pml) in [
        ([[Boundary::Pmc; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]], [[0, 0], [0, 0], [3, 3]]),
        ([[Boundary::Absorbing; 2], [Boundary::Pmc; 2], [Boundary::Pec; 2]], [[4, 3], [0, 0], [0, 0]]),
        ([[Boundary::Pec; 2], [Boundary::Pec, Boundary::Pmc], [Boundary::Pmc, Boundary::Pec]], [[0, 0], [0, 0], [0, 0]]),
    ] {
        let mut j = empty_job([12, 9, 10], [1e-3; 3], bnd, pml, (1e9, 10e9));
        j.label = format!("pmc/pec {bnd:?}");
        check(&j, 3);
    }
}
