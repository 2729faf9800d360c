//! `pareto.png`: the current population and the Pareto archive in the plane of the first two objectives.

use std::path::Path;

use plotters::prelude::*;

use super::{plot_err, render_png, PlotLabels};
use crate::plot::padded_range;
use crate::ga::problem::Evaluation;
use crate::ga::state::GaState;

pub fn draw(dir: &Path, state: &GaState, labels: &PlotLabels) -> anyhow::Result<()> {
    let xy = |e: &Evaluation| (e.objectives[0], e.objectives[1]);
    let pop: Vec<(f64, f64)> =
        state.population.iter().map(|i| state.evaluation(i)).filter(|e| e.is_valid()).map(xy).collect();
    let front: Vec<(f64, f64)> =
        state.best.iter().map(|i| state.evaluation(i)).filter(|e| e.is_valid() && e.is_feasible()).map(xy).collect();
    let caption = if state.n_objectives > 2 {
        format!("Pareto front, generation {} (first two of {} objectives)", state.generation, state.n_objectives)
    } else {
        format!("Pareto front, generation {}", state.generation)
    };
    render_png(dir, "pareto.png", (760, 600), |root| {
        let all = || pop.iter().chain(&front);
        let (Some((x0, x1)), Some((y0, y1))) = (padded_range(all().map(|p| p.0)), padded_range(all().map(|p| p.1))) else {
            root.draw(&Text::new("no simulated design yet", (280, 290), ("sans-serif", 20))).map_err(plot_err)?;
            return Ok(());
        };
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(plot_err)?;
        let (xd, yd) = (labels.objective(0), labels.objective(1));
        chart.configure_mesh().x_desc(xd.as_str()).y_desc(yd.as_str()).draw().map_err(plot_err)?;
        let grey = RGBColor(150, 150, 150);
        chart
            .draw_series(pop.iter().map(|&p| Circle::new(p, 5, grey.stroke_width(1))))
            .map_err(plot_err)?
            .label("population")
            .legend(move |(x, y)| Circle::new((x + 8, y), 5, grey.stroke_width(1)));
        chart
            .draw_series(front.iter().map(|&p| Circle::new(p, 3, RED.filled())))
            .map_err(plot_err)?
            .label(format!("archive ({} designs)", front.len()))
            .legend(|(x, y)| Circle::new((x + 8, y), 3, RED.filled()));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(plot_err)?;
        Ok(())
    })?;
    Ok(())
}
