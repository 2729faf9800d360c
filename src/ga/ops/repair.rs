//! Bound repair and lattice rounding for Int and Stepped genes, applied after every operator.

use crate::ga::genome::GeneSpec;

/// Put `x` inside the gene's bounds and, for lattice genes, onto the lattice
/// (the gene's own rule, [`GeneSpec::snap`]).
pub fn repair_gene(spec: &GeneSpec, x: f64) -> f64 {
    spec.snap(x)
}

/// Repair every gene of a genome in place.
pub fn repair_genome(genes: &[GeneSpec], x: &mut [f64]) {
    for (g, v) in genes.iter().zip(x.iter_mut()) {
        *v = g.snap(*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_on_lattice_and_in_bounds() {
        let s = GeneSpec::Stepped { name: "s".into(), min: 0.3, max: 1.05, step: 0.1 };
        let top = 0.3 + 7.0 * 0.1;
        assert_eq!(repair_gene(&s, 5.0), top);
        assert_eq!(repair_gene(&s, -5.0), 0.3);
        assert_eq!(repair_gene(&s, 0.64), 0.3 + 3.0 * 0.1);
        // Repair is idempotent, bit for bit: the cache key of a repaired genome is stable.
        for i in 0..1000 {
            let x = -1.0 + i as f64 * 0.003;
            let once = repair_gene(&s, x);
            assert_eq!(repair_gene(&s, once).to_bits(), once.to_bits());
        }
        let i = GeneSpec::Int { name: "n".into(), min: -2, max: 4 };
        assert_eq!(repair_gene(&i, 2.49), 2.0);
        assert_eq!(repair_gene(&i, 9.0), 4.0);
        assert_eq!(repair_gene(&i, f64::NAN), -2.0);
        let r = GeneSpec::Real { name: "r".into(), min: -1.0, max: 0.0 };
        assert_eq!(repair_gene(&r, -0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(repair_gene(&r, 0.5), 0.0);
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
            let p = crate::ga::genome::random_genome(&genes, &mut rng);
            let q = crate::ga::genome::random_genome(&genes, &mut rng);
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
