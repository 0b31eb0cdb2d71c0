//! The configuration every git call on the checkout reads: qa-loop's own, never the
//! repository's.
//!
//! git runs programs that its configuration names — `core.fsmonitor` on `git status`, a diff
//! driver's `textconv` or `command` on `git diff`, a filter's `clean` on `git add`,
//! `diff.external`, `core.pager`, `gpg.program`, credential helpers, … — and the repository's
//! `.git/config` and `.git/info/attributes` may have been written by the change's code before
//! qa-loop started (an earlier workflow step's `npm ci` running a dependency's postinstall). So
//! git runs with the repository's own git directory (`GIT_DIR`: `HEAD`, the index) but a private
//! *common* directory (`GIT_COMMON_DIR`) that qa-loop writes itself: its `config` holds only the
//! values that shape how files read (line endings, file modes, case, the object and ref formats,
//! the committer's identity) copied from the repository's, none of which names a program; its
//! `objects`, `refs`, `packed-refs`, `logs`, `shallow` and `info/exclude` are links to the
//! repository's. No `info/attributes`, no hooks, no drivers: whatever a file's attributes name, no
//! driver is defined, so none runs.
//!
//! The private directories live under one directory per process ([`private_dir`]), which the
//! sandbox masks from the change's code (SPEC §10).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Keys copied from the repository's configuration: none of them names a program or a file
/// git would read, and each changes how the repository's files read or commits are made.
const KEPT: [&str; 14] = [
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.logallrefupdates",
    "extensions.objectformat",
    "extensions.refstorage",
    "user.name",
    "user.email",
];

/// Entries of the repository's common directory the private one links to.
const SHARED: [&str; 6] = [
    "objects",
    "refs",
    "packed-refs",
    "logs",
    "shallow",
    "reftable",
];

/// A repository's git directories and the private common directory its calls use.
#[derive(Debug)]
pub struct Jail {
    /// The work tree's top directory.
    pub work_tree: PathBuf,
    /// The repository's git directory (`.git`, or `.git/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// The repository's common directory (`.git` of the main worktree).
    pub common: PathBuf,
    /// qa-loop's own common directory.
    pub private: PathBuf,
    /// `remote.origin.url`, read when the jail was made (before any of the change's code ran in
    /// this process).
    pub origin: Option<String>,
}

static PRIVATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static JAILS: Mutex<Vec<(PathBuf, Arc<Jail>)>> = Mutex::new(Vec::new());

/// The process's private directory (0700, under the system's temp directory), made on first
/// use: the private git directories live there, and the sandbox masks it.
pub fn private_dir() -> Result<&'static Path, String> {
    PRIVATE
        .get_or_init(|| {
            tempfile::Builder::new()
                .prefix("qa-loop-private-")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .map(|d| d.keep())
                .map_err(|e| format!("cannot make qa-loop's private directory: {e}"))
        })
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// Removes the private directory (at exit; git calls after it fail).
pub fn remove_private_dir() {
    if let Some(Ok(dir)) = PRIVATE.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The jail of the repository holding `root`, made on first use; `None` when `root` is in no
/// repository (`git init` is then the only call that can work).
pub fn jail(root: &Path) -> Result<Option<Arc<Jail>>, String> {
    let key = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut jails = JAILS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, j)) = jails.iter().find(|(r, _)| *r == key) {
        return Ok(Some(j.clone()));
    }
    let Some((work_tree, git_dir, common)) = git_dirs(&key) else {
        return Ok(None);
    };
    let jail = Arc::new(make(work_tree, git_dir, common)?);
    jails.push((key, jail.clone()));
    Ok(Some(jail))
}

/// The work tree's top, the git directory and the common directory of the repository holding
/// `root`, found as git finds them (the nearest `.git`, a directory or a `gitdir:` file; its
/// `commondir`), without running git.
pub fn git_dirs(root: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    for dir in root.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let named = text.trim().strip_prefix("gitdir:")?.trim().to_string();
            dir.join(named)
        } else {
            dot_git
        };
        let git_dir = std::fs::canonicalize(&git_dir).ok()?;
        if !git_dir.join("HEAD").exists() {
            return None;
        }
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(c) => std::fs::canonicalize(git_dir.join(c.trim())).ok()?,
            Err(_) => git_dir.clone(),
        };
        return Some((dir.to_path_buf(), git_dir, common));
    }
    None
}

fn make(work_tree: PathBuf, git_dir: PathBuf, common: PathBuf) -> Result<Jail, String> {
    let io = |e: std::io::Error| format!("cannot make a private git directory: {e}");
    let private = tempfile::Builder::new()
        .prefix("common-")
        .tempdir_in(private_dir()?)
        .map_err(io)?
        .keep();
    let all = list(&common.join("config"), &private);
    let origin = all
        .iter()
        .find(|(k, _)| k == "remote.origin.url")
        .map(|(_, v)| v.clone());
    let values: Vec<(String, String)> = all
        .into_iter()
        .filter(|(k, _)| KEPT.contains(&k.as_str()))
        .collect();
    let mut config = String::from("[core]\n\tbare = false\n");
    let format = |k: &str| values.iter().any(|(key, _)| key.starts_with(k));
    config.push_str(&format!(
        "\trepositoryformatversion = {}\n",
        u8::from(format("extensions."))
    ));
    for (key, value) in &values {
        let (section, name) = key.split_once('.').unwrap_or((key, ""));
        config.push_str(&format!("[{section}]\n\t{name} = {}\n", quote(value)));
    }
    // No automatic gc or maintenance: they would rewrite `packed-refs` here, not in the
    // repository, and run more git.
    config.push_str("[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n");
    std::fs::write(private.join("config"), config).map_err(io)?;
    for name in SHARED {
        std::os::unix::fs::symlink(common.join(name), private.join(name)).map_err(io)?;
    }
    std::fs::create_dir(private.join("info")).map_err(io)?;
    // Ignored files only hide untracked files (never a change under review): the repository's
    // own list is kept, so a local `.env` listed there is never committed by a fix.
    std::os::unix::fs::symlink(
        common.join("info").join("exclude"),
        private.join("info").join("exclude"),
    )
    .map_err(io)?;
    Ok(Jail {
        work_tree,
        git_dir,
        common,
        private,
        origin,
    })
}

/// Every `key value` of one configuration file (includes not followed), last value winning,
/// read by `git config --file` (which runs nothing) in the empty private directory (no
/// repository of the change is found from there).
fn list(file: &Path, cwd: &Path) -> Vec<(String, String)> {
    let Ok(program) = super::program::program() else {
        return Vec::new();
    };
    let out = std::process::Command::new(program)
        .args(["config", "--no-includes", "--file"])
        .arg(file)
        .args(["--list", "-z"])
        .current_dir(cwd)
        .env_clear()
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", cwd.parent().unwrap_or(cwd))
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output();
    let Ok(out) = out else { return Vec::new() };
    let mut found: Vec<(String, String)> = Vec::new();
    for entry in out.stdout.split(|b| *b == 0) {
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = entry.split_once('\n').unwrap_or((&entry, "true"));
        if key.is_empty() {
            continue;
        }
        let key = key.to_ascii_lowercase();
        found.retain(|(k, _)| *k != key);
        found.push((key, value.to_string()));
    }
    found
}

/// A value as git's configuration syntax reads it back unchanged.
fn quote(value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t");
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_worktree_names_its_own_and_the_common_git_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path().join("main/.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("HEAD"), "ref: refs/heads/x\n").unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let (top, git_dir, found_common) = git_dirs(&wt.join("sub")).unwrap();
        assert_eq!(top, wt);
        assert_eq!(git_dir, std::fs::canonicalize(&own).unwrap());
        assert_eq!(found_common, std::fs::canonicalize(&common).unwrap());
        assert!(git_dirs(Path::new("/")).is_none());
    }

    /// Every program-running key git reads from `.git/config` and `info/attributes`, planted
    /// before qa-loop's calls (status, diff, add, commit, log, format-patch, a fetch): none runs,
    /// and the calls still do their work (line endings and identity from the repository's config
    /// kept).
    #[test]
    fn planted_drivers_never_run() {
        crate::test_support::rt().block_on(async {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("repo");
            let loot = tmp.path().join("loot");
            std::fs::create_dir_all(&root).unwrap();
            let plain = |args: &[&str]| {
                let ok = std::process::Command::new("git")
                    .args(args)
                    .current_dir(&root)
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .status()
                    .unwrap();
                assert!(ok.success(), "{args:?}");
            };
            plain(&["init", "-q"]);
            std::fs::write(root.join("a.txt"), "one\n").unwrap();
            // The tree's own attributes still apply (only `info/attributes` is not read).
            std::fs::write(root.join(".gitattributes"), "*.bin binary\n").unwrap();
            std::fs::write(root.join("data.bin"), "v1\n").unwrap();
            plain(&["add", "-A"]);
            plain(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]);
            let script = tmp.path().join("drv.sh");
            std::fs::write(
                &script,
                format!(
                    "echo $1 >> {}\ncase $1 in textconv) cat \"$2\" ;; clean|smudge|pager) cat ;; esac\n",
                    loot.display()
                ),
            )
            .unwrap();
            let drv = |name: &str, _: &str| format!("sh {} {name}", script.display());
            let hooks = tmp.path().join("hooks");
            std::fs::create_dir_all(&hooks).unwrap();
            for h in ["pre-commit", "post-commit", "commit-msg", "reference-transaction"] {
                let path = hooks.join(h);
                std::fs::write(&path, format!("#!/bin/sh\necho {h} >> {}\n", loot.display())).unwrap();
                std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                    .unwrap();
            }
            let planted = format!(
                "[core]\n\tfsmonitor = {}\n\thooksPath = {}\n\tpager = {}\n\tsshCommand = {}\n\teditor = {}\n\tautocrlf = input\n[diff]\n\texternal = {}\n[diff \"evil\"]\n\ttextconv = {}\n\tcommand = {}\n[filter \"evil\"]\n\tclean = {}\n\tsmudge = {}\n[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {}\n[log]\n\tshowSignature = true\n[credential]\n\thelper = !{}\n[user]\n\tname = Repo Owner\n\temail = owner@example.com\n[remote \"origin\"]\n\turl = {}\n\tuploadpack = {}\n",
                drv("fsmonitor", ""),
                hooks.display(),
                drv("pager", "cat"),
                drv("ssh", ""),
                drv("editor", ""),
                drv("external", ""),
                drv("textconv", "cat \"$1\""),
                drv("diffcommand", ""),
                drv("clean", "cat"),
                drv("smudge", "cat"),
                drv("gpg", ""),
                drv("credential", ""),
                root.display(),
                drv("uploadpack", ""),
            );
            let config = root.join(".git/config");
            let mut text = std::fs::read_to_string(&config).unwrap();
            text.push_str(&planted);
            std::fs::write(&config, text).unwrap();
            std::fs::create_dir_all(root.join(".git/info")).unwrap();
            std::fs::write(root.join(".git/info/attributes"), "* diff=evil filter=evil\n").unwrap();
            std::fs::write(root.join("a.txt"), "one\r\ntwo\r\n").unwrap();
            std::fs::write(root.join("b.txt"), "new\n").unwrap();
            std::fs::write(root.join("data.bin"), "v2\n").unwrap();
            let git = |args: &'static [&'static str]| {
                let root = root.clone();
                async move { crate::vcs::git(&root, args).await }
            };
            let status = git(&["status", "--porcelain"]).await.unwrap();
            assert!(status.contains("a.txt") && status.contains("b.txt"), "{status}");
            let diff = git(&["diff", "--no-ext-diff", "--no-textconv", "HEAD"]).await.unwrap();
            assert!(diff.contains("+two"), "{diff}");
            assert!(diff.contains("Binary files a/data.bin and b/data.bin differ"), "{diff}");
            git(&["add", "-A"]).await.unwrap();
            git(&["commit", "-q", "-m", "fix"]).await.unwrap();
            let log = git(&["log", "-1", "--format=%an <%ae>"]).await.unwrap();
            assert_eq!(log.trim(), "Repo Owner <owner@example.com>");
            // `core.autocrlf = input` (kept) stored the file with LF endings.
            let blob = git(&["show", "HEAD:a.txt"]).await.unwrap();
            assert_eq!(blob, "one\ntwo\n");
            git(&["format-patch", "--stdout", "HEAD~1..HEAD"]).await.unwrap();
            let auth = crate::vcs::Auth { token: None, host: String::new() };
            crate::vcs::git_auth(&root, &auth, &["fetch", "-q", "origin"]).await.unwrap();
            let ran = std::fs::read_to_string(&loot).unwrap_or_default();
            assert_eq!(ran, "", "drivers ran");
        });
    }

    #[test]
    fn quoted_values_keep_what_they_say() {
        assert_eq!(quote(r#"A "B" \ C"#), r#""A \"B\" \\ C""#);
    }
}
