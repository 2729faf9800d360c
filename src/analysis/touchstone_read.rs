//! A small Touchstone reader for the files emvolve writes (and plain v1/v2
//! files like them): option line, `[Reference]`, port names, HFSS-style
//! per-frequency port impedances, RI/MA/DB data in any frequency unit, full
//! matrices. Round-trip tests use it, and `emvolve report` draws a run's best
//! design from its Touchstone file without simulating again.

use std::path::Path;

use num_complex::Complex64;

/// A network read back from a Touchstone file.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Hz.
    pub freqs: Vec<f64>,
    /// From `! Port[n] = name` lines; `port n` where absent.
    pub ports: Vec<String>,
    /// `s[i][j][k]`: S_(i+1)(j+1) at `freqs[k]`.
    pub s: Vec<Vec<Vec<Complex64>>>,
    /// Reference impedance of each port at each frequency (ohm).
    pub zref: Vec<Vec<Complex64>>,
}

/// Parse Touchstone text of an `n`-port (the `N` of `.sNp`; `[Number of Ports]` wins).
pub fn parse(text: &str, n: usize) -> Result<Network, String> {
    let mut n = n;
    let mut unit = 1e9;
    let mut format = "ma".to_string();
    let mut r_option = Complex64::new(50.0, 0.0);
    let mut reference: Option<Vec<f64>> = None;
    let mut order_21_12 = true;
    let mut names: Vec<(usize, String)> = vec![];
    let mut per_freq_z: Vec<Vec<f64>> = vec![];
    let mut nums: Vec<f64> = vec![];
    let mut option_seen = false;
    for (ln, raw) in text.lines().enumerate() {
        let at = |m: String| format!("line {}: {m}", ln + 1);
        let line = raw.trim();
        let lower = line.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("! port impedance") {
            per_freq_z.push(floats(rest).map_err(at)?);
            continue;
        }
        if let Some(rest) = line.strip_prefix("! Port[") {
            if let Some((k, name)) = rest.split_once(']') {
                let k: usize = k.trim().parse().map_err(|_| at(format!("bad port number `{k}`")))?;
                names.push((k, name.trim_start().trim_start_matches('=').trim().to_string()));
            }
            continue;
        }
        let data = line.split('!').next().unwrap_or("").trim();
        if data.is_empty() {
            continue;
        }
        let data_lower = data.to_ascii_lowercase();
        if data.starts_with('#') {
            if option_seen {
                continue;
            }
            option_seen = true;
            let toks: Vec<&str> = data_lower[1..].split_whitespace().collect();
            let mut it = toks.iter();
            while let Some(t) = it.next() {
                match *t {
                    "hz" => unit = 1.0,
                    "khz" => unit = 1e3,
                    "mhz" => unit = 1e6,
                    "ghz" => unit = 1e9,
                    "s" => {}
                    "y" | "z" | "g" | "h" => return Err(at(format!("{t}-parameters are not supported, only S"))),
                    "ri" | "ma" | "db" => format = t.to_string(),
                    "r" => {
                        let v = it.next().ok_or_else(|| at("R without a value".into()))?;
                        r_option = Complex64::new(v.parse().map_err(|_| at(format!("bad R `{v}`")))?, 0.0);
                    }
                    other => return Err(at(format!("unknown option `{other}`"))),
                }
            }
        } else if data.starts_with('[') {
            let (key, rest) = data_lower.split_once(']').ok_or_else(|| at("unclosed keyword".into()))?;
            match key.trim_start_matches('[').trim() {
                "number of ports" => n = rest.trim().parse().map_err(|_| at("bad [Number of Ports]".into()))?,
                "two-port data order" => order_21_12 = rest.trim() == "21_12",
                "reference" => reference = Some(floats(rest).map_err(at)?),
                "matrix format" if rest.trim() != "full" => return Err(at("only the Full matrix format is supported".into())),
                _ => {}
            }
        } else {
            nums.extend(floats(data).map_err(at)?);
        }
    }
    if n == 0 {
        return Err("no port count".into());
    }
    let per = 1 + 2 * n * n;
    if nums.len() % per != 0 {
        return Err(format!("{} numbers of data do not make whole frequency points of {per} for {n} ports", nums.len()));
    }
    let nf = nums.len() / per;
    let mut freqs = Vec::with_capacity(nf);
    let mut s = vec![vec![Vec::with_capacity(nf); n]; n];
    for blk in nums.chunks(per) {
        freqs.push(blk[0] * unit);
        for m in 0..n * n {
            let (a, b) = (blk[1 + 2 * m], blk[2 + 2 * m]);
            let z = match format.as_str() {
                "ri" => Complex64::new(a, b),
                "ma" => Complex64::from_polar(a, b.to_radians()),
                _ => Complex64::from_polar(10f64.powf(a / 20.0), b.to_radians()),
            };
            let (i, j) = if n == 2 && order_21_12 { (m % n, m / n) } else { (m / n, m % n) };
            s[i][j].push(z);
        }
    }
    let zref = if !per_freq_z.is_empty() {
        if per_freq_z.len() != nf || per_freq_z.iter().any(|z| z.len() != 2 * n) {
            return Err(format!("{} port impedance lines for {nf} frequencies and {n} ports", per_freq_z.len()));
        }
        (0..n).map(|p| per_freq_z.iter().map(|z| Complex64::new(z[2 * p], z[2 * p + 1])).collect()).collect()
    } else if let Some(r) = reference {
        if r.len() != n {
            return Err(format!("[Reference] has {} values for {n} ports", r.len()));
        }
        r.iter().map(|&x| vec![Complex64::new(x, 0.0); nf]).collect()
    } else {
        vec![vec![r_option; nf]; n]
    };
    let mut ports: Vec<String> = (1..=n).map(|k| format!("port {k}")).collect();
    for (k, name) in names {
        if (1..=n).contains(&k) {
            ports[k - 1] = name;
        }
    }
    Ok(Network { freqs, ports, s, zref })
}

fn floats(s: &str) -> Result<Vec<f64>, String> {
    s.split_whitespace().map(|t| t.parse::<f64>().map_err(|_| format!("`{t}` is not a number"))).collect()
}

/// Read a `.sNp` file (N from the extension).
pub fn read(path: &Path) -> Result<Network, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let n: usize = ext
        .strip_prefix('s')
        .and_then(|e| e.strip_suffix('p'))
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| format!("{}: not a .sNp file", path.display()))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    parse(&text, n).map_err(|e| format!("{}: {e}", path.display()))
}

impl Network {
    /// As [`super::SParams`] (every column present; no V/I input impedance).
    pub fn to_sparams(&self) -> super::SParams {
        let n = self.ports.len();
        super::SParams {
            freqs: self.freqs.clone(),
            ports: self.ports.clone(),
            s: self.s.iter().map(|row| row.iter().map(|v| Some(v.clone())).collect()).collect(),
            zin: vec![None; n],
            zref: self.zref.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_plain_v1_file_in_ghz_db() {
        let text = "! a file from elsewhere\n# GHz S DB R 75\n1.0 -20 90 -1 0 -1 0 -30 -90\n2.0 -10 0 -3 180 -3 180 -10 0\n";
        let n = parse(text, 2).unwrap();
        assert_eq!(n.freqs, vec![1e9, 2e9]);
        assert!((n.s[0][0][0] - Complex64::new(0.0, 0.1)).norm() < 1e-12);
        assert!((n.s[1][1][0] - Complex64::new(0.0, -10f64.powf(-1.5))).norm() < 1e-12);
        assert_eq!(n.zref[1][1], Complex64::new(75.0, 0.0));
        assert_eq!(n.ports, vec!["port 1", "port 2"]);
        assert!(parse("# GHz S RI\n1 0.1 0.2 0.3\n", 1).unwrap_err().contains("whole frequency points"));
        assert!(parse("# GHz Z RI\n1 0.1 0.2\n", 1).unwrap_err().contains("line 1"));
    }
}
