//! `sparams.csv`: the S-parameters as a table for spreadsheets and scripts:
//! per frequency, every computed S_ij as re, im, dB and degrees, each port's
//! reference impedance and, where S_ii exists, its input impedance (ohm).
//! Numbers are written in Rust's shortest round-trip form, so they read back exactly.

use std::fmt::Write as _;

use super::SParams;

/// The CSV text.
pub fn render(sp: &SParams) -> String {
    let n = sp.n_ports();
    let mut head = vec!["freq_hz".to_string()];
    let mut cols: Vec<(usize, usize)> = vec![];
    for i in 1..=n {
        for j in 1..=n {
            if sp.get(i, j).is_some() {
                cols.push((i, j));
                head.extend(["re", "im", "db", "deg"].iter().map(|q| format!("S{i}{j}_{q}")));
            }
        }
    }
    head.extend((1..=n).flat_map(|p| [format!("zref{p}_re_ohm"), format!("zref{p}_im_ohm")]));
    let zin: Vec<(usize, Vec<num_complex::Complex64>)> = (1..=n).filter_map(|p| sp.z_in(p).map(|z| (p, z))).collect();
    head.extend(zin.iter().flat_map(|(p, _)| [format!("zin{p}_re_ohm"), format!("zin{p}_im_ohm")]));
    let mut out = head.join(",");
    out.push('\n');
    for (k, f) in sp.freqs.iter().enumerate() {
        let _ = write!(out, "{f}");
        for &(i, j) in &cols {
            let z = sp.get(i, j).map(|v| v[k]).unwrap_or_default();
            let _ = write!(out, ",{},{},{},{}", z.re, z.im, 20.0 * z.norm().max(1e-30).log10(), z.arg().to_degrees());
        }
        for z in &sp.zref {
            let _ = write!(out, ",{},{}", z[k].re, z[k].im);
        }
        for (_, z) in &zin {
            let _ = write!(out, ",{},{}", z[k].re, z[k].im);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn columns_follow_the_available_entries_and_read_back_exactly() {
        let s11 = vec![Complex64::new(0.1, -0.2), Complex64::new(1.0 / 3.0, 0.0)];
        let sp = SParams {
            freqs: vec![1e9, 2e9],
            ports: vec!["a".into(), "b".into()],
            s: vec![vec![Some(s11.clone()), None], vec![Some(vec![Complex64::new(0.9, 0.0); 2]), None]],
            zin: vec![None, None],
            zref: vec![vec![Complex64::new(50.0, 0.0); 2]; 2],
        };
        let text = render(&sp);
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(head.len(), 1 + 8 + 4 + 2);
        assert_eq!(head[1], "S11_re");
        assert_eq!(head[5], "S21_re");
        assert_eq!(head[13], "zin1_re_ohm");
        let row: Vec<f64> = lines.nth(1).unwrap().split(',').map(|t| t.parse().unwrap()).collect();
        assert_eq!(row[1], 1.0 / 3.0);
        // Zin = 50 (1 + 1/3) / (1 - 1/3) = 100 ohm.
        assert!((row[13] - 100.0).abs() < 1e-12);
    }
}
