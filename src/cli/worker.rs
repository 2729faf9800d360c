//! `emvolve worker`: serve a farm's work queue with this host's backend (see
//! [`crate::farm::worker`]). SIGTERM or Ctrl-C: the batch in hand finishes
//! and is acked (or handed back), then the worker exits; a second signal ends
//! it at once, and the server redelivers what it held.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::args::backend;
use crate::engine::select::BackendChoice;
use crate::farm::worker::{default_name, serve, WorkerOptions};
use crate::farm::{Endpoint, Say};

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The farm's NATS server, e.g. nats://HOST:4222 (tls://HOST:4222 for TLS).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// A file of `user = NAME` and `password = SECRET` lines for the server.
    #[arg(long, value_name = "FILE")]
    pub creds: Option<PathBuf>,
    /// A CA certificate (PEM) to trust; the connection then requires TLS.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// GPUs to use: `all` or a list such as `0,1`.
    #[arg(long, default_value = "all")]
    pub gpus: String,
    /// This worker's name in the run's progress and history (default: HOST-PID).
    #[arg(long)]
    pub name: Option<String>,
    /// Seconds without an ack or progress note before the server hands a
    /// message to another worker (used if this worker is the first to declare the queue).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub ack_wait: f64,
}

pub fn run(a: WorkerArgs) -> anyhow::Result<i32> {
    let ack_wait = seconds(a.ack_wait)?;
    let backend = backend(a.backend, &a.gpus, &mut |s| println!("{s}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            eprintln!("worker: second signal: exiting now (the server redelivers what this worker held)");
            std::process::exit(130);
        }
        eprintln!("worker: signal received: finishing the batch in hand, then exiting (signal again to exit at once)");
    });
    let say: Say = Arc::new(|l: &str| println!("{l}"));
    let opts = WorkerOptions {
        endpoint: Endpoint { url: a.nats, creds: a.creds, tls_ca: a.tls_ca },
        name: a.name.unwrap_or_else(default_name),
        ack_wait,
        backend: Arc::from(backend),
        stop,
        say,
    };
    serve(opts)?;
    Ok(0)
}

/// A positive number of seconds from the command line.
pub fn seconds(s: f64) -> anyhow::Result<Duration> {
    anyhow::ensure!(s.is_finite() && s >= 0.1 && s <= 86_400.0, "--ack-wait {s}: give seconds between 0.1 and 86400");
    Ok(Duration::from_secs_f64(s))
}
