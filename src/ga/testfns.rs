//! Analytic test problems (Rastrigin with mixed genes and a constraint, ZDT1):
//! cheap stand-ins for a simulator, for tests and for checking a build end to end.


use super::genome::GeneSpec;
use super::problem::{Evaluation, Problem};

/// Rastrigin, minimum 0 at the origin, over a mixed gene space: `n_real` reals
/// in [-5.12, 5.12], `n_int` integers in [-5, 5] and one stepped gene in
/// [-5, 5] by 0.25. Optional constraint `sum(x) <= limit` (violation `sum - limit`).
#[derive(Debug, Clone)]
pub struct Rastrigin {
    pub genes: Vec<GeneSpec>,
    pub sum_limit: Option<f64>,
    /// Reported as the engine throughput of every design.
    pub cells_per_second: Option<f64>,
    /// Batches and designs evaluated so far.
    pub batches: usize,
    pub evaluated: usize,
}

impl Rastrigin {
    pub fn new(n_real: usize, n_int: usize) -> Rastrigin {
        let mut genes: Vec<GeneSpec> =
            (0..n_real).map(|i| GeneSpec::Real { name: format!("x{i}"), min: -5.12, max: 5.12 }).collect();
        genes.extend((0..n_int).map(|i| GeneSpec::Int { name: format!("n{i}"), min: -5, max: 5 }));
        genes.push(GeneSpec::Stepped { name: "s".into(), min: -5.0, max: 5.0, step: 0.25 });
        Rastrigin { genes, sum_limit: None, cells_per_second: None, batches: 0, evaluated: 0 }
    }

    pub fn value(x: &[f64]) -> f64 {
        10.0 * x.len() as f64
            + x.iter().map(|v| v * v - 10.0 * (2.0 * std::f64::consts::PI * v).cos()).sum::<f64>()
    }
}

impl Problem for Rastrigin {
    fn genes(&self) -> Vec<GeneSpec> {
        self.genes.clone()
    }
    fn n_objectives(&self) -> usize {
        1
    }
    fn constraint_violation(&self, x: &[f64]) -> f64 {
        self.sum_limit.map_or(0.0, |l| (x.iter().sum::<f64>() - l).max(0.0))
    }
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
        self.batches += 1;
        let mut out = Vec::with_capacity(xs.len());
        for (i, x) in xs.iter().enumerate() {
            let mut e = Evaluation::ok(vec![Rastrigin::value(x)]);
            e.extra.values = [("sum".to_string(), x.iter().sum::<f64>()), ("norm2".to_string(), x.iter().map(|v| v * v).sum::<f64>())].into();
            e.cells_per_second = self.cells_per_second;
            out.push(e);
            progress(i + 1);
        }
        self.evaluated += xs.len();
        Ok(out)
    }
}

/// ZDT1 (Zitzler, Deb, Thiele 2000): two objectives over `n` reals in [0, 1];
/// the Pareto front is `f2 = 1 - sqrt(f1)`, reached when `x[1..] = 0`.
#[derive(Debug, Clone)]
pub struct Zdt1 {
    pub n: usize,
}

impl Zdt1 {
    pub fn objectives(x: &[f64]) -> [f64; 2] {
        let f1 = x[0];
        let g = 1.0 + 9.0 * x[1..].iter().sum::<f64>() / (x.len() - 1) as f64;
        [f1, g * (1.0 - (f1 / g).sqrt())]
    }
}

impl Problem for Zdt1 {
    fn genes(&self) -> Vec<GeneSpec> {
        (0..self.n).map(|i| GeneSpec::Real { name: format!("x{i}"), min: 0.0, max: 1.0 }).collect()
    }
    fn n_objectives(&self) -> usize {
        2
    }
    fn constraint_violation(&self, _: &[f64]) -> f64 {
        0.0
    }
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
        let out = xs.iter().map(|x| Evaluation::ok(Zdt1::objectives(x).to_vec())).collect();
        progress(xs.len());
        Ok(out)
    }
}

/// A smooth or multimodal benchmark over `n` real genes, optimum value 0:
/// sphere and Rastrigin shifted so the optimum is at x = 1 (not the middle of
/// the box, which a method could favour), Rosenbrock (optimum at x = 1 already).
#[derive(Debug, Clone)]
pub struct Benchmark {
    pub name: &'static str,
    pub n: usize,
    pub bound: f64,
    pub f: fn(&[f64]) -> f64,
    pub evaluated: usize,
}

impl Benchmark {
    pub fn sphere(n: usize) -> Benchmark {
        Benchmark { name: "sphere", n, bound: 5.0, f: |x| x.iter().map(|v| (v - 1.0).powi(2)).sum(), evaluated: 0 }
    }
    pub fn rosenbrock(n: usize) -> Benchmark {
        Benchmark {
            name: "rosenbrock",
            n,
            bound: 2.048,
            f: |x| x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum(),
            evaluated: 0,
        }
    }
    pub fn rastrigin(n: usize) -> Benchmark {
        Benchmark {
            name: "rastrigin",
            n,
            bound: 5.12,
            f: |x| Rastrigin::value(&x.iter().map(|v| v - 1.0).collect::<Vec<_>>()),
            evaluated: 0,
        }
    }
}

impl Problem for Benchmark {
    fn genes(&self) -> Vec<GeneSpec> {
        (0..self.n).map(|i| GeneSpec::Real { name: format!("x{i}"), min: -self.bound, max: self.bound }).collect()
    }
    fn n_objectives(&self) -> usize {
        1
    }
    fn constraint_violation(&self, _: &[f64]) -> f64 {
        0.0
    }
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
        self.evaluated += xs.len();
        let out = xs.iter().map(|x| Evaluation::ok(vec![(self.f)(x)])).collect();
        progress(xs.len());
        Ok(out)
    }
}

/// Run `settings` on `problem` until the best fitness is at or below `target`
/// or `budget` designs were simulated: (best fitness, designs simulated).
pub fn minimise<P: Problem>(problem: &mut P, settings: super::GaSettings, target: f64, budget: usize) -> (f64, usize) {
    let mut st = super::new_state(problem.genes(), 1, settings, "bench").expect("valid settings");
    loop {
        super::step(&mut st, problem, &|_, _| {}).expect("analytic problems do not fail");
        let best = st.best_evaluation().map_or(f64::INFINITY, |e| e.fitness());
        if best <= target || st.evaluations >= budget || st.generation > 100_000 {
            return (best, st.evaluations);
        }
    }
}
