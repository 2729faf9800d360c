//! One z plane of one component: per row, vector runs (`lanes`) split where
//! an x layer begins or ends and where the material changes, each with the
//! CPML taps its cells need, plus the PMC ghosts of a plane. All
//! `#[inline(always)]`, so they are compiled inside each instruction-set
//! variant of the sweep.

use super::super::cpu::{e_range, h_range};
use super::super::operator::{Cpml1d, Operator};
use super::lanes::{e_run, h_run, Line, Plain, Row};
use super::plan::FastPlan;
use super::raw::{run, run_mut, Raw};

/// Run `$body` with `$x`, `$y` bound to the taps in the two options (or `Plain`).
macro_rules! with_taps {
    ($ta:expr, $tb:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($ta, $tb) {
            (Some($x), Some($y)) => $body,
            (Some($x), None) => {
                let $y = Plain;
                $body
            }
            (None, Some($y)) => {
                let $x = Plain;
                $body
            }
            (None, None) => {
                let $x = Plain;
                let $y = Plain;
                $body
            }
        }
    };
}

/// The coefficient arrays of one side (E or H) of a CPML profile.
#[inline(always)]
fn side(cp: &Cpml1d, e_side: bool) -> (&[f32], &[f32], &[f32]) {
    if e_side {
        (&cp.e_b, &cp.e_c, &cp.e_kinv)
    } else {
        (&cp.h_b, &cp.h_c, &cp.h_kinv)
    }
}

/// The tap of a y or z derivative on the row at `pos` along that axis:
/// `Some` inside the layer, the memory from flat index `p`.
///
/// # Safety
/// `psi` is the axis' memory array (present whenever the axis has a CPML).
#[inline(always)]
unsafe fn row_tap(op: &Operator, ax: usize, pos: usize, e_side: bool, psi: *mut f32, p: usize) -> Option<Row> {
    let cp = op.pml[ax].as_ref()?;
    let (b, c, kinv) = side(cp, e_side);
    (b[pos] > 0.0).then(|| Row { b: b[pos], c: c[pos], kinv: kinv[pos], psi: psi.add(p) })
}

/// The tap of the x derivative over cells `lo..` of a row: `Some` in the
/// segments that reach into an x layer (`inside`), the memory from flat `p`.
///
/// # Safety
/// As [`row_tap`].
#[inline(always)]
unsafe fn line_tap(op: &Operator, inside: bool, lo: usize, e_side: bool, psi: *mut f32, p: usize) -> Option<Line> {
    let cp = op.pml[0].as_ref().filter(|_| inside)?;
    let (b, c, kinv) = side(cp, e_side);
    Some(Line { b: b.as_ptr().add(lo), c: c.as_ptr().add(lo), kinv: kinv.as_ptr().add(lo), psi: psi.add(p) })
}

/// The segments of a row of `len` cells along x: before, inside and after
/// the x span free of CPML (`span`), with whether each is in a layer.
#[inline(always)]
fn segments(span: (u32, u32), len: usize) -> [(usize, usize, bool); 3] {
    let (lo, hi) = (span.0 as usize, span.1 as usize);
    [(0, lo, true), (lo, hi, false), (hi, len, true)]
}

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
    let (psa, psb) = (raw.psi_h[c][a], raw.psi_h[c][b]);
    let ih = &op.inv_h;
    for j in 0..r[1] {
        let p0 = op.at(0, j as isize, k as isize);
        if !op.h_rows[c][p0 / op.stride[1]] {
            continue;
        }
        for (lo, hi, edge) in segments(plan.x_span_h[c], r[0]) {
            if hi <= lo {
                continue;
            }
            let (n, p) = (hi - lo, p0 + lo);
            let out = run_mut(h.add(p), n);
            let (eb0, eb1, ea0, ea1) = (run(eb.add(p), n), run(eb.add(p + sa), n), run(ea.add(p), n), run(ea.add(p + sb), n));
            let x = &ih[0][lo + 1..hi + 1];
            match c {
                0 => with_taps!(row_tap(op, 1, j, false, psa, p), row_tap(op, 2, k, false, psb, p), |ta, tb| h_run(out, eb0, eb1, ea0, ea1, ih[1][j + 1], ih[2][k + 1], ta, tb, op.db)),
                1 => with_taps!(row_tap(op, 2, k, false, psa, p), line_tap(op, edge, lo, false, psb, p), |ta, tb| h_run(out, eb0, eb1, ea0, ea1, ih[2][k + 1], x, ta, tb, op.db)),
                _ => with_taps!(line_tap(op, edge, lo, false, psa, p), row_tap(op, 1, j, false, psb, p), |ta, tb| h_run(out, eb0, eb1, ea0, ea1, x, ih[1][j + 1], ta, tb, op.db)),
            }
        }
    }
}

/// E_c on plane k (nothing when k is outside its range), one material run at a time.
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
    let (psa, psb) = (raw.psi_e[c][a], raw.psi_e[c][b]);
    let ie = &op.inv_e;
    for j in 0..r[1] {
        let p0 = op.at(0, j as isize, k as isize);
        let row = p0 / op.stride[1];
        if !op.e_rows[c][row] {
            continue;
        }
        for (slo, shi, edge) in segments(plan.x_span_e[c], r[0]) {
            for m in plan.runs_of(c, row) {
                let (lo, hi) = ((m.lo as usize).max(slo), (m.hi as usize).min(shi));
                if hi <= lo {
                    continue;
                }
                let (n, p) = (hi - lo, p0 + lo);
                let out = run_mut(e.add(p), n);
                let (hb0, hb1, ha0, ha1) = (run(hb.add(p), n), run(hb.add(p - sa), n), run(ha.add(p), n), run(ha.add(p - sb), n));
                let (ca, cb) = (op.ca[m.m as usize], op.cb[m.m as usize]);
                let x = &ie[0][lo + 1..hi + 1];
                match c {
                    0 => with_taps!(row_tap(op, 1, j, true, psa, p), row_tap(op, 2, k, true, psb, p), |ta, tb| e_run(out, hb0, hb1, ha0, ha1, ie[1][j + 1], ie[2][k + 1], ta, tb, ca, cb)),
                    1 => with_taps!(row_tap(op, 2, k, true, psa, p), line_tap(op, edge, lo, true, psb, p), |ta, tb| e_run(out, hb0, hb1, ha0, ha1, ie[2][k + 1], x, ta, tb, ca, cb)),
                    _ => with_taps!(line_tap(op, edge, lo, true, psa, p), row_tap(op, 1, j, true, psb, p), |ta, tb| e_run(out, hb0, hb1, ha0, ha1, x, ie[1][j + 1], ta, tb, ca, cb)),
                }
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
