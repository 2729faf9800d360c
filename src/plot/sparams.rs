//! |S| in dB over the band, with each goal drawn as a mask in the colour of
//! the curve it constrains and named in the legend with its band.

use std::path::Path;

use plotters::prelude::*;

use crate::analysis::SParams;
use crate::design::Design;

/// One goal drawn on the plot: S_(i,j) must stay above/below `level_db` over `f1..f2` (Hz).
#[derive(Debug, Clone)]
pub struct Mask {
    pub s: (usize, usize),
    pub f1: f64,
    pub f2: f64,
    pub level_db: f64,
    pub above: bool,
}

/// The masks of `design`'s S-parameter goals, for the S-parameter plots.
pub fn masks(design: &Design) -> Vec<Mask> {
    use crate::fitness::{GoalKind, Limit};
    design
        .goals()
        .iter()
        .filter_map(|g| {
            let (level_db, above) = match g.limit {
                Limit::Above(l) => (l, true),
                Limit::Below(l) => (l, false),
            };
            match g.kind {
                GoalKind::S { i, j } => Some(Mask { s: (i, j), f1: g.band.0, f2: g.band.1, level_db, above }),
                // Pattern goals are drawn on the pattern plots.
                _ => None,
            }
        })
        .collect()
}

impl Mask {
    /// "S21 > -1 dB, 31.0-32.1 GHz".
    pub fn label(&self) -> String {
        let op = if self.above { ">" } else { "<" };
        format!("S{}{} {op} {} dB, {}", self.s.0, self.s.1, crate::numfmt::short(self.level_db), crate::fitness::band_text((self.f1, self.f2)))
    }
}

/// Curve colours (matplotlib's "tab10", readable on white and to most colour-blind readers).
pub const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Every available S_ij with its dB values, in row order.
pub fn curves(sp: &SParams) -> Vec<((usize, usize), Vec<f64>)> {
    let n = sp.n_ports();
    (1..=n).flat_map(|i| (1..=n).map(move |j| (i, j))).filter_map(|(i, j)| sp.db(i, j).map(|d| ((i, j), d))).collect()
}

/// The colour of S_ij of an `n`-port, grey when it is not among `keys` (the
/// curves drawn). Fixed by its place in the full matrix, not among the curves
/// present, so a curve keeps its colour from plot to plot (a GA generation's
/// snapshot has only the driven ports' columns, the best design every one).
pub fn colour_of(n: usize, keys: &[(usize, usize)], s: (usize, usize)) -> RGBColor {
    if !keys.contains(&s) || s.0 == 0 || s.1 == 0 {
        return RGBColor(90, 90, 90);
    }
    COLOURS[((s.0 - 1) * n.max(s.0).max(s.1) + (s.1 - 1)) % COLOURS.len()]
}

/// Draw every available S_ij of `sp` and the goal masks into `path` (PNG).
pub fn plot(path: &Path, sp: &SParams, masks: &[Mask], title: &str) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    draw(&root, sp, masks, title).map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

/// Draw the |S| chart on any drawing area (also a panel of a larger figure).
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    sp: &SParams,
    masks: &[Mask],
    title: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ghz: Vec<f64> = sp.freqs.iter().map(|f| f / 1e9).collect();
    let (f0, f1) = (ghz.first().copied().unwrap_or(0.0), ghz.last().copied().unwrap_or(1.0));
    let f1 = if f1 > f0 { f1 } else { f0 + 1.0 };
    let curves = curves(sp);
    let keys: Vec<(usize, usize)> = curves.iter().map(|c| c.0).collect();
    let lo = curves.iter().flat_map(|(_, d)| d.iter().copied()).chain(masks.iter().map(|m| m.level_db)).fold(0.0f64, f64::min).max(-80.0);
    let lo = (lo / 10.0).floor() * 10.0 - 5.0;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(f0..f1, lo..5.0)?;
    chart.configure_mesh().x_desc("frequency (GHz)").y_desc("|S| (dB)").label_style(("sans-serif", 15)).draw()?;
    for (k, m) in masks.iter().enumerate() {
        let (a, b) = (m.f1 / 1e9, m.f2 / 1e9);
        let (y0, y1) = if m.above { (lo, m.level_db) } else { (m.level_db, 5.0) };
        let col = colour_of(sp.n_ports(), &keys, m.s);
        // The forbidden region is shaded in the curve's colour; its edge is the limit line.
        chart.draw_series(std::iter::once(Rectangle::new([(a, y0), (b, y1)], col.mix(0.12).filled())))?;
        // Goals on the same S_ij share its colour: each is numbered in the
        // order of the design's S-parameter goals ("G3"), on the plot at its limit line and in the legend, and
        // the second and later ones on one S_ij have a dashed limit line.
        let tag = format!("G{}", k + 1);
        let nth = masks[..k].iter().filter(|o| o.s == m.s).count();
        let line = vec![(a, m.level_db), (b, m.level_db)];
        if nth == 0 {
            chart
                .draw_series(LineSeries::new(line, col.stroke_width(4)))?
                .label(format!("{tag}: goal {}", m.label()))
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 18, y + 4)], col.mix(0.5).filled()));
        } else {
            chart
                .draw_series(DashedLineSeries::new(line, 9, 5, col.stroke_width(4)))?
                .label(format!("{tag}: goal {}", m.label()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 7, y)], col.stroke_width(4)));
        }
        // The number inside the forbidden region, just off the limit line.
        let ty = if m.above { m.level_db - 0.015 * (5.0 - lo) } else { m.level_db + 0.06 * (5.0 - lo) };
        chart.draw_series(std::iter::once(Text::new(tag, (a + 0.01 * (f1 - f0), ty), ("sans-serif", 15).into_font().color(&col))))?;
    }
    for ((i, j), db) in &curves {
        let col = colour_of(sp.n_ports(), &keys, (*i, *j));
        let pts = ghz.iter().copied().zip(db.iter().map(|v| v.max(lo)));
        // Columns of ports driven after the first are dashed, so a symmetric
        // network's S22 over S11 (S12 over S21) still shows both.
        if *j > 1 {
            chart
                .draw_series(DashedLineSeries::new(pts, 10, 6, col.stroke_width(2)))?
                .label(format!("S{i}{j}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 7, y)], col.stroke_width(2)));
        } else {
            chart
                .draw_series(LineSeries::new(pts, col.stroke_width(2)))?
                .label(format!("S{i}{j}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use num_complex::Complex64;

    pub(crate) fn filter_like() -> SParams {
        let freqs: Vec<f64> = (0..50).map(|k| 26e9 + 0.25e9 * k as f64).collect();
        let s21: Vec<Complex64> = freqs.iter().map(|f| Complex64::new(1.0 / (1.0 + ((f - 31.5e9) / 1e9).powi(2)), 0.0)).collect();
        let s11: Vec<Complex64> = s21.iter().map(|z| Complex64::new((1.0 - z.re * z.re).sqrt(), 0.0)).collect();
        let n = freqs.len();
        SParams { freqs, ports: vec!["in".into(), "out".into()], s: vec![vec![Some(s11), None], vec![Some(s21), None]], zin: vec![None, None], zref: vec![vec![Complex64::new(50.0, 0.0); n]; 2] }
    }

    #[test]
    fn renders_a_png_with_masks_named_by_band_and_coloured_by_curve() {
        let sp = filter_like();
        let dir = tempfile::tempdir().unwrap();
        let p = std::env::var("EMVOLVE_KEEP_PLOT").map(std::path::PathBuf::from).unwrap_or_else(|_| dir.path().join("s.png"));
        let m = Mask { s: (2, 1), f1: 31e9, f2: 32.1e9, level_db: -1.0, above: true };
        assert_eq!(m.label(), "S21 > -1 dB, 31.0-32.1 GHz");
        let keys: Vec<_> = curves(&sp).iter().map(|c| c.0).collect();
        assert_eq!(keys, vec![(1, 1), (2, 1)]);
        // S21 of a 2-port is the matrix's third entry whether or not S12 is drawn.
        assert_eq!(colour_of(sp.n_ports(), &keys, (2, 1)), COLOURS[2]);
        assert_eq!(colour_of(sp.n_ports(), &[(1, 1), (1, 2), (2, 1), (2, 2)], (2, 1)), COLOURS[2]);
        assert_eq!(colour_of(sp.n_ports(), &keys, (2, 2)), RGBColor(90, 90, 90));
        plot(&p, &sp, &[m], "test").unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(bytes.len() > 10_000, "suspiciously small PNG: {} bytes", bytes.len());
    }
}
