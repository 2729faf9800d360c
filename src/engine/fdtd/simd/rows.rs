//! One row of one component in vectors of one level (`simd.rs`), plus its
//! PMC ghosts: each row is cut into segments where the CPML stretching of
//! its two derivative terms is fixed (the terms along y or z are fixed over
//! the row, the term along x changes only at the x layers' edges), and each
//! segment runs as full vectors plus one masked tail. A stretched term
//! updates its CPML memory in the same pass. The arithmetic is the
//! reference's (`cpu::fdtd_update_h` / `fdtd_update_e` with `cpu::stretch`),
//! operation for operation, so the bits are the same on every level. Plus
//! the PMC ghosts of a row. All `#[inline(always)]`: compiled inside each
//! level's sweep (`sweep.rs`).

use super::super::cpu::{e_range, h_range};
use super::super::operator::Operator;
use super::plan::{SimdPlan, Q, MIXED, WALLS};
use super::raw::Raw;
use super::lanes::{Coefs, Simd};

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

/// How an E row's material coefficients are found ([`e_seg`]'s `MIX`).
const UNIFORM: u8 = 0;
const PER_CELL: u8 = 1;
const ENDS: u8 = 2;

/// Material coefficients of a row: one material (`ca`, `cb`), per cell, or
/// one material but at the first and last cells (`ENDS`: `ends`, the
/// coefficients of cells 0 and `last`).
#[derive(Clone, Copy)]
struct Mat<'a> {
    ca: f32,
    cb: f32,
    ends: [(f32, f32); 2],
    last: usize,
    cells: *const u8,
    tab: &'a Coefs,
    full_ca: &'a [f32],
    full_cb: &'a [f32],
}

/// `e = ca e + cb (t1 - t2)` over flat cells `p0..p1` of a row starting at
/// flat `x0` (`MIX`: how the materials are found, see [`Mat`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn e_seg<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool, const MIX: u8>(e: *mut f32, ta: &Term, tb: &Term, mt: &Mat, x0: usize, p0: usize, p1: usize) {
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn blk<S: Simd, const AX: bool, const BX: bool, const SA: bool, const SB: bool, const MIX: u8, const MK: bool>(
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
        let (ca, cb) = match MIX {
            PER_CELL => S::coefs(mt.tab, mt.full_ca, mt.full_cb, mt.cells.add(p), n, m),
            ENDS => {
                // Cells i..i+n of the row: the ends, where in this block, get their own.
                let i = p - x0;
                let (mut ca, mut cb) = (ca, cb);
                if i == 0 {
                    (ca, cb) = (S::set_lane(ca, 0, mt.ends[0].0), S::set_lane(cb, 0, mt.ends[0].1));
                }
                if mt.last >= i && mt.last < i + n {
                    (ca, cb) = (S::set_lane(ca, mt.last - i, mt.ends[1].0), S::set_lane(cb, mt.last - i, mt.ends[1].1));
                }
                (ca, cb)
            }
            _ => (ca, cb),
        };
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
/// when one term is along x, else the whole row (`whole`) unstretched along x.
#[inline(always)]
fn x_runs<'a>(runs: &'a [(u32, u32, bool)], whole: &'a [(u32, u32, bool); 1], has_x: bool) -> &'a [(u32, u32, bool)] {
    if has_x {
        runs
    } else {
        whole
    }
}

/// What every H_C row shares: `AX`/`BX`: the first/second derivative term
/// runs along x (C = 2 / C = 1).
pub struct HRows<'a, const C: usize, const AX: bool, const BX: bool> {
    runs: &'a [(u32, u32, bool)],
    whole: [(u32, u32, bool); 1],
    xt: XTerm,
    qa: &'a [Q],
    qb: &'a [Q],
    /// Whole arrays, indexed by the flat cell.
    eb: *const f32,
    ea: *const f32,
    h: *mut f32,
    pa: *mut f32,
    pb: *mut f32,
    sa: usize,
    sb: usize,
    db: f32,
    s1: usize,
    s2: usize,
}

impl<'a, const C: usize, const AX: bool, const BX: bool> HRows<'a, C, AX, BX> {
    #[inline(always)]
    pub fn new(op: &'a Operator, plan: &'a SimdPlan, raw: Raw) -> Self {
        let (a, b) = ((C + 1) % 3, (C + 2) % 3);
        debug_assert_eq!((AX, BX), (a == 0, b == 0));
        HRows {
            runs: &plan.h_xruns[C],
            whole: [(0u32, h_range(op, C)[0] as u32, false)],
            xt: XTerm::new(op, false),
            qa: &plan.q_h[a],
            qb: &plan.q_h[b],
            eb: raw.e[b],
            ea: raw.e[a],
            h: raw.h[C],
            pa: raw.psi_h[C][a],
            pb: raw.psi_h[C][b],
            sa: op.stride[a],
            sb: op.stride[b],
            db: op.db,
            s1: op.stride[1],
            s2: op.stride[2],
        }
    }

    /// H_C on row (j, k).
    ///
    /// # Safety
    /// The row is in H_C's range, this thread's (with its CPML memories), and
    /// its E neighbours (rows j, j+1 on planes k, k+1) are not written meanwhile.
    #[inline(always)]
    pub unsafe fn row<S: Simd>(&self, j: usize, k: usize) {
        let (a, b) = ((C + 1) % 3, (C + 2) % 3);
        let pos = [0, j, k];
        let p0 = 1 + (j + 1) * self.s1 + (k + 1) * self.s2;
        let (eb, ea) = (self.eb as *const f32, self.ea as *const f32);
        // SAFETY: the plan's tables cover every position (0..=n) of y and z.
        let (ta, sta) = if AX { (Term::x(&self.xt, eb.wrapping_add(self.sa), eb, self.pa), false) } else { let q = self.qa.get_unchecked(pos[a]); (Term::q(q, eb.wrapping_add(self.sa), eb, self.pa), q.st) };
        let (tb, stb) = if BX { (Term::x(&self.xt, ea.wrapping_add(self.sb), ea, self.pb), false) } else { let q = self.qb.get_unchecked(pos[b]); (Term::q(q, ea.wrapping_add(self.sb), ea, self.pb), q.st) };
        for &(i0, i1, xs) in x_runs(self.runs, &self.whole, AX || BX) {
            let (i0, i1) = (p0 + i0 as usize, p0 + i1 as usize);
            let (fa, fb) = (if AX { xs } else { sta }, if BX { xs } else { stb });
            macro_rules! go {
                ($fa:literal, $fb:literal) => {
                    h_seg::<S, AX, BX, $fa, $fb>(self.h, &ta, &tb, self.db, p0, i0, i1)
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

/// What every E_C row shares (`AX`, `BX` as for [`HRows`]).
pub struct ERows<'a, const C: usize, const AX: bool, const BX: bool> {
    runs: &'a [(u32, u32, bool)],
    whole: [(u32, u32, bool); 1],
    xt: XTerm,
    qa: &'a [Q],
    qb: &'a [Q],
    hb: *const f32,
    ha: *const f32,
    e: *mut f32,
    pa: *mut f32,
    pb: *mut f32,
    sa: usize,
    sb: usize,
    e_mat: &'a [u16],
    ca: &'a [f32],
    cb: &'a [f32],
    mt0: Mat<'a>,
    d1: usize,
    s1: usize,
    s2: usize,
}

impl<'a, const C: usize, const AX: bool, const BX: bool> ERows<'a, C, AX, BX> {
    #[inline(always)]
    pub fn new(op: &'a Operator, plan: &'a SimdPlan, raw: Raw) -> Self {
        let (a, b) = ((C + 1) % 3, (C + 2) % 3);
        debug_assert_eq!((AX, BX), (a == 0, b == 0));
        ERows {
            runs: &plan.e_xruns[C],
            whole: [(0u32, e_range(op, C)[0] as u32, false)],
            xt: XTerm::new(op, true),
            qa: &plan.q_e[a],
            qb: &plan.q_e[b],
            hb: raw.h[b],
            ha: raw.h[a],
            e: raw.e[C],
            pa: raw.psi_e[C][a],
            pb: raw.psi_e[C][b],
            sa: op.stride[a],
            sb: op.stride[b],
            e_mat: &plan.e_mat[C],
            ca: &op.ca,
            cb: &op.cb,
            mt0: Mat { ca: 0.0, cb: 0.0, ends: [(0.0, 0.0); 2], last: e_range(op, C)[0] - 1, cells: op.mat[C].as_ptr(), tab: &plan.coefs, full_ca: &op.ca, full_cb: &op.cb },
            d1: op.dims[1],
            s1: op.stride[1],
            s2: op.stride[2],
        }
    }

    /// E_C on row (j, k).
    ///
    /// # Safety
    /// The row is in E_C's range, this thread's (with its CPML memories), and
    /// its H neighbours (rows j-1, j on planes k-1, k) are final for this
    /// step and not written meanwhile.
    #[inline(always)]
    pub unsafe fn row<S: Simd>(&self, j: usize, k: usize) {
        let (a, b) = ((C + 1) % 3, (C + 2) % 3);
        let pos = [0, j, k];
        let p0 = 1 + (j + 1) * self.s1 + (k + 1) * self.s2;
        let (hb, ha) = (self.hb, self.ha);
        // SAFETY: the plan's tables cover every position (0..=n) of y and z and every padded row.
        let (ta, sta) = if AX { (Term::x(&self.xt, hb, hb.wrapping_sub(self.sa), self.pa), false) } else { let q = self.qa.get_unchecked(pos[a]); (Term::q(q, hb, hb.wrapping_sub(self.sa), self.pa), q.st) };
        let (tb, stb) = if BX { (Term::x(&self.xt, ha, ha.wrapping_sub(self.sb), self.pb), false) } else { let q = self.qb.get_unchecked(pos[b]); (Term::q(q, ha, ha.wrapping_sub(self.sb), self.pb), q.st) };
        let m = *self.e_mat.get_unchecked((j + 1) + (k + 1) * self.d1);
        // SAFETY: the plan's material indices are the table's.
        let coef = |m: usize| (*self.ca.get_unchecked(m), *self.cb.get_unchecked(m));
        let (mix, mt) = if m == MIXED {
            (PER_CELL, self.mt0)
        } else if m & WALLS != 0 {
            let (ca, cb) = coef((m & 0xff) as usize);
            let cells = self.mt0.cells.add(p0);
            (ENDS, Mat { ca, cb, ends: [coef(*cells as usize), coef(*cells.add(self.mt0.last) as usize)], ..self.mt0 })
        } else {
            let (ca, cb) = coef(m as usize);
            (UNIFORM, Mat { ca, cb, ..self.mt0 })
        };
        for &(i0, i1, xs) in x_runs(self.runs, &self.whole, AX || BX) {
            let (i0, i1) = (p0 + i0 as usize, p0 + i1 as usize);
            let (fa, fb) = (if AX { xs } else { sta }, if BX { xs } else { stb });
            macro_rules! go {
                ($fa:literal, $fb:literal, $mix:expr) => {
                    e_seg::<S, AX, BX, $fa, $fb, { $mix }>(self.e, &ta, &tb, &mt, p0, i0, i1)
                };
            }
            match (fa, fb, mix) {
                (false, false, UNIFORM) => go!(false, false, UNIFORM),
                (true, false, UNIFORM) => go!(true, false, UNIFORM),
                (false, true, UNIFORM) => go!(false, true, UNIFORM),
                (true, true, UNIFORM) => go!(true, true, UNIFORM),
                (false, false, ENDS) => go!(false, false, ENDS),
                (true, false, ENDS) => go!(true, false, ENDS),
                (false, true, ENDS) => go!(false, true, ENDS),
                (true, true, ENDS) => go!(true, true, ENDS),
                (false, false, _) => go!(false, false, PER_CELL),
                (true, false, _) => go!(true, false, PER_CELL),
                (false, true, _) => go!(false, true, PER_CELL),
                (true, true, _) => go!(true, true, PER_CELL),
            }
        }
    }
}

/// The PMC ghosts that row (j, k) of H determines (`cpu::fdtd_pmc_ghosts`
/// row by row): the x faces' ghost cells of the row, the row's image in the
/// y faces' ghost rows (j next to the face) and in the z faces' ghost planes
/// (k next to the face), for the H components tangential to each face.
///
/// # Safety
/// Row (j, k) of H is final for this step and this thread's, as are its ghosts.
#[inline(always)]
pub unsafe fn pmc_row(op: &Operator, raw: Raw, j: usize, k: usize) {
    for ax in 0..3 {
        for side in 0..2 {
            if !op.pmc[ax][side] {
                continue;
            }
            let (ghost, inner) = if side == 0 { (-1isize, 0isize) } else { (op.n[ax] as isize, op.n[ax] as isize - 1) };
            for c in (0..3).filter(|&c| c != ax) {
                let r = h_range(op, c);
                if j >= r[1] || k >= r[2] {
                    continue;
                }
                let h = raw.h[c];
                let mirror = |mut p: [isize; 3]| {
                    p[ax] = inner;
                    let src = op.at3(p);
                    p[ax] = ghost;
                    *h.add(op.at3(p)) = -*h.add(src);
                };
                match ax {
                    0 => mirror([0, j as isize, k as isize]),
                    _ if [0, j, k][ax] as isize == inner => {
                        for i in 0..r[0] {
                            mirror([i as isize, j as isize, k as isize]);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
