//! |S| in dB over the band, with goal masks drawn as shaded limits.

use std::path::Path;

use plotters::prelude::*;

use crate::analysis::SParams;

/// One goal drawn on the plot: S_(i,j) must stay above/below `level_db` over `f1..f2` (Hz).
#[derive(Debug, Clone)]
pub struct Mask {
    pub s: (usize, usize),
    pub f1: f64,
    pub f2: f64,
    pub level_db: f64,
    pub above: bool,
}

const COLOURS: [RGBColor; 6] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(255, 127, 14), RGBColor(148, 103, 189), RGBColor(23, 190, 207)];

/// Draw every available S_ij of `sp` and the goal masks into `path` (PNG).
pub fn plot(path: &Path, sp: &SParams, masks: &[Mask], title: &str) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let ghz: Vec<f64> = sp.freqs.iter().map(|f| f / 1e9).collect();
    let (Some(&f0), Some(&f1)) = (ghz.first(), ghz.last()) else {
        anyhow::bail!("{}: no frequency to plot", path.display());
    };
    let mut curves = vec![];
    for i in 1..=sp.n_ports() {
        for j in 1..=sp.n_ports() {
            if let Some(db) = sp.db(i, j) {
                curves.push(((i, j), db));
            }
        }
    }
    let lo = curves.iter().flat_map(|(_, d)| d.iter().copied()).fold(0.0f64, f64::min).max(-80.0);
    let lo = (lo / 10.0).floor() * 10.0 - 5.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(f0..f1, lo..5.0)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("frequency (GHz)")
        .y_desc("|S| (dB)")
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(&e)?;
    for m in masks {
        let (a, b) = (m.f1 / 1e9, m.f2 / 1e9);
        let (y0, y1) = if m.above { (lo, m.level_db) } else { (m.level_db, 5.0) };
        // The forbidden region is shaded; its edge is the limit line.
        chart.draw_series(std::iter::once(Rectangle::new([(a, y0), (b, y1)], RGBColor(120, 120, 120).mix(0.15).filled()))).map_err(&e)?;
        chart
            .draw_series(LineSeries::new(vec![(a, m.level_db), (b, m.level_db)], BLACK.stroke_width(2)))
            .map_err(&e)?
            .label(format!("goal S{}{} {} {} dB", m.s.0, m.s.1, if m.above { ">" } else { "<" }, m.level_db))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2)));
    }
    for (n, ((i, j), db)) in curves.iter().enumerate() {
        let col = COLOURS[n % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(ghz.iter().copied().zip(db.iter().map(|v| v.max(lo))), col.stroke_width(2)))
            .map_err(&e)?
            .label(format!("S{i}{j}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    #[test]
    fn renders_a_png_with_masks() {
        let freqs: Vec<f64> = (0..50).map(|k| 26e9 + 0.25e9 * k as f64).collect();
        let s21: Vec<Complex64> = freqs.iter().map(|f| Complex64::new(1.0 / (1.0 + ((f - 31.5e9) / 1e9).powi(2)), 0.0)).collect();
        let s11: Vec<Complex64> = s21.iter().map(|z| Complex64::new((1.0 - z.re * z.re).sqrt(), 0.0)).collect();
        let sp = SParams { freqs, ports: vec!["in".into(), "out".into()], s: vec![vec![Some(s11), None], vec![Some(s21), None]], zin: vec![None, None], zref: vec![vec![]; 2] };
        let dir = tempfile::tempdir().unwrap();
        let p = std::env::var("EMVOLVE_KEEP_PLOT").map(std::path::PathBuf::from).unwrap_or_else(|_| dir.path().join("s.png"));
        plot(&p, &sp, &[Mask { s: (2, 1), f1: 31e9, f2: 32e9, level_db: -1.0, above: true }], "test").unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(bytes.len() > 10_000, "suspiciously small PNG: {} bytes", bytes.len());
    }
}
