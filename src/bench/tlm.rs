//! `emvolve bench --engine tlm`: a large 3D TLM box, a batched 3D population of
//! iris sections and a batched 2D population of the shipped iris filter, each
//! for every launch shape of the streaming kernels and (with `--paths onchip`)
//! the 2D population on the on-chip kernel per block size; on CUDA with kernel
//! Gnodes/s, bytes per node (on-chip: shared-memory bytes, modelled) and the
//! fraction of the measured copy bandwidth.

use super::table::{measure, print_table, row};
use crate::design::DesignError;
use crate::engine::cuda::tlm::TlmConfig;
use crate::engine::cuda::{self, CudaBackend, CudaOptions, PathChoice};
use crate::engine::{Backend, RunCtx, cpu::CpuBackend};
use crate::job::*;

/// An `n^3` vacuum box of 1 mm cells, PEC faces, a lumped port: every node
/// but the faces and the port is a plain node (12 links read and written,
/// 96 bytes per node per step).
pub fn box_job(n: usize, steps: usize) -> SimJob {
    let mesh = Mesh::uniform([n; 3], [1e-3; 3], [0.0; 3]);
    SimJob {
        label: format!("TLM box {n}^3"),
        engine: EngineKind::Tlm,
        cell_mat: vec![0; mesh.cells()].into(),
        conformal: Default::default(),
        mesh,
        boundaries: [[Boundary::Pec; 2]; 3],
        pml: [[0; 2]; 3],
        materials: vec![Material::vacuum()],
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![Port { name: "p1".into(), kind: PortKind::Lumped { axis: Axis::Z, start: [n / 4, n / 2, n / 2 - 1], len: 2, r_ohm: 50.0 } }],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(1e9, 10e9),
        freqs: vec![5e9],
        stop: StopRule { decay_db: -1000.0, max_steps: steps, check_every: 1 << 30, max_time: None },
        courant: 0.99,
    }
}

/// The 3D WR-28 iris sections of the benchmark on the TLM engine (modal guide
/// ends, PEC iris cells), one per drive, ending by energy decay.
/// `decay_db` is the first section's threshold; each further one asks 20 dB
/// more, so that a batch of them ends at different steps.
pub fn iris_sections(count: usize, cells: usize, steps: usize, decay_db: f64) -> Vec<SimJob> {
    let mut v = super::population_jobs(count, cells, steps);
    for (m, j) in v.iter_mut().enumerate() {
        j.engine = EngineKind::Tlm;
        j.drive = m % j.ports.len();
        j.label = format!("3D TLM {} drive {}", j.label, j.ports[j.drive].name);
        j.stop = StopRule { decay_db: decay_db - 20.0 * m as f64, max_steps: steps, check_every: 64, max_time: None };
    }
    v
}

/// `count` 2D iris filters (the shipped design, apertures varied), fixed steps.
pub fn filter_2d_population(count: usize, steps: usize) -> Result<Vec<SimJob>, DesignError> {
    let d = super::workloads::shipped_iris_filter()?;
    let mut v = vec![];
    for m in 0..count {
        let mut vals = d.midpoint_values();
        let f = (m as f64 + 0.5) / count.max(1) as f64;
        vals.insert("w1".into(), 3.0 + 1.5 * f);
        vals.insert("l2".into(), 4.5 + 1.5 * f);
        for mut j in d.jobs(&vals, &[m % 2], Some(EngineKind::Tlm2d))? {
            j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 64, max_time: None };
            v.push(j);
        }
    }
    Ok(v)
}

/// The TLM table: every workload at `s1` and `s2` steps, per launch shape on
/// CUDA (streaming kernels), and the 2D population on-chip for each of
/// `onchip_threads` when `paths` holds onchip or auto.
#[allow(clippy::too_many_arguments)]
pub fn run(n: usize, s1: usize, s2: usize, pop: usize, cells: usize, use_cuda: bool, gpus: &[usize], configs: &[TlmConfig], paths: &[String], onchip_threads: &[usize]) -> anyhow::Result<()> {
    let box_jobs = move |s: usize| vec![box_job(n, s)];
    let pop3 = move |s: usize| iris_sections(pop, cells, s, -1000.0);
    // Built once (the design's geometry), re-stepped per measurement.
    let filters = filter_2d_population(pop, 1)?;
    let pop2 = move |s: usize| -> Vec<SimJob> {
        filters
            .iter()
            .map(|j| {
                let mut j = j.clone();
                j.stop.max_steps = s;
                j
            })
            .collect()
    };
    let onchip = paths.iter().any(|p| p == "onchip" || p == "auto");
    let mut workloads: Vec<(String, Box<dyn Fn(usize) -> Vec<SimJob>>)> = vec![(format!("TLM box {n}^3, vacuum, PEC"), Box::new(box_jobs))];
    if pop > 0 {
        workloads.push((format!("TLM 3D population {pop} x {cells} nodes, TE10 ends"), Box::new(pop3)));
        workloads.push((format!("TLM 2D population {pop} x iris filter"), Box::new(pop2)));
    }
    let mut rows = vec![];
    if !use_cuda {
        let cpu = CpuBackend;
        for (name, make) in &workloads {
            let (w1, w2, u) = measure(&cpu, make.as_ref(), s1, s2)?;
            rows.push(row(name.clone(), &make(1), s1, s2, w1, w2, u));
        }
        print_table(&format!("backend: {}", cpu.name()), None, "node", "workload [threads x nodes/thread]", &rows);
        return Ok(());
    }
    if !cuda::available() {
        anyhow::bail!("--backend cuda: {}", cuda::unavailable_reason());
    }
    let mut be = CudaBackend::new(gpus)?;
    let header = format!("backend: cuda on {}", be.devices().join("; "));
    let copy = be.copy_bandwidth(0, 1 << 30, 10)?;
    for (wi, (name, make)) in workloads.iter().enumerate() {
        be.set_options(CudaOptions { path: PathChoice::Streaming, ..Default::default() })?;
        for &c in configs {
            be.set_tlm_config(c)?;
            // Warm-up: compiles the launch shape once.
            be.run(&make(2), &RunCtx::NONE)?;
            let (w1, w2, u) = measure(&be, make.as_ref(), s1, s2)?;
            let st = be.last_stats();
            let mut r = row(format!("{name} [{c}]"), &make(1), s1, s2, w1, w2, u);
            r.setup_s = Some(st.setup_s);
            r.kernel = Some(st.cell_updates / st.kernel_s / 1e9);
            r.bytes = Some(st.bytes / st.cell_updates);
            r.bw = Some(st.bytes / st.kernel_s);
            rows.push(r);
        }
        // The 2D population (the last workload) on-chip: one block per design.
        if onchip && wi == 2 {
            for &t in onchip_threads {
                be.set_options(CudaOptions { path: PathChoice::Onchip, onchip_threads: t, ..Default::default() })?;
                be.run(&make(2), &RunCtx::NONE)?;
                let (w1, w2, u) = measure(&be, make.as_ref(), s1, s2)?;
                let st = be.last_stats();
                let mut r = row(format!("{name} [on-chip, {t} threads]"), &make(1), s1, s2, w1, w2, u);
                r.setup_s = Some(st.setup_s);
                r.kernel = Some(st.cell_updates / st.kernel_s / 1e9);
                r.bytes = Some(st.smem_bytes / st.cell_updates);
                rows.push(r);
            }
        }
    }
    print_table(&header, Some(copy), "node", "workload [threads x nodes/thread]", &rows);
    Ok(())
}
