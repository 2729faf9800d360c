//! Phase of every S_ij (degrees) and, where the network transmits, the group
//! delay of each S_ij with i != j (ns), in two panels over the band.

use std::path::Path;

use plotters::prelude::*;

use super::sparams::{colour_of, curves};
use crate::analysis::SParams;

/// Draw the phase (and group delay) panels into `path`.
pub fn plot(path: &Path, sp: &SParams, title: &str) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let keys: Vec<(usize, usize)> = curves(sp).into_iter().map(|c| c.0).collect();
    let delays: Vec<((usize, usize), Vec<f64>)> =
        keys.iter().filter(|(i, j)| i != j).filter_map(|&(i, j)| sp.group_delay(i, j).map(|d| ((i, j), d))).collect();
    let ghz: Vec<f64> = sp.freqs.iter().map(|f| f / 1e9).collect();
    let (f0, f1) = (ghz.first().copied().unwrap_or(0.0), ghz.last().copied().unwrap_or(1.0));
    let f1 = if f1 > f0 { f1 } else { f0 + 1.0 };
    let height = if delays.is_empty() { 520 } else { 900 };
    let root = BitMapBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(&e)?;
    let (top, bottom) = if delays.is_empty() { (root.clone(), None) } else { let (a, b) = root.split_vertically(height / 2 - 20); (a, Some(b)) };
    let mut chart = ChartBuilder::on(&top)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(f0..f1, -180.0..180.0)
        .map_err(&e)?;
    chart.configure_mesh().x_desc("frequency (GHz)").y_desc("phase (deg)").y_labels(9).label_style(("sans-serif", 14)).draw().map_err(&e)?;
    for &(i, j) in &keys {
        let col = colour_of(sp.n_ports(), &keys, (i, j));
        let Some(ph) = sp.phase_deg(i, j) else { continue };
        // Break the line at each wrap, so no vertical stroke crosses the panel.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![vec![]];
        for (k, (&f, &p)) in ghz.iter().zip(&ph).enumerate() {
            if k > 0 && (p - ph[k - 1]).abs() > 180.0 {
                runs.push(vec![]);
            }
            runs.last_mut().expect("runs starts non-empty").push((f, p));
        }
        for (r, run) in runs.into_iter().enumerate() {
            let s = chart.draw_series(LineSeries::new(run, col.stroke_width(2))).map_err(&e)?;
            if r == 0 {
                s.label(format!("S{i}{j}")).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
            }
        }
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 14)).draw().map_err(&e)?;
    if let Some(area) = bottom {
        // The axis follows the delay where the transmission is within 20 dB of its peak;
        // deep in a stop band the phase is noise and its slope means nothing.
        let mut shown = vec![];
        for ((i, j), d) in &delays {
            let db = sp.db(*i, *j).unwrap_or_default();
            let peak = db.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            shown.extend(d.iter().zip(&db).filter(|(_, &m)| m >= peak - 20.0).map(|(v, _)| v * 1e9));
        }
        let (lo, hi) = shown.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
        let (lo, hi) = if lo.is_finite() && hi > lo { (lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo)) } else { (lo - 1.0, lo + 1.0) };
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(f0..f1, lo..hi)
            .map_err(&e)?;
        chart.configure_mesh().x_desc("frequency (GHz); group delay drawn where |S| is within 30 dB of its peak").y_desc("group delay (ns)").label_style(("sans-serif", 14)).draw().map_err(&e)?;
        for ((i, j), d) in &delays {
            let col = colour_of(sp.n_ports(), &keys, (*i, *j));
            // Drawn where |S| is within 30 dB of its peak; points off the axis
            // end a stretch of line instead of being clamped to its edge.
            let db = sp.db(*i, *j).unwrap_or_default();
            let peak = db.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut runs: Vec<Vec<(f64, f64)>> = vec![vec![]];
            for ((&f, &v), &m) in ghz.iter().zip(d).zip(&db) {
                let v = v * 1e9;
                if v.is_finite() && v >= lo && v <= hi && m >= peak - 30.0 {
                    runs.last_mut().expect("runs starts non-empty").push((f, v));
                } else if !runs.last().is_some_and(|r| r.is_empty()) {
                    runs.push(vec![]);
                }
            }
            for (r, run) in runs.into_iter().filter(|r| !r.is_empty()).enumerate() {
                let s = chart.draw_series(LineSeries::new(run, col.stroke_width(2))).map_err(&e)?;
                if r == 0 {
                    s.label(format!("group delay S{i}{j}")).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
                }
            }
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 14)).draw().map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}
