//! Raw views of one job's field arrays, shared by the slab threads of a
//! step. The sweep's schedule (sweep.rs) guarantees that no plane one thread
//! writes is read or written by another during the same pass.

use super::super::fields::Fields;

/// Pointers to the E, H and CPML arrays (null for an empty CPML memory).
#[derive(Clone, Copy)]
pub struct Raw {
    pub e: [*mut f32; 3],
    pub h: [*mut f32; 3],
    pub psi_e: [[*mut f32; 3]; 3],
    pub psi_h: [[*mut f32; 3]; 3],
}

// SAFETY: the threads write disjoint planes and read only planes nobody
// writes during the pass (see sweep.rs).
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

impl Raw {
    pub fn new(f: &mut Fields) -> Raw {
        let p = |v: &mut Vec<f32>| if v.is_empty() { std::ptr::null_mut() } else { v.as_mut_ptr() };
        Raw {
            e: [0, 1, 2].map(|c| f.e[c].as_mut_ptr()),
            h: [0, 1, 2].map(|c| f.h[c].as_mut_ptr()),
            psi_e: [0, 1, 2].map(|c| [0, 1, 2].map(|a| p(&mut f.psi_e[c][a]))),
            psi_h: [0, 1, 2].map(|c| [0, 1, 2].map(|a| p(&mut f.psi_h[c][a]))),
        }
    }
}
