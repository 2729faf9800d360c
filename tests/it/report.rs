//! `emvolve report` after a short real run: one self-contained HTML page whose
//! every image is an inline PNG that decodes, with the run's sections; headless
//! Chromium renders it with no console message (a page that logs one is caught,
//! so the check can fail). The per-generation snapshots and the best design's
//! RF plots the report shows are checked here too.

use crate::common::skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;

fn emvolve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve")).args(args).output().expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// Render `page` headless: (console lines, screenshot PNG bytes).
fn render(browser: &Path, page: &Path, shot: &Path) -> (Vec<String>, Vec<u8>) {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--log-level=0", "--hide-scrollbars", "--window-size=1400,2400"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let console = err.lines().filter(|l| l.contains(":CONSOLE")).map(String::from).collect();
    (console, std::fs::read(shot).unwrap_or_default())
}

/// Decode a PNG: (width, height, fraction of pixels that are not white).
fn decode(bytes: &[u8]) -> (u32, u32, f64) {
    let mut r = png::Decoder::new(bytes).read_info().expect("a PNG");
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).expect("PNG data");
    let ch = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let ink = px.chunks(ch).filter(|p| p.iter().take(3).any(|&c| c < 240)).count();
    (info.width, info.height, ink as f64 / (px.len() / ch) as f64)
}

#[test]
fn report_of_a_real_run_is_self_contained_and_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    // The iris filter (its uniform-mesh version) on a coarser mesh (16 cells across the guide, still above 15 per
    // wavelength at the top of the band): the run is what is tested here, not its accuracy.
    let text = std::fs::read_to_string("tests/fixtures/uniform/wr28_iris_filter.ron").unwrap();
    assert!(text.contains("cell: \"a/28\""));
    let design = tmp.path().join("wr28_iris_filter.ron");
    std::fs::write(&design, text.replace("cell: \"a/28\"", "cell: \"a/16\"")).unwrap();
    let design = design.to_str().unwrap();
    let (ok, text) = emvolve(&[
        "run", design, "--name", "r", "--population", "4", "--generations", "1", "--seed", "5", "--backend", "cpu", "--quiet",
        "--runs-dir", root,
    ]);
    assert!(ok, "{text}");
    let dir = tmp.path().join("r");
    for f in ["plots/generations/gen_0000.png", "plots/generations/gen_0001.png", "best/smith.png", "best/phase.png", "best/impedance.png", "best/sparams.csv", "best/loss.png"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // The resonances (a two-pole filter: its passband is no single circle, so
    // it may well have none that is clear) and the power balance of each driven
    // port, a lossless PEC filter's near zero above cutoff.
    let res: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("best/resonances.json")).unwrap()).unwrap();
    assert!(res["resonances"].is_array() && res["not_clear"].is_array() && res["method"].as_str().unwrap().contains("Kajfez"), "{res:#}");
    let loss = std::fs::read_to_string(dir.join("best/loss.csv")).unwrap();
    let mut lines = loss.lines();
    assert_eq!(lines.next(), Some("freq_hz,loss_in,loss_out"));
    let rows: Vec<Vec<f64>> = lines.map(|l| l.split(',').map(|c| c.parse().unwrap_or(f64::NAN)).collect()).collect();
    assert!(!rows.is_empty());
    let mid = &rows[rows.len() / 2];
    assert!(mid[1].abs() < 0.05 && mid[2].abs() < 0.05, "a lossless filter loses {mid:?}");
    // The saved best point re-simulates.
    let (ok, text) = emvolve(&[
        "simulate", design, "--backend", "cpu", "--params", dir.join("best/parameters.ron").to_str().unwrap(), "--out",
        tmp.path().join("again").to_str().unwrap(),
    ]);
    assert!(ok && !text.contains("midpoint"), "{text}");
    let (ok, text) = emvolve(&["report", dir.to_str().unwrap()]);
    assert!(ok, "{text}");
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for section in ["<h2>Run</h2>", "<h2>Goals</h2>", "<h2>Best design</h2>", "<h3>Resonances</h3>", "<h2>Optimisation</h2>", "<h2>Best design by generation</h2>", "<h2>History</h2>", "<h2>Settings</h2>"] {
        assert!(html.contains(section), "{section} missing");
    }
    assert!(html.contains("|S21| &gt; -1 dB over 31.0-32.1 GHz"));
    // Self-contained: every src is a data: URI, nothing refers to the network.
    let srcs: Vec<&str> = html.split("src=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).collect();
    assert!(srcs.len() >= 9, "{} images", srcs.len());
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script") && !html.contains("<link"));
    for s in srcs {
        let b64 = s.strip_prefix("data:image/png;base64,").expect("inline PNG");
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        let (w, h, ink) = decode(&bytes);
        assert!(w > 300 && h > 200 && ink > 0.01, "{w}x{h}, ink {ink}");
    }
    let Some(browser) = chromium() else {
        if std::env::var_os("EMVOLVE_REQUIRE_CHROMIUM").is_some() {
            panic!("EMVOLVE_REQUIRE_CHROMIUM is set but no chromium is on PATH");
        }
        skip::skipped("report_of_a_real_run_is_self_contained_and_renders (its headless render)", "no chromium on PATH (install Debian's `chromium`; .ci/run and scripts/report-check.sh do)");
        return;
    };
    // The check can fail: a page that logs to the console is caught.
    let bad = tmp.path().join("bad.html");
    std::fs::write(&bad, "<!DOCTYPE html><html><body><p>x</p><script>console.error('deliberate')</script></body></html>").unwrap();
    let (console, _) = render(&browser, &bad, &tmp.path().join("bad.png"));
    assert!(console.iter().any(|l| l.contains("deliberate")), "the console check sees nothing: {console:?}");
    let shot = std::env::var("EMVOLVE_REPORT_SCREENSHOT").map(PathBuf::from).unwrap_or_else(|_| tmp.path().join("report.png"));
    let (console, png) = render(&browser, &page, &shot);
    assert!(console.is_empty(), "console messages: {console:?}");
    let (w, h, ink) = decode(&png);
    assert_eq!((w, h), (1400, 2400));
    assert!(ink > 0.05, "the page looks blank (ink {ink})");
}
