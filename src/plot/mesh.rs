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
/// else through the structure (see [`through_structure`]).
pub(crate) fn cut(job: &SimJob, n: usize) -> usize {
    let cells = job.mesh.n()[n];
    let area = |s: &crate::job::Sheet| (s.hi[0] - s.lo[0]) * (s.hi[1] - s.lo[1]);
    match job.sheets.iter().filter(|s| s.normal.index() == n && s.plane > 0).min_by_key(|s| area(s)) {
        // The cell just below the sheet's plane holds the substrate it lies on.
        Some(s) => (s.plane - 1).min(cells - 1),
        None => through_structure(job, n),
    }
}

/// The plane of cells normal to `n` that holds the most material cells outside
/// the absorbing padding (nearest the middle among equals): through a
/// waveguide's irises, say, rather than through the empty aperture at mid-guide.
/// A domain of air alone is cut in the middle.
fn through_structure(job: &SimJob, n: usize) -> usize {
    let m = &job.mesh;
    let dims = m.n();
    let inner = |a: usize, i: usize| i >= job.pml[a][0] && i + job.pml[a][1] < dims[a];
    let mut count = vec![0usize; dims[n]];
    for k in 0..dims[2] {
        for j in 0..dims[1] {
            for i in 0..dims[0] {
                let p = [i, j, k];
                if job.cell_mat[m.idx(i, j, k)] != 0 && (0..3).all(|a| inner(a, p[a])) {
                    count[p[n]] += 1;
                }
            }
        }
    }
    let mid = dims[n] / 2;
    (0..dims[n]).max_by_key(|&k| (count[k], std::cmp::Reverse(k.abs_diff(mid)))).filter(|&k| count[k] > 0).unwrap_or(mid)
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
    let root = BitMapBackend::new(path, (1650, 660)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(&e)?;
    let (root, key) = root.split_vertically(590);
    draw_key(&key, job).map_err(&e)?;
    let panels = root.split_evenly((1, 3));
    for (panel, n) in panels.iter().zip([Axis::Z, Axis::Y, Axis::X]) {
        draw_panel(panel, job, n, unit, scale).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// The legend under the panels: what each colour and line stands for, only
/// for what this job has (its materials by name, sheets, ports, padding).
fn draw_key<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, job: &SimJob) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    enum Mark {
        Fill(RGBAColor),
        Line(RGBColor, u32),
        Dot(RGBColor),
    }
    let mut items: Vec<(Mark, String)> = vec![];
    let used = |m: u8| job.cell_mat.iter().any(|&c| c == m);
    for (m, mat) in job.materials.iter().enumerate().skip(1) {
        if used(m as u8) {
            let what = if mat.pec { format!("{} (metal)", mat.name) } else { format!("{} (eps_r {})", mat.name, crate::numfmt::short(mat.eps_r)) };
            items.push((Mark::Fill(material_colour(job, m as u8).to_rgba()), what));
        }
    }
    if !job.sheets.is_empty() {
        items.push((Mark::Line(SHEET, 3), "metal sheet (filled: in the plane)".into()));
    }
    if job.ports.iter().any(|p| matches!(p.kind, PortKind::Waveguide { .. })) {
        items.push((Mark::Line(BLUE, 2), "waveguide port plane".into()));
    }
    if job.ports.iter().any(|p| matches!(p.kind, PortKind::Lumped { .. })) {
        items.push((Mark::Dot(LUMPED), "lumped port".into()));
    }
    if job.pml.iter().flatten().any(|&p| p > 0) {
        items.push((Mark::Fill(PADDING), "absorbing layers".into()));
    }
    items.push((Mark::Line(RGBColor(150, 150, 150), 1), "mesh lines".into()));
    let font = ("sans-serif", 15).into_font();
    let mut x = 20;
    for (mark, text) in items {
        let y = 20;
        match mark {
            Mark::Fill(c) => {
                area.draw(&Rectangle::new([(x, y - 8), (x + 22, y + 8)], c.filled()))?;
                area.draw(&Rectangle::new([(x, y - 8), (x + 22, y + 8)], BLACK.stroke_width(1)))?;
            }
            Mark::Line(c, w) => area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(w)))?,
            Mark::Dot(c) => area.draw(&Circle::new((x + 11, y), 5, c.filled()))?,
        }
        area.draw(&Text::new(text.clone(), (x + 30, y - 8), font.clone()))?;
        x += 30 + 8 * text.len() as i32 + 30;
    }
    Ok(())
}

const SHEET: RGBColor = RGBColor(211, 47, 47);
const LUMPED: RGBColor = RGBColor(46, 125, 50);
const PADDING: RGBAColor = RGBAColor(120, 144, 156, 0.18);

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
    let shade = PADDING.filled();
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
    let red = SHEET;
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
                let green = LUMPED;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The yz panel of the iris filter cuts through its irises (beside the
    /// apertures), not through the empty middle of the guide; its xy panel
    /// cuts through an iris, not through a cavity.
    #[test]
    fn default_cuts_go_through_the_structure() {
        let design = crate::design::Design::load(Path::new("designs/wr28_iris_filter.ron")).unwrap();
        let job = &design.jobs(&design.midpoint_values(), &[0], None).unwrap()[0];
        let pec_in = |n: usize, k: usize| {
            let d = job.mesh.n();
            let mut count = 0;
            for z in 0..d[2] {
                for y in 0..d[1] {
                    for x in 0..d[0] {
                        let p = [x, y, z];
                        if p[n] == k && job.materials[job.cell_mat[job.mesh.idx(x, y, z)] as usize].pec {
                            count += 1;
                        }
                    }
                }
            }
            count
        };
        let mid = |n: usize| job.mesh.n()[n] / 2;
        // Mid-guide (x) is the apertures' centre: no metal there.
        assert_eq!(pec_in(0, mid(0)), 0);
        let (kx, kz) = (cut(job, 0), cut(job, 2));
        assert!(pec_in(0, kx) > 0 && pec_in(2, kz) > 0, "cuts at x cell {kx}, z cell {kz} miss the irises");
        // The yz cut holds all four irises: as much metal as any plane normal to x.
        assert!((0..job.mesh.n()[0]).all(|k| pec_in(0, k) <= pec_in(0, kx)));
    }
}
