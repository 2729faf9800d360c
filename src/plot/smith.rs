//! Smith chart of every reflection coefficient S_ii: the impedance grid
//! (constant-resistance circles, constant-reactance arcs, normalised to the
//! port's reference impedance), each trace with its band edges labelled and
//! the goal bands drawn thick, so a match is read the way an RF engineer reads it.

use std::path::Path;

use num_complex::Complex64;
use plotters::prelude::*;

use super::sparams::{colour_of, Mask};
use crate::analysis::SParams;

/// Normalised resistances and reactances of the grid.
const GRID: [f64; 5] = [0.2, 0.5, 1.0, 2.0, 5.0];

/// Reflection coefficient of normalised impedance `z`.
fn gamma(z: Complex64) -> (f64, f64) {
    let g = (z - 1.0) / (z + 1.0);
    (g.re, g.im)
}

/// Points along a grid line: r fixed with x over (-inf, inf), or x fixed with r over [0, inf).
fn grid_line(r: Option<f64>, x: Option<f64>) -> Vec<(f64, f64)> {
    // tan maps (-pi/2, pi/2) onto the whole line, densest where the curve bends most.
    let ts = (0..=400).map(|k| (k as f64 / 400.0 - 0.5) * std::f64::consts::PI * 0.9995);
    match (r, x) {
        (Some(r), _) => ts.map(|t| gamma(Complex64::new(r, 4.0 * t.tan()))).collect(),
        (_, Some(x)) => ts.map(|t| gamma(Complex64::new(4.0 * (t * 0.5 + std::f64::consts::FRAC_PI_4).tan().max(0.0), x))).collect(),
        _ => vec![],
    }
}

/// Draw the Smith chart of every S_ii of `sp` into `path` (PNG); `None` when there is none.
pub fn plot(path: &Path, sp: &SParams, masks: &[Mask], title: &str) -> anyhow::Result<Option<()>> {
    let n = sp.n_ports();
    let traces: Vec<(usize, &[Complex64])> = (1..=n).filter_map(|i| sp.get(i, i).map(|s| (i, s))).collect();
    if traces.is_empty() || sp.freqs.is_empty() {
        return Ok(None);
    }
    super::init_font();
    let e = super::err(path);
    let root = BitMapBackend::new(path, (820, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let (head, body) = root.split_vertically(80);
    head.draw(&Text::new(title.to_string(), (20, 10), ("sans-serif", 22))).map_err(&e)?;
    head.draw(&Text::new(reference_note(sp), (20, 44), ("sans-serif", 15).into_font().color(&RGBColor(80, 80, 80)))).map_err(&e)?;
    let mut chart = ChartBuilder::on(&body).margin(20).build_cartesian_2d(-1.12..1.12, -1.12..1.12).map_err(&e)?;
    let grid = RGBColor(175, 175, 175);
    let unit: Vec<(f64, f64)> = (0..=360).map(|d| (f64::from(d).to_radians().cos(), f64::from(d).to_radians().sin())).collect();
    chart.draw_series(std::iter::once(PathElement::new(unit, BLACK.stroke_width(2)))).map_err(&e)?;
    chart.draw_series(std::iter::once(PathElement::new(vec![(-1.0, 0.0), (1.0, 0.0)], grid.stroke_width(1)))).map_err(&e)?;
    // Where the grid's labels stand (their top-left corners): frequency labels keep clear of them.
    let mut placed: Vec<(f64, f64)> = vec![];
    for &v in &GRID {
        chart.draw_series(std::iter::once(PathElement::new(grid_line(Some(v), None), grid.stroke_width(1)))).map_err(&e)?;
        for s in [1.0, -1.0] {
            chart.draw_series(std::iter::once(PathElement::new(grid_line(None, Some(s * v)), grid.stroke_width(1)))).map_err(&e)?;
        }
        let label = |t: String, (x, y): (f64, f64)| Text::new(t, (x, y), ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)));
        let (rx, _) = gamma(Complex64::new(v, 0.0));
        chart.draw_series(std::iter::once(label(crate::numfmt::short(v), (rx + 0.01, -0.01)))).map_err(&e)?;
        placed.push((rx + 0.01, -0.01));
        for s in [1.0, -1.0] {
            let (gx, gy) = gamma(Complex64::new(0.0, s * v));
            let lab = format!("{}{}j", if s < 0.0 { "-" } else { "+" }, crate::numfmt::short(v));
            let at = (gx * 1.045 - 0.03, gy * 1.045 + if s > 0.0 { 0.04 } else { 0.0 });
            chart.draw_series(std::iter::once(label(lab, at))).map_err(&e)?;
            placed.push(at);
        }
    }
    let keys: Vec<(usize, usize)> = (1..=n).flat_map(|i| (1..=n).map(move |j| (i, j))).filter(|&(i, j)| sp.get(i, j).is_some()).collect();
    for (i, s) in &traces {
        let col = colour_of(sp.n_ports(), &keys, (*i, *i));
        let pts: Vec<(f64, f64)> = s.iter().map(|z| (z.re, z.im)).collect();
        let (f0, f1) = (sp.freqs[0], *sp.freqs.last().unwrap_or(&sp.freqs[0]));
        let label = format!("S{i}{i} ({}), {}", sp.ports[i - 1], crate::fitness::band_text((f0, f1)));
        // Ports after the first dashed, so identical reflections (a symmetric network) both show.
        if *i > 1 {
            chart
                .draw_series(DashedLineSeries::new(pts.clone(), 10, 6, col.stroke_width(2)))
                .map_err(&e)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 7, y)], col.stroke_width(2)));
        } else {
            chart
                .draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))
                .map_err(&e)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        }
        // The parts inside goal bands on this S_ii, thick, their edges labelled
        // (once per frequency, and not on top of a label already there:
        // nested bands share samples).
        let mut mine: Vec<&Mask> = masks.iter().filter(|m| m.s == (*i, *i)).collect();
        // The widest band first: its edges keep their labels.
        mine.sort_by(|a, b| (b.f2 - b.f1).total_cmp(&(a.f2 - a.f1)));
        for m in mine {
            let inside: Vec<(f64, (f64, f64))> =
                sp.freqs.iter().zip(&pts).filter(|(f, _)| **f >= m.f1 && **f <= m.f2).map(|(f, p)| (*f, *p)).collect();
            chart.draw_series(std::iter::once(PathElement::new(inside.iter().map(|x| x.1).collect::<Vec<_>>(), col.stroke_width(6)))).map_err(&e)?;
            if let (Some(a), Some(b)) = (inside.first(), inside.last()) {
                for (f, p) in [a, b] {
                    chart.draw_series(std::iter::once(Circle::new(*p, 4, BLACK.filled()))).map_err(&e)?;
                    let Some(at) = free_spot(*p, &placed) else { continue };
                    placed.push(at);
                    let style = ("sans-serif", 13).into_font().color(&BLACK);
                    chart.draw_series(std::iter::once(Text::new(ghz(*f), at, style))).map_err(&e)?;
                }
            }
        }
        // Start (circle) and end (square) of the sweep, labelled with their frequency.
        let (a, b) = (pts[0], *pts.last().unwrap_or(&pts[0]));
        chart.draw_series(std::iter::once(Circle::new(a, 5, col.filled()))).map_err(&e)?;
        chart.draw_series(std::iter::once(Rectangle::new([(b.0 - 0.015, b.1 - 0.015), (b.0 + 0.015, b.1 + 0.015)], col.filled()))).map_err(&e)?;
        for (p, f) in [(a, f0), (b, f1)] {
            // Beside the marker where no grid or band-edge label stands (the
            // sweep's ends often lie near the rim, among the reactance labels).
            let at = free_spot(p, &placed).unwrap_or((p.0 + 0.03, p.1 + 0.03));
            placed.push(at);
            chart.draw_series(std::iter::once(Text::new(ghz(f), at, ("sans-serif", 14).into_font().color(&col)))).map_err(&e)?;
        }
    }
    let band_masks: Vec<&Mask> = masks.iter().filter(|m| m.s.0 == m.s.1 && traces.iter().any(|t| t.0 == m.s.0)).collect();
    for m in band_masks {
        let col = colour_of(sp.n_ports(), &keys, m.s);
        // A legend entry for the thick goal-band stretch.
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(&e)?
            .label(format!("goal band {}", m.label()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(6)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::LowerLeft)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(Some(()))
}

/// A band-edge label's extent (width, height in reflection-coefficient
/// units, "2.435 GHz" at 13 px on the 800 px chart): one that would overlap a
/// label already drawn is left out; its dot remains.
const LABEL_ROOM: (f64, f64) = (0.19, 0.05);

/// Where a label for the point `p` can stand: the first of a few spots around
/// it (right, above, left, below; top-left corners) whose box overlaps no label in `placed`.
fn free_spot(p: (f64, f64), placed: &[(f64, f64)]) -> Option<(f64, f64)> {
    let offsets = [(0.03, 0.03), (0.03, -0.02), (-0.03 - LABEL_ROOM.0, 0.03), (-0.03 - LABEL_ROOM.0, -0.02), (-0.5 * LABEL_ROOM.0, 0.09), (-0.5 * LABEL_ROOM.0, -0.06)];
    offsets
        .iter()
        .map(|o| (p.0 + o.0, p.1 + o.1))
        .find(|at| placed.iter().all(|q| (q.0 - at.0).abs() >= LABEL_ROOM.0 || (q.1 - at.1).abs() >= LABEL_ROOM.1))
}

/// "2.4 GHz", "31.25 GHz".
fn ghz(f: f64) -> String {
    format!("{} GHz", crate::numfmt::short(f / 1e9))
}

/// What the chart is normalised to.
fn reference_note(sp: &SParams) -> String {
    match crate::analysis::touchstone::constant_reference(sp) {
        Some(r) => {
            let mut r: Vec<String> = r.iter().map(|x| format!("{} ohm", crate::numfmt::short(*x))).collect();
            r.dedup();
            format!("normalised to the port reference impedance ({}); circle: start, square: end of the sweep", r.join(", "))
        }
        None => "normalised to each port's TE10 wave impedance at each frequency; circle: start, square: end".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_moves_off_the_grid_labels_or_is_left_out() {
        // Nothing near: right of the point.
        assert_eq!(free_spot((0.0, 0.0), &[]), Some((0.03, 0.03)));
        // A grid label where the first spot would go: the next free one.
        let at = free_spot((0.0, 0.0), &[(0.03, 0.03)]).unwrap();
        assert!((at.0 - 0.03).abs() >= LABEL_ROOM.0 || (at.1 - 0.03).abs() >= LABEL_ROOM.1, "{at:?}");
        // Crowded all round: none.
        let crowd: Vec<(f64, f64)> = (-10..=10).flat_map(|i| (-10..=10).map(move |j| (0.05 * i as f64, 0.03 * j as f64))).collect();
        assert_eq!(free_spot((0.0, 0.0), &crowd), None);
    }

    #[test]
    fn grid_lines_lie_on_the_disc_and_pass_through_known_points() {
        for &v in &GRID {
            for (x, y) in grid_line(Some(v), None).into_iter().chain(grid_line(None, Some(v))) {
                assert!(x * x + y * y <= 1.0 + 1e-9);
            }
        }
        // r = 1 passes through the centre; x = +1 meets the rim at (0, 1).
        assert!(grid_line(Some(1.0), None).iter().any(|p| p.0.abs() < 1e-3 && p.1.abs() < 1e-2));
        assert!(grid_line(None, Some(1.0)).iter().any(|p| p.0.abs() < 1e-2 && (p.1 - 1.0).abs() < 1e-2));
    }

    #[test]
    fn draws_reflections_and_skips_networks_without_any() {
        let sp = crate::plot::sparams::tests::filter_like();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("smith.png");
        let m = Mask { s: (1, 1), f1: 31e9, f2: 32e9, level_db: -15.0, above: false };
        assert!(plot(&p, &sp, &[m], "test").unwrap().is_some());
        assert!(std::fs::read(&p).unwrap().len() > 10_000);
        let mut none = sp.clone();
        none.s[0][0] = None;
        assert!(plot(&dir.path().join("none.png"), &none, &[], "t").unwrap().is_none());
        assert!(!dir.path().join("none.png").exists());
    }
}
