//! The git command, isolated from what the change's code could have written outside the
//! repository (global and system config, hooks, fsmonitor, the environment's secrets), and its
//! output read as the answer or as an error naming the command.

use std::path::Path;

use tokio::process::Command;

/// Runs `git` in `root` and returns stdout, or the error text.
pub async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    git_with(root, args, &[]).await
}

/// `git` with further environment variables (e.g. `GIT_INDEX_FILE`).
pub(crate) async fn git_with(
    root: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Result<String, String> {
    let mut cmd = isolated(root, &[]);
    cmd.args(args).envs(env.iter().map(|(k, v)| (*k, *v)));
    output(cmd, args).await
}

pub(super) async fn output(mut cmd: Command, args: &[&str]) -> Result<String, String> {
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    succeeded(&out, args)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `Ok` when git exited 0, else the error naming the command and git's own words.
pub(super) fn succeeded(out: &std::process::Output, args: &[&str]) -> Result<(), String> {
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// A `git` command isolated from everything the change's code can change outside the
/// repository — the environment without secrets, no global or system configuration
/// (`~/.gitconfig` could add a `pushInsteadOf`, a proxy, `push.followTags`), no hooks, no
/// fsmonitor, no terminal prompt, no attributes file — and from what it could have written
/// inside: the repository's own configuration and `info/attributes` are never read
/// ([`super::jail`]). The checkout is marked safe (the global `safe.directory` is not read).
/// `config` adds entries, passed by environment, never argv.
pub(super) fn isolated(root: &Path, config: &[(&str, &str)]) -> Command {
    let mut cmd = unjailed(root, config);
    match super::jail::jail(root) {
        Ok(Some(jail)) => {
            cmd.env("GIT_DIR", &jail.git_dir)
                .env("GIT_COMMON_DIR", &jail.private)
                .env("GIT_WORK_TREE", &jail.work_tree);
        }
        // No repository: only `git init` can work, and nothing was planted to read.
        Ok(None) => {}
        // The private directory cannot be made: git must not fall back to the repository's.
        Err(e) => {
            tracing::error!("{e}");
            cmd.env("GIT_DIR", "/nonexistent/qa-loop-git-dir");
        }
    }
    cmd
}

/// [`isolated`] without the repository: for git directories qa-loop made itself
/// ([`super::shadow`]), which set `GIT_DIR` themselves.
pub(super) fn unjailed(root: &Path, config: &[(&str, &str)]) -> Command {
    // The checkout as given and as the file system resolves it (a symlinked workspace).
    let safe = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| safe.clone());
    let (safe, real) = (safe.display().to_string(), real.display().to_string());
    let mut entries: Vec<(&str, &str)> = vec![
        ("core.hooksPath", "/dev/null"),
        ("core.fsmonitor", "false"),
        ("core.attributesFile", "/dev/null"),
        ("core.pager", "cat"),
        ("safe.directory", &safe),
        ("safe.directory", &real),
    ];
    entries.extend_from_slice(config);
    // Not found: the command fails to start and the call reports it (prepare refuses first).
    let mut cmd = Command::new(super::program::program().unwrap_or(Path::new("/nonexistent/git")));
    cmd.current_dir(root)
        .env_clear()
        .envs(
            crate::env_vars::scrubbed_env()
                .into_iter()
                .filter(|(k, _)| !k.starts_with("GIT_")),
        )
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_CONFIG_COUNT", entries.len().to_string());
    for (i, (k, v)) in entries.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    cmd.stdin(std::process::Stdio::null());
    cmd
}

/// Runs `git` in `root`, handing each line of its output to `each` as git writes it, as bytes
/// with its `\n` (the last may have none); an error from `each` stops the read and git.
pub(crate) async fn git_each_raw_line(
    root: &Path,
    args: &[&str],
    mut each: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), String> {
    use tokio::io::AsyncBufReadExt;
    let mut cmd = isolated(root, &[]);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    // A larger pipe: git writes more between our reads (fewer task switches); best effort.
    let _ = nix::fcntl::fcntl(&stdout, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    let mut reader = tokio::io::BufReader::with_capacity(256 * 1024, stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .await
            .map_err(|e| format!("cannot read git's output: {e}"))?;
        if n == 0 {
            break;
        }
        each(&buf)?;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    succeeded(&out, args)
}
