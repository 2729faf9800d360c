//! The run report: one self-contained HTML page (inline CSS, PNGs as data:
//! URIs, no script, nothing fetched) with the design, the goals and how the
//! best design meets them, its parameters, resonances with their Q, RF plots
//! and power balance (and radiation patterns),
//! the fitness history and
//! parameter trajectories, snapshots of the best design by generation, and the
//! run's settings and timing. It reads only the run directory; where `best/`
//! has a Touchstone file but no plots (an older run), the plots are drawn from it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::Engine as _;

use crate::design::Design;
use crate::ga::problem::PENALTY;
use crate::run::checkpoint;
use crate::run::inspect::inspect_state;

/// Most generation snapshots shown (evenly spaced, first and last included).
const MAX_SNAPSHOTS: usize = 12;

/// HTML-escape text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// `<img>` of a PNG file, inlined; `None` when the file is absent.
fn img(path: &Path, alt: &str, class: &str) -> anyhow::Result<Option<String>> {
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        anyhow::bail!("{} is not a PNG file", path.display());
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(Some(format!("<img class=\"{class}\" alt=\"{}\" src=\"data:image/png;base64,{b64}\">", esc(alt))))
}

fn num(v: f64) -> String {
    if v >= PENALTY {
        "none".into()
    } else if v == 0.0 || (1e-3..1e5).contains(&v.abs()) {
        crate::numfmt::short(v)
    } else {
        format!("{v:.3e}")
    }
}

/// Draw the best design's RF plots, and find its resonances and power
/// balance, from its Touchstone file where `best/` has none (an older run).
fn fill_best_plots(dir: &Path, design: &Design) -> anyhow::Result<()> {
    let best = dir.join("best");
    let plots = !best.join("smith.png").is_file();
    let analysis = !best.join("resonances.json").is_file();
    if !(plots || analysis) || !best.is_dir() {
        return Ok(());
    }
    let ts = best.join(format!("{}.s{}p", design.name(), design.port_names().len()));
    if !ts.is_file() {
        return Ok(());
    }
    let sp = crate::analysis::touchstone_read::read(&ts).map_err(anyhow::Error::msg)?.to_sparams();
    let title = format!("{} best", design.name());
    if plots {
        crate::plot::write_rf_plots(&best, &sp, &crate::plot::sparams::masks(design), &title)?;
    } else {
        crate::plot::loss::plot(&best.join("loss.png"), &sp, &format!("Power balance: {title}"))?;
    }
    if analysis {
        crate::outputs::write_analysis_files(&sp, &best)?;
    }
    Ok(())
}

/// The best design's resonances (`best/resonances.json`): a table of the
/// clear ones, a list of those seen but not clear; nothing without the file.
fn resonances(h: &mut String, dir: &Path) -> anyhow::Result<()> {
    use crate::analysis::qfactor::{round3, NotClear, Resonance};
    let path = dir.join("best").join("resonances.json");
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(()) };
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    let found: Vec<Resonance> = serde_json::from_value(v["resonances"].clone()).with_context(|| format!("reading the resonances of {}", path.display()))?;
    let unclear: Vec<NotClear> = serde_json::from_value(v["not_clear"].clone()).unwrap_or_default();
    let ports: Vec<String> = serde_json::from_value(v["ports"].clone()).unwrap_or_default();
    let port = |i: usize| ports.get(i).cloned().unwrap_or_else(|| format!("{}", i + 1));
    h.push_str("<h3>Resonances</h3>\n");
    if found.is_empty() {
        h.push_str("<p>No clear resonance in the band.</p>\n");
    } else {
        h.push_str("<table class=\"num\">\n<tr><th>f<sub>0</sub> (GHz)</th><th>loaded Q</th><th>unloaded Q</th><th>coupling &beta; per port</th><th>port driven</th><th>points in half-power width</th><th>fit residual</th></tr>\n");
        for r in &found {
            let q0 = r.q_unloaded.map_or_else(|| esc(r.note.as_deref().unwrap_or("not resolved")), |q| num(round3(q)));
            let beta = r.coupling.as_ref().map_or(String::new(), |c| {
                c.iter().enumerate().map(|(i, b)| format!("{} {}", esc(&port(i)), num(round3(*b)))).collect::<Vec<_>>().join(", ")
            });
            let _ = writeln!(
                h,
                "<tr><td>{:.4}</td><td>{}</td><td>{q0}</td><td>{beta}</td><td>{}</td><td>{}</td><td>{:.2} %</td></tr>",
                r.f0_hz / 1e9,
                num(round3(r.q_loaded)),
                esc(&port(r.drive - 1)),
                r.points_in_width,
                100.0 * r.residual
            );
        }
        h.push_str("</table>\n");
    }
    if !unclear.is_empty() {
        h.push_str("<p>Seen but not clear enough for a Q:</p>\n<ul>\n");
        for u in &unclear {
            let _ = writeln!(h, "<li>near {:.4} GHz ({} driven): {}</li>", u.near_hz / 1e9, esc(&port(u.drive - 1)), esc(&u.why));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<p class=\"note\">Loaded Q and f<sub>0</sub> from a fit of the Q-circle of each driven column of S (Kajfez 1994; NPL MAT 58); unloaded Q = Q<sub>L</sub> / (1 &minus; &Sigma;<sub>i</sub> d<sub>ii</sub>/2) from the circles' diameters. A resonance is listed where at least 5 sweep points fall in its half-power width, its half-power band lies in the sweep and the fit residual is at most 2 % of the circle (README, \"Resonances and Q\").</p>\n");
    Ok(())
}

/// The report's HTML for the run in `dir`.
pub fn render(dir: &Path) -> anyhow::Result<String> {
    let design = Design::load(&dir.join("design.ron"))?;
    let settings_path = dir.join("settings.ron");
    let settings = std::fs::read_to_string(&settings_path).unwrap_or_else(|_| "(no settings.ron)".into());
    let loaded = checkpoint::load(dir)?;
    let state = &loaded.state;
    fill_best_plots(dir, &design)?;
    let ins = inspect_state(state, 1);
    let units = design.file().units.symbol();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>emvolve report: {}</title>\n<style>{}</style>\n</head>\n<body>\n",
        esc(design.name()),
        CSS
    );
    let _ = writeln!(h, "<h1>{}</h1>\n<p class=\"lead\">{}</p>", esc(design.name()), esc(design.description()));
    if let Some(w) = &loaded.warning {
        let _ = writeln!(h, "<p class=\"warn\">warning: {}</p>", esc(w));
    }
    // The run at a glance.
    let status = state.termination.map_or("running, or interrupted (resume continues it)".to_string(), |t| format!("stopped: {t}"));
    let eval_s: f64 = state.history.iter().map(|s| s.evaluation_seconds).sum();
    let cps: Vec<f64> = state.history.iter().filter_map(|s| s.cells_per_second).collect();
    let mean_cps = if cps.is_empty() { None } else { Some(cps.iter().sum::<f64>() / cps.len() as f64) };
    h.push_str("<h2>Run</h2>\n<table class=\"kv\">\n");
    let ga = &state.settings;
    let rows: Vec<(&str, String)> = vec![
        ("run directory", dir.display().to_string()),
        ("status", status),
        ("optimiser", ga.method.name().to_string()),
        ("generations", format!("{} (population {}, seed {})", state.generation, ga.population, ga.seed)),
        ("designs simulated", format!("{}, {}", state.evaluations, crate::run::inspect::failures_line(state.failures.len(), &crate::run::inspect::failure_kinds(state)))),
        ("objectives", design.objective_labels().join(", ")),
        ("run time", format!("{:.1} s in all, {:.1} s simulating ({:.2} designs/s)", state.elapsed_seconds, eval_s, state.evaluations as f64 / eval_s.max(1e-9))),
        ("surrogate model", {
            let m: Vec<f64> = state.history.iter().filter_map(|s| s.model_seconds).collect();
            if m.is_empty() { "not used".to_string() } else { format!("{:.1} s fitting and prescreening over {} generations", m.iter().sum::<f64>(), m.len()) }
        }),
        ("engine throughput", mean_cps.map_or("not recorded".into(), |c| format!("{:.1} Mcells/s (mean over generations)", c / 1e6))),
    ];
    for (k, v) in rows {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    h.push_str("</table>\n");
    // Goals, with the best design's result on each.
    let best = ins.designs.first();
    let per_goal = best.map(|d| d.extra.goals.clone()).unwrap_or_default();
    h.push_str("<h2>Goals</h2>\n<table>\n<tr><th>#</th><th>goal</th><th>weight</th><th>best design</th><th>worst point</th><th>violation (dB&sup2;)</th></tr>\n");
    for (k, g) in design.goals().iter().enumerate() {
        let r = per_goal.get(k);
        let v = r.map(|r| r.violation);
        let (state_txt, class) = match v {
            Some(v) if v == 0.0 => ("met", "ok"),
            Some(_) => ("missed", "bad"),
            None => ("not simulated", ""),
        };
        let worst = r
            .map(|r| format!("{:.2} {} at {:.4} GHz", r.worst_db, r.unit, r.worst_freq_hz / 1e9))
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{state_txt}</td><td>{}</td><td>{}</td></tr>",
            k + 1,
            esc(&g.label()),
            num(g.weight),
            esc(&worst),
            v.map(num).unwrap_or_default()
        );
    }
    h.push_str("</table>\n");
    // The best design.
    h.push_str("<h2>Best design</h2>\n");
    match best {
        Some(d) => {
            let obj: Vec<String> = d.objectives.iter().map(|o| num(*o)).collect();
            let _ = writeln!(h, "<p>objectives: {} (fitness in dB&sup2;, 0 when every goal is met)</p>", esc(&obj.join(" / ")));
            h.push_str("<table>\n<tr><th>parameter</th><th>value</th><th>range</th></tr>\n");
            for (g, v) in state.genes.iter().zip(&d.genome) {
                let (lo, hi) = g.bounds();
                let _ = writeln!(h, "<tr><td>{}</td><td>{} {units}</td><td>{} to {} {units}</td></tr>", esc(g.name()), crate::numfmt::short(*v), num(lo), num(hi));
            }
            h.push_str("</table>\n");
        }
        None => h.push_str("<p>No design has been simulated successfully yet.</p>\n"),
    }
    resonances(&mut h, dir)?;
    h.push_str("<div class=\"grid\">\n");
    for (file, alt) in [
        ("sparams.png", "|S| of the best design with the goal masks"),
        ("loss.png", "power balance: the lost fraction 1 - \u{3a3}_i |S_ij|\u{b2} of the power incident at each driven port"),
        ("smith.png", "Smith chart"),
        ("impedance.png", "input impedance"),
        ("phase.png", "phase and group delay"),
    ] {
        if let Some(tag) = img(&dir.join("best").join(file), alt, "plot")? {
            let _ = writeln!(h, "<figure>{tag}<figcaption>{}</figcaption></figure>", esc(alt));
        }
    }
    // Radiation patterns (designs with a far field), in frequency order.
    let mut patterns: Vec<PathBuf> = match std::fs::read_dir(dir.join("best")) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("pattern_") && n.ends_with("GHz.png")))
            .collect(),
        Err(_) => vec![],
    };
    patterns.sort_by(|a, b| {
        let f = |p: &Path| p.file_name().and_then(|n| n.to_str()).and_then(|n| n["pattern_".len()..n.len() - "GHz.png".len()].parse::<f64>().ok()).unwrap_or(0.0);
        f(a).total_cmp(&f(b))
    });
    for p in patterns {
        let alt = "radiation pattern (E- and H-plane)";
        if let Some(tag) = img(&p, alt, "plot")? {
            let _ = writeln!(h, "<figure>{tag}<figcaption>{}</figcaption></figure>", esc(alt));
        }
    }
    h.push_str("</div>\n");
    // The optimisation.
    h.push_str("<h2>Optimisation</h2>\n<div class=\"grid\">\n");
    for (file, alt) in [("fitness.png", "fitness history"), ("parameters.png", "parameter trajectories"), ("pareto.png", "Pareto front")] {
        if let Some(tag) = img(&dir.join("plots").join(file), alt, "plot")? {
            let _ = writeln!(h, "<figure>{tag}<figcaption>{}</figcaption></figure>", esc(alt));
        }
    }
    h.push_str("</div>\n");
    snapshots(&mut h, dir)?;
    history(&mut h, state, &design);
    let _ = writeln!(h, "<h2>Settings</h2>\n<pre>{}</pre>", esc(&settings));
    let _ = writeln!(h, "<details><summary>design file ({})</summary>\n<pre>{}</pre></details>", esc(design.origin()), esc(design.text()));
    let _ = writeln!(h, "<footer>emvolve {}: report of {}</footer>\n</body>\n</html>", env!("CARGO_PKG_VERSION"), esc(&loaded.path.display().to_string()));
    Ok(h)
}

/// Thumbnails of `plots/generations/gen_NNNN.png`, evenly spaced.
fn snapshots(h: &mut String, dir: &Path) -> anyhow::Result<()> {
    let gdir = dir.join(crate::optimise::GENERATIONS_DIR);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&gdir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "png")).collect(),
        Err(_) => return Ok(()),
    };
    files.sort();
    if files.is_empty() {
        return Ok(());
    }
    let n = files.len();
    let picks: Vec<usize> = if n <= MAX_SNAPSHOTS { (0..n).collect() } else { (0..MAX_SNAPSHOTS).map(|i| i * (n - 1) / (MAX_SNAPSHOTS - 1)).collect() };
    let _ = writeln!(h, "<h2>Best design by generation</h2>\n<p>{} of {n} snapshots in {}</p>\n<div class=\"thumbs\">", picks.len(), esc(&gdir.display().to_string()));
    for i in picks {
        let name = files[i].file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(tag) = img(&files[i], &name, "thumb")? {
            let _ = writeln!(h, "<figure>{tag}<figcaption>{}</figcaption></figure>", esc(&name));
        }
    }
    h.push_str("</div>\n");
    Ok(())
}

/// Per-generation table: best and mean objectives, feasibility and timing.
fn history(h: &mut String, state: &crate::ga::state::GaState, design: &Design) {
    let labels = design.objective_labels();
    h.push_str("<h2>History</h2>\n<table class=\"num\">\n<tr><th>generation</th><th>designs</th><th>new</th><th>failed</th>");
    for l in &labels {
        let _ = write!(h, "<th>best {}</th><th>mean {}</th>", esc(l), esc(l));
    }
    h.push_str("<th>wall (s)</th><th>simulating (s)</th><th>Mcells/s</th></tr>\n");
    for s in &state.history {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", s.generation, s.evaluations, s.new_evaluations, s.failures);
        for k in 0..labels.len().max(1) {
            let b = s.best.get(k).map_or(String::new(), |v| num(*v));
            let m = s.mean.get(k).copied().flatten().map_or("none".into(), num);
            let _ = write!(h, "<td>{b}</td><td>{m}</td>");
        }
        let _ = writeln!(
            h,
            "<td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
            s.wall_seconds,
            s.evaluation_seconds,
            s.cells_per_second.map_or(String::new(), |c| format!("{:.1}", c / 1e6))
        );
    }
    h.push_str("</table>\n");
}

/// Write the report of the run in `dir` to `out` (default `dir/report.html`).
pub fn write(dir: &Path, out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let html = render(dir)?;
    let path = out.map(Path::to_path_buf).unwrap_or_else(|| dir.join("report.html"));
    crate::run::rundir::write_atomic(&path, html.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

const CSS: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;max-width:1400px;margin:24px auto;padding:0 16px;color:#222}\
h1{margin-bottom:4px}h2{border-bottom:2px solid #1f77b4;padding-bottom:4px;margin-top:32px}\
.lead{color:#555;margin-top:0}.warn{color:#b00}.note{color:#555;font-size:13px}\
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:4px 10px;text-align:left}\
th{background:#f0f4f8}table.kv th{width:200px}table.num td{text-align:right}\
td.ok{color:#1a7f1a;font-weight:bold}td.bad{color:#c01010;font-weight:bold}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px}\
.thumbs{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}\
figure{margin:0}img.plot,img.thumb{width:100%;height:auto;border:1px solid #ddd}\
figcaption{font-size:13px;color:#555;text-align:center}\
pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;overflow-x:auto;font-size:13px}\
footer{margin-top:32px;color:#888;font-size:12px}";
