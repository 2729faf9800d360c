//! Field magnitudes for ParaView from a whole-grid field DFT monitor
//! (`simulate --dump-fields`): the monitor that records every E and H
//! component over the mesh ([`whole_grid`]), its components brought to the
//! cell centres and their magnitudes `|E| = sqrt(sum |E_c|^2)` (same for H)
//! per frequency ([`FieldMagnitudes`]), written as a VTK rectilinear grid on
//! the job's mesh lines with one cell array per field and frequency, next to
//! the mesh and geometry of [`super::vtk`].
//!
//! The magnitudes are divided by the source's spectrum at each frequency
//! (the DFT of the driven port's pulse over the same steps), so they are the
//! field per unit of excitation and comparable between frequencies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use num_complex::Complex64;

use crate::job::{ComponentDft, DftFields, Field, Monitor, MonitorOutput, SimJob, SimOutput};

/// Name of the monitor [`whole_grid`] builds.
pub const MONITOR: &str = "field dump";

/// A monitor of all six components over every node of `job`'s mesh.
pub fn whole_grid(job: &SimJob, freqs: &[f64]) -> Monitor {
    Monitor::FieldDft { name: MONITOR.into(), lo: [0; 3], hi: job.mesh.n(), fields: DftFields::All, freqs: freqs.to_vec() }
}

/// |E| and |H| at the cell centres, per frequency, `[f][cell]` with cells
/// x fastest (the order of the mesh's cell arrays).
#[derive(Debug, Clone)]
pub struct FieldMagnitudes {
    pub n: [usize; 3],
    pub freqs: Vec<f64>,
    pub e: Vec<Vec<f32>>,
    pub h: Vec<Vec<f32>>,
}

/// Component `c` at the cell centres for frequency `f`: along an axis where
/// Yee keeps it on the nodes, the mean of the two nodes around the centre.
fn at_centres(c: &ComponentDft, f: usize, n: [usize; 3]) -> Result<Vec<Complex64>, String> {
    let cnt = c.count;
    for a in 0..3 {
        let want = if c.at_nodes[a] { n[a] + 1 } else { n[a] };
        if c.first[a] != 0 || cnt[a] != want {
            return Err(format!("{}{}: samples {}..{} along axis {a} do not cover the {} cells", if c.field == Field::E { "E" } else { "H" }, c.axis.name(), c.first[a], c.first[a] + cnt[a], n[a]));
        }
    }
    let per_f = cnt[0] * cnt[1] * cnt[2];
    let vals = &c.values[f * per_f..(f + 1) * per_f];
    let span = |a: usize, i: usize| if c.at_nodes[a] { [i, i + 1] } else { [i, i] };
    let mut out = Vec::with_capacity(n[0] * n[1] * n[2]);
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let mut s = Complex64::new(0.0, 0.0);
                for kk in span(2, k) {
                    for jj in span(1, j) {
                        for ii in span(0, i) {
                            s += vals[(kk * cnt[1] + jj) * cnt[0] + ii];
                        }
                    }
                }
                out.push(s / 8.0);
            }
        }
    }
    Ok(out)
}

/// The DFT of the driven port's source over the run's steps, with the
/// convention of the monitors (`sum g(t) exp(-j 2 pi f t) dt`, t the
/// source's instants (n + 1/2) dt).
pub fn source_spectrum(job: &SimJob, out: &SimOutput, f: f64) -> Complex64 {
    let w = 2.0 * std::f64::consts::PI * f;
    (0..out.steps)
        .map(|n| {
            let t = (n as f64 + 0.5) * out.dt;
            Complex64::from_polar(job.pulse.value(t) * out.dt, -w * t)
        })
        .sum()
}

impl FieldMagnitudes {
    /// The magnitudes of the whole-grid monitor `m` of `job`, divided by the
    /// source spectrum of the run `out`.
    pub fn new(job: &SimJob, out: &SimOutput, m: &MonitorOutput) -> Result<FieldMagnitudes, String> {
        let MonitorOutput::FieldDft { freqs, components, .. } = m else {
            return Err("the whole-grid monitor did not record fields".into());
        };
        let n = job.mesh.n();
        let cells = n[0] * n[1] * n[2];
        let mut e = vec![];
        let mut h = vec![];
        for (fi, &f) in freqs.iter().enumerate() {
            let g = source_spectrum(job, out, f).norm();
            if !(g > 0.0 && g.is_finite()) {
                return Err(format!("the source has no energy at {f} Hz over the run"));
            }
            let (mut se, mut sh) = (vec![0.0f64; cells], vec![0.0f64; cells]);
            for c in components {
                let v = at_centres(c, fi, n)?;
                let acc = if c.field == Field::E { &mut se } else { &mut sh };
                for (a, z) in acc.iter_mut().zip(&v) {
                    *a += z.norm_sqr();
                }
            }
            for field in [Field::E, Field::H] {
                if !components.iter().filter(|c| c.field == field).map(|c| c.axis).eq(crate::job::Axis::ALL) {
                    return Err("the monitor does not hold all three components of E and H".into());
                }
            }
            e.push(se.iter().map(|x| (x.sqrt() / g) as f32).collect());
            h.push(sh.iter().map(|x| (x.sqrt() / g) as f32).collect());
        }
        Ok(FieldMagnitudes { n, freqs: freqs.clone(), e, h })
    }

    /// "2.45GHz": the frequency part of the array and file names.
    pub fn tag(f: f64) -> String {
        let g = f / 1e9;
        let s = format!("{g:.6}");
        format!("{}GHz", s.trim_end_matches('0').trim_end_matches('.'))
    }

    /// Write `<stem>_fields.vtr` (the magnitudes on the mesh, with the
    /// material index) and `<stem>_fields.vtm` (it with the sheets and ports
    /// files [`super::vtk::write`] wrote as `<stem>_sheets.vtp` and
    /// `<stem>_ports.vtp`) into `dir`; returns them, the `.vtm` first.
    pub fn write_vtk(&self, job: &SimJob, dir: &Path, stem: &str) -> std::io::Result<Vec<PathBuf>> {
        let n = self.n;
        let ext = format!("0 {} 0 {} 0 {}", n[0], n[1], n[2]);
        let mut out = String::from("<?xml version=\"1.0\"?>\n");
        let _ = writeln!(
            out,
            "<!-- emvolve field magnitudes of {}: |E| (V/m) and |H| (A/m) at the cell centres from running DFTs, per unit of the source's spectrum; coordinates in metres -->",
            super::vtk::xml_escape(&job.label)
        );
        out.push_str("<VTKFile type=\"RectilinearGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n");
        let first = format!("E_mag_{}", Self::tag(self.freqs[0]));
        let _ = writeln!(out, "  <RectilinearGrid WholeExtent=\"{ext}\">\n    <Piece Extent=\"{ext}\">\n      <CellData Scalars=\"{first}\">");
        for (fi, &f) in self.freqs.iter().enumerate() {
            super::vtk::array(&mut out, "Float32", &format!("E_mag_{}", Self::tag(f)), 1, self.e[fi].iter());
            super::vtk::array(&mut out, "Float32", &format!("H_mag_{}", Self::tag(f)), 1, self.h[fi].iter());
        }
        super::vtk::array(&mut out, "UInt8", "material", 1, job.cell_mat.iter());
        out.push_str("      </CellData>\n      <Coordinates>\n");
        for (a, line) in super::vtk::node_lines(job).iter().enumerate() {
            super::vtk::array(&mut out, "Float64", ["x", "y", "z"][a], 1, line.iter());
        }
        out.push_str("      </Coordinates>\n    </Piece>\n  </RectilinearGrid>\n</VTKFile>\n");
        std::fs::create_dir_all(dir)?;
        let vtr = dir.join(format!("{stem}_fields.vtr"));
        std::fs::write(&vtr, out)?;
        let blocks = [("fields", format!("{stem}_fields.vtr")), ("sheets", format!("{stem}_sheets.vtp")), ("ports", format!("{stem}_ports.vtp"))];
        let mut vtm = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"vtkMultiBlockDataSet\" version=\"1.0\" byte_order=\"LittleEndian\">\n  <vtkMultiBlockDataSet>\n");
        for (k, (label, file)) in blocks.iter().enumerate() {
            let _ = writeln!(vtm, "    <DataSet index=\"{k}\" name=\"{label}\" file=\"{}\"/>", super::vtk::xml_escape(file));
        }
        vtm.push_str("  </vtkMultiBlockDataSet>\n</VTKFile>\n");
        let vtm_path = dir.join(format!("{stem}_fields.vtm"));
        std::fs::write(&vtm_path, vtm)?;
        Ok(vec![vtm_path, vtr])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centred_components_average_the_nodes_around_each_cell() {
        // Ex of a 2 x 1 x 1 grid: between nodes along x, on nodes along y and z.
        let n = [2, 1, 1];
        let count = [2, 2, 2];
        let values: Vec<Complex64> = (0..8).map(|k| Complex64::new(k as f64, 0.0)).collect();
        let c = ComponentDft { field: Field::E, axis: crate::job::Axis::X, first: [0; 3], count, at_nodes: [false, true, true], values };
        let v = at_centres(&c, 0, n).unwrap();
        // Cell 0: samples (0, 0..2, 0..2) = 0, 2, 4, 6; cell 1: 1, 3, 5, 7.
        assert_eq!(v, vec![Complex64::new(3.0, 0.0), Complex64::new(4.0, 0.0)]);
        let short = ComponentDft { count: [2, 1, 2], ..c };
        assert!(at_centres(&short, 0, n).is_err());
        assert_eq!(FieldMagnitudes::tag(2.45e9), "2.45GHz");
        assert_eq!(FieldMagnitudes::tag(30e9), "30GHz");
    }
}
