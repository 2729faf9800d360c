//! The run's side of the farm: a generation's candidates go to the work queue
//! in chunks, results come back from the results stream keyed by candidate
//! index (and checked against the candidate's values), and the generation is
//! complete when every candidate has one. Duplicates (a redelivered chunk
//! simulated twice) are counted and dropped. Results stay stored until the
//! next generation starts, i.e. after the run has checkpointed this one, so a
//! run killed mid-generation and resumed takes what is stored and sends out
//! only what is missing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt as _;
use sha2::{Digest, Sha256};

use super::conn::{self, Endpoint, HEARTBEAT_SUBJECT, WORKERS_CONSUMER};
use super::wire::{Candidate, Outcome, Results, Work, MAX_WORK_BYTES, PROTOCOL};
use super::worker::publish_stored;
use super::{Heartbeat, Say};
use crate::job::EngineKind;

/// How the run uses the farm.
#[derive(Debug, Clone)]
pub struct FarmOptions {
    pub endpoint: Endpoint,
    /// The workers' consumer's ack wait (set when this run declares or updates it).
    pub ack_wait: Duration,
    /// Candidates per message (None: about four messages per live worker).
    pub chunk: Option<usize>,
}

/// One candidate to simulate (`score` false: S-parameter columns only).
#[derive(Debug, Clone)]
pub struct FarmRequest {
    pub values: BTreeMap<String, f64>,
    pub drives: Vec<usize>,
    pub score: bool,
}

/// A candidate's outcome (or the failure reason its worker gave) and who simulated it.
#[derive(Debug, Clone)]
pub struct FarmResult {
    pub outcome: Result<Outcome, String>,
    pub worker: String,
}

/// Workers whose heartbeat is older than this are not counted as attached.
const LIVE: Duration = Duration::from_secs(6);
/// A status line at most this often while a generation waits.
const STATUS_EVERY: Duration = Duration::from_secs(10);

type Book = Arc<Mutex<BTreeMap<String, (Instant, Heartbeat)>>>;

/// The connection of one run to its farm.
pub struct Dispatcher {
    rt: tokio::runtime::Runtime,
    js: jetstream::Context,
    work: stream::Stream,
    results: stream::Stream,
    run: String,
    /// Distinguishes this process's work messages from an earlier (killed) one's.
    session: String,
    chunk: Option<usize>,
    url: String,
    say: Say,
    workers: Book,
    /// The batch of the previous generation: its messages go when the next starts.
    prev: Mutex<Option<String>>,
}

impl Dispatcher {
    /// Connect, declare the streams and the workers' consumer, and drop any
    /// work an earlier session of this run left queued.
    pub fn connect(opts: FarmOptions, run: &str, say: Say) -> anyhow::Result<Dispatcher> {
        anyhow::ensure!(super::wire::valid_token(run), "farm run id `{run}` is not a plain token");
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let (js, work, results, workers) = rt.block_on(async {
            let client = conn::connect(&opts.endpoint, &format!("emvolve run {run}"), say.clone()).await?;
            let (js, work, results) = conn::streams(&client).await?;
            let c = conn::workers_consumer(&work, opts.ack_wait).await?;
            if c.cached_info().config.ack_wait != opts.ack_wait {
                let mut cfg = c.cached_info().config.clone();
                cfg.ack_wait = opts.ack_wait;
                work.update_consumer(cfg).await.map_err(|e| anyhow::anyhow!("setting the workers' ack wait: {e}"))?;
            }
            work.purge().filter(format!("emvolve.work.{run}.>")).await.map_err(|e| anyhow::anyhow!("clearing earlier work of this run: {e}"))?;
            let workers: Book = Arc::default();
            let mut sub = client.subscribe(HEARTBEAT_SUBJECT).await.map_err(|e| anyhow::anyhow!("subscribing to heartbeats: {e}"))?;
            let book = workers.clone();
            tokio::spawn(async move {
                while let Some(m) = sub.next().await {
                    if let Some(h) = Heartbeat::decode(&m.payload) {
                        let mut b = book.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        b.insert(h.worker.clone(), (Instant::now(), h));
                    }
                }
            });
            anyhow::Ok((js, work, results, workers))
        })?;
        let session = format!("{:016x}", rand::random::<u64>());
        Ok(Dispatcher { rt, js, work, results, run: run.to_string(), session, chunk: opts.chunk, url: opts.endpoint.url, say, workers, prev: Mutex::new(None) })
    }

    /// Workers heard from lately: name and backend.
    pub fn live_workers(&self) -> Vec<(String, String)> {
        let b = self.workers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        b.values().filter(|(t, _)| t.elapsed() < LIVE).map(|(_, h)| (h.worker.clone(), h.backend.clone())).collect()
    }

    /// Simulate `reqs` of the design (its text and hash) on the farm; one
    /// result per request, in order. `progress(n)`: n results are in.
    pub fn evaluate(
        &self,
        design_text: &str,
        design_hash: &str,
        engine: Option<EngineKind>,
        reqs: &[FarmRequest],
        progress: &(dyn Fn(usize) + Sync),
    ) -> anyhow::Result<Vec<FarmResult>> {
        self.rt.block_on(self.evaluate_async(design_text, design_hash, engine, reqs, progress))
    }

    async fn evaluate_async(
        &self,
        design_text: &str,
        design_hash: &str,
        engine: Option<EngineKind>,
        reqs: &[FarmRequest],
        progress: &(dyn Fn(usize) + Sync),
    ) -> anyhow::Result<Vec<FarmResult>> {
        let batch = batch_id(design_hash, engine, reqs);
        let prev = self.prev.lock().unwrap_or_else(std::sync::PoisonError::into_inner).replace(batch.clone());
        if let Some(p) = prev.filter(|p| *p != batch) {
            // The previous generation is checkpointed by now: its leftovers go.
            let _ = self.results.purge().filter(conn::result_subject(&self.run, &p)).await;
            let _ = self.work.purge().filter(conn::work_subject(&self.run, &p)).await;
        }
        let t0 = Instant::now();
        let mut tally = Tally::new(reqs.len());
        let rsub = conn::result_subject(&self.run, &batch);
        let mut msgs = self.result_messages(&rsub).await?;
        // What an earlier session of this run stored for this generation.
        if self.results.get_last_raw_message_by_subject(&rsub).await.is_ok() {
            while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_secs(5), msgs.next()).await {
                absorb(&self.run, &m.payload, &batch, reqs, &mut tally, &self.say);
                if m.info().map_or(true, |i| i.pending == 0) {
                    break;
                }
            }
            if tally.filled > 0 {
                (self.say)(&format!("farm: {} of {} results of this generation were already stored; sending the rest", tally.filled, reqs.len()));
            }
        }
        progress(tally.filled);
        let missing: Vec<usize> = (0..reqs.len()).filter(|&i| tally.have[i].is_none()).collect();
        let (sent, bytes_out) = self.send(design_text, engine, &batch, reqs, &missing).await?;
        let (mut last_status, mut last_alone) = (Instant::now(), None::<Instant>);
        while tally.filled < reqs.len() {
            match tokio::time::timeout(Duration::from_secs(1), msgs.next()).await {
                Ok(Some(Ok(m))) => {
                    let before = tally.filled;
                    absorb(&self.run, &m.payload, &batch, reqs, &mut tally, &self.say);
                    if tally.filled != before {
                        progress(tally.filled);
                    }
                }
                Ok(Some(Err(e))) => {
                    (self.say)(&format!("farm: reading results: {e}; reconnecting"));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    msgs = self.result_messages(&rsub).await.unwrap_or(msgs);
                }
                Ok(None) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    msgs = self.result_messages(&rsub).await.unwrap_or(msgs);
                }
                Err(_) => {}
            }
            let live = self.live_workers();
            if live.is_empty() && t0.elapsed() > Duration::from_secs(3) {
                if last_alone.is_none_or(|t| t.elapsed() > Duration::from_secs(30)) {
                    (self.say)(&format!(
                        "farm: no worker attached to {}: waiting ({}/{} results; start one with `emvolve worker --nats {} --creds FILE`)",
                        self.url,
                        tally.filled,
                        reqs.len(),
                        self.url
                    ));
                    last_alone = Some(Instant::now());
                }
            } else if last_status.elapsed() > STATUS_EVERY {
                let info = self.work.consumer_info(WORKERS_CONSUMER).await.ok();
                let (in_flight, redelivered) = info.map_or((0, 0), |i| (i.num_ack_pending, i.num_redelivered));
                (self.say)(&format!(
                    "farm: {}/{} results, {} workers attached, {in_flight} messages in flight, {redelivered} redelivered; {}",
                    tally.filled,
                    reqs.len(),
                    live.len(),
                    tally.rates(t0.elapsed())
                ));
                last_status = Instant::now();
            }
        }
        if sent > 0 {
            (self.say)(&format!(
                "farm: {} designs in {} messages ({:.1} kB out, {:.1} kB back), {:.2} s: {}{}{}",
                reqs.len(),
                sent,
                bytes_out as f64 / 1e3,
                tally.bytes_in as f64 / 1e3,
                t0.elapsed().as_secs_f64(),
                tally.rates(t0.elapsed()),
                if tally.redelivered > 0 { format!("; {} redelivered", tally.redelivered) } else { String::new() },
                if tally.duplicates > 0 { format!("; {} duplicate results dropped", tally.duplicates) } else { String::new() },
            ));
        }
        Ok(tally.have.into_iter().map(|r| r.expect("every candidate has a result when the loop ends")).collect())
    }

    /// An ordered consumer over the batch's results, from the first stored.
    async fn result_messages(&self, subject: &str) -> anyhow::Result<consumer::pull::Ordered> {
        let c = self
            .results
            .create_consumer(consumer::pull::OrderedConfig { filter_subject: subject.to_string(), ..Default::default() })
            .await
            .map_err(|e| anyhow::anyhow!("reading the farm's results: {e}"))?;
        c.messages().await.map_err(|e| anyhow::anyhow!("reading the farm's results: {e}"))
    }

    /// Publish the `missing` candidates in chunks; the number of messages sent.
    async fn send(&self, design: &str, engine: Option<EngineKind>, batch: &str, reqs: &[FarmRequest], missing: &[usize]) -> anyhow::Result<(usize, usize)> {
        if missing.is_empty() {
            return Ok((0, 0));
        }
        let live = self.live_workers().len().max(1);
        let size = self.chunk.unwrap_or_else(|| missing.len().div_ceil(4 * live)).max(1);
        let mut groups: Vec<&[usize]> = missing.chunks(size).rev().collect();
        let subject = conn::work_subject(&self.run, batch);
        let (mut sent, mut bytes_out) = (0, 0);
        while let Some(g) = groups.pop() {
            let work = Work {
                protocol: PROTOCOL,
                run: self.run.clone(),
                batch: batch.to_string(),
                design: design.to_string(),
                engine,
                candidates: g.iter().map(|&i| Candidate { index: i, values: reqs[i].values.clone(), drives: reqs[i].drives.clone(), score: reqs[i].score }).collect(),
            };
            let bytes = work.encode();
            if bytes.len() > MAX_WORK_BYTES {
                anyhow::ensure!(g.len() > 1, "one candidate's work message is {} bytes, over the farm's limit of {MAX_WORK_BYTES} (the design text is too large)", bytes.len());
                let (a, b) = g.split_at(g.len() / 2);
                groups.push(b);
                groups.push(a);
                continue;
            }
            let id = format!("{}.{batch}.{}.{}", self.run, self.session, g[0]);
            bytes_out += bytes.len();
            publish_stored(&self.js, &subject, &id, bytes).await.context("sending work to the farm")?;
            sent += 1;
        }
        Ok((sent, bytes_out))
    }
}

/// Take a result message's items that belong to this run's batch and are new;
/// a repeat (a redelivered chunk simulated twice) is counted and dropped.
fn absorb(run: &str, payload: &[u8], batch: &str, reqs: &[FarmRequest], tally: &mut Tally, say: &Say) {
    tally.bytes_in += payload.len();
    let r = match Results::decode(payload) {
        Ok(r) if r.run == run && r.batch == batch => r,
        Ok(_) => return,
        Err(e) => {
            say(&format!("farm: ignored a result message: {e}"));
            return;
        }
    };
    if r.delivered > 1 {
        tally.redelivered += 1;
    }
    for it in r.items {
        // An index past the end: an earlier session's extra request (a best
        // design's columns) that this session did not repeat.
        let Some(q) = reqs.get(it.index) else { continue };
        // A result counts only for the candidate it was computed for.
        if q.values != it.values {
            say(&format!("farm: ignored a result of worker {} for candidate {} (not this generation's)", r.worker, it.index));
            continue;
        }
        if tally.have[it.index].is_some() {
            tally.duplicates += 1;
            continue;
        }
        *tally.per_worker.entry(r.worker.clone()).or_insert(0) += 1;
        tally.have[it.index] = Some(FarmResult { outcome: it.outcome, worker: r.worker.clone() });
        tally.filled += 1;
    }
}

/// A generation's results as they come in.
struct Tally {
    have: Vec<Option<FarmResult>>,
    filled: usize,
    duplicates: usize,
    redelivered: usize,
    per_worker: BTreeMap<String, usize>,
    /// Result bytes received (the model of larger farms in docs/BENCHMARKS.md uses them).
    bytes_in: usize,
}

impl Tally {
    fn new(n: usize) -> Tally {
        Tally { have: vec![None; n], filled: 0, duplicates: 0, redelivered: 0, per_worker: BTreeMap::new(), bytes_in: 0 }
    }

    /// "a 6 (1.2/s), b 5 (1.0/s)".
    fn rates(&self, t: Duration) -> String {
        let s = t.as_secs_f64().max(1e-9);
        let v: Vec<String> = self.per_worker.iter().map(|(w, n)| format!("{w} {n} ({:.2}/s)", *n as f64 / s)).collect();
        if v.is_empty() {
            "no results yet".into()
        } else {
            v.join(", ")
        }
    }
}

/// The batch's id: a hash of the candidates it scores, so a resumed run's
/// regenerated generation finds the results stored for it (the unscored
/// extra request of a best design's columns may differ between sessions and
/// is left out; it comes last, so its index never names a scored candidate).
fn batch_id(design_hash: &str, engine: Option<EngineKind>, reqs: &[FarmRequest]) -> String {
    let mut h = Sha256::new();
    h.update(design_hash.as_bytes());
    h.update(format!("{engine:?}").as_bytes());
    for r in reqs.iter().filter(|r| r.score) {
        for (k, v) in &r.values {
            h.update(k.as_bytes());
            h.update(v.to_bits().to_le_bytes());
        }
        h.update(format!("{:?}{}", r.drives, r.score).as_bytes());
    }
    format!("{:x}", h.finalize())[..20].to_string()
}

/// The farm id of a run: its directory and design, stable over resumes.
pub fn run_id(dir: &std::path::Path, design_hash: &str) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut h = Sha256::new();
    h.update(dir.to_string_lossy().as_bytes());
    h.update(design_hash.as_bytes());
    format!("{:x}", h.finalize())[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::farm::wire::Item;

    fn req(w: f64) -> FarmRequest {
        FarmRequest { values: BTreeMap::from([("w".to_string(), w)]), drives: vec![0], score: true }
    }

    fn results(worker: &str, delivered: u32, items: &[(usize, f64)]) -> Vec<u8> {
        let items = items.iter().map(|&(index, w)| Item { index, values: req(w).values, outcome: Err(format!("fail {index}")) }).collect();
        Results { protocol: PROTOCOL, run: "run1".into(), batch: "b1".into(), worker: worker.into(), delivered, items }.encode()
    }

    #[test]
    fn a_repeated_result_counts_once_and_foreign_ones_not_at_all() {
        let reqs = [req(1.0), req(2.0), req(3.0)];
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let s2 = said.clone();
        let say: Say = Arc::new(move |l: &str| s2.lock().unwrap().push(l.to_string()));
        let mut t = Tally::new(3);
        absorb("run1", &results("a", 1, &[(0, 1.0), (1, 2.0)]), "b1", &reqs, &mut t, &say);
        // The same chunk again from another worker after a redelivery.
        absorb("run1", &results("b", 2, &[(0, 1.0), (1, 2.0)]), "b1", &reqs, &mut t, &say);
        assert_eq!((t.filled, t.duplicates, t.redelivered), (2, 2, 1));
        assert_eq!(t.per_worker, BTreeMap::from([("a".to_string(), 2)]));
        // Another batch's, another run's, a wrong candidate's values, an index out of range, garbage.
        absorb("run1", &results("a", 1, &[(2, 3.0)]), "b2", &reqs, &mut t, &say);
        absorb("run2", &results("a", 1, &[(2, 3.0)]), "b1", &reqs, &mut t, &say);
        absorb("run1", &results("a", 1, &[(2, 9.0), (7, 3.0)]), "b1", &reqs, &mut t, &say);
        absorb("run1", b"garbage", "b1", &reqs, &mut t, &say);
        assert_eq!(t.filled, 2);
        assert_eq!(said.lock().unwrap().len(), 2, "{:?}", said.lock().unwrap());
        absorb("run1", &results("c", 1, &[(2, 3.0)]), "b1", &reqs, &mut t, &say);
        assert_eq!(t.filled, 3);
        assert_eq!(t.have[2].as_ref().unwrap().outcome, Err("fail 2".to_string()));
        assert_eq!(t.have[0].as_ref().unwrap().worker, "a");
    }

    #[test]
    fn batch_ids_follow_the_requests_and_nothing_else() {
        let a = batch_id("h", None, &[req(1.0), req(2.0)]);
        assert_eq!(a, batch_id("h", None, &[req(1.0), req(2.0)]));
        assert_ne!(a, batch_id("h", None, &[req(2.0), req(1.0)]));
        assert_ne!(a, batch_id("h2", None, &[req(1.0), req(2.0)]));
        let extra = FarmRequest { score: false, ..req(5.0) };
        assert_eq!(a, batch_id("h", None, &[req(1.0), req(2.0), extra]), "the unscored columns request is left out");
        assert!(crate::farm::wire::valid_token(&a));
    }
}
