//! git's own binary, found once on `PATH` before any of the change's code runs, never where the
//! job's user (or, for a root job, the sandboxed code) could replace it. Every git call qa-loop
//! makes runs this one path: a `git` the change plants later in a directory on `PATH`
//! (`~/.local/bin`, a tool cache) is never run.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static GIT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The git binary, found on first use (qa-loop calls it in `prepare`, before anything runs).
pub fn program() -> Result<&'static Path, String> {
    GIT.get_or_init(|| {
        find(
            &std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            nix::unistd::geteuid().is_root(),
        )
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(Clone::clone)
}

/// The first `git` on `path` that the change cannot replace: for a user, one no ancestor of
/// which the user can write; for root, one under the system directories the sandbox makes
/// read-only ([`crate::sandbox::SYSTEM_DIRS`]).
fn find(path: &std::ffi::OsStr, root: bool) -> Result<PathBuf, String> {
    let mut skipped = Vec::new();
    for candidate in crate::sandbox::on_path(path, "git") {
        let real = std::fs::canonicalize(&candidate).unwrap_or_else(|_| candidate.clone());
        let replaceable = if root {
            !crate::sandbox::SYSTEM_DIRS
                .iter()
                .any(|d| real.starts_with(d) && candidate.starts_with(d))
        } else {
            crate::sandbox::writable_by_us(&candidate).is_some()
                || crate::sandbox::writable_by_us(&real).is_some()
        };
        if replaceable {
            skipped.push(candidate.display().to_string());
            continue;
        }
        if !skipped.is_empty() {
            tracing::warn!(
                "git at {} is not used: the job's user can replace it (using {})",
                skipped.join(", "),
                candidate.display()
            );
        }
        return Ok(candidate);
    }
    Err(if skipped.is_empty() {
        "git is not installed (no `git` on PATH)".to_string()
    } else {
        format!(
            "every git on PATH can be replaced by the job's user ({}): qa-loop runs only a git it can trust; install git where the user cannot write (e.g. /usr/bin)",
            skipped.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_planted_before_the_system_one_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let planted = tmp.path().join("bin");
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(planted.join("git"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(
            planted.join("git"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let system = find(std::ffi::OsStr::new("/usr/bin:/bin"), true).unwrap();
        let path = format!("{}:/usr/bin:/bin", planted.display());
        // Root: only the system directories count; a user: nothing the user can write.
        let found = find(std::ffi::OsStr::new(&path), true).unwrap();
        assert_eq!(found, system);
        if !nix::unistd::geteuid().is_root() {
            let found = find(std::ffi::OsStr::new(&path), false).unwrap();
            assert!(!found.starts_with(tmp.path()), "{}", found.display());
        }
        let only = planted.display().to_string();
        let err = find(std::ffi::OsStr::new(&only), true).unwrap_err();
        assert!(err.contains("can be replaced"), "{err}");
    }
}
