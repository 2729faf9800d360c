//! `GaSettings`: the `optimiser:` block of a design file (`Ga(...)`,
//! `Cmaes(...)`, `De(...)` or `Surrogate(...)`, see [`super::methods`]), every field defaulted.
//!
//! Optional numbers may be written bare (`target: 0.0`) or as `Some(0.0)`, so
//! users need not know RON's `implicit_some` extension.

use serde::{Deserialize, Serialize};

use super::error::GaError;
use super::methods::{self, DeStrategy, Method, OptimiserBlock};

/// How to search. Read from RON as `Ga(population: 64, ...)` or another
/// method's block; `elitism`, `tournament`, `crossover` and `mutation` are the GA's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "OptimiserBlock", into = "OptimiserBlock")]
pub struct GaSettings {
    /// Individuals per generation.
    pub population: usize,
    /// Generations bred after the initial population (generation 0), as in DEAP's `ngen`.
    pub generations: usize,
    /// The one seed of the run; there is no other source of randomness.
    pub seed: u64,
    /// Single objective: the best `elitism` individuals pass unchanged to the next generation.
    pub elitism: usize,
    /// Tournament size for parent selection (2 is binary tournament).
    pub tournament: usize,
    pub crossover: Crossover,
    pub mutation: Mutation,
    pub stop: Stop,
    /// The search method and its own settings (the GA by default).
    pub method: Method,
}

impl Default for GaSettings {
    /// The defaults `docs/DESIGN_FORMAT.md` lists (a test holds the two together).
    fn default() -> Self {
        GaSettings {
            population: methods::ga_population(),
            generations: methods::generations(),
            seed: 0,
            elitism: methods::elitism(),
            tournament: methods::tournament(),
            crossover: Crossover::default(),
            mutation: Mutation::default(),
            stop: Stop::default(),
            method: Method::Ga,
        }
    }
}

/// Recombination of two parents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Crossover {
    /// Simulated binary crossover (Deb), bounded. `probability` per pair; each
    /// gene is then exchanged with probability 0.5. Larger `eta` keeps children nearer their parents.
    Sbx {
        #[serde(default = "sbx_probability")]
        probability: f64,
        #[serde(default = "sbx_eta")]
        eta: f64,
    },
}

impl Default for Crossover {
    fn default() -> Self {
        Crossover::Sbx { probability: sbx_probability(), eta: sbx_eta() }
    }
}

fn sbx_probability() -> f64 {
    0.9
}
fn sbx_eta() -> f64 {
    15.0
}
fn pm_eta() -> f64 {
    20.0
}

/// Perturbation of one child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Mutation {
    /// Polynomial mutation (Deb), bounded. `probability` per gene; `None` means `1 / genes`.
    Polynomial {
        #[serde(default, with = "lenient_option", skip_serializing_if = "Option::is_none")]
        probability: Option<f64>,
        #[serde(default = "pm_eta")]
        eta: f64,
    },
}

impl Default for Mutation {
    fn default() -> Self {
        Mutation::Polynomial { probability: None, eta: pm_eta() }
    }
}

/// Extra stopping rules; any one ends the run (the generation limit always applies).
///
/// By default a run stops as soon as every goal is met (target 0) and after
/// [`DEFAULT_STAGNATION`] generations without improvement; `None` lifts a rule.
/// Rules whose default is a value are always written out, `None` included, so
/// a `settings.ron` read back means what it meant when written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Stop {
    /// Stop once the best feasible fitness is at or below this (single
    /// objective; with several objectives the default is not used and another value is refused).
    #[serde(with = "lenient_option")]
    pub target: Option<f64>,
    /// Stop once this many designs have been simulated (checked after each generation).
    #[serde(with = "lenient_option", skip_serializing_if = "Option::is_none")]
    pub max_evaluations: Option<usize>,
    /// Stop after this many generations without improvement of the best.
    #[serde(with = "lenient_option")]
    pub stagnation: Option<usize>,
    /// Stop after this much wall time, summed over resumed sessions (seconds).
    #[serde(with = "lenient_option", skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
}

/// The largest population accepted.
pub const MAX_POPULATION: usize = 100_000;

/// The default fitness target: 0, every goal met.
pub const DEFAULT_TARGET: f64 = 0.0;
/// The default stagnation limit in generations.
pub const DEFAULT_STAGNATION: usize = 12;

impl Default for Stop {
    fn default() -> Self {
        Stop { target: Some(DEFAULT_TARGET), max_evaluations: None, stagnation: Some(DEFAULT_STAGNATION), wall_seconds: None }
    }
}

impl Stop {
    /// No rule but the generation limit.
    pub fn none() -> Stop {
        Stop { target: None, max_evaluations: None, stagnation: None, wall_seconds: None }
    }
}

impl GaSettings {
    /// Parse a `Ga(...)` block.
    pub fn from_ron_str(s: &str) -> Result<GaSettings, ron::error::SpannedError> {
        ron::from_str(s)
    }

    /// Resolved settings as RON, for `settings.ron` in the run directory.
    pub fn to_ron_string(&self) -> String {
        // RON fails only on a custom Serialize error or a map key it cannot write;
        // GaSettings has neither (plain numbers, enums and structs).
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default().struct_names(true))
            .expect("GaSettings holds only plain numbers")
    }

    /// Per-gene mutation probability for a genome of `n_genes`.
    pub fn mutation_probability(&self, n_genes: usize) -> f64 {
        match self.mutation {
            Mutation::Polynomial { probability, .. } => probability.unwrap_or(1.0 / n_genes.max(1) as f64),
        }
    }

    /// Check every value, with a message naming the field.
    pub fn validate(&self) -> Result<(), GaError> {
        let bad = |field, why: String| Err(GaError::InvalidSetting { field, why });
        self.validate_stop()?;
        let name = self.method.name();
        let min_population = match &self.method {
            Method::Ga => 2,
            // mu = population / 2 parents need at least 2 for a covariance update.
            Method::Cmaes(_) => 4,
            // current-to-pbest/1 and rand/1 draw three vectors besides the target.
            Method::De(_) => 4,
            Method::Surrogate(_) => 1,
        };
        if self.population < min_population {
            return bad(
                "population",
                format!("{name} needs at least {min_population} individuals per generation, got {}", self.population),
            );
        }
        // Every method keeps, breeds and simulates a population each
        // generation: a larger one is a typo, and would be allocated before any check.
        if self.population > MAX_POPULATION {
            return bad("population", format!("must be at most {MAX_POPULATION} individuals, got {}", self.population));
        }
        match &self.method {
            Method::Ga => {}
            Method::Cmaes(p) => {
                if !(p.sigma > 0.0 && p.sigma <= 1.0) {
                    return bad("sigma", format!("must be in (0, 1] (a fraction of each gene's range), got {}", p.sigma));
                }
                if p.max_population > MAX_POPULATION {
                    return bad("max_population", format!("must be at most {MAX_POPULATION} individuals, got {}", p.max_population));
                }
                if p.max_population < self.population {
                    return bad(
                        "max_population",
                        format!("must be at least the population ({}), got {}", self.population, p.max_population),
                    );
                }
                return Ok(());
            }
            Method::De(p) => {
                match p.strategy {
                    DeStrategy::Shade { memory } => {
                        if memory == 0 {
                            return bad("strategy.memory", "must be at least 1".into());
                        }
                    }
                    DeStrategy::RandOneBin { f, cr } => {
                        if !(f > 0.0 && f <= 2.0) {
                            return bad("strategy.f", format!("must be in (0, 2], got {f}"));
                        }
                        if !(0.0..=1.0).contains(&cr) {
                            return bad("strategy.cr", format!("must be in [0, 1], got {cr}"));
                        }
                    }
                }
                return Ok(());
            }
            Method::Surrogate(p) => {
                if p.pool < 4 {
                    return bad("pool", format!("DE parents need at least 4 designs, got {}", p.pool));
                }
                if p.trials == 0 {
                    return bad("trials", "must be at least 1".into());
                }
                // Every pool member's trials are prescreened each generation.
                for (field, n) in [("pool", p.pool), ("trials", p.trials), ("train_max", p.train_max), ("initial", p.initial.unwrap_or(0))] {
                    if n > MAX_POPULATION {
                        return bad(field, format!("must be at most {MAX_POPULATION} designs, got {n}"));
                    }
                }
                if !(p.lcb.is_finite() && p.lcb >= 0.0) {
                    return bad("lcb", format!("must be finite and >= 0, got {}", p.lcb));
                }
                if p.train_max < 10 {
                    return bad("train_max", format!("must be at least 10 designs, got {}", p.train_max));
                }
                if let Some(i) = p.initial {
                    if i < 2 {
                        return bad("initial", format!("a model needs at least 2 designs to start from, got {i}"));
                    }
                }
                return Ok(());
            }
        }
        if self.elitism >= self.population {
            return bad("elitism", format!("must be below the population ({}), got {}", self.population, self.elitism));
        }
        if self.tournament < 1 || self.tournament > self.population {
            return bad("tournament", format!("must be between 1 and the population, got {}", self.tournament));
        }
        let Crossover::Sbx { probability, eta } = self.crossover;
        if !(0.0..=1.0).contains(&probability) {
            return bad("crossover.probability", format!("must be in [0, 1], got {probability}"));
        }
        if !(eta.is_finite() && eta >= 0.0) {
            return bad("crossover.eta", format!("must be finite and >= 0, got {eta}"));
        }
        let Mutation::Polynomial { probability, eta } = self.mutation;
        if let Some(p) = probability {
            if !(0.0..=1.0).contains(&p) {
                return bad("mutation.probability", format!("must be in [0, 1], got {p}"));
            }
        }
        if !(eta.is_finite() && eta >= 0.0) {
            return bad("mutation.eta", format!("must be finite and >= 0, got {eta}"));
        }
        Ok(())
    }

    /// The stop rules, the same for every method.
    fn validate_stop(&self) -> Result<(), GaError> {
        let bad = |field, why: String| Err(GaError::InvalidSetting { field, why });
        if let Some(t) = self.stop.target {
            if !t.is_finite() {
                return bad("stop.target", format!("must be finite, got {t}"));
            }
        }
        if self.stop.max_evaluations == Some(0) {
            return bad("stop.max_evaluations", "must be at least 1".into());
        }
        if self.stop.stagnation == Some(0) {
            return bad("stop.stagnation", "must be at least 1 generation".into());
        }
        if let Some(w) = self.stop.wall_seconds {
            if !(w.is_finite() && w > 0.0) {
                return bad("stop.wall_seconds", format!("must be positive, got {w}"));
            }
        }
        Ok(())
    }

    /// Resuming with different breeding settings would not continue the same
    /// run; only the generation limit and the stop rules may change.
    pub fn check_resumable_with(&self, new: &GaSettings) -> Result<(), GaError> {
        let mut diff = Vec::new();
        if self.population != new.population {
            diff.push("population");
        }
        if self.seed != new.seed {
            diff.push("seed");
        }
        if self.elitism != new.elitism {
            diff.push("elitism");
        }
        if self.tournament != new.tournament {
            diff.push("tournament");
        }
        if self.crossover != new.crossover {
            diff.push("crossover");
        }
        if self.mutation != new.mutation {
            diff.push("mutation");
        }
        if self.method.name() != new.method.name() {
            return Err(GaError::Incompatible(format!(
                "the checkpoint was made by the {} optimiser, the settings ask for {}; a run keeps its optimiser",
                self.method.name(),
                new.method.name()
            )));
        }
        if self.method != new.method {
            diff.push("optimiser settings");
        }
        if diff.is_empty() {
            Ok(())
        } else {
            Err(GaError::Incompatible(format!(
                "the checkpoint was bred with different {}; only `generations` and `stop` may change on resume",
                diff.join(", ")
            )))
        }
    }
}

/// `Option<number>` that reads `x`, `Some(x)` or `None`, and writes `x`.
pub(crate) mod lenient_option {
    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serialize, Serializer};
    use std::fmt;
    use std::marker::PhantomData;

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(x) => x.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: Deserialize<'de> + FromNumber,
        D: Deserializer<'de>,
    {
        d.deserialize_any(LenientVisitor(PhantomData))
    }

    /// The numbers a bare value may be.
    pub trait FromNumber: Sized {
        fn from_f64(v: f64) -> Option<Self>;
        fn from_u64(v: u64) -> Option<Self>;
        fn from_i64(v: i64) -> Option<Self>;
        const WHAT: &'static str;
    }
    impl FromNumber for f64 {
        fn from_f64(v: f64) -> Option<Self> {
            Some(v)
        }
        fn from_u64(v: u64) -> Option<Self> {
            Some(v as f64)
        }
        fn from_i64(v: i64) -> Option<Self> {
            Some(v as f64)
        }
        const WHAT: &'static str = "a number";
    }
    impl FromNumber for usize {
        fn from_f64(_: f64) -> Option<Self> {
            None
        }
        fn from_u64(v: u64) -> Option<Self> {
            usize::try_from(v).ok()
        }
        fn from_i64(v: i64) -> Option<Self> {
            usize::try_from(v).ok()
        }
        const WHAT: &'static str = "a non-negative integer";
    }

    struct LenientVisitor<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de> + FromNumber> Visitor<'de> for LenientVisitor<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "{}, Some(..) or None", T::WHAT)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        // A bare word (`stagnation: foo`, `nan`) reaches here as a unit value:
        // an error, never "no rule".
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(E::custom(format!("expected {}, Some(..) or None; a bare word or () is not a value here (write None to lift the rule)", T::WHAT)))
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            T::deserialize(d).map(Some)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            T::from_f64(v).map(Some).ok_or_else(|| E::invalid_type(de::Unexpected::Float(v), &self))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            T::from_u64(v).map(Some).ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(v), &self))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            T::from_i64(v).map(Some).ok_or_else(|| E::invalid_value(de::Unexpected::Signed(v), &self))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_format_example() {
        let s = "Ga(population: 64, generations: 40, seed: 7, elitism: 2, tournament: 3, \
                 crossover: Sbx(probability: 0.9, eta: 15.0), \
                 mutation: Polynomial(probability: 0.25, eta: 20.0), \
                 stop: (target: 0.0, max_evaluations: 4000, stagnation: 12))";
        let g = GaSettings::from_ron_str(s).unwrap();
        assert_eq!(g.population, 64);
        assert_eq!(g.generations, 40);
        assert_eq!(g.seed, 7);
        assert_eq!(g.tournament, 3);
        assert_eq!(g.mutation, Mutation::Polynomial { probability: Some(0.25), eta: 20.0 });
        assert_eq!(g.stop, Stop { target: Some(0.0), max_evaluations: Some(4000), stagnation: Some(12), wall_seconds: None });
        g.validate().unwrap();
        // What we write is what we read, in the form users write.
        let text = g.to_ron_string();
        assert!(text.starts_with("Ga("), "{text}");
        assert_eq!(GaSettings::from_ron_str(&text).unwrap(), g);
    }

    #[test]
    fn defaults_fill_every_missing_field() {
        let g = GaSettings::from_ron_str("Ga()").unwrap();
        assert_eq!(g, GaSettings::default());
        assert_eq!(g.population, 32);
        assert_eq!(g.mutation_probability(8), 0.125);
        let g = GaSettings::from_ron_str("Ga(mutation: Polynomial(), crossover: Sbx(eta: 3.0), stop: (target: Some(1), wall_seconds: 5))").unwrap();
        assert_eq!(g.crossover, Crossover::Sbx { probability: 0.9, eta: 3.0 });
        assert_eq!(g.stop.target, Some(1.0));
        assert_eq!(g.stop.wall_seconds, Some(5.0));
        assert_eq!(GaSettings::from_ron_str(&g.to_ron_string()).unwrap(), g);
    }

    #[test]
    fn rejects_unknown_fields_and_bad_values() {
        assert!(GaSettings::from_ron_str("Ga(populaton: 3)").unwrap_err().to_string().contains("populaton"));
        assert!(GaSettings::from_ron_str("Ga(stop: (stagnaton: 3))").is_err());
        assert!(GaSettings::from_ron_str("Ga(stop: (max_evaluations: 2.5))").is_err());
        let g = GaSettings { elitism: 40, ..Default::default() };
        assert!(g.validate().unwrap_err().to_string().contains("elitism"));
        let g = GaSettings { mutation: Mutation::Polynomial { probability: Some(1.5), eta: 20.0 }, ..Default::default() };
        assert!(g.validate().unwrap_err().to_string().contains("mutation.probability"));
    }

    /// Every method's population (and the surrogate's other counts) is
    /// bounded before anything is allocated, not the GA's alone.
    #[test]
    fn every_method_refuses_a_huge_count() {
        for block in ["Ga(population: 1000001)", "Cmaes(population: 1000001, max_population: 2000000)", "De(population: 4294967296)", "Surrogate(population: 100001)"] {
            let e = GaSettings::from_ron_str(block).unwrap().validate().unwrap_err().to_string();
            assert!(e.contains("population") && e.contains("must be at most 100000 individuals"), "{block}: {e}");
        }
        let e = GaSettings::from_ron_str("Cmaes(max_population: 4294967296)").unwrap().validate().unwrap_err().to_string();
        assert!(e.contains("max_population") && e.contains("at most 100000"), "{e}");
        for (block, field) in [("Surrogate(trials: 4294967296)", "trials"), ("Surrogate(pool: 1000000)", "pool"), ("Surrogate(initial: 1000000)", "initial")] {
            let e = GaSettings::from_ron_str(block).unwrap().validate().unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("at most 100000 designs"), "{block}: {e}");
        }
    }

    /// docs/DESIGN_FORMAT.md's table of optimiser defaults, each row parsed as RON.
    #[test]
    fn the_documented_defaults_are_the_code_defaults() {
        let doc = include_str!("../../docs/DESIGN_FORMAT.md");
        let section = &doc[doc.find("## Optimiser").expect("an Optimiser section")..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
        let rows: Vec<(&str, &str)> = section
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let (field, value) = (cells.get(1)?, cells.get(2)?);
                let field = field.strip_prefix('`')?.strip_suffix('`')?;
                Some((field, value.trim_matches('`')))
            })
            .collect();
        let fields = ["population", "generations", "seed", "elitism", "tournament", "crossover", "mutation", "stop"];
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), fields, "the table lists every field once, in order");
        let code = GaSettings::default();
        let mut all = Vec::new();
        for (field, value) in &rows {
            let one = GaSettings::from_ron_str(&format!("Ga({field}: {value})"))
                .unwrap_or_else(|e| panic!("the documented default of `{field}` ({value}) does not parse: {e}"));
            assert_eq!(one, code, "the documented default of `{field}` ({value}) is not the code's");
            all.push(format!("{field}: {value}"));
        }
        // The whole table as one block, too.
        assert_eq!(GaSettings::from_ron_str(&format!("Ga({})", all.join(", "))).unwrap(), code);
        // A design without an optimiser block stops early when every goal is met and on stagnation.
        assert_eq!(code.stop.target, Some(0.0));
        assert!(code.stop.stagnation.is_some());
    }

    #[test]
    fn lifted_rules_stay_lifted_through_settings_ron() {
        let g = GaSettings { stop: Stop::none(), ..Default::default() };
        let text = g.to_ron_string();
        assert!(text.contains("target: None") && text.contains("stagnation: None"), "{text}");
        assert_eq!(GaSettings::from_ron_str(&text).unwrap(), g);
    }

    #[test]
    fn resume_allows_only_limits_to_change() {
        let a = GaSettings::default();
        let mut b = a.clone();
        b.generations = 99;
        b.stop.stagnation = Some(4);
        a.check_resumable_with(&b).unwrap();
        b.seed = 1;
        b.population = 10;
        let e = a.check_resumable_with(&b).unwrap_err().to_string();
        assert!(e.contains("population") && e.contains("seed"), "{e}");
    }
}
