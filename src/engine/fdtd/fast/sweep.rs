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
use super::plan::FastPlan;
use super::raw::Raw;
use super::rows::{e_plane, h_plane, pmc_plane};
use super::simd::{Base, Level, Simd};
#[cfg(target_arch = "x86_64")]
use super::simd::{Avx2, Avx512};

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
    if plan.reference {
        super::super::cpu::fdtd_step(op, f);
        return;
    }
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
            _ => pass_any::<Base>(op, plan, raw, pass),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx2,fma")]
unsafe fn pass_avx512(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    pass_any::<Avx512>(op, plan, raw, pass)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pass_avx2(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    pass_any::<Avx2>(op, plan, raw, pass)
}

/// H of plane k (every component), its PMC ghosts.
#[inline(always)]
unsafe fn h_all<S: Simd>(op: &Operator, plan: &FastPlan, raw: Raw, k: usize) {
    h_plane::<S, 0, false, false>(op, plan, raw, k);
    h_plane::<S, 1, false, true>(op, plan, raw, k);
    h_plane::<S, 2, true, false>(op, plan, raw, k);
    if plan.pmc {
        pmc_plane(op, raw, k);
    }
}

/// E of plane k (every component).
#[inline(always)]
unsafe fn e_all<S: Simd>(op: &Operator, plan: &FastPlan, raw: Raw, k: usize) {
    e_plane::<S, 0, false, false>(op, plan, raw, k);
    e_plane::<S, 1, false, true>(op, plan, raw, k);
    e_plane::<S, 2, true, false>(op, plan, raw, k);
}

#[inline(always)]
unsafe fn pass_any<S: Simd>(op: &Operator, plan: &FastPlan, raw: Raw, pass: Pass) {
    match pass {
        Pass::Slab { range, defer } => {
            let first = range.start;
            for k in range {
                h_all::<S>(op, plan, raw, k);
                if !(defer && k == first) {
                    e_all::<S>(op, plan, raw, k);
                }
            }
        }
        Pass::E(k) => e_all::<S>(op, plan, raw, k),
        Pass::Plane(k) => {
            h_all::<S>(op, plan, raw, k);
            e_all::<S>(op, plan, raw, k);
        }
    }
}
