//! Power balance of a driven port: the share of the power incident at port j
//! that no port gives back, `1 - sum_i |S_ij|^2` (a fraction, not dB): what
//! the structure dissipates in its conductors and dielectrics or radiates.
//! Zero for a lossless closed network; negative only by numerical error.

use std::fmt::Write as _;

use super::SParams;

/// A reference impedance counts as real (a power wave) when its imaginary part is below this share of its magnitude.
const REAL_Z: f64 = 1e-9;

/// The lost fraction of the power incident at port `j` (1-based) at every
/// frequency; `None` when column j was not simulated. A frequency where some
/// port's reference impedance is not real (a guide below cutoff, whose wave
/// carries no power) has no balance: `None` there.
pub fn loss(sp: &SParams, j: usize) -> Option<Vec<Option<f64>>> {
    let col: Vec<&[num_complex::Complex64]> = (1..=sp.n_ports()).map(|i| sp.get(i, j)).collect::<Option<_>>()?;
    Some(
        (0..sp.freqs.len())
            .map(|k| {
                let real = sp.zref.iter().all(|z| z.get(k).is_some_and(|z| z.im.abs() <= REAL_Z * z.norm()));
                real.then(|| 1.0 - col.iter().map(|t| t[k].norm_sqr()).sum::<f64>())
            })
            .collect(),
    )
}

/// The driven ports (1-based) with a balance: every port's column, for networks of two or more ports.
pub fn driven(sp: &SParams) -> Vec<usize> {
    if sp.n_ports() < 2 {
        return vec![];
    }
    (1..=sp.n_ports()).filter(|&j| loss(sp, j).is_some()).collect()
}

/// `loss.csv`: `freq_hz` and one `loss_<port>` column per driven port (an
/// empty cell where there is no balance); `None` for a one-port or no driven column.
pub fn render_csv(sp: &SParams) -> Option<String> {
    let js = driven(sp);
    if js.is_empty() {
        return None;
    }
    let cols: Vec<Vec<Option<f64>>> = js.iter().filter_map(|&j| loss(sp, j)).collect();
    let mut out = String::from("freq_hz");
    for &j in &js {
        let _ = write!(out, ",loss_{}", sp.ports[j - 1]);
    }
    out.push('\n');
    for (k, f) in sp.freqs.iter().enumerate() {
        let _ = write!(out, "{f}");
        for c in &cols {
            match c[k] {
                Some(v) => {
                    let _ = write!(out, ",{v}");
                }
                None => out.push(','),
            }
        }
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;
    use std::f64::consts::PI;

    fn two_port(freqs: Vec<f64>, s11: Vec<Complex64>, s21: Vec<Complex64>, z: f64) -> SParams {
        let n = freqs.len();
        SParams {
            freqs,
            ports: vec!["in".into(), "out".into()],
            s: vec![vec![Some(s11.clone()), Some(s21.clone())], vec![Some(s21), Some(s11)]],
            zin: vec![None, None],
            zref: vec![vec![Complex64::new(z, 0.0); n]; 2],
        }
    }

    #[test]
    fn a_lossless_two_port_loses_nothing() {
        // An ideal matched line (S21 = e^{-j w tau}) and a lossless mismatch
        // (a shunt reactance): |S11|^2 + |S21|^2 = 1.
        let f: Vec<f64> = (0..50).map(|k| 1e9 + 0.1e9 * k as f64).collect();
        let line: Vec<Complex64> = f.iter().map(|x| Complex64::from_polar(1.0, -2.0 * PI * x * 1e-9)).collect();
        let sp = two_port(f.clone(), vec![Complex64::default(); f.len()], line, 50.0);
        for v in loss(&sp, 1).unwrap() {
            assert!(v.unwrap().abs() < 1e-15);
        }
        // A shunt susceptance b (normalised): S11 = -jb/(2+jb), S21 = 2/(2+jb).
        let (s11, s21): (Vec<_>, Vec<_>) = f
            .iter()
            .map(|x| {
                let b = Complex64::new(0.0, x / 1e9);
                (-b / (2.0 + b), 2.0 / (2.0 + b))
            })
            .unzip();
        let sp = two_port(f, s11, s21, 50.0);
        for j in [1, 2] {
            for v in loss(&sp, j).unwrap() {
                assert!(v.unwrap().abs() < 1e-14, "{v:?}");
            }
        }
        assert_eq!(driven(&sp), vec![1, 2]);
    }

    #[test]
    fn a_series_resistor_loses_what_it_dissipates() {
        // A series R + jX between two 50-ohm ports: the current 2 V+ / (Z + 2 Z0)
        // dissipates 4 Z0 R / |Z + 2 Z0|^2 of the incident power.
        let z0 = 50.0;
        let f: Vec<f64> = (0..20).map(|k| 1e9 + 0.1e9 * k as f64).collect();
        let zs: Vec<Complex64> = f.iter().map(|x| Complex64::new(13.0, 40.0 * (x / 1.5e9 - 1.5e9 / x))).collect();
        let s11 = zs.iter().map(|z| z / (z + 2.0 * z0)).collect();
        let s21 = zs.iter().map(|z| 2.0 * z0 / (z + 2.0 * z0)).collect();
        let sp = two_port(f, s11, s21, z0);
        for (v, z) in loss(&sp, 1).unwrap().into_iter().zip(&zs) {
            let want = 4.0 * z0 * z.re / (z + 2.0 * z0).norm_sqr();
            assert!((v.unwrap() - want).abs() < 1e-14, "{v:?} vs {want}");
        }
        let csv = render_csv(&sp).unwrap();
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("freq_hz,loss_in,loss_out"));
        let row: Vec<f64> = lines.next().unwrap().split(',').map(|c| c.parse().unwrap()).collect();
        assert_eq!(row[0], 1e9);
        assert!((row[1] - 4.0 * z0 * 13.0 / (zs[0] + 2.0 * z0).norm_sqr()).abs() < 1e-14);
    }

    #[test]
    fn no_balance_for_a_one_port_an_undriven_column_or_a_guide_below_cutoff() {
        let f = vec![1e9, 2e9];
        let mut sp = two_port(f, vec![Complex64::new(0.5, 0.0); 2], vec![Complex64::new(0.5, 0.0); 2], 50.0);
        sp.s[0][1] = None;
        assert!(loss(&sp, 2).is_none());
        assert_eq!(driven(&sp), vec![1]);
        // Below cutoff the TE10 wave impedance is imaginary: no power balance there.
        sp.zref[1][0] = Complex64::new(0.0, 300.0);
        assert_eq!(loss(&sp, 1).unwrap(), vec![None, Some(0.5)]);
        assert!(render_csv(&sp).unwrap().lines().nth(1).unwrap().ends_with("1000000000,"));
        let one = SParams { freqs: vec![1e9], ports: vec!["a".into()], s: vec![vec![Some(vec![Complex64::default()])]], zin: vec![None], zref: vec![vec![Complex64::new(50.0, 0.0)]] };
        assert!(driven(&one).is_empty() && render_csv(&one).is_none());
    }
}
