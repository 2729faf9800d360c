//! Variation and selection operators. Each takes `&mut impl Rng`, so one seed drives everything.

pub mod crossover;
pub mod mutate;
pub mod select;
