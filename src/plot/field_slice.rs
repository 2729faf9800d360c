//! `E_slice_<f>.png`: |E| on one plane of cell centres through the
//! structure (`simulate --dump-fields`), for people without ParaView. The
//! cells are coloured on a linear scale from 0 to the slice's largest |E|
//! (colour bar on the right), the metal sheets of the plane outlined in
//! white, the sheets crossing it drawn as white lines.

use std::path::Path;

use plotters::prelude::*;

use crate::job::{Axis, PortKind, SimJob};

/// Where the slice goes when none is asked for: a plane through a
/// waveguide's broad face (normal to its E field, in the middle), else the
/// cut of `mesh.png` normal to the axis most sheets are normal to (just below
/// the smallest such sheet: the substrate under a patch or a trace), else the
/// middle of z.
pub fn default_slice(job: &SimJob) -> (Axis, usize) {
    let n = job.mesh.n();
    if let Some(e_axis) = job.ports.iter().find_map(|p| match p.kind {
        PortKind::Waveguide { e_axis, .. } => Some(e_axis),
        _ => None,
    }) {
        return (e_axis, n[e_axis.index()] / 2);
    }
    let count = |a: Axis| job.sheets.iter().filter(|s| s.normal == a).count();
    match Axis::ALL.into_iter().filter(|&a| count(a) > 0).max_by_key(|&a| (count(a), a.index())) {
        Some(a) => (a, super::mesh::cut(job, a.index())),
        None => (Axis::Z, n[2] / 2),
    }
}

/// The cell index along `normal` whose centre is nearest `at` (metres).
pub fn slice_at(job: &SimJob, normal: Axis, at: f64) -> usize {
    let c = job.mesh.centres(normal.index());
    (0..c.len()).min_by(|&a, &b| (c[a] - at).abs().total_cmp(&(c[b] - at).abs())).unwrap_or(0)
}

/// The colour bar's label: what |E| is and its unit.
pub const BAR_LABEL: &str = "|E| (V/m per unit of source spectrum)";

/// A perceptual dark-to-bright map (blue-black, purple, orange, pale yellow) of t in 0..=1.
fn colour(t: f64) -> RGBColor {
    const STOPS: [(f64, [f64; 3]); 5] = [(0.0, [0.0, 0.0, 4.0]), (0.25, [87.0, 16.0, 110.0]), (0.5, [188.0, 55.0, 84.0]), (0.75, [249.0, 142.0, 9.0]), (1.0, [252.0, 255.0, 164.0])];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let k = STOPS.iter().rposition(|s| s.0 <= t).unwrap_or(0).min(STOPS.len() - 2);
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    let w = (t - a.0) / (b.0 - a.0);
    let c = |i: usize| (a.1[i] + w * (b.1[i] - a.1[i])).round() as u8;
    RGBColor(c(0), c(1), c(2))
}

/// Plot `mag` (|E| per cell, x fastest) on the plane of cells `k` normal to
/// `normal` into `path`; lengths divided by `scale` and labelled `unit`.
pub fn plot(path: &Path, job: &SimJob, mag: &[f32], normal: Axis, k: usize, title: &str, unit: &str, scale: f64) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let (u, v) = match normal {
        Axis::X => (Axis::Y, Axis::Z),
        Axis::Y => (Axis::X, Axis::Z),
        Axis::Z => (Axis::X, Axis::Y),
    };
    let (ui, vi, ni) = (u.index(), v.index(), normal.index());
    let m = &job.mesh;
    anyhow::ensure!(k < m.n()[ni], "slice at cell {k} along {}: the mesh has {} cells there", normal.name(), m.n()[ni]);
    anyhow::ensure!(mag.len() == m.cells(), "{} magnitudes for {} cells", mag.len(), m.cells());
    let lu: Vec<f64> = m.lines(ui).iter().map(|x| x / scale).collect();
    let lv: Vec<f64> = m.lines(vi).iter().map(|x| x / scale).collect();
    let at = |i: usize, j: usize| {
        let mut p = [0usize; 3];
        p[ui] = i;
        p[vi] = j;
        p[ni] = k;
        mag[m.idx(p[0], p[1], p[2])] as f64
    };
    let (nu, nv) = (lu.len() - 1, lv.len() - 1);
    let top = (0..nv).flat_map(|j| (0..nu).map(move |i| (i, j))).map(|(i, j)| at(i, j)).filter(|x| x.is_finite()).fold(0.0f64, f64::max);
    let root = BitMapBackend::new(path, (1000, 820)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(&e)?;
    let (main, bar) = root.split_horizontally(860);
    let centre = m.centres(ni)[k] / scale;
    let caption = format!("|E| on the {}{}-plane at {} = {} {unit}", u.name(), v.name(), normal.name(), super::sig3(centre));
    let mut chart = ChartBuilder::on(&main)
        .caption(caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lu[0]..lu[nu], lv[0]..lv[nv])
        .map_err(&e)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(format!("{} ({unit})", u.name()))
        .y_desc(format!("{} ({unit})", v.name()))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(&e)?;
    let scale_of = |x: f64| if top > 0.0 { x / top } else { 0.0 };
    chart
        .draw_series((0..nv).flat_map(|j| (0..nu).map(move |i| (i, j))).map(|(i, j)| Rectangle::new([(lu[i], lv[j]), (lu[i + 1], lv[j + 1])], colour(scale_of(at(i, j))).filled())))
        .map_err(&e)?;
    // Sheets: outlined where they lie in the plane (the sheet on the cells' top
    // or bottom face), a line where they cross it.
    let white = WHITE.stroke_width(2);
    for s in &job.sheets {
        let (p, q) = s.normal.others();
        let span = |a: Axis| {
            let idx = if a == p { 0 } else { 1 };
            (s.lo[idx], s.hi[idx])
        };
        if s.normal == normal {
            if s.plane == k || s.plane == k + 1 {
                let ((a0, a1), (b0, b1)) = (span(u), span(v));
                let r = vec![(lu[a0], lv[b0]), (lu[a1], lv[b0]), (lu[a1], lv[b1]), (lu[a0], lv[b1]), (lu[a0], lv[b0])];
                chart.draw_series(std::iter::once(PathElement::new(r, white))).map_err(&e)?;
            }
            continue;
        }
        let (n0, n1) = span(normal);
        if !(n0 <= k && k < n1) {
            continue;
        }
        let other = if p == normal { q } else { p };
        let (o0, o1) = span(other);
        let pts = if s.normal == u { vec![(lu[s.plane], lv[o0]), (lu[s.plane], lv[o1])] } else { vec![(lu[o0], lv[s.plane]), (lu[o1], lv[s.plane])] };
        chart.draw_series(std::iter::once(PathElement::new(pts, white))).map_err(&e)?;
    }
    // Colour bar.
    let mut cb = ChartBuilder::on(&bar).margin_top(60).margin_bottom(52).margin_right(8).y_label_area_size(88).build_cartesian_2d(0.0..1.0, 0.0..top.max(f64::MIN_POSITIVE)).map_err(&e)?;
    // Named with its unit: the field per unit of the source's spectrum at this frequency.
    cb.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(BAR_LABEL)
        .y_label_formatter(&|y| super::sig3(*y))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 14))
        .draw()
        .map_err(&e)?;
    let steps = 100;
    cb.draw_series((0..steps).map(|s| {
        let (a, b) = (s as f64 / steps as f64, (s + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, a * top), (1.0, b * top)], colour(a).filled())
    }))
    .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}
