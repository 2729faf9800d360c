//! Plots of a parameter sweep: `sweep.png`, each goal's margin and the fitness
//! against the first swept parameter (one line per value of the others), and
//! `response.png`, the |S_ij| of the goals at every point over frequency,
//! coloured along the sweep, with the goal masks.

use std::path::Path;

use plotters::prelude::*;

use super::sparams::{Mask, COLOURS};
use crate::design::Design;
use crate::sweep::{margin_db, Point, PointResult, SweepAxis};

/// Points grouped by the values of every axis but the first.
fn groups<'a>(axes: &[SweepAxis], points: &'a [Point]) -> Vec<(String, Vec<&'a Point>)> {
    let mut out: Vec<(String, Vec<&Point>)> = vec![];
    for p in points {
        let key: Vec<String> = axes.iter().zip(&p.swept).skip(1).map(|(a, v)| format!("{}={}", a.name, crate::numfmt::short(*v))).collect();
        let key = key.join(", ");
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(p),
            None => out.push((key, vec![p])),
        }
    }
    out
}

/// Draw `sweep.png`: one panel per goal (margin in dB, > 0 where met) and one for the fitness (log).
pub fn plot_goals(path: &Path, design: &Design, axes: &[SweepAxis], points: &[Point]) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let goals = design.goals();
    let panels = goals.len() + 1;
    let cols = if panels > 2 { 2 } else { 1 };
    let rows = panels.div_ceil(cols);
    let root = BitMapBackend::new(path, (560 * cols as u32, 380 * rows as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let units = design.file().units.symbol();
    let x_name = format!("{} ({units})", axes[0].name);
    let root = root.titled(&format!("Sweep of {}: goal margins (> 0: met) and fitness", design.name()), ("sans-serif", 20)).map_err(&e)?;
    let areas = root.split_evenly((rows, cols));
    let (x0, x1) = (axes[0].start.min(axes[0].stop), axes[0].start.max(axes[0].stop));
    let (x0, x1) = if x1 > x0 { (x0, x1) } else { (x0 - 0.5, x1 + 0.5) };
    let groups = groups(axes, points);
    let scored = |p: &Point| match &p.result {
        PointResult::Scored { fitness, .. } => Some(fitness.clone()),
        _ => None,
    };
    for (panel, area) in areas.iter().enumerate().take(panels) {
        let is_fit = panel == goals.len();
        // (group label, points) of this panel.
        let series: Vec<(String, Vec<(f64, f64)>)> = groups
            .iter()
            .map(|(k, ps)| {
                let pts = ps
                    .iter()
                    .filter_map(|p| {
                        let f = scored(p)?;
                        let y = if is_fit { f.total.max(1e-6).log10() } else { margin_db(goals[panel].limit, f.per_goal[panel].worst_db) };
                        Some((p.swept[0], y))
                    })
                    .collect();
                (k.clone(), pts)
            })
            .collect();
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).chain(if is_fit { None } else { Some(0.0) });
        let Some((y0, y1)) = super::padded_range(ys) else { continue };
        let caption = if is_fit { "fitness (dB², log scale; 0 drawn at 1e-6)".to_string() } else { goals[panel].label() };
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(&e)?;
        let ylab = |v: &f64| if is_fit { super::sig3(10f64.powf(*v)) } else { format!("{v:.1}") };
        chart
            .configure_mesh()
            .x_desc(x_name.as_str())
            .y_desc(if is_fit { "fitness (dB²)" } else { "margin (dB)" })
            .y_label_formatter(&ylab)
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(&e)?;
        if !is_fit {
            chart.draw_series(std::iter::once(PathElement::new(vec![(x0, 0.0), (x1, 0.0)], BLACK.stroke_width(1)))).map_err(&e)?;
        }
        for (n, (label, pts)) in series.iter().enumerate() {
            let col = COLOURS[n % COLOURS.len()];
            let s = chart.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2))).map_err(&e)?;
            if !label.is_empty() {
                s.label(label.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(2)));
            }
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, col.filled()))).map_err(&e)?;
        }
        if series.len() > 1 && panel == 0 {
            chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 12)).draw().map_err(&e)?;
        }
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// A colour along the sweep, `t` in [0, 1] (dark blue to yellow, like viridis).
fn ramp(t: f64) -> RGBColor {
    let stops = [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];
    let x = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (x.floor() as usize).min(stops.len() - 2);
    let f = x - i as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    RGBColor(mix(stops[i].0, stops[i + 1].0), mix(stops[i].1, stops[i + 1].1), mix(stops[i].2, stops[i + 1].2))
}

/// The colour bar of `response.png`: the curves' colours against the first
/// swept parameter, labelled with its name and unit.
fn colour_bar<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, a0: &SweepAxis, units: &str) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let span = a0.stop - a0.start;
    let (lo, hi) = if span != 0.0 { (a0.start.min(a0.stop), a0.start.max(a0.stop)) } else { (a0.start - 0.5, a0.start + 0.5) };
    // The colour of a value, as the curves get it.
    let t = |y: f64| if span != 0.0 { (y - a0.start) / span } else { 0.5 };
    let mut cb = ChartBuilder::on(area).margin_top(50).margin_bottom(60).margin_right(10).y_label_area_size(80).build_cartesian_2d(0.0..1.0, lo..hi)?;
    cb.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(format!("{} ({units})", a0.name))
        .y_label_formatter(&|y| crate::numfmt::short(*y))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    let steps = 100;
    cb.draw_series((0..steps).map(|k| {
        let (a, b) = (k as f64 / steps as f64, (k + 1) as f64 / steps as f64);
        let (ya, yb) = (lo + a * (hi - lo), lo + b * (hi - lo));
        Rectangle::new([(0.0, ya), (1.0, yb)], ramp(t(0.5 * (ya + yb))).filled())
    }))?;
    Ok(())
}

/// Draw `response.png`: one panel per S_ij named in the goals, a curve per scored point.
pub fn plot_response(path: &Path, design: &Design, axes: &[SweepAxis], points: &[Point], masks: &[Mask]) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let mut keys: Vec<(usize, usize)> = design
        .goals()
        .iter()
        .filter_map(|g| match g.kind {
            crate::fitness::GoalKind::S { i, j } => Some((i, j)),
            // Pattern goals have their numbers in the table, not a curve here.
            _ => None,
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let root = BitMapBackend::new(path, (1000, 430 * keys.len().max(1) as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let a0 = &axes[0];
    let units = design.file().units.symbol();
    let title = format!(
        "Response along the sweep of {} ({} to {} {units}, dark to light){}",
        a0.name,
        crate::numfmt::short(a0.start),
        crate::numfmt::short(a0.stop),
        if axes.len() > 1 { "; every point of the other axes drawn" } else { "" }
    );
    let root = root.titled(&title, ("sans-serif", 18)).map_err(&e)?;
    let (root, bar) = root.split_horizontally(880);
    colour_bar(&bar, a0, units).map_err(&e)?;
    let areas = root.split_evenly((keys.len().max(1), 1));
    let span = a0.stop - a0.start;
    for (area, &(i, j)) in areas.iter().zip(&keys) {
        let curves: Vec<(f64, Vec<(f64, f64)>)> = points
            .iter()
            .filter_map(|p| match &p.result {
                PointResult::Scored { sparams, .. } => {
                    let db = sparams.db(i, j)?;
                    let t = if span != 0.0 { (p.swept[0] - a0.start) / span } else { 0.5 };
                    Some((t, sparams.freqs.iter().map(|f| f / 1e9).zip(db).collect()))
                }
                _ => None,
            })
            .collect();
        let Some(first) = curves.first() else { continue };
        let (f0, f1) = (first.1[0].0, first.1[first.1.len() - 1].0);
        let lo = curves.iter().flat_map(|c| c.1.iter().map(|p| p.1)).fold(0.0f64, f64::min).max(-80.0);
        let lo = (lo / 10.0).floor() * 10.0 - 5.0;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("|S{i}{j}|"), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(f0..f1.max(f0 + 1e-9), lo..5.0)
            .map_err(&e)?;
        chart.configure_mesh().x_desc("frequency (GHz)").y_desc("|S| (dB)").label_style(("sans-serif", 13)).draw().map_err(&e)?;
        for m in masks.iter().filter(|m| m.s == (i, j)) {
            let (a, b) = (m.f1 / 1e9, m.f2 / 1e9);
            let (y0, y1) = if m.above { (lo, m.level_db) } else { (m.level_db, 5.0) };
            chart.draw_series(std::iter::once(Rectangle::new([(a, y0), (b, y1)], RGBColor(200, 60, 60).mix(0.12).filled()))).map_err(&e)?;
            chart
                .draw_series(LineSeries::new(vec![(a, m.level_db), (b, m.level_db)], RGBColor(200, 60, 60).stroke_width(3)))
                .map_err(&e)?
                .label(format!("goal {}", m.label()))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RGBColor(200, 60, 60).stroke_width(3)));
        }
        for (t, pts) in &curves {
            let col = ramp(*t);
            chart.draw_series(LineSeries::new(pts.iter().map(|&(f, d)| (f, d.max(lo))), col.stroke_width(1))).map_err(&e)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}
