//! Breeding offspring: tournament selection, SBX, polynomial mutation and repair,
//! with one RNG stream per pair seeded from the master RNG.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::genome::{repair_genome, GeneSpec};
use super::ops::{crossover, mutate};
use super::settings::{Crossover, GaSettings, Mutation};

/// The RNG of one offspring pair (or one initial individual). Seeding it from
/// one draw of the master keeps each child's randomness to itself, so breeding
/// in parallel or in another order could not change the result.
pub fn child_rng(master: &mut Xoshiro256PlusPlus) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(master.next_u64())
}

/// Breed `n` children from `parents`. `pick(rng)` runs one tournament and
/// returns a parent index.
pub fn breed(
    parents: &[&[f64]],
    n: usize,
    genes: &[GeneSpec],
    settings: &GaSettings,
    master: &mut Xoshiro256PlusPlus,
    pick: impl Fn(&mut Xoshiro256PlusPlus) -> usize,
) -> Vec<Vec<f64>> {
    let bounds: Vec<(f64, f64)> = genes.iter().map(GeneSpec::operator_bounds).collect();
    let Crossover::Sbx { probability: px, eta: eta_c } = settings.crossover;
    let Mutation::Polynomial { eta: eta_m, .. } = settings.mutation;
    let pm = settings.mutation_probability(genes.len());
    let seeds: Vec<Xoshiro256PlusPlus> = (0..n.div_ceil(2)).map(|_| child_rng(master)).collect();
    let mut children = Vec::with_capacity(n);
    for mut rng in seeds {
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let (mut c1, mut c2) = crossover::sbx(parents[a], parents[b], &bounds, px, eta_c, &mut rng);
        // Repair after each operator, so mutation starts from a legal design.
        for c in [&mut c1, &mut c2] {
            repair_genome(genes, c);
            mutate::polynomial(c, &bounds, pm, eta_m, &mut rng);
            repair_genome(genes, c);
        }
        children.push(c1);
        if children.len() < n {
            children.push(c2);
        }
    }
    children
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::genome::random_genome;

    #[test]
    fn each_pair_depends_only_on_its_own_stream() {
        let genes: Vec<GeneSpec> = (0..4).map(|i| GeneSpec::Real { name: format!("x{i}"), min: 0.0, max: 1.0 }).collect();
        let mut r = Xoshiro256PlusPlus::seed_from_u64(1);
        let parents: Vec<Vec<f64>> = (0..8).map(|_| random_genome(&genes, &mut r)).collect();
        let refs: Vec<&[f64]> = parents.iter().map(|p| p.as_slice()).collect();
        let s = GaSettings::default();
        let pick = |rng: &mut Xoshiro256PlusPlus| crate::ga::ops::select::tournament(8, 2, rng, |a, b| a < b);
        let many = breed(&refs, 10, &genes, &s, &mut Xoshiro256PlusPlus::seed_from_u64(7), pick);
        let few = breed(&refs, 4, &genes, &s, &mut Xoshiro256PlusPlus::seed_from_u64(7), pick);
        // Breeding more children, or breeding them in another order or on other
        // threads, cannot change the children of a given pair.
        assert_eq!(&many[..4], &few[..]);
        // Another master seed gives other children.
        let other = breed(&refs, 4, &genes, &s, &mut Xoshiro256PlusPlus::seed_from_u64(8), pick);
        assert_ne!(other, few);
    }
}
