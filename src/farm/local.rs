//! `--farm-local N`: N worker processes of this same program on this host,
//! for trying the farm without a second machine. They are ordinary workers
//! (`emvolve worker --backend cpu`) and are stopped with SIGTERM when the run
//! ends, each finishing what it holds.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::Endpoint;

/// The worker processes; dropping this stops them.
pub struct LocalWorkers {
    children: Vec<Child>,
}

impl LocalWorkers {
    /// Start `n` CPU workers named `local-<pid>-<k>`, their output in `log_dir/farm-local-<k>.log`.
    pub fn start(n: usize, ep: &Endpoint, ack_wait: Duration, log_dir: &std::path::Path) -> anyhow::Result<LocalWorkers> {
        let exe = std::env::current_exe().context("finding this program to start local workers")?;
        let mut w = LocalWorkers { children: Vec::new() };
        for k in 0..n {
            let log = log_dir.join(format!("farm-local-{k}.log"));
            let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
            let err = out.try_clone()?;
            let mut cmd = Command::new(&exe);
            cmd.args(["worker", "--nats", &ep.url, "--backend", "cpu", "--ack-wait", &ack_wait.as_secs_f64().to_string()]);
            cmd.args(["--name", &format!("local-{}-{k}", std::process::id())]);
            if let Some(c) = &ep.creds {
                cmd.arg("--creds").arg(c);
            }
            if let Some(c) = &ep.tls_ca {
                cmd.arg("--tls-ca").arg(c);
            }
            let child = cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn().context("starting a local worker")?;
            w.children.push(child);
        }
        Ok(w)
    }
}

impl Drop for LocalWorkers {
    fn drop(&mut self) {
        for c in &self.children {
            // SAFETY: kill(2) on the id of a child this process started and has not reaped.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        let until = Instant::now() + Duration::from_secs(20);
        for c in &mut self.children {
            while Instant::now() < until && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
