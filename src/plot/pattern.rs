//! Polar plots of a radiation pattern: the E- and H-plane cuts side by side,
//! gain (thick) and directivity (thin) in dBi on a 40 dB scale below the
//! rounded-up peak, with the summary (directivity, gain, realised gain,
//! efficiency, beam direction, front-to-back) in the heading.

use std::path::Path;

use plotters::prelude::*;

use crate::analysis::pattern::{Cut, FarField};

/// Dynamic range shown below the top ring, dB.
const RANGE_DB: f64 = 40.0;

/// Draw pattern `fi` of `ff` into `path` (PNG).
pub fn plot(path: &Path, ff: &FarField, fi: usize, title: &str) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let cuts = ff.cuts(fi);
    let s = ff.summary(fi);
    let peak = cuts.iter().flat_map(|c| c.gain_dbi.iter().chain(&c.directivity_dbi)).copied().fold(f64::NEG_INFINITY, f64::max);
    let top = (peak / 5.0).ceil() * 5.0;
    let root = BitMapBackend::new(path, (1300, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let (head, body) = root.split_vertically(110);
    head.draw(&Text::new(title.to_string(), (20, 10), ("sans-serif", 22))).map_err(&e)?;
    let fb = s.front_to_back_db.map_or("front-to-back: - (ground plane)".to_string(), |x| format!("front-to-back {x:.1} dB"));
    let line1 = format!(
        "{:.4} GHz: directivity {:.2} dBi, gain {:.2} dBi, realised gain {:.2} dBi, radiation efficiency {:.1} %{}",
        s.freq_hz / 1e9,
        s.directivity_dbi,
        s.gain_dbi,
        s.realized_gain_dbi,
        100.0 * s.radiation_efficiency,
        s.radiation_efficiency_by_loss.map_or(String::new(), |e| format!(" ({:.1} % by loss)", 100.0 * e))
    );
    let line2 = format!(
        "beam towards theta {:.0} deg, phi {:.0} deg; {fb}; box flux / pattern power {:.3}",
        s.beam_theta_deg, s.beam_phi_deg, s.flux_over_pattern
    );
    let grey = ("sans-serif", 16).into_font().color(&RGBColor(60, 60, 60));
    head.draw(&Text::new(line1, (20, 46), grey.clone())).map_err(&e)?;
    head.draw(&Text::new(line2, (20, 72), grey)).map_err(&e)?;
    let panels = body.split_evenly((1, 2));
    for (panel, cut) in panels.iter().zip(&cuts) {
        draw_cut(panel, cut, top).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// Radius (0..1) of a level in dBi.
fn radius(db: f64, top: f64) -> f64 {
    ((db - (top - RANGE_DB)) / RANGE_DB).clamp(0.0, 1.0)
}

/// Screen point of (angle, level): angle 0 at the top, increasing clockwise.
fn point(angle_deg: f64, db: f64, top: f64) -> (f64, f64) {
    let r = radius(db, top);
    let a = angle_deg.to_radians();
    (r * a.sin(), r * a.cos())
}

fn draw_cut<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, cut: &Cut, top: f64) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let caption = format!("{}: {} ({} from the top, clockwise)", cut.name, cut.plane, cut.angle_name);
    let mut chart = ChartBuilder::on(area).caption(caption, ("sans-serif", 17)).margin(18).build_cartesian_2d(-1.18..1.18, -1.18..1.18)?;
    let grid = RGBColor(190, 190, 190);
    for ring in 0..=4 {
        let level = top - RANGE_DB + 10.0 * ring as f64;
        let r = radius(level, top);
        let circle: Vec<(f64, f64)> = (0..=360).map(|d| (r * f64::from(d).to_radians().sin(), r * f64::from(d).to_radians().cos())).collect();
        chart.draw_series(std::iter::once(PathElement::new(circle, grid.stroke_width(if ring == 4 { 2 } else { 1 }))))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{} dBi", crate::numfmt::short(level)),
            (0.02, r + 0.01),
            ("sans-serif", 12).into_font().color(&RGBColor(100, 100, 100)),
        )))?;
    }
    for spoke in (0..360).step_by(30) {
        let a = f64::from(spoke);
        chart.draw_series(std::iter::once(PathElement::new(vec![(0.0, 0.0), point(a, top, top)], grid.stroke_width(1))))?;
        let shown = if a > 180.0 { a - 360.0 } else { a };
        let (x, y) = (1.09 * a.to_radians().sin(), 1.09 * a.to_radians().cos());
        chart.draw_series(std::iter::once(Text::new(
            format!("{shown:.0}"),
            (x - 0.04, y + 0.03),
            ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60)),
        )))?;
    }
    // The curve in pieces: directions behind a mirror plane (nothing radiated,
    // the level at the floor) are left out rather than drawn through the centre.
    let curve = |v: &[f64]| -> Vec<Vec<(f64, f64)>> {
        let mut pieces: Vec<Vec<(f64, f64)>> = vec![vec![]];
        for (&a, &d) in cut.angle_deg.iter().zip(v) {
            if d > -290.0 {
                pieces.last_mut().map(|p| p.push(point(a, d, top)));
            } else if pieces.last().is_some_and(|p| !p.is_empty()) {
                pieces.push(vec![]);
            }
        }
        pieces.retain(|p| p.len() > 1);
        pieces
    };
    let blue = RGBColor(20, 80, 200);
    let orange = RGBColor(230, 120, 20);
    chart
        .draw_series(curve(&cut.directivity_dbi).into_iter().map(|p| PathElement::new(p, orange.stroke_width(1))))?
        .label("directivity (dBi)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], orange.stroke_width(2)));
    chart
        .draw_series(curve(&cut.gain_dbi).into_iter().map(|p| PathElement::new(p, blue.stroke_width(3))))?
        .label("gain (dBi)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue.stroke_width(3)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
