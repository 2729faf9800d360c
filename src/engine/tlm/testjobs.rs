//! Test helper: hand-built jobs (PEC boxes, WR-28 guides) and small utilities.

use crate::job::*;

/// An empty vacuum box of `n` cubic cells of size `d`, PEC on every face, no ports.
pub fn pec_box(n: [usize; 3], d: f64) -> SimJob {
    SimJob {
        label: "test box".into(),
        engine: EngineKind::Tlm,
        grid: Grid { n, d: [d; 3], origin: [0.0; 3] },
        boundaries: [[Boundary::Pec; 2]; 3],
        pml: [[0; 2]; 3],
        materials: vec![Material::vacuum(), Material::pec()],
        cell_mat: vec![0; n[0] * n[1] * n[2]],
        sheets: vec![],
        ports: vec![],
        drive: 0,
        pulse: Pulse::covering(1e9, 40e9),
        freqs: vec![],
        stop: StopRule { decay_db: -200.0, max_steps: 1000, check_every: 64 },
        courant: 0.99,
    }
}

/// A lumped z-directed probe/source of resistance `r` across cells `k0..k0+len` at column (i, j).
pub fn probe(name: &str, i: usize, j: usize, k0: usize, len: usize, r: f64) -> Port {
    Port { name: name.into(), kind: PortKind::Lumped { axis: Axis::Z, start: [i, j, k0], len, r_ohm: r } }
}

/// WR-28 broad side (m).
pub const WR28_A: f64 = 7.112e-3;

/// An empty WR-28 guide along z: width a along x (`nx` cells), height a/2 along
/// y (`ny` cells; 1 for the 2D engine, then the cell is the whole height),
/// `nz` cells long including `pad` absorbing padding cells at each end, with
/// TE10 ports `port_gap` cells inside the padding, sources `src` cells behind them.
pub fn wr28(engine: EngineKind, nx: usize, ny: usize, nz: usize, pad: usize, port_gap: usize, src: usize) -> SimJob {
    let d = WR28_A / nx as f64;
    let dy = 0.5 * WR28_A / ny as f64;
    let n = [nx, ny, nz];
    let wg = |plane: usize, inward: i8| PortKind::Waveguide {
        normal: Axis::Z,
        plane,
        inward,
        e_axis: Axis::Y,
        width_axis: Axis::X,
        a: WR28_A,
        source_offset: src,
        shift_m: 0.0,
    };
    SimJob {
        label: "test wr28".into(),
        engine,
        grid: Grid { n, d: [d, dy, d], origin: [0.0; 3] },
        boundaries: [[Boundary::Pec; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]],
        pml: [[0; 2], [0; 2], [pad, pad]],
        materials: vec![Material::vacuum(), Material::pec()],
        cell_mat: vec![0; nx * ny * nz],
        sheets: vec![],
        ports: vec![
            Port { name: "p1".into(), kind: wg(pad + port_gap, 1) },
            Port { name: "p2".into(), kind: wg(nz - pad - port_gap, -1) },
        ],
        drive: 0,
        pulse: Pulse::covering(28e9, 40e9),
        freqs: (0..=16).map(|i| 30e9 + 0.5e9 * i as f64).collect(),
        stop: StopRule { decay_db: -60.0, max_steps: 40_000, check_every: 32 },
        courant: 0.99,
    }
}

/// Both drive directions of a two-port job, simulated, as S-parameters.
pub fn two_port_sparams(job: &SimJob) -> (crate::analysis::SParams, Vec<SimOutput>) {
    let mut j2 = job.clone();
    j2.drive = 1;
    let o1 = super::run_cpu(job).expect("run 1");
    let o2 = super::run_cpu(&j2).expect("run 2");
    let s = crate::analysis::SParams::from_runs(&[job, &j2], &[&o1, &o2]);
    (s, vec![o1, o2])
}
