//! The 2D on-chip kernel (kernels/tlm_onchip.cu) built as C++ for the CPU
//! emulation (scripts/tlm-emu/), against its CPU twin
//! (`shunt2d::onchip::tlm_shunt_onchip`) from random pulses and stub states:
//! the shipped iris filter (modal guide ends, sources, guide ports; stubs in
//! the pool) and the loaded 2D check job (stubs on chip, losses, PEC, sheet,
//! two lumped ports), one launch of three energy checks and launches of a
//! trace chunk each. Needs g++ (present wherever the crate is developed).

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};

use super::{OnchipRun, TlmConfig, TlmDevBatch};
use crate::engine::device::{download_vec, upload, Device};
use crate::engine::stepping;
use crate::engine::EngineError;
use crate::job::{SimFailure, SimOutput};
use crate::engine::device::emu::EmuDevice;
use crate::engine::tlm::pack::TlmPack;
use crate::engine::tlm::shunt2d::onchip::{tlm_shunt_onchip, ShuntState};
use crate::job::{EngineKind, PortTrace, SimJob, StopRule};

// Long enough that the guide ends' convolution takes the kernel's unrolled loop (K > 8 x 64).
const STEPS: usize = 600;
const CHECK: usize = 200;

/// Build `src` (relative to the crate) into `out` with the defines.
fn build(src: &str, out: &Path, defines: &[&str]) {
    crate::engine::device::emu::build_library(src, out, defines).unwrap_or_else(|e| panic!("{e}"));
}

fn libs(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("libtlm.so"), dir.join("libtlmoc.so"));
    build("scripts/tlm-emu/emu.cpp", &a, &["-DTLM_THREADS=32", "-DTLM_NPT=2", "-DTLM_PORT_THREADS=32", "-DTLM_SPLIT=0"]);
    build("scripts/tlm-emu/onchip.cpp", &b, &["-DTLM_OC_NT=64"]);
    (a, b)
}

fn jobs() -> Vec<SimJob> {
    let mut v = crate::dev::tlm_check::iris_filter_jobs(EngineKind::Tlm2d).unwrap();
    v.truncate(1);
    v.push(crate::dev::tlm_check::loaded_2d(true));
    for j in &mut v {
        j.stop = StopRule { decay_db: -1000.0, max_steps: STEPS, check_every: CHECK, max_time: None };
    }
    v
}

/// Random pulses (4 a node) and stub states (7 a node) in [-1, 1).
fn random_state(pk: &TlmPack, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let n = pk.nodes();
    let links = (0..4 * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let stubs = (0..7 * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    (links, stubs)
}

/// The CPU twin over the whole run: traces and final pulses.
fn cpu_run(job: &SimJob, init: &(Vec<f32>, Vec<f32>)) -> (Vec<PortTrace>, Vec<f32>) {
    let mut st = ShuntState::from_pools(job, &init.0, &init.1).unwrap();
    let mut traces = vec![PortTrace::default(); job.ports.len()];
    for n in (0..STEPS).step_by(CHECK) {
        let e = tlm_shunt_onchip(&mut st, &job.pulse, n, CHECK, &mut traces);
        assert!(e.is_finite() && e > 0.0);
    }
    (traces, st.pulses())
}

/// [`drive`] from given pulses and stub states (per design: link-major pulses,
/// `links x nodes`; stub states `stubs x nodes` where it has stubs, in the
/// pool's order); also returns each design's final pulses. For comparing the
/// kernels with the CPU twins from random fields.
#[allow(clippy::too_many_arguments)]
fn drive_from(
    dev: &mut dyn Device,
    jobs: &[&SimJob],
    packs: &[&TlmPack],
    cfg: TlmConfig,
    port_threads: u32,
    trace_chunk: usize,
    onchip: Option<OnchipRun>,
    init: &[(Vec<f32>, Vec<f32>)],
) -> Result<(Vec<Result<SimOutput, SimFailure>>, Vec<Vec<f32>>), EngineError> {
    let mut b = TlmDevBatch::new(dev, jobs, packs, cfg, port_threads, trace_chunk, onchip)?;
    for (d, (links, stubs)) in init.iter().enumerate() {
        let (n, off) = (packs[d].nodes(), b.plan.designs[d].off as usize);
        for q in 0..b.plan.links {
            upload(b.dev, b.bufs.links[0], q * b.plan.l + off, &links[q * n..(q + 1) * n])?;
        }
        if packs[d].loaded {
            let soff = b.plan.designs[d].soff as usize;
            for q in 0..b.plan.stubs {
                upload(b.dev, b.bufs.stub, q * b.plan.ls + soff, &stubs[q * n..(q + 1) * n])?;
            }
        }
    }
    let out = stepping::run(&mut b, &[])?;
    let mut fin = vec![];
    for (d, pk) in packs.iter().enumerate() {
        let off = b.plan.designs[d].off as usize;
        let mut v = vec![];
        for q in 0..b.plan.links {
            v.extend(download_vec::<f32>(b.dev, b.bufs.links[b.cur], q * b.plan.l + off, pk.nodes())?);
        }
        fin.push(v);
    }
    Ok((out, fin))
}

/// Largest |a - b| over the largest |a|.
fn rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let m = a.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
    a.iter().zip(b).fold(0.0f64, |w, (x, y)| w.max((x - y).abs())) / m
}

#[test]
fn emulated_onchip_kernel_matches_its_cpu_twin_from_random_fields() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, oclib) = libs(dir.path());
    let js = jobs();
    let packs: Vec<TlmPack> = js.iter().map(|j| crate::engine::tlm::pack(j).unwrap()).collect();
    let init: Vec<(Vec<f32>, Vec<f32>)> = packs.iter().enumerate().map(|(d, pk)| random_state(pk, 7 + d as u64)).collect();
    let cpu: Vec<(Vec<PortTrace>, Vec<f32>)> = js.iter().zip(&init).map(|(j, i)| cpu_run(j, i)).collect();
    // The iris filter's stubs stay in the pool (its links alone nearly fill a block);
    // the small job's go on chip.
    let fits: Vec<_> = packs.iter().map(|p| super::onchip::plan_design(p, 232_448).unwrap()).collect();
    assert!(packs[0].loaded && !fits[0].stubs_on_chip && fits[1].stubs_on_chip);
    let jr: Vec<&SimJob> = js.iter().collect();
    let pr: Vec<&TlmPack> = packs.iter().collect();
    let cfg = TlmConfig { threads: 32, npt: 2, minb: 0, split: false };
    // Three checks a launch (one launch), then one launch per trace chunk of 37 steps.
    for checks in [3, 1] {
        let mut dev = EmuDevice::open(&[lib.as_path(), oclib.as_path()]).unwrap();
        let (out, fin) = drive_from(&mut dev, &jr, &pr, cfg, 32, 37, Some(OnchipRun { threads: 64, checks }), &init).unwrap();
        assert_eq!(dev.launches.iter().map(|l| l.iter().sum::<usize>()).sum::<usize>(), if checks == 3 { 1 } else { 18 }, "on-chip launches only");
        for (d, o) in out.iter().enumerate() {
            let o = o.as_ref().unwrap();
            assert_eq!(o.steps, STEPS);
            let (ct, cb) = &cpu[d];
            let (mut wv, mut wi) = (0.0f64, 0.0f64);
            for (p, t) in o.traces.iter().enumerate() {
                wv = wv.max(rel(&ct[p].v, &t.v));
                wi = wi.max(rel(&ct[p].i, &t.i));
            }
            let differ = cb.iter().zip(&fin[d]).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            let cb64: Vec<f64> = cb.iter().map(|&x| x as f64).collect();
            let fd64: Vec<f64> = fin[d].iter().map(|&x| x as f64).collect();
            let wb = rel(&cb64, &fd64);
            eprintln!("{} ({checks} checks a launch): V {wv:.1e} I {wi:.1e}, pulses {wb:.1e} ({differ} of {} differ)", js[d].label, cb.len());
            if packs[d].ends.is_empty() {
                // Lumped ports only: every sum has one term, so the kernel is the CPU bit for bit.
                assert_eq!((differ, wv, wi), (0, 0.0, 0.0));
            } else {
                // The guide ends' mode amplitude and convolution are f64 sums in another
                // order: a returning pulse may round to the neighbouring float, and the
                // port signals (f64 sums too) differ in their last bits (measured: pulses
                // bit for bit, V and I within 2e-15).
                assert!(wb <= 1e-6 && wv <= 1e-12 && wi <= 1e-12, "{}: V {wv:.1e} I {wi:.1e} pulses {wb:.1e}", js[d].label);
            }
        }
    }
}
