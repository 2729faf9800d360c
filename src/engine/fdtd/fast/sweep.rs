//! One whole step over the planes: H of plane k, its PMC ghosts, then E of
//! plane k (which reads H of planes k and k-1 only, while H of plane k reads
//! E of planes k and k+1 before they change), so the fields stream through
//! the caches once per step. Large grids: one z slab per thread, run in
//! parallel; the first E plane of every slab but the first waits until all
//! slabs are done, because it reads the previous slab's last H plane (and
//! that plane's H update reads it). No thread writes a plane another reads
//! during the pass. Each pass is compiled per instruction set (`Level`).

use rayon::prelude::*;

use super::super::cpu::Fields;
use super::super::operator::Operator;
use super::lanes::Level;
use super::plan::FastPlan;
use super::planes::{e_plane, h_plane, pmc_plane};
use super::raw::Raw;

/// What one pass does.
#[derive(Clone)]
enum Pass {
    /// H, ghosts and E over planes `range`, E of the first plane left out when `defer`.
    Slab { range: std::ops::Range<usize>, defer: bool },
    /// E of one plane (a deferred slab start).
    E(usize),
    /// H, ghosts and E of one plane (a wavefront's step of it).
    Plane(usize),
}

/// One Yee step of `f` (the same bits as `cpu::fdtd_step`).
pub fn step(op: &Operator, plan: &FastPlan, f: &mut Fields) {
    let raw = Raw::new(f);
    if plan.slabs.len() == 1 {
        dispatch(op, plan, raw, Pass::Slab { range: plan.slabs[0].clone(), defer: false });
        return;
    }
    plan.slabs.par_iter().enumerate().for_each(|(t, r)| dispatch(op, plan, raw, Pass::Slab { range: r.clone(), defer: t > 0 }));
    for r in &plan.slabs[1..] {
        dispatch(op, plan, raw, Pass::E(r.start));
    }
}

/// H, PMC ghosts and E of plane k (one step of it, for the wavefront).
///
/// # Safety
/// As the sweep: planes k-1, k and k+1 hold the states the reference's step
/// would see, and no other thread touches them meanwhile.
pub unsafe fn plane_step(op: &Operator, plan: &FastPlan, raw: Raw, k: usize) {
    dispatch(op, plan, raw, Pass::Plane(k))
}

fn dispatch(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    // SAFETY: the level was detected on this CPU (or is lower); the passes
    // touch disjoint planes as described above.
    unsafe {
        match plan.level {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => pass_avx512(op, plan, raw, pass),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => pass_avx2(op, plan, raw, pass),
            _ => pass_any(op, plan, raw, pass),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn pass_avx512(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    pass_any(op, plan, raw, pass)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pass_avx2(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    pass_any(op, plan, raw, pass)
}

#[inline(always)]
unsafe fn pass_any(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    match pass {
        Pass::Slab { range, defer } => {
            let first = range.start;
            for k in range {
                for c in 0..3 {
                    h_plane(op, plan, raw, c, k);
                }
                pmc_plane(op, raw, k);
                if !(defer && k == first) {
                    for c in 0..3 {
                        e_plane(op, plan, raw, c, k);
                    }
                }
            }
        }
        Pass::E(k) => {
            for c in 0..3 {
                e_plane(op, plan, raw, c, k);
            }
        }
        Pass::Plane(k) => {
            for c in 0..3 {
                h_plane(op, plan, raw, c, k);
            }
            pmc_plane(op, raw, k);
            for c in 0..3 {
                e_plane(op, plan, raw, c, k);
            }
        }
    }
}
