//! One z plane of one component: per row, the CPML taps at its ends and the
//! vector runs in between (`lanes`), plus the PMC ghosts of a plane. All
//! `#[inline(always)]`, so they are compiled inside each instruction-set
//! variant of the sweep.

use super::super::cpu::{e_range, h_range};
use super::super::operator::Operator;
use super::cpml::{e_taps, h_taps};
use super::lanes::{e_run, h_run};
use super::plan::FastPlan;
use super::raw::{run, run_mut, Raw};

/// H_c on plane k (nothing when k is outside its range).
///
/// # Safety
/// Plane k of H_c is this thread's; E planes k and k+1 are not written meanwhile.
#[inline(always)]
pub unsafe fn h_plane(op: &Operator, plan: &FastPlan, raw: Raw, c: usize, k: usize) {
    let r = h_range(op, c);
    if k >= r[2] {
        return;
    }
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let (h, ea, eb) = (raw.h[c], raw.e[a] as *const f32, raw.e[b] as *const f32);
    let ih = &op.inv_h;
    for j in 0..r[1] {
        let p0 = op.at(0, j as isize, k as isize);
        let row = p0 / op.stride[1];
        if !op.h_rows[c][row] {
            continue;
        }
        let (lo, hi) = plan.h_span[c][row];
        let (lo, hi) = (lo as usize, hi as usize);
        if lo > 0 || hi < r[0] {
            h_taps(op, raw, c, j, k, 0, lo);
            h_taps(op, raw, c, j, k, hi.max(lo), r[0]);
        }
        if hi <= lo {
            continue;
        }
        let (n, p) = (hi - lo, p0 + lo);
        let out = run_mut(h.add(p), n);
        let (eb0, eb1, ea0, ea1) = (run(eb.add(p), n), run(eb.add(p + sa), n), run(ea.add(p), n), run(ea.add(p + sb), n));
        let x = &ih[0][lo + 1..hi + 1];
        match c {
            0 => h_run(out, eb0, eb1, ea0, ea1, ih[1][j + 1], ih[2][k + 1], op.db),
            1 => h_run(out, eb0, eb1, ea0, ea1, ih[2][k + 1], x, op.db),
            _ => h_run(out, eb0, eb1, ea0, ea1, x, ih[1][j + 1], op.db),
        }
    }
}

/// E_c on plane k (nothing when k is outside its range).
///
/// # Safety
/// Plane k of E_c is this thread's; H planes k and k-1 are final for this
/// step and not written meanwhile.
#[inline(always)]
pub unsafe fn e_plane(op: &Operator, plan: &FastPlan, raw: Raw, c: usize, k: usize) {
    let r = e_range(op, c);
    if k >= r[2] {
        return;
    }
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let (e, ha, hb) = (raw.e[c], raw.h[a] as *const f32, raw.h[b] as *const f32);
    let ie = &op.inv_e;
    for j in 0..r[1] {
        let p0 = op.at(0, j as isize, k as isize);
        let row = p0 / op.stride[1];
        if !op.e_rows[c][row] {
            continue;
        }
        let (lo, hi) = plan.e_span[c][row];
        let (lo, hi) = (lo as usize, hi as usize);
        if lo > 0 || hi < r[0] {
            e_taps(op, raw, c, j, k, 0, lo);
            e_taps(op, raw, c, j, k, hi.max(lo), r[0]);
        }
        for m in plan.runs_of(c, row) {
            let (lo, hi) = ((m.lo as usize).max(lo), (m.hi as usize).min(hi));
            if hi <= lo {
                continue;
            }
            let (n, p) = (hi - lo, p0 + lo);
            let out = run_mut(e.add(p), n);
            let (hb0, hb1, ha0, ha1) = (run(hb.add(p), n), run(hb.add(p - sa), n), run(ha.add(p), n), run(ha.add(p - sb), n));
            let (ca, cb) = (op.ca[m.m as usize], op.cb[m.m as usize]);
            let x = &ie[0][lo + 1..hi + 1];
            match c {
                0 => e_run(out, hb0, hb1, ha0, ha1, ie[1][j + 1], ie[2][k + 1], ca, cb),
                1 => e_run(out, hb0, hb1, ha0, ha1, ie[2][k + 1], x, ca, cb),
                _ => e_run(out, hb0, hb1, ha0, ha1, x, ie[1][j + 1], ca, cb),
            }
        }
    }
}

/// The PMC ghosts that plane k's H determines (`cpu::fdtd_pmc_ghosts` one
/// plane at a time): x and y faces on plane k, the z faces' ghost planes
/// when k is the plane next to them.
///
/// # Safety
/// Plane k's H is final for this step and this thread's, as are the ghost
/// planes -1 (k = 0) and nz (k = nz - 1).
#[inline(always)]
pub unsafe fn pmc_plane(op: &Operator, raw: Raw, k: usize) {
    for ax in 0..3 {
        for side in 0..2 {
            if !op.pmc[ax][side] {
                continue;
            }
            let (ghost, inner) = if side == 0 { (-1isize, 0isize) } else { (op.n[ax] as isize, op.n[ax] as isize - 1) };
            for c in (0..3).filter(|&c| c != ax) {
                let r = h_range(op, c);
                let h = raw.h[c];
                let mirror = |mut p: [isize; 3]| {
                    p[ax] = inner;
                    let src = op.at3(p);
                    p[ax] = ghost;
                    *h.add(op.at3(p)) = -*h.add(src);
                };
                match ax {
                    2 if k as isize == inner => {
                        for j in 0..r[1] {
                            for i in 0..r[0] {
                                mirror([i as isize, j as isize, 0]);
                            }
                        }
                    }
                    0 | 1 if k < r[2] => {
                        let u = 1 - ax;
                        for iu in 0..r[u] {
                            let mut p = [0isize, 0, k as isize];
                            p[u] = iu as isize;
                            mirror(p);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
