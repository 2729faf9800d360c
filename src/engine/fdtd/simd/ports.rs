//! The port source and port monitor of one port on the raw field view, for
//! the wavefront (`wave.rs`), which runs them for one step while other steps
//! are under way on other planes. The arithmetic is `cpu::fdtd_inject` and
//! `cpu::fdtd_sample_ports`, term for term, restricted to one port.

use super::super::operator::Operator;
use super::raw::Raw;
use crate::job::PortTrace;

/// The planes (logical z, clamped to `0..planes`) that port `i`'s source and
/// monitor touch: lowest and highest.
pub fn window(op: &Operator, i: usize, planes: usize) -> (usize, usize) {
    let mut idx: Vec<usize> = vec![];
    if let Some(l) = &op.lumped[i] {
        let (a, b) = ((l.comp + 1) % 3, (l.comp + 2) % 3);
        idx.extend(&l.edges);
        idx.extend([l.mid, l.mid - op.stride[a], l.mid - op.stride[b]]);
    }
    if let Some(w) = &op.guides[i] {
        idx.extend(w.src_idx.iter().chain(&w.v_idx).chain(&w.h_lo).chain(&w.h_hi));
    }
    let plane = |q: usize| ((q / op.stride[2]) as isize - 1).clamp(0, planes as isize - 1) as usize;
    let lo = idx.iter().map(|&q| plane(q)).min().unwrap_or(0);
    let hi = idx.iter().map(|&q| plane(q)).max().unwrap_or(0);
    (lo, hi)
}

/// `cpu::fdtd_inject` for port `d` when it is the driven one.
///
/// # Safety
/// The port's planes are this thread's and hold step s, which no other step reads yet.
pub unsafe fn inject(op: &Operator, raw: Raw, d: usize, g: f64) {
    if let Some(l) = &op.lumped[d] {
        let vs = (g / l.len as f64) as f32;
        for (&p, &src) in l.edges.iter().zip(&l.src) {
            *raw.e[l.comp].add(p) -= src * vs;
        }
    }
    if let Some(w) = &op.guides[d] {
        let g = g as f32;
        for (&p, &amp) in w.src_idx.iter().zip(&w.src_amp) {
            *raw.e[w.comp_e].add(p) += amp * g;
        }
    }
}

/// `cpu::fdtd_sample_ports` for port `pi` into its trace.
///
/// # Safety
/// As [`inject`].
pub unsafe fn sample(op: &Operator, raw: Raw, pi: usize, tr: &mut PortTrace) {
    let e = |c: usize, p: usize| *raw.e[c].add(p);
    let h = |c: usize, p: usize| *raw.h[c].add(p);
    if let Some(l) = &op.lumped[pi] {
        let v: f64 = -l.edges.iter().zip(&l.w).map(|(&p, &w)| w * e(l.comp, p) as f64).sum::<f64>() * l.dl;
        let c = l.comp;
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let p = l.mid;
        let i = (h(b, p) as f64 - h(b, p - op.stride[a]) as f64) * l.loop_d[1] - (h(a, p) as f64 - h(a, p - op.stride[b]) as f64) * l.loop_d[0];
        tr.v.push(v);
        tr.i.push(i);
    } else if let Some(w) = &op.guides[pi] {
        let mut v = 0.0;
        let mut i = 0.0;
        for m in 0..w.v_idx.len() {
            v += w.weight[m] * e(w.comp_e, w.v_idx[m]) as f64;
            i += w.weight[m] * 0.5 * (h(w.comp_h, w.h_lo[m]) as f64 + h(w.comp_h, w.h_hi[m]) as f64);
        }
        tr.v.push(v);
        tr.i.push(w.i_sign * i);
    }
}
