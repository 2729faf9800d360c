//! Carrying a change of some H nodes, made after the Yee step by a sparse
//! extension (lossy metal faces, conformal metal), into the E edges that
//! read those nodes: the E update is linear, so adding `cb curl(dH)` to those
//! edges gives exactly what the E update would have given with the changed
//! H. Gathered per edge rather than scattered per node so that every sum's
//! order, and so its bits, are the same on every device (CUDA twin: the
//! gather loop of kernels/fdtd_surface.cuh and kernels/fdtd_conformal.cuh).

use super::operator::Operator;

/// The E edges reading some changed node (component, flat index), each with
/// its nodes `e_first[j]..e_first[j+1]` of `e_term` (ascending) and the
/// change of the edge per unit change of that node (`cb` times the inverse
/// dual spacing, signed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ECarry {
    pub e_comp: Vec<u8>,
    pub e_idx: Vec<u32>,
    pub e_first: Vec<u32>,
    pub e_term: Vec<u32>,
    pub e_w: Vec<f32>,
}

/// The four E edges that read H component `c` at node `pos`, with the change
/// of each per unit change of the node (0: a PEC edge): E_b at p (-) and
/// p + sa (+) across a, E_a at p (+) and p + sb (-) across b; a mirrored PMC
/// ghost doubles the face edge's share.
pub fn node_reads(op: &Operator, c: usize, pos: [usize; 3]) -> [(u8, u32, f32); 4] {
    let n = op.n;
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let (sa, sb) = (op.stride[a], op.stride[b]);
    let p = op.at(pos[0] as isize, pos[1] as isize, pos[2] as isize);
    let w = |ec: usize, q: usize, ax: usize, qd: usize, sign: f64, ghost: bool| -> f32 {
        let m = op.mat[ec][q] as usize;
        (sign * op.cb[m] as f64 * op.inv_e[ax][qd + 1] as f64 * if ghost { 2.0 } else { 1.0 }) as f32
    };
    let (pa, pb) = (pos[a], pos[b]);
    let read = |ec: usize, q: usize, wt: f32| (ec as u8, q as u32, wt);
    [
        read(b, p, w(b, p, a, pa, -1.0, op.pmc[a][0] && pa == 0)),
        read(b, p + sa, w(b, p + sa, a, pa + 1, 1.0, op.pmc[a][1] && pa + 1 == n[a])),
        read(a, p, w(a, p, b, pb, 1.0, op.pmc[b][0] && pb == 0)),
        read(a, p + sb, w(a, p + sb, b, pb + 1, -1.0, op.pmc[b][1] && pb + 1 == n[b])),
    ]
}

impl ECarry {
    /// The gather lists of nodes `reads` (per term, in term order, its four
    /// reads as [`node_reads`] gives them) on arrays of `len`: edges
    /// ascending by (component, flat index), each edge's nodes in term order.
    pub fn build(reads: &[[(u8, u32, f32); 4]], len: usize) -> ECarry {
        let mut t = ECarry::default();
        // A counting sort by edge (a comparison sort of the reads cost more than
        // the scan): per E edge its count of reading nodes, then its first slot.
        let all = || reads.iter().enumerate().flat_map(|(term, x)| x.iter().filter(|r| r.2 != 0.0).map(move |&(ec, q, w)| (ec as usize, q as usize, term as u32, w)));
        let mut slot: [Vec<u32>; 3] = std::array::from_fn(|_| vec![0u32; len]);
        for (ec, q, _, _) in all() {
            slot[ec][q] += 1;
        }
        t.e_first.push(0);
        let mut total = 0u32;
        for (ec, s) in slot.iter_mut().enumerate() {
            for (q, v) in s.iter_mut().enumerate().filter(|(_, v)| **v > 0) {
                t.e_comp.push(ec as u8);
                t.e_idx.push(q as u32);
                (*v, total) = (total, total + *v);
                t.e_first.push(total);
            }
        }
        t.e_term = vec![0; total as usize];
        t.e_w = vec![0.0; total as usize];
        for (ec, q, term, w) in all() {
            let s = &mut slot[ec][q];
            t.e_term[*s as usize] = term;
            t.e_w[*s as usize] = w;
            *s += 1;
        }
        t
    }

    /// Edges reading some node.
    pub fn len(&self) -> usize {
        self.e_idx.len()
    }
    pub fn is_empty(&self) -> bool {
        self.e_idx.is_empty()
    }

    /// Add to each edge its nodes' changes `dh` (per term) times their weights.
    pub fn apply(&self, e: &mut [Vec<f32>; 3], dh: &[f32]) {
        for ((&c, &q), w) in self.e_comp.iter().zip(&self.e_idx).zip(self.e_first.windows(2)) {
            let (k0, k1) = (w[0] as usize, w[1] as usize);
            let x = &mut e[c as usize][q as usize];
            *x = self.e_w[k0..k1].iter().zip(&self.e_term[k0..k1]).fold(*x, |v, (&wt, &term)| v + wt * dh[term as usize]);
        }
    }
}
