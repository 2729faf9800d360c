//! Test helper: hand-built jobs (PEC boxes, WR-28 guides) and small utilities.

use crate::consts::C0;
use crate::job::*;

/// An empty vacuum box of `n` cubic cells of size `d`, PEC on every face, no ports.
pub fn pec_box(n: [usize; 3], d: f64) -> SimJob {
    SimJob {
        label: "test box".into(),
        engine: EngineKind::Tlm,
        mesh: Mesh::uniform(n, [d; 3], [0.0; 3]),
        boundaries: [[Boundary::Pec; 2]; 3],
        pml: [[0; 2]; 3],
        materials: vec![Material::vacuum(), Material::pec()],
        cell_mat: vec![0; n[0] * n[1] * n[2]].into(),
        conformal: Default::default(),
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(1e9, 40e9),
        freqs: vec![],
        stop: StopRule { decay_db: -200.0, max_steps: 1000, check_every: 64, max_time: None },
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
        mesh: Mesh::uniform(n, [d, dy, d], [0.0; 3]),
        boundaries: [[Boundary::Pec; 2], [Boundary::Pec; 2], [Boundary::Absorbing; 2]],
        pml: [[0; 2], [0; 2], [pad, pad]],
        materials: vec![Material::vacuum(), Material::pec()],
        cell_mat: vec![0; nx * ny * nz].into(),
        conformal: Default::default(),
        sheets: vec![],
        loads: vec![],
        surfaces: Default::default(),
        ports: vec![
            Port { name: "p1".into(), kind: wg(pad + port_gap, 1) },
            Port { name: "p2".into(), kind: wg(nz - pad - port_gap, -1) },
        ],
        drive: 0,
        monitors: vec![],
        pulse: Pulse::covering(28e9, 40e9),
        freqs: (0..=16).map(|i| 30e9 + 0.5e9 * i as f64).collect(),
        stop: StopRule { decay_db: -60.0, max_steps: 40_000, check_every: 32, max_time: None },
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

/// Cutoff frequency implied by the phase of S21 over a length `l` of guide.
pub fn cutoff_from_s21(f: f64, s21: num_complex::Complex64, l: f64) -> f64 {
    let k0 = 2.0 * std::f64::consts::PI * f / C0;
    let kc = std::f64::consts::PI / WR28_A;
    let beta = (k0 * k0 - kc * kc).sqrt();
    let ph = (s21 * num_complex::Complex64::from_polar(1.0, beta * l)).arg();
    let bs = beta - ph / l;
    C0 / (2.0 * std::f64::consts::PI) * (k0 * k0 - bs * bs).sqrt()
}

/// Empty WR-28 guide, 30-38 GHz: |S21| ~ 0 dB, tiny |S11|, TE10 cutoff from the phase of S21.
pub fn check_empty_wr28(job: &SimJob, gap: usize) {
    let (s, outs) = two_port_sparams(job);
    assert!(outs.iter().all(|o| matches!(o.ended, EndReason::EnergyDecay { .. })));
    let l = (job.mesh.n()[2] - 2 * gap) as f64 * job.mesh.d(2)[0];
    let (s11, s21, s12) = (s.db(1, 1).unwrap(), s.db(2, 1).unwrap(), s.get(1, 2).unwrap());
    for (k, &f) in s.freqs.iter().enumerate() {
        let fc = cutoff_from_s21(f, s.get(2, 1).unwrap()[k], l);
        if k % 4 == 0 {
            println!("{:.1} GHz: |S11| {:.1} dB, |S21| {:+.5} dB, cutoff {:.3} GHz", f / 1e9, s11[k], s21[k], fc / 1e9);
        }
        assert!(s21[k].abs() < 0.01, "{f}: |S21| = {} dB", s21[k]);
        assert!(s11[k] < -45.0, "{f}: |S11| = {} dB", s11[k]);
        assert!((fc / (C0 / (2.0 * WR28_A)) - 1.0).abs() < 0.01, "{f}: cutoff {fc}");
        assert!((s12[k] - s.get(2, 1).unwrap()[k]).norm() < 1e-3, "reciprocity at {f}");
    }
}

/// A reproducible stream of uniform values in [-0.5, 0.5) (a 64-bit LCG from
/// `seed`): random pulses and stubs for the step tests.
pub fn uniform_noise(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
}
