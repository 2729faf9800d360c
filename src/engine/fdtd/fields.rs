//! The state one FDTD job steps: its E and H arrays and the CPML memories,
//! in the operator's padded layout (shared by the CPU engine, the field DFT
//! monitors and the CUDA backend's uploads and downloads).

use super::edges::EdgeState;
use super::operator::Operator;
use super::surface::SurfaceState;

/// Field and CPML auxiliary arrays of one job.
pub struct Fields {
    pub e: [Vec<f32>; 3],
    pub h: [Vec<f32>; 3],
    /// `psi_e[c][a]`: CPML memory of dH/da in the E_c update (empty when axis a has no PML).
    pub psi_e: [[Vec<f32>; 3]; 3],
    pub psi_h: [[Vec<f32>; 3]; 3],
    /// Memories of the edge currents (dispersive media, loads).
    pub edges: EdgeState,
    /// Memories of the lossy metal faces.
    pub surface: SurfaceState,
    /// Per conformal face term: its change pending for the next step.
    pub conformal: Vec<f32>,
}

impl Fields {
    pub fn new(op: &Operator) -> Fields {
        let z = || vec![0.0f32; op.len];
        let psi = |c: usize, a: usize| if a != c && op.pml[a].is_some() { vec![0.0f32; op.len] } else { vec![] };
        Fields {
            e: [z(), z(), z()],
            h: [z(), z(), z()],
            psi_e: [0, 1, 2].map(|c| [0, 1, 2].map(|a| psi(c, a))),
            psi_h: [0, 1, 2].map(|c| [0, 1, 2].map(|a| psi(c, a))),
            edges: EdgeState::new(&op.edges),
            surface: SurfaceState::new(&op.surface),
            conformal: vec![0.0; op.conformal.len()],
        }
    }
}
