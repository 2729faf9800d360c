//! `mesh.png`: a job's mesh lines over its geometry in the three principal
//! planes, so a user can see where the lines fall on the metal edges.
//!
//! Each panel is a cut through cell centres: the cells are coloured by their
//! material (PEC dark, dielectrics tinted), sheets are red (filled where they
//! lie in the cut's plane, lines where they cross it), waveguide port planes
//! blue, lumped ports green, the absorbing padding shaded.

use std::path::Path;

use plotters::prelude::*;

use crate::job::{Axis, PortKind, SimJob};

/// Where a panel cuts (a cell index along `n`): just below the smallest sheet
/// normal to it (a patch or a trace, not a ground plane covering the domain),
/// else through the middle.
pub(crate) fn cut(job: &SimJob, n: usize) -> usize {
    let cells = job.mesh.n()[n];
    let area = |s: &crate::job::Sheet| (s.hi[0] - s.lo[0]) * (s.hi[1] - s.lo[1]);
    match job.sheets.iter().filter(|s| s.normal.index() == n && s.plane > 0).min_by_key(|s| area(s)) {
        // The cell just below the sheet's plane holds the substrate it lies on.
        Some(s) => (s.plane - 1).min(cells - 1),
        None => cells / 2,
    }
}

fn material_colour(job: &SimJob, m: u8) -> RGBColor {
    let mat = &job.materials[m as usize];
    if mat.pec {
        RGBColor(70, 70, 70)
    } else if m == 0 {
        RGBColor(255, 255, 255)
    } else {
        const TINTS: [RGBColor; 4] = [RGBColor(255, 236, 179), RGBColor(200, 230, 201), RGBColor(187, 222, 251), RGBColor(225, 190, 231)];
        TINTS[(m as usize - 1) % TINTS.len()]
    }
}

/// Draw the three panels of `job` into `path`; `scale` metres per plotted unit.
pub fn plot(path: &Path, job: &SimJob, title: &str, unit: &str, scale: f64) -> anyhow::Result<()> {
    super::init_font();
    let e = super::err(path);
    let root = BitMapBackend::new(path, (1650, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(&e)?;
    let panels = root.split_evenly((1, 3));
    for (panel, n) in panels.iter().zip([Axis::Z, Axis::Y, Axis::X]) {
        draw_panel(panel, job, n, unit, scale).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    job: &SimJob,
    normal: Axis,
    unit: &str,
    scale: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (u, v) = match normal {
        Axis::X => (Axis::Y, Axis::Z),
        Axis::Y => (Axis::X, Axis::Z),
        Axis::Z => (Axis::X, Axis::Y),
    };
    let (ui, vi, ni) = (u.index(), v.index(), normal.index());
    let m = &job.mesh;
    let lu: Vec<f64> = m.lines(ui).iter().map(|x| x / scale).collect();
    let lv: Vec<f64> = m.lines(vi).iter().map(|x| x / scale).collect();
    let k = cut(job, ni);
    let at = m.centres(ni)[k] / scale;
    let caption = format!("{}{}-plane at {} = {:.4} {unit}", u.name(), v.name(), normal.name(), at);
    let (u0, u1) = (lu[0], lu[lu.len() - 1]);
    let (v0, v1) = (lv[0], lv[lv.len() - 1]);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(u0..u1, v0..v1)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(format!("{} ({unit})", u.name()))
        .y_desc(format!("{} ({unit})", v.name()))
        .label_style(("sans-serif", 12))
        .draw()?;
    // Cells by material.
    let mut cells = vec![];
    for j in 0..lv.len() - 1 {
        for i in 0..lu.len() - 1 {
            let mut p = [0usize; 3];
            p[ui] = i;
            p[vi] = j;
            p[ni] = k;
            let mat = job.cell_mat[m.idx(p[0], p[1], p[2])];
            if mat != 0 {
                cells.push(Rectangle::new([(lu[i], lv[j]), (lu[i + 1], lv[j + 1])], material_colour(job, mat).filled()));
            }
        }
    }
    chart.draw_series(cells)?;
    // Absorbing padding, shaded.
    let shade = RGBColor(120, 144, 156).mix(0.18).filled();
    for (ax, lines, lo, hi) in [(ui, &lu, v0, v1), (vi, &lv, u0, u1)] {
        let [p0, p1] = job.pml[ax];
        let n = lines.len() - 1;
        for (a, b) in [(0, p0), (n - p1, n)] {
            if b > a {
                let r = if ax == ui { [(lines[a], lo), (lines[b], hi)] } else { [(lo, lines[a]), (hi, lines[b])] };
                chart.draw_series(std::iter::once(Rectangle::new(r, shade)))?;
            }
        }
    }
    // Mesh lines.
    let grey = RGBColor(150, 150, 150).mix(0.7);
    chart.draw_series(lu.iter().map(|&x| PathElement::new(vec![(x, v0), (x, v1)], grey.stroke_width(1))))?;
    chart.draw_series(lv.iter().map(|&y| PathElement::new(vec![(u0, y), (u1, y)], grey.stroke_width(1))))?;
    // Sheets: filled where they lie in the cut's plane, a line where they cross it.
    let red = RGBColor(211, 47, 47);
    for s in &job.sheets {
        let (p, q) = s.normal.others();
        let span = |a: Axis, lines: &[f64]| -> Option<(f64, f64)> {
            let idx = if a == p { 0 } else { 1 };
            Some((lines[s.lo[idx]], lines[s.hi[idx]]))
        };
        if s.normal == normal {
            if s.plane == k + 1 {
                let (a0, a1) = if p == u { span(p, &lu).unwrap() } else { span(q, &lu).unwrap() };
                let (b0, b1) = if p == v { span(p, &lv).unwrap() } else { span(q, &lv).unwrap() };
                chart.draw_series(std::iter::once(Rectangle::new([(a0, b0), (a1, b1)], red.mix(0.35).filled())))?;
            }
            continue;
        }
        // Crossing the cut: the sheet must span the cut's position along `normal`.
        let idx_n = if p == normal { 0 } else { 1 };
        if !(s.lo[idx_n] <= k && k < s.hi[idx_n]) {
            continue;
        }
        let other = if p == normal { q } else { p };
        let idx_o = if other == p { 0 } else { 1 };
        let pts = if s.normal == u {
            let x = lu[s.plane];
            vec![(x, lv[s.lo[idx_o]]), (x, lv[s.hi[idx_o]])]
        } else {
            let y = lv[s.plane];
            vec![(lu[s.lo[idx_o]], y), (lu[s.hi[idx_o]], y)]
        };
        chart.draw_series(std::iter::once(PathElement::new(pts, red.stroke_width(3))))?;
    }
    // Ports.
    for port in &job.ports {
        match &port.kind {
            PortKind::Waveguide { normal: pn, plane, .. } if *pn != normal => {
                let pts = if *pn == u {
                    vec![(lu[*plane], v0), (lu[*plane], v1)]
                } else {
                    vec![(u0, lv[*plane]), (u1, lv[*plane])]
                };
                chart.draw_series(std::iter::once(PathElement::new(pts, BLUE.stroke_width(2))))?;
            }
            PortKind::Lumped { axis, start, len, .. } => {
                let at_u = |ax: usize, node: usize| m.lines(ax)[node] / scale;
                let s0 = *start;
                let mut s1 = *start;
                s1[axis.index()] += len;
                let a = (at_u(ui, s0[ui]), at_u(vi, s0[vi]));
                let b = (at_u(ui, s1[ui]), at_u(vi, s1[vi]));
                let green = RGBColor(46, 125, 50);
                if a == b {
                    chart.draw_series(std::iter::once(Circle::new(a, 5, green.filled())))?;
                } else {
                    chart.draw_series(std::iter::once(PathElement::new(vec![a, b], green.stroke_width(4))))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
