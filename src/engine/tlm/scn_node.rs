//! Scattering of one stub-loaded symmetrical condensed node (SCN).
//!
//! Link numbering: `4*d + 2*side + pol`, with `d` the axis the line runs
//! along, `side` 0 on the negative face and 1 on the positive face, and `pol`
//! 0/1 for a polarisation along `Axis::others(d).0` / `.1`. So 0..12 are
//! xny xnz xpy xpz ynz ynx ypz ypx znx zny zpx zpy.
//!
//! The node splits into three shunt (E) and three series (H) sub-nodes
//! (Johns; Christopoulos ch. 6). With normalised (Z0 = 1) quantities, stub
//! admittances `Y`, stub impedances `Z`, conductances `G`, resistances `R`:
//!
//! `V_e = 2 (sum of the four e-polarised incident pulses + Y_e c_e) / (4 + Y_e + G_e)`
//! `I_h = 2 ((a_n1 - a_p1) - (a_n2 - a_p2) + l_h) / (4 + Z_h + R_h)`
//!
//! where pair 1 is the line along h+1 polarised h+2 and pair 2 the line along
//! h+2 polarised h+1. Each link is reflected as `V_e -+ I_h` minus the
//! incident pulse on the opposite side of the same line. This follows from
//! charge/flux conservation and pairwise E/H continuity; with no stubs it is
//! seed 003 eq. 2.26 (tested below). Stubs: open capacitive `c` (next incident
//! = reflected), short inductive `l` (next incident = -reflected).

/// Index of link (direction d, side, polarisation pol).
pub const fn link(d: usize, side: usize, pol: usize) -> usize {
    4 * d + 2 * side + pol
}

/// Polarisation index (0/1) of field axis `e` on a line along `d` (e != d).
pub const fn pol_of(d: usize, e: usize) -> usize {
    if (d + 1) % 3 == e {
        0
    } else {
        1
    }
}

/// The four links polarised along each axis.
pub const E_LINKS: [[usize; 4]; 3] = {
    let mut t = [[0; 4]; 3];
    let mut e = 0;
    while e < 3 {
        let d1 = (e + 1) % 3;
        let d2 = (e + 2) % 3;
        t[e] = [link(d1, 0, 1), link(d1, 1, 1), link(d2, 0, 0), link(d2, 1, 0)];
        e += 1;
    }
    t
};

/// For each H axis: [n1, p1, n2, p2] (pair 1 along h+1 polarised h+2, pair 2 along h+2 polarised h+1).
pub const H_LINKS: [[usize; 4]; 3] = {
    let mut t = [[0; 4]; 3];
    let mut h = 0;
    while h < 3 {
        let d1 = (h + 1) % 3;
        let d2 = (h + 2) % 3;
        t[h] = [link(d1, 0, 0), link(d1, 1, 0), link(d2, 0, 1), link(d2, 1, 1)];
        h += 1;
    }
    t
};

/// Per-node coefficients (normalised to the link impedance).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coef {
    /// Capacitive stub admittance per E axis.
    pub y: [f32; 3],
    /// 1 / (4 + Y + G) per E axis.
    pub ky: [f32; 3],
    /// Inductive stub impedance per H axis.
    pub z: [f32; 3],
    /// 1 / (4 + Z + R) per H axis.
    pub kz: [f32; 3],
    /// Reflection coefficient of each domain face (2*axis + side) for each polarisation.
    pub gface: [[f32; 2]; 6],
}

impl Coef {
    pub const PLAIN: Coef = Coef { y: [0.0; 3], ky: [0.25; 3], z: [0.0; 3], kz: [0.25; 3], gface: [[0.0; 2]; 6] };
}

/// Unloaded node (cubic cell in vacuum): seed eq. 2.26.
#[inline(always)]
// The definition the run loops (scn_runs) follow; stepped node by node in the tests.
#[cfg_attr(not(test), allow(dead_code))]
pub fn scatter_plain(a: &[f32; 12], b: &mut [f32; 12]) {
    let mut v = [0f32; 3];
    for e in 0..3 {
        let l = E_LINKS[e];
        v[e] = 0.5 * (a[l[0]] + a[l[1]] + a[l[2]] + a[l[3]]);
    }
    for h in 0..3 {
        let [n1, p1, n2, p2] = H_LINKS[h];
        let i = 0.5 * ((a[n1] - a[p1]) - (a[n2] - a[p2]));
        let (e1, e2) = ((h + 2) % 3, (h + 1) % 3);
        b[n1] = v[e1] - i - a[p1];
        b[p1] = v[e1] + i - a[n1];
        b[n2] = v[e2] + i - a[p2];
        b[p2] = v[e2] - i - a[n2];
    }
}

/// Stub-loaded node. `c`/`l` hold the stubs' incident pulses and are replaced by
/// the next ones. `inj[e]` is `Z0 * I` of a current drawn from the E_e shunt
/// sub-node (lumped ports). Returns the node voltages V_e.
#[inline(always)]
pub fn scatter_loaded(a: &[f32; 12], b: &mut [f32; 12], c: &mut [f32; 3], l: &mut [f32; 3], k: &Coef, inj: [f32; 3]) -> [f32; 3] {
    let mut v = [0f32; 3];
    for e in 0..3 {
        let q = E_LINKS[e];
        let s = a[q[0]] + a[q[1]] + a[q[2]] + a[q[3]];
        v[e] = (2.0 * (s + k.y[e] * c[e]) - inj[e]) * k.ky[e];
        c[e] = v[e] - c[e];
    }
    for h in 0..3 {
        let [n1, p1, n2, p2] = H_LINKS[h];
        let i = 2.0 * ((a[n1] - a[p1]) - (a[n2] - a[p2]) + l[h]) * k.kz[h];
        l[h] = k.z[h] * i - l[h];
        let (e1, e2) = ((h + 2) % 3, (h + 1) % 3);
        b[n1] = v[e1] - i - a[p1];
        b[p1] = v[e1] + i - a[n1];
        b[n2] = v[e2] + i - a[p2];
        b[p2] = v[e2] - i - a[n2];
    }
    v
}

/// Shunt sum `sum a + Y c` of the E_e sub-node (for the lumped-port solve).
#[inline]
pub fn shunt_sum(a: &[f32; 12], c: &[f32; 3], k: &Coef, e: usize) -> f64 {
    let q = E_LINKS[e];
    (a[q[0]] + a[q[1]] + a[q[2]] + a[q[3]]) as f64 + (k.y[e] * c[e]) as f64
}

/// Energy stored in a node's stubs (link energy is summed separately).
#[inline]
pub fn stub_energy(c: [f32; 3], l: [f32; 3], k: &Coef) -> f64 {
    let mut s = 0.0;
    for e in 0..3 {
        s += (k.y[e] * c[e] * c[e]) as f64;
        if k.z[e] > 0.0 {
            s += (l[e] * l[e] / k.z[e]) as f64;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rnd(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    #[test]
    fn plain_node_is_seed_eq_2_26() {
        // Seed 003 eq. 2.26 written out (its first line has a typo: V_zpy for V_zpx).
        let mut s = 7;
        let a: [f32; 12] = std::array::from_fn(|_| rnd(&mut s));
        let [xny, xnz, xpy, xpz, ynz, ynx, ypz, ypx, znx, zny, zpx, zpy] = a;
        let mut want = [0f32; 12];
        want[5] = 0.5 * (znx + zpx + xny - xpy);
        want[7] = 0.5 * (znx + zpx + xpy - xny);
        want[8] = 0.5 * (ynx + ypx + xnz - xpz);
        want[10] = 0.5 * (ynx + ypx + xpz - xnz);
        want[9] = 0.5 * (xny + xpy + ynz - ypz);
        want[11] = 0.5 * (xny + xpy + ypz - ynz);
        want[0] = 0.5 * (zny + zpy + ynx - ypx);
        want[2] = 0.5 * (zny + zpy + ypx - ynx);
        want[1] = 0.5 * (ynz + ypz + znx - zpx);
        want[3] = 0.5 * (ynz + ypz + zpx - znx);
        want[4] = 0.5 * (xnz + xpz + zny - zpy);
        want[6] = 0.5 * (xnz + xpz + zpy - zny);
        let mut b = [0f32; 12];
        scatter_plain(&a, &mut b);
        for l in 0..12 {
            assert!((b[l] - want[l]).abs() < 1e-6, "link {l}: {} vs {}", b[l], want[l]);
        }
        // The loaded formula with no stubs agrees.
        let mut b2 = [0f32; 12];
        scatter_loaded(&a, &mut b2, &mut [0.0; 3], &mut [0.0; 3], &Coef::PLAIN, [0.0; 3]);
        for l in 0..12 {
            assert!((b[l] - b2[l]).abs() < 1e-6);
        }
    }

    #[test]
    fn loaded_node_conserves_power_and_loss_dissipates() {
        let mut s = 11;
        for trial in 0..50 {
            let y: [f32; 3] = std::array::from_fn(|_| 3.0 * (rnd(&mut s) + 0.5));
            let z: [f32; 3] = std::array::from_fn(|_| 3.0 * (rnd(&mut s) + 0.5));
            let lossy = trial % 2 == 1;
            let g: [f32; 3] = std::array::from_fn(|_| if lossy { rnd(&mut s) + 0.5 } else { 0.0 });
            let k = Coef {
                y,
                ky: std::array::from_fn(|e| 1.0 / (4.0 + y[e] + g[e])),
                z,
                kz: std::array::from_fn(|h| 1.0 / (4.0 + z[h] + g[h])),
                gface: [[0.0; 2]; 6],
            };
            let a: [f32; 12] = std::array::from_fn(|_| rnd(&mut s));
            let mut c: [f32; 3] = std::array::from_fn(|_| rnd(&mut s));
            let mut l: [f32; 3] = std::array::from_fn(|_| rnd(&mut s));
            let p_in = a.iter().map(|x| (x * x) as f64).sum::<f64>() + stub_energy(c, l, &k);
            let mut b = [0f32; 12];
            scatter_loaded(&a, &mut b, &mut c, &mut l, &k, [0.0; 3]);
            // c, l now hold the reflected stub pulses up to the sign of l: same power.
            let p_out = b.iter().map(|x| (x * x) as f64).sum::<f64>() + stub_energy(c, l, &k);
            if lossy {
                assert!(p_out < p_in, "trial {trial}: {p_out} >= {p_in}");
            } else {
                assert!((p_out - p_in).abs() < 1e-5 * p_in, "trial {trial}: {p_out} vs {p_in}");
            }
        }
    }
}
