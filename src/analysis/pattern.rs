//! Radiation patterns from a [`Radiator`]: the full theta/phi grid, radiated
//! power by integrating it, accepted and incident power from the driven
//! port's waves, and what an antenna engineer reads off them: directivity,
//! gain (IEEE, on accepted power), realised gain (on incident power),
//! radiation efficiency, beam direction, front-to-back, E- and H-plane cuts.
//!
//! Radiation efficiency comes two ways: the pattern's power over the accepted
//! power (NF2FF), and the accepted power less what the structure absorbs
//! inside the box (the box's absorbed-power monitor, `engine::fdtd::absorbed`:
//! lossy metal, dielectric and loads) over the accepted power.

use std::sync::Arc;

use num_complex::Complex64;
use serde::Serialize;

use super::dft::dft;
use super::nf2ff::{FarPoint, Radiator};
use crate::job::{MonitorOutput, SimJob, SimOutput};

/// Far fields of one simulation at its far-field frequencies.
#[derive(Debug, Clone)]
pub struct FarField {
    pub radiator: Arc<Radiator>,
    /// Grid step in degrees (theta 0..=180, phi 0..360).
    pub step_deg: f64,
    pub patterns: Vec<Pattern>,
}

/// The pattern at one frequency.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub freq: f64,
    pub thetas: Vec<f64>,
    pub phis: Vec<f64>,
    /// `[it * phis.len() + ip]`.
    pub points: Vec<FarPoint>,
    /// Radiated power (the pattern integrated), accepted and incident power
    /// at the driven port, power through the box (DFT units, all alike).
    pub p_rad: f64,
    pub p_acc: f64,
    pub p_inc: f64,
    pub p_flux: f64,
    /// Power absorbed inside the box by lossy metal, dielectrics and loads
    /// (same units); `None` where the run had no absorbed-power monitor.
    pub p_abs: Option<Absorbed>,
}

/// The power absorbed inside the Huygens box, by mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Absorbed {
    pub conductor: f64,
    pub dielectric: f64,
    pub loads: f64,
}

impl Absorbed {
    pub fn total(&self) -> f64 {
        self.conductor + self.dielectric + self.loads
    }
}

/// The numbers of one pattern, for files and messages.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub freq_hz: f64,
    pub directivity_dbi: f64,
    pub gain_dbi: f64,
    pub realized_gain_dbi: f64,
    pub radiation_efficiency: f64,
    /// The second route: (accepted - absorbed inside the box) / accepted.
    /// Differs from `radiation_efficiency` by what leaves the box without
    /// radiating (a substrate's surface wave) and the two routes' errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radiation_efficiency_by_loss: Option<f64>,
    /// Absorbed power over accepted power, by mechanism: lossy metal,
    /// dielectrics, lumped loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conductor_loss_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dielectric_loss_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_loss_share: Option<f64>,
    /// Power through the Huygens box over the integrated pattern (a check: ~1).
    pub flux_over_pattern: f64,
    pub beam_theta_deg: f64,
    pub beam_phi_deg: f64,
    /// U(beam) / U(opposite direction) in dB; none behind a mirror plane (infinite).
    pub front_to_back_db: Option<f64>,
}

/// 10 log10, floored like every level in dB.
pub fn dbp(x: f64) -> f64 {
    10.0 * x.max(super::MAG_FLOOR * super::MAG_FLOOR).log10()
}

impl FarField {
    /// The far field of `job`'s run, on a `step_deg` grid; `None` without a Huygens box.
    pub fn compute(job: &SimJob, out: &SimOutput, step_deg: f64) -> Result<Option<FarField>, String> {
        let Some(rad) = Radiator::from_run(job, out)? else { return Ok(None) };
        let port = &job.ports[job.drive];
        let tr = &out.traces[job.drive];
        let v = dft(&tr.v, out.dt, out.v_offset, &rad.freqs);
        let i = dft(&tr.i, out.dt, out.i_offset, &rad.freqs);
        let absorbed = absorbed_of(job, out, &rad.freqs)?;
        let nt = (180.0 / step_deg).round() as usize;
        let np = (360.0 / step_deg).round() as usize;
        let thetas: Vec<f64> = (0..=nt).map(|k| 180.0 * k as f64 / nt as f64).collect();
        let phis: Vec<f64> = (0..np).map(|k| 360.0 * k as f64 / np as f64).collect();
        let patterns = (0..rad.freqs.len())
            .map(|fi| {
                use rayon::prelude::*;
                let points: Vec<FarPoint> =
                    (0..thetas.len() * phis.len()).into_par_iter().map(|n| rad.at(fi, thetas[n / np], phis[n % np])).collect();
                // Trapezoid in theta (sin theta vanishes at the ends), periodic in phi.
                let (dth, dph) = ((180.0 / nt as f64).to_radians(), (360.0 / np as f64).to_radians());
                let mut p_rad = 0.0;
                for (n, p) in points.iter().enumerate() {
                    let (th, ph) = (thetas[n / np], phis[n % np]);
                    let half = if rad.on_mirror(th, ph) { 0.5 } else { 1.0 };
                    p_rad += half * p.u * th.to_radians().sin() * dth * dph;
                }
                let z = port.z_ref(rad.freqs[fi]);
                let p_acc = 0.5 * (v[fi] * i[fi].conj()).re;
                let p_inc = (v[fi] + z * i[fi]).norm_sqr() / (8.0 * z.re.max(1e-300));
                let p_abs = absorbed.as_ref().map(|a| a[fi]);
                Pattern { freq: rad.freqs[fi], thetas: thetas.clone(), phis: phis.clone(), points, p_rad, p_acc, p_inc, p_flux: rad.p_flux[fi], p_abs }
            })
            .collect();
        Ok(Some(FarField { radiator: Arc::new(rad), step_deg, patterns }))
    }

    /// The index of the far-field frequency nearest `f`.
    pub fn nearest(&self, f: f64) -> Option<usize> {
        (0..self.patterns.len()).min_by(|&a, &b| (self.patterns[a].freq - f).abs().total_cmp(&(self.patterns[b].freq - f).abs()))
    }

    /// Radiation intensity at frequency index `fi` in direction (theta, phi), exactly.
    pub fn u_at(&self, fi: usize, theta: f64, phi: f64) -> f64 {
        self.radiator.at(fi, theta, phi).u
    }

    /// Directivity (linear) at `fi` towards (theta, phi).
    pub fn directivity(&self, fi: usize, theta: f64, phi: f64) -> f64 {
        4.0 * std::f64::consts::PI * self.u_at(fi, theta, phi) / self.patterns[fi].p_rad
    }
    /// Gain (linear, on accepted power).
    pub fn gain(&self, fi: usize, theta: f64, phi: f64) -> f64 {
        4.0 * std::f64::consts::PI * self.u_at(fi, theta, phi) / self.patterns[fi].p_acc
    }
    /// Realised gain (linear, on incident power: the mismatch included).
    pub fn realized_gain(&self, fi: usize, theta: f64, phi: f64) -> f64 {
        4.0 * std::f64::consts::PI * self.u_at(fi, theta, phi) / self.patterns[fi].p_inc
    }
    /// U(theta, phi) / U(opposite) (linear); infinite when the back lies behind a mirror plane.
    pub fn front_to_back(&self, fi: usize, theta: f64, phi: f64) -> f64 {
        let (bt, bp) = opposite(theta, phi);
        self.u_at(fi, theta, phi) / self.u_at(fi, bt, bp)
    }

    /// The summary of pattern `fi`.
    pub fn summary(&self, fi: usize) -> Summary {
        let p = &self.patterns[fi];
        let (bt, bp) = p.beam();
        let (ft, fp) = opposite(bt, bp);
        let back = self.u_at(fi, ft, fp);
        let umax = self.u_at(fi, bt, bp);
        let four_pi = 4.0 * std::f64::consts::PI;
        Summary {
            freq_hz: p.freq,
            directivity_dbi: dbp(four_pi * umax / p.p_rad),
            gain_dbi: dbp(four_pi * umax / p.p_acc),
            realized_gain_dbi: dbp(four_pi * umax / p.p_inc),
            radiation_efficiency: p.p_rad / p.p_acc,
            radiation_efficiency_by_loss: p.p_abs.map(|a| (p.p_acc - a.total()) / p.p_acc),
            conductor_loss_share: p.p_abs.map(|a| a.conductor / p.p_acc),
            dielectric_loss_share: p.p_abs.map(|a| a.dielectric / p.p_acc),
            load_loss_share: p.p_abs.map(|a| a.loads / p.p_acc),
            flux_over_pattern: p.p_flux / p.p_rad,
            beam_theta_deg: bt,
            beam_phi_deg: bp,
            front_to_back_db: (back > 0.0 && !self.radiator.has_mirror()).then(|| dbp(umax / back)),
        }
    }

    /// The E- and H-plane cuts of pattern `fi` (see [`Cut`]).
    pub fn cuts(&self, fi: usize) -> [Cut; 2] {
        let (bt, bp) = self.patterns[fi].beam();
        let at = self.radiator.at(fi, bt, bp);
        let e_along_theta = at.e_theta.norm() >= at.e_phi.norm();
        // A beam near the z axis: the cuts are the planes phi = phi0 and phi0 + 90,
        // phi0 the beam's polarisation azimuth (x for E along x).
        if !(30.0..=150.0).contains(&bt) {
            // E at broadside as a vector: its larger horizontal part names the E-plane.
            let (th, ph) = (bt.to_radians(), bp.to_radians());
            let ex = at.e_theta * (th.cos() * ph.cos()) - at.e_phi * ph.sin();
            let ey = at.e_theta * (th.cos() * ph.sin()) + at.e_phi * ph.cos();
            let e_phi0 = if ex.norm() >= ey.norm() { 0.0 } else { 90.0 };
            return [Cut::vertical(self, fi, "E-plane", e_phi0), Cut::vertical(self, fi, "H-plane", (e_phi0 + 90.0) % 180.0)];
        }
        // A beam towards the horizon: a vertical cut through it and the horizontal plane.
        if e_along_theta {
            [Cut::vertical(self, fi, "E-plane", bp), Cut::horizontal(self, fi, "H-plane")]
        } else {
            [Cut::horizontal(self, fi, "E-plane"), Cut::vertical(self, fi, "H-plane", bp)]
        }
    }
}

/// Per far-field frequency the power absorbed inside the box, from the
/// job's absorbed-power monitor; `None` without one.
fn absorbed_of(job: &SimJob, out: &SimOutput, freqs: &[f64]) -> Result<Option<Vec<Absorbed>>, String> {
    for (m, o) in job.monitors.iter().zip(&out.monitors) {
        if m.name() != crate::job::huygens::ABSORBED {
            continue;
        }
        let MonitorOutput::Absorbed { freqs: fs, conductor, dielectric, loads, .. } = o else {
            return Err(format!("monitor `{}` did not record absorbed power", m.name()));
        };
        if fs != freqs {
            return Err(format!("monitor `{}` has other frequencies than the far field", m.name()));
        }
        return Ok(Some((0..fs.len()).map(|k| Absorbed { conductor: conductor[k], dielectric: dielectric[k], loads: loads[k] }).collect()));
    }
    Ok(None)
}

/// The direction opposite (theta, phi), in degrees.
pub fn opposite(theta: f64, phi: f64) -> (f64, f64) {
    (180.0 - theta, (phi + 180.0) % 360.0)
}

impl Pattern {
    /// The grid direction of the strongest radiation (theta, phi) in degrees:
    /// the first in grid order within 0.01 dB of the peak, so that a round
    /// pattern (a dipole's horizon) names phi = 0 rather than a rounding winner.
    pub fn beam(&self) -> (f64, f64) {
        let np = self.phis.len();
        let umax = self.points.iter().map(|p| p.u).fold(0.0, f64::max);
        let n = self.points.iter().position(|p| p.u >= umax * 10f64.powf(-0.001)).unwrap_or(0);
        (self.thetas[n / np], self.phis[n % np])
    }
}

/// A pattern cut: a great circle of directions, `angle_deg` running round it
/// (-180..180), with directivity, gain and realised gain in dBi.
#[derive(Debug, Clone)]
pub struct Cut {
    /// "E-plane" / "H-plane".
    pub name: String,
    /// Which circle: "phi = 0 deg plane (theta from +z)" or "theta = 90 deg plane (phi from +x)".
    pub plane: String,
    /// What `angle_deg` is ("theta" signed towards phi, or "phi").
    pub angle_name: &'static str,
    pub angle_deg: Vec<f64>,
    pub directivity_dbi: Vec<f64>,
    pub gain_dbi: Vec<f64>,
    pub realized_gain_dbi: Vec<f64>,
}

impl Cut {
    fn from_dirs(ff: &FarField, fi: usize, name: &str, plane: String, angle_name: &'static str, dirs: Vec<(f64, f64, f64)>) -> Cut {
        use rayon::prelude::*;
        let p = &ff.patterns[fi];
        let us: Vec<f64> = dirs.par_iter().map(|&(_, t, f)| ff.u_at(fi, t, f)).collect();
        let four_pi = 4.0 * std::f64::consts::PI;
        Cut {
            name: name.into(),
            plane,
            angle_name,
            angle_deg: dirs.iter().map(|d| d.0).collect(),
            directivity_dbi: us.iter().map(|u| dbp(four_pi * u / p.p_rad)).collect(),
            gain_dbi: us.iter().map(|u| dbp(four_pi * u / p.p_acc)).collect(),
            realized_gain_dbi: us.iter().map(|u| dbp(four_pi * u / p.p_inc)).collect(),
        }
    }

    /// The plane phi = phi0 (and phi0 + 180, negative angles), by theta, every degree.
    fn vertical(ff: &FarField, fi: usize, name: &str, phi0: f64) -> Cut {
        let dirs = (-180..=180)
            .map(|a| {
                let a = a as f64;
                if a >= 0.0 {
                    (a, a, phi0)
                } else {
                    (a, -a, (phi0 + 180.0) % 360.0)
                }
            })
            .collect();
        Cut::from_dirs(ff, fi, name, format!("phi = {phi0:.0} deg plane"), "theta", dirs)
    }

    /// The plane theta = 90, by phi, every degree.
    fn horizontal(ff: &FarField, fi: usize, name: &str) -> Cut {
        let dirs = (-180..=180).map(|a| (a as f64, 90.0, (a as f64).rem_euclid(360.0))).collect();
        Cut::from_dirs(ff, fi, name, "theta = 90 deg plane".into(), "phi", dirs)
    }
}

/// The CSV of the full grid: one row per (frequency, theta, phi) with r E
/// (V, for 1 W accepted) as magnitude and phase, directivity, gain and
/// realised gain in dBi.
pub fn render_csv(ff: &FarField) -> String {
    let mut s = String::from(
        "freq_hz,theta_deg,phi_deg,abs_rE_theta_V,arg_rE_theta_deg,abs_rE_phi_V,arg_rE_phi_deg,directivity_dbi,gain_dbi,realized_gain_dbi\n",
    );
    let four_pi = 4.0 * std::f64::consts::PI;
    for p in &ff.patterns {
        let np = p.phis.len();
        let norm = 1.0 / p.p_acc.abs().max(1e-300).sqrt();
        for (n, pt) in p.points.iter().enumerate() {
            let (et, ep): (Complex64, Complex64) = (pt.e_theta * norm, pt.e_phi * norm);
            s.push_str(&format!(
                "{:.6e},{},{},{:.6e},{:.2},{:.6e},{:.2},{:.3},{:.3},{:.3}\n",
                p.freq,
                p.thetas[n / np],
                p.phis[n % np],
                et.norm(),
                et.arg().to_degrees(),
                ep.norm(),
                ep.arg().to_degrees(),
                dbp(four_pi * pt.u / p.p_rad),
                dbp(four_pi * pt.u / p.p_acc),
                dbp(four_pi * pt.u / p.p_inc),
            ));
        }
    }
    s
}
