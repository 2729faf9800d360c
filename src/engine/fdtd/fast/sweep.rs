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
use super::rows::{e_planes, h_planes, pmc_plane};
use super::simd::{Base, Level};
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
    // SAFETY: the passes touch disjoint planes as described above.
    unsafe {
        match pass {
            Pass::Slab { range, defer } => {
                // Groups of planes that stay in the caches: H of the group,
                // then E of the group (E of plane k reads H of k-1 and k).
                let g = plan.group;
                let mut k = range.start;
                while k < range.end {
                    let k1 = (k + g).min(range.end);
                    half(op, plan, raw, k, k1, false);
                    let e0 = if defer && k == range.start { k + 1 } else { k };
                    half(op, plan, raw, e0, k1, true);
                    k = k1;
                }
            }
            Pass::E(k) => half(op, plan, raw, k, k + 1, true),
            Pass::Plane(k) => {
                half(op, plan, raw, k, k + 1, false);
                half(op, plan, raw, k, k + 1, true);
            }
        }
    }
}

/// H (and its PMC ghosts) or E of planes k0..k1 at the plan's level: one
/// call per group of planes and half step.
///
/// # Safety
/// As [`plane_step`] for the half step, over the planes.
#[inline(always)]
unsafe fn half(op: &Operator, plan: &FastPlan, raw: Raw, k0: usize, k1: usize, e: bool) {
    if k0 >= k1 {
        return;
    }
    // The level was detected on this CPU (or is lower).
    match (plan.level, e) {
        #[cfg(target_arch = "x86_64")]
        (Level::Avx512, false) => h_avx512(op, plan, raw, k0, k1),
        #[cfg(target_arch = "x86_64")]
        (Level::Avx512, true) => e_avx512(op, plan, raw, k0, k1),
        #[cfg(target_arch = "x86_64")]
        (Level::Avx2, false) => h_avx2(op, plan, raw, k0, k1),
        #[cfg(target_arch = "x86_64")]
        (Level::Avx2, true) => e_avx2(op, plan, raw, k0, k1),
        (_, false) => h_base(op, plan, raw, k0, k1),
        (_, true) => e_base(op, plan, raw, k0, k1),
    }
}

/// The H and E half steps of a group of planes compiled for one level.
macro_rules! level {
    ($h:ident, $e:ident, $S:ty $(, $feat:literal)?) => {
        $(#[target_feature(enable = $feat)])?
        #[inline(never)]
        unsafe fn $h(op: &Operator, plan: &FastPlan, raw: Raw, k0: usize, k1: usize) {
            h_planes::<$S, 0, false, false>(op, plan, raw, k0, k1);
            h_planes::<$S, 1, false, true>(op, plan, raw, k0, k1);
            h_planes::<$S, 2, true, false>(op, plan, raw, k0, k1);
            if plan.pmc {
                for k in k0..k1 {
                    pmc_plane(op, raw, k);
                }
            }
        }

        $(#[target_feature(enable = $feat)])?
        #[inline(never)]
        unsafe fn $e(op: &Operator, plan: &FastPlan, raw: Raw, k0: usize, k1: usize) {
            e_planes::<$S, 0, false, false>(op, plan, raw, k0, k1);
            e_planes::<$S, 1, false, true>(op, plan, raw, k0, k1);
            e_planes::<$S, 2, true, false>(op, plan, raw, k0, k1);
        }
    };
}

#[cfg(target_arch = "x86_64")]
level!(h_avx512, e_avx512, Avx512, "avx512f,avx512vl,avx512bw,avx2,fma");
#[cfg(target_arch = "x86_64")]
level!(h_avx2, e_avx2, Avx2, "avx2,fma");
level!(h_base, e_base, Base);
