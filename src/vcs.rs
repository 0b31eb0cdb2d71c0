//! The git CLI, for what qa-loop needs of the repository: the diff under review.

use std::path::Path;

use tokio::process::Command;

/// Runs `git` in `root` and returns stdout, or the error text.
pub async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    git_with(root, args, &[]).await
}

/// `git` with further environment variables (e.g. `GIT_INDEX_FILE`).
async fn git_with(root: &Path, args: &[&str], env: &[(&str, &Path)]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(crate::config::env_vars::scrubbed_env())
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The commit to diff against: the merge base of `base` and `HEAD` (what a pull request changes),
/// or `base` itself when there is none (`HEAD`, a shallow clone).
pub async fn merge_base(root: &Path, base: &str) -> String {
    match git(root, &["merge-base", base, "HEAD"]).await {
        Ok(sha) if !sha.trim().is_empty() => sha.trim().to_string(),
        _ => base.to_string(),
    }
}

/// The change under review: `git diff <merge-base>` plus the untracked files (by name).
pub async fn diff(root: &Path, base: &str) -> Result<String, String> {
    let base = merge_base(root, base).await;
    let mut out = git(root, &["diff", "--no-color", "--no-ext-diff", &base, "--"]).await?;
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard"]).await?;
    let files: Vec<&str> = untracked.lines().filter(|l| !l.is_empty()).collect();
    if !files.is_empty() {
        out.push_str("\n# untracked files (new, not shown above):\n");
        for f in files {
            out.push_str(&format!("#   {f}\n"));
        }
    }
    Ok(out)
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

/// Stages every change of the working tree (.gitignore respected) except the `exclude` paths
/// (qa-loop's own files), in the index `env` names (the repository's own by default).
pub async fn stage_all(
    root: &Path,
    exclude: &[String],
    env: &[(&str, &Path)],
) -> Result<(), String> {
    git_with(root, &["add", "-A", "--", "."], env).await?;
    if !exclude.is_empty() {
        // Removed afterwards: an exclude pathspec naming an ignored path makes `add` fail.
        let mut args = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
        args.extend(exclude.iter().map(|p| p.trim_end_matches('/')));
        git_with(root, &args, env).await?;
    }
    Ok(())
}

/// The diff between two [`snapshot`]s.
pub async fn diff_trees(root: &Path, from: &str, to: &str) -> Result<String, String> {
    git(
        root,
        &["diff", "--no-color", "--no-ext-diff", from, to, "--"],
    )
    .await
}

/// The default diff base: the PR base branch in Actions, else `HEAD` (uncommitted work).
pub fn default_base() -> String {
    match std::env::var("GITHUB_BASE_REF") {
        Ok(b) if !b.is_empty() => format!("origin/{b}"),
        _ => "HEAD".to_string(),
    }
}

/// Whether `rev` names a commit in the repository at `root`.
pub async fn resolves(root: &Path, rev: &str) -> bool {
    git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .await
    .is_ok()
}

/// Lines the change adds, per file (repository-relative path → `(line number, text)`).
pub type AddedLines = std::collections::BTreeMap<String, Vec<(u32, String)>>;

/// Largest untracked file whose lines count as added.
const MAX_UNTRACKED_BYTES: u64 = 1024 * 1024;

/// The lines added since the merge base of `base` (working tree, staged or not), plus every line
/// of untracked files (text files up to 1 MiB).
pub async fn added_lines(root: &Path, base: &str) -> Result<AddedLines, String> {
    let base = merge_base(root, base).await;
    let diff = git(
        root,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--unified=0",
            "--no-renames",
            &base,
            "--",
        ],
    )
    .await?;
    let mut out = parse_added_lines(&diff);
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"]).await?;
    for file in untracked.split('\0').filter(|f| !f.is_empty()) {
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
        out.insert(
            file.to_string(),
            text.lines()
                .enumerate()
                .map(|(i, l)| (i as u32 + 1, l.to_string()))
                .collect(),
        );
    }
    Ok(out)
}

/// Parses `git diff --unified=0` output into added lines per file.
pub fn parse_added_lines(diff: &str) -> AddedLines {
    let mut out = AddedLines::new();
    let mut file: Option<String> = None;
    let mut next: u32 = 0;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("+++ ") {
            file = match rest {
                "/dev/null" => None,
                p => Some(unquote(p).trim_start_matches("b/").to_string()),
            };
        } else if line.starts_with("--- ") || line.starts_with("diff --git ") {
            continue;
        } else if let Some(hunk) = line.strip_prefix("@@ ") {
            // `@@ -a,b +c,d @@`: added lines start at c.
            next = hunk
                .split_whitespace()
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        } else if let Some(text) = line.strip_prefix('+') {
            if let Some(f) = &file {
                out.entry(f.clone())
                    .or_default()
                    .push((next, text.to_string()));
            }
            next += 1;
        }
    }
    out
}

/// git quotes unusual paths: `"b/sp\303\251cial.py"`; the quotes are dropped (escapes kept).
fn unquote(p: &str) -> &str {
    p.strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let got = parse_added_lines(diff);
        assert_eq!(
            got["calc.py"],
            [
                (2, "    return a + b".to_string()),
                (11, "    print(a)".to_string()),
                (12, "    # TODO: negative numbers".to_string())
            ]
        );
        assert_eq!(got["new.js"], [(1, "console.log('x')".to_string())]);
        assert!(!got.contains_key("old.py"));
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
        let got = crate::test_support::rt()
            .block_on(added_lines(dir.path(), "HEAD"))
            .unwrap();
        assert_eq!(
            got["a.py"],
            [(2, "TWO".to_string()), (3, "three".to_string())]
        );
        assert_eq!(got["b.py"], [(1, "new".to_string())]);

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
