//! The gene space: what each gene may take, lattice rounding (the repair
//! applied after every operator), and the exact cache key of a genome.
//!
//! A genome is a `Vec<f64>` in the order of the specs. Int and Stepped genes
//! evolve as reals and are rounded onto their lattice after every operator
//! (pymoo's `RoundingRepair`).

use serde::{Deserialize, Serialize};

use super::error::GaError;

/// One optimisable parameter. The design layer converts its own parameter
/// declarations into this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GeneSpec {
    /// Any real in `[min, max]`.
    Real { name: String, min: f64, max: f64 },
    /// Any integer in `[min, max]`.
    Int { name: String, min: i64, max: i64 },
    /// `min + k * step` for integer `k >= 0`, not above `max`.
    Stepped { name: String, min: f64, max: f64, step: f64 },
}

impl GeneSpec {
    pub fn name(&self) -> &str {
        match self {
            GeneSpec::Real { name, .. } | GeneSpec::Int { name, .. } | GeneSpec::Stepped { name, .. } => name,
        }
    }

    /// The bounds a repaired value lies in (for Stepped: the highest lattice point, not `max`).
    pub fn bounds(&self) -> (f64, f64) {
        match *self {
            GeneSpec::Real { min, max, .. } => (min, max),
            GeneSpec::Int { min, max, .. } => (min as f64, max as f64),
            GeneSpec::Stepped { min, step, .. } => (min, min + self.lattice_top() as f64 * step),
        }
    }

    /// The interval the variation operators work in. For lattice genes it is
    /// widened by half a step each side, so that rounding gives the end points
    /// the same share of the interval as the inner points.
    pub fn operator_bounds(&self) -> (f64, f64) {
        let (lo, hi) = self.bounds();
        match *self {
            GeneSpec::Real { .. } => (lo, hi),
            GeneSpec::Int { .. } => (lo - 0.5, hi + 0.5),
            GeneSpec::Stepped { step, .. } => (lo - 0.5 * step, hi + 0.5 * step),
        }
    }

    /// Largest `k` with `min + k * step <= max` (a tiny tolerance absorbs
    /// decimal steps such as 0.1 that are not exact in binary).
    pub(crate) fn lattice_top(&self) -> i64 {
        match *self {
            GeneSpec::Stepped { min, max, step, .. } => ((max - min) / step + 1e-9).floor() as i64,
            _ => 0,
        }
    }

    /// The nearest allowed value to `x`: inside the bounds and, for lattice
    /// genes, on the lattice (the repair the operators apply). Non-finite input
    /// (which no operator should produce) becomes the lower bound.
    pub fn snap(&self, x: f64) -> f64 {
        let (lo, hi) = self.bounds();
        if !x.is_finite() {
            return lo;
        }
        let v = match *self {
            GeneSpec::Real { .. } => x.clamp(lo, hi),
            GeneSpec::Int { .. } => x.round().clamp(lo, hi),
            GeneSpec::Stepped { min, step, .. } => {
                let k = ((x - min) / step).round().clamp(0.0, self.lattice_top() as f64);
                // Always computed the same way from k, so equal lattice points have equal bits.
                min + k * step
            }
        };
        // -0.0 and 0.0 are the same design; give them the same cache key.
        v + 0.0
    }

    /// The allowed value nearest the middle of the range.
    pub fn midpoint(&self) -> f64 {
        let (lo, hi) = self.bounds();
        self.snap(0.5 * (lo + hi))
    }

    /// Why `x` is not on this gene's lattice, if it is not (bounds are checked apart).
    pub fn lattice_problem(&self, x: f64) -> Option<String> {
        match *self {
            GeneSpec::Real { .. } => None,
            GeneSpec::Int { .. } => (x.fract() != 0.0).then(|| format!("{x} is not an integer")),
            GeneSpec::Stepped { min, step, .. } => {
                let k = (x - min) / step;
                ((k - k.round()).abs() > 1e-6).then(|| format!("{x} is not min + k*step (min {min}, step {step})"))
            }
        }
    }

    /// Where `x` sits between the bounds, in [0, 1] (0.5 for a fixed gene).
    pub fn normalise(&self, x: f64) -> f64 {
        let (lo, hi) = self.bounds();
        if hi > lo {
            ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
        } else {
            0.5
        }
    }

    fn validate(&self) -> Result<(), GaError> {
        let bad = |why: String| Err(GaError::InvalidGene { name: self.name().to_string(), why });
        if self.name().trim().is_empty() {
            return Err(GaError::InvalidGene { name: String::new(), why: "the name is empty".into() });
        }
        match *self {
            GeneSpec::Real { min, max, .. } => {
                if !(min.is_finite() && max.is_finite()) {
                    return bad(format!("bounds must be finite, got [{min}, {max}]"));
                }
                if min > max {
                    return bad(format!("min {min} is above max {max}"));
                }
            }
            GeneSpec::Int { min, max, .. } => {
                if min > max {
                    return bad(format!("min {min} is above max {max}"));
                }
                // Beyond 2^53 integers are not exact in f64.
                if min.unsigned_abs() > 1 << 53 || max.unsigned_abs() > 1 << 53 {
                    return bad("bounds beyond +-2^53 cannot be represented exactly".into());
                }
            }
            GeneSpec::Stepped { min, max, step, .. } => {
                if !(min.is_finite() && max.is_finite() && step.is_finite()) {
                    return bad(format!("min, max and step must be finite, got {min}, {max}, {step}"));
                }
                if step <= 0.0 {
                    return bad(format!("step must be positive, got {step}"));
                }
                if min > max {
                    return bad(format!("min {min} is above max {max}"));
                }
            }
        }
        Ok(())
    }
}

/// Check a whole gene space: at least one gene, valid bounds, unique names.
pub fn validate_genes(genes: &[GeneSpec]) -> Result<(), GaError> {
    if genes.is_empty() {
        return Err(GaError::NoGenes);
    }
    let mut seen = std::collections::BTreeSet::new();
    for g in genes {
        g.validate()?;
        if !seen.insert(g.name()) {
            return Err(GaError::InvalidGene { name: g.name().into(), why: "the name is used twice".into() });
        }
    }
    Ok(())
}

/// Repair every gene of a genome in place: inside its bounds and on its
/// lattice ([`GeneSpec::snap`]), applied after every variation operator.
pub fn repair_genome(genes: &[GeneSpec], x: &mut [f64]) {
    for (g, v) in genes.iter().zip(x.iter_mut()) {
        *v = g.snap(*v);
    }
}

/// A uniformly random genome: uniform over the real interval, and over the
/// lattice points for Int and Stepped genes.
pub fn random_genome(genes: &[GeneSpec], rng: &mut impl rand::Rng) -> Vec<f64> {
    let mut x: Vec<f64> = genes
        .iter()
        .map(|g| {
            let (lo, hi) = g.operator_bounds();
            lo + rng.random::<f64>() * (hi - lo)
        })
        .collect();
    repair_genome(genes, &mut x);
    x
}

/// The exact identity of a genome: the bit patterns of its values, in hex.
/// Two genomes share a key only if every value is bit-for-bit equal.
pub fn genome_key(x: &[f64]) -> String {
    let mut s = String::with_capacity(x.len() * 17);
    for (i, v) in x.iter().enumerate() {
        if i > 0 {
            s.push('_');
        }
        s.push_str(&format!("{:016x}", v.to_bits()));
    }
    s
}

/// The genome a key was made from.
pub fn genome_from_key(key: &str) -> Option<Vec<f64>> {
    key.split('_').map(|h| u64::from_str_radix(h, 16).ok().map(f64::from_bits)).collect()
}

/// Gene names, in genome order.
pub fn gene_names(genes: &[GeneSpec]) -> Vec<String> {
    genes.iter().map(|g| g.name().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stepped() -> GeneSpec {
        GeneSpec::Stepped { name: "s".into(), min: 0.3, max: 1.05, step: 0.1 }
    }

    #[test]
    fn stepped_bounds_stop_at_the_last_lattice_point() {
        assert_eq!(stepped().bounds(), (0.3, 0.3 + 7.0 * 0.1));
        assert_eq!(stepped().operator_bounds(), (0.3 - 0.05, 0.3 + 7.0 * 0.1 + 0.05));
    }

    #[test]
    fn key_round_trips_and_tells_signed_zero_apart() {
        let x = vec![1.0, -2.5e-300, 3.0, f64::MIN_POSITIVE / 4.0];
        assert_eq!(genome_from_key(&genome_key(&x)).unwrap(), x);
        assert_ne!(genome_key(&[0.0]), genome_key(&[-0.0]));
    }

    #[test]
    fn validation_names_the_problem() {
        assert_eq!(validate_genes(&[]), Err(GaError::NoGenes));
        let dup = vec![stepped(), stepped()];
        assert!(validate_genes(&dup).unwrap_err().to_string().contains("used twice"));
        let bad = GeneSpec::Stepped { name: "w".into(), min: 0.0, max: 1.0, step: 0.0 };
        assert!(validate_genes(&[bad]).unwrap_err().to_string().contains("step must be positive"));
        let inv = GeneSpec::Real { name: "w".into(), min: 2.0, max: 1.0 };
        assert!(validate_genes(&[inv]).unwrap_err().to_string().contains("above max"));
        assert!(validate_genes(&[stepped()]).is_ok());
    }

    #[test]
    fn values_land_on_lattice_and_in_bounds() {
        let s = GeneSpec::Stepped { name: "s".into(), min: 0.3, max: 1.05, step: 0.1 };
        let top = 0.3 + 7.0 * 0.1;
        assert_eq!(s.snap(5.0), top);
        assert_eq!(s.snap(-5.0), 0.3);
        assert_eq!(s.snap(0.64), 0.3 + 3.0 * 0.1);
        // Repair is idempotent, bit for bit: the cache key of a repaired genome is stable.
        for i in 0..1000 {
            let x = -1.0 + i as f64 * 0.003;
            let once = s.snap(x);
            assert_eq!(s.snap(once).to_bits(), once.to_bits());
        }
        let i = GeneSpec::Int { name: "n".into(), min: -2, max: 4 };
        assert_eq!(i.snap(2.49), 2.0);
        assert_eq!(i.snap(9.0), 4.0);
        assert_eq!(i.snap(f64::NAN), -2.0);
        let r = GeneSpec::Real { name: "r".into(), min: -1.0, max: 0.0 };
        assert_eq!(r.snap(-0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(r.snap(0.5), 0.0);
    }

    #[test]
    fn operators_then_repair_keep_every_gene_legal() {
        use crate::ga::ops::{crossover::sbx, mutate::polynomial};
        use rand::{Rng, SeedableRng};
        let genes = vec![
            GeneSpec::Real { name: "r".into(), min: -1.0, max: 2.0 },
            GeneSpec::Int { name: "n".into(), min: 1, max: 4 },
            GeneSpec::Stepped { name: "s".into(), min: 0.25, max: 2.0, step: 0.25 },
            GeneSpec::Stepped { name: "t".into(), min: 0.1, max: 0.95, step: 0.1 },
        ];
        let ob: Vec<(f64, f64)> = genes.iter().map(GeneSpec::operator_bounds).collect();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(8);
        let mut seen_int = [0usize; 4];
        for _ in 0..20_000 {
            let p = random_genome(&genes, &mut rng);
            let q = random_genome(&genes, &mut rng);
            let (mut a, mut b) = sbx(&p, &q, &ob, 0.9, rng.random::<f64>() * 20.0, &mut rng);
            polynomial(&mut a, &ob, 0.5, 1.0 + rng.random::<f64>() * 20.0, &mut rng);
            polynomial(&mut b, &ob, 0.5, 20.0, &mut rng);
            repair_genome(&genes, &mut a);
            repair_genome(&genes, &mut b);
            for x in [&a, &b] {
                for (g, &v) in genes.iter().zip(x.iter()) {
                    let (lo, hi) = g.bounds();
                    assert!(v >= lo && v <= hi, "{} = {v} outside [{lo}, {hi}]", g.name());
                    match *g {
                        GeneSpec::Int { .. } => assert_eq!(v, v.round()),
                        GeneSpec::Stepped { min, step, .. } => {
                            let k = ((v - min) / step).round();
                            assert_eq!(v.to_bits(), (min + k * step).to_bits(), "{} = {v} off lattice", g.name());
                        }
                        GeneSpec::Real { .. } => {}
                    }
                }
                seen_int[x[1] as usize - 1] += 1;
            }
        }
        // The widened operator interval gives the end points of the lattice a fair share.
        let total: usize = seen_int.iter().sum();
        for (k, &c) in seen_int.iter().enumerate() {
            let share = c as f64 / total as f64;
            assert!(share > 0.15 && share < 0.35, "integer {} drawn with share {share}", k + 1);
        }
    }
}
