//! What a user wants to know of a job's mesh before running it: cells per
//! axis, smallest and largest cell, grading, the time step it forces and the
//! cells per wavelength at the top frequency (`emvolve mesh`).

use std::fmt::Write as _;

use crate::consts::C0;
use crate::job::{Axis, SimJob};

/// One axis of the mesh.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisReport {
    pub axis: Axis,
    /// Cells inside the domain, and padding cells on the low and high face.
    pub cells: usize,
    pub pml: [usize; 2],
    /// Smallest and largest domain cell (metres).
    pub min: f64,
    pub max: f64,
    /// Largest ratio of neighbouring cells.
    pub grading: f64,
    /// Cells per shortest wavelength at the largest cell.
    pub per_wavelength: f64,
    /// The invariant axis (one cell, no discretisation along it).
    pub invariant: bool,
}

/// The mesh of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshReport {
    pub axes: Vec<AxisReport>,
    pub cells: usize,
    /// The FDTD time step the smallest cells allow at the job's Courant number.
    pub dt: f64,
    /// Whether the job has conformal metal faces, whose stiffness may call
    /// for a shorter step (chosen when its operator is built).
    pub conformal: bool,
    /// The shortest wavelength (top frequency, densest material).
    pub lambda: f64,
}

/// Yee's time step on `job`'s mesh: the Courant number times the 3D limit of
/// the smallest cell per axis (what the FDTD operator uses).
pub fn fdtd_dt(job: &SimJob) -> f64 {
    let s: f64 = (0..3).map(|a| job.mesh.min_d(a).powi(-2)).sum();
    job.courant / (C0 * s.sqrt())
}

impl MeshReport {
    /// The report of `job`; `f_top` the highest frequency of the band.
    pub fn of(job: &SimJob, f_top: f64, invariant: Option<Axis>) -> MeshReport {
        let index = job.materials.iter().filter(|m| !m.pec).map(|m| (m.eps_r * m.mu_r).sqrt()).fold(1.0, f64::max);
        let lambda = C0 / (f_top * index);
        let axes = Axis::ALL
            .iter()
            .map(|&ax| {
                let a = ax.index();
                let pml = job.pml[a];
                let d = &job.mesh.d(a)[pml[0]..job.mesh.n()[a] - pml[1]];
                let min = d.iter().copied().fold(f64::INFINITY, f64::min);
                let max = d.iter().copied().fold(0.0, f64::max);
                let grading = d.windows(2).map(|w| (w[1] / w[0]).max(w[0] / w[1])).fold(1.0, f64::max);
                AxisReport { axis: ax, cells: d.len(), pml, min, max, grading, per_wavelength: lambda / max, invariant: invariant == Some(ax) }
            })
            .collect();
        MeshReport { axes, cells: job.mesh.cells(), dt: fdtd_dt(job), conformal: !job.conformal.faces.is_empty(), lambda }
    }

    /// The table `emvolve mesh` prints (lengths in `unit`, `per_unit` metres each).
    pub fn render(&self, unit: &str, per_unit: f64) -> String {
        let mut s = String::new();
        let l = |x: f64| format!("{:.4}", x / per_unit);
        let _ = writeln!(s, "axis   cells  padding   min cell   max cell  grading  cells/wavelength");
        for a in &self.axes {
            if a.invariant {
                let _ = writeln!(s, "{:>4}  {:>6}  {:>7}   {:>8}   (invariant: one cell, exact)", a.axis.name(), a.cells, "-", l(a.max));
                continue;
            }
            let _ = writeln!(
                s,
                "{:>4}  {:>6}  {:>3}+{:<3}   {:>8}   {:>8}  {:>7.3}  {:>16.1}",
                a.axis.name(),
                a.cells,
                a.pml[0],
                a.pml[1],
                l(a.min),
                l(a.max),
                a.grading,
                a.per_wavelength
            );
        }
        let _ = writeln!(
            s,
            "{} cells in all (padding included), lengths in {unit}; shortest wavelength {} {unit}; time step {:.4} ps{}",
            self.cells,
            l(self.lambda),
            self.dt * 1e12,
            if self.conformal { " (conformal metal may take a shorter one, chosen from the cut grid when the job runs)" } else { "" }
        );
        s
    }
}
