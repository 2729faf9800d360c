//! PNG plots under `plots/`, redrawn every generation under stable names:
//! `fitness.png`, `parameters.png` and, for NSGA-II, `pareto.png`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;

use super::{Observer, RunInfo};
use crate::ga::state::{GaState, GenStats};
use crate::run::rundir::RunDir;

mod fitness;
mod parameters;
mod pareto;

/// Register the shipped font (see [`crate::plot::init_font`]); call before drawing text.
pub fn ensure_font() {
    crate::plot::init_font();
}

/// Draw into `dir/name` through a temporary file, so a viewer never sees half a PNG.
pub fn render_png(
    dir: &Path,
    name: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> anyhow::Result<()>,
) -> anyhow::Result<PathBuf> {
    ensure_font();
    let path = dir.join(name);
    // The backend picks the format from the extension, so the temporary name ends in .png too.
    let tmp = dir.join(format!(".{name}.tmp.png"));
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// plotters' errors borrow nothing but are not always `Send + Sync`; keep their text.
pub(crate) fn plot_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("plotting failed: {e}")
}

/// What the plots call the objectives and in which units they draw the genes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlotLabels {
    /// One per objective ("fitness", "2*l1 + l2"); empty: f1, f2, ...
    pub objectives: Vec<String>,
    /// One per objective ("dB^2"); empty or "" where unknown.
    pub objective_units: Vec<String>,
    /// One per gene ("mm"); empty or "" where unknown.
    pub gene_units: Vec<String>,
}

impl PlotLabels {
    /// "fitness (dB^2)", or "f2" when nothing is known.
    pub fn objective(&self, k: usize) -> String {
        let name = self.objectives.get(k).cloned().unwrap_or_else(|| format!("f{}", k + 1));
        match self.objective_units.get(k).filter(|u| !u.is_empty()) {
            Some(u) => format!("{name} ({u})"),
            None => name,
        }
    }
    /// The unit of gene `g`, "" when unknown.
    pub fn gene_unit(&self, g: usize) -> &str {
        self.gene_units.get(g).map_or("", String::as_str)
    }
}

/// Redraws the plots after every generation.
#[derive(Default)]
pub struct PlotObserver {
    dir: Option<PathBuf>,
    labels: PlotLabels,
}

impl PlotObserver {
    pub fn new() -> PlotObserver {
        PlotObserver::default()
    }

    /// Name the objectives and give the genes' units in the plots.
    pub fn with_labels(labels: PlotLabels) -> PlotObserver {
        PlotObserver { dir: None, labels }
    }

    fn draw_all(&self, state: &GaState) -> anyhow::Result<()> {
        let Some(dir) = &self.dir else { anyhow::bail!("the plot observer was not started") };
        fitness::draw(dir, state, &self.labels)?;
        parameters::draw(dir, state, &self.labels)?;
        if state.is_multi_objective() {
            pareto::draw(dir, state, &self.labels)?;
        }
        Ok(())
    }
}

impl Observer for PlotObserver {
    fn on_start(&mut self, state: &GaState, info: &RunInfo) -> anyhow::Result<()> {
        let dir = info.dir.join(RunDir::PLOTS);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        self.dir = Some(dir);
        if state.started() {
            self.draw_all(state)?;
        }
        Ok(())
    }

    fn on_generation(&mut self, state: &GaState, _stats: &GenStats) -> anyhow::Result<()> {
        self.draw_all(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::problem::Problem;
    use crate::ga::settings::GaSettings;
    use crate::ga::step::{new_state, step};
    use crate::ga::testfns::{Rastrigin, Zdt1};

    fn is_png(p: &Path) -> bool {
        let b = std::fs::read(p).unwrap();
        b.len() > 2000 && b.starts_with(b"\x89PNG\r\n\x1a\n")
    }

    #[test]
    fn draws_every_plot_for_single_and_multi_objective_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut p = Rastrigin::new(3, 1);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 10, ..Default::default() }, "").unwrap();
        let mut obs = PlotObserver::new();
        let term = crate::ga::termination::Termination::default();
        obs.on_start(&st, &RunInfo { dir, resumed: false, termination: &term }).unwrap();
        // A single generation, then several (log scale once the range spans decades).
        for _ in 0..12 {
            let s = step(&mut st, &mut p, &|_, _| {}).unwrap();
            obs.on_generation(&st, &s).unwrap();
        }
        assert!(is_png(&dir.join("plots/fitness.png")) && is_png(&dir.join("plots/parameters.png")));
        assert!(!dir.join("plots/pareto.png").exists());
        let mut z = Zdt1 { n: 4 };
        let mut st = new_state(z.genes(), 2, GaSettings { population: 10, ..Default::default() }, "").unwrap();
        let tmp2 = tempfile::tempdir().unwrap();
        let mut obs = PlotObserver::new();
        obs.on_start(&st, &RunInfo { dir: tmp2.path(), resumed: false, termination: &term }).unwrap();
        for _ in 0..3 {
            let s = step(&mut st, &mut z, &|_, _| {}).unwrap();
            obs.on_generation(&st, &s).unwrap();
        }
        for f in ["fitness.png", "parameters.png", "pareto.png"] {
            assert!(is_png(&tmp2.path().join("plots").join(f)), "{f}");
        }
        // Only the stable names remain: no temporaries, no per-generation copies.
        let names: Vec<_> = std::fs::read_dir(tmp2.path().join("plots")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

}
