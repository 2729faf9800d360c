//! Voxelisation: paint a resolved design's shapes onto its cells and assemble the
//! [`SimJob`] the engines read (conventions in `src/job.rs`).
//!
//! Each cell takes the material of the last shape containing its centre (index 0,
//! vacuum, where none does). Sheets are kept apart as zero-thickness conductors on
//! grid planes and are not erased by later shapes.

use super::budget::{check_grid, MemoryBudget};
use super::error::DesignError;
use super::format::DesignFile;
use super::resolve::{port_nodes, Resolved, Shape};
use crate::job::{Axis, Boundary, Pulse, SimJob, StopRule};

/// The job for `r`, driven at port 0 (callers set `drive` and `label` per run).
pub(crate) fn voxelise(r: &Resolved, d: &DesignFile, file: &str, budget: MemoryBudget) -> Result<SimJob, DesignError> {
    let g = &r.grid;
    // The memory check comes before the first allocation of the grid's size.
    let cells = check_grid(g.n, budget, file)?;
    let mut cell_mat = vec![0u8; cells];
    for shape in &r.shapes {
        paint(r, shape, &mut cell_mat);
    }
    check_ports_not_shorted(r, &cell_mat, file)?;
    let opts = d.engine.options();
    let stop_default = StopRule::default();
    Ok(SimJob {
        label: d.name.clone(),
        engine: r.kind,
        grid: g.clone(),
        boundaries: r.boundaries,
        pml: r.pml,
        materials: r.materials.clone(),
        cell_mat,
        sheets: r.sheets.clone(),
        ports: r.ports.clone(),
        drive: 0,
        pulse: Pulse::covering(d.band.start, d.band.stop),
        freqs: d.band.freqs(),
        stop: StopRule {
            decay_db: opts.decay_db,
            max_steps: opts.max_steps.unwrap_or(stop_default.max_steps),
            check_every: stop_default.check_every,
        },
        courant: opts.courant,
    })
}

fn paint(r: &Resolved, shape: &Shape, cell_mat: &mut [u8]) {
    let g = &r.grid;
    let all = |a: usize| 0..g.n[a];
    // Cells of a slab, and a per-cell test on the centres.
    let mut fill = |ranges: [std::ops::Range<usize>; 3], mat: u8, keep: &dyn Fn([usize; 3]) -> bool| {
        for k in ranges[2].clone() {
            for j in ranges[1].clone() {
                for i in ranges[0].clone() {
                    if keep([i, j, k]) {
                        cell_mat[g.idx(i, j, k)] = mat;
                    }
                }
            }
        }
    };
    match *shape {
        Shape::Block { mat, min, max } => {
            let ranges = std::array::from_fn(|a| r.cells_in(a, min[a], max[a]));
            fill(ranges, mat, &|_| true);
        }
        Shape::Iris { mat, axis, wide, z0, z1, centre, half } => {
            let mut ranges: [_; 3] = std::array::from_fn(all);
            ranges[axis.index()] = r.cells_in(axis.index(), z0, z1);
            let w = wide.index();
            // The aperture: cells whose centre is within half the width of the middle.
            fill(ranges, mat, &|c| (r.centre(w, c[w]) - centre).abs() >= half);
        }
        Shape::Post { mat, axis, centre, radius } => {
            let (p, q) = axis.others();
            let (p, q) = (p.index(), q.index());
            let mut ranges: [_; 3] = std::array::from_fn(all);
            ranges[p] = r.cells_in(p, centre[p] - radius, centre[p] + radius);
            ranges[q] = r.cells_in(q, centre[q] - radius, centre[q] + radius);
            fill(ranges, mat, &|c| (r.centre(p, c[p]) - centre[p]).hypot(r.centre(q, c[q]) - centre[q]) <= radius);
        }
    }
}

/// A lumped port whose E edges touch a conductor would be short-circuited: the
/// engines force every E edge touching a PEC cell, lying in a sheet or lying on a
/// PEC face to zero.
fn check_ports_not_shorted(r: &Resolved, cell_mat: &[u8], file: &str) -> Result<(), DesignError> {
    let g = &r.grid;
    for (pi, port) in r.ports.iter().enumerate() {
        let crate::job::PortKind::Lumped { axis, .. } = port.kind else { continue };
        let nodes = port_nodes(&port.kind);
        let a = axis.index();
        let (p, q) = axis.others();
        let (p, q) = (p.index(), q.index());
        for n in &nodes[..nodes.len() - 1] {
            let shorted_by = |why: String| {
                DesignError::invalid(
                    file,
                    format!("ports[{pi}]"),
                    format!(
                        "port `{}` is short-circuited: its edge from node {n:?} along {} {why}",
                        port.name,
                        axis.name()
                    ),
                )
            };
            // The four cells sharing the edge.
            for dp in [0, 1] {
                for dq in [0, 1] {
                    let (Some(cp), Some(cq)) = (n[p].checked_sub(dp), n[q].checked_sub(dq)) else { continue };
                    if cp >= g.n[p] || cq >= g.n[q] {
                        continue;
                    }
                    let mut c = [0usize; 3];
                    c[a] = n[a];
                    c[p] = cp;
                    c[q] = cq;
                    let m = &r.materials[cell_mat[g.idx(c[0], c[1], c[2])] as usize];
                    if m.pec {
                        return Err(shorted_by(format!("touches the PEC cell {c:?} (`{}`)", m.name)));
                    }
                }
            }
            for (si, s) in r.sheets.iter().enumerate() {
                let ni = s.normal.index();
                if ni == a || n[ni] != s.plane {
                    continue;
                }
                let (o1, o2) = s.normal.others();
                let inside = [o1, o2].iter().enumerate().all(|(k, o)| {
                    let oi = o.index();
                    let top = if oi == a { n[oi] + 1 } else { n[oi] };
                    n[oi] >= s.lo[k] && top <= s.hi[k]
                });
                if inside {
                    return Err(shorted_by(format!(
                        "lies in sheet {si} (normal {}, plane {})",
                        s.normal.name(),
                        s.plane
                    )));
                }
            }
            for b in [p, q] {
                for (side, at) in [(0, 0), (1, g.n[b])] {
                    if n[b] == at && r.boundaries[b][side] == Boundary::Pec {
                        let face = format!("{}-{}", Axis::from_index(b).name(), ["low", "high"][side]);
                        return Err(shorted_by(format!("lies on the Pec {face} face of the domain")));
                    }
                }
            }
        }
    }
    Ok(())
}
