//! Connecting to the farm's NATS server (user and password from a credentials
//! file, TLS when the URL says `tls://` or a CA is given) and the JetStream
//! streams both sides declare: a file-stored work queue and a results stream.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use async_nats::jetstream::{self, consumer::pull, stream};

use super::wire::{MAX_RESULT_BYTES, MAX_WORK_BYTES};

/// The work queue: each message goes to one worker and is deleted once acked.
pub const WORK_STREAM: &str = "EMVOLVE_WORK";
/// Results, kept (file storage) until the run has checkpointed their generation.
pub const RESULTS_STREAM: &str = "EMVOLVE_RESULTS";
/// The one durable consumer every worker pulls from.
pub const WORKERS_CONSUMER: &str = "emvolve-workers";
/// Core NATS subject of the workers' heartbeats.
pub const HEARTBEAT_SUBJECT: &str = "emvolve.heartbeat";
/// De-duplication window of both streams (`Nats-Msg-Id`).
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);
/// Redelivery after this long without an ack or a progress note, unless `--ack-wait` says otherwise.
pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);

pub fn work_subject(run: &str, batch: &str) -> String {
    format!("emvolve.work.{run}.{batch}")
}

pub fn result_subject(run: &str, batch: &str) -> String {
    format!("emvolve.result.{run}.{batch}")
}

/// Where the farm's server is and how to log in.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `nats://HOST:4222` (or `tls://`).
    pub url: String,
    /// A file of `user = NAME` and `password = SECRET` lines.
    pub creds: Option<PathBuf>,
    /// A CA certificate (PEM) to trust for TLS; implies TLS.
    pub tls_ca: Option<PathBuf>,
}

/// User and password from a credentials file: `user = NAME` and
/// `password = SECRET` lines (`:` works as well as `=`; `#` starts a comment).
pub fn read_creds(path: &Path) -> anyhow::Result<(String, String)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the credentials file {}", path.display()))?;
    parse_creds(&text).with_context(|| format!("credentials file {}", path.display()))
}

fn parse_creds(text: &str) -> anyhow::Result<(String, String)> {
    let (mut user, mut password) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("-----BEGIN") {
            bail!("this is a NATS JWT/nkey .creds file; emvolve logs in with a user and password: write `user = NAME` and `password = SECRET` lines");
        }
        let Some((k, v)) = line.split_once(['=', ':']) else { bail!("line {}: expected `user = NAME` or `password = SECRET`", n + 1) };
        let v = v.trim().trim_matches('"').to_string();
        match k.trim() {
            "user" => user = Some(v),
            "password" => password = Some(v),
            other => bail!("line {}: unknown key `{other}` (expected user or password)", n + 1),
        }
    }
    match (user, password) {
        (Some(u), Some(p)) if !u.is_empty() && !p.is_empty() => Ok((u, p)),
        _ => bail!("needs both a `user = NAME` and a `password = SECRET` line"),
    }
}

/// Connect; `who` names this client to the server (it shows in its monitoring).
/// Reconnects are unlimited: a restarted server is waited for, and `say`
/// hears of each loss and return of the connection.
pub async fn connect(ep: &Endpoint, who: &str, say: super::Say) -> anyhow::Result<async_nats::Client> {
    let mut opts = async_nats::ConnectOptions::new().name(who).connection_timeout(Duration::from_secs(10)).max_reconnects(None);
    if let Some(c) = &ep.creds {
        let (u, p) = read_creds(c)?;
        opts = opts.user_and_password(u, p);
    }
    if let Some(ca) = &ep.tls_ca {
        opts = opts.add_root_certificates(ca.clone()).require_tls(true);
    }
    opts = opts.event_callback(move |e| {
        let say = say.clone();
        async move {
            match e {
                async_nats::Event::Disconnected => say("farm: connection to the NATS server lost; waiting for it to come back"),
                async_nats::Event::Connected => say("farm: connected to the NATS server"),
                async_nats::Event::ServerError(err) => say(&format!("farm: server error: {err}")),
                _ => {}
            }
        }
    });
    opts.connect(ep.url.as_str()).await.map_err(|e| {
        let hint = if e.to_string().to_lowercase().contains("authorization") {
            " (the server refuses these credentials: give --creds FILE with the farm's user and password)"
        } else {
            ""
        };
        anyhow::anyhow!("connecting to the farm's NATS server at {}: {e}{hint}", ep.url)
    })
}

/// The JetStream context with both streams declared (created if missing,
/// left as they are otherwise).
pub async fn streams(client: &async_nats::Client) -> anyhow::Result<(jetstream::Context, stream::Stream, stream::Stream)> {
    let js = jetstream::new(client.clone());
    let work = js
        .get_or_create_stream(stream::Config {
            name: WORK_STREAM.into(),
            subjects: vec!["emvolve.work.>".into()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            max_message_size: MAX_WORK_BYTES as i32,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        })
        .await
        .map_err(|e| anyhow::anyhow!("declaring the work stream {WORK_STREAM} (is JetStream on: nats-server -js?): {e}"))?;
    let results = js
        .get_or_create_stream(stream::Config {
            name: RESULTS_STREAM.into(),
            subjects: vec!["emvolve.result.>".into()],
            retention: stream::RetentionPolicy::Limits,
            storage: stream::StorageType::File,
            max_message_size: MAX_RESULT_BYTES as i32,
            duplicate_window: DUPLICATE_WINDOW,
            // Results a run never collected (it was abandoned) go after a week.
            max_age: Duration::from_secs(7 * 24 * 3600),
            ..Default::default()
        })
        .await
        .map_err(|e| anyhow::anyhow!("declaring the results stream {RESULTS_STREAM}: {e}"))?;
    Ok((js, work, results))
}

/// The workers' shared pull consumer (created with `ack_wait` if missing).
pub async fn workers_consumer(work: &stream::Stream, ack_wait: Duration) -> anyhow::Result<jetstream::consumer::Consumer<pull::Config>> {
    work.get_or_create_consumer(
        WORKERS_CONSUMER,
        pull::Config {
            durable_name: Some(WORKERS_CONSUMER.into()),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ack_wait,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("declaring the workers' consumer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_files_name_user_and_password_or_say_what_is_wrong() {
        assert_eq!(parse_creds("# farm\nuser = emvolve\npassword: \"s3cret\"\n").unwrap(), ("emvolve".into(), "s3cret".into()));
        assert!(parse_creds("user = a\n").unwrap_err().to_string().contains("password"));
        assert!(parse_creds("usr = a\npassword = b").unwrap_err().to_string().contains("unknown key `usr`"));
        assert!(parse_creds("-----BEGIN NATS USER JWT-----\n").unwrap_err().to_string().contains("user and password"));
    }
}
