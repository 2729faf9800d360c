//! The CPU twin of the on-chip CUDA kernel `tlm_shunt_onchip` (kernels/tlm_onchip.cu),
//! and a 2D job's CPU state started from given pulses and stub states in the
//! CUDA pools' order: what the emulated kernel is compared with from random
//! fields (src/engine/cuda/tlm/emu_tests.rs). Test code.

use super::*;
use crate::job::Pulse;

/// A 2D job's CPU state (mesh, ports, cells).
pub(crate) struct ShuntState(ShuntRun);

impl ShuntState {
    /// The job's state with pulses `links` (link-major, `4 * nodes`) and, where
    /// it has stubs, stub states `stubs` (`7 * nodes`: capacitive, the two
    /// inductive, the four half-link states of shorted nodes; tlm.cuh's order).
    pub fn from_pools(job: &SimJob, links: &[f32], stubs: &[f32]) -> Result<ShuntState, SimFailure> {
        let mut mesh = Mesh::new(job)?;
        let sp = ShuntPorts::new(job, &mut mesh.g)?;
        let n = mesh.g.flags.len();
        assert_eq!(links.len(), 4 * n, "pulses of every link of every node");
        for q in 0..4 {
            mesh.b[q].copy_from_slice(&links[q * n..(q + 1) * n]);
        }
        if mesh.g.loaded {
            assert_eq!(stubs.len(), 7 * n, "seven stub states a node");
            mesh.cap.copy_from_slice(&stubs[..n]);
            for m in 0..2 {
                mesh.ind[m].copy_from_slice(&stubs[(1 + m) * n..(2 + m) * n]);
            }
            for q in 0..4 {
                mesh.sh[q].copy_from_slice(&stubs[(3 + q) * n..(4 + q) * n]);
            }
        }
        Ok(ShuntState(ShuntRun { mesh, sp, g: common::cells(job) }))
    }

    /// The current pulses, link-major.
    pub fn pulses(&self) -> Vec<f32> {
        self.0.mesh.b.concat()
    }
}

/// `k` whole steps from step `n` (each: [`tlm_shunt_step`], [`tlm_shunt_ports`]
/// with the source at the step's node instant, the swap, [`tlm_shunt_sample`]),
/// then the energy ([`tlm_shunt_energy`]): the CPU twin of the on-chip kernel,
/// which runs such a chunk of the stepping loop in one launch (its energy after
/// each check inside it, here after the k-th step).
pub(crate) fn tlm_shunt_onchip(st: &mut ShuntState, pulse: &Pulse, n: usize, k: usize, traces: &mut [PortTrace]) -> f64 {
    use super::super::cpu_batch::TlmMethod;
    let dt = st.0.mesh.g.dt;
    for step in n..n + k {
        st.0.step(pulse.value(step as f64 * dt), traces);
    }
    tlm_shunt_energy(&st.0.mesh)
}
