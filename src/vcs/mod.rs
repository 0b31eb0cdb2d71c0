//! The git CLI, for what qa-loop needs of the repository: the diff under review.

use std::path::Path;

mod added;
mod change;
mod command;
mod jail;
mod program;
mod shadow;
pub use added::{AddedFile, AddedLines, parse_added_lines};
use added::{AddedParser, Hunk};
pub use change::{Change, ChangeCache, Section, is_under};
pub use command::git;
pub(crate) use command::git_with;
use command::{isolated, output, succeeded, unjailed};
pub use jail::{git_dirs, private_dir, remove_private_dir};
pub use program::program;
pub use shadow::pin_origin;

/// Credentials for talking to a remote: a token, and the host whose persisted
/// `http.<host>.extraheader` (left by `actions/checkout`) it replaces.
#[derive(Debug, Clone)]
pub struct Auth {
    pub token: Option<crate::secrets::Secret>,
    /// `https://github.com/` (`$GITHUB_SERVER_URL` + `/`).
    pub host: String,
}

/// `git` talking to a remote with `auth`'s token. The token never appears in git's argv or
/// environment (`/proc/<pid>/cmdline` and `environ` of a process are readable by a daemon a
/// test left behind): it is written to a pipe that git's credential helper reads, one line per
/// request. Without a token, no credential is sent.
///
/// git runs in a private git directory over the repository's objects ([`shadow::Shadow`]): it
/// reads no configuration the change could have written (no credential helper, no
/// `pushInsteadOf`, no `core.sshCommand`), and the argument `origin` stands for the remote URL
/// pinned at start (with a token, refused unless it is on the token's host or a local path).
/// What a fetch brings is copied back into the repository.
pub async fn git_auth(root: &Path, auth: &Auth, args: &[&str]) -> Result<String, String> {
    let shadow = shadow::Shadow::new(root).await?;
    let url = match (args.contains(&"origin"), &auth.token) {
        (false, _) => String::new(),
        (true, Some(_)) => shadow::origin_url(root, &auth.host).await?,
        (true, None) => shadow::pinned(root).await?,
    };
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "origin" { url.as_str() } else { a })
        .collect();
    let args = &args[..];
    let (reader, mut writer) =
        std::io::pipe().map_err(|e| format!("cannot hand git the credential: {e}"))?;
    if let Some(token) = &auth.token {
        use std::io::Write;
        // One line per credential request git may make (a 401 retry asks again).
        let lines = format!("{}\n", token.expose()).repeat(4);
        writer
            .write_all(lines.as_bytes())
            .map_err(|e| format!("cannot hand git the credential: {e}"))?;
    }
    drop(writer);
    // git and its helpers get the read end as fd 3 (a single digit: `dash` takes no more).
    let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
    let helper = "!f() { test \"$1\" = get || exit 0; IFS= read -r t <&3 || exit 0; echo username=x-access-token; echo \"password=$t\"; }; f".to_string();
    let mut config = vec![("credential.helper", "")];
    if auth.token.is_some() {
        config.push(("credential.helper", helper.as_str()));
    }
    let mut cmd = unjailed(root, &config);
    cmd.args(args).current_dir(shadow.path());
    for (k, v) in shadow.env() {
        cmd.env(k, v);
    }
    // SAFETY: between fork and exec only dup2/fcntl, which are async-signal-safe; `fd` is open (owned
    // by `reader`, alive until after the child exited).
    unsafe {
        cmd.pre_exec(move || {
            // When the pipe already is fd 3, dup2 is a no-op that leaves close-on-exec set
            // (exec would close it): clear the flag instead.
            let status = if fd == 3 {
                nix::libc::fcntl(3, nix::libc::F_SETFD, 0)
            } else {
                nix::libc::dup2(fd, 3)
            };
            if status < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let result = output(cmd, args).await;
    drop(reader);
    let result = match &auth.token {
        Some(token) => result.map_err(|e| e.replace(token.expose(), "***"))?,
        None => result?,
    };
    if args.first() == Some(&"fetch") || args.contains(&"fetch") {
        shadow.copy_back(root).await?;
    }
    Ok(result)
}

/// What the change under review is compared with, decided once before the run
/// (`run::base`). Everything that needs the change — the reviewer's diff, pattern checks, the
/// coverage of added lines, annotations — fails with the reason when it is unresolved, never
/// silently finds "no change".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffBase {
    /// A commit, the merge base of the named base and `HEAD` (resolved once, `run::base`): the
    /// change is this commit to the working tree.
    Rev(String),
    /// It could not be determined, and why.
    Unresolved(String),
}

impl DiffBase {
    /// The revision, or why there is none.
    pub fn rev(&self) -> Result<&str, String> {
        match self {
            DiffBase::Rev(r) => Ok(r),
            DiffBase::Unresolved(why) => Err(format!("the change could not be determined: {why}")),
        }
    }
}

impl From<&str> for DiffBase {
    fn from(rev: &str) -> Self {
        DiffBase::Rev(rev.to_string())
    }
}

/// git's empty tree: the base of a repository without commits (every file is new).
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Whether the commit `ancestor` is in the history of `HEAD` (false when this checkout does not
/// have it).
pub async fn is_ancestor_of_head(root: &Path, ancestor: &str) -> bool {
    git(root, &["merge-base", "--is-ancestor", ancestor, "HEAD"])
        .await
        .is_ok()
}

/// One commit of a range, as [`commits_between`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitLine {
    pub sha: String,
    pub author: String,
    pub subject: String,
    /// The `QA-Loop-Iteration:` trailer of qa-loop's fix commits.
    pub fix_iteration: Option<u32>,
}

/// The commits in `from..HEAD`, oldest first (at most `limit`, the newest kept).
pub async fn commits_since(
    root: &Path,
    from: &str,
    limit: usize,
) -> Result<Vec<CommitLine>, String> {
    let range = format!("{from}..HEAD");
    let max = format!("--max-count={limit}");
    let out = git(
        root,
        &[
            "log",
            &max,
            "--format=%H%x1f%an%x1f%s%x1f%(trailers:key=QA-Loop-Iteration,valueonly,separator=%x2C)%x1e",
            &range,
            "--",
        ],
    )
    .await?;
    let mut commits: Vec<CommitLine> = out
        .split('\x1e')
        .filter_map(|rec| {
            let mut f = rec.trim_matches('\n').split('\x1f');
            let sha = f.next()?.trim().to_string();
            if sha.is_empty() {
                return None;
            }
            Some(CommitLine {
                sha,
                author: crate::text::visible(f.next().unwrap_or_default()),
                subject: crate::text::visible(f.next().unwrap_or_default()),
                fix_iteration: f
                    .next()
                    .and_then(|t| t.split(',').next())
                    .and_then(|t| t.trim().parse().ok()),
            })
        })
        .collect();
    commits.reverse();
    Ok(commits)
}

/// Whether `root` is inside a work tree, and its `HEAD` (none before the first commit): one
/// git call.
pub async fn work_tree_head(root: &Path) -> Result<Option<String>, String> {
    let args = [
        "rev-parse",
        "--is-inside-work-tree",
        "--verify",
        "--quiet",
        "HEAD^{commit}",
    ];
    let mut cmd = isolated(root, &[]);
    cmd.args(args);
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    if lines.next() != Some("true") {
        succeeded(&out, &args)?;
        return Err("not inside a git work tree".into());
    }
    // Exit 1 with no commit: `--verify --quiet` names none.
    Ok(lines
        .next()
        .filter(|l| out.status.success() && !l.is_empty())
        .map(str::to_string))
}

/// The merge base of `a` and `b`, or why there is none (`a` naming no commit, or no common
/// history).
pub async fn merge_base_of(root: &Path, a: &str, b: &str) -> Result<String, String> {
    let sha = git(root, &["merge-base", a, b]).await.map_err(|e| {
        if e.contains("Not a valid") || e.contains("not a valid") {
            format!("`{a}` names no commit in this repository")
        } else if e.trim_end().ends_with("failed:") {
            format!("{a} and {b} have no common history")
        } else {
            e
        }
    })?;
    let sha = sha.trim();
    if sha.is_empty() {
        return Err(format!("{a} and {b} have no common history"));
    }
    Ok(sha.to_string())
}

/// The full commit id `rev` names.
pub async fn commit_id(root: &Path, rev: &str) -> Result<String, String> {
    let out = git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .await
    .map_err(|_| format!("`{rev}` names no commit in this repository"))?;
    Ok(out.trim().to_string())
}

/// Fetches `origin`'s `branch` into `refs/remotes/origin/<branch>`. In a shallow clone (the
/// `actions/checkout` default) both the branch and `HEAD` are fetched `depth` commits deep, so
/// that their merge base can appear; in a full clone the branch is fetched whole.
pub async fn fetch_branch(
    root: &Path,
    auth: Option<&Auth>,
    branch: &str,
    depth: u32,
) -> Result<(), String> {
    let refspec = format!("+refs/heads/{branch}:refs/remotes/origin/{branch}");
    let shallow = git(root, &["rev-parse", "--is-shallow-repository"])
        .await
        .is_ok_and(|o| o.trim() == "true");
    let depth = format!("--depth={depth}");
    let head = commit_id(root, "HEAD").await.ok();
    let mut args = vec!["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"];
    if shallow {
        args.push(&depth);
    }
    args.extend(["origin", refspec.as_str()]);
    if let (Some(h), true) = (&head, shallow) {
        let mut with_head = args.clone();
        with_head.push(h);
        // A server that refuses a commit it does not advertise still gives the branch.
        if fetch_with(root, auth, &with_head).await.is_ok() {
            return Ok(());
        }
    }
    fetch_with(root, auth, &args).await.map(drop)
}

/// Fetches one commit by its id from `origin` (one commit deep in a shallow clone): the base a
/// merge group was merged onto, which `actions/checkout`'s single commit does not hold.
pub async fn fetch_commit(root: &Path, auth: Option<&Auth>, sha: &str) -> Result<(), String> {
    let shallow = git(root, &["rev-parse", "--is-shallow-repository"])
        .await
        .is_ok_and(|o| o.trim() == "true");
    let mut args = vec!["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"];
    if shallow {
        args.push("--depth=1");
    }
    args.extend(["origin", sha]);
    fetch_with(root, auth, &args).await.map(drop)
}

async fn fetch_with(root: &Path, auth: Option<&Auth>, args: &[&str]) -> Result<String, String> {
    let none = Auth {
        token: None,
        host: String::new(),
    };
    git_auth(root, auth.unwrap_or(&none), args).await
}

/// The commit to diff against: the merge base of `base` and `HEAD` (what a pull request changes),
/// or `base` itself when there is none (`HEAD`, a shallow clone).
pub async fn merge_base(root: &Path, base: &str) -> String {
    match git(root, &["merge-base", base, "HEAD"]).await {
        Ok(sha) if !sha.trim().is_empty() => sha.trim().to_string(),
        _ => base.to_string(),
    }
}

/// The change under review, limited to `paths` (repository-relative, taken literally; all
/// files when empty): `git diff <merge-base>` plus the untracked files (by name). The whole of a
/// large change is read by the diff view (a module above this one), which never holds it.
pub async fn diff_paths(root: &Path, base: &DiffBase, paths: &[&str]) -> Result<String, String> {
    let base = base.rev()?;
    let literal: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
    let mut args = vec![
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        base,
        "--",
    ];
    args.extend(literal.iter().map(String::as_str));
    let mut out = git(root, &args).await?;
    let mut args = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
    args.extend(literal.iter().map(String::as_str));
    let untracked = git(root, &args).await?;
    let files: Vec<&str> = untracked.split('\0').filter(|f| !f.is_empty()).collect();
    out.push_str(&untracked_listing(&files));
    Ok(out)
}

/// The lines naming untracked files after a diff (empty when there are none).
pub fn untracked_listing(files: &[&str]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# untracked files (new, not shown above):\n");
    for f in files {
        out.push_str(&format!("#   {f}\n"));
    }
    out
}

/// The working tree as a git tree object (tracked and untracked files, .gitignore respected,
/// `exclude` paths left out), written without touching the repository's index, HEAD or files:
/// a copy of the index takes the changes. Two snapshots diff with [`diff_trees`].
pub async fn snapshot(root: &Path, exclude: &[String]) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot snapshot the tree: {e}"))?;
    let index = dir.path().join("index");
    // Starting from the real index keeps git's stat cache: only changed files are hashed.
    if let Ok(real) = git(root, &["rev-parse", "--git-path", "index"]).await {
        let _ = std::fs::copy(root.join(real.trim()), &index);
    }
    let env = [("GIT_INDEX_FILE", index.as_path())];
    stage_all(root, exclude, &env).await?;
    Ok(git_with(root, &["write-tree"], &env)
        .await?
        .trim()
        .to_string())
}

/// Writes the files of `tree` into `dest` (a scratch checkout of the project as it was), through
/// an index of its own: the repository's index and working tree are untouched.
pub async fn materialize(root: &Path, tree: &str, dest: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot write the tree out: {e}"))?;
    let index = dir.path().join("index");
    let env = [("GIT_INDEX_FILE", index.as_path())];
    git_with(root, &["read-tree", tree], &env).await?;
    let prefix = format!("--prefix={}/", dest.display());
    git_with(root, &["checkout-index", "-a", "-f", &prefix], &env).await?;
    Ok(())
}

/// Stages every change of the working tree (.gitignore respected) except the `exclude` paths
/// (qa-loop's own files, `.github/workflows/` unless allowed), in the index `env` names (the
/// repository's own by default). Excluded paths keep their committed state: a tracked plan
/// file is neither updated nor deleted by the stage.
pub async fn stage_all(
    root: &Path,
    exclude: &[String],
    env: &[(&str, &Path)],
) -> Result<(), String> {
    git_with(root, &["add", "-A", "--", "."], env).await?;
    if !exclude.is_empty() {
        // Reset afterwards: an exclude pathspec naming an ignored path makes `add` fail.
        let paths: Vec<&str> = exclude.iter().map(|p| p.trim_end_matches('/')).collect();
        let mut args = vec!["reset", "-q", "--"];
        args.extend(&paths);
        if git_with(root, &args, env).await.is_err() {
            // No commit yet (nothing to reset to): unstage them instead.
            let mut args = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
            args.extend(&paths);
            git_with(root, &args, env).await?;
        }
    }
    Ok(())
}

/// The diff between two [`snapshot`]s.
pub async fn diff_trees(root: &Path, from: &str, to: &str) -> Result<String, String> {
    git(
        root,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            from,
            to,
            "--",
        ],
    )
    .await
}

/// Largest untracked file whose lines count as added.
const MAX_UNTRACKED_BYTES: u64 = 1024 * 1024;

/// The lines added since `base` (working tree, staged or not), plus every line of untracked
/// files (text files up to 1 MiB).
pub async fn added_lines(root: &Path, base: &DiffBase) -> Result<AddedLines, String> {
    let change = Change::read(root, base.rev()?).await?;
    Ok(added_lines_of(root, &change))
}

/// The lines `change` adds: the diff's (parsed as it was read) and every line of untracked text
/// files (up to 1 MiB).
pub fn added_lines_of(root: &Path, change: &Change) -> AddedLines {
    with_untracked(root, change, change.added.clone(), &mut |_, _, _| {})
}

/// [`added_lines_of`], handing each added line to `visit` (`path`, line number, text);
/// `diff_seen` when `visit` already saw the diff's lines as git wrote them
/// ([`ChangeCache::get_visiting`]), else they are read again from the spool.
pub fn visit_added_lines(
    root: &Path,
    change: &Change,
    diff_seen: bool,
    visit: &mut dyn FnMut(&str, u32, &str),
) -> Result<AddedLines, String> {
    let diff = match diff_seen {
        true => change.added.clone(),
        false => {
            let mut parser = AddedParser::new(visit);
            change.each_line(|line, _| parser.line(line))?;
            parser.finish()
        }
    };
    Ok(with_untracked(root, change, diff, visit))
}

/// `diff` and every line of the change's untracked text files (up to 1 MiB), each handed to
/// `visit`.
fn with_untracked(
    root: &Path,
    change: &Change,
    mut out: AddedLines,
    visit: &mut dyn FnMut(&str, u32, &str),
) -> AddedLines {
    for file in &change.untracked {
        let path = root.join(file);
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_UNTRACKED_BYTES);
        if !small {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if bytes.contains(&0) {
            continue; // binary
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = AddedFile::default();
        for (i, l) in text.lines().enumerate() {
            lines.push(i as u32 + 1);
            visit(file, i as u32 + 1, l);
        }
        out.insert(file.clone(), lines);
    }
    out
}

/// The files the change touches (added, modified, deleted, both sides of a rename; untracked
/// included), repository-relative, against `base`.
pub async fn changed_files(root: &Path, base: &DiffBase) -> Result<Vec<String>, String> {
    let change = Change::read(root, base.rev()?).await?;
    changed_files_of(&change)
}

/// [`changed_files`] of a change already read: both paths of every section's header, and its
/// `---`/`+++` lines (quoted names decoded).
pub fn changed_files_of(change: &Change) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = change.untracked.clone();
    let mut hunk = Hunk::default();
    change.each_line(|line, _| {
        if hunk.text(line) {
            return;
        }
        if line.starts_with("diff --git ") {
            let (a, b) = added::header_paths(line);
            files.extend([a, b].into_iter().filter(|p| !p.is_empty()));
        } else if let Some(rest) = line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("+++ "))
        {
            files.extend(added::side_path(rest));
        }
    })?;
    files.sort();
    files.dedup();
    Ok(files)
}

/// Runs `git` in `root`, handing each line of its output to `each` as it comes (a trailing
/// `\r` is kept; invalid UTF-8 is replaced).
pub(crate) async fn git_each_line(
    root: &Path,
    args: &[&str],
    mut each: impl FnMut(&str),
) -> Result<(), String> {
    command::git_each_raw_line(root, args, |line| {
        each(&String::from_utf8_lossy(
            line.strip_suffix(b"\n").unwrap_or(line),
        ));
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_of_a_diff_with_context_count_context_lines_and_never_take_text_for_headers() {
        // Default context (the spool's): context lines advance the new side; an added line
        // whose text starts `++ ` is text, not a file header.
        let diff = "diff --git a/calc.py b/calc.py
index 1..2 100644
--- a/calc.py
+++ b/calc.py
@@ -1,4 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
+++ counter
 
 def sub(a, b):
\\ No newline at end of file
diff --git a/b.py b/b.py
--- a/b.py
+++ b/b.py
@@ -3,2 +3,2 @@ x
 keep
-old
+new
";
        let mut seen = Vec::new();
        let got = parse_added_lines(diff, |p, n, t| seen.push(format!("{p}:{n}:{t}")));
        assert_eq!(
            seen,
            [
                "calc.py:2:    return a + b",
                "calc.py:3:++ counter",
                "b.py:4:new"
            ]
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn added_lines_come_from_hunk_headers() {
        let diff = "diff --git a/calc.py b/calc.py
index 1..2 100644
--- a/calc.py
+++ b/calc.py
@@ -2 +2 @@ def add(a, b):
-    return a - b
+    return a + b
@@ -10,0 +11,2 @@ def sub(a, b):
+    print(a)
+    # TODO: negative numbers
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/new.js b/new.js
new file mode 100644
--- /dev/null
+++ b/new.js
@@ -0,0 +1 @@
+console.log('x')
";
        let mut texts = Vec::new();
        let got = parse_added_lines(diff, |p, n, t| texts.push(format!("{p}:{n}:{t}")));
        assert_eq!(
            texts,
            [
                "calc.py:2:    return a + b",
                "calc.py:11:    print(a)",
                "calc.py:12:    # TODO: negative numbers",
                "new.js:1:console.log('x')"
            ]
        );
        assert_eq!(got["calc.py"].numbers().collect::<Vec<_>>(), [2, 11, 12]);
        assert_eq!(got["new.js"].numbers().collect::<Vec<_>>(), [1]);
        assert!(!got.contains_key("old.py"));
    }

    #[test]
    fn added_files_answer_membership_and_nearness_by_search() {
        let f = AddedFile::from(vec![(3, "c".into()), (10, "j".into()), (11, "k".into())]);
        assert!(f.contains(10) && !f.contains(4));
        assert!(f.near(6, 3) && f.near(14, 3) && f.near(0, 3));
        assert!(!f.near(15, 3) && !f.near(6, 2));
        assert!(!AddedFile::default().near(0, 5));
    }

    #[test]
    fn added_lines_of_a_real_repository_include_untracked_files() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t.invalid",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                ok.status.success(),
                "{}",
                String::from_utf8_lossy(&ok.stderr)
            );
        };
        std::fs::write(dir.path().join("a.py"), "one\ntwo\n").unwrap();
        run(&["init", "-q"]);
        run(&["add", "-A"]);
        run(&["commit", "-q", "-m", "i"]);
        std::fs::write(dir.path().join("a.py"), "one\nTWO\nthree\n").unwrap();
        std::fs::write(dir.path().join("b.py"), "new\n").unwrap();
        let mut texts = Vec::new();
        let change = crate::test_support::rt()
            .block_on(Change::read(dir.path(), "HEAD"))
            .unwrap();
        let got = visit_added_lines(dir.path(), &change, false, &mut |p, n, t| {
            texts.push(format!("{p}:{n}:{t}"))
        })
        .unwrap();
        assert_eq!(got, added_lines_of(dir.path(), &change));
        assert_eq!(changed_files_of(&change).unwrap(), ["a.py", "b.py"]);
        // Names git quotes or that hold ` b/`, whatever the repository's diff settings (a test
        // command can write `.git/config`); a moved file's lines count as added.
        std::fs::create_dir_all(dir.path().join("x b")).unwrap();
        std::fs::write(dir.path().join("café.py"), "k = 1\n").unwrap();
        std::fs::write(dir.path().join("x b/y.py"), "y = 1\n").unwrap();
        std::fs::write(dir.path().join("keys.py"), "KEY = 'AKIAIOSFODNN7EXAMPLE'\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-q", "-m", "more"]);
        std::fs::write(dir.path().join("café.py"), "k = 2\n").unwrap();
        std::fs::set_permissions(
            dir.path().join("x b/y.py"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        run(&["mv", "keys.py", "moved_keys.py"]);
        for (k, v) in [
            ("diff.noprefix", "true"),
            ("diff.renames", "copies"),
            ("diff.relative", "true"),
        ] {
            run(&["config", k, v]);
        }
        let change = crate::test_support::rt()
            .block_on(Change::read(dir.path(), "HEAD"))
            .unwrap();
        let files = changed_files_of(&change).unwrap();
        for f in ["café.py", "x b/y.py", "keys.py", "moved_keys.py"] {
            assert!(files.iter().any(|p| p == f), "{f} not in {files:?}");
        }
        let added = added_lines_of(dir.path(), &change);
        assert_eq!(added["moved_keys.py"].numbers().collect::<Vec<_>>(), [1]);
        assert_eq!(added["café.py"].numbers().collect::<Vec<_>>(), [1]);
        let paths: Vec<&str> = change.sections.iter().map(|s| s.path.as_str()).collect();
        assert!(
            paths.contains(&"café.py") && paths.contains(&"x b/y.py"),
            "{paths:?}"
        );
        for k in ["diff.noprefix", "diff.renames", "diff.relative"] {
            run(&["config", "--unset", k]);
        }
        run(&["reset", "-q", "--hard", "HEAD~1"]);
        std::fs::write(dir.path().join("a.py"), "one\nTWO\nthree\n").unwrap();
        std::fs::write(dir.path().join("b.py"), "new\n").unwrap();
        for f in ["café.py", "x b/y.py", "keys.py", "moved_keys.py"] {
            let _ = std::fs::remove_file(dir.path().join(f));
        }
        assert_eq!(texts, ["a.py:2:TWO", "a.py:3:three", "b.py:1:new"]);
        assert_eq!(got["a.py"].numbers().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(got["b.py"].numbers().collect::<Vec<_>>(), [1]);

        // Snapshots see tracked and untracked changes, leave the index alone and skip
        // excluded paths.
        let rt = crate::test_support::rt();
        let status_before = std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir.path())
            .output()
            .unwrap()
            .stdout;
        std::fs::create_dir(dir.path().join(".qa-loop")).unwrap();
        std::fs::write(dir.path().join(".qa-loop/report.md"), "r1\n").unwrap();
        let own = vec![".qa-loop/".to_string()];
        let first = rt.block_on(snapshot(dir.path(), &own)).unwrap();
        std::fs::write(dir.path().join("b.py"), "new\nnewer\n").unwrap();
        std::fs::write(dir.path().join(".qa-loop/report.md"), "r2\n").unwrap();
        let second = rt.block_on(snapshot(dir.path(), &own)).unwrap();
        let changes = rt
            .block_on(diff_trees(dir.path(), &first, &second))
            .unwrap();
        assert!(changes.contains("+newer"), "{changes}");
        assert!(
            !changes.contains("a.py") && !changes.contains(".qa-loop"),
            "{changes}"
        );
        // An ignored own directory is fine too (git refuses to `add` an ignored pathspec).
        std::fs::write(dir.path().join(".git/info/exclude"), ".qa-loop/\n").unwrap();
        let third = rt.block_on(snapshot(dir.path(), &own)).unwrap();
        assert_eq!(third, second);
        std::fs::write(dir.path().join(".git/info/exclude"), "").unwrap();
        std::fs::remove_dir_all(dir.path().join(".qa-loop")).unwrap();
        let status_after = std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir.path())
            .output()
            .unwrap()
            .stdout;
        assert_eq!(status_before, status_after, "the index is untouched");
    }
}

#[cfg(test)]
mod auth_tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// A real HTTP exchange: the server answers 401 with a Basic challenge, git asks the
    /// credential helper, which reads the token from the inherited pipe; the retried request
    /// carries `x-access-token:<token>` — and the token was in no argv or environment.
    #[test]
    fn git_gets_the_token_from_the_pipe_over_http() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4).flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut auth = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Authorization: ") {
                        auth = Some(v.trim().to_string());
                    }
                }
                let mut s = stream;
                let answer = match auth {
                    None => {
                        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    }
                    Some(a) => {
                        record.lock().unwrap().push(a);
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    }
                };
                let _ = s.write_all(answer.as_bytes());
            }
        });
        let dir = tempfile::tempdir().unwrap();
        crate::test_support::rt().block_on(async {
            git(dir.path(), &["init", "-q"]).await.unwrap();
            let auth = Auth {
                token: Some(crate::secrets::Secret::new("tok_canary_0123456789")),
                host: format!("http://127.0.0.1:{port}/"),
            };
            let url = format!("http://127.0.0.1:{port}/repo.git");
            // An empty http.proxy makes curl connect directly even where the machine sets
            // http_proxy (a CI runner's proxy cannot reach this 127.0.0.1 listener).
            let args = ["-c", "http.proxy=", "ls-remote", &url];
            let err = git_auth(dir.path(), &auth, &args).await.unwrap_err();
            assert!(!err.contains("tok_canary"), "{err}");
        });
        let want = format!(
            "Basic {}",
            crate::secrets::base64(b"x-access-token:tok_canary_0123456789")
        );
        assert_eq!(seen.lock().unwrap().first(), Some(&want));
    }
}
