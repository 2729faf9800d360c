//! Touchstone (`.s1p`, `.s2p`, `.sNp`) writer, the format RF engineers
//! exchange S-parameters in (scikit-rf, Qucs, ADS, AWR read it).
//!
//! How the reference impedance is stated:
//! - Every port has a constant real reference (lumped ports): Touchstone 2.0,
//!   with `[Reference]` giving each port's own resistance.
//! - Some port's reference depends on frequency (a waveguide port's TE10 wave
//!   impedance): the S-parameters stay normalised to each port's own impedance at
//!   each frequency (modal S-parameters: a matched guide reflects nothing) and
//!   that impedance is written per frequency after each data block as an
//!   `! Port Impedance` line, the convention HFSS writes and scikit-rf reads. Touchstone
//!   2.0's `[Reference]` holds one number per port and cannot say this, so these
//!   files are version 1 and the option line's `R 50` is the format's required
//!   placeholder; the header says so.
//!
//! Port names are `! Port[n] = name` lines (read by scikit-rf). Each matrix row
//! starts a new line for 3+ ports; version 1 wraps a row after 4 pairs.

use std::fmt::Write as _;
use std::path::Path;

use num_complex::Complex64;

use super::SParams;

/// Relative tolerance within which a port's reference counts as constant.
const CONSTANT_TOL: f64 = 1e-9;

/// Each port's reference resistance when every one is real and constant over
/// the band; `None` when some port's reference varies or is complex.
pub fn constant_reference(sp: &SParams) -> Option<Vec<f64>> {
    sp.zref
        .iter()
        .map(|zs| {
            let z0 = *zs.first()?;
            let ok = z0.im == 0.0 && z0.re > 0.0 && zs.iter().all(|z| (z - z0).norm() <= CONSTANT_TOL * z0.norm());
            ok.then_some(z0.re)
        })
        .collect()
}

/// Render the full matrix as Touchstone text (real/imaginary pairs, Hz).
/// Every column must be present: a Touchstone file cannot hold a partial matrix.
pub fn render(sp: &SParams, comment: &str) -> Result<String, String> {
    let n = sp.n_ports();
    for j in 0..n {
        if sp.s.iter().any(|row| row[j].is_none()) {
            return Err(format!("port {} ({}) was not driven: a Touchstone file needs every column", j + 1, sp.ports[j]));
        }
    }
    if let Some((i, j)) = (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).find(|&(i, j)| sp.s[i][j].as_ref().is_some_and(|v| v.len() != sp.freqs.len())) {
        return Err(format!("S{}{} has {} values for {} frequencies", i + 1, j + 1, sp.s[i][j].as_ref().map_or(0, |v| v.len()), sp.freqs.len()));
    }
    if sp.zref.len() != n || sp.zref.iter().any(|z| z.len() != sp.freqs.len()) {
        return Err(format!("reference impedances are missing: {} ports, {} frequencies", n, sp.freqs.len()));
    }
    let reference = constant_reference(sp);
    let mut out = String::new();
    if reference.is_some() {
        out.push_str("[Version] 2.0\n");
    }
    for line in comment.lines() {
        let _ = writeln!(out, "! {line}");
    }
    for (k, name) in sp.ports.iter().enumerate() {
        let _ = writeln!(out, "! Port[{}] = {name}", k + 1);
    }
    match &reference {
        Some(r) => {
            let rs: Vec<String> = r.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(out, "! Reference impedance: each port's own resistance, constant over the band ([Reference]: {} ohm).", rs.join(", "));
            let _ = writeln!(out, "# Hz S RI R {}", rs[0]);
            let _ = writeln!(out, "[Number of Ports] {n}");
            if n == 2 {
                out.push_str("[Two-Port Data Order] 21_12\n");
            }
            let _ = writeln!(out, "[Number of Frequencies] {}", sp.freqs.len());
            let _ = writeln!(out, "[Reference] {}", rs.join(" "));
            out.push_str("[Matrix Format] Full\n[Network Data]\n");
        }
        None => {
            out.push_str("! Reference impedance: frequency dependent (a waveguide port's TE10 wave impedance).\n");
            out.push_str("! The S-parameters are normalised to each port's own impedance at each frequency\n");
            out.push_str("! (modal S-parameters: a matched guide reflects nothing). That impedance follows each\n");
            out.push_str("! frequency's data as an HFSS-style impedance comment (re im per port, ohm),\n");
            out.push_str("! which scikit-rf reads; the option line's R 50 is only the format's placeholder.\n");
            out.push_str("! S-parameter uses the traveling definition\n");
            out.push_str("# Hz S RI R 50\n");
        }
    }
    // Version 1 asks for at most 4 pairs a line; version 2 allows a whole row.
    let wrap = if reference.is_some() { usize::MAX } else { 4 };
    for (k, f) in sp.freqs.iter().enumerate() {
        let _ = write!(out, "{}", fmt_num(*f));
        let entry = |i: usize, j: usize| -> Complex64 { sp.s[i][j].as_ref().map_or(Complex64::new(f64::NAN, 0.0), |v| v[k]) };
        if n <= 2 {
            // One line; 2-ports are column-major (S11 S21 S12 S22), as every version reads them.
            let order: &[(usize, usize)] = if n == 1 { &[(0, 0)] } else { &[(0, 0), (1, 0), (0, 1), (1, 1)] };
            for &(i, j) in order {
                write_pair(&mut out, entry(i, j));
            }
            out.push('\n');
        } else {
            for i in 0..n {
                if i > 0 {
                    out.push_str("   ");
                }
                for j in 0..n {
                    if j > 0 && j % wrap == 0 {
                        out.push_str("\n   ");
                    }
                    write_pair(&mut out, entry(i, j));
                }
                out.push('\n');
            }
        }
        if reference.is_none() {
            out.push_str("! Port Impedance");
            for z in &sp.zref {
                let _ = write!(out, " {} {}", z[k].re, z[k].im);
            }
            out.push('\n');
        }
    }
    if reference.is_some() {
        out.push_str("[End]\n");
    }
    Ok(out)
}

fn write_pair(out: &mut String, z: Complex64) {
    let _ = write!(out, " {} {}", fmt_num(z.re), fmt_num(z.im));
}

/// Shortest text that reads back to the same f64, in exponent form.
fn fmt_num(x: f64) -> String {
    format!("{x:e}")
}

/// `<stem>.sNp`: where the file of an `n_ports`-port matrix goes. The suffix
/// is appended, not swapped for an extension: a stem such as `L=28.5` or a
/// design named `patch_2.4g` keeps its dot.
pub fn path(stem: &Path, n_ports: usize) -> std::path::PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(format!(".s{n_ports}p"));
    std::path::PathBuf::from(s)
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
    use super::super::touchstone_read::parse;
    use super::*;

    #[test]
    fn path_appends_the_suffix_after_a_dotted_stem() {
        assert_eq!(path(Path::new("points/0001_L=28.525"), 1), Path::new("points/0001_L=28.525.s1p"));
        assert_eq!(path(Path::new("best/patch_2.4g"), 2), Path::new("best/patch_2.4g.s2p"));
    }

    /// A network with `n` ports and distinct, exactly known entries.
    fn network(n: usize, zref: impl Fn(usize, f64) -> Complex64) -> SParams {
        let freqs = vec![27e9, 31.5e9, 36.25e9];
        let s = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| Some(freqs.iter().enumerate().map(|(k, _)| Complex64::new(0.1 * (i + 1) as f64 + 0.01 * (j + 1) as f64, -(k as f64) / 3.0)).collect()))
                    .collect()
            })
            .collect();
        let zr = (0..n).map(|p| freqs.iter().map(|&f| zref(p, f)).collect()).collect();
        SParams { freqs: freqs.clone(), ports: (0..n).map(|p| format!("port {}", p + 1)).collect(), s, zin: vec![None; n], zref: zr }
    }

    fn assert_round_trip(sp: &SParams) -> String {
        let text = render(sp, "emvolve test\nsecond line").unwrap();
        let back = parse(&text, sp.n_ports()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.freqs, sp.freqs);
        assert_eq!(back.ports, sp.ports);
        for i in 0..sp.n_ports() {
            for j in 0..sp.n_ports() {
                assert_eq!(&back.s[i][j], sp.s[i][j].as_ref().unwrap(), "S{}{}\n{text}", i + 1, j + 1);
            }
            assert_eq!(back.zref[i], sp.zref[i], "reference of port {}", i + 1);
        }
        text
    }

    #[test]
    fn lumped_ports_are_touchstone_2_with_a_reference_per_port() {
        let sp = network(2, |p, _| Complex64::new(if p == 0 { 50.0 } else { 75.0 }, 0.0));
        let text = assert_round_trip(&sp);
        assert!(text.starts_with("[Version] 2.0\n"), "{text}");
        assert!(text.contains("[Reference] 50 75") && text.contains("# Hz S RI R 50\n") && text.contains("[Two-Port Data Order] 21_12") && text.contains("[End]"));
        assert!(text.contains("! Port[2] = port 2"));
        // Column-major 2-port: S11 S21 S12 S22 on one line.
        let row: Vec<f64> = text.lines().find(|l| l.starts_with("2.7e10")).unwrap().split_whitespace().map(|t| t.parse().unwrap()).collect();
        let re: Vec<f64> = row[1..].iter().step_by(2).copied().collect();
        for (got, want) in re.iter().zip([0.11, 0.21, 0.12, 0.22]) {
            assert!((got - want).abs() < 1e-15, "{re:?}");
        }
    }

    #[test]
    fn three_and_five_ports_put_each_matrix_row_on_its_own_line() {
        let sp = network(3, |_, _| Complex64::new(50.0, 0.0));
        let text = assert_round_trip(&sp);
        let data: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("[Network Data]")).skip(1).take(3).collect();
        assert_eq!(data.len(), 3);
        for (i, l) in data.iter().enumerate() {
            let nums: Vec<f64> = l.split_whitespace().map(|t| t.parse().unwrap()).collect();
            let pairs = if i == 0 { &nums[1..] } else { &nums[..] };
            assert_eq!(pairs.len(), 6, "row {} is one line: {l}", i + 1);
            assert!((pairs[0] - (0.1 * (i + 1) as f64 + 0.01)).abs() < 1e-15);
        }
        // A frequency-dependent reference makes a version 1 file: rows wrap after 4 pairs.
        let sp = network(5, |p, f| Complex64::new(400.0 + p as f64 + f / 1e9, 0.0));
        let text = assert_round_trip(&sp);
        assert!(!text.contains("[Version]"));
        let first: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("# ")).skip(1).take(11).collect();
        // Row 1: 4 pairs + frequency, then 1 pair; the same for rows 2-5; then the impedance line.
        assert_eq!(first[0].split_whitespace().count(), 9, "{text}");
        assert_eq!(first[1].split_whitespace().count(), 2);
        assert_eq!(first[2].split_whitespace().count(), 8);
        assert!(first[10].starts_with("! Port Impedance 427 0 428 0 "), "{}", first[10]);
    }

    #[test]
    fn waveguide_references_are_written_per_frequency_also_below_cutoff() {
        use crate::job::{Axis, Port, PortKind};
        let guide = Port {
            name: "in".into(),
            kind: PortKind::Waveguide { normal: Axis::Z, plane: 0, inward: 1, e_axis: Axis::Y, width_axis: Axis::X, a: 7.112e-3, source_offset: 1, shift_m: 0.0 },
        };
        // 27 and 31.5 GHz above the 21.1 GHz cutoff; then below it (imaginary, inductive).
        let mut sp = network(2, |_, f| guide.z_ref(f));
        sp.freqs[2] = 20e9;
        sp.zref = vec![sp.freqs.iter().map(|&f| guide.z_ref(f)).collect(); 2];
        assert!(sp.zref[0][2].re == 0.0 && sp.zref[0][2].im > 0.0);
        let text = assert_round_trip(&sp);
        assert!(text.contains("# Hz S RI R 50") && text.contains("frequency dependent"));
        assert_eq!(text.lines().filter(|l| l.starts_with("! Port Impedance")).count(), 3);
    }

    #[test]
    fn partial_matrices_are_refused() {
        let mut sp = network(2, |_, _| Complex64::new(50.0, 0.0));
        sp.s[0][1] = None;
        assert!(render(&sp, "").unwrap_err().contains("port 2"));
    }
}
