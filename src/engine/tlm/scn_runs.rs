//! The SCN's step over runs of alike nodes: consecutive nodes of one z-plane
//! with the same flags (faces, shorts) and coefficient kind gather from the
//! same links at the same offsets and scatter with the same coefficients, so
//! they are stepped [`W`] at a time in fixed-size local arrays, which the
//! compiler turns into vector instructions (AVX2 where the CPU has it). The
//! arithmetic is [`scatter_plain`] / [`scatter_loaded`]'s, node for node in
//! the same order: bit-identical to the node-by-node step (tested in scn.rs).
//!
//! [`scatter_plain`]: super::scn_node::scatter_plain
//! [`scatter_loaded`]: super::scn_node::scatter_loaded

use super::scn_geo::{face_bit, short_bit, Geo};
use super::scn_node::{link, Coef, E_LINKS, H_LINKS};

/// Nodes per block: one AVX2 vector of f32.
const W: usize = 8;

/// The runs of plane `kz` (base index `base`), into the plane's outputs `o`
/// and stubs (`cap`, `ind`: present where the mesh is loaded).
pub(crate) fn sweep_plane_runs(geo: &Geo, b: &[Vec<f32>; 12], kz: usize, o: &mut [&mut [f32]; 12], cap: Option<&mut [&mut [f32]; 3]>, ind: Option<&mut [&mut [f32]; 3]>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has the feature.
            return unsafe { sweep_avx2(geo, b, kz, o, cap, ind) };
        }
    }
    sweep(geo, b, kz, o, cap, ind)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sweep_avx2(geo: &Geo, b: &[Vec<f32>; 12], kz: usize, o: &mut [&mut [f32]; 12], cap: Option<&mut [&mut [f32]; 3]>, ind: Option<&mut [&mut [f32]; 3]>) {
    sweep(geo, b, kz, o, cap, ind)
}

#[inline(always)]
fn sweep(geo: &Geo, b: &[Vec<f32>; 12], kz: usize, o: &mut [&mut [f32]; 12], mut cap: Option<&mut [&mut [f32]; 3]>, mut ind: Option<&mut [&mut [f32]; 3]>) {
    let plane = geo.n[0] * geo.n[1];
    let base = kz * plane;
    let first = geo.runs.partition_point(|r| r.end <= base);
    for run in geo.runs[first..].iter().take_while(|r| r.start < base + plane) {
        // Per link: the array read, its offset from the node, and the factor (1: a
        // neighbour's pulse, exact; else the wall's reflection of the node's own).
        let k = &geo.coefs[run.kind as usize];
        let mut src = [(0usize, 0isize, 1f32); 12];
        for d in 0..3 {
            let s = geo.stride[d] as isize;
            for pol in 0..2 {
                let (ln, lp) = (link(d, 0, pol), link(d, 1, pol));
                let wall = |face: usize, l: usize| (l, 0, if run.flags & short_bit(face) != 0 { -1.0 } else { k.gface[face][pol] });
                src[ln] = if run.flags & face_bit(2 * d) == 0 { (lp, -s, 1.0) } else { wall(2 * d, ln) };
                src[lp] = if run.flags & face_bit(2 * d + 1) == 0 { (ln, s, 1.0) } else { wall(2 * d + 1, lp) };
            }
        }
        let loaded = run.kind != 0 && cap.is_some() && ind.is_some();
        let mut i = run.start;
        while i < run.end {
            let n = W.min(run.end - i);
            let mut a = [[0f32; W]; 12];
            for q in 0..12 {
                let (arr, off, f) = src[q];
                let from = &b[arr][(i as isize + off) as usize..][..n];
                if n == W {
                    for x in 0..W {
                        a[q][x] = f * from[x];
                    }
                } else {
                    for x in 0..n {
                        a[q][x] = f * from[x];
                    }
                }
            }
            let r = i - base;
            let mut bo = [[0f32; W]; 12];
            if loaded {
                let (cs, ls) = (cap.as_deref_mut().unwrap(), ind.as_deref_mut().unwrap());
                let mut c = [[0f32; W]; 3];
                let mut l = [[0f32; W]; 3];
                for e in 0..3 {
                    copy(&mut c[e], &cs[e][r..], n);
                    copy(&mut l[e], &ls[e][r..], n);
                }
                loaded_block(&a, &mut bo, &mut c, &mut l, k);
                for e in 0..3 {
                    copy(&mut cs[e][r..], &c[e], n);
                    copy(&mut ls[e][r..], &l[e], n);
                }
            } else {
                plain_block(&a, &mut bo);
            }
            for q in 0..12 {
                copy(&mut o[q][r..], &bo[q], n);
            }
            i += n;
        }
    }
}

/// `dst[..n] = src[..n]`, n <= W: a whole block as one vector move (a
/// `copy_from_slice` of unknown length is a library call, slower for 32 bytes).
#[inline(always)]
fn copy(dst: &mut [f32], src: &[f32], n: usize) {
    if n == W {
        dst[..W].copy_from_slice(&src[..W]);
    } else {
        for x in 0..n {
            dst[x] = src[x];
        }
    }
}

/// `scatter_plain` on W nodes.
#[inline(always)]
fn plain_block(a: &[[f32; W]; 12], b: &mut [[f32; W]; 12]) {
    let mut v = [[0f32; W]; 3];
    for e in 0..3 {
        let l = E_LINKS[e];
        for x in 0..W {
            v[e][x] = 0.5 * (a[l[0]][x] + a[l[1]][x] + a[l[2]][x] + a[l[3]][x]);
        }
    }
    for h in 0..3 {
        let [n1, p1, n2, p2] = H_LINKS[h];
        let (e1, e2) = ((h + 2) % 3, (h + 1) % 3);
        for x in 0..W {
            let i = 0.5 * ((a[n1][x] - a[p1][x]) - (a[n2][x] - a[p2][x]));
            b[n1][x] = v[e1][x] - i - a[p1][x];
            b[p1][x] = v[e1][x] + i - a[n1][x];
            b[n2][x] = v[e2][x] + i - a[p2][x];
            b[p2][x] = v[e2][x] - i - a[n2][x];
        }
    }
}

/// `scatter_loaded` on W nodes of one kind (no injection).
#[inline(always)]
fn loaded_block(a: &[[f32; W]; 12], b: &mut [[f32; W]; 12], c: &mut [[f32; W]; 3], l: &mut [[f32; W]; 3], k: &Coef) {
    let mut v = [[0f32; W]; 3];
    for e in 0..3 {
        let q = E_LINKS[e];
        let (y, ky) = (k.y[e], k.ky[e]);
        for x in 0..W {
            let s = a[q[0]][x] + a[q[1]][x] + a[q[2]][x] + a[q[3]][x];
            v[e][x] = (2.0 * (s + y * c[e][x]) - 0.0) * ky;
            c[e][x] = v[e][x] - c[e][x];
        }
    }
    for h in 0..3 {
        let [n1, p1, n2, p2] = H_LINKS[h];
        let (e1, e2) = ((h + 2) % 3, (h + 1) % 3);
        let (z, kz) = (k.z[h], k.kz[h]);
        for x in 0..W {
            let i = 2.0 * ((a[n1][x] - a[p1][x]) - (a[n2][x] - a[p2][x]) + l[h][x]) * kz;
            l[h][x] = z * i - l[h][x];
            b[n1][x] = v[e1][x] - i - a[p1][x];
            b[p1][x] = v[e1][x] + i - a[n1][x];
            b[n2][x] = v[e2][x] + i - a[p2][x];
            b[p2][x] = v[e2][x] - i - a[n2][x];
        }
    }
}
