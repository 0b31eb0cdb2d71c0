//! The git directory credential-carrying calls (fetch, push, ls-remote with a token) run in: a
//! private one qa-loop writes itself, sharing only the repository's objects (and its shallow
//! list). So those calls read no configuration the change could have written — not the
//! repository's `.git/config`, not a file it includes from a runner-writable place — and talk to
//! the remote URL pinned before any of the change's code ran ([`pin_origin`]), never a
//! `pushInsteadOf` or a rewritten `remote.origin.url`. What a fetch brings is copied back into
//! the repository (refs under `refs/remotes/`, `FETCH_HEAD`, the shallow list) by plain git.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::git;

/// `remote.origin.url` of each repository, read once before any of the change's code runs.
static ORIGINS: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// Reads and keeps `remote.origin.url` of `root` (qa-loop calls it in `prepare`, before any of
/// the change's code runs). Later calls keep the first value.
pub async fn pin_origin(root: &Path) {
    let key = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if ORIGINS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|(r, _)| *r == key)
    {
        return;
    }
    if let Ok(Some(url)) = super::jail::jail(root).map(|j| j.and_then(|j| j.origin.clone())) {
        ORIGINS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key, url.trim().to_string()));
    }
}

/// The pinned URL of `origin` for `root` (read now when it was never pinned), refused unless a
/// token for `host` may go there.
pub async fn origin_url(root: &Path, host: &str) -> Result<String, String> {
    let url = pinned(root).await?;
    if may_carry_token(&url, host) {
        Ok(url)
    } else {
        Err(format!(
            "the remote `origin` is {url}, not on {host}: qa-loop sends its token nowhere else"
        ))
    }
}

pub(super) async fn pinned(root: &Path) -> Result<String, String> {
    pin_origin(root).await;
    let key = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    ORIGINS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(r, _)| *r == key)
        .map(|(_, u)| u.clone())
        .ok_or_else(|| "the repository has no remote `origin`".to_string())
}

/// Whether `url` may receive a token meant for `host`: a local path (git's file transport sends
/// no credential) or a URL on `host` itself.
pub fn may_carry_token(url: &str, host: &str) -> bool {
    let local = !url.contains("://") && !url.contains('@') && !url.contains(':');
    local || url.starts_with("file://") || url.starts_with(host)
}

/// A private git directory over the repository's objects.
pub struct Shadow {
    dir: tempfile::TempDir,
    git_dir: PathBuf,
    common: PathBuf,
}

impl Shadow {
    /// Makes the directory for a call in `root`.
    pub async fn new(root: &Path) -> Result<Shadow, String> {
        let jail = super::jail::jail(root)?.ok_or("not a git repository")?;
        let (git_dir, common) = (jail.git_dir.clone(), jail.common.clone());
        let format = git(root, &["rev-parse", "--show-object-format"])
            .await?
            .trim()
            .to_string();
        // Under the private directory the sandbox masks: no command can write its config.
        let dir = tempfile::Builder::new()
            .prefix("qa-loop-git-")
            .tempdir_in(super::jail::private_dir()?)
            .map_err(|e| format!("cannot make a private git directory: {e}"))?;
        let io = |e: std::io::Error| format!("cannot make a private git directory: {e}");
        std::fs::create_dir_all(dir.path().join("refs")).map_err(io)?;
        std::fs::write(dir.path().join("HEAD"), "ref: refs/heads/qa-loop\n").map_err(io)?;
        let config = if format == "sha1" {
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n".to_string()
        } else {
            format!(
                "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectFormat = {format}\n"
            )
        };
        std::fs::write(dir.path().join("config"), config).map_err(io)?;
        if let Ok(shallow) = std::fs::read(common.join("shallow")) {
            std::fs::write(dir.path().join("shallow"), shallow).map_err(io)?;
        }
        Ok(Shadow {
            dir,
            git_dir,
            common,
        })
    }

    /// The directory (`GIT_DIR`) and the objects it shares (`GIT_OBJECT_DIRECTORY`).
    pub fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("GIT_DIR", self.dir.path().to_path_buf()),
            ("GIT_OBJECT_DIRECTORY", self.common.join("objects")),
        ]
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies what a fetch brought into the repository: refs under `refs/remotes/`,
    /// `FETCH_HEAD` and the shallow list.
    pub async fn copy_back(&self, root: &Path) -> Result<(), String> {
        let refs = super::git_with(
            self.path(),
            &[
                "for-each-ref",
                "--format=%(objectname) %(refname)",
                "refs/remotes",
            ],
            &self
                .env()
                .iter()
                .map(|(k, v)| (*k, v.as_path()))
                .collect::<Vec<_>>(),
        )
        .await?;
        for line in refs.lines() {
            if let Some((sha, name)) = line.split_once(' ') {
                git(root, &["update-ref", name, sha]).await?;
            }
        }
        let io = |e: std::io::Error| format!("cannot copy what git fetched: {e}");
        if let Ok(head) = std::fs::read(self.path().join("FETCH_HEAD")) {
            std::fs::write(self.git_dir.join("FETCH_HEAD"), head).map_err(io)?;
        }
        // A fetch that reached the root commits removes the shallow list: so does the copy.
        let ours = std::fs::read(self.path().join("shallow")).ok();
        let theirs = std::fs::read(self.common.join("shallow")).ok();
        match (ours, theirs) {
            (Some(ours), theirs) if theirs.as_deref() != Some(&ours[..]) => {
                let tmp = self.common.join("shallow.qa-loop");
                std::fs::write(&tmp, &ours).map_err(io)?;
                std::fs::rename(&tmp, self.common.join("shallow")).map_err(io)?;
            }
            (None, Some(_)) => std::fs::remove_file(self.common.join("shallow")).map_err(io)?,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_goes_only_to_its_host_or_a_local_path() {
        let host = "https://github.com/";
        for (url, ok) in [
            ("https://github.com/o/r", true),
            ("https://github.com/o/r.git", true),
            ("/tmp/remote.git", true),
            ("../remote.git", true),
            ("file:///tmp/remote.git", true),
            ("https://evil.example/o/r", false),
            ("https://github.com.evil.example/o/r", false),
            ("https://x:tok@evil.example/o/r", false),
            ("git@github.com:o/r.git", false),
            ("ssh://github.com/o/r", false),
        ] {
            assert_eq!(may_carry_token(url, host), ok, "{url}");
        }
    }
}
