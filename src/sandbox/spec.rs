//! What qa-loop hands the sandbox helper for one command, on the helper's standard input (never
//! argv, which `/proc/<pid>/cmdline` shows to everyone; never a file the change could rewrite).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How the namespaces are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// qa-loop is root: the helper creates the namespaces and drops every capability (and to
    /// the job's user when that is not root).
    Root,
    /// qa-loop has passwordless sudo (GitHub-hosted runners): the helper runs through sudo,
    /// creates the namespaces as root and drops back to the job's user.
    Sudo,
    /// Unprivileged user namespaces: the job's user maps to itself.
    UserNamespace,
}

impl Kind {
    /// How the kind reads in reports and logs.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Root => "namespaces made as root, capabilities dropped",
            Kind::Sudo => "namespaces made through sudo, dropped back to the job's user",
            Kind::UserNamespace => "unprivileged user namespaces",
        }
    }
}

/// One command to run confined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub kind: Kind,
    /// The program (an absolute path) and its arguments.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the command (already scrubbed of secrets).
    pub env: Vec<(String, String)>,
    /// The user, group and supplementary groups the command runs as (the job's; the docker
    /// socket's group left out).
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    /// Paths the command must not reach: a directory becomes an empty read-only tmpfs, any other
    /// file `/dev/null`. Paths that do not exist are skipped.
    pub masks: Vec<PathBuf>,
    /// Paths the command sees read-only (`.git`, qa-loop's out dir and binary).
    pub read_only: Vec<PathBuf>,
    /// Whether the command keeps the network (false: a network namespace with loopback only).
    pub network: bool,
    /// Whether the command reads what follows the spec on the helper's standard input (an MCP
    /// server's transport); otherwise its input is empty.
    #[serde(default)]
    pub stdin: bool,
}
