//! The mesh and the material/PEC geometry of a job as VTK XML files:
//! - `<stem>.vtr`, a rectilinear grid on the job's mesh lines with per-cell
//!   `material` (index), `eps_r`, `sigma` (S/m), `mu_r`, `pec` and `absorbing`
//!   (1 in the absorbing padding);
//! - `<stem>_sheets.vtp`, the zero-thickness PEC sheets as quads;
//! - `<stem>_ports.vtp`, the ports: a line along each lumped port, the
//!   reference plane of each waveguide port, with a `port` number per cell;
//! - `<stem>.vtm`, a multiblock file that opens the three together in ParaView.
//!
//! Coordinates are in metres. ASCII data keeps the files readable and diffable;
//! they are written once per export, not per time step.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::job::{Axis, PortKind, SimJob};

/// The mesh's node coordinates per axis (metres): the one place the export reads
/// the grid, so a non-uniform mesh only changes this function.
pub fn node_lines(job: &SimJob) -> [Vec<f64>; 3] {
    Axis::ALL.map(|a| job.mesh.lines(a.index()).to_vec())
}

/// Write the files for `job` into `dir` (created if missing) as `<stem>...`; returns them, the `.vtm` first.
pub fn write(job: &SimJob, dir: &Path, stem: &str) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let files = [
        (format!("{stem}.vtr"), grid_xml(job)),
        (format!("{stem}_sheets.vtp"), sheets_xml(job)),
        (format!("{stem}_ports.vtp"), ports_xml(job)),
    ];
    let mut vtm = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"vtkMultiBlockDataSet\" version=\"1.0\" byte_order=\"LittleEndian\">\n  <vtkMultiBlockDataSet>\n");
    for (k, (name, _)) in files.iter().enumerate() {
        let label = ["cells", "sheets", "ports"][k];
        let _ = writeln!(vtm, "    <DataSet index=\"{k}\" name=\"{label}\" file=\"{}\"/>", xml_escape(name));
    }
    vtm.push_str("  </vtkMultiBlockDataSet>\n</VTKFile>\n");
    let mut out = vec![dir.join(format!("{stem}.vtm"))];
    std::fs::write(&out[0], vtm)?;
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text)?;
        out.push(p);
    }
    Ok(out)
}

pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace("--", "- -")
}

/// One `DataArray` of numbers, ten a line.
pub(crate) fn array<T: std::fmt::Display>(out: &mut String, ty: &str, name: &str, comps: usize, values: impl Iterator<Item = T>) {
    let _ = write!(out, "        <DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\" format=\"ascii\">");
    for (k, v) in values.enumerate() {
        out.push_str(if k % 10 == 0 { "\n          " } else { " " });
        let _ = write!(out, "{v}");
    }
    out.push_str("\n        </DataArray>\n");
}

fn grid_xml(job: &SimJob) -> String {
    let n = job.mesh.n();
    let ext = format!("0 {} 0 {} 0 {}", n[0], n[1], n[2]);
    let mut out = String::from("<?xml version=\"1.0\"?>\n");
    let _ = writeln!(out, "<!-- emvolve mesh of {}: coordinates in metres -->", xml_escape(&job.label));
    for (k, m) in job.materials.iter().enumerate() {
        let _ = writeln!(out, "<!-- material {k}: {} (eps_r {}, sigma {} S/m, mu_r {}{}) -->", xml_escape(&m.name), m.eps_r, m.sigma, m.mu_r, if m.pec { ", PEC" } else { "" });
    }
    out.push_str("<VTKFile type=\"RectilinearGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n");
    let _ = writeln!(out, "  <RectilinearGrid WholeExtent=\"{ext}\">\n    <Piece Extent=\"{ext}\">\n      <CellData Scalars=\"material\">");
    let mat = |c: &u8| &job.materials[usize::from(*c).min(job.materials.len().saturating_sub(1))];
    array(&mut out, "UInt8", "material", 1, job.cell_mat.iter());
    array(&mut out, "Float32", "eps_r", 1, job.cell_mat.iter().map(|c| mat(c).eps_r as f32));
    array(&mut out, "Float32", "sigma", 1, job.cell_mat.iter().map(|c| mat(c).sigma as f32));
    array(&mut out, "Float32", "mu_r", 1, job.cell_mat.iter().map(|c| mat(c).mu_r as f32));
    array(&mut out, "UInt8", "pec", 1, job.cell_mat.iter().map(|c| u8::from(mat(c).pec)));
    let inside = |a: usize, i: usize| i >= job.pml[a][0] && i < n[a] - job.pml[a][1];
    let absorbing = (0..n[2]).flat_map(|k| (0..n[1]).flat_map(move |j| (0..n[0]).map(move |i| [i, j, k])));
    array(&mut out, "UInt8", "absorbing", 1, absorbing.map(|c| u8::from(!(inside(0, c[0]) && inside(1, c[1]) && inside(2, c[2])))));
    out.push_str("      </CellData>\n      <Coordinates>\n");
    for (a, line) in node_lines(job).iter().enumerate() {
        array(&mut out, "Float64", ["x", "y", "z"][a], 1, line.iter());
    }
    out.push_str("      </Coordinates>\n    </Piece>\n  </RectilinearGrid>\n</VTKFile>\n");
    out
}

/// A PolyData file of quads (4 points each) and lines (2 points each), with one Int32 per cell.
fn polydata(comment: &str, quads: &[[[f64; 3]; 4]], lines: &[[[f64; 3]; 2]], cell_name: &str, cell_values: &[i32]) -> String {
    let mut out = String::from("<?xml version=\"1.0\"?>\n");
    let _ = writeln!(out, "<!-- {} -->", xml_escape(comment));
    out.push_str("<VTKFile type=\"PolyData\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <PolyData>\n");
    let np = 4 * quads.len() + 2 * lines.len();
    let _ = writeln!(
        out,
        "    <Piece NumberOfPoints=\"{np}\" NumberOfVerts=\"0\" NumberOfLines=\"{}\" NumberOfStrips=\"0\" NumberOfPolys=\"{}\">",
        lines.len(),
        quads.len()
    );
    // VTK numbers line cells before polygon cells.
    out.push_str("      <CellData Scalars=\"");
    out.push_str(cell_name);
    out.push_str("\">\n");
    array(&mut out, "Int32", cell_name, 1, cell_values.iter());
    out.push_str("      </CellData>\n      <Points>\n");
    let pts = lines.iter().flat_map(|l| l.iter()).chain(quads.iter().flat_map(|q| q.iter())).flat_map(|p| p.iter());
    array(&mut out, "Float64", "Points", 3, pts);
    out.push_str("      </Points>\n      <Lines>\n");
    array(&mut out, "Int32", "connectivity", 1, 0..2 * lines.len() as i32);
    array(&mut out, "Int32", "offsets", 1, (1..=lines.len() as i32).map(|k| 2 * k));
    out.push_str("      </Lines>\n      <Polys>\n");
    let base = 2 * lines.len() as i32;
    array(&mut out, "Int32", "connectivity", 1, base..base + 4 * quads.len() as i32);
    array(&mut out, "Int32", "offsets", 1, (1..=quads.len() as i32).map(|k| 4 * k));
    out.push_str("      </Polys>\n    </Piece>\n  </PolyData>\n</VTKFile>\n");
    out
}

/// The four corners of the rectangle on plane `p` normal to `normal`, spanning node lines `lo..=hi` of the other two axes.
fn rectangle(lines: &[Vec<f64>; 3], normal: Axis, p: usize, lo: [usize; 2], hi: [usize; 2]) -> [[f64; 3]; 4] {
    let (a, b) = normal.others();
    let corner = |u: usize, v: usize| {
        let mut c = [0.0; 3];
        c[normal.index()] = lines[normal.index()][p];
        c[a.index()] = lines[a.index()][u];
        c[b.index()] = lines[b.index()][v];
        c
    };
    [corner(lo[0], lo[1]), corner(hi[0], lo[1]), corner(hi[0], hi[1]), corner(lo[0], hi[1])]
}

fn sheets_xml(job: &SimJob) -> String {
    let lines = node_lines(job);
    let quads: Vec<[[f64; 3]; 4]> = job.sheets.iter().map(|s| rectangle(&lines, s.normal, s.plane, s.lo, s.hi)).collect();
    let ids: Vec<i32> = (0..quads.len() as i32).collect();
    polydata(&format!("emvolve PEC sheets of {}: coordinates in metres", job.label), &quads, &[], "sheet", &ids)
}

fn ports_xml(job: &SimJob) -> String {
    let lines = node_lines(job);
    let (mut segs, mut seg_ids, mut quads, mut quad_ids) = (vec![], vec![], vec![], vec![]);
    let mut names = vec![];
    for (k, p) in job.ports.iter().enumerate() {
        names.push(format!("{}: {}", k + 1, p.name));
        match p.kind {
            PortKind::Lumped { axis, start, len, .. } => {
                let at = |off: usize| {
                    let mut n = start;
                    n[axis.index()] += off;
                    [lines[0][n[0]], lines[1][n[1]], lines[2][n[2]]]
                };
                segs.push([at(0), at(len)]);
                seg_ids.push(k as i32 + 1);
            }
            PortKind::Waveguide { normal, plane, .. } => {
                let (a, b) = normal.others();
                quads.push(rectangle(&lines, normal, plane, [0, 0], [job.mesh.n()[a.index()], job.mesh.n()[b.index()]]));
                quad_ids.push(k as i32 + 1);
            }
        }
    }
    seg_ids.extend(quad_ids);
    polydata(&format!("emvolve ports of {} (port number: name) {}", job.label, names.join(", ")), &quads, &segs, "port", &seg_ids)
}
