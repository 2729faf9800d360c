//! Checkpoints: the whole [`GaState`] as RON with a SHA-256 line, written
//! atomically; the previous one kept as `checkpoint.prev.ron` and used when the latest is damaged.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::rundir::{durable_temp, sync_dir, temp_made_by, RunDir};
use crate::ga::state::{GaState, STATE_VERSION};

const DIGEST_PREFIX: &str = "\n// sha256: ";

/// Why a checkpoint could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    #[error("cannot write checkpoint {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot serialise the run state: {0}")]
    Serialise(String),
    #[error("no checkpoint in {dir} (neither {} nor {})", RunDir::CHECKPOINT, RunDir::CHECKPOINT_PREV)]
    Missing { dir: PathBuf },
    #[error("cannot read checkpoint {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("checkpoint {path} is corrupt or truncated: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("checkpoint {path} has format version {found}; this build reads version {expected}")]
    Version { path: PathBuf, found: u32, expected: u32 },
    #[error("{latest}; and the fallback failed too: {previous}")]
    BothFailed { latest: Box<CheckpointError>, previous: Box<CheckpointError> },
}

/// A checkpoint that was read, and from where.
#[derive(Debug)]
pub struct Loaded {
    pub state: GaState,
    pub path: PathBuf,
    /// Set when the latest checkpoint was unusable and the previous one was read: print it.
    pub warning: Option<String>,
}

/// Write the state as the run's checkpoint; the one it replaces becomes `checkpoint.prev.ron`.
pub fn save(dir: &Path, state: &GaState) -> Result<(), CheckpointError> {
    let path = dir.join(RunDir::CHECKPOINT);
    let prev = dir.join(RunDir::CHECKPOINT_PREV);
    // One line per individual, cache entry and history row: readable, and not
    // much larger than compact RON.
    let config = ron::ser::PrettyConfig::new().depth_limit(2);
    let body = ron::ser::to_string_pretty(state, config).map_err(|e| CheckpointError::Serialise(e.to_string()))?;
    let digest = hex(&Sha256::digest(body.as_bytes()));
    let werr = |p: &Path| {
        let p = p.to_path_buf();
        move |source| CheckpointError::Write { path: p, source }
    };
    let mut text = body;
    text.push_str(&format!("{DIGEST_PREFIX}{digest}\n"));
    let tmp = durable_temp(&path, text.as_bytes()).map_err(werr(&path))?;
    // The current checkpoint becomes the previous one through a link (a copy
    // where links are not supported), so `checkpoint.ron` never disappears:
    // an `inspect` during a run always finds it.
    if path.exists() {
        let link = temp_made_by(&prev, |p| fs::hard_link(&path, p).or_else(|_| fs::copy(&path, p).map(|_| ())))
            .map_err(werr(&prev))?;
        link.persist(&prev).map_err(|e| CheckpointError::Write { path: prev.clone(), source: e.error })?;
    }
    tmp.persist(&path).map_err(|e| CheckpointError::Write { path: path.clone(), source: e.error })?;
    sync_dir(&path).map_err(werr(dir))
}

/// Read the run's checkpoint, falling back to the previous one (with a warning) if the latest is missing or damaged.
pub fn load(dir: &Path) -> Result<Loaded, CheckpointError> {
    let latest = dir.join(RunDir::CHECKPOINT);
    let prev = dir.join(RunDir::CHECKPOINT_PREV);
    let latest_err = match read_file(&latest) {
        Ok(state) => return Ok(Loaded { state, path: latest, warning: None }),
        Err(e) => e,
    };
    match read_file(&prev) {
        Ok(state) => {
            let warning = format!(
                "{latest_err}; using the previous checkpoint {} instead (generation {})",
                prev.display(),
                state.generation
            );
            Ok(Loaded { state, path: prev, warning: Some(warning) })
        }
        Err(prev_err) => {
            let missing = |e: &CheckpointError| matches!(e, CheckpointError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound);
            if missing(&latest_err) && missing(&prev_err) {
                Err(CheckpointError::Missing { dir: dir.to_path_buf() })
            } else {
                Err(CheckpointError::BothFailed { latest: Box::new(latest_err), previous: Box::new(prev_err) })
            }
        }
    }
}

/// Read and verify one checkpoint file.
pub fn read_file(path: &Path) -> Result<GaState, CheckpointError> {
    let corrupt = |detail: String| CheckpointError::Corrupt { path: path.to_path_buf(), detail };
    let bytes = fs::read(path).map_err(|source| CheckpointError::Read { path: path.to_path_buf(), source })?;
    let text = String::from_utf8(bytes).map_err(|e| corrupt(format!("not UTF-8 text ({e})")))?;
    let Some(cut) = text.rfind(DIGEST_PREFIX) else {
        return Err(corrupt(format!(
            "the closing integrity line is missing ({} bytes; the file was cut short)",
            text.len()
        )));
    };
    let (body, tail) = text.split_at(cut);
    let stored = tail[DIGEST_PREFIX.len()..].trim();
    let actual = hex(&Sha256::digest(body.as_bytes()));
    if stored != actual {
        return Err(corrupt(format!("the content does not match its checksum (stored {stored}, actual {actual})")));
    }
    // Read the version alone first, so an old or new format gets a clear message.
    #[derive(Deserialize)]
    #[serde(rename = "GaState")]
    struct VersionOnly {
        version: u32,
    }
    let v: VersionOnly = ron::from_str(body).map_err(|e| corrupt(e.to_string()))?;
    if v.version != STATE_VERSION {
        return Err(CheckpointError::Version { path: path.to_path_buf(), found: v.version, expected: STATE_VERSION });
    }
    let state: GaState = ron::from_str(body).map_err(|e| corrupt(e.to_string()))?;
    state.check_consistent().map_err(corrupt)?;
    Ok(state)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::problem::Problem;
    use crate::ga::settings::GaSettings;
    use crate::ga::step::{new_state, step};
    use crate::ga::testfns::Rastrigin;

    fn state_after(gens: usize) -> GaState {
        let mut p = Rastrigin::new(2, 1);
        p.sum_limit = Some(3.0);
        p.cells_per_second = Some(1.5e9);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 12, seed: 3, ..Default::default() }, "h").unwrap();
        for g in 0..gens {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
            st.stamp_time(0.125 * (g + 1) as f64);
        }
        st
    }

    #[test]
    fn round_trip_is_exact_and_the_previous_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let st = state_after(4);
        let s3 = state_after(3);
        save(tmp.path(), &s3).unwrap();
        save(tmp.path(), &st).unwrap();
        assert!(read_file(&tmp.path().join(RunDir::CHECKPOINT_PREV)).unwrap() == s3);
        let back = load(tmp.path()).unwrap();
        assert!(back.warning.is_none());
        // Every f64 (genomes, objectives, the json extras) and the RNG come back bit for bit.
        assert!(back.state == st, "the state changed through the checkpoint");
        let names: Vec<_> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "temporaries left behind: {names:?}");
    }

    #[test]
    fn truncated_checkpoint_falls_back_to_the_previous_one() {
        let tmp = tempfile::tempdir().unwrap();
        let (s3, s4) = (state_after(3), state_after(4));
        save(tmp.path(), &s3).unwrap();
        save(tmp.path(), &s4).unwrap();
        let latest = tmp.path().join(RunDir::CHECKPOINT);
        let text = fs::read_to_string(&latest).unwrap();
        fs::write(&latest, &text[..text.len() / 2]).unwrap();
        let err = read_file(&latest).unwrap_err().to_string();
        assert!(err.contains("checkpoint.ron") && err.contains("truncated") && err.contains("cut short"), "{err}");
        let loaded = load(tmp.path()).unwrap();
        assert!(loaded.state == s3);
        assert!(loaded.path.ends_with(RunDir::CHECKPOINT_PREV));
        let w = loaded.warning.unwrap();
        assert!(w.contains("checkpoint.ron is corrupt") && w.contains("checkpoint.prev.ron"), "{w}");
    }

    #[test]
    fn corrupt_bytes_are_caught_by_the_checksum() {
        let tmp = tempfile::tempdir().unwrap();
        save(tmp.path(), &state_after(2)).unwrap();
        let latest = tmp.path().join(RunDir::CHECKPOINT);
        // A digit changed in place still parses as RON; only the checksum sees it.
        let text = fs::read_to_string(&latest).unwrap();
        let i = text.find("evaluations: ").unwrap() + "evaluations: ".len();
        let mut bytes = text.into_bytes();
        bytes[i] = if bytes[i] == b'9' { b'8' } else { b'9' };
        fs::write(&latest, &bytes).unwrap();
        let err = load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("checksum") && err.contains("checkpoint.prev.ron"), "{err}");
    }

    #[test]
    fn missing_latest_uses_previous_and_nothing_at_all_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let err = load(tmp.path()).unwrap_err();
        assert!(matches!(err, CheckpointError::Missing { .. }), "{err}");
        save(tmp.path(), &state_after(1)).unwrap();
        save(tmp.path(), &state_after(2)).unwrap();
        // As if someone deleted it.
        fs::remove_file(tmp.path().join(RunDir::CHECKPOINT)).unwrap();
        let l = load(tmp.path()).unwrap();
        assert_eq!(l.state.generation, 0);
        assert!(l.warning.unwrap().contains("cannot read"));
    }

    #[test]
    fn other_versions_are_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let mut st = state_after(1);
        st.version = STATE_VERSION + 1;
        save(tmp.path(), &st).unwrap();
        let err = read_file(&tmp.path().join(RunDir::CHECKPOINT)).unwrap_err().to_string();
        assert!(err.contains("format version"), "{err}");
    }
}
