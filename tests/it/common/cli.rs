//! Driving the `emvolve` binary as a user would, on the tiny fixture design:
//! spawning, signalling, reading its output as it comes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub const FIXTURE: &str = "tests/fixtures/tiny_iris.ron";

/// Lines of a child's output with their arrival times.
pub type Lines = Vec<(Instant, String)>;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_emvolve"))
}

/// Run to the end; (success, stdout + stderr).
pub fn emvolve(args: &[&str]) -> (bool, String) {
    let out = bin().args(args).output().expect("runs");
    (out.status.success(), text(&out))
}

/// The developers' program `emvolve-lab`, run to the end; (success, stdout + stderr).
pub fn lab(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve-lab")).args(args).output().expect("runs");
    (out.status.success(), text(&out))
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The fixture with another optimiser block (population, generations, stop rules) written into `dir`.
pub fn fixture(dir: &Path, name: &str, optimiser: &str) -> PathBuf {
    let t = std::fs::read_to_string(FIXTURE).unwrap();
    let start = t.find("optimiser:").unwrap();
    let end = start + t[start..].find('\n').unwrap();
    let t = format!("{}optimiser: {optimiser},{}", &t[..start], &t[end..]);
    let p = dir.join(format!("{name}.ron"));
    std::fs::write(&p, t.replace("name: \"tiny_iris\"", &format!("name: \"{name}\""))).unwrap();
    p
}

/// A child whose stdout and stderr lines arrive, with their arrival times, on channels.
pub struct Running {
    pub child: Child,
    pub out: Receiver<(Instant, String)>,
    pub err: Receiver<(Instant, String)>,
}

pub fn spawn(args: &[&str]) -> Running {
    let mut child = bin().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawns");
    let lines = |r: Box<dyn std::io::Read + Send>| {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                if tx.send((Instant::now(), l)).is_err() {
                    break;
                }
            }
        });
        rx
    };
    let out = lines(Box::new(child.stdout.take().unwrap()));
    let err = lines(Box::new(child.stderr.take().unwrap()));
    Running { child, out, err }
}

impl Running {
    /// Wait for a stdout line containing `needle` (panics after `limit`); lines before it are kept in `seen`.
    pub fn wait_for(&self, needle: &str, limit: Duration, seen: &mut Vec<String>) -> Instant {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok((t, l)) => {
                    let hit = l.contains(needle);
                    seen.push(l);
                    if hit {
                        return t;
                    }
                }
                Err(_) => panic!("no line with `{needle}` within {limit:?}; got:\n{}", seen.join("\n")),
            }
        }
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([&format!("-{sig}"), &self.child.id().to_string()]).status().unwrap().success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Wait for the exit; (status, remaining stdout lines, all stderr lines).
    pub fn finish(self) -> (std::process::ExitStatus, Vec<String>, Lines) {
        let (status, out, err) = self.finish_timed();
        (status, out.into_iter().map(|(_, l)| l).collect(), err)
    }

    /// [`Running::finish`] with the arrival time of every stdout line.
    pub fn finish_timed(mut self) -> (std::process::ExitStatus, Lines, Lines) {
        let status = self.child.wait().unwrap();
        // The reader threads end with the pipes.
        let out: Vec<(Instant, String)> = self.out.iter().collect();
        let err: Vec<(Instant, String)> = self.err.iter().collect();
        (status, out, err)
    }
}

/// history.csv without its timing columns (the surrogate's model time too)
/// and the farm's workers column.
pub fn history(dir: &Path) -> Vec<String> {
    use emvolve::run::observe::csv::{SCHEDULE_COLUMNS, TIMING_COLUMNS};
    let text = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keep: Vec<usize> = (0..head.len()).filter(|&i| !TIMING_COLUMNS.contains(&head[i]) && !SCHEDULE_COLUMNS.contains(&head[i])).collect();
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            keep.iter().map(|&i| c[i]).collect::<Vec<_>>().join(",")
        })
        .collect()
}
