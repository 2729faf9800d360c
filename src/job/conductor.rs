//! Finite-conductivity metal, as a simulation job carries it: which metal
//! surfaces are lossy (solids by material, sheets, the domain's PEC faces)
//! and each conductor's surface impedance over frequency.
//!
//! A good conductor is still drawn as PEC on the grid (its skin depth is far
//! below any cell); its loss and internal inductance come in through the
//! surface impedance `Zs(w)` felt by the tangential H next to its faces (the
//! FDTD extension `engine::fdtd::surface`). `Zs` is that of a slab of
//! thickness `t` whose far side is open (Ramo, Whinnery & Van Duzer, Fields
//! and Waves in Communication Electronics, 3rd ed. 1994, sec. 5.16):
//! `Zs = Zc coth(gamma t)`, `Zc = sqrt(j w mu0 / sigma)`,
//! `gamma = sqrt(j w mu0 sigma)` (good conductor); a thick wall is `t`
//! infinite (`Zs = Zc`, `Rs = sqrt(w mu0 / (2 sigma))`). Surface roughness
//! multiplies `Zs` by the Hammerstad-Jensen factor
//! `1 + (2/pi) atan(1.4 (Delta / delta)^2)` (Hammerstad & Jensen, "Accurate
//! models for microstrip computer-aided design", IEEE MTT-S 1980), `Delta`
//! the rms roughness and `delta` the skin depth.

use num_complex::Complex64;
use serde::{Deserialize, Serialize};

use crate::consts::MU0;

/// One lossy metal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conductor {
    pub name: String,
    /// Conductivity in S/m (> 0).
    pub sigma: f64,
    /// Thickness in metres of a sheet of this metal; `None`: thick (solids,
    /// walls, and sheets drawn as thick metal).
    #[serde(default)]
    pub thickness: Option<f64>,
    /// Rms surface roughness in metres (0: smooth).
    #[serde(default)]
    pub roughness: f64,
}

impl Conductor {
    /// Skin depth at angular frequency `w`.
    pub fn skin_depth(&self, w: f64) -> f64 {
        (2.0 / (w * MU0 * self.sigma)).sqrt()
    }

    /// The Hammerstad-Jensen roughness factor at `w` (1 when smooth).
    pub fn roughness_factor(&self, w: f64) -> f64 {
        if self.roughness <= 0.0 {
            return 1.0;
        }
        let r = self.roughness / self.skin_depth(w);
        1.0 + 2.0 / std::f64::consts::PI * (1.4 * r * r).atan()
    }

    /// The surface impedance `Zs(w)` in ohms (e^{jwt}), roughness included.
    pub fn surface_impedance(&self, w: f64) -> Complex64 {
        let j = Complex64::new(0.0, 1.0);
        let zc = (j * w * MU0 / self.sigma).sqrt();
        let z = match self.thickness {
            None => zc,
            Some(t) => {
                let gt = (j * w * MU0 * self.sigma).sqrt() * t;
                // coth for a large argument is 1 (and exp would overflow).
                if gt.re > 20.0 {
                    zc
                } else {
                    zc * gt.cosh() / gt.sinh()
                }
            }
        };
        z * self.roughness_factor(w)
    }
}

/// Which metal surfaces of a job are lossy, and of what (FDTD only). Every
/// index refers to [`Surfaces::conductors`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Surfaces {
    pub conductors: Vec<Conductor>,
    /// (index into the job's materials of a PEC material, its conductor).
    pub materials: Vec<(u8, u8)>,
    /// (index into the job's sheets, its conductor).
    pub sheets: Vec<(usize, u8)>,
    /// `walls[axis][side]`: the conductor of a PEC domain face.
    pub walls: [[Option<u8>; 2]; 3],
}

impl Surfaces {
    /// No lossy metal at all (every metal is perfect).
    pub fn is_empty(&self) -> bool {
        self.conductors.is_empty()
    }

    /// The conductor of material `m`, if it is a lossy metal.
    pub fn of_material(&self, m: u8) -> Option<u8> {
        self.materials.iter().find(|&&(k, _)| k == m).map(|&(_, c)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copper(thickness: Option<f64>) -> Conductor {
        Conductor { name: "copper".into(), sigma: 5.8e7, thickness, roughness: 0.0 }
    }

    #[test]
    fn thick_copper_has_the_textbook_surface_resistance() {
        // Pozar, Microwave Engineering, 4th ed., Table/eq. 1.131: Rs = sqrt(w mu0 / 2 sigma);
        // copper at 10 GHz: 0.0261 ohm, and Zs = Rs (1 + j).
        let w = 2.0 * std::f64::consts::PI * 10e9;
        let z = copper(None).surface_impedance(w);
        assert!((z.re - 0.02609).abs() < 2e-5, "{z}");
        assert!((z.im - z.re).abs() < 1e-12 * z.re.max(1.0), "{z}");
        assert!((copper(None).skin_depth(w) - 0.66e-6).abs() < 0.01e-6);
    }

    #[test]
    fn a_sheet_is_thick_above_its_skin_depth_and_resistive_below() {
        let t = 35e-6;
        let hi = 2.0 * std::f64::consts::PI * 10e9; // t = 53 skin depths
        let z = copper(Some(t)).surface_impedance(hi);
        let zc = copper(None).surface_impedance(hi);
        assert!((z - zc).norm() < 1e-9 * zc.norm());
        let lo = 2.0 * std::f64::consts::PI * 1e3; // t = 0.017 skin depths: R = 1 / (sigma t)
        let z = copper(Some(t)).surface_impedance(lo);
        let r_dc = 1.0 / (5.8e7 * t);
        assert!((z.re - r_dc).abs() < 1e-3 * r_dc, "{z} vs {r_dc}");
    }

    #[test]
    fn roughness_at_most_doubles_the_loss() {
        let mut c = copper(None);
        c.roughness = 1e-6;
        let w = 2.0 * std::f64::consts::PI * 10e9;
        let k = c.roughness_factor(w);
        assert!(k > 1.5 && k < 2.0, "{k}");
        c.roughness = 100e-6;
        assert!((c.roughness_factor(w) - 2.0).abs() < 1e-3);
    }
}
