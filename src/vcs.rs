//! The git CLI, for what qa-loop needs of the repository: the diff under review.

use std::path::Path;

use tokio::process::Command;

/// Runs `git` in `root` and returns stdout, or the error text.
pub async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env_clear()
        .envs(crate::config::env_vars::scrubbed_env())
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

/// The change under review: `git diff <base>` plus the untracked files (by name).
pub async fn diff(root: &Path, base: &str) -> Result<String, String> {
    let mut out = git(root, &["diff", "--no-color", "--no-ext-diff", base, "--"]).await?;
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

/// The default diff base: the PR base branch in Actions, else `HEAD` (uncommitted work).
pub fn default_base() -> String {
    match std::env::var("GITHUB_BASE_REF") {
        Ok(b) if !b.is_empty() => format!("origin/{b}"),
        _ => "HEAD".to_string(),
    }
}
