//! The CPML taps: the cells of a row where a derivative axis lies inside an
//! absorbing layer, updated one at a time with the reference's arithmetic
//! (`cpu::stretch`), their memories `psi` included.

use super::super::cpu::stretch;
use super::super::operator::Operator;
use super::raw::{psi_at, Raw};

/// H_c at cells `i0..i1` of row (j, k), stretched where a CPML applies.
///
/// # Safety
/// The row is this thread's (see sweep.rs), its E neighbours not written meanwhile.
pub unsafe fn h_taps(op: &Operator, raw: Raw, c: usize, j: usize, k: usize, i0: usize, i1: usize) {
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let (ea, eb, h) = (raw.e[a], raw.e[b], raw.h[c]);
    let (cpa, cpb) = (op.pml[a].as_ref(), op.pml[b].as_ref());
    let (inv_a, inv_b, db) = (&op.inv_h[a], &op.inv_h[b], op.db);
    let p0 = op.at(0, j as isize, k as isize);
    for i in i0..i1 {
        let p = p0 + i;
        let pos = [i, j, k];
        let t1 = (*eb.add(p + sa) - *eb.add(p)) * inv_a[pos[a] + 1];
        let t2 = (*ea.add(p + sb) - *ea.add(p)) * inv_b[pos[b] + 1];
        let t1 = stretch(t1, pos[a], cpa, false, psi_at(raw.psi_h[c][a], p));
        let t2 = stretch(t2, pos[b], cpb, false, psi_at(raw.psi_h[c][b], p));
        *h.add(p) -= db * (t1 - t2);
    }
}

/// E_c at cells `i0..i1` of row (j, k), stretched where a CPML applies.
///
/// # Safety
/// As [`h_taps`], with the H neighbours.
pub unsafe fn e_taps(op: &Operator, raw: Raw, c: usize, j: usize, k: usize, i0: usize, i1: usize) {
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let (ha, hb, e) = (raw.h[a], raw.h[b], raw.e[c]);
    let (cpa, cpb) = (op.pml[a].as_ref(), op.pml[b].as_ref());
    let (inv_a, inv_b) = (&op.inv_e[a], &op.inv_e[b]);
    let (mat, ca, cb) = (&op.mat[c], &op.ca, &op.cb);
    let p0 = op.at(0, j as isize, k as isize);
    for i in i0..i1 {
        let p = p0 + i;
        let pos = [i, j, k];
        let t1 = (*hb.add(p) - *hb.add(p - sa)) * inv_a[pos[a] + 1];
        let t2 = (*ha.add(p) - *ha.add(p - sb)) * inv_b[pos[b] + 1];
        let t1 = stretch(t1, pos[a], cpa, true, psi_at(raw.psi_e[c][a], p));
        let t2 = stretch(t2, pos[b], cpb, true, psi_at(raw.psi_e[c][b], p));
        let m = mat[p] as usize;
        let x = &mut *e.add(p);
        *x = ca[m] * *x + cb[m] * (t1 - t2);
    }
}
