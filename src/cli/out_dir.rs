//! Where `simulate` and `plot` write, so that neither replaces earlier results
//! unannounced: a default directory that already holds files gives way to a
//! numbered one (`runs/NAME-simulate-2`), a directory named with `--out` that
//! already holds files is refused unless `--force`, as `run` does with its run
//! directory.

use std::path::{Path, PathBuf};

/// The directory to write into, and a line saying why it is not the default
/// one (or what it replaces), to print with it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutDir {
    pub path: PathBuf,
    pub note: Option<String>,
}

/// Does `dir` exist with something in it (an unreadable one counts as full)?
fn holds_files(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut it) => it.next().is_some(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// Pick the output directory. `explicit` is `--out`; `default` the directory
/// used without it; `force` lets either be written over.
pub fn choose(explicit: Option<&Path>, default: &Path, force: bool) -> anyhow::Result<OutDir> {
    if let Some(dir) = explicit {
        if !holds_files(dir) {
            return Ok(OutDir { path: dir.to_path_buf(), note: None });
        }
        if force {
            return Ok(OutDir { path: dir.to_path_buf(), note: Some(format!("--force: files in {} are replaced", dir.display())) });
        }
        anyhow::bail!(
            "{} already holds files (an earlier result?): name another --out, or add --force to replace them",
            dir.display()
        );
    }
    if force || !holds_files(default) {
        let note = (force && holds_files(default)).then(|| format!("--force: files in {} are replaced", default.display()));
        return Ok(OutDir { path: default.to_path_buf(), note });
    }
    let name = default.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // The first numbered sibling that is absent or empty; bounded so a full
    // directory tree cannot loop forever.
    for k in 2..100_000 {
        let candidate = default.with_file_name(format!("{name}-{k}"));
        if !holds_files(&candidate) {
            return Ok(OutDir {
                note: Some(format!("{} holds an earlier result, kept; writing into {}", default.display(), candidate.display())),
                path: candidate,
            });
        }
    }
    anyhow::bail!("{}: no free numbered directory beside it (-2 to -99999 all hold files); name one with --out", default.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_directory_in_use_gives_way_to_a_numbered_one_and_an_explicit_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let def = tmp.path().join("runs").join("f-simulate");
        // Absent, then empty: used as is.
        assert_eq!(choose(None, &def, false).unwrap(), OutDir { path: def.clone(), note: None });
        std::fs::create_dir_all(&def).unwrap();
        assert_eq!(choose(None, &def, false).unwrap().path, def);
        std::fs::write(def.join("f.s2p"), "x").unwrap();
        let two = choose(None, &def, false).unwrap();
        assert_eq!(two.path, tmp.path().join("runs").join("f-simulate-2"));
        assert_eq!(
            two.note.unwrap(),
            format!("{} holds an earlier result, kept; writing into {}", def.display(), two.path.display())
        );
        std::fs::create_dir_all(&two.path).unwrap();
        std::fs::write(two.path.join("f.s2p"), "x").unwrap();
        assert_eq!(choose(None, &def, false).unwrap().path, tmp.path().join("runs").join("f-simulate-3"));
        // --force takes the default back, saying so.
        let forced = choose(None, &def, true).unwrap();
        assert_eq!(forced.path, def);
        assert!(forced.note.unwrap().starts_with("--force: files in"));
        // --out holding files: refused, naming it and the ways out.
        let err = choose(Some(&def), &def, false).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{} already holds files (an earlier result?): name another --out, or add --force to replace them", def.display())
        );
        assert_eq!(choose(Some(&def), &def, true).unwrap().path, def);
        let fresh = tmp.path().join("new");
        assert_eq!(choose(Some(&fresh), &def, false).unwrap(), OutDir { path: fresh, note: None });
    }
}
