//! S-parameters from port voltages and currents.
//!
//! Travelling waves with the port's reference impedance Z:
//! `a = (V + Z I) / (2 sqrt Z)`, `b = (V - Z I) / (2 sqrt Z)`, with I the
//! current flowing into the device. For a real Z (lumped ports; guides above
//! cutoff) these are Kurokawa's power waves; for a complex Z (a guide below
//! cutoff) they are what scikit-rf calls the `traveling` definition and HFSS
//! writes, which is what our Touchstone files declare. |S| is the same in
//! every definition. For TE10 ports Z is the wave impedance, and reference
//! planes are moved by `exp(-+ j beta L)`.

use num_complex::Complex64;
use serde::{Deserialize, Serialize};

use super::tail::PortDfts;
use crate::consts::C0;
use crate::job::{PortKind, SimJob, SimOutput};

/// Incident and reflected waves at every port for one driven port.
#[derive(Debug, Clone)]
pub struct Waves {
    pub a: Vec<Vec<Complex64>>,
    pub b: Vec<Vec<Complex64>>,
    pub v: Vec<Vec<Complex64>>,
    pub i: Vec<Vec<Complex64>>,
}

/// Compute waves at every port of `job` from one simulation's output. A run
/// cut off at the step cap while one mode still rang is continued past the
/// cap where that is measured to be right ([`super::tail`]).
pub fn waves(job: &SimJob, out: &SimOutput) -> Waves {
    let plain = PortDfts::of(job, out);
    match super::tail::continue_run(job, out, &plain) {
        Some(c) => waves_from(job, &c.dfts),
        None => waves_from(job, &plain),
    }
}

/// The waves from the port DFTs `d`.
pub fn waves_from(job: &SimJob, d: &PortDfts) -> Waves {
    let f = &job.freqs;
    let mut w = Waves { a: vec![], b: vec![], v: vec![], i: vec![] };
    for (port, (v, i)) in job.ports.iter().zip(d.v.iter().zip(&d.i)) {
        let (v, i) = (v.clone(), i.clone());
        let mut a = Vec::with_capacity(f.len());
        let mut b = Vec::with_capacity(f.len());
        for (k, &fk) in f.iter().enumerate() {
            let z = port.z_ref(fk);
            let norm = 2.0 * z.sqrt();
            let mut ak = (v[k] + z * i[k]) / norm;
            let mut bk = (v[k] - z * i[k]) / norm;
            if let PortKind::Waveguide { a: width, shift_m, .. } = port.kind {
                if shift_m != 0.0 {
                    let k0 = 2.0 * std::f64::consts::PI * fk / C0;
                    let kc = std::f64::consts::PI / width;
                    // beta = sqrt(k0^2 - kc^2), imaginary below cutoff (evanescent).
                    let beta = Complex64::new(k0 * k0 - kc * kc, 0.0).sqrt();
                    let j = Complex64::new(0.0, 1.0);
                    ak *= (-j * beta * shift_m).exp();
                    bk *= (j * beta * shift_m).exp();
                }
            }
            a.push(ak);
            b.push(bk);
        }
        w.a.push(a);
        w.b.push(b);
        w.v.push(v);
        w.i.push(i);
    }
    w
}

/// `S_(i, drive)` for every port i over the band, from the port DFTs `d` of `job`.
pub fn column(job: &SimJob, d: &PortDfts) -> Vec<Vec<Complex64>> {
    let w = waves_from(job, d);
    let j = job.drive;
    w.b.iter().map(|b| b.iter().zip(&w.a[j]).map(|(b, a)| b / a).collect()).collect()
}

/// The scattering matrix over the band. Columns of undriven ports are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SParams {
    pub freqs: Vec<f64>,
    pub ports: Vec<String>,
    /// `s[i][j][k]`: S_(i+1)(j+1) at `freqs[k]`, present when port j was driven.
    pub s: Vec<Vec<Option<Vec<Complex64>>>>,
    /// Input impedance of each driven port (V/I at the reference plane).
    pub zin: Vec<Option<Vec<Complex64>>>,
    /// Reference impedance of each port at each frequency.
    pub zref: Vec<Vec<Complex64>>,
}

impl SParams {
    /// Assemble from simulations of the same structure with different driven
    /// ports (`runs[m]` is the output of the job `jobs[m]`).
    pub fn from_runs(jobs: &[&SimJob], runs: &[&SimOutput]) -> SParams {
        let job0 = jobs[0];
        let np = job0.ports.len();
        let nf = job0.freqs.len();
        let mut s = vec![vec![None; np]; np];
        let mut zin = vec![None; np];
        for (job, out) in jobs.iter().zip(runs) {
            let w = waves(job, out);
            let j = job.drive;
            for i in 0..np {
                s[i][j] = Some((0..nf).map(|k| w.b[i][k] / w.a[j][k]).collect());
            }
            zin[j] = Some((0..nf).map(|k| w.v[j][k] / w.i[j][k]).collect());
        }
        let zref = job0.ports.iter().map(|p| job0.freqs.iter().map(|&f| p.z_ref(f)).collect()).collect();
        SParams { freqs: job0.freqs.clone(), ports: job0.ports.iter().map(|p| p.name.clone()).collect(), s, zin, zref }
    }

    /// S_ij (1-based) if available.
    pub fn get(&self, i: usize, j: usize) -> Option<&[Complex64]> {
        self.s.get(i.checked_sub(1)?)?.get(j.checked_sub(1)?)?.as_deref()
    }

    /// |S_ij| in dB (1-based), if available.
    pub fn db(&self, i: usize, j: usize) -> Option<Vec<f64>> {
        self.get(i, j).map(|v| v.iter().map(|z| super::db(z.norm())).collect())
    }

    pub fn n_ports(&self) -> usize {
        self.ports.len()
    }

    /// Phase of S_ij in degrees, wrapped to (-180, 180], if available.
    pub fn phase_deg(&self, i: usize, j: usize) -> Option<Vec<f64>> {
        self.get(i, j).map(|v| v.iter().map(|z| z.arg().to_degrees()).collect())
    }

    /// Input impedance of port `i` (1-based) with every other port terminated
    /// in its reference impedance: `Zref (1 + S_ii) / (1 - S_ii)` in ohms.
    /// This is the impedance the Smith chart of S_ii shows.
    pub fn z_in(&self, i: usize) -> Option<Vec<Complex64>> {
        let s = self.get(i, i)?;
        let zr = self.zref.get(i - 1)?;
        Some(s.iter().zip(zr).map(|(s, z)| z * (1.0 + s) / (1.0 - s)).collect())
    }

    /// Group delay of S_ij in seconds, `-d(phase)/d(omega)` from the unwrapped
    /// phase by central differences (one-sided at the ends). Needs two points.
    pub fn group_delay(&self, i: usize, j: usize) -> Option<Vec<f64>> {
        let s = self.get(i, j)?;
        let f = &self.freqs;
        if f.len() < 2 {
            return None;
        }
        let mut ph: Vec<f64> = Vec::with_capacity(s.len());
        for z in s {
            let p = z.arg();
            ph.push(match ph.last() {
                // Unwrap: add the multiple of 2 pi that keeps the step within +-pi.
                Some(&q) => p + (2.0 * std::f64::consts::PI) * ((q - p) / (2.0 * std::f64::consts::PI)).round(),
                None => p,
            });
        }
        let n = f.len();
        Some(
            (0..n)
                .map(|k| {
                    let (a, b) = (k.saturating_sub(1), (k + 1).min(n - 1));
                    -(ph[b] - ph[a]) / (2.0 * std::f64::consts::PI * (f[b] - f[a]))
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_port(s11: Vec<Complex64>, freqs: Vec<f64>, z: f64) -> SParams {
        let n = freqs.len();
        SParams { freqs, ports: vec!["p".into()], s: vec![vec![Some(s11)]], zin: vec![None], zref: vec![vec![Complex64::new(z, 0.0); n]] }
    }

    #[test]
    fn input_impedance_inverts_the_reflection() {
        // A 100 + 50j ohm load on a 50-ohm port.
        let zl = Complex64::new(100.0, 50.0);
        let g = (zl - 50.0) / (zl + 50.0);
        let sp = one_port(vec![g], vec![1e9], 50.0);
        assert!((sp.z_in(1).unwrap()[0] - zl).norm() < 1e-12);
        assert!(sp.z_in(2).is_none());
    }

    #[test]
    fn group_delay_of_a_pure_delay_is_the_delay() {
        // S21 = exp(-j w tau): a line of 1.3 ns, phase wrapping many times over the band.
        let tau = 1.3e-9;
        let freqs: Vec<f64> = (0..200).map(|k| 1e9 + 5e6 * k as f64).collect();
        let s21: Vec<Complex64> = freqs.iter().map(|f| Complex64::from_polar(0.9, -2.0 * std::f64::consts::PI * f * tau)).collect();
        let n = freqs.len();
        let sp = SParams {
            freqs,
            ports: vec!["a".into(), "b".into()],
            s: vec![vec![None, None], vec![Some(s21), None]],
            zin: vec![None, None],
            zref: vec![vec![Complex64::new(50.0, 0.0); n]; 2],
        };
        for d in sp.group_delay(2, 1).unwrap() {
            assert!((d - tau).abs() < 1e-15, "{d}");
        }
        assert!(sp.group_delay(1, 2).is_none());
    }
}
