//! PNG plots (plotters, bitmap backend) with a shipped font, so they render
//! the same on a fresh machine without fontconfig or system fonts.

pub mod mesh;
pub mod sparams;

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

/// Turn plotters' drawing errors into anyhow errors naming the file.
pub(crate) fn err<E: std::fmt::Debug>(path: &std::path::Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", path.display())
}
