//! The binary under signals, concurrent use and closed pipes, on the tiny
//! fixture design: SIGTERM and SIGHUP stop a run like Ctrl-C (acknowledged at
//! once, generation finished, checkpoint written, exit 130), a second signal
//! ends it at once, a run killed before its first generation starts over on
//! resume, the run directory's lock keeps a second writer out (inspect reads
//! anyway), and output into a closed pipe ends the process quietly.

use crate::common;

use std::os::fd::FromRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::*;
use emvolve::ga::TerminationReason;
use emvolve::run::checkpoint;

const LONG: Duration = Duration::from_secs(40);

/// SIGTERM (as `timeout` sends) and SIGHUP (a closed terminal) in the middle of
/// a generation: acknowledged at once, the generation completed, exit 130, and
/// the run resumes to the same end as a run never stopped.
#[test]
fn sigterm_and_sighup_finish_the_generation_and_resume_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    // Generations long enough that a signal lands inside one (the fast CPU
    // stepper evaluates the fixture at ~500 designs/s on 2 cores: ~1 s each).
    let design = fixture(tmp.path(), "sig", "Ga(population: 480, generations: 3, seed: 9, stop: (target: None, stagnation: None))");
    let design = design.to_str().unwrap();
    let t = Instant::now();
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "reference"]);
    assert!(ok, "{text}");
    // Into the next generation's batch: a third of a generation of the reference (4 of them), at most 300 ms.
    let into = (t.elapsed() / 12).clamp(Duration::from_millis(20), Duration::from_millis(300));
    let gen_of = |l: &str| l.strip_prefix("gen ")?.split('/').next()?.parse::<usize>().ok();
    for sig in ["TERM", "HUP"] {
        let name = format!("stopped-{sig}");
        let dir = tmp.path().join(&name);
        let r = spawn(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", &name]);
        let mut seen = vec![];
        r.wait_for("gen 0/3", LONG, &mut seen);
        std::thread::sleep(into);
        let sent = Instant::now();
        r.signal(sig);
        let (status, out, err) = r.finish_timed();
        let exited = Instant::now();
        let all = format!(
            "{}\n{}\n{}",
            seen.join("\n"),
            out.iter().map(|o| o.1.clone()).collect::<Vec<_>>().join("\n"),
            err.iter().map(|e| e.1.clone()).collect::<Vec<_>>().join("\n")
        );
        assert_eq!(status.code(), Some(130), "SIG{sig}: {all}");
        let ack = err.iter().find(|(_, l)| l.contains("signal received: the generation in flight will finish")).unwrap_or_else(|| panic!("no acknowledgement: {all}"));
        assert!(ack.0 - sent < Duration::from_millis(500), "SIG{sig} acknowledged only after {:?}", ack.0 - sent);
        assert!(ack.0 <= exited);
        // The resume hint once.
        assert_eq!(all.matches("continue with: emvolve resume").count(), 1, "{all}");
        // The generation in flight when the signal came was finished and checkpointed, and no other begun.
        let done_before = seen.iter().map(String::as_str).chain(out.iter().filter(|o| o.0 < sent).map(|o| o.1.as_str())).filter_map(gen_of).max().unwrap();
        let st = checkpoint::load(&dir).unwrap().state;
        assert_eq!(st.termination, Some(TerminationReason::Interrupted));
        assert!(st.generation == done_before || st.generation == done_before + 1, "generation {done_before} was done when the signal came, the run stopped at {}: {all}", st.generation);
        let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
        assert!(ok, "{text}");
        assert_eq!(history(&dir), history(&tmp.path().join("reference")), "SIG{sig}");
    }
}

/// A second signal ends the process at once, mid-generation; what is on disk
/// stays resumable (here: no generation was complete, so resume starts over).
#[test]
fn a_second_signal_stops_at_once_and_the_run_stays_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    // Generation 0 (which always runs) lasts a second or more: both signals land in it.
    let design = fixture(tmp.path(), "twice", "Ga(population: 480, generations: 1, seed: 2, stop: (target: None, stagnation: None))");
    let r = spawn(&["run", design.to_str().unwrap(), "--backend", "cpu", "--quiet", "--runs-dir", root]);
    let mut seen = vec![];
    r.wait_for("starting:", LONG, &mut seen);
    std::thread::sleep(Duration::from_millis(100));
    r.signal("TERM");
    std::thread::sleep(Duration::from_millis(50));
    let second = Instant::now();
    r.signal("INT");
    let (status, out, err) = r.finish();
    let stopped = second.elapsed();
    let err: Vec<String> = err.into_iter().map(|e| e.1).collect();
    assert_eq!(status.code(), Some(130), "{err:?}");
    assert!(err.iter().any(|l| l.contains("second signal: stopping now")), "{err:?}");
    assert!(!out.iter().any(|l| l.starts_with("gen 0/")), "generation 0 ended before the second signal; the test needs it not to: {out:?}");
    assert!(stopped < Duration::from_millis(1000), "the second signal took {stopped:?} to end the process");
    let dir = tmp.path().join("twice");
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
    assert!(ok && text.contains("starting it over") && text.contains("stopped after generation 1"), "{text}");
}

/// Killed before any generation was complete: `resume` starts over from the saved settings and says so.
#[test]
fn a_run_killed_in_generation_zero_starts_over_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    // Generation 0 long enough (~0.5 s) that the kill lands in it.
    let design = fixture(tmp.path(), "zero", "Ga(population: 240, generations: 1, seed: 4, stop: (target: None, stagnation: None))");
    let mut r = spawn(&["run", design.to_str().unwrap(), "--backend", "cpu", "--quiet", "--runs-dir", root]);
    let mut seen = vec![];
    r.wait_for("starting:", LONG, &mut seen);
    r.child.kill().unwrap();
    let (status, out, _) = r.finish();
    assert_eq!(status.signal(), Some(9));
    assert!(!out.iter().any(|l| l.contains("gen 0/")), "generation 0 completed before the kill; the test needs it not to: {out:?}");
    let dir = tmp.path().join("zero");
    assert!(dir.join("settings.ron").exists() && !dir.join("checkpoint.ron").exists());
    // `run` again is refused (nothing is overwritten) and points to resume.
    let (ok, text) = emvolve(&["run", design.to_str().unwrap(), "--backend", "cpu", "--quiet", "--runs-dir", root]);
    assert!(!ok && text.contains("emvolve resume"), "{text}");
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    assert!(text.contains("no generation was completed before the run stopped: starting it over from generation 0"), "{text}");
    assert_eq!(history(&dir).len(), 2);
}

/// Two writers never share a run directory: a second `resume` or a `run --force`
/// is refused with the holder's PID while a run goes on; `inspect` reads anyway.
#[test]
fn the_run_directory_lock_names_its_holder_and_inspect_reads_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let design = fixture(tmp.path(), "locked", "Ga(population: 24, generations: 40, seed: 3, stop: (target: None, stagnation: None))");
    let design = design.to_str().unwrap();
    let mut r = spawn(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root]);
    let mut seen = vec![];
    r.wait_for("gen 0/40", LONG, &mut seen);
    let dir = tmp.path().join("locked");
    let pid = r.child.id();
    let holder = format!("in use by process {pid}");
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
    assert!(!ok && text.contains(&holder) && text.contains("run.lock"), "{text}");
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--force"]);
    assert!(!ok && text.contains(&holder), "{text}");
    let (ok, text) = emvolve(&["inspect", dir.to_str().unwrap(), "--no-simulate", "--top", "1"]);
    assert!(ok && text.contains("#1 fitness"), "{text}");
    r.child.kill().unwrap();
    let _ = r.finish();
    // The lock died with its holder.
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--backend", "cpu", "--quiet", "--generations", "1"]);
    assert!(ok, "{text}");
}

/// `inspect --json | head`, `simulate | head`, `run | head`: the process ends
/// by SIGPIPE, quietly (no panic message), as other tools do; a run so ended
/// resumes.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let design = fixture(tmp.path(), "pipe", "Ga(population: 6, generations: 2, seed: 1, stop: (target: None, stagnation: None))");
    let design = design.to_str().unwrap();
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root]);
    assert!(ok, "{text}");
    let dir = tmp.path().join("pipe");
    let out = tmp.path().join("sim");
    let cases: [Vec<&str>; 2] = [
        vec!["inspect", dir.to_str().unwrap(), "--json", "--no-simulate"],
        vec!["simulate", design, "--backend", "cpu", "--out", out.to_str().unwrap()],
    ];
    for args in cases {
        // A pipe whose reading end is closed before the child starts, so the
        // first write fails whatever the scheduling (a race under load otherwise).
        let mut fds = [0i32; 2];
        // SAFETY: `fds` holds two ints for pipe(2) to fill; the read end is
        // closed at once and the write end handed to the child's stdout alone.
        let stdout = unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            libc::close(fds[0]);
            Stdio::from_raw_fd(fds[1])
        };
        let child = bin().args(&args).stdout(stdout).stderr(Stdio::piped()).spawn().unwrap();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{args:?}: {:?} {err}", o.status);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
    }
    // `run | head -3`: the reader goes away mid-run; the run ends at its next
    // line (after a checkpoint) and resumes.
    let mut child = bin()
        .args(["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "piped"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut head = vec![];
    while let Some(Ok(l)) = lines.next() {
        let start = l.starts_with("starting:");
        head.push(l);
        if start {
            break;
        }
    }
    drop(lines);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{head:?} {:?} {err}", o.status);
    assert!(!err.contains("panicked"), "{err}");
    let piped = tmp.path().join("piped");
    let (ok, text) = emvolve(&["resume", piped.to_str().unwrap(), "--backend", "cpu", "--quiet"]);
    assert!(ok && text.contains("stopped after generation 2"), "{text}");
    assert_eq!(history(&piped), history(&dir));
}
