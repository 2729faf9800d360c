//! The files that show one simulated design: a Touchstone file (when every
//! port was driven), a CSV of the S-parameters, the RF plots (|S| with the goal
//! masks, phase and group delay, Smith chart, input impedance, and the power
//! balance of a multi-port), the resonances with their Q, the port time
//! series and the fitness with its per-goal breakdown. `emvolve simulate` and
//! `emvolve inspect` write them all; the run's `best/` writes its Touchstone
//! file, plots and resonances the same way.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::analysis::SParams;
use crate::design::Design;
use crate::evaluate::Scored;
use crate::plot::sparams::masks;
use crate::job::{SimJob, SimOutput};
use crate::numfmt::short;

/// "l1=5.25, w1=3.9": parameter values as file comments and titles show them.
pub fn parameter_list(values: &BTreeMap<String, f64>) -> String {
    values.iter().map(|(k, v)| format!("{k}={}", short(*v))).collect::<Vec<_>>().join(", ")
}

/// What [`write_design_files`] left in the directory, what it found worth
/// saying (the resonances), and what it could not write (a note).
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub summary: Vec<String>,
    pub notes: Vec<String>,
}

/// The summary and the notes, then "wrote:" and one file a line.
impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        for n in self.summary.iter().chain(&self.notes) {
            writeln!(f, "{n}")?;
        }
        writeln!(f, "wrote:")?;
        for p in &self.files {
            writeln!(f, "  {}", p.display())?;
        }
        Ok(())
    }
}

/// The Touchstone file `stem.sNp` of `sp` (Err: why not, e.g. a port that was not driven).
pub fn write_touchstone(sp: &SParams, stem: &Path, comment: &str) -> anyhow::Result<PathBuf> {
    crate::analysis::touchstone::write(sp, stem, comment)
}

/// The |S| plot of `sp` with `design`'s goal masks.
pub fn write_sparams_plot(design: &Design, sp: &SParams, path: &Path, title: &str) -> anyhow::Result<PathBuf> {
    crate::plot::sparams::plot(path, sp, &masks(design), title)?;
    Ok(path.to_path_buf())
}

/// Touchstone (when the matrix is full), plot, time series and `fitness.json` into `dir`.
pub fn write_design_files(design: &Design, values: &BTreeMap<String, f64>, s: &Scored, dir: &Path) -> anyhow::Result<Written> {
    let mut w = Written::default();
    let params = parameter_list(values);
    let mut comment = format!("emvolve {}: {}\nparameters: {params}", env!("CARGO_PKG_VERSION"), design.name());
    if let Some(warning) = s.truncation_note() {
        comment.push_str(&format!("\n{warning}"));
    }
    match write_touchstone(&s.sparams, &dir.join(design.name()), &comment) {
        Ok(p) => w.files.push(p),
        Err(e) => w.notes.push(format!("no Touchstone file: {e}")),
    }
    let csv = dir.join("sparams.csv");
    std::fs::write(&csv, crate::analysis::sparams_csv::render(&s.sparams)).with_context(|| format!("writing {}", csv.display()))?;
    w.files.push(csv);
    let title = format!("{} ({params})", design.name());
    w.files.extend(crate::plot::write_rf_plots(dir, &s.sparams, &masks(design), &title)?);
    let (files, summary) = write_analysis_files(&s.sparams, dir)?;
    w.files.extend(files);
    w.summary.extend(summary);
    for (job, out) in s.jobs.iter().zip(&s.outputs) {
        let drive = job.ports.get(job.drive).map_or("?", |p| p.name.as_str());
        let path = dir.join(format!("timeseries_drive_{drive}.csv"));
        write_timeseries(&path, job, out)?;
        w.files.push(path);
    }
    if let Some(ff) = &s.far_field {
        w.files.extend(write_far_field(ff, dir, &format!("{} ({params})", design.name()))?);
    }
    let summary = dir.join("fitness.json");
    let json = serde_json::json!({ "design": design.name(), "parameters": values, "fitness": s.fitness, "runs": s.run_summary(), "decay": s.decay() });
    std::fs::write(&summary, serde_json::to_string_pretty(&json)?).with_context(|| format!("writing {}", summary.display()))?;
    w.files.push(summary);
    Ok(w)
}

/// `resonances.json` (always: an empty list says there is no clear
/// resonance) and, for two or more ports, `loss.csv` (the power balance of
/// each driven port) into `dir`. Returns the files and one line per
/// resonance for the terminal.
pub fn write_analysis_files(sp: &SParams, dir: &Path) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
    use crate::analysis::qfactor;
    let mut files = vec![];
    let found = qfactor::find(sp);
    let json = dir.join("resonances.json");
    let text = serde_json::to_string_pretty(&qfactor::to_json(sp, &found))?;
    crate::run::rundir::write_atomic(&json, text.as_bytes()).with_context(|| format!("writing {}", json.display()))?;
    files.push(json);
    if let Some(csv) = crate::analysis::power_balance::render_csv(sp) {
        let path = dir.join("loss.csv");
        crate::run::rundir::write_atomic(&path, csv.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
    }
    Ok((files, qfactor::summary_lines(sp, &found)))
}

/// The far-field files into `dir`: `farfield.csv` (the theta/phi grid at
/// every far-field frequency), `farfield.json` (directivity, gain, realised
/// gain, efficiency, beam, front-to-back per frequency) and one polar plot of
/// the E- and H-plane cuts per frequency, `pattern_2.4400GHz.png`.
pub fn write_far_field(ff: &crate::analysis::pattern::FarField, dir: &Path, title: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = vec![];
    let csv = dir.join("farfield.csv");
    std::fs::write(&csv, crate::analysis::pattern::render_csv(ff)).with_context(|| format!("writing {}", csv.display()))?;
    files.push(csv);
    let json = dir.join("farfield.json");
    let summaries: Vec<_> = (0..ff.patterns.len()).map(|fi| ff.summary(fi)).collect();
    std::fs::write(&json, serde_json::to_string_pretty(&serde_json::json!({ "grid_step_deg": ff.step_deg, "patterns": summaries }))?)
        .with_context(|| format!("writing {}", json.display()))?;
    files.push(json);
    for (fi, p) in ff.patterns.iter().enumerate() {
        let png = dir.join(format!("pattern_{:.4}GHz.png", p.freq / 1e9));
        crate::plot::pattern::plot(&png, ff, fi, &format!("Radiation pattern: {title}"))?;
        files.push(png);
    }
    Ok(files)
}

/// Port voltages and currents with their exact sample times, one row per step.
pub fn write_timeseries(path: &Path, job: &SimJob, out: &SimOutput) -> anyhow::Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut head = vec!["step".to_string(), "t_v_s".into()];
    head.extend(job.ports.iter().map(|p| format!("V_{}", p.name)));
    head.push("t_i_s".into());
    head.extend(job.ports.iter().map(|p| format!("I_{}", p.name)));
    writeln!(w, "{}", head.join(","))?;
    for n in 0..out.steps {
        // A trace shorter than the step count (an engine's fault) gives empty cells, not a panic.
        let at = |x: &[f64]| x.get(n).map_or(String::new(), |v| format!("{v:.9e}"));
        let mut row = vec![n.to_string(), format!("{:.6e}", (n as f64 + out.v_offset) * out.dt)];
        row.extend(out.traces.iter().map(|t| at(&t.v)));
        row.push(format!("{:.6e}", (n as f64 + out.i_offset) * out.dt));
        row.extend(out.traces.iter().map(|t| at(&t.i)));
        writeln!(w, "{}", row.join(","))?;
    }
    w.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
