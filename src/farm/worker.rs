//! `emvolve worker`: pulls work messages from the farm's queue one at a time,
//! simulates each message's candidates as one batch on its own backend,
//! publishes the results and acks the message only once the results stream
//! has stored them. A worker that dies before its ack loses nothing: the
//! server redelivers the message after the ack wait. Long batches send
//! progress acks so they are not redelivered while still running.
//!
//! Every message is untrusted: it is size-checked and parsed by
//! [`super::wire`], its design parsed and checked by the design's own parser
//! and each candidate's values by `jobs`, exactly as `emvolve simulate` does.
//! A message that cannot be understood is terminated (never redelivered) with
//! the reason logged, and the worker goes on serving.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, AckKind};
use futures_util::StreamExt as _;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::conn::{self, Endpoint, HEARTBEAT_SUBJECT};
use super::wire::{self, Item, Outcome, Results, Work, MAX_RESULT_BYTES, PROTOCOL};
use super::{Heartbeat, Say};
use crate::design::Design;
use crate::engine::{Backend, RunCtx};
use crate::evaluate::{score, simulate_batch, CandidateFailure, Request};

/// How a worker runs.
pub struct WorkerOptions {
    pub endpoint: Endpoint,
    /// Its name in results, heartbeats and the run's history (a subject token).
    pub name: String,
    /// The consumer's ack wait, used when this worker is the first to declare it.
    pub ack_wait: Duration,
    pub backend: Arc<dyn Backend>,
    /// Set by SIGTERM/SIGINT: finish (or nak) the message held, then leave.
    pub stop: Arc<AtomicBool>,
    pub say: Say,
}

/// What a worker did before it stopped.
#[derive(Debug, Default, Clone, Copy)]
pub struct WorkerSummary {
    pub messages: usize,
    pub candidates: usize,
    pub refused: usize,
}

/// A default worker name: host and process id.
pub fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_else(|_| "host".into());
    let host: String = host.trim().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).take(40).collect();
    format!("{host}-{}", std::process::id())
}

/// Serve until stopped. Its own tokio runtime: the rest of the program stays synchronous.
pub fn serve(opts: WorkerOptions) -> anyhow::Result<WorkerSummary> {
    if !wire::valid_token(&opts.name) {
        anyhow::bail!("--name `{}`: use letters, digits, `-` and `_` only (at most {} characters)", opts.name, wire::MAX_TOKEN);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(serve_async(opts))
}

async fn serve_async(opts: WorkerOptions) -> anyhow::Result<WorkerSummary> {
    let client = conn::connect(&opts.endpoint, &format!("emvolve worker {}", opts.name), opts.say.clone()).await?;
    let (js, work, _) = conn::streams(&client).await?;
    let consumer = conn::workers_consumer(&work, opts.ack_wait).await?;
    let ack_wait = consumer.cached_info().config.ack_wait;
    (opts.say)(&format!(
        "worker {} ({}) serving {} (ack wait {:.0} s); stop with Ctrl-C or SIGTERM",
        opts.name,
        opts.backend.name(),
        opts.endpoint.url,
        ack_wait.as_secs_f64()
    ));
    let done = Arc::new(AtomicUsize::new(0));
    let busy = Arc::new(AtomicBool::new(false));
    let beat = tokio::spawn(heartbeats(client.clone(), opts.name.clone(), opts.backend.name(), done.clone(), busy.clone()));
    let mut designs: HashMap<String, Arc<Design>> = HashMap::new();
    let mut summary = WorkerSummary::default();
    while !opts.stop.load(Ordering::SeqCst) {
        let mut batch = match consumer.fetch().max_messages(1).expires(Duration::from_secs(1)).messages().await {
            Ok(b) => b,
            Err(e) => {
                (opts.say)(&format!("worker {}: fetching work: {e}; retrying", opts.name));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(m) = batch.next().await {
            let msg = match m {
                Ok(m) => m,
                Err(e) => {
                    // A fetch that expired or was cut by a reconnect: ask again.
                    if !e.to_string().contains("timed out") {
                        (opts.say)(&format!("worker {}: receiving work: {e}", opts.name));
                    }
                    continue;
                }
            };
            if opts.stop.load(Ordering::SeqCst) {
                // Stopping: what is held goes back to the queue at once.
                let _ = msg.ack_with(AckKind::Nak(None)).await;
                break;
            }
            busy.store(true, Ordering::Relaxed);
            let n = handle(&opts, &js, &msg, ack_wait, &mut designs, &mut summary).await;
            busy.store(false, Ordering::Relaxed);
            done.fetch_add(n, Ordering::Relaxed);
        }
    }
    beat.abort();
    let _ = client.flush().await;
    (opts.say)(&format!(
        "worker {} stopped: {} messages, {} candidates simulated, {} messages refused",
        opts.name, summary.messages, summary.candidates, summary.refused
    ));
    Ok(summary)
}

/// Publish who this worker is every two seconds (core NATS: lost beats are fine).
async fn heartbeats(client: async_nats::Client, name: String, backend: String, done: Arc<AtomicUsize>, busy: Arc<AtomicBool>) {
    loop {
        let hb = Heartbeat { worker: name.clone(), backend: backend.clone(), done: done.load(Ordering::Relaxed), busy: busy.load(Ordering::Relaxed) };
        let _ = client.publish(HEARTBEAT_SUBJECT, hb.encode().into()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// One message: refuse it (term, with the reason logged), or simulate, store the
/// results and ack. Returns the number of candidates simulated.
async fn handle(
    opts: &WorkerOptions,
    js: &jetstream::Context,
    msg: &jetstream::Message,
    ack_wait: Duration,
    designs: &mut HashMap<String, Arc<Design>>,
    summary: &mut WorkerSummary,
) -> usize {
    let say = &opts.say;
    let refuse = |why: String| {
        say(&format!("worker {}: refused a message on {}: {why}", opts.name, msg.subject));
    };
    let work = match Work::decode(&msg.payload) {
        Ok(w) if msg.subject.as_str() == conn::work_subject(&w.run, &w.batch) => w,
        Ok(w) => {
            refuse(format!("it names run {} batch {}, which is not its subject", w.run, w.batch));
            let _ = msg.ack_with(AckKind::Term).await;
            summary.refused += 1;
            return 0;
        }
        Err(e) => {
            refuse(e.to_string());
            let _ = msg.ack_with(AckKind::Term).await;
            summary.refused += 1;
            return 0;
        }
    };
    let t = Instant::now();
    say(&format!("worker {}: run {} batch {}: simulating {} candidates", opts.name, work.run, work.batch, work.candidates.len()));
    let design = design_of(&work, designs);
    let requests: Vec<Request> = work.candidates.iter().map(|c| Request { values: c.values.clone(), drives: c.drives.clone() }).collect();
    let scores: Vec<bool> = work.candidates.iter().map(|c| c.score).collect();
    let backend = opts.backend.clone();
    let engine = work.engine;
    let design2 = design.clone();
    let mut job = tokio::task::spawn_blocking(move || simulate(design2, &requests, &scores, engine, backend.as_ref()));
    // Progress notes keep a long batch from being redelivered while it runs.
    let mut tick = tokio::time::interval((ack_wait / 3).max(Duration::from_millis(200)));
    tick.tick().await;
    let outcomes = loop {
        tokio::select! {
            r = &mut job => break r,
            _ = tick.tick() => { let _ = msg.ack_with(AckKind::Progress).await; }
        }
    };
    let outcomes = match outcomes {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => {
            // The engine itself failed (not a candidate): another worker may manage.
            say(&format!("worker {}: the engine failed on run {} batch {}: {e}; handing the message back", opts.name, work.run, work.batch));
            let _ = msg.ack_with(AckKind::Nak(Some(Duration::from_secs(5)))).await;
            return 0;
        }
        Err(e) => {
            say(&format!("worker {}: the simulation thread failed ({e}); handing the message back", opts.name));
            let _ = msg.ack_with(AckKind::Nak(Some(Duration::from_secs(5)))).await;
            return 0;
        }
    };
    let items: Vec<Item> =
        work.candidates.iter().zip(outcomes).map(|(c, outcome)| Item { index: c.index, values: c.values.clone(), outcome }).collect();
    let n = items.len();
    let delivered = msg.info().map_or(1, |i| i.delivered.clamp(1, u32::MAX as i64) as u32);
    let id = format!("{}.{}.{}", work.run, work.batch, work.candidates.iter().map(|c| c.index.to_string()).collect::<Vec<_>>().join("-"));
    let id = format!("{:x}", Sha256::digest(id.as_bytes()));
    for (k, part) in split(Results { protocol: PROTOCOL, run: work.run.clone(), batch: work.batch.clone(), worker: opts.name.clone(), delivered, items })
        .into_iter()
        .enumerate()
    {
        // Stored before the ack: a crash between the two only repeats the work,
        // and the repeat's results are dropped as duplicates (same message id).
        if let Err(e) = publish_stored(js, &conn::result_subject(&work.run, &work.batch), &format!("{id}.{k}"), part.encode()).await {
            say(&format!("worker {}: could not store results ({e}); the message will be redelivered", opts.name));
            let _ = msg.ack_with(AckKind::Nak(None)).await;
            return 0;
        }
    }
    if let Err(e) = msg.double_ack().await {
        say(&format!("worker {}: ack of run {} batch {} not confirmed ({e}); its results are stored", opts.name, work.run, work.batch));
    }
    summary.messages += 1;
    summary.candidates += n;
    say(&format!("worker {}: run {} batch {}: {n} candidates in {:.2} s", opts.name, work.run, work.batch, t.elapsed().as_secs_f64()));
    n
}

/// The message's design, parsed and checked once per distinct text.
fn design_of(work: &Work, designs: &mut HashMap<String, Arc<Design>>) -> Result<Arc<Design>, String> {
    let key = format!("{:x}", Sha256::digest(work.design.as_bytes()));
    if let Some(d) = designs.get(&key) {
        return Ok(d.clone());
    }
    let d = Arc::new(Design::parse(&work.design, &format!("the design of farm run {}", work.run)).map_err(|e| CandidateFailure::Design(e).to_string())?);
    if designs.len() >= 8 {
        designs.clear();
    }
    designs.insert(key, d.clone());
    Ok(d)
}

/// Simulate (and score where asked) as one batch; a design that did not parse
/// fails every candidate with its reason, as it would a local run's.
fn simulate(
    design: Result<Arc<Design>, String>,
    requests: &[Request],
    scores: &[bool],
    engine: Option<crate::job::EngineKind>,
    backend: &dyn Backend,
) -> Result<Vec<Result<Outcome, String>>, crate::engine::EngineError> {
    let design = match design {
        Ok(d) => d,
        Err(why) => return Ok(requests.iter().map(|_| Err(why.clone())).collect()),
    };
    let sims = simulate_batch(&design, requests, engine, backend, &RunCtx::NONE)?;
    Ok(sims
        .into_par_iter()
        .zip(scores.par_iter())
        .map(|(r, &scored)| {
            let s = r.map_err(|e| e.to_string())?;
            let cell_updates = s.cell_updates();
            if !scored {
                return Ok(Outcome { runs: s.run_summary(), decay: s.decay(), sparams: s.sparams, fitness: None, cell_updates });
            }
            let s = score(&design, s).map_err(|e| e.to_string())?;
            Ok(Outcome { runs: s.run_summary(), decay: s.decay(), sparams: s.sparams, fitness: Some(s.fitness), cell_updates })
        })
        .collect())
}

/// Results in messages under the size limit; an item too large alone becomes its failure.
fn split(r: Results) -> Vec<Results> {
    if r.encode().len() <= MAX_RESULT_BYTES || r.items.len() <= 1 {
        let mut r = r;
        if r.encode().len() > MAX_RESULT_BYTES {
            for it in &mut r.items {
                it.outcome = Err(format!("simulation: the result exceeds the farm's message limit of {MAX_RESULT_BYTES} bytes"));
            }
        }
        return vec![r];
    }
    let mut a = r.clone();
    let b_items = a.items.split_off(a.items.len() / 2);
    let b = Results { items: b_items, ..r };
    let mut out = split(a);
    out.extend(split(b));
    out
}

/// Publish with a message id and wait until the stream has stored it (a
/// duplicate id counts as stored). Retries while the server is away.
pub async fn publish_stored(js: &jetstream::Context, subject: &str, id: &str, payload: Vec<u8>) -> anyhow::Result<()> {
    let mut last = None;
    for attempt in 0..30 {
        let m = jetstream::message::PublishMessage::build().payload(payload.clone().into()).message_id(id);
        match js.send_publish(subject.to_string(), m).await {
            Ok(ack) => match ack.await {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e.to_string()),
            },
            Err(e) => last = Some(e.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(200 * (attempt + 1).min(10))).await;
    }
    anyhow::bail!("{}", last.unwrap_or_default())
}
