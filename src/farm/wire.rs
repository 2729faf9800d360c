//! What travels between a run and its workers: a work message (a design and
//! some of a generation's candidates) and a result message (each candidate's
//! outcome or its failure reason), in RON. RON rather than JSON: f64 values
//! (NaN and infinities included) come back bit for bit, so a farm run's
//! history equals a local run's.
//!
//! Everything decoded here is untrusted: sizes are checked before parsing,
//! RON's nesting limit bounds the parser, and [`Work::check`] bounds what a
//! message may ask for before any design is built from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::SParams;
use crate::fitness::Fitness;
use crate::ga::Decay;
use crate::job::EngineKind;

/// Bumped when a message's shape changes; a worker refuses other versions.
pub const PROTOCOL: u32 = 1;
/// The largest work message accepted (the design text and the candidates).
pub const MAX_WORK_BYTES: usize = 1 << 20;
/// The largest result message (S-parameters of every candidate of a chunk).
pub const MAX_RESULT_BYTES: usize = 8 << 20;
/// The most candidates one work message may carry.
pub const MAX_CANDIDATES: usize = 4096;
/// Subject tokens (run and batch ids, worker names) are at most this long.
pub const MAX_TOKEN: usize = 64;

/// Some of a generation's candidates, to simulate as one batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Work {
    pub protocol: u32,
    /// The run (stable over resumes of one run directory).
    pub run: String,
    /// The generation's batch (a hash of its requests: the same after a resume).
    pub batch: String,
    /// The design file's text; the worker parses and checks it as `simulate` does.
    pub design: String,
    /// `--engine` of the run, if any.
    pub engine: Option<EngineKind>,
    pub candidates: Vec<Candidate>,
}

/// One candidate: its index in the batch, parameter values and the port
/// columns (0-based) to drive; `score` false for a best design's missing
/// columns, which are wanted as S-parameters only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub index: usize,
    pub values: BTreeMap<String, f64>,
    pub drives: Vec<usize>,
    pub score: bool,
}

/// A worker's answer to one work message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    pub protocol: u32,
    pub run: String,
    pub batch: String,
    /// The worker's name (host and process; `--name`).
    pub worker: String,
    /// How many times the server had delivered the work message (over 1: redelivered).
    pub delivered: u32,
    pub items: Vec<Item>,
}

/// One candidate's outcome, or the reason it has none (the text a local run records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub index: usize,
    /// The values simulated: the run checks them against its own candidate.
    pub values: BTreeMap<String, f64>,
    pub outcome: Result<Outcome, String>,
}

/// What the optimiser needs of a simulated candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    pub sparams: SParams,
    /// None for a candidate sent with `score: false`.
    pub fitness: Option<Fitness>,
    /// How the simulations ended, one line.
    pub runs: String,
    pub decay: Decay,
    /// Cell updates performed (for the throughput column).
    pub cell_updates: f64,
}

/// Why a message was refused.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("not a valid message: {0}")]
    Parse(String),
    #[error("protocol version {got}, this build speaks {PROTOCOL}")]
    Protocol { got: u32 },
    #[error("{0}")]
    Invalid(String),
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8], limit: usize) -> Result<T, WireError> {
    if bytes.len() > limit {
        return Err(WireError::TooLarge { size: bytes.len(), limit });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| WireError::Parse(format!("not UTF-8 ({e})")))?;
    ron::from_str(text).map_err(|e| WireError::Parse(e.to_string()))
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising plain data (maps, numbers, strings) into a String cannot fail.
    ron::to_string(v).expect("RON serialisation of plain data").into_bytes()
}

/// A subject token: letters, digits, `-` and `_` only, so it cannot add
/// levels or wildcards to a subject.
pub fn valid_token(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_TOKEN && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Work {
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// Parse and check a work message.
    pub fn decode(bytes: &[u8]) -> Result<Work, WireError> {
        let w: Work = decode(bytes, MAX_WORK_BYTES)?;
        w.check()?;
        Ok(w)
    }

    /// The limits a message must keep before a design is built from it. What
    /// the design itself may ask for (grid size, values in range) is checked
    /// by the design's own parser and `jobs`, as for `simulate`.
    pub fn check(&self) -> Result<(), WireError> {
        if self.protocol != PROTOCOL {
            return Err(WireError::Protocol { got: self.protocol });
        }
        if !valid_token(&self.run) || !valid_token(&self.batch) {
            return Err(WireError::Invalid("run or batch id is not a plain token".into()));
        }
        if self.candidates.is_empty() || self.candidates.len() > MAX_CANDIDATES {
            return Err(WireError::Invalid(format!("{} candidates (1 to {MAX_CANDIDATES} allowed)", self.candidates.len())));
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &self.candidates {
            if !seen.insert(c.index) {
                return Err(WireError::Invalid(format!("candidate index {} appears twice", c.index)));
            }
            if c.drives.is_empty() || c.drives.len() > 64 {
                return Err(WireError::Invalid(format!("candidate {}: {} driven ports", c.index, c.drives.len())));
            }
        }
        Ok(())
    }
}

impl Results {
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Results, WireError> {
        let r: Results = decode(bytes, MAX_RESULT_BYTES)?;
        if r.protocol != PROTOCOL {
            return Err(WireError::Protocol { got: r.protocol });
        }
        if !valid_token(&r.worker) {
            return Err(WireError::Invalid("worker name is not a plain token".into()));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work() -> Work {
        let values = BTreeMap::from([("w".to_string(), 0.1 + 0.2), ("l".to_string(), f64::MIN_POSITIVE)]);
        Work {
            protocol: PROTOCOL,
            run: "r1".into(),
            batch: "b2".into(),
            design: "(name: \"x\")".into(),
            engine: None,
            candidates: vec![Candidate { index: 3, values, drives: vec![0], score: true }],
        }
    }

    #[test]
    fn values_come_back_bit_for_bit_nan_and_infinity_included() {
        let w = work();
        assert_eq!(Work::decode(&w.encode()).unwrap(), w);
        let decay = Decay { reached_db: f64::NEG_INFINITY, target_db: -50.0, truncated: false };
        let sparams = SParams { freqs: vec![1e9 / 3.0], ports: vec!["a".into()], s: vec![vec![None]], zin: vec![None], zref: vec![vec![]] };
        let item = Item {
            index: 0,
            values: w.candidates[0].values.clone(),
            outcome: Ok(Outcome { sparams, fitness: Some(Fitness { total: f64::NAN, per_goal: vec![] }), runs: "r".into(), decay, cell_updates: 1.5 }),
        };
        let r = Results { protocol: PROTOCOL, run: "r1".into(), batch: "b2".into(), worker: "h-1".into(), delivered: 1, items: vec![item] };
        let back = Results::decode(&r.encode()).unwrap();
        let (Ok(a), Ok(b)) = (&back.items[0].outcome, &r.items[0].outcome) else { panic!() };
        assert!(a.fitness.as_ref().unwrap().total.is_nan());
        assert_eq!(a.sparams, b.sparams);
        assert_eq!(a.decay.reached_db, f64::NEG_INFINITY);
        assert_eq!(back.items[0].values, r.items[0].values);
    }

    #[test]
    fn malformed_or_oversized_messages_are_refused_with_a_reason() {
        assert!(matches!(Work::decode(b"not ron at all"), Err(WireError::Parse(_))));
        assert!(matches!(Work::decode(&[0xff, 0xfe]), Err(WireError::Parse(_))));
        let big = vec![b' '; MAX_WORK_BYTES + 1];
        assert!(matches!(Work::decode(&big), Err(WireError::TooLarge { .. })));
        // Deep nesting stops at the parser's limit instead of the stack.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(Work::decode(deep.as_bytes()).is_err());
        let mut w = work();
        w.protocol = 99;
        assert!(matches!(Work::decode(&w.encode()), Err(WireError::Protocol { got: 99 })));
        let mut w = work();
        w.run = "a.>".into();
        assert!(matches!(Work::decode(&w.encode()), Err(WireError::Invalid(_))));
        let mut w = work();
        w.candidates.push(w.candidates[0].clone());
        assert!(matches!(Work::decode(&w.encode()), Err(WireError::Invalid(_))));
        let mut w = work();
        w.candidates.clear();
        assert!(matches!(Work::decode(&w.encode()), Err(WireError::Invalid(_))));
    }
}
