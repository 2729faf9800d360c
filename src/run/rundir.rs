//! `RunDir`: the folder `runs/NAME/` a run owns, the lock that keeps two
//! processes from writing into it at once, and durable atomic file writes.
//!
//! Durability: every file a run depends on is written to a uniquely named
//! temporary file, fsynced, renamed over its target, and the directory is
//! fsynced, so a kill at any moment (`kill -9`, power loss) leaves the old file
//! or the new one, never a part. A new run directory appears complete (design
//! and settings inside) or not at all: it is prepared under a temporary name and
//! renamed into place.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a run directory could not be created, opened, locked or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunDirError {
    #[error(
        "run directory {path} already exists and is not empty: continue it with `emvolve resume {path}`, or start over in it with --force"
    )]
    Exists { path: PathBuf },
    #[error("{path} exists and is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("run directory {path} does not exist")]
    Missing { path: PathBuf },
    #[error("`{name}` is not a plain file name")]
    BadName { name: String },
    #[error("run directory {path} is in use by {holder} (it holds the lock {lock}); wait for it to finish or stop it first")]
    Locked { path: PathBuf, lock: PathBuf, holder: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io { path: path.to_path_buf(), source }
}

/// The files a run writes itself; `force` removes these (and stale temporaries) and nothing else.
pub const OWNED_FILES: &[&str] =
    &["checkpoint.ron", "checkpoint.prev.ron", "checkpoint.ron.tmp", "checkpoint.prev.ron.tmp", "history.csv", "history.csv.tmp"];

/// Temporary files are `.emvolve-<target>.<random>.tmp`: unique per writer, and
/// recognisable, so the next process holding the lock can clear what a killed one left.
const TMP_PREFIX: &str = ".emvolve-";
const TMP_SUFFIX: &str = ".tmp";
/// Suffix of the folder a new run directory is prepared in.
const SETUP_SUFFIX: &str = ".setup.tmp";

/// An exclusive OS lock (`flock` on Unix) on a run directory's lock file, held
/// while a process writes into the directory; released when dropped or when
/// the process ends in any way. The file keeps the holder's PID for messages.
#[derive(Debug)]
pub struct RunLock {
    _file: fs::File,
    path: PathBuf,
}

impl RunLock {
    /// Take the lock of `dir` or say who holds it. Never waits.
    pub fn acquire(dir: &Path) -> Result<RunLock, RunDirError> {
        let path = dir.join(RunDir::LOCK);
        let mut file =
            fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io_err(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("process {pid}"),
                    // Locked an instant ago, its PID not yet written.
                    Err(_) => "another process".to_string(),
                };
                return Err(RunDirError::Locked { path: dir.to_path_buf(), lock: path, holder });
            }
            Err(fs::TryLockError::Error(e)) => return Err(RunDirError::Io { path, source: e }),
        }
        file.set_len(0).map_err(io_err(&path))?;
        file.write_all(std::process::id().to_string().as_bytes()).map_err(io_err(&path))?;
        Ok(RunLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A run's directory; `lock` is held when this process may write into it.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
    lock: Option<Arc<RunLock>>,
}

impl RunDir {
    pub const CHECKPOINT: &'static str = "checkpoint.ron";
    pub const CHECKPOINT_PREV: &'static str = "checkpoint.prev.ron";
    pub const HISTORY: &'static str = "history.csv";
    pub const PLOTS: &'static str = "plots";
    /// The lock file (holds the PID of the last process that took the lock).
    pub const LOCK: &'static str = "run.lock";

    /// Create the directory for a new run, locked. See [`RunDir::create_with`].
    pub fn create(path: impl AsRef<Path>, force: bool) -> Result<RunDir, RunDirError> {
        RunDir::create_with(path, force, &[])
    }

    /// Create the directory for a new run holding `files` (name, contents), and
    /// lock it. An existing non-empty directory is refused unless `force`; with
    /// `force` only the files a run writes ([`OWNED_FILES`], `plots/`, stale
    /// temporaries) are removed and `files` replaced, anything else is left alone,
    /// and a directory another process holds is refused whatever `force` says.
    ///
    /// A new directory is prepared under a temporary name and renamed into place,
    /// so a kill never leaves a run directory without its `files`.
    pub fn create_with(path: impl AsRef<Path>, force: bool, files: &[(&str, &[u8])]) -> Result<RunDir, RunDirError> {
        let path = path.as_ref().to_path_buf();
        for (name, _) in files {
            check_name(name)?;
        }
        if path.exists() {
            if !path.is_dir() {
                return Err(RunDirError::NotADirectory { path });
            }
            let empty = fs::read_dir(&path)
                .map_err(io_err(&path))?
                .filter_map(Result::ok)
                .all(|e| e.file_name() == RunDir::LOCK);
            if !empty && !force {
                return Err(RunDirError::Exists { path });
            }
            return RunDir::reuse(path, files);
        }
        let parent = dir_of(&path).to_path_buf();
        fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        clear_dead_stages(&parent);
        let stage = temp_builder(SETUP_SUFFIX, true).tempdir_in(&parent).map_err(io_err(&parent))?;
        // The lock is taken in the staging directory: the lock file keeps its
        // inode through the rename, so the run is never visible unlocked.
        let lock = RunLock::acquire(stage.path())?;
        for (name, bytes) in files {
            let p = stage.path().join(name);
            write_atomic(&p, bytes).map_err(io_err(&p))?;
        }
        // Renaming onto an empty directory replaces it (POSIX); onto a non-empty one it fails.
        if let Err(e) = fs::rename(stage.path(), &path) {
            return Err(if path.is_dir() { RunDirError::Exists { path } } else { RunDirError::Io { path, source: e } });
        }
        let _ = stage.keep();
        sync_dir(&path).map_err(io_err(&parent))?;
        let lock = RunLock { path: path.join(RunDir::LOCK), ..lock };
        Ok(RunDir { path, lock: Some(Arc::new(lock)) })
    }

    /// `--force` on an existing run directory: lock it, stage the new files,
    /// clear what the old run wrote, then put the new files in place.
    fn reuse(path: PathBuf, files: &[(&str, &[u8])]) -> Result<RunDir, RunDirError> {
        let lock = RunLock::acquire(&path)?;
        let mut staged = Vec::new();
        for (name, bytes) in files {
            let target = path.join(name);
            staged.push((durable_temp(&target, bytes).map_err(io_err(&target))?, target));
        }
        clear_stale_temporaries(&path, &staged.iter().map(|(t, _)| t.path().to_path_buf()).collect::<Vec<_>>())?;
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
        for (tmp, target) in staged {
            tmp.persist(&target).map_err(|e| RunDirError::Io { path: target.clone(), source: e.error })?;
        }
        sync_dir(&path).map_err(io_err(&path))?;
        Ok(RunDir { path, lock: Some(Arc::new(lock)) })
    }

    /// An existing run directory, read only (inspect): no lock is taken, so it
    /// works while a run goes on.
    pub fn open(path: impl AsRef<Path>) -> Result<RunDir, RunDirError> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(RunDirError::Missing { path });
        }
        if !path.is_dir() {
            return Err(RunDirError::NotADirectory { path });
        }
        Ok(RunDir { path, lock: None })
    }

    /// An existing run directory to write into (resume): locked, and cleared of
    /// the temporaries a killed process may have left.
    pub fn open_locked(path: impl AsRef<Path>) -> Result<RunDir, RunDirError> {
        let RunDir { path, .. } = RunDir::open(path)?;
        let lock = RunLock::acquire(&path)?;
        clear_stale_temporaries(&path, &[])?;
        Ok(RunDir { path, lock: Some(Arc::new(lock)) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this process holds the directory's lock.
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }

    /// Path of a file in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Store a file the caller owns (a copy of the design, the resolved settings), atomically.
    pub fn store(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<PathBuf, RunDirError> {
        check_name(name)?;
        let p = self.file(name);
        write_atomic(&p, contents.as_ref()).map_err(io_err(&p))?;
        Ok(p)
    }
}

fn check_name(name: &str) -> Result<(), RunDirError> {
    let plain =
        !name.is_empty() && name != "." && name != ".." && Path::new(name).file_name().is_some_and(|f| f == name);
    if plain {
        Ok(())
    } else {
        Err(RunDirError::BadName { name: name.to_string() })
    }
}

/// A builder of unique temporary names `.emvolve-<random><suffix>`, files 0644 and folders 0755 on Unix.
fn temp_builder(suffix: &str, dir: bool) -> tempfile::Builder<'static, '_> {
    let mut b = tempfile::Builder::new();
    b.prefix(TMP_PREFIX).suffix(suffix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(fs::Permissions::from_mode(if dir { 0o755 } else { 0o644 }));
    }
    #[cfg(not(unix))]
    let _ = dir;
    b
}

/// `.<name>.tmp` for a temporary standing in for `target`.
fn temp_suffix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}{TMP_SUFFIX}")
}

/// A temporary file beside `target` with a unique name, holding `bytes`, fsynced.
pub(crate) fn durable_temp(target: &Path, bytes: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    let suffix = temp_suffix(target);
    let mut tmp = temp_builder(&suffix, false).tempfile_in(dir_of(target))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// A new uniquely named path beside `target`, made by `make` (a hard link, say).
pub(crate) fn temp_made_by(target: &Path, make: impl FnMut(&Path) -> io::Result<()>) -> io::Result<tempfile::NamedTempFile<()>> {
    let suffix = temp_suffix(target);
    temp_builder(&suffix, false).make_in(dir_of(target), make)
}

/// Write `bytes` to `path` so that readers see the old or the new file, never
/// a part: a uniquely named temporary file, fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = durable_temp(path, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(path)
}

/// Remove `.emvolve-*.tmp` files and folders left by a killed process, but not `keep`.
fn clear_stale_temporaries(dir: &Path, keep: &[PathBuf]) -> Result<(), RunDirError> {
    for e in fs::read_dir(dir).map_err(io_err(dir))?.filter_map(Result::ok) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let p = e.path();
        if name.starts_with(TMP_PREFIX) && name.ends_with(TMP_SUFFIX) && !keep.contains(&p) {
            let r = if p.is_dir() { fs::remove_dir_all(&p) } else { fs::remove_file(&p) };
            r.map_err(io_err(&p))?;
        }
    }
    Ok(())
}

/// Remove staging folders of new run directories whose process died (their lock is free).
fn clear_dead_stages(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(TMP_PREFIX) && name.ends_with(SETUP_SUFFIX) && e.path().is_dir() {
            if let Ok(lock) = RunLock::acquire(&e.path()) {
                drop(lock);
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Make a rename in `path`'s directory durable (a no-op where directories cannot be opened).
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    if let Ok(d) = fs::File::open(dir_of(path)) {
        d.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

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
        drop(rd);
        let err = RunDir::create(&p, false).unwrap_err();
        assert!(matches!(err, RunDirError::Exists { .. }), "{err}");
        assert!(err.to_string().contains("emvolve resume"), "{err}");
        // Nothing was touched by the refusal.
        assert_eq!(fs::read_to_string(p.join("history.csv")).unwrap(), "old");
        let rd = RunDir::create_with(&p, true, &[("design.ron", b"Design(new)")]).unwrap();
        assert!(!p.join("history.csv").exists() && !p.join("plots").exists());
        assert_eq!(fs::read_to_string(p.join("notes.txt")).unwrap(), "mine");
        assert_eq!(fs::read_to_string(p.join("design.ron")).unwrap(), "Design(new)");
        assert!(rd.is_locked());
    }

    #[test]
    fn empty_directory_is_accepted_and_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("empty");
        fs::create_dir(&d).unwrap();
        RunDir::create(&d, false).unwrap();
        let f = tmp.path().join("file");
        fs::write(&f, b"").unwrap();
        assert!(matches!(RunDir::create(&f, true), Err(RunDirError::NotADirectory { .. })));
        assert!(matches!(RunDir::open(tmp.path().join("nope")), Err(RunDirError::Missing { .. })));
    }

    #[test]
    fn a_new_directory_appears_with_its_files_and_leaves_no_temporaries() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("runs/new");
        let rd = RunDir::create_with(&p, false, &[("design.ron", b"D"), ("settings.ron", b"S")]).unwrap();
        assert_eq!(names(&p), ["design.ron", "run.lock", "settings.ron"]);
        assert_eq!(names(&tmp.path().join("runs")), ["new"], "the staging directory was left behind");
        assert_eq!(fs::read_to_string(p.join(RunDir::LOCK)).unwrap(), std::process::id().to_string());
        assert!(matches!(RunDir::create_with(&p, false, &[("../x", b"")]), Err(RunDirError::BadName { .. })));
        drop(rd);
    }

    #[test]
    fn the_lock_names_its_holder_and_is_released_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r");
        let rd = RunDir::create(&p, false).unwrap();
        // flock locks belong to open files: a second open in this process conflicts as another process would.
        let err = RunDir::open_locked(&p).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, RunDirError::Locked { .. }), "{text}");
        assert!(text.contains(&format!("process {}", std::process::id())) && text.contains("run.lock"), "{text}");
        // --force cannot take a directory in use either.
        assert!(matches!(RunDir::create(&p, true), Err(RunDirError::Locked { .. })));
        // Reading needs no lock.
        assert!(!RunDir::open(&p).unwrap().is_locked());
        drop(rd);
        assert!(RunDir::open_locked(&p).unwrap().is_locked());
    }

    #[test]
    fn stale_temporaries_are_cleared_by_the_next_holder_only() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r");
        drop(RunDir::create(&p, false).unwrap());
        fs::write(p.join(".emvolve-abc.checkpoint.ron.tmp"), b"half").unwrap();
        fs::write(p.join(".mine.tmp"), b"user's").unwrap();
        let rd = RunDir::open_locked(&p).unwrap();
        assert_eq!(names(&p), [".mine.tmp", "run.lock"]);
        drop(rd);
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
        assert_eq!(names(&tmp.path().join("r")), ["run.lock", "settings.ron"]);
    }
}
