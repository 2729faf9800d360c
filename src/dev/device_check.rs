//! `emvolve-lab device-check`: the CUDA backend against the CPU reference engine.
//!
//! Everything here takes plain [`SimJob`]s, so any design can be added to
//! the check lists (`random_jobs`, `zero_jobs`) or passed to [`compare`].
//! Two kinds of runs:
//! - from random-looking initial fields (every mode excited, every field
//!   position compared after N steps: E, H, port traces);
//! - from zero fields on the benchmark workloads and jobs that end by energy
//!   decay or blow up (port traces, S-parameters, steps, end reason, errors).
//!
//! Each is run for several kernel variants (fused/split scheme, tiles,
//! z-chunks); the fused runs poison their write-only field set first.

use clap::Args;

use super::compare::{self, end_name, fdtd_reference, Diff, FdtdReference, FDTD_RULES};
use crate::engine::cuda::batch::{Origin, Tile};
use crate::engine::cuda::{self, CudaBackend, CudaOptions, JobRun, PathChoice, Scheme};
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::operator::PEC_INDEX;
use crate::engine::fdtd::Operator;
use crate::job::*;

#[derive(Args, Debug)]
pub struct DeviceCheckArgs {
    /// GPUs to use (ordinals, comma separated); jobs are spread over them.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub gpus: Vec<usize>,
    /// Only compile the kernels (every tile) and print the NVRTC log and resource use.
    #[arg(long)]
    pub compile_only: bool,
    /// Tile variants of the fused kernel to check (TXxTY).
    #[arg(long, value_delimiter = ',', default_value = "32x8,32x16")]
    pub tiles: Vec<String>,
    /// Largest accepted relative difference.
    #[arg(long, default_value_t = 1e-3)]
    pub tol: f64,
    /// Steps of the random-field runs.
    #[arg(long, default_value_t = 150)]
    pub steps: usize,
    /// Which engines to check on the GPU.
    #[arg(long, value_enum, default_value_t = CheckEngine::All)]
    pub engine: CheckEngine,
    /// TLM launch shapes to check (THREADSxNODES per thread).
    #[arg(long, value_delimiter = ',', default_value = "256x2,128x4")]
    pub tlm_shapes: Vec<String>,
    /// Shipped designs compared through the whole seam (S-parameters, CPU vs CUDA).
    #[arg(long, value_delimiter = ',', default_value = "designs/wr28_iris_filter.ron,designs/patch_2g4.ron,designs/microstrip_lowpass.ron")]
    pub designs: Vec<std::path::PathBuf>,
    /// Only the field DFT monitor section (after the kernel compilation report).
    #[arg(long)]
    pub monitors_only: bool,
    /// Also compare the full-size benchmark workloads (256^3 box, 64 x 300k-cell
    /// population) for this many steps (0: skip).
    #[arg(long, default_value_t = 0)]
    pub full_steps: usize,
    /// Only the on-chip path (kernels/fdtd_onchip.cu): its compilation report,
    /// its section (random, small random and zero jobs, with and without final
    /// fields, 1024 and 256 threads) and the designs of --designs on it.
    #[arg(long)]
    pub onchip_only: bool,
    /// Also compare this many random candidates of each design of --designs
    /// (a GA generation's first draw), CPU against CUDA on the default path.
    #[arg(long, default_value_t = 0)]
    pub generation: usize,
}

/// Engines `device-check` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckEngine {
    Fdtd,
    Tlm,
    All,
}

/// A job with an empty domain (vacuum and PEC materials, no ports).
pub fn base_job(label: &str, n: [usize; 3], d: f64, bnd: [[Boundary; 2]; 3], pml: [[usize; 2]; 3], band: (f64, f64)) -> SimJob {
    let mesh = Mesh::uniform(n, [d; 3], [0.0; 3]);
    let cells = mesh.cells();
    SimJob {
        label: label.into(),
        engine: EngineKind::Fdtd,
        mesh,
        boundaries: bnd,
        pml,
        materials: vec![
            Material::vacuum(),
            Material::pec(),
            Material { name: "lossy".into(), eps_r: 3.0, sigma: 0.05, mu_r: 1.0, pec: false, poles: vec![] },
        ],
        cell_mat: vec![0; cells].into(),
        conformal: Default::default(),
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(band.0, band.1),
        freqs: (0..41).map(|i| band.0 + (band.1 - band.0) * i as f64 / 40.0).collect(),
        stop: StopRule::default(),
        courant: 0.99,
    }
}

/// Fill cells `lo..hi` with material `m`.
fn fill(job: &mut SimJob, lo: [usize; 3], hi: [usize; 3], m: u8) {
    for k in lo[2]..hi[2] {
        for j in lo[1]..hi[1] {
            for i in lo[0]..hi[0] {
                let p = job.mesh.idx(i, j, k);
                std::sync::Arc::make_mut(&mut job.cell_mat)[p] = m;
            }
        }
    }
}

fn lumped(name: &str, axis: Axis, start: [usize; 3], len: usize) -> Port {
    Port { name: name.into(), kind: PortKind::Lumped { axis, start, len, r_ohm: 50.0 } }
}

/// Jobs for the random-initial-field comparison: every boundary kind on
/// every axis, CPML on one axis / all axes / asymmetric, PMC everywhere,
/// lumped and TE10 ports, dielectric and PEC. `small` shrinks them (for the
/// CPU emulation of the kernels). Each runs exactly `steps` steps.
pub fn random_jobs(small: bool, steps: usize) -> Vec<SimJob> {
    use Boundary::*;
    let s = |a: usize, b: usize| if small { b } else { a };
    let mut v = vec![];

    let mut j = base_job("cavity pec + lossy block", [s(40, 14), s(30, 10), s(20, 9)], 0.5e-3, [[Pec; 2]; 3], [[0; 2]; 3], (10e9, 20e9));
    fill(&mut j, [3, 2, 2], [s(17, 7), s(12, 6), s(9, 5)], 2);
    v.push(j);

    let nz = s(60, 30);
    let mut j = base_job("pmc x, pec y, cpml z, lumped", [s(12, 8), s(10, 8), nz], 1e-3, [[Pmc; 2], [Pec; 2], [Absorbing; 2]], [[0, 0], [0, 0], [s(8, 5), s(8, 5)]], (2e9, 12e9));
    fill(&mut j, [0, 0, nz / 2], [s(12, 8), s(4, 3), nz / 2 + 6], 2);
    j.ports = vec![lumped("p", Axis::Y, [s(6, 4), 4, nz / 3], 3)];
    v.push(j);

    let mut j = crate::bench::box_job(s(36, 16), steps);
    j.label = format!("box {}^3, cpml all faces", j.mesh.n()[0]);
    v.push(j);

    for mut j in crate::bench::population_jobs(1, s(25_000, 8_000), steps) {
        j.label = "wr28 iris, 2 TE10 ports".into();
        v.push(j);
    }
    let iris = v.len() - 1;

    // n + 1 a multiple of the tile: the high ghost layer sits alone in the last tile.
    let mut j = base_job("pmc all faces, lumped", [s(31, 7), s(15, 7), s(16, 9)], 1e-3, [[Pmc; 2]; 3], [[0; 2]; 3], (2e9, 12e9));
    j.ports = vec![lumped("p", Axis::Z, [3, 3, 2], 2)];
    v.push(j);

    let mut j = base_job("cpml x (7|5), pmc y, pec z", [s(50, 26), s(10, 6), s(12, 7)], 1e-3, [[Absorbing; 2], [Pmc; 2], [Pec; 2]], [[s(7, 4), s(5, 3)], [0, 0], [0, 0]], (3e9, 12e9));
    fill(&mut j, [s(20, 10), 0, 0], [s(30, 15), s(10, 6), 3], 1);
    j.ports = vec![lumped("p", Axis::Z, [s(14, 7), 3, 3], 2)];
    v.push(j);

    // A guide-like box with a lumped port along z over 6 planes (sources and
    // taps on several planes: the two-step pass's chunks cut through them).
    let nz = s(40, 28);
    let mut j = base_job("pec x y, cpml z, lumped along z", [s(14, 10), s(12, 8), nz], 1e-3, [[Pec; 2], [Pec; 2], [Absorbing; 2]], [[0, 0], [0, 0], [s(8, 5), s(8, 5)]], (3e9, 12e9));
    fill(&mut j, [0, 0, nz / 2 + 4], [s(5, 3), s(12, 8), nz / 2 + 6], 2);
    j.ports = vec![lumped("p", Axis::Z, [s(7, 5), s(6, 4), nz / 2 - 4], 6)];
    v.push(j);

    // 2D: one cell along z between PEC faces (E_z, H_x, H_y only), CPML along x and y,
    // a dielectric block and a lumped port along z.
    let mut j = base_job("2D: pec z, cpml x y, lumped", [s(30, 14), s(24, 12), 1], 1e-3, [[Absorbing; 2], [Absorbing; 2], [Pec; 2]], [[s(6, 4), s(5, 3)], [s(5, 3), s(6, 4)], [0, 0]], (3e9, 12e9));
    fill(&mut j, [s(18, 9), s(4, 2), 0], [s(24, 11), s(10, 5), 1], 2);
    j.ports = vec![lumped("p", Axis::Z, [s(15, 7), s(12, 6), 0], 1)];
    v.push(j);

    // Wide (the tiled two-step pass): CPML on every face, a dielectric block and
    // a lumped port along y across the tiles' owned boundaries in x and y (the
    // small plane, 42 x 26 padded, takes 2 x 2 tiles split at x = 21, y = 13).
    let mut j = base_job("wide: cpml all faces, lumped across tiles", [s(70, 40), s(40, 24), s(24, 6)], 1e-3, [[Absorbing; 2]; 3], [[s(8, 4), s(8, 4)], [s(8, 4), s(8, 4)], [s(6, 2), s(6, 2)]], (3e9, 12e9));
    fill(&mut j, [s(30, 17), s(15, 9), 0], [s(40, 24), s(26, 15), s(12, 3)], 2);
    j.ports = vec![lumped("p", Axis::Y, [s(34, 20), s(18, 10), s(12, 3)], 4)];
    v.push(j);
    let wide = v.len() - 1;
    // Wide with PEC walls: 3 x 3 tiles (the small plane, 64 x 30 padded), so that the
    // middle ones away from the lumped port's planes take the lean form of the pass.
    let mut j = base_job("wide: pec, dielectric, lean interior", [s(90, 62), s(60, 28), s(40, 16)], 1e-3, [[Pec; 2]; 3], [[0; 2]; 3], (3e9, 12e9));
    fill(&mut j, [s(20, 15), s(20, 8), s(10, 4)], [s(60, 40), s(45, 20), s(30, 12)], 2);
    j.ports = vec![lumped("p", Axis::Z, [s(10, 5), s(10, 5), s(4, 2)], 2)];
    v.push(j);

    // Graded meshes: per-line spacings in every update, port and CPML term.
    let mut j = graded(v[wide].clone(), 1.3);
    j.label = "graded: wide, cpml all faces".into();
    v.push(j);
    let mut j = graded(v[wide + 1].clone(), 1.3);
    j.label = "graded: wide, pec, lean interior".into();
    v.push(j);
    let mut j = graded(v[1].clone(), 1.4);
    j.label = "graded: pmc x, pec y, cpml z, lumped".into();
    v.push(j);
    let mut j = graded(v[iris].clone(), 1.3);
    j.label = "graded: wr28 iris, 2 TE10 ports".into();
    v.push(j);
    // 2.5D (one cell along y, as the shipped filter's GA runs it): E_y, H_x, H_z only.
    let mut j = flat(v[iris].clone());
    j.label = "2.5D wr28 iris, 2 TE10 ports".into();
    v.push(j.clone());
    let mut j = graded(j, 1.3);
    j.label = "graded: 2.5D wr28 iris".into();
    v.push(j);

    // Edge currents (kernel fdtd_edges): a medium with Debye, Lorentz and Drude
    // poles partly filling the line, a series R-L-C and a parallel R-C load.
    // Not in the small set (the kernel emulator has no edge kernel).
    if !small {
        let mut j = v[1].clone();
        j.label = "edge currents: poles, loads, cpml z".into();
        let tau = 2.0 * std::f64::consts::PI;
        j.materials[2] = Material {
            name: "dispersive".into(),
            eps_r: 2.0,
            sigma: 0.01,
            mu_r: 1.0,
            pec: false,
            poles: vec![
                Pole::Debye { delta_eps: 2.0, tau: 1.0 / (tau * 6e9) },
                Pole::Lorentz { delta_eps: 0.5, omega0: tau * 20e9, delta: tau * 2e9 },
                Pole::Drude { omega_p: tau * 3e9, gamma: tau * 1e9 },
            ],
        };
        j.loads = vec![
            Load { name: "rlc".into(), axis: Axis::Y, start: [3, 2, nz / 3 + 4], len: 2, r: Some(20.0), l: Some(2e-9), c: Some(1e-12), topology: Topology::Series },
            Load { name: "rc".into(), axis: Axis::X, start: [2, 2, 32], len: 3, r: Some(100.0), l: None, c: Some(0.5e-12), topology: Topology::Parallel },
        ];
        v.push(j.clone());
        let mut j = graded(j, 1.3);
        j.label = "graded: edge currents".into();
        v.push(j);

        // Lossy metal faces (kernel fdtd_surface): copper walls and iris of the guide;
        // a thin copper sheet, rough gold walls, PMC faces (mirrored ghosts), CPML z,
        // and edge currents on the same job (the surface pass runs first).
        let metal = |name: &str, sigma: f64, thickness: Option<f64>, roughness: f64| Conductor { name: name.into(), sigma, thickness, roughness };
        let mut j = v[iris].clone();
        j.label = "surface: copper walls and iris".into();
        let pec = j.materials.iter().position(|m| m.pec).expect("the iris is PEC") as u8;
        j.surfaces = Surfaces { conductors: vec![metal("copper", 5.8e7, None, 0.0)], materials: vec![(pec, 0)], walls: [[Some(0); 2]; 3], ..Default::default() };
        v.push(j.clone());
        let mut j = graded(flat(j), 1.3);
        j.label = "graded: 2.5D copper wr28 iris".into();
        v.push(j);
        let mut j = v[v.len() - 4].clone();
        j.label = "surface: sheet, rough walls, pmc x, cpml z, edge currents".into();
        j.sheets.push(Sheet { normal: Axis::Z, plane: 2 * nz / 3, lo: [2, 2], hi: [8, 6] });
        j.surfaces = Surfaces {
            conductors: vec![metal("copper 35 um", 5.8e7, Some(35e-6), 0.0), metal("rough gold", 4.1e7, None, 1e-6)],
            sheets: vec![(0, 0)],
            walls: [[None; 2], [Some(1); 2], [None; 2]],
            ..Default::default()
        };
        v.push(j);
    }

    // Conformal metal (kernels fdtd_conformal, _e, _rec): a cylinder, a
    // slanted prism and a disc sheet off the mesh lines, PMC y, CPML z (the
    // faces near it left out), graded cells.
    v.push(conformal_job(small));

    for j in &mut v {
        j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 50, max_time: None };
    }
    v
}

/// The conformal-metal job of [`random_jobs`], from a design file.
pub fn conformal_job(small: bool) -> SimJob {
    let (cell, zhi) = if small { (1.0, 9.0) } else { (0.5, 12.0) };
    let text = format!(
        r#"Design(
            name: "conformal", units: Millimetre,
            geometry: [
                Cylinder(axis: Z, center: (1.3, 0.4, 0), radius: 2.2, from: 1.2, to: 4.4),
                Prism(axis: X, points: [(-3.1, 1.3), (1.7, 0.6), (0.2, 4.9)], from: -4.6, to: -1.3),
                Disc(normal: Z, at: 5.6, center: (-0.7, 1.1), radius: 1.9),
            ],
            domain: (x: (-5, 5), y: (-4, 4), z: (0, {zhi})),
            boundaries: (x: Pec, y: Pmc, z: Faces(Pec, Absorbing)),
            ports: [Lumped(name: "p", from: (3.8, -3, 0), to: (3.8, -3, 1))],
            band: (start: 8e9, stop: 14e9, points: 11),
            engine: Fdtd(cell: {cell}, pml: 5),
            goals: [Goal(s: (1, 1), band: (10e9, 11e9), below_db: -10.0)],
        )"#
    );
    let d = crate::design::Design::parse(&text, "conformal.ron").unwrap_or_else(|e| panic!("{e}"));
    let mut j = d.jobs(&d.midpoint_values(), &[0], None).unwrap_or_else(|e| panic!("{e}")).remove(0);
    assert!(!j.conformal.faces.is_empty(), "the conformal job has no cut faces");
    j.label = "conformal: cylinder, prism, disc, pmc y, cpml z".into();
    j
}

/// `job` on one cell along y (its first layer of materials), like a design
/// with `invariant: Y`: a guide's TE10 field does not vary along its narrow side.
pub fn flat(mut job: SimJob) -> SimJob {
    let m = job.mesh.clone();
    let n = m.n();
    let ly = m.lines(1);
    let lines = [m.lines(0).to_vec(), vec![ly[0], ly[n[1]]], m.lines(2).to_vec()];
    job.mesh = Mesh::from_lines(lines).unwrap_or_else(|e| panic!("flat lines of {}: {e}", job.label));
    let cm: Vec<u8> = (0..n[2]).flat_map(|k| (0..n[0]).map(move |i| (i, k))).map(|(i, k)| job.cell_mat[m.idx(i, 0, k)]).collect();
    job.cell_mat = cm.into();
    job
}

/// `job` on lines graded along every axis: inside the padding the cells keep
/// their size (a CPML layer's cells are uniform), between them the cells grow
/// smoothly from 1 to `ratio` times their smallest and back, over the same length.
pub fn graded(mut job: SimJob, ratio: f64) -> SimJob {
    let lines = std::array::from_fn(|a| {
        let m = &job.mesh;
        let (n, l) = (m.n()[a], m.lines(a));
        let [lo, hi] = job.pml[a];
        let inner = n - lo - hi;
        let (x0, x1) = (l[lo], l[n - hi]);
        let w: Vec<f64> = (0..inner).map(|i| 1.0 + (ratio - 1.0) * (std::f64::consts::PI * (i as f64 + 0.5) / inner as f64).sin()).collect();
        let tot: f64 = w.iter().sum();
        let mut out: Vec<f64> = l[..=lo].to_vec();
        let mut x = x0;
        for wi in &w[..inner.saturating_sub(1)] {
            x += wi * (x1 - x0) / tot;
            out.push(x);
        }
        if inner > 0 {
            out.push(x1);
        }
        out.extend_from_slice(&l[n - hi + 1..]);
        out
    });
    job.mesh = Mesh::from_lines(lines).unwrap_or_else(|e| panic!("graded lines of {}: {e}", job.label));
    job
}

/// Jobs run from zero fields: the benchmark workloads (small), a guide that
/// ends by energy decay, a matched lumped port (PEC sheets) ending by decay,
/// and an unstable job that must fail with the same step and location.
pub fn zero_jobs(small: bool) -> Vec<SimJob> {
    let mut v = vec![];
    v.push(crate::bench::box_job(if small { 16 } else { 40 }, if small { 60 } else { 300 }));
    let pop = crate::bench::population_jobs(if small { 2 } else { 3 }, if small { 8_000 } else { 20_000 }, if small { 80 } else { 500 });
    let mut f = flat(pop[0].clone());
    f.label = format!("2.5D {}", f.label);
    v.extend(pop);
    v.push(f);
    if !small {
        for mut g in crate::bench::population_jobs(1, 20_000, 1) {
            g.label = "wr28 iris, -30 dB decay".into();
            g.stop = StopRule { decay_db: -30.0, max_steps: 20_000, check_every: 64, max_time: None };
            v.push(g);
        }
        let mut m = base_job("matched lumped port", [16, 16, 16], 0.1e-3, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (0.05e9, 1e9));
        m.ports = vec![lumped("src", Axis::Z, [7, 8, 7], 2), lumped("load", Axis::Z, [8, 8, 7], 2)];
        for z in [7, 9] {
            m.sheets.push(Sheet { normal: Axis::Z, plane: z, lo: [7, 8], hi: [8, 8] });
        }
        v.push(m);
    }
    let mut bad = base_job("unstable (eps < 0)", [8, 8, 8], 1e-3, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (1e9, 2e9));
    bad.ports = vec![lumped("p", Axis::Z, [4, 4, 3], 2)];
    bad.materials.push(Material { name: "bad".into(), eps_r: -1e-3, sigma: 0.0, mu_r: 1.0, pec: false, poles: vec![] });
    bad.cell_mat_mut().iter_mut().for_each(|m| *m = 3);
    bad.stop.max_steps = if small { 200 } else { 4000 };
    v.push(bad);
    v
}

/// Random-looking fields: E on every non-PEC edge, H on every position of its
/// update range (ghosts and PEC edges stay zero), psi zero.
pub fn random_fields(op: &Operator, seed: u64) -> Fields {
    let mut f = Fields::new(op);
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(1);
    let mut rnd = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 33) as f64 / (1u64 << 31) as f64 - 0.5) as f32
    };
    for c in 0..3 {
        for p in 0..op.len {
            if op.mat[c][p] != PEC_INDEX {
                f.e[c][p] = rnd();
            }
        }
        let mut r = op.n;
        r[c] += 1;
        for k in 0..r[2] {
            for j in 0..r[1] {
                for i in 0..r[0] {
                    f.h[c][op.at(i as isize, j as isize, k as isize)] = rnd();
                }
            }
        }
    }
    f
}

/// Compare one GPU result with the CPU result of the same job (and fields, when both have them).
pub fn diff(job: &SimJob, cpu: &Result<SimOutput, SimFailure>, cpu_f: Option<&Fields>, gpu: &Result<JobRun, SimFailure>) -> Diff {
    let mut out = compare::diff(job, cpu.as_ref(), gpu.as_ref().map(|g| &g.out), FDTD_RULES);
    if let (Ok(_), Ok(g)) = (cpu, gpu) {
        if let (Some(cf), Some(gf)) = (cpu_f, g.fields.as_ref()) {
            let (e, h) = compare::fields_diff(cf, gf);
            out.e = Some(e);
            out.h = Some(h);
        }
    }
    out
}

fn fmt_opt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1e}"))
}

/// Print one line per job; returns the worst difference and whether anything mismatched.
fn report(tag: &str, jobs: &[SimJob], cpu: &[FdtdReference], gpu: &[Result<JobRun, SimFailure>], tol: f64) -> (f64, bool) {
    let mut worst = 0.0f64;
    let mut bad = false;
    for (k, j) in jobs.iter().enumerate() {
        let d = diff(j, &cpu[k].0, cpu[k].1.as_ref(), &gpu[k]);
        let w = d.worst();
        worst = worst.max(w);
        let ok = d.ok(tol);
        bad |= !ok;
        let steps = match (&cpu[k].0, &gpu[k]) {
            (Ok(c), Ok(g)) => format!("{}/{} {}", c.steps, g.out.steps, end_name(&g.out.ended)),
            (Err(e), Err(_)) => format!("both fail: {e}"),
            _ => "differ".into(),
        };
        println!(
            "{tag} {:<34} steps {:<22} E {:>7} H {:>7} V {:>7.1e} I {:>7.1e} S {:>7}{} {}{}",
            j.label,
            steps,
            fmt_opt(d.e),
            fmt_opt(d.h),
            d.v,
            d.i,
            fmt_opt(d.s),
            d.m.map_or(String::new(), |m| format!(" DFT {m:>7.1e}")),
            if ok { "ok" } else { "FAIL" },
            d.mismatch.map(|m| format!(" ({m})")).unwrap_or_default()
        );
    }
    (worst, bad)
}

/// Random initial fields for `jobs`, job k's from seed `seed + k`.
fn random_inits(jobs: &[SimJob], seed: u64) -> anyhow::Result<Vec<Fields>> {
    jobs.iter()
        .enumerate()
        .map(|(k, j)| Operator::new(j).map(|op| random_fields(&op, seed + k as u64)).map_err(|e| anyhow::anyhow!("{}: {e}", j.label)))
        .collect()
}

/// The check's random-field jobs (with their initial fields) and zero-field
/// jobs, each with its CPU reference.
struct Cases {
    rjobs: Vec<SimJob>,
    init: Vec<Fields>,
    rcpu: Vec<FdtdReference>,
    zjobs: Vec<SimJob>,
    zcpu: Vec<FdtdReference>,
}

fn cases(steps: usize) -> anyhow::Result<Cases> {
    let rjobs = random_jobs(false, steps);
    let init = random_inits(&rjobs, 1000)?;
    let zjobs = zero_jobs(false);
    let t = std::time::Instant::now();
    let rcpu = fdtd_reference(&rjobs, Some(&init));
    let zcpu = fdtd_reference(&zjobs, None);
    println!("CPU reference: {:.1} s", t.elapsed().as_secs_f64());
    Ok(Cases { rjobs, init, rcpu, zjobs, zcpu })
}

/// Field DFT monitors (kernel `fdtd_dft`): the random-field and zero-field
/// jobs with the check monitors of [`super::monitor_check::attach`], fused
/// (graphs and kernel by kernel) and split; the monitors are compared per
/// monitor relative to its largest value, with the fields, traces and S.
fn monitor_section(be: &mut CudaBackend, tile: Tile, steps: usize, tol: f64) -> anyhow::Result<(f64, bool)> {
    let mut rjobs = random_jobs(false, steps);
    let mut zjobs = zero_jobs(false);
    rjobs.iter_mut().chain(zjobs.iter_mut()).for_each(super::monitor_check::attach);
    let init = random_inits(&rjobs, 1000)?;
    let t = std::time::Instant::now();
    let rcpu = fdtd_reference(&rjobs, Some(&init));
    let zcpu = fdtd_reference(&zjobs, None);
    let samples: usize = rjobs.iter().chain(&zjobs).flat_map(|j| &j.monitors).map(|m| match m {
        Monitor::FieldDft { lo, hi, .. } | Monitor::Absorbed { lo, hi, .. } => (0..3).map(|a| hi[a] - lo[a] + 1).product::<usize>(),
    }).sum();
    println!("monitors: CPU reference with 4 check monitors a job (3 field DFTs, 1 absorbed power) ({samples} monitor nodes in all): {:.1} s", t.elapsed().as_secs_f64());
    let (mut worst, mut bad) = (0.0f64, false);
    for (scheme, graphs) in [(Scheme::Fused, true), (Scheme::Fused, false), (Scheme::Split, true)] {
        be.set_options(CudaOptions { scheme, tile, graphs, poison: scheme == Scheme::Fused, ..Default::default() })?;
        let tag = format!("[monitors {} {tile}{}]", scheme.name(), if graphs { "" } else { " no graphs" });
        let t = std::time::Instant::now();
        let g = be.run_jobs(&rjobs, Some(&init), true)?;
        let (w, b) = report(&format!("{tag} random"), &rjobs, &rcpu, &g, tol);
        worst = worst.max(w);
        bad |= b;
        let g = be.run_jobs(&zjobs, None, true)?;
        let (w, b) = report(&format!("{tag} zero  "), &zjobs, &zcpu, &g, tol);
        worst = worst.max(w);
        bad |= b;
        println!("{tag} both batches on the device: {:.2} s", t.elapsed().as_secs_f64());
        // Every monitored job that ran reports its monitors.
        bad |= g.iter().flatten().any(|r| r.out.monitors.len() != 4);
    }
    Ok((worst, bad))
}

/// The on-chip path (kernels/fdtd_onchip.cu): every design that fits a block's
/// shared memory on-chip, the others streaming; the small variants of the random
/// jobs fit. With final fields (a launch ends at every energy check) and without
/// (a launch spans several checks; traces, steps and S compared).
fn onchip_section(be: &mut CudaBackend, tile: Tile, steps: usize, tol: f64, c: &Cases) -> anyhow::Result<(f64, bool)> {
    let sjobs = random_jobs(true, steps);
    let sinit = random_inits(&sjobs, 2000)?;
    let scpu = fdtd_reference(&sjobs, Some(&sinit));
    let (mut worst, mut bad) = (0.0f64, false);
    for threads in [1024, 256] {
        for fields in [true, false] {
            be.set_options(CudaOptions { tile, path: PathChoice::Auto, onchip_threads: threads, trace_chunk: 100, ..Default::default() })?;
            for (what, jobs, init, cpu) in [("small random", &sjobs[..], Some(&sinit[..]), &scpu[..]), ("random", &c.rjobs[..], Some(&c.init[..]), &c.rcpu[..]), ("zero  ", &c.zjobs[..], None, &c.zcpu[..])] {
                let g = be.run_jobs(jobs, init, fields)?;
                let st = be.last_stats();
                let tag = format!("[onchip {threads}{}]", if fields { "" } else { " no fields" });
                let (w, b) = report(&format!("{tag} {what}"), jobs, cpu, &g, tol);
                println!("  {tag} {what}: {} designs on-chip, {} streaming", st.onchip_designs, st.streaming_designs);
                worst = worst.max(w);
                bad |= b || st.onchip_designs == 0 && what == "small random";
            }
        }
    }
    Ok((worst, bad))
}

/// `device-check --onchip-only`: the on-chip kernel's compilation report, its
/// section, and the designs of --designs through the user's path on it (and
/// `--generation` random candidates of each).
fn onchip_only(be: &mut CudaBackend, a: &DeviceCheckArgs, tile: Tile) -> anyhow::Result<i32> {
    for threads in [1024, 512, 256] {
        be.set_options(CudaOptions { tile, onchip_threads: threads, ..Default::default() })?;
        match be.onchip_compile_report() {
            Ok(r) => print!("{r}"),
            Err(e) => {
                println!("on-chip kernel compilation FAILED ({threads} threads):\n{e}");
                return Ok(2);
            }
        }
    }
    if a.compile_only {
        return Ok(0);
    }
    let (worst, mut bad) = onchip_section(be, tile, a.steps, a.tol, &cases(a.steps)?)?;
    println!("device-check on-chip {}: worst relative CPU/CUDA difference {worst:.2e} (tolerance {:.0e})", if bad { "FAIL" } else { "PASS" }, a.tol);
    for f in &a.designs {
        for path in [PathChoice::Streaming, PathChoice::Auto] {
            be.set_options(CudaOptions { tile, path, ..Default::default() })?;
            println!("[design path {}]", path.name());
            bad |= super::device_designs::check(std::slice::from_ref(f), &[None], &*be, a.tol)?;
            let st = be.last_stats();
            println!("  path {}: {} designs on-chip, {} streaming", path.name(), st.onchip_designs, st.streaming_designs);
        }
        if a.generation > 0 {
            be.set_options(CudaOptions { tile, ..Default::default() })?;
            bad |= super::device_designs::check_generation(f, a.generation, None, &*be, a.tol)?;
        }
    }
    println!("device-check --onchip-only: {}", if bad { "FAIL" } else { "PASS" });
    Ok(if bad { 1 } else { 0 })
}

pub fn run(a: DeviceCheckArgs) -> anyhow::Result<i32> {
    if !cuda::available() {
        anyhow::bail!("CUDA is not available: {}", cuda::unavailable_reason());
    }
    let tiles: Vec<Tile> = a.tiles.iter().map(|t| Tile::parse(t)).collect::<Result<_, _>>().map_err(|e| anyhow::anyhow!(e))?;
    // tiles[0] and gpus[0] below are safe after these.
    anyhow::ensure!(!tiles.is_empty(), "--tiles: give at least one tile");
    anyhow::ensure!(!a.gpus.is_empty(), "--gpus: give at least one device");
    let mut be = CudaBackend::new(&a.gpus)?;
    for d in be.devices() {
        println!("device: {d}");
    }
    // --- TLM on CUDA (dev/tlm_check.rs)
    let mut tlm_bad = false;
    if a.engine != CheckEngine::Fdtd {
        let shapes: Vec<crate::engine::cuda::tlm::TlmConfig> =
            a.tlm_shapes.iter().map(|t| crate::engine::cuda::tlm::TlmConfig::parse(t)).collect::<Result<_, _>>().map_err(|e| anyhow::anyhow!(e))?;
        if a.compile_only {
            for &c in &shapes {
                match be.tlm_compile_report(c) {
                    Ok(r) => print!("{r}"),
                    Err(e) => {
                        println!("TLM kernel compilation FAILED for {c}:\n{e}");
                        return Ok(2);
                    }
                }
            }
            for t in super::tlm_check::ONCHIP_THREADS {
                match be.tlm_onchip_compile_report(t) {
                    Ok(r) => print!("{r}"),
                    Err(e) => {
                        println!("TLM on-chip kernel compilation FAILED for {t} threads:\n{e}");
                        return Ok(2);
                    }
                }
            }
        } else {
            tlm_bad = super::tlm_check::device_check(&mut be, &shapes, a.tol, a.generation)?.1;
        }
        if a.engine == CheckEngine::Tlm {
            return Ok(if tlm_bad { 1 } else { 0 });
        }
    }
    // --- end TLM
    if a.onchip_only {
        return onchip_only(&mut be, &a, tiles[0]);
    }
    for &t in &tiles {
        match be.compile_report(t) {
            Ok(r) => print!("{r}"),
            Err(e) => {
                println!("kernel compilation FAILED for tile {t}:\n{e}");
                return Ok(2);
            }
        }
    }
    if a.compile_only {
        return Ok(0);
    }
    if a.monitors_only {
        let (w, bad) = monitor_section(&mut be, tiles[0], a.steps, a.tol)?;
        println!("device-check monitors {}: worst relative CPU/CUDA difference {w:.2e} (tolerance {:.0e})", if bad { "FAIL" } else { "PASS" }, a.tol);
        return Ok(if bad { 1 } else { 0 });
    }
    let c = cases(a.steps)?;
    let Cases { rjobs, init, rcpu, zjobs, zcpu } = &c;
    // (scheme, tile, zchunk, CUDA graphs, lean step, tile origin, two steps a
    // pass for slim designs from this many plane positions, None: off): the
    // first tile also kernel by kernel, with every block on the general step,
    // with every design's tiles shifted (a narrower first tile; batch::Origin),
    // with every slim design two steps a pass (the 2.5D guides too: chunks of
    // 5 planes) and with every design one step a pass.
    let mut variants = vec![];
    let auto = Origin::Auto;
    let pass2 = Some(cuda::slim::MIN_PLANE);
    for (k, &t) in tiles.iter().enumerate() {
        variants.push((Scheme::Fused, t, None, true, true, auto, pass2));
        if k == 0 {
            variants.push((Scheme::Fused, t, None, false, true, auto, pass2));
            variants.push((Scheme::Fused, t, Some(5), true, true, auto, Some(0)));
            variants.push((Scheme::Fused, t, None, true, false, auto, pass2));
            variants.push((Scheme::Fused, t, None, true, true, Origin::Fixed([5, 3]), pass2));
            variants.push((Scheme::Fused, t, None, true, true, auto, None));
            variants.push((Scheme::Split, t, None, true, false, auto, pass2));
        }
    }
    let mut worst = 0.0f64;
    let mut bad = false;
    for (scheme, tile, zchunk, graphs, lean, origin, two_step) in variants {
        let slim = two_step.is_some();
        let slim_min_plane = two_step.unwrap_or(cuda::slim::MIN_PLANE);
        be.set_options(CudaOptions { scheme, tile, zchunk, graphs, lean, origin, slim, slim_min_plane, poison: scheme == Scheme::Fused, path: PathChoice::Streaming, ..Default::default() })?;
        let tag = format!(
            "[{} {} z={}{}{}{}{}]",
            scheme.name(),
            tile,
            zchunk.map_or("auto".into(), |z| z.to_string()),
            if graphs { "" } else { " no graphs" },
            if lean || scheme == Scheme::Split { "" } else { " no lean" },
            if origin == auto { String::new() } else { format!(" origin {origin}") },
            match two_step {
                _ if scheme == Scheme::Split => "",
                None => " one step a pass",
                Some(0) => " every slim design two steps a pass",
                Some(_) => "",
            }
        );
        let g = be.run_jobs(&rjobs, Some(&init), true)?;
        let st = be.last_stats();
        let (w, b) = report(&format!("{tag} random"), &rjobs, &rcpu, &g, a.tol);
        worst = worst.max(w);
        bad |= b;
        // The lean step (kernels/fdtd_lean.cuh) must have run where it was allowed.
        let share = st.lean_block_steps / st.block_steps.max(1.0);
        println!("  blocks on the lean step: {:.0} %; designs two steps a pass: {}", 100.0 * share, st.slim_designs);
        if lean && scheme == Scheme::Fused && share == 0.0 {
            println!("  no block took the lean step: FAIL");
            bad = true;
        }
        // The guides of the random jobs are slim (kernels/fdtd_slim.cuh).
        if slim && scheme == Scheme::Fused && st.slim_designs == 0 {
            println!("  no design took the two-step pass: FAIL");
            bad = true;
        }
        let g = be.run_jobs(&zjobs, None, true)?;
        let (w, b) = report(&format!("{tag} zero  "), &zjobs, &zcpu, &g, a.tol);
        worst = worst.max(w);
        bad |= b;
    }
    let (w, b) = monitor_section(&mut be, tiles[0], a.steps, a.tol)?;
    worst = worst.max(w);
    bad |= b;
    let (w, b) = onchip_section(&mut be, tiles[0], a.steps, a.tol, &c)?;
    worst = worst.max(w);
    bad |= b;
    if a.full_steps > 0 {
        let mut fj = vec![crate::bench::box_job(256, a.full_steps)];
        fj.extend(crate::bench::population_jobs(64, 300_000, a.full_steps));
        let t = std::time::Instant::now();
        let fc: Vec<_> = fdtd_reference(&fj, None).into_iter().map(|(r, _)| (r, None)).collect();
        println!("CPU reference of the full-size workloads: {:.1} s", t.elapsed().as_secs_f64());
        be.set_options(CudaOptions { tile: tiles[0], path: PathChoice::Streaming, ..Default::default() })?;
        let g = be.run_jobs(&fj, None, false)?;
        let st = be.last_stats();
        let (w, b) = report(&format!("[fused {} full]", tiles[0]), &fj, &fc, &g, a.tol);
        println!("  blocks on the lean step: {:.0} %; designs two steps a pass: {}", 100.0 * st.lean_block_steps / st.block_steps.max(1.0), st.slim_designs);
        worst = worst.max(w);
        bad |= b;
    }
    // The multi-GPU path (jobs spread over workers, one thread each), on the first GPU
    // twice when only one is given; and sub-batches under a memory cap.
    let two = if a.gpus.len() > 1 { a.gpus.clone() } else { vec![a.gpus[0], a.gpus[0]] };
    let mut be2 = CudaBackend::new(&two)?;
    be2.set_options(CudaOptions { tile: tiles[0], poison: true, path: PathChoice::Streaming, ..Default::default() })?;
    let g = be2.run_jobs(&rjobs, Some(&init), true)?;
    let (w, b) = report(&format!("[fused {} gpus {:?}] random", tiles[0], two), &rjobs, &rcpu, &g, a.tol);
    worst = worst.max(w);
    bad |= b;
    println!("  workers used: {}", be2.last_stats().gpus_used);
    let cap = zjobs.iter().filter_map(|j| Operator::new(j).ok()).map(|o| cuda::batch::device_bytes(&o)).max().unwrap_or(0) * 3 / 2;
    be.set_options(CudaOptions { tile: tiles[0], mem_limit: Some(cap), path: PathChoice::Streaming, ..Default::default() })?;
    let g = be.run_jobs(&zjobs, None, true)?;
    let st = be.last_stats();
    let (w, b) = report(&format!("[fused {} mem cap {:.1} MB]", tiles[0], cap as f64 / 1e6), &zjobs, &zcpu, &g, a.tol);
    worst = worst.max(w);
    bad |= b;
    println!("  sub-batches under the cap: {}", st.sub_batches);
    bad |= st.sub_batches < 2;
    be.set_options(CudaOptions { tile: tiles[0], mem_limit: Some(1 << 20), path: PathChoice::Streaming, ..Default::default() })?;
    match be.run_jobs(&zjobs[..1], None, false) {
        Err(e) => println!("  a design larger than the card (1 MB cap): error as expected: {e}"),
        Ok(_) => {
            println!("  a design larger than the card (1 MB cap): no error: FAIL");
            bad = true;
        }
    }
    println!(
        "device-check {}: worst relative CPU/CUDA difference {worst:.2e} (tolerance {:.0e}) over {} random-field, {} zero-field{} jobs, GPUs {:?}",
        if bad { "FAIL" } else { "PASS" },
        a.tol,
        rjobs.len(),
        zjobs.len(),
        if a.full_steps > 0 { format!(" and 65 full-size ({} steps)", a.full_steps) } else { String::new() },
        a.gpus
    );
    // Shipped designs: FDTD (their own engine) on each path and, for the iris filter, the TLM engines too.
    let mut design_bad = false;
    for f in &a.designs {
        for path in [PathChoice::Streaming, PathChoice::Auto] {
            be.set_options(CudaOptions { tile: tiles[0], path, ..Default::default() })?;
            println!("[design path {}]", path.name());
            design_bad |= super::device_designs::check(std::slice::from_ref(f), &[None], &be, a.tol)?;
            let st = be.last_stats();
            println!("  path {}: {} designs on-chip, {} streaming", path.name(), st.onchip_designs, st.streaming_designs);
        }
        be.set_options(CudaOptions { tile: tiles[0], ..Default::default() })?;
        if f.to_string_lossy().contains("wr28") {
            // The TLM engines are uniform-mesh methods: the filter as it shipped on a/28.
            let uniform = std::path::PathBuf::from("tests/fixtures/uniform/wr28_iris_filter.ron");
            let engines = [Some(crate::job::EngineKind::Tlm2d), Some(crate::job::EngineKind::Tlm)];
            design_bad |= super::device_designs::check(std::slice::from_ref(&uniform), &engines, &be, a.tol)?;
        }
    }
    if a.generation > 0 {
        for f in &a.designs {
            be.set_options(CudaOptions { tile: tiles[0], ..Default::default() })?;
            design_bad |= super::device_designs::check_generation(f, a.generation, None, &be, a.tol)?;
        }
    }
    println!("shipped designs: {}", if design_bad { "FAIL" } else { "PASS" });
    Ok(if bad || tlm_bad || design_bad { 1 } else { 0 })
}
