//! `parameters.png`: per gene, the population's range and mean per generation
//! and the best design's value, in the gene's own units over its bounds.

use std::path::Path;

use plotters::prelude::*;

use super::{plot_err, render_png, PlotLabels};
use crate::ga::state::GaState;

const PANEL: (u32, u32) = (320, 210);

pub fn draw(dir: &Path, state: &GaState, labels: &PlotLabels) -> anyhow::Result<()> {
    let n = state.genes.len();
    let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
    let rows = n.div_ceil(cols);
    let size = (PANEL.0 * cols as u32, PANEL.1 * rows as u32 + 40);
    let last = state.history.last().map_or(1, |h| h.generation.max(1)) as f64;
    let band = RGBColor(31, 119, 180);
    render_png(dir, "parameters.png", size, |root| {
        let root = root.titled("Parameters: population range (band), mean (blue), best design (red)", ("sans-serif", 18)).map_err(plot_err)?;
        let panels = root.split_evenly((rows, cols));
        for (g, (spec, area)) in state.genes.iter().zip(panels.iter()).enumerate() {
            let (lo, hi) = spec.bounds();
            // The spread is kept normalised to the bounds; drawn back in the gene's units.
            let span = if hi > lo { hi - lo } else { 1.0 };
            let un = |t: f64| lo + t * span;
            let unit = labels.gene_unit(g);
            let caption = if unit.is_empty() { spec.name().to_string() } else { format!("{} ({unit})", spec.name()) };
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 14))
                .margin(6)
                .x_label_area_size(22)
                .y_label_area_size(44)
                .build_cartesian_2d(0.0..last, un(-0.02)..un(1.02))
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_labels((last as usize + 1).min(5))
                .y_labels(3)
                .x_label_formatter(&|v| format!("{v:.0}"))
                .label_style(("sans-serif", 11))
                .draw()
                .map_err(plot_err)?;
            let h = &state.history;
            let upper = h.iter().filter_map(|s| s.spread.get(g).map(|sp| (s.generation as f64, un(sp.max))));
            let lower = h.iter().rev().filter_map(|s| s.spread.get(g).map(|sp| (s.generation as f64, un(sp.min))));
            chart.draw_series(std::iter::once(Polygon::new(upper.chain(lower).collect::<Vec<_>>(), band.mix(0.25)))).map_err(plot_err)?;
            let mean = h.iter().filter_map(|s| s.spread.get(g).map(|sp| (s.generation as f64, un(sp.mean))));
            chart.draw_series(LineSeries::new(mean, band.stroke_width(1))).map_err(plot_err)?;
            let best = h.iter().filter_map(|s| s.best_genome.get(g).map(|&v| (s.generation as f64, v)));
            chart.draw_series(LineSeries::new(best, RED.stroke_width(2))).map_err(plot_err)?;
        }
        Ok(())
    })?;
    Ok(())
}
