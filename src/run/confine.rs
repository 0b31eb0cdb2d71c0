//! The sandbox for this run (SPEC §10): what it hides and protects, and whether the run may go
//! on without one. Decided once in [`super::context`], before any of the change's code runs.

use std::path::{Path, PathBuf};

use crate::config::file::SandboxMode;
use crate::config::settings::Settings;
use crate::env_vars;
use crate::sandbox::{DAEMON_SOCKETS, Plan, Sandbox};

use super::RunError;

/// The sandbox the change's code runs in. `trusted: false` runs none of the change's code, so
/// nothing is probed. `sandbox: required` with no way to make one refuses the run.
pub fn sandbox_for(settings: &Settings, trusted: bool) -> Result<Sandbox, RunError> {
    if !trusted {
        return Ok(Sandbox::unconfined(
            "the run is untrusted: none of the change's code runs",
        ));
    }
    let sandbox = match settings.children.sandbox {
        SandboxMode::Off => Sandbox::unconfined("`sandbox: off` was set"),
        SandboxMode::Auto | SandboxMode::Required => Sandbox::detect(plan(settings)),
    };
    if settings.children.sandbox == SandboxMode::Required && sandbox.kind().is_none() {
        return Err(RunError::Refused(format!(
            "`sandbox: required`, but {}",
            sandbox.describe()
        )));
    }
    if sandbox.kind().is_some() {
        tracing::info!("{}", sandbox.describe());
    } else {
        tracing::warn!("{}", sandbox.describe());
    }
    Ok(sandbox)
}

/// qa-loop's own files in the checkout — the out dir and the plan — are reached through no
/// link (a link committed by the change would send the reports, or the plan's rewrite, outside
/// the checkout, or an outside file into an uploaded artifact).
pub fn own_paths_are_real(settings: &Settings) -> Result<(), RunError> {
    let root = &settings.paths.root;
    let paths = std::iter::once(("the out dir", &settings.paths.out_dir))
        .chain(settings.paths.plan.iter().map(|p| ("the plan", p)));
    for (what, path) in paths {
        if let Some(link) = crate::nofollow::first_link(root, path) {
            return Err(RunError::Refused(format!(
                "{what} {} is reached through a link ({}): qa-loop does not follow links in the checkout; remove the link or pass --out-dir/--plan outside it",
                path.display(),
                link.display()
            )));
        }
    }
    Ok(())
}

/// What commands must not reach (the runner's temp directory and file-command files, container
/// daemons' sockets) and what they see read-only (the repository's git directories, the out dir,
/// the plan, qa-loop's binary).
fn plan(settings: &Settings) -> Plan {
    let root = &settings.paths.root;
    let mut masks: Vec<PathBuf> = DAEMON_SOCKETS.iter().map(PathBuf::from).collect();
    // qa-loop's private directory: the configuration its git calls read.
    if let Ok(private) = crate::vcs::private_dir() {
        masks.push(private.to_path_buf());
    }
    masks.extend(credential_files(settings));
    if let Some(temp) = env_vars::var(env_vars::RUNNER_TEMP).filter(|t| !t.is_empty()) {
        masks.push(temp.into());
    }
    for name in env_vars::RUNNER_FILE_COMMANDS {
        if let Some(file) = env_vars::var(name).filter(|f| !f.is_empty()) {
            let file = PathBuf::from(file);
            // The runner's file-command directory holds every step's files.
            masks.push(file.parent().map_or(file.clone(), Path::to_path_buf));
        }
    }
    let root_real = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
    masks.retain(|m| {
        let m = std::fs::canonicalize(m).unwrap_or_else(|_| m.clone());
        let holds_checkout = root_real.starts_with(&m);
        if holds_checkout {
            tracing::warn!(
                "{} holds the checkout: it stays visible to the change's code",
                m.display()
            );
        }
        !holds_checkout
    });
    masks.sort();
    masks.dedup();
    let out_dir = &settings.paths.out_dir;
    // The out dir exists before the first command, so it can be protected.
    let _ = std::fs::create_dir_all(out_dir);
    let mut read_only = git_dirs(root);
    read_only.push(std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.clone()));
    // The plan's QA history is qa-loop's to write: read at start, rewritten at the end.
    read_only.extend(settings.paths.plan.iter().filter(|p| p.exists()).cloned());
    if let Ok(exe) = std::env::current_exe() {
        read_only.push(exe);
    }
    Plan {
        network: settings.children.sandbox_network,
        masks,
        read_only,
    }
}

/// The files that hold the model's cloud credentials, hidden from every sandboxed command (SPEC
/// §5.1): those the credential variables name (a web identity token, a credentials file, an
/// `external_account` file), `google-github-actions/auth`'s `gha-creds-*.json` in the workspace,
/// and the default shared files (`~/.aws/credentials`, gcloud's application default
/// credentials) — except what the trusted config passes on (`pass_env`).
pub(super) fn credential_files(settings: &Settings) -> Vec<PathBuf> {
    let passed = |name: &str| {
        settings
            .children
            .env_passthrough
            .iter()
            .any(|p| env_vars::wildcard(p, name))
    };
    let mut files: Vec<PathBuf> = env_vars::CREDENTIAL_FILES
        .iter()
        .filter(|name| !passed(name))
        .filter_map(|name| env_vars::var(name))
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .collect();
    if let Some(home) = env_vars::var("HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        if !passed("AWS_SHARED_CREDENTIALS_FILE") {
            files.push(home.join(".aws/credentials"));
        }
        if !passed("GOOGLE_APPLICATION_CREDENTIALS") {
            files.push(home.join(".config/gcloud/application_default_credentials.json"));
        }
    }
    let workspaces = std::iter::once(settings.paths.root.clone())
        .chain(env_vars::var("GITHUB_WORKSPACE").map(PathBuf::from));
    if !passed("GOOGLE_APPLICATION_CREDENTIALS") {
        for dir in workspaces {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("gha-creds-") && n.ends_with(".json"))
            }));
        }
    }
    files
        .into_iter()
        .filter(|f| f.exists())
        .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
        .collect()
}

/// The repository's git directory, and for a linked worktree (`.git` a file naming
/// `gitdir: …`) that directory and the common one it names.
fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    if meta.is_dir() {
        return vec![std::fs::canonicalize(&dot_git).unwrap_or(dot_git)];
    }
    let mut dirs = vec![dot_git.clone()];
    let Some(dir) = std::fs::read_to_string(&dot_git).ok().and_then(|t| {
        t.trim()
            .strip_prefix("gitdir:")
            .map(|d| d.trim().to_string())
    }) else {
        return dirs;
    };
    let dir = root.join(dir);
    if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
        dirs.push(dir.join(common.trim()));
    }
    dirs.push(dir);
    dirs.into_iter()
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_worktree_protects_its_own_and_the_common_git_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path().join("main/.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let dirs = git_dirs(&wt);
        let common = std::fs::canonicalize(common).unwrap();
        let own = std::fs::canonicalize(own).unwrap();
        assert!(dirs.contains(&common), "{dirs:?}");
        assert!(dirs.contains(&own), "{dirs:?}");
        assert!(dirs.contains(&wt.join(".git")), "{dirs:?}");
    }

    #[test]
    fn a_plain_checkout_protects_its_git_dir() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
        let dirs = git_dirs(tmp.path());
        assert_eq!(
            dirs,
            [std::fs::canonicalize(tmp.path().join(".git")).unwrap()]
        );
    }
}
