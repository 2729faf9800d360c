//! The benchmark table shared by `emvolve bench` for FDTD (cells) and TLM
//! (nodes): every workload measured at two step counts, printed as Markdown.

use std::time::Instant;

use crate::engine::{Backend, RunCtx};
use crate::job::SimJob;

/// One measured row.
pub struct Row {
    pub what: String,
    /// Cells (FDTD) or nodes (TLM) of the workload.
    pub n: usize,
    pub s1: usize,
    pub s2: usize,
    pub setup_s: Option<f64>,
    pub wall2: f64,
    pub whole: f64,
    pub marginal: f64,
    pub kernel: Option<f64>,
    /// Device bytes per cell (node) and step.
    pub bytes: Option<f64>,
    pub bw: Option<f64>,
}

/// Run `make(steps)` at both step counts; returns (wall1, wall2, updates at s2).
pub fn measure(backend: &dyn Backend, make: &dyn Fn(usize) -> Vec<SimJob>, s1: usize, s2: usize) -> anyhow::Result<(f64, f64, f64)> {
    let mut walls = vec![];
    let mut upd = 0.0;
    for s in [s1, s2] {
        let jobs = make(s);
        let t = Instant::now();
        let out = backend.run(&jobs, &RunCtx::NONE)?;
        walls.push(t.elapsed().as_secs_f64());
        upd = 0.0;
        for (j, o) in jobs.iter().zip(out) {
            let o = o.map_err(|e| anyhow::anyhow!("{}: {e}", j.label))?;
            upd += o.cells as f64 * o.steps as f64;
        }
    }
    Ok((walls[0], walls[1], upd))
}

/// A row from [`measure`]: whole-run rate at s2, marginal rate between s1 and s2.
pub fn row(what: String, jobs1: &[SimJob], s1: usize, s2: usize, w1: f64, w2: f64, upd2: f64) -> Row {
    let n: usize = jobs1.iter().map(|j| j.mesh.cells()).sum();
    let extra = n as f64 * (s2 - s1) as f64;
    Row {
        what,
        n,
        s1,
        s2,
        setup_s: None,
        wall2: w2,
        whole: upd2 / w2 / 1e9,
        marginal: if w2 > w1 { extra / (w2 - w1) / 1e9 } else { f64::NAN },
        kernel: None,
        bytes: None,
        bw: None,
    }
}

/// Print the table; `unit` is "cell" or "node", `workload` the first column's title.
pub fn print_table(header: &str, copy: Option<f64>, unit: &str, workload: &str, rows: &[Row]) {
    println!("{header}");
    if let Some(c) = copy {
        println!("device-to-device copy bandwidth (read + write): {:.0} GB/s", c / 1e9);
    }
    println!(
        "| {workload} | {unit}s | steps | setup s | wall s | whole-run G{unit}s/s | marginal G{unit}s/s | kernel G{unit}s/s | B/{unit} | kernel GB/s | of copy BW |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let f = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
        println!(
            "| {} | {} | {}/{} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} |",
            r.what,
            r.n,
            r.s1,
            r.s2,
            f(r.setup_s, 2),
            r.wall2,
            r.whole,
            r.marginal,
            f(r.kernel, 2),
            f(r.bytes, 1),
            f(r.bw.map(|b| b / 1e9), 0),
            match (r.bw, copy) {
                (Some(b), Some(c)) => format!("{:.0}%", 100.0 * b / c),
                _ => "-".into(),
            }
        );
    }
}
