//! Benchmark workloads shared by `emvolve bench` on every backend and by the
//! device checks: one large box with CPML on all faces and a dielectric block,
//! a population of small waveguide designs with ports (the GA's real
//! workload), and the shipped iris filter.

use crate::job::*;

/// An `n^3`-cell box of 1 mm cells, 10-cell CPML on every face, a dielectric
/// block (eps_r 4.4, lossy) in the middle and a lumped port driving it.
pub fn box_job(n: usize, steps: usize) -> SimJob {
    box_job_pml(n, steps, if n >= 40 { 10 } else { n / 4 })
}

/// [`box_job`] with `pml` CPML cells on every face; 0: PEC walls instead
/// (to see what the CPML costs a kernel).
pub fn box_job_pml(n: usize, steps: usize, pml: usize) -> SimJob {
    let d = 1e-3;
    let mesh = Mesh::uniform([n; 3], [d; 3], [0.0; 3]);
    let mut cell_mat = vec![0u8; mesh.cells()];
    let (lo, hi) = (n / 3, 2 * n / 3);
    for k in lo..hi {
        for j in lo..hi {
            for i in lo..hi {
                cell_mat[mesh.idx(i, j, k)] = 1;
            }
        }
    }
    SimJob {
        label: format!("box {n}^3"),
        engine: EngineKind::Fdtd,
        mesh,
        boundaries: [[if pml > 0 { Boundary::Absorbing } else { Boundary::Pec }; 2]; 3],
        pml: [[pml; 2]; 3],
        materials: vec![Material::vacuum(), Material { name: "fr4".into(), eps_r: 4.4, sigma: 0.01, mu_r: 1.0, pec: false, poles: vec![] }],
        cell_mat: cell_mat.into(),
        conformal: Default::default(),
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![Port { name: "p1".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [n / 4, n / 2, n / 2 - 1], len: 2, r_ohm: 50.0 } }],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(1e9, 10e9),
        freqs: vec![5e9],
        // A fixed number of steps: the energy criterion would end runs at different times.
        stop: StopRule { decay_db: -1000.0, max_steps: steps, check_every: 1 << 30, max_time: None },
        courant: 0.99,
    }
}

/// `job` with the same cell counts on graded lines: cell sizes follow
/// 1 + 0.25 sin(2 pi t) of the uniform size across the interior of every
/// axis (0.75-1.25, neighbours within 1 %; CPML cells unchanged), so the per-line spacing arrays of the
/// non-uniform update are exercised at the uniform workload's cost.
pub fn graded(mut job: SimJob) -> SimJob {
    let lines = std::array::from_fn(|a| {
        let (n, x0) = (job.mesh.n()[a], job.mesh.lines(a)[0]);
        let len = job.mesh.lines(a)[n] - x0;
        // The CPML cells stay equal (as the engine requires); the interior is graded.
        let [p0, p1] = job.pml[a];
        let inner = (n - p0 - p1) as f64;
        let w: Vec<f64> = (0..n)
            .map(|i| if i < p0 || i >= n - p1 { 1.0 } else { 1.0 + 0.25 * (std::f64::consts::TAU * ((i - p0) as f64 + 0.5) / inner).sin() })
            .collect();
        let tot: f64 = w.iter().sum();
        let mut x = vec![x0];
        for wi in &w {
            x.push(x.last().unwrap() + wi * len / tot);
        }
        x[n] = x0 + len;
        x
    });
    job.mesh = Mesh::from_lines(lines).expect("graded lines of a valid uniform mesh");
    job.label = format!("{} graded", job.label);
    job
}

/// `count` WR-28 iris sections of about `cells` cells each (3D, CPML at both
/// ends, two TE10 ports), with the iris aperture varied across the batch as
/// a GA generation would.
pub fn population_jobs(count: usize, cells: usize, steps: usize) -> Vec<SimJob> {
    let a = 7.112e-3;
    let b = 3.556e-3;
    let (nx, ny) = (28usize, 14usize);
    let d = [a / nx as f64, b / ny as f64, a / nx as f64];
    let nz = (cells / (nx * ny)).max(60);
    let pml = 10;
    (0..count)
        .map(|m| {
            let mesh = Mesh::uniform([nx, ny, nz], d, [0.0; 3]);
            let mut cell_mat = vec![0u8; mesh.cells()];
            // An iris of 2 cells at mid-length, aperture 10..22 cells varying with m.
            let ap = 10 + (m * 7) % 13;
            let x0 = (nx - ap) / 2;
            for k in nz / 2..nz / 2 + 2 {
                for j in 0..ny {
                    for i in 0..nx {
                        if i < x0 || i >= x0 + ap {
                            cell_mat[mesh.idx(i, j, k)] = 1;
                        }
                    }
                }
            }
            let port = |name: &str, plane: usize, inward: i8| Port {
                name: name.into(),
                kind: PortKind::Waveguide { normal: Axis::Z, plane, inward, e_axis: Axis::Y, width_axis: Axis::X, a, source_offset: 3, shift_m: 0.0 },
            };
            SimJob {
                label: format!("iris section {m}"),
                engine: EngineKind::Fdtd,
                mesh,
                boundaries: [[Boundary::Pec; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]],
                pml: [[0, 0], [0, 0], [pml, pml]],
                materials: vec![Material::vacuum(), Material::pec()],
                cell_mat: cell_mat.into(),
                conformal: Default::default(),
                sheets: vec![],
                loads: vec![],
                surfaces: Default::default(),
                ports: vec![port("in", pml + 6, 1), port("out", nz - pml - 6, -1)],
                drive: 0,
                monitors: vec![],
                pulse: Pulse::covering(26e9, 38e9),
                freqs: (0..41).map(|i| 26e9 + 0.3e9 * i as f64).collect(),
                stop: StopRule { decay_db: -1000.0, max_steps: steps, check_every: 64, max_time: None },
                courant: 0.99,
            }
        })
        .collect()
}

/// The shipped three-cavity WR-28 iris filter, compiled in, on the uniform
/// a/28 mesh it shipped with before the automatic mesh (the TLM workloads and
/// checks use its jobs: guide ends, 2D and 3D; TLM is a uniform-mesh method).
pub fn shipped_iris_filter() -> Result<crate::design::Design, crate::design::DesignError> {
    const AUTO: &str = "engine: Fdtd(mesh: Auto(),";
    let text = include_str!("../../designs/wr28_iris_filter.ron");
    if !text.contains(AUTO) {
        return Err(crate::design::DesignError::invalid("designs/wr28_iris_filter.ron", "engine", "the shipped filter no longer says `mesh: Auto()`"));
    }
    crate::design::Design::parse(&text.replace(AUTO, "engine: Fdtd(cell: \"a/28\","), "designs/wr28_iris_filter.ron (uniform a/28)")
}
