//! `fitness.png`: best and mean objective values against generation. One
//! objective that is never negative (the goal violation) is drawn on a log
//! axis, with 0 (every goal met) at the axis floor and said so; several
//! objectives share a linear axis unless all are positive and span decades.

use std::path::Path;

use plotters::prelude::*;

use super::{plot_err, render_png, PlotLabels};
use crate::plot::padded_range;
use crate::ga::problem::PENALTY;
use crate::ga::state::GaState;

const COLOURS: [RGBColor; 4] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];

/// (label, colour, drawn light, points)
type Series = (String, RGBColor, bool, Vec<(f64, f64)>);

pub fn draw(dir: &Path, state: &GaState, labels: &PlotLabels) -> anyhow::Result<()> {
    let m = state.n_objectives;
    let name = |stat: &str, k: usize| if m == 1 { stat.to_string() } else { format!("{stat} {}", labels.objective(k)) };
    // Penalties and missing values are left out.
    let mut series: Vec<Series> = Vec::new();
    for k in 0..m {
        let c = COLOURS[k % COLOURS.len()];
        let best = state.history.iter().filter(|h| h.best[k] < PENALTY).map(|h| (h.generation as f64, h.best[k])).collect();
        let mean = state.history.iter().filter_map(|h| h.mean[k].map(|v| (h.generation as f64, v))).collect();
        series.push((name(if m == 1 { "best so far" } else { "min" }, k), c, false, best));
        series.push((name("population mean", k), c, true, mean));
    }
    let all = || series.iter().flat_map(|s| s.3.iter().map(|p| p.1));
    let (lo, hi) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    // Zeros (every goal met) sit on a floor two decades under the smallest positive value.
    let min_pos = all().filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
    let floor = if min_pos.is_finite() { min_pos / 100.0 } else { 1e-6 };
    let log = if m == 1 { lo >= 0.0 && hi > 0.0 } else { lo > 0.0 && hi / lo > 100.0 };
    let zeros = log && lo == 0.0;
    let tf = |v: f64| if log { v.max(floor).log10() } else { v };
    let last = state.history.last().map_or(1, |h| h.generation.max(1)) as f64;
    render_png(dir, "fitness.png", (900, 560), |root| {
        let Some((ylo, yhi)) = padded_range(all().map(tf)) else {
            root.draw(&Text::new("no simulated design yet", (350, 270), ("sans-serif", 20))).map_err(plot_err)?;
            return Ok(());
        };
        let caption = match (m, zeros) {
            (1, true) => format!("{} (lower is better; 0, every goal met, drawn at {floor:.0e})", labels.objective(0)),
            (1, false) => format!("{} (lower is better)", labels.objective(0)),
            _ => format!("Objectives ({m}, minimised)"),
        };
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..last, ylo..yhi)
            .map_err(plot_err)?;
        // Three significant digits: ticks a fraction of a decade apart stay distinct.
        let ylab = |v: &f64| if log { crate::plot::sig3(10f64.powf(*v)) } else { tick(*v) };
        chart
            .configure_mesh()
            .x_desc("generation")
            .y_desc(match (m, log) {
                (1, true) => format!("{}, log scale", labels.objective(0)),
                (1, false) => labels.objective(0),
                (_, true) => "value (log scale)".into(),
                _ => "value".into(),
            })
            .y_label_formatter(&ylab)
            // Whole generations only: no repeated labels on a short run.
            .x_labels((last as usize + 1).min(10))
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(plot_err)?;
        for (label, colour, light, pts) in &series {
            let style = if *light { colour.mix(0.45).stroke_width(1) } else { colour.stroke_width(2) };
            chart
                .draw_series(LineSeries::new(pts.iter().map(|&(x, y)| (x, tf(y))), style))
                .map_err(plot_err)?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(plot_err)?;
        Ok(())
    })?;
    Ok(())
}

/// Plain decimals for everyday magnitudes, exponents beyond them.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-3..1e5).contains(&a) {
        format!("{}", (v * 1e4).round() / 1e4)
    } else {
        format!("{v:.2e}")
    }
}

