//! The farm: one run's generations simulated by workers on many hosts through
//! a NATS JetStream server. The run stays the one stateful process; its
//! [`Dispatcher`] sends a generation's candidates out in chunks to a work
//! queue and collects the results, keyed by (run, generation batch,
//! candidate), so a redelivered or repeated chunk is harmless. Workers
//! ([`worker::serve`]) pull from the queue, simulate each chunk as one batch on
//! their own backend and ack a message only after its results are stored.
//!
//! Only this module is asynchronous: each side owns a tokio runtime and the
//! rest of the program calls it through `block_on`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub mod conn;
mod dispatch;
pub mod local;
pub mod wire;
pub mod worker;

pub use conn::Endpoint;
pub use dispatch::{run_id, Dispatcher, FarmOptions, FarmRequest, FarmResult};

/// Where the farm's messages go: a progress bar's printer, or stdout.
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// A worker's periodic "I am here" (core NATS, not stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub worker: String,
    pub backend: String,
    /// Candidates simulated since it started.
    pub done: usize,
    /// Simulating now.
    pub busy: bool,
}

impl Heartbeat {
    pub fn encode(&self) -> Vec<u8> {
        ron::to_string(self).expect("RON serialisation of plain data").into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Option<Heartbeat> {
        if bytes.len() > 4096 {
            return None;
        }
        let h: Heartbeat = ron::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
        wire::valid_token(&h.worker).then_some(h)
    }
}
