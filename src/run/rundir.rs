//! `RunDir`: the folder `runs/NAME/` a run owns, and atomic file writes into it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a run directory could not be created, opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunDirError {
    #[error("run directory {path} already exists and is not empty (use force to start over in it)")]
    Exists { path: PathBuf },
    #[error("{path} exists and is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("run directory {path} does not exist")]
    Missing { path: PathBuf },
    #[error("`{name}` is not a plain file name")]
    BadName { name: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io { path: path.to_path_buf(), source }
}

/// The files a run writes itself; `force` removes these and nothing else.
pub const OWNED_FILES: &[&str] =
    &["checkpoint.ron", "checkpoint.prev.ron", "checkpoint.ron.tmp", "checkpoint.prev.ron.tmp", "history.csv", "history.csv.tmp"];

/// A run's directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    pub const CHECKPOINT: &'static str = "checkpoint.ron";
    pub const CHECKPOINT_PREV: &'static str = "checkpoint.prev.ron";
    pub const HISTORY: &'static str = "history.csv";
    pub const PLOTS: &'static str = "plots";

    /// Create the directory for a new run. An existing non-empty directory is
    /// refused unless `force`; with `force` only the files a run writes
    /// ([`OWNED_FILES`] and `plots/`) are removed, anything else is left alone.
    pub fn create(path: impl AsRef<Path>, force: bool) -> Result<RunDir, RunDirError> {
        let path = path.as_ref().to_path_buf();
        if path.exists() {
            if !path.is_dir() {
                return Err(RunDirError::NotADirectory { path });
            }
            let empty = fs::read_dir(&path).map_err(io_err(&path))?.next().is_none();
            if !empty {
                if !force {
                    return Err(RunDirError::Exists { path });
                }
                for name in OWNED_FILES {
                    let f = path.join(name);
                    if f.exists() {
                        fs::remove_file(&f).map_err(io_err(&f))?;
                    }
                }
                let plots = path.join(Self::PLOTS);
                if plots.is_dir() {
                    fs::remove_dir_all(&plots).map_err(io_err(&plots))?;
                }
            }
        }
        fs::create_dir_all(&path).map_err(io_err(&path))?;
        Ok(RunDir { path })
    }

    /// An existing run directory (to resume or inspect).
    pub fn open(path: impl AsRef<Path>) -> Result<RunDir, RunDirError> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(RunDirError::Missing { path });
        }
        if !path.is_dir() {
            return Err(RunDirError::NotADirectory { path });
        }
        Ok(RunDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Path of a file in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The plots folder, created if missing.
    pub fn plots_dir(&self) -> Result<PathBuf, RunDirError> {
        let p = self.path.join(Self::PLOTS);
        fs::create_dir_all(&p).map_err(io_err(&p))?;
        Ok(p)
    }

    /// Store a file the caller owns (a copy of the design, the resolved settings), atomically.
    pub fn store(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<PathBuf, RunDirError> {
        let plain = !name.is_empty()
            && name != "."
            && name != ".."
            && Path::new(name).file_name().is_some_and(|f| f == name);
        if !plain {
            return Err(RunDirError::BadName { name: name.to_string() });
        }
        let p = self.file(name);
        write_atomic(&p, contents.as_ref()).map_err(io_err(&p))?;
        Ok(p)
    }
}

/// Write `bytes` to `path` so that readers see the old or the new file, never
/// a part: temporary file, fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(path)
}

/// `name.ext` -> `name.ext.tmp`.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Make a rename durable (a no-op where directories cannot be opened).
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        if let Ok(d) = fs::File::open(dir) {
            d.sync_all()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_existing_without_force_and_keeps_foreign_files_with_force() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("run");
        let rd = RunDir::create(&p, false).unwrap();
        rd.store("design.ron", "Design()").unwrap();
        rd.store("history.csv", "old").unwrap();
        fs::create_dir_all(p.join("plots")).unwrap();
        fs::write(p.join("plots/fitness.png"), b"x").unwrap();
        fs::write(p.join("notes.txt"), b"mine").unwrap();
        let err = RunDir::create(&p, false).unwrap_err();
        assert!(matches!(err, RunDirError::Exists { .. }), "{err}");
        // Nothing was touched by the refusal.
        assert_eq!(fs::read_to_string(p.join("history.csv")).unwrap(), "old");
        RunDir::create(&p, true).unwrap();
        assert!(!p.join("history.csv").exists() && !p.join("plots").exists());
        assert_eq!(fs::read_to_string(p.join("notes.txt")).unwrap(), "mine");
        assert_eq!(fs::read_to_string(p.join("design.ron")).unwrap(), "Design()");
    }

    #[test]
    fn empty_directory_is_accepted_and_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        RunDir::create(tmp.path(), false).unwrap();
        let f = tmp.path().join("file");
        fs::write(&f, b"").unwrap();
        assert!(matches!(RunDir::create(&f, true), Err(RunDirError::NotADirectory { .. })));
        assert!(matches!(RunDir::open(tmp.path().join("nope")), Err(RunDirError::Missing { .. })));
    }

    #[test]
    fn store_takes_plain_names_only() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = RunDir::create(tmp.path().join("r"), false).unwrap();
        for bad in ["../x", "a/b", "", "..", "."] {
            assert!(matches!(rd.store(bad, "x"), Err(RunDirError::BadName { .. })), "{bad}");
        }
        let p = rd.store("settings.ron", "Ga()").unwrap();
        assert_eq!(fs::read_to_string(p).unwrap(), "Ga()");
        assert!(!tmp.path().join("r/settings.ron.tmp").exists());
    }
}
