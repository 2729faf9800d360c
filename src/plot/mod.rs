//! PNG plots (plotters, bitmap backend) with a shipped font, so they render
//! the same on a fresh machine without fontconfig or system fonts.

pub mod field_slice;
pub mod impedance;
pub mod loss;
pub mod phase;
pub mod smith;
pub mod mesh;
pub mod pattern;
pub mod sparams;
pub mod sweep;

use std::path::{Path, PathBuf};
use std::sync::Once;

static FONT: Once = Once::new();

/// Register the shipped DejaVu Sans as plotters' "sans-serif" (idempotent).
pub fn init_font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        for style in [plotters::style::FontStyle::Normal, plotters::style::FontStyle::Bold] {
            // Only fails on a malformed font file, which is shipped and tested.
            let _ = plotters::style::register_font("sans-serif", style, bytes);
        }
    });
}

/// Turn plotters' drawing errors into anyhow errors naming the file, by
/// their message (the cause, e.g. "No space left on device"), never their Debug form.
pub(crate) fn err<E: std::fmt::Display>(path: &std::path::Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {}", path.display(), drawing_cause(&e.to_string()))
}

/// plotters nests its errors and prints the innermost by its Debug form
/// ("Drawing backend error: ImageError(IoError(Os { .. message: \"No space
/// left on device\" }))"): keep the message that says what went wrong.
fn drawing_cause(text: &str) -> String {
    for key in ["message: \"", "error: \""] {
        if let Some(i) = text.find(key) {
            let rest = &text[i + key.len()..];
            if let Some(e) = rest.find('"') {
                return rest[..e].to_string();
            }
        }
    }
    if text.contains("Unsupported") {
        return "the image format is not supported: give the file a .png name".into();
    }
    let mut t = text.trim();
    for prefix in ["backend error:", "Drawing backend error:"] {
        while let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim_start();
        }
    }
    t.to_string()
}

/// Three significant digits, plain for everyday magnitudes: tick labels a
/// fraction of a decade apart on a log axis stay distinct.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !(1e-3..1e5).contains(&a) {
        return if v == 0.0 { "0".into() } else { format!("{v:.2e}") };
    }
    let d = (2 - a.log10().floor() as i32).max(0) as usize;
    format!("{v:.d$}")
}

/// The RF plots of one network into `dir`: `sparams.png` (|S| with the goal
/// masks), `phase.png` (phase and group delay), where some S_ii exists,
/// `smith.png` and `impedance.png`, and for two or more ports `loss.png` (the
/// power balance of each driven port). Returns the files written.
pub fn write_rf_plots(dir: &Path, sp: &crate::analysis::SParams, masks: &[sparams::Mask], title: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = vec![];
    let p = dir.join("sparams.png");
    sparams::plot(&p, sp, masks, &format!("|S|: {title}"))?;
    out.push(p);
    let p = dir.join("phase.png");
    phase::plot(&p, sp, &format!("Phase and group delay: {title}"))?;
    out.push(p);
    let p = dir.join("smith.png");
    if smith::plot(&p, sp, masks, &format!("Smith chart: {title}"))?.is_some() {
        out.push(p);
    }
    let p = dir.join("impedance.png");
    if impedance::plot(&p, sp, &format!("Input impedance: {title}"))?.is_some() {
        out.push(p);
    }
    let p = dir.join("loss.png");
    if loss::plot(&p, sp, &format!("Power balance: {title}"))?.is_some() {
        out.push(p);
    }
    Ok(out)
}

/// The chart of a per-frequency plot on `root`: `title` above, frequency in GHz
/// along x over `ghz`, `y` up with `y_desc`, the mesh drawn in the shared
/// style; errors name `path`.
pub(crate) fn freq_chart<'a, 'b>(
    root: &'a plotters::drawing::DrawingArea<plotters::prelude::BitMapBackend<'b>, plotters::coord::Shift>,
    title: &str,
    ghz: &[f64],
    y: std::ops::Range<f64>,
    y_desc: &str,
    path: &std::path::Path,
) -> anyhow::Result<
    plotters::chart::ChartContext<'a, plotters::prelude::BitMapBackend<'b>, plotters::coord::cartesian::Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>,
> {
    use plotters::prelude::*;
    let e = err(path);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(ghz[0]..ghz[ghz.len() - 1], y)
        .map_err(&e)?;
    chart.configure_mesh().x_desc("frequency (GHz)").y_desc(y_desc).label_style(("sans-serif", 15)).draw().map_err(&e)?;
    Ok(chart)
}

/// `(lo, hi)` padded so that a flat or single-point series still gets an axis.
pub(crate) fn padded_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.1 * lo.abs().max(1e-12) };
    Some((lo - pad, hi + pad))
}

#[cfg(test)]
mod tests {
    #[test]
    fn padded_range_handles_flat_and_empty_series() {
        assert_eq!(super::padded_range([].into_iter()), None);
        let (lo, hi) = super::padded_range([2.0, 2.0].into_iter()).unwrap();
        assert!(lo < 2.0 && hi > 2.0);
    }

    #[test]
    fn log_ticks_keep_three_digits() {
        assert_eq!(super::sig3(152.573), "153");
        assert_eq!(super::sig3(1.52573), "1.53");
        assert_eq!(super::sig3(0.0152573), "0.0153");
        assert_eq!(super::sig3(3.2e-7), "3.20e-7");
    }

    #[test]
    fn a_full_disk_is_told_by_its_cause_not_a_debug_dump() {
        // /dev/full fails every write with ENOSPC, as a full disk does; a
        // .png link to it keeps the file name a PNG's.
        if !std::path::Path::new("/dev/full").exists() {
            eprintln!("SKIP: no /dev/full here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("sparams.png");
        std::os::unix::fs::symlink("/dev/full", &png).unwrap();
        let sp = super::sparams::tests::filter_like();
        let e = super::sparams::plot(&png, &sp, &[], "t").unwrap_err().to_string();
        assert_eq!(e, format!("drawing {}: No space left on device (os error 28)", png.display()));
        let e = super::sparams::plot(std::path::Path::new("/dev/full"), &sp, &[], "t").unwrap_err().to_string();
        assert_eq!(e, "drawing /dev/full: the image format is not supported: give the file a .png name");
        assert!(!e.contains("BackendError") && !e.contains("Custom {") && !e.contains("DrawingError("), "{e}");
    }

    #[test]
    fn rf_plots_are_all_written() {
        let sp = super::sparams::tests::filter_like();
        let dir = tempfile::tempdir().unwrap();
        let files = super::write_rf_plots(dir.path(), &sp, &[], "filter").unwrap();
        let names: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        // A two-port: its power balance too.
        assert_eq!(names, ["sparams.png", "phase.png", "smith.png", "impedance.png", "loss.png"]);
        for f in files {
            let b = std::fs::read(&f).unwrap();
            assert!(b.starts_with(b"\x89PNG") && b.len() > 10_000, "{}", f.display());
        }
    }
}
