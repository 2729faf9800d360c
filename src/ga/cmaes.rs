//! CMA-ES with IPOP restarts, written from Hansen, "The CMA Evolution
//! Strategy: A Tutorial" (arXiv:1604.00772, 2016), appendix A (positive
//! weights only), restarted with a doubled population after convergence
//! (Auger & Hansen, "A Restart CMA Evolution Strategy With Increasing
//! Population Size", CEC 2005).
//!
//! The search runs in the unit cube of the genes' operator bounds.
//! - Bounds: a sample outside the cube is simulated at its clamped point and
//!   ranked with the penalty `w * |x - clamp(x)|^2` added to its fitness,
//!   `w = 2 IQR(f) / (sigma^2 mean(diag C))` (the weight Hansen's boundary
//!   handling starts from), so the distribution is pulled back inside.
//! - Constraints, as the GA: infeasible designs are not simulated, and rank
//!   behind every feasible one, by violation (Deb's rules).
//! - Int and Stepped genes: the sample is rounded onto the lattice to be
//!   simulated (the GA's repair); the distribution stays continuous, and the
//!   standard deviation along a lattice gene is kept at or above 0.3 steps
//!   (pycma's `minstd` rule), so the search never freezes on one lattice point.
//! - The RNG is the run's; the whole state (mean, sigma, C, paths, restart
//!   count) is checkpointed, so a resumed run draws what the uninterrupted one draws.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::genome::GeneSpec;
use crate::linalg::symmetric_eigen;
use super::methods::{CmaesParams, Method};
use super::ops::select::compare_constrained;
use super::problem::PENALTY;
use super::state::{GaState, Individual};
use super::step_methods::{from_unit, normal};

/// Lattice genes: the least standard deviation, in steps.
const MIN_STD_STEPS: f64 = 0.3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmaesState {
    pub n: usize,
    /// Population of the current restart.
    pub lambda: usize,
    /// Restarts done so far.
    pub restarts: usize,
    /// Generations since the last (re)start.
    pub generation: usize,
    pub mean: Vec<f64>,
    pub sigma: f64,
    /// The step size every (re)start begins with.
    pub sigma0: f64,
    /// Covariance matrix (row-major n*n), its eigenvectors B (columns) and the
    /// square roots of its eigenvalues D.
    pub c: Vec<f64>,
    pub b: Vec<f64>,
    pub d: Vec<f64>,
    pub pc: Vec<f64>,
    pub ps: Vec<f64>,
    /// Best ranked fitness of each generation of this restart (the stall test).
    pub best_history: Vec<f64>,
    /// Least standard deviation per coordinate (0 for real genes).
    pub min_std: Vec<f64>,
    /// The unit-cube samples of the generation in flight (between ask and tell).
    #[serde(skip)]
    pending: Vec<Vec<f64>>,
}

impl CmaesState {
    pub fn new(genes: &[GeneSpec], population: usize, p: &CmaesParams) -> CmaesState {
        let n = genes.len();
        let min_std = genes
            .iter()
            .map(|g| {
                let (lo, hi) = g.operator_bounds();
                let step = match *g {
                    GeneSpec::Real { .. } => 0.0,
                    GeneSpec::Int { .. } => 1.0,
                    GeneSpec::Stepped { step, .. } => step,
                };
                if hi > lo {
                    MIN_STD_STEPS * step / (hi - lo)
                } else {
                    0.0
                }
            })
            .collect();
        let mut s = CmaesState {
            n,
            lambda: population,
            restarts: 0,
            generation: 0,
            mean: vec![0.5; n],
            sigma: p.sigma,
            sigma0: p.sigma,
            c: vec![],
            b: vec![],
            d: vec![],
            pc: vec![],
            ps: vec![],
            best_history: vec![],
            min_std,
            pending: vec![],
        };
        s.reset();
        s
    }

    /// A fresh distribution at a random mean (the first start and every restart).
    pub(crate) fn start(&mut self, rng: &mut Xoshiro256PlusPlus) {
        self.mean = (0..self.n).map(|_| rng.random::<f64>()).collect();
        self.reset();
    }

    fn reset(&mut self) {
        let n = self.n;
        self.sigma = self.sigma0;
        self.c = identity(n);
        self.b = identity(n);
        self.d = vec![1.0; n];
        self.pc = vec![0.0; n];
        self.ps = vec![0.0; n];
        self.generation = 0;
        self.best_history.clear();
        self.enforce_min_std();
    }

    pub fn ask(&mut self, genes: &[GeneSpec], rng: &mut Xoshiro256PlusPlus) -> Vec<Vec<f64>> {
        let n = self.n;
        self.pending = (0..self.lambda)
            .map(|_| {
                let z: Vec<f64> = (0..n).map(|_| normal(rng)).collect();
                (0..n)
                    .map(|i| self.mean[i] + self.sigma * (0..n).map(|j| self.b[i * n + j] * self.d[j] * z[j]).sum::<f64>())
                    .collect()
            })
            .collect();
        self.pending.iter().map(|u| from_unit(genes, u)).collect()
    }

    pub fn tell(&mut self, state: &mut GaState, offspring: &[Individual], rng: &mut Xoshiro256PlusPlus) {
        let Method::Cmaes(params) = state.settings.method.clone() else { unreachable!("CMA-ES state under another method") };
        let xs = std::mem::take(&mut self.pending);
        state.population = offspring.to_vec();
        if xs.len() != offspring.len() {
            // A state loaded between ask and tell cannot happen (ask and tell run in one step).
            return;
        }
        let n = self.n;
        let lambda = xs.len();
        let evals: Vec<_> = offspring.iter().map(|o| state.evaluation(o).clone()).collect();
        // Out-of-cube distance and its penalty weight.
        let dist: Vec<f64> = xs.iter().map(|x| x.iter().map(|&v| (v - v.clamp(0.0, 1.0)).powi(2)).sum()).collect();
        let mut ok: Vec<f64> = evals.iter().filter(|e| e.is_feasible() && e.is_valid()).map(|e| e.fitness()).collect();
        ok.sort_by(f64::total_cmp);
        let iqr = if ok.len() >= 4 { ok[3 * ok.len() / 4] - ok[ok.len() / 4] } else { 0.0 };
        let mean_diag = (0..n).map(|i| self.c[i * n + i]).sum::<f64>() / n as f64;
        let w_pen = 2.0 * iqr / (self.sigma * self.sigma * mean_diag).max(1e-300);
        let mut order: Vec<usize> = (0..lambda).collect();
        order.sort_by(|&a, &b| {
            let (ea, eb) = (&evals[a], &evals[b]);
            if ea.is_feasible() && eb.is_feasible() {
                (ea.fitness() + w_pen * dist[a]).total_cmp(&(eb.fitness() + w_pen * dist[b])).then(dist[a].total_cmp(&dist[b]))
            } else {
                compare_constrained(ea, eb).then(dist[a].total_cmp(&dist[b]))
            }
        });

        let mu = lambda / 2;
        let raw: Vec<f64> = (1..=mu).map(|i| ((lambda as f64 + 1.0) / 2.0).ln() - (i as f64).ln()).collect();
        let sum: f64 = raw.iter().sum();
        let w: Vec<f64> = raw.iter().map(|v| v / sum).collect();
        let mueff = 1.0 / w.iter().map(|v| v * v).sum::<f64>();
        let nf = n as f64;
        let cc = (4.0 + mueff / nf) / (nf + 4.0 + 2.0 * mueff / nf);
        let cs = (mueff + 2.0) / (nf + mueff + 5.0);
        let c1 = 2.0 / ((nf + 1.3).powi(2) + mueff);
        let cmu = (1.0 - c1).min(2.0 * (mueff - 2.0 + 1.0 / mueff) / ((nf + 2.0).powi(2) + mueff));
        let damps = 1.0 + 2.0 * (((mueff - 1.0) / (nf + 1.0)).sqrt() - 1.0).max(0.0) + cs;
        let chi_n = nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf));

        let old = self.mean.clone();
        let ys: Vec<Vec<f64>> = order[..mu].iter().map(|&k| (0..n).map(|i| (xs[k][i] - old[i]) / self.sigma).collect()).collect();
        let yw: Vec<f64> = (0..n).map(|i| (0..mu).map(|k| w[k] * ys[k][i]).sum()).collect();
        self.mean = (0..n).map(|i| old[i] + self.sigma * yw[i]).collect();
        // C^-1/2 y_w = B D^-1 B^T y_w
        let bty: Vec<f64> = (0..n).map(|j| (0..n).map(|i| self.b[i * n + j] * yw[i]).sum::<f64>() / self.d[j]).collect();
        let cinv_yw: Vec<f64> = (0..n).map(|i| (0..n).map(|j| self.b[i * n + j] * bty[j]).sum()).collect();
        let k_s = (cs * (2.0 - cs) * mueff).sqrt();
        for i in 0..n {
            self.ps[i] = (1.0 - cs) * self.ps[i] + k_s * cinv_yw[i];
        }
        let ps_norm = self.ps.iter().map(|v| v * v).sum::<f64>().sqrt();
        let g = (self.generation + 1) as f64;
        let hsig = ps_norm / (1.0 - (1.0 - cs).powf(2.0 * g)).sqrt() < (1.4 + 2.0 / (nf + 1.0)) * chi_n;
        let k_c = (cc * (2.0 - cc) * mueff).sqrt();
        for i in 0..n {
            self.pc[i] = (1.0 - cc) * self.pc[i] + if hsig { k_c * yw[i] } else { 0.0 };
        }
        let delta = if hsig { 0.0 } else { cc * (2.0 - cc) };
        for i in 0..n {
            for j in 0..=i {
                let rank_mu: f64 = (0..mu).map(|k| w[k] * ys[k][i] * ys[k][j]).sum();
                let v = (1.0 - c1 - cmu) * self.c[i * n + j] + c1 * (self.pc[i] * self.pc[j] + delta * self.c[i * n + j]) + cmu * rank_mu;
                self.c[i * n + j] = v;
                self.c[j * n + i] = v;
            }
        }
        self.sigma *= ((cs / damps) * (ps_norm / chi_n - 1.0)).exp();
        // Far outside the unit cube nothing is learned: keep the step below the cube's size.
        self.sigma = self.sigma.min(1.0);
        self.enforce_min_std();
        self.generation += 1;

        let ranked_best = {
            let e = &evals[order[0]];
            if e.is_feasible() {
                e.fitness()
            } else {
                PENALTY
            }
        };
        self.best_history.push(ranked_best);
        if self.restarts < params.restarts && self.converged() {
            self.restarts += 1;
            self.lambda = (self.lambda * 2).min(params.max_population);
            self.start(rng);
        }
    }

    /// Hansen's stop tests, any one: the best fitness flat over the last
    /// 10 + 30n/lambda generations (TolFun on the history of the best, pycma's
    /// `tolfunhist`: with lattice genes the minimum step keeps every generation's
    /// own values apart, so the tutorial's "and this generation's values" would
    /// never hold), every real coordinate's step below 1e-9 of its range
    /// (TolX), C ill-conditioned (ConditionCov above 1e14).
    fn converged(&self) -> bool {
        let n = self.n;
        let window = 10 + (30 * n).div_ceil(self.lambda);
        if self.best_history.len() >= window {
            let recent = &self.best_history[self.best_history.len() - window..];
            let (lo, hi) = recent.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            if hi - lo <= 1e-10 + 1e-6 * lo.abs() {
                return true;
            }
        }
        let real: Vec<usize> = (0..n).filter(|&i| self.min_std[i] == 0.0).collect();
        if !real.is_empty() && real.iter().all(|&i| self.sigma * self.c[i * n + i].sqrt().max(self.pc[i].abs()) < 1e-9) {
            return true;
        }
        let (dmin, dmax) = self.d.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        (dmax / dmin).powi(2) > 1e14
    }

    /// Raise C's diagonal where a lattice gene's step fell below its least
    /// standard deviation (adds a positive diagonal: C stays positive definite),
    /// then refresh B and D.
    fn enforce_min_std(&mut self) {
        let n = self.n;
        for i in 0..n {
            let floor = (self.min_std[i] / self.sigma).powi(2);
            if self.c[i * n + i] < floor {
                self.c[i * n + i] = floor;
            }
        }
        let (ev, b) = symmetric_eigen(&self.c, n);
        self.d = ev.iter().map(|&e| e.max(1e-300).sqrt()).collect();
        self.b = b;
    }
}

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

#[cfg(test)]
mod tests {
    use crate::ga::settings::{GaSettings, Stop};
    use crate::ga::testfns::{minimise, Benchmark, Rastrigin};

    fn cmaes(population: usize, seed: u64) -> GaSettings {
        let mut g = GaSettings::from_ron_str(&format!("Cmaes(population: {population}, seed: {seed})")).unwrap();
        g.stop = Stop::none();
        g
    }

    /// Seeds 1-4 each reach the optimum to 1e-8 (sphere, 10 genes) and 1e-6
    /// (Rosenbrock, 6 genes) within the budgets.
    #[test]
    fn reaches_the_optimum_of_smooth_functions() {
        for seed in 1..=4 {
            let (best, evals) = minimise(&mut Benchmark::sphere(10), cmaes(10, seed), 1e-8, 8_000);
            assert!(best <= 1e-8, "sphere seed {seed}: {best} after {evals}");
            let (best, evals) = minimise(&mut Benchmark::rosenbrock(6), cmaes(10, seed), 1e-6, 20_000);
            assert!(best <= 1e-6, "rosenbrock seed {seed}: {best} after {evals}");
        }
    }

    /// Rastrigin in 5 genes needs the IPOP restarts (a population of 10 alone
    /// ends in a local minimum): every seed 1-4 reaches 1e-6 within 150k designs.
    #[test]
    fn restarts_reach_the_optimum_of_rastrigin() {
        for seed in 1..=4 {
            let (best, evals) = minimise(&mut Benchmark::rastrigin(5), cmaes(10, seed), 1e-6, 150_000);
            assert!(best <= 1e-6, "rastrigin seed {seed}: {best} after {evals}");
        }
        let mut no_restarts = cmaes(10, 1);
        no_restarts.method = crate::ga::Method::Cmaes(crate::ga::CmaesParams { restarts: 0, ..Default::default() });
        let (best, _) = minimise(&mut Benchmark::rastrigin(5), no_restarts, 1e-6, 20_000);
        assert!(best > 1e-6, "without restarts the small population found the global optimum ({best}): the test above proves nothing");
    }

    /// A run checkpointed a few generations before its first IPOP restart and
    /// resumed from the checkpoint file is the run straight through, across
    /// the restart: the doubled population, the fresh random mean and the RNG
    /// all come from the saved state.
    #[test]
    fn a_resume_across_a_restart_is_exact() {
        use crate::ga::step_methods::MethodState;
        use crate::ga::{new_state, step, GaState, Problem};
        let restarts = |st: &GaState| match &st.method {
            Some(MethodState::Cmaes(c)) => c.restarts,
            other => panic!("not a CMA-ES state: {other:?}"),
        };
        let mut p = Benchmark::rastrigin(5);
        let fresh = |p: &Benchmark| new_state(p.genes(), 1, cmaes(10, 1), "t").unwrap();
        let mut straight = fresh(&p);
        while restarts(&straight) == 0 {
            step(&mut straight, &mut p, &|_, _| {}).unwrap();
            assert!(straight.generation < 5_000, "no restart within 5,000 generations");
        }
        let first = straight.generation;
        assert!(first > 10, "the first restart came at generation {first}");
        let end = first + 30;
        while straight.generation < end {
            step(&mut straight, &mut p, &|_, _| {}).unwrap();
        }

        let tmp = tempfile::tempdir().unwrap();
        let mut part = fresh(&p);
        while !part.started() || part.generation < first - 3 {
            step(&mut part, &mut p, &|_, _| {}).unwrap();
        }
        assert_eq!(restarts(&part), 0);
        crate::run::checkpoint::save(tmp.path(), &part).unwrap();
        let mut resumed = crate::run::checkpoint::load(tmp.path()).unwrap().state;
        while resumed.generation < end {
            step(&mut resumed, &mut p, &|_, _| {}).unwrap();
        }
        assert_eq!(restarts(&resumed), restarts(&straight));
        assert!(resumed.without_timings() == straight.without_timings(), "the resumed run left the straight one across the restart at generation {first}");
    }

    /// Integer and stepped genes and a constraint (the GA's test problem):
    /// the lattice floor on the step keeps the search moving to the optimum 0.
    #[test]
    fn handles_lattice_genes_and_constraints() {
        for seed in 1..=3 {
            let mut p = Rastrigin::new(2, 2);
            p.sum_limit = Some(3.0);
            let (best, evals) = minimise(&mut p, cmaes(12, seed), 1e-6, 100_000);
            assert!(best <= 1e-6, "mixed Rastrigin seed {seed}: {best} after {evals}");
        }
    }
}
