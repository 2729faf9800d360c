//! Chunks of time steps recorded once as CUDA graphs and replayed: a chunk
//! whose launches depend only on a small key (steps, buffer parity, grid
//! sizes) costs one graph launch instead of several kernel launches per step.
//! Used by [`super::cuda::CudaDevice`] for the FDTD and TLM batches alike.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaStream};

use super::drv;
use crate::engine::EngineError;

/// How [`ChunkGraphs::begin`] handled a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// Replayed from a recording: launch nothing.
    Replayed,
    /// Being recorded: launch it, then call [`ChunkGraphs::end`].
    Recording,
    /// Launch it kernel by kernel.
    Direct,
}

/// Recorded chunks of one stream, by key.
pub struct ChunkGraphs<K> {
    stream: Arc<CudaStream>,
    /// None once graphs are off (not asked for, or a capture failed).
    graphs: Option<HashMap<K, CudaGraph>>,
    recording: Option<K>,
    /// Names the loop in the note printed when capture fails.
    what: &'static str,
}

impl<K: Hash + Eq + Copy> ChunkGraphs<K> {
    pub fn new(stream: Arc<CudaStream>, enabled: bool, what: &'static str) -> Self {
        ChunkGraphs { stream, graphs: enabled.then(HashMap::new), recording: None, what }
    }

    /// Before a chunk's launches: replay its recording if there is one, else
    /// start recording it (or say to launch it directly).
    pub fn begin(&mut self, key: K) -> Result<Chunk, EngineError> {
        let Some(graphs) = self.graphs.as_mut() else { return Ok(Chunk::Direct) };
        if let Some(g) = graphs.get(&key) {
            g.launch().map_err(drv)?;
            return Ok(Chunk::Replayed);
        }
        // The running set of designs changes the key: keep the cache small.
        if graphs.len() >= 64 {
            graphs.clear();
        }
        match self.stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) {
            Ok(()) => {
                self.recording = Some(key);
                Ok(Chunk::Recording)
            }
            Err(e) => {
                self.off(&e.to_string());
                Ok(Chunk::Direct)
            }
        }
    }

    /// After the launches of a chunk begun as [`Chunk::Recording`]: keep and
    /// run the recording. False when that failed: the chunk was not run and
    /// must be launched again directly (graphs are off from then on).
    pub fn end(&mut self) -> Result<bool, EngineError> {
        let Some(key) = self.recording.take() else { return Ok(true) };
        match self.stream.end_capture(CUgraphInstantiate_flags(0)) {
            Ok(Some(g)) => {
                g.launch().map_err(drv)?;
                if let Some(graphs) = self.graphs.as_mut() {
                    graphs.insert(key, g);
                }
                Ok(true)
            }
            other => {
                self.off(&other.err().map_or("empty graph".to_string(), |e| e.to_string()));
                Ok(false)
            }
        }
    }

    fn off(&mut self, why: &str) {
        eprintln!("note: CUDA graph capture failed ({why}); launching {} kernel by kernel", self.what);
        self.graphs = None;
    }
}
