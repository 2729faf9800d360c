//! One z plane of one component, row by row, in vectors of one level
//! (`simd.rs`): each row is cut into segments where the CPML stretching of
//! its two derivative terms is fixed (the terms along y or z are fixed over
//! the row, the term along x changes only at the x layers' edges), and each
//! segment runs as full vectors plus one masked tail. A stretched term
//! updates its CPML memory in the same pass. The arithmetic is the
//! reference's (`cpu::fdtd_update_h` / `fdtd_update_e` with `cpu::stretch`),
//! operation for operation, so the bits are the same on every level. Plus
//! the PMC ghosts of a plane. All `#[inline(always)]`: compiled inside each
//! level's sweep (`sweep.rs`).

use super::super::cpu::{e_range, h_range};
use super::super::operator::Operator;
use super::plan::{FastPlan, Q, MIXED};
use super::raw::Raw;
use super::simd::{Coefs, Simd};

/// One derivative term of a row: `t = (u[i] - v[i]) * inv`, then (where
/// stretched) `psi = b psi + c t; t = t kinv + psi`. Along x (`X`) the
/// inverse spacing and the CPML coefficients are per cell (pointers indexed
/// by the cell), along y or z they are the row's.
#[derive(Clone, Copy)]
struct Term {
    u: *const f32,
    v: *const f32,
    inv: f32,
    inv_p: *const f32,
    b: f32,
    c: f32,
    k: f32,
    b_p: *const f32,
    c_p: *const f32,
    k_p: *const f32,
    psi: *mut f32,
}

impl Term {
    /// The term along y or z of a row: `u`/`v` at the row's cell 0, `psi`
    /// the CPML memory at cell 0 (unused unless `q.st`).
    #[inline(always)]
    fn q(q: &Q, u: *const f32, v: *const f32, psi: *mut f32) -> Term {
        Term { u, v, inv: q.inv, inv_p: std::ptr::null(), b: q.b, c: q.c, k: q.k, b_p: std::ptr::null(), c_p: std::ptr::null(), k_p: std::ptr::null(), psi }
    }

    /// The term along x of a row (per-cell spacings and CPML coefficients `x`).
    #[inline(always)]
    fn x(x: &XTerm, u: *const f32, v: *const f32, psi: *mut f32) -> Term {
        Term { u, v, inv: 0.0, inv_p: x.inv, b: 0.0, c: 0.0, k: 0.0, b_p: x.b, c_p: x.c, k_p: x.k, psi }
    }
}

/// The per-cell tables of the x term, indexed by the cell of the row (the
/// CPML ones null without an x CPML).
struct XTerm {
    inv: *const f32,
    b: *const f32,
    c: *const f32,
    k: *const f32,
}

impl XTerm {
    #[inline(always)]
    fn new(op: &Operator, e_side: bool) -> XTerm {
        let inv = if e_side { &op.inv_e[0] } else { &op.inv_h[0] };
        let mut x = XTerm { inv: inv[1..].as_ptr(), b: std::ptr::null(), c: std::ptr::null(), k: std::ptr::null() };
        if let Some(cp) = &op.pml[0] {
            (x.b, x.c, x.k) = if e_side { (cp.e_b.as_ptr(), cp.e_c.as_ptr(), cp.e_kinv.as_ptr()) } else { (cp.h_b.as_ptr(), cp.h_c.as_ptr(), cp.h_kinv.as_ptr()) };
        }
        x
    }
}

/// The flat index of cell 0 of row (j, k) (`pos` = [0, j, k]).
#[inline(always)]
fn pos_offset(op: &Operator, pos: [usize; 3]) -> usize {
    1 + (pos[1] + 1) * op.stride[1] + (pos[2] + 1) * op.stride[2]
}

#[inline(always)]
unsafe fn ld<S: Simd, const MK: bool>(p: *const f32, m: S::M) -> S::V {
    if MK {
        S::load_m(p, m)
    } else {
        S::load(p)
    }
}

#[inline(always)]
unsafe fn st<S: Simd, const MK: bool>(p: *mut f32, v: S::V, m: S::M) {
    if MK {
        S::store_m(p, v, m)
    } else {
        S::store(p, v)
    }
}

/// Cells `p..p+W` (flat; or the masked ones) of a term whose row starts at
/// flat `x0` (the x tables are indexed by `p - x0`).
#[inline(always)]
unsafe fn term<S: Simd, const X: bool, const ST: bool, const MK: bool>(t: &Term, p: usize, x0: usize, m: S::M) -> S::V {
    let i = p.wrapping_sub(x0);
    let d = S::sub(ld::<S, MK>(t.u.wrapping_add(p), m), ld::<S, MK>(t.v.wrapping_add(p), m));
    let d = S::mul(d, if X { ld::<S, MK>(t.inv_p.wrapping_add(i), m) } else { S::splat(t.inv) });
    if !ST {
        return d;
    }
    let (b, c, k) = if X {
        (ld::<S, MK>(t.b_p.wrapping_add(i), m), ld::<S, MK>(t.c_p.wrapping_add(i), m), ld::<S, MK>(t.k_p.wrapping_add(i), m))
    } else {
        (S::splat(t.b), S::splat(t.c), S::splat(t.k))
    };
    let psi = S::add(S::mul(b, ld::<S, MK>(t.psi.wrapping_add(p), m)), S::mul(c, d));
    st::<S, MK>(t.psi.wrapping_add(p), psi, m);
    S::add(S::mul(d, k), psi)
}

/// `h -= db (t1 - t2)` over flat cells `p0..p1` of a row starting at flat `x0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn h_seg<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool>(h: *mut f32, ta: &Term, tb: &Term, db: f32, x0: usize, p0: usize, p1: usize) {
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blk<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool, const MK: bool>(h: *mut f32, ta: &Term, tb: &Term, db: S::V, x0: usize, p: usize, m: S::M) {
        let t1 = term::<S, AX, SA, MK>(ta, p, x0, m);
        let t2 = term::<S, BX, SB, MK>(tb, p, x0, m);
        let x = ld::<S, MK>(h.add(p), m);
        st::<S, MK>(h.add(p), S::sub(x, S::mul(db, S::sub(t1, t2))), m);
    }
    let dbv = S::splat(db);
    let full = S::mask(S::W);
    let mut p = p0;
    while p + S::W <= p1 {
        blk::<S, AX, BX, SA, SB, false>(h, ta, tb, dbv, x0, p, full);
        p += S::W;
    }
    if p < p1 {
        blk::<S, AX, BX, SA, SB, true>(h, ta, tb, dbv, x0, p, S::mask(p1 - p));
    }
}

/// Material coefficients of a row: one material (`ca`, `cb`) or per cell.
#[derive(Clone, Copy)]
struct Mat<'a> {
    ca: f32,
    cb: f32,
    cells: *const u8,
    tab: &'a Coefs,
    full_ca: &'a [f32],
    full_cb: &'a [f32],
}

/// `e = ca e + cb (t1 - t2)` over flat cells `p0..p1` of a row starting at
/// flat `x0` (`MIX`: per-cell materials).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn e_seg<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool, const MIX: bool>(e: *mut f32, ta: &Term, tb: &Term, mt: &Mat, x0: usize, p0: usize, p1: usize) {
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blk<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool, const MIX: bool, const MK: bool>(
        e: *mut f32,
        ta: &Term,
        tb: &Term,
        mt: &Mat,
        ca: S::V,
        cb: S::V,
        x0: usize,
        p: usize,
        n: usize,
        m: S::M,
    ) {
        let t1 = term::<S, AX, SA, MK>(ta, p, x0, m);
        let t2 = term::<S, BX, SB, MK>(tb, p, x0, m);
        let (ca, cb) = if MIX { S::coefs(mt.tab, mt.full_ca, mt.full_cb, mt.cells.add(p), n, m) } else { (ca, cb) };
        let x = ld::<S, MK>(e.add(p), m);
        st::<S, MK>(e.add(p), S::add(S::mul(ca, x), S::mul(cb, S::sub(t1, t2))), m);
    }
    let (ca, cb) = (S::splat(mt.ca), S::splat(mt.cb));
    let full = S::mask(S::W);
    let mut p = p0;
    while p + S::W <= p1 {
        blk::<S, AX, BX, SA, SB, MIX, false>(e, ta, tb, mt, ca, cb, x0, p, S::W, full);
        p += S::W;
    }
    if p < p1 {
        blk::<S, AX, BX, SA, SB, MIX, true>(e, ta, tb, mt, ca, cb, x0, p, p1 - p, S::mask(p1 - p));
    }
}

/// The x runs of a row: `runs` (cells and whether the x term is stretched)
/// when one term is along x, else the whole row unstretched along x.
#[inline(always)]
fn x_runs<'a>(runs: &'a [(u32, u32, bool)], whole: &'a [(u32, u32, bool); 1], has_x: bool) -> &'a [(u32, u32, bool)] {
    if has_x {
        runs
    } else {
        whole
    }
}

/// H_C on planes `k0..k1` (those in its range); `AX`/`BX`: the
/// first/second derivative term runs along x (C = 2 / C = 1).
///
/// # Safety
/// Planes k0..k1 of H_C (and its CPML memories) are this thread's; E planes
/// k0..=k1 are not written meanwhile.
#[inline(always)]
pub unsafe fn h_planes<S: Simd, const C: usize, const AX: bool, const BX: bool>(op: &Operator, plan: &FastPlan, raw: Raw, k0: usize, k1: usize) {
    let rows = plan.h_rows[C].planes(k0, k1);
    if rows.is_empty() {
        return;
    }
    let (a, b) = ((C + 1) % 3, (C + 2) % 3);
    debug_assert_eq!((AX, BX), (a == 0, b == 0));
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let whole = [(0u32, h_range(op, C)[0] as u32, false)];
    let runs = x_runs(&plan.h_xruns[C], &whole, AX || BX);
    let xt = XTerm::new(op, false);
    let (qa, qb) = (&plan.q_h[a], &plan.q_h[b]);
    // Whole arrays, indexed by the flat cell.
    let (eb, ea, h) = (raw.e[b] as *const f32, raw.e[a] as *const f32, raw.h[C]);
    let (pa, pb) = (raw.psi_h[C][a], raw.psi_h[C][b]);
    for &(j, k) in rows {
        let (j, k) = (j as usize, k as usize);
        let pos = [0, j, k];
        let p0 = pos_offset(op, pos);
        let (ta, sta) = if AX { (Term::x(&xt, eb.wrapping_add(sa), eb, pa), false) } else { let q = qa.get_unchecked(pos[a]); (Term::q(q, eb.wrapping_add(sa), eb, pa), q.st) };
        let (tb, stb) = if BX { (Term::x(&xt, ea.wrapping_add(sb), ea, pb), false) } else { let q = qb.get_unchecked(pos[b]); (Term::q(q, ea.wrapping_add(sb), ea, pb), q.st) };
        for &(i0, i1, xs) in runs {
            let (i0, i1) = (p0 + i0 as usize, p0 + i1 as usize);
            let (fa, fb) = (if AX { xs } else { sta }, if BX { xs } else { stb });
            macro_rules! go {
                ($fa:literal, $fb:literal) => {
                    h_seg::<S, AX, BX, $fa, $fb>(h, &ta, &tb, op.db, p0, i0, i1)
                };
            }
            match (fa, fb) {
                (false, false) => go!(false, false),
                (true, false) => go!(true, false),
                (false, true) => go!(false, true),
                (true, true) => go!(true, true),
            }
        }
    }
}

/// E_C on planes `k0..k1` (those in its range); `AX`, `BX` as for H.
///
/// # Safety
/// Planes k0..k1 of E_C (and its CPML memories) are this thread's; H planes
/// k0-1..k1 are final for this step and not written meanwhile.
#[inline(always)]
pub unsafe fn e_planes<S: Simd, const C: usize, const AX: bool, const BX: bool>(op: &Operator, plan: &FastPlan, raw: Raw, k0: usize, k1: usize) {
    let rows = plan.e_rows[C].planes(k0, k1);
    if rows.is_empty() {
        return;
    }
    let (a, b) = ((C + 1) % 3, (C + 2) % 3);
    debug_assert_eq!((AX, BX), (a == 0, b == 0));
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let whole = [(0u32, e_range(op, C)[0] as u32, false)];
    let runs = x_runs(&plan.e_xruns[C], &whole, AX || BX);
    let xt = XTerm::new(op, true);
    let (qa, qb) = (&plan.q_e[a], &plan.q_e[b]);
    // Whole arrays, indexed by the flat cell.
    let (hb, ha, e) = (raw.h[b] as *const f32, raw.h[a] as *const f32, raw.e[C]);
    let (pa, pb) = (raw.psi_e[C][a], raw.psi_e[C][b]);
    // SAFETY (the unchecked look-ups below): the plan's tables cover every
    // position (0..=n per axis) and every padded row.
    let e_mat = &plan.e_mat[C];
    debug_assert!(qa.len().min(qb.len()) > op.n[1].min(op.n[2]) || AX || BX);
    let mt0 = Mat { ca: 0.0, cb: 0.0, cells: op.mat[C].as_ptr(), tab: &plan.coefs, full_ca: &op.ca, full_cb: &op.cb };
    for &(j, k) in rows {
        let (j, k) = (j as usize, k as usize);
        let pos = [0, j, k];
        let p0 = pos_offset(op, pos);
        let (ta, sta) = if AX { (Term::x(&xt, hb, hb.wrapping_sub(sa), pa), false) } else { let q = qa.get_unchecked(pos[a]); (Term::q(q, hb, hb.wrapping_sub(sa), pa), q.st) };
        let (tb, stb) = if BX { (Term::x(&xt, ha, ha.wrapping_sub(sb), pb), false) } else { let q = qb.get_unchecked(pos[b]); (Term::q(q, ha, ha.wrapping_sub(sb), pb), q.st) };
        let m = *e_mat.get_unchecked((j + 1) + (k + 1) * op.dims[1]);
        let mix = m == MIXED;
        let mt = if mix { mt0 } else { Mat { ca: op.ca[m as usize], cb: op.cb[m as usize], ..mt0 } };
        for &(i0, i1, xs) in runs {
            let (i0, i1) = (p0 + i0 as usize, p0 + i1 as usize);
            let (fa, fb) = (if AX { xs } else { sta }, if BX { xs } else { stb });
            macro_rules! go {
                ($fa:literal, $fb:literal, $mix:literal) => {
                    e_seg::<S, AX, BX, $fa, $fb, $mix>(e, &ta, &tb, &mt, p0, i0, i1)
                };
            }
            match (fa, fb, mix) {
                (false, false, false) => go!(false, false, false),
                (true, false, false) => go!(true, false, false),
                (false, true, false) => go!(false, true, false),
                (true, true, false) => go!(true, true, false),
                (false, false, true) => go!(false, false, true),
                (true, false, true) => go!(true, false, true),
                (false, true, true) => go!(false, true, true),
                (true, true, true) => go!(true, true, true),
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
