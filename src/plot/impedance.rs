//! Input impedance R + jX (ohm) of every port with a reflection coefficient,
//! against frequency, with the port's reference resistance dashed.

use std::path::Path;

use plotters::prelude::*;

use super::sparams::colour_of;
use crate::analysis::SParams;

/// Draw R and X of each port's input impedance into `path`; `None` when no S_ii exists.
pub fn plot(path: &Path, sp: &SParams, title: &str) -> anyhow::Result<Option<()>> {
    let n = sp.n_ports();
    let ports: Vec<(usize, Vec<num_complex::Complex64>)> = (1..=n).filter_map(|i| sp.z_in(i).map(|z| (i, z))).collect();
    if ports.is_empty() || sp.freqs.len() < 2 {
        return Ok(None);
    }
    super::init_font();
    let e = super::err(path);
    let ghz: Vec<f64> = sp.freqs.iter().map(|f| f / 1e9).collect();
    // Near a short or open |Z| runs off to infinity; the axis follows the bulk of the values.
    let mut vals: Vec<f64> = ports.iter().flat_map(|(_, z)| z.iter().flat_map(|z| [z.re, z.im])).filter(|v| v.is_finite()).collect();
    vals.extend(ports.iter().flat_map(|(i, _)| sp.zref[i - 1].iter().map(|z| z.re)));
    vals.sort_by(f64::total_cmp);
    let q = |p: f64| vals[((vals.len() - 1) as f64 * p).round() as usize];
    let (lo, hi) = (q(0.02).min(0.0), q(0.98).max(1.0));
    let pad = 0.08 * (hi - lo);
    let (lo, hi) = (lo - pad, hi + pad);
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = super::freq_chart(&root, title, &ghz, lo..hi, "input impedance (ohm)", path)?;
    let keys: Vec<(usize, usize)> = (1..=n).flat_map(|i| (1..=n).map(move |j| (i, j))).filter(|&(i, j)| sp.get(i, j).is_some()).collect();
    let mut any_clipped = false;
    for (m, (i, z)) in ports.iter().enumerate() {
        // The colour of S_ii in the other plots; later ports thinner, drawn over the first.
        let col = colour_of(sp.n_ports(), &keys, (*i, *i));
        let w = if m == 0 { 3 } else { 1 };
        let name = &sp.ports[i - 1];
        let clip = |v: f64| v.clamp(lo, hi);
        chart
            .draw_series(LineSeries::new(ghz.iter().zip(z).map(|(f, z)| (*f, clip(z.re))), col.stroke_width(w)))
            .map_err(&e)?
            .label(format!("R{i} ({name})"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        let light = col.mix(0.55);
        chart
            .draw_series(DashedLineSeries::new(ghz.iter().zip(z).map(|(f, z)| (*f, clip(z.im))), 8, 4, light.stroke_width(w)))
            .map_err(&e)?
            .label(format!("X{i} ({name})"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], light.stroke_width(2)));
        // Values off the scale are drawn at the frame: a triangle pointing off
        // the chart marks where each clipped stretch begins, so a clipped
        // curve is not read as a flat one.
        let re: Vec<f64> = z.iter().map(|z| z.re).collect();
        let im: Vec<f64> = z.iter().map(|z| z.im).collect();
        for (vals, c) in [(&re, col.to_rgba()), (&im, light)] {
            for (f, up) in clipped_starts(&ghz, vals, lo, hi) {
                chart.draw_series(std::iter::once(EmptyElement::at((f, if up { hi } else { lo })) + triangle(up, c))).map_err(&e)?;
                any_clipped = true;
            }
        }
        let grey = RGBColor(110, 110, 110);
        chart
            .draw_series(DashedLineSeries::new(ghz.iter().zip(&sp.zref[i - 1]).map(|(f, z)| (*f, clip(z.re))), 3, 5, grey.stroke_width(1)))
            .map_err(&e)?
            .label(format!("reference Z{i}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], grey.stroke_width(1)));
    }
    chart.draw_series(std::iter::once(PathElement::new(vec![(ghz[0], 0.0), (ghz[ghz.len() - 1], 0.0)], BLACK.stroke_width(1)))).map_err(&e)?;
    if any_clipped {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(&e)?
            .label("off the scale from here on (clipped at the frame)")
            .legend(|(x, y)| EmptyElement::at((x + 9, y)) + triangle(true, BLACK.to_rgba()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(Some(()))
}

/// Where a series leaves the frame: the frequency of the first point of each
/// stretch above `hi` (true) or below `lo` (false).
pub(crate) fn clipped_starts(x: &[f64], v: &[f64], lo: f64, hi: f64) -> Vec<(f64, bool)> {
    let side = |y: f64| if y > hi { Some(true) } else if y < lo { Some(false) } else { None };
    let mut out = vec![];
    let mut prev = None;
    for (&f, &y) in x.iter().zip(v) {
        let s = if y.is_finite() { side(y) } else { None };
        if s.is_some() && s != prev {
            out.push((f, s == Some(true)));
        }
        prev = s;
    }
    out
}

/// The triangle in pixels about its anchor.
fn triangle(up: bool, c: RGBAColor) -> Polygon<(i32, i32)> {
    let s = if up { 1 } else { -1 };
    Polygon::new(vec![(0, -9 * s), (-7, 3 * s), (7, 3 * s)], c.filled())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_stretches_are_found_where_they_begin() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let v = [0.0, 900.0, 950.0, 10.0, -500.0, -600.0, 900.0];
        assert_eq!(clipped_starts(&x, &v, -100.0, 500.0), vec![(2.0, true), (5.0, false), (7.0, true)]);
        assert!(clipped_starts(&x, &[0.0; 7], -1.0, 1.0).is_empty());
    }
}
