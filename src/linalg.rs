//! Small dense linear algebra (n up to a few hundred), shared by the
//! optimisers (CMA-ES, the Gaussian-process surrogate), the material fits
//! (the wideband and surface-impedance pole fits' non-negative least squares)
//! and the Q-factor fit: Cholesky factorisation and solves, and the
//! symmetric eigendecomposition by cyclic Jacobi rotations. Row-major
//! `Vec<f64>` of n*n; nothing here allocates beyond its result.

/// Lower Cholesky factor `L` of the symmetric positive-definite `a` (n*n,
/// row-major), `a = L L^T`; `None` if `a` is not positive definite.
pub fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if !(s > 0.0) || !s.is_finite() {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solve `L y = b` (forward substitution) for lower-triangular `l`.
pub fn solve_lower(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * y[k];
        }
        y[i] = s / l[i * n + i];
    }
    y
}

/// Solve `L^T x = y` (back substitution) for lower-triangular `l`.
pub fn solve_upper_t(l: &[f64], n: usize, y: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut s = y[i];
        for k in i + 1..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    x
}

/// `A^-1` from the Cholesky factor of `A` (column by column).
pub fn inverse_from_cholesky(l: &[f64], n: usize) -> Vec<f64> {
    let mut inv = vec![0.0; n * n];
    let mut e = vec![0.0; n];
    for c in 0..n {
        e.iter_mut().for_each(|v| *v = 0.0);
        e[c] = 1.0;
        let x = solve_upper_t(l, n, &solve_lower(l, n, &e));
        for r in 0..n {
            inv[r * n + c] = x[r];
        }
    }
    inv
}

/// Eigendecomposition of the symmetric `a` (n*n): eigenvalues and the
/// eigenvectors as the columns of a row-major matrix, `a = B diag(d) B^T`.
/// Cyclic Jacobi (Golub & Van Loan, Matrix Computations, section 8.5):
/// slow beyond a hundred dimensions, exact to rounding for the 3-30 of a design.
pub fn symmetric_eigen(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = a.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| m[i * n + j].powi(2)).sum();
        let scale: f64 = (0..n).map(|i| m[i * n + i].powi(2)).sum::<f64>().max(f64::MIN_POSITIVE);
        if off <= 1e-30 * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * mkp - s * mkq;
                    m[k * n + q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * mpk - s * mqk;
                    m[q * n + k] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| m[i * n + i]).collect(), v)
}

/// Least squares `min |A x - y|` over `rows` (a row of `A` with its `y`) with
/// every `x[c] >= 0` except the columns listed in `free`: an active-set
/// method in the spirit of Lawson & Hanson (Solving Least Squares Problems,
/// 1974, ch. 23), simplified: solve the normal equations of the active
/// columns, drop the most negative constrained one, repeat. Non-negative
/// weights are what keep a fitted pole model passive.
pub fn nnls(rows: &[(Vec<f64>, f64)], ncol: usize, free: &[usize]) -> Vec<f64> {
    let mut active: Vec<usize> = (0..ncol).collect();
    loop {
        let n = active.len();
        let mut ata = vec![0.0; n * n];
        let mut atb = vec![0.0; n];
        for (r, y) in rows {
            for (p, &cp) in active.iter().enumerate() {
                atb[p] += r[cp] * y;
                for (q, &cq) in active.iter().enumerate() {
                    ata[p * n + q] += r[cp] * r[cq];
                }
            }
        }
        // A whisker of ridge keeps nearly dependent columns solvable.
        let tr = (0..n).map(|p| ata[p * n + p]).sum::<f64>() / n.max(1) as f64;
        for p in 0..n {
            ata[p * n + p] += 1e-12 * tr;
        }
        let l = cholesky(&ata, n).expect("normal equations of a ridged least-squares fit are positive definite");
        let sol = solve_upper_t(&l, n, &solve_lower(&l, n, &atb));
        let worst = active.iter().zip(&sol).filter(|(c, &v)| !free.contains(c) && v < 0.0).min_by(|a, b| a.1.total_cmp(b.1)).map(|(&c, _)| c);
        match worst {
            Some(c) => active.retain(|&x| x != c),
            None => {
                let mut x = vec![0.0; ncol];
                for (&c, v) in active.iter().zip(sol) {
                    x[c] = v;
                }
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                c[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            }
        }
        c
    }

    fn spd(n: usize) -> Vec<f64> {
        // A = M M^T + n I for a fixed M: symmetric positive definite.
        let m: Vec<f64> = (0..n * n).map(|k| ((k * 7 + 3) % 11) as f64 / 11.0 - 0.4).collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|k| m[i * n + k] * m[j * n + k]).sum::<f64>() + if i == j { n as f64 } else { 0.0 };
            }
        }
        a
    }

    #[test]
    fn cholesky_solves_and_inverts() {
        let n = 7;
        let a = spd(n);
        let l = cholesky(&a, n).unwrap();
        let inv = inverse_from_cholesky(&l, n);
        let id = matmul(&a, &inv, n);
        for i in 0..n {
            for j in 0..n {
                assert!((id[i * n + j] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12, "A A^-1 is not I at {i},{j}");
            }
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none(), "indefinite matrix accepted");
    }

    #[test]
    fn eigen_reconstructs_the_matrix() {
        let n = 9;
        let a = spd(n);
        let (d, b) = symmetric_eigen(&a, n);
        let mut bd = b.clone();
        for i in 0..n {
            for j in 0..n {
                bd[i * n + j] *= d[j];
            }
        }
        let mut bt = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                bt[j * n + i] = b[i * n + j];
            }
        }
        let r = matmul(&bd, &bt, n);
        for k in 0..n * n {
            assert!((r[k] - a[k]).abs() < 1e-10, "B D B^T differs from A at {k}: {} vs {}", r[k], a[k]);
        }
        let o = matmul(&bt, &b, n);
        for i in 0..n {
            assert!((o[i * n + i] - 1.0).abs() < 1e-12, "eigenvectors not orthonormal");
        }
    }
}
