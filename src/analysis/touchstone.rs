//! Touchstone v1 (`.s1p`, `.s2p`, `.sNp`) writer, the format RF engineers
//! exchange S-parameters in (scikit-rf, Qucs, ADS, AWR read it).

use std::fmt::Write as _;
use std::path::Path;

use super::SParams;

/// Render the full matrix as Touchstone v1 text (real/imaginary pairs, Hz).
/// Every column must be present: a Touchstone file cannot hold a partial matrix.
pub fn render(sp: &SParams, comment: &str) -> Result<String, String> {
    let n = sp.n_ports();
    for j in 0..n {
        if sp.s[0][j].is_none() {
            return Err(format!("port {} ({}) was not driven: a Touchstone file needs every column", j + 1, sp.ports[j]));
        }
    }
    let mut out = String::new();
    for line in comment.lines() {
        let _ = writeln!(out, "! {line}");
    }
    let _ = writeln!(out, "! ports: {}", sp.ports.join(", "));
    // Waveguide ports are normalised to their own wave impedance; v1 carries one R.
    let _ = writeln!(out, "! S-parameters are power waves normalised to each port's own reference impedance");
    let r = sp.zref.first().and_then(|z| z.first()).map(|z| z.re).unwrap_or(50.0);
    let r = if sp.zref.iter().all(|zs| zs.iter().all(|z| (z.re - r).abs() < 1e-9 && z.im == 0.0)) { r } else { 50.0 };
    let _ = writeln!(out, "# Hz S RI R {r}");
    for (k, f) in sp.freqs.iter().enumerate() {
        let _ = write!(out, "{f:.6e}");
        // Touchstone orders 2-ports column-major (S11 S21 S12 S22), larger ones row-major, 4 pairs a line.
        let order: Vec<(usize, usize)> = if n == 2 {
            vec![(0, 0), (1, 0), (0, 1), (1, 1)]
        } else {
            (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
        };
        for (m, (i, j)) in order.iter().enumerate() {
            if n > 2 && m > 0 && m % 4 == 0 {
                let _ = write!(out, "\n");
            }
            let Some(&z) = sp.s.get(*i).and_then(|row| row.get(*j)).and_then(|c| c.as_ref()).and_then(|c| c.get(k)) else {
                return Err(format!("S{}{} has no value at {f} Hz", i + 1, j + 1));
            };
            let _ = write!(out, " {:.9e} {:.9e}", z.re, z.im);
        }
        let _ = writeln!(out);
    }
    Ok(out)
}

/// `<stem>.sNp`: where the file of an `n_ports`-port matrix goes.
pub fn path(stem: &Path, n_ports: usize) -> std::path::PathBuf {
    stem.with_extension(format!("s{n_ports}p"))
}

/// Write `<stem>.sNp` next to `stem`; returns the path written.
pub fn write(sp: &SParams, stem: &Path, comment: &str) -> anyhow::Result<std::path::PathBuf> {
    let text = render(sp, comment).map_err(anyhow::Error::msg)?;
    let path = path(stem, sp.n_ports());
    std::fs::write(&path, text).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn two_port_is_column_major_and_rejects_partial_matrix() {
        let c = |x: f64| Some(vec![Complex64::new(x, -x)]);
        let mut sp = SParams {
            freqs: vec![1e9],
            ports: vec!["in".into(), "out".into()],
            s: vec![vec![c(0.11), c(0.12)], vec![c(0.21), c(0.22)]],
            zin: vec![None, None],
            zref: vec![vec![Complex64::new(50.0, 0.0)]; 2],
        };
        let text = render(&sp, "test").unwrap();
        let data: Vec<&str> = text.lines().filter(|l| !l.starts_with('!') && !l.starts_with('#')).collect();
        let nums: Vec<f64> = data[0].split_whitespace().map(|t| t.parse().unwrap()).collect();
        assert_eq!(nums, vec![1e9, 0.11, -0.11, 0.21, -0.21, 0.12, -0.12, 0.22, -0.22]);
        assert!(text.contains("# Hz S RI R 50"));
        sp.s[0][1] = None;
        assert!(render(&sp, "").unwrap_err().contains("port 2"));
    }
}
