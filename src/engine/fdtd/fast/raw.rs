//! Raw views of one job's field arrays, shared by the slab threads of a
//! step. The sweep's schedule (sweep.rs) guarantees that no plane one thread
//! writes is read or written by another during the same pass.

use super::super::cpu::Fields;

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

/// `n` values from `p` (read).
///
/// # Safety
/// `p..p+n` lies in one array and no other thread writes it meanwhile.
#[inline(always)]
pub unsafe fn run<'a>(p: *const f32, n: usize) -> &'a [f32] {
    std::slice::from_raw_parts(p, n)
}

/// `n` values from `p` (written).
///
/// # Safety
/// As [`run`], and nothing else reads or writes them meanwhile.
#[inline(always)]
pub unsafe fn run_mut<'a>(p: *mut f32, n: usize) -> &'a mut [f32] {
    std::slice::from_raw_parts_mut(p, n)
}

/// The CPML memory at `p`, or none where the array is empty.
///
/// # Safety
/// `base` is null or an array longer than `p` that only this thread touches at `p`.
#[inline(always)]
pub unsafe fn psi_at<'a>(base: *mut f32, p: usize) -> Option<&'a mut f32> {
    if base.is_null() {
        None
    } else {
        Some(&mut *base.add(p))
    }
}
