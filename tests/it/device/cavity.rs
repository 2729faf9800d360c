//! A small loaded cavity with lumped ports, stepped on the GPU and on the CPU:
//! the FDTD kernels and the TLM (SCN) kernels against their CPU twins.

use emvolve::dev::compare::{diff, fdtd_reference, tlm_reference, FDTD_RULES, TLM_RULES};
use emvolve::dev::device_check::base_job;
use emvolve::dev::tlm_check::loaded_cavity;
use emvolve::engine::{Backend, RunCtx};
use emvolve::job::{Axis, Boundary, EngineKind, Port, PortKind, StopRule};

use super::common::{gpu, TOL};

/// A PEC cavity with a lossy block and two lumped ports, `steps` steps.
fn cavity(steps: usize) -> emvolve::job::SimJob {
    let mut j = base_job("pec cavity + lossy block, 2 lumped", [20, 14, 12], 0.5e-3, [[Boundary::Pec; 2]; 3], [[0; 2]; 3], (10e9, 30e9));
    for k in 2..6 {
        for jj in 2..7 {
            for i in 3..9 {
                let p = j.mesh.idx(i, jj, k);
                j.cell_mat_mut()[p] = 2;
            }
        }
    }
    let lumped = |name: &str, start: [usize; 3]| Port { name: name.into(), kind: PortKind::Lumped { axis: Axis::Z, start, len: 2, r_ohm: 50.0 } };
    j.ports = vec![lumped("a", [12, 7, 4]), lumped("b", [16, 10, 6])];
    j.stop = StopRule { decay_db: -1000.0, max_steps: steps, check_every: 50, max_time: None };
    j
}

#[test]
fn fdtd_cavity_matches_the_cpu() {
    let Some(be) = gpu("fdtd_cavity_matches_the_cpu") else { return };
    let jobs = vec![cavity(300)];
    let cpu = fdtd_reference(&jobs, None);
    let dev = be.run(&jobs, &RunCtx::NONE).unwrap();
    let d = diff(&jobs[0], cpu[0].0.as_ref(), dev[0].as_ref(), FDTD_RULES);
    eprintln!("FDTD cavity: V {:.1e} I {:.1e} S {:?}", d.v, d.i, d.s);
    assert!(d.ok(TOL), "{d:?}");
}

#[test]
fn tlm_cavity_matches_the_cpu() {
    let Some(be) = gpu("tlm_cavity_matches_the_cpu") else { return };
    let mut job = loaded_cavity(EngineKind::Tlm, true);
    job.stop.max_steps = 300;
    let jobs = vec![job];
    let cpu = tlm_reference(&jobs);
    let dev = be.run(&jobs, &RunCtx::NONE).unwrap();
    let d = diff(&jobs[0], cpu[0].as_ref(), dev[0].as_ref(), TLM_RULES);
    eprintln!("TLM cavity: V {:.1e} I {:.1e} S {:?}", d.v, d.i, d.s);
    assert!(d.ok(TOL), "{d:?}");
}
