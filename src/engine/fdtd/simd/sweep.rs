//! One whole step in one pass over the planes, row by row ([`fused`]): at
//! row (j, k) H of every component, its PMC ghosts, then E, so the fields
//! stream through the caches once per step and each row's fields are still
//! in L1 when its E update reads them; quasi-2D grids component by component
//! over the planes instead. Large grids: one z slab per thread, run in
//! parallel; the first E plane of every slab but the first waits until all
//! slabs are done, because it reads the previous slab's last H plane (and
//! that plane's H update reads it). No thread writes a plane another reads
//! during the pass. Each pass is compiled per instruction set (`Level`).

use rayon::prelude::*;

use super::super::fields::Fields;
use super::super::operator::Operator;
use super::plan::SimdPlan;
use super::raw::Raw;
use super::rows::{pmc_row, ERows, HRows};
use super::lanes::{Level, Simd};

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
pub fn step(op: &Operator, plan: &SimdPlan, f: &mut Fields) {
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
pub unsafe fn plane_step(op: &Operator, plan: &SimdPlan, raw: Raw, k: usize) {
    dispatch(op, plan, raw, Pass::Plane(k))
}

fn dispatch(op: &Operator, plan: &SimdPlan, raw: Raw, pass: Pass) {
    // SAFETY: the passes touch disjoint planes as described above.
    unsafe {
        match pass {
            Pass::Slab { range, defer } => {
                let e0 = if defer { range.start + 1 } else { range.start };
                fused(op, plan, raw, range.start, range.end, e0);
            }
            Pass::E(k) => e_only(op, plan, raw, k),
            Pass::Plane(k) => fused(op, plan, raw, k, k + 1, k),
        }
    }
}

/// Planes k0..k1 row by row: at each row (j, k) H of every component, its
/// PMC ghosts, then E of every component (E only from plane `e0` on). E of
/// row (j, k) reads H of rows (j, k), (j-1, k) and (j, k-1), all done by
/// then; H of row (j, k) reads E of rows (j, k), (j+1, k) and (j, k+1),
/// none updated yet: the reference's step, with each row's fields still in
/// the L1 cache when its E update reads them.
///
/// # Safety
/// As [`plane_step`] over the planes.
#[inline(always)]
unsafe fn fused(op: &Operator, plan: &SimdPlan, raw: Raw, k0: usize, k1: usize, e0: usize) {
    // The level was detected on this CPU (or is lower).
    match plan.level {
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => fused_avx512(op, plan, raw, k0, k1, e0),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => fused_avx2(op, plan, raw, k0, k1, e0),
        _ => fused_base(op, plan, raw, k0, k1, e0),
    }
}

/// E of every component on plane k (a deferred slab start).
///
/// # Safety
/// As [`plane_step`] for the E half step.
unsafe fn e_only(op: &Operator, plan: &SimdPlan, raw: Raw, k: usize) {
    match plan.level {
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => e_avx512(op, plan, raw, k),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => e_avx2(op, plan, raw, k),
        _ => e_base(op, plan, raw, k),
    }
}

/// The PMC ghosts of plane k's rows that update no component (their H stays
/// as it is during the step, so their ghosts can be mirrored before the
/// others; none of them is read by this step, but the reference writes
/// them all).
///
/// # Safety
/// As [`pmc_row`] for those rows.
unsafe fn idle_ghosts(op: &Operator, plan: &SimdPlan, raw: Raw, k: usize) {
    let mut listed = plan.rows.plane(k).iter().map(|r| r.0 as usize).peekable();
    for j in 0..op.dims[1] - 1 {
        if listed.peek() == Some(&j) {
            listed.next();
        } else {
            pmc_row(op, raw, j, k);
        }
    }
}

/// The three E components' row updaters of a pass.
type ESet<'a> = (ERows<'a, 0, false, false>, ERows<'a, 1, false, true>, ERows<'a, 2, true, false>);

#[inline(always)]
fn e_rows<'a>(op: &'a Operator, plan: &'a SimdPlan, raw: Raw) -> ESet<'a> {
    (ERows::new(op, plan, raw), ERows::new(op, plan, raw), ERows::new(op, plan, raw))
}

/// E of row (j, k): the components its mask `m` lists (bits 3-5).
///
/// # Safety
/// As [`ERows::row`] for each of them.
#[inline(always)]
unsafe fn e_row<S: Simd>(e: &ESet, j: usize, k: usize, m: u8) {
    if m & 8 != 0 {
        e.0.row::<S>(j, k);
    }
    if m & 16 != 0 {
        e.1.row::<S>(j, k);
    }
    if m & 32 != 0 {
        e.2.row::<S>(j, k);
    }
}

/// The passes of one level: row-fused ([`fused`]) or component by
/// component over the planes (for grids with few rows per plane, where each
/// component's row set-up then stays in registers from plane to plane), and
/// the E half step of one plane.
macro_rules! level {
    ($fused:ident, $e:ident, $m:ident, $S:ty $(, $feat:literal)?) => {
        /// One component over planes k0..k1 (its own function, so that its
        /// row set-up is all that lives across the planes).
        mod $m {
            use super::super::plan::SimdPlan;
            use super::super::raw::Raw;
            use super::super::rows::{ERows, HRows};
            use super::Operator;
            macro_rules! comp {
                ($name:ident, $ty:ty, $i:expr) => {
                    $(#[target_feature(enable = $feat)])?
                    #[inline(never)]
                    pub unsafe fn $name(op: &Operator, plan: &SimdPlan, raw: Raw, k0: usize, k1: usize) {
                        let rows = plan.comp_rows[$i].planes(k0, k1);
                        if rows.is_empty() {
                            return;
                        }
                        let c = <$ty>::new(op, plan, raw);
                        for &(j, k) in rows {
                            c.row::<$S>(j as usize, k as usize);
                        }
                    }
                };
            }
            comp!(h0, HRows<0, false, false>, 0);
            comp!(h1, HRows<1, false, true>, 1);
            comp!(h2, HRows<2, true, false>, 2);
            comp!(e0, ERows<0, false, false>, 3);
            comp!(e1, ERows<1, false, true>, 4);
            comp!(e2, ERows<2, true, false>, 5);
        }

        $(#[target_feature(enable = $feat)])?
        #[inline(never)]
        unsafe fn $fused(op: &Operator, plan: &SimdPlan, raw: Raw, k0: usize, k1: usize, e0: usize) {
            let h = (HRows::<0, false, false>::new(op, plan, raw), HRows::<1, false, true>::new(op, plan, raw), HRows::<2, true, false>::new(op, plan, raw));
            let e = e_rows(op, plan, raw);
            if plan.by_component {
                // H of every plane, component by component; the ghosts; then E.
                $m::h0(op, plan, raw, k0, k1);
                $m::h1(op, plan, raw, k0, k1);
                $m::h2(op, plan, raw, k0, k1);
                if plan.pmc {
                    for k in k0..k1 {
                        for j in 0..op.dims[1] - 1 {
                            pmc_row(op, raw, j, k);
                        }
                    }
                }
                $m::e0(op, plan, raw, e0, k1);
                $m::e1(op, plan, raw, e0, k1);
                $m::e2(op, plan, raw, e0, k1);
                return;
            }
            for k in k0..k1 {
                let with_e = k >= e0;
                if plan.pmc {
                    idle_ghosts(op, plan, raw, k);
                }
                for &(j, m) in plan.rows.plane(k) {
                    let j = j as usize;
                    if m & 1 != 0 {
                        h.0.row::<$S>(j, k);
                    }
                    if m & 2 != 0 {
                        h.1.row::<$S>(j, k);
                    }
                    if m & 4 != 0 {
                        h.2.row::<$S>(j, k);
                    }
                    if plan.pmc {
                        pmc_row(op, raw, j, k);
                    }
                    if with_e {
                        e_row::<$S>(&e, j, k, m);
                    }
                }
            }
        }

        $(#[target_feature(enable = $feat)])?
        #[inline(never)]
        unsafe fn $e(op: &Operator, plan: &SimdPlan, raw: Raw, k: usize) {
            let e = e_rows(op, plan, raw);
            for &(j, m) in plan.rows.plane(k) {
                e_row::<$S>(&e, j as usize, k, m);
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
level!(fused_avx512, e_avx512, by_avx512, crate::engine::fdtd::simd::lanes::Avx512, "avx512f,avx512vl,avx512bw,avx2,fma");
#[cfg(target_arch = "x86_64")]
level!(fused_avx2, e_avx2, by_avx2, crate::engine::fdtd::simd::lanes::Avx2, "avx2,fma");
level!(fused_base, e_base, by_base, crate::engine::fdtd::simd::lanes::Base);
