//! S-parameters from port voltages and currents.
//!
//! Power waves with the port's reference impedance Z (Kurokawa):
//! `a = (V + Z I) / (2 sqrt|Z|)`, `b = (V - Z I) / (2 sqrt|Z|)`, with I the
//! current flowing into the device. For TE10 ports Z is the wave impedance,
//! and reference planes are moved by `exp(-+ j beta L)`.

use num_complex::Complex64;
use serde::{Deserialize, Serialize};

use super::dft::dft;
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

/// Compute waves at every port of `job` from one simulation's output.
pub fn waves(job: &SimJob, out: &SimOutput) -> Waves {
    let f = &job.freqs;
    let mut w = Waves { a: vec![], b: vec![], v: vec![], i: vec![] };
    for (port, tr) in job.ports.iter().zip(&out.traces) {
        let v = dft(&tr.v, out.dt, out.v_offset, f);
        let i = dft(&tr.i, out.dt, out.i_offset, f);
        let mut a = Vec::with_capacity(f.len());
        let mut b = Vec::with_capacity(f.len());
        for (k, &fk) in f.iter().enumerate() {
            let z = port.z_ref(fk);
            let norm = 2.0 * z.norm().sqrt();
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
}
