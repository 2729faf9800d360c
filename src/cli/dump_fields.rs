//! `simulate --dump-fields f1,f2 --vtk DIR`: the first driven port's job of
//! the simulation gets a field DFT monitor over the whole grid (a backend
//! wrapper adds it, so the S-parameters come from the same run, on the CPU
//! or the CUDA backend), and its |E| and |H| at those frequencies are written
//! as VTK next to the mesh and geometry, with a PNG slice of |E| per frequency.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::design::Design;
use crate::engine::{Backend, BatchResult, RunCtx};
use crate::export::fields::{whole_grid, FieldMagnitudes};
use crate::job::{Axis, MonitorOutput, SimJob, SimOutput};

/// A backend that records the whole-grid monitor on the first job of each batch.
pub struct FieldDump<'a> {
    inner: &'a dyn Backend,
    freqs: Vec<f64>,
    got: Mutex<Option<(SimJob, SimOutput, MonitorOutput)>>,
}

impl<'a> FieldDump<'a> {
    pub fn new(inner: &'a dyn Backend, freqs: Vec<f64>) -> Self {
        FieldDump { inner, freqs, got: Mutex::new(None) }
    }

    /// The monitored job, its output (without the dump monitor) and the monitor's result.
    pub fn take(&self) -> Option<(SimJob, SimOutput, MonitorOutput)> {
        self.got.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Backend for FieldDump<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn run(&self, jobs: &[SimJob], ctx: &RunCtx) -> BatchResult {
        let mut jobs = jobs.to_vec();
        if let Some(j) = jobs.first_mut() {
            let m = whole_grid(j, &self.freqs);
            j.monitors.push(m);
        }
        let mut outs = self.inner.run(&jobs, ctx)?;
        if let (Some(Ok(o)), Some(j)) = (outs.first_mut(), jobs.first_mut()) {
            // The dump monitor was added last; the others stay with the output.
            if o.monitors.len() == j.monitors.len() {
                if let Some(m) = o.monitors.pop() {
                    j.monitors.pop();
                    *self.got.lock().unwrap_or_else(|p| p.into_inner()) = Some((j.clone(), o.clone(), m));
                }
            }
        }
        Ok(outs)
    }
}

/// "2.45e9", "2.45GHz", "2450 MHz" as Hz.
pub fn parse_freq(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [("ghz", 1e9), ("mhz", 1e6), ("khz", 1e3), ("hz", 1.0)]
        .iter()
        .find_map(|(u, m)| lower.strip_suffix(u).map(|n| (n.trim().to_string(), *m)))
        .unwrap_or((lower.clone(), 1.0));
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * mult),
        _ => Err(format!("--dump-fields: `{t}` is not a frequency (Hz, or with a unit: 2.45GHz, 2450MHz)")),
    }
}

/// `--slice x=VALUE` (in the design's length unit) as (axis, metres).
pub fn parse_slice(s: &str, metres_per_unit: f64, unit: &str) -> Result<(Axis, f64), String> {
    let bad = || format!("--slice `{s}`: expected AXIS=VALUE in {unit}, e.g. z=1.6");
    let (a, v) = s.split_once('=').ok_or_else(bad)?;
    let axis = match a.trim() {
        "x" => Axis::X,
        "y" => Axis::Y,
        "z" => Axis::Z,
        _ => return Err(bad()),
    };
    let v: f64 = v.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() {
        return Err(bad());
    }
    Ok((axis, v * metres_per_unit))
}

/// Write the VTK files (mesh and geometry, fields) and the |E| slices into
/// `dir`; returns the files written.
pub fn write(design: &Design, job: &SimJob, out: &SimOutput, m: &MonitorOutput, dir: &Path, slice: Option<(Axis, f64)>) -> anyhow::Result<Vec<PathBuf>> {
    let mags = FieldMagnitudes::new(job, out, m).map_err(|e| anyhow::anyhow!("field dump: {e}"))?;
    let stem = design.name();
    let mut files = crate::export::vtk::write(job, dir, stem).map_err(|e| anyhow::anyhow!("writing VTK files into {}: {e}", dir.display()))?;
    files.extend(mags.write_vtk(job, dir, stem).map_err(|e| anyhow::anyhow!("writing VTK files into {}: {e}", dir.display()))?);
    let (normal, k) = match slice {
        Some((a, at)) => {
            let (lo, hi) = (job.mesh.lines(a.index())[0], *job.mesh.lines(a.index()).last().unwrap_or(&0.0));
            anyhow::ensure!((lo..=hi).contains(&at), "--slice {}={at} m lies outside the mesh ({lo} to {hi} m along {})", a.name(), a.name());
            (a, crate::plot::field_slice::slice_at(job, a, at))
        }
        None => crate::plot::field_slice::default_slice(job),
    };
    let units = design.file().units;
    for (fi, &f) in mags.freqs.iter().enumerate() {
        let p = dir.join(format!("E_slice_{}.png", FieldMagnitudes::tag(f)));
        let title = format!("{}: |E| at {} (per unit source), {}", design.name(), FieldMagnitudes::tag(f), job.label);
        crate::plot::field_slice::plot(&p, job, &mags.e[fi], normal, k, &title, units.symbol(), units.metres())?;
        files.push(p);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_and_slices_parse_with_units_and_bad_ones_are_named() {
        assert_eq!(parse_freq("2.45GHz").unwrap(), 2.45e9);
        assert_eq!(parse_freq(" 2450 MHz").unwrap(), 2.45e9);
        assert_eq!(parse_freq("3e9").unwrap(), 3e9);
        assert!(parse_freq("-1").unwrap_err().contains("`-1`"));
        assert!(parse_freq("fast").is_err());
        assert_eq!(parse_slice("z=1.6", 1e-3, "mm").unwrap(), (Axis::Z, 1.6e-3));
        assert!(parse_slice("w=1", 1e-3, "mm").unwrap_err().contains("AXIS=VALUE"));
        assert!(parse_slice("z", 1e-3, "mm").is_err());
    }
}
