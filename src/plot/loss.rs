//! The power balance of a network of two or more ports: for each driven port
//! j the lost fraction `1 - sum_i |S_ij|^2` of its incident power (dissipated
//! in the structure or radiated) against frequency, beside the |S| plot.

use std::path::Path;

use plotters::prelude::*;

use super::sparams::colour_of;
use crate::analysis::power_balance::{driven, loss};
use crate::analysis::SParams;

/// Draw the lost fraction for every driven port into `path`; `None` for a
/// one-port or a network without a driven column.
pub fn plot(path: &Path, sp: &SParams, title: &str) -> anyhow::Result<Option<()>> {
    let js = driven(sp);
    if js.is_empty() || sp.freqs.len() < 2 {
        return Ok(None);
    }
    super::init_font();
    let e = super::err(path);
    let ghz: Vec<f64> = sp.freqs.iter().map(|f| f / 1e9).collect();
    let series: Vec<(usize, Vec<Option<f64>>)> = js.iter().filter_map(|&j| loss(sp, j).map(|l| (j, l))).collect();
    // The axis holds 0 and at least 1 % so that a lossless network reads as a
    // flat line at zero, not as magnified numerical noise.
    let (lo, hi) = series.iter().flat_map(|(_, l)| l.iter().flatten().copied()).filter(|v| v.is_finite()).fold((0.0f64, 0.01f64), |(l, h), v| (l.min(v), h.max(v)));
    let pad = 0.06 * (hi - lo);
    let (lo, hi) = (lo - pad, hi + pad);
    let root = BitMapBackend::new(path, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = super::freq_chart(&root, title, &ghz, lo..hi, "lost fraction of incident power", path)?;
    chart.draw_series(LineSeries::new([(ghz[0], 0.0), (ghz[ghz.len() - 1], 0.0)], BLACK.mix(0.4).stroke_width(1))).map_err(&e)?;
    let keys: Vec<(usize, usize)> = series.iter().map(|(j, _)| (*j, *j)).collect();
    for (j, l) in &series {
        // The colour of S_jj: the port's own colour in the other plots.
        let col = colour_of(sp.n_ports(), &keys, (*j, *j));
        // Frequencies without a balance (a guide below cutoff) break the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![vec![]];
        for (&f, v) in ghz.iter().zip(l) {
            match v {
                Some(v) if v.is_finite() => runs.last_mut().expect("runs starts non-empty").push((f, *v)),
                _ if !runs.last().is_some_and(|r| r.is_empty()) => runs.push(vec![]),
                _ => {}
            }
        }
        let label = format!("1 - Σ_i |S_i{j}|² (port {j}, {}, driven)", sp.ports[j - 1]);
        for (r, run) in runs.into_iter().filter(|r| !r.is_empty()).enumerate() {
            let s = chart.draw_series(LineSeries::new(run, col.stroke_width(2))).map_err(&e)?;
            if r == 0 {
                s.label(label.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(Some(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_port_gets_a_loss_plot_and_a_one_port_none() {
        let sp = crate::plot::sparams::tests::filter_like();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("loss.png");
        assert!(plot(&p, &sp, "filter").unwrap().is_some());
        let b = std::fs::read(&p).unwrap();
        assert!(b.starts_with(b"\x89PNG") && b.len() > 10_000, "{} bytes", b.len());
        let mut one = sp.clone();
        one.ports.truncate(1);
        one.s = vec![vec![sp.s[0][0].clone()]];
        one.zref.truncate(1);
        one.zin.truncate(1);
        let q = dir.path().join("none.png");
        assert!(plot(&q, &one, "patch").unwrap().is_none());
        assert!(!q.exists());
    }
}
