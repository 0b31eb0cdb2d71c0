//! The sandbox every process that runs the change's code or the model's commands goes through
//! (SPEC §10): suite commands, `run_command`, app `start` commands, `fixer-command`.
//!
//! How it is made is decided once, before any of the change's code runs ([`Sandbox::detect`]):
//! as root, through passwordless sudo (GitHub-hosted runners), or with unprivileged user
//! namespaces — each tried for real with a probe command, in that order. Then every command is
//! started as `qa-loop __sandbox-exec` (the [`helper`]) with a [`Spec`] on its standard input:
//! its own PID namespace and `/proc`, its own mounts (the runner's temp directory, the docker
//! socket and qa-loop's files masked; `.git` and the out dir read-only), `no_new_privs`, no
//! capabilities, and nothing left alive once the command ends.
//!
//! This module decides nothing about settings: the caller says what to mask and what to keep
//! read-only ([`Plan`]).

pub mod helper;
mod spec;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use spec::{Kind, Spec};

/// What the sandbox hides and protects, decided by the caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Whether commands keep the network.
    pub network: bool,
    /// Paths hidden from commands (the runner's temp directory, the docker socket, …).
    pub masks: Vec<PathBuf>,
    /// Paths commands see read-only (`.git`, the out dir, qa-loop's binary).
    pub read_only: Vec<PathBuf>,
}

/// How commands are confined for this run: cheap to clone, shared by every launcher.
#[derive(Debug, Clone)]
pub struct Sandbox {
    state: Arc<State>,
    /// Process groups of the commands started, for [`Sandbox::settle`].
    groups: Arc<std::sync::Mutex<Vec<i32>>>,
}

#[derive(Debug)]
enum State {
    Confined(Confined),
    /// Commands run as the job's user with no confinement but a process group; why.
    Unconfined(String),
}

#[derive(Debug)]
struct Confined {
    kind: Kind,
    /// The helper's program and its arguments before [`helper::ARG`].
    launch: Vec<PathBuf>,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    plan: Plan,
}

/// The docker (and podman, containerd) sockets: talking to one is root on the machine.
pub const DAEMON_SOCKETS: [&str; 5] = [
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/var/run/podman/podman.sock",
];

/// The system directories: read-only for commands of a root job (a job's user cannot write them
/// anyway), so the git, sudo and libraries qa-loop runs outside the sandbox cannot be replaced.
pub const SYSTEM_DIRS: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// How long a probe may take before the way it tried counts as unavailable.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

impl Sandbox {
    /// No confinement, for the reason given (`sandbox: off`, or nothing worked).
    pub fn unconfined(why: impl Into<String>) -> Self {
        Sandbox::new(State::Unconfined(why.into()))
    }

    /// Tries root, then passwordless sudo, then unprivileged user namespaces, each with a real
    /// probe command; the first that confines a command is used. When none does, the result is
    /// unconfined and says why (every way's failure).
    pub fn detect(plan: Plan) -> Self {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let groups = own_groups(gid);
        let mut failures = Vec::new();
        let mut ways: Vec<(Kind, Vec<PathBuf>)> = Vec::new();
        if nix::unistd::geteuid().is_root() {
            ways.push((Kind::Root, vec![PathBuf::from("/proc/self/exe")]));
        } else {
            match find_sudo() {
                Ok(sudo) => ways.push((
                    Kind::Sudo,
                    vec![
                        sudo,
                        "-n".into(),
                        "--".into(),
                        // sudo's own /proc/self is sudo: name this process's binary by pid.
                        format!("/proc/{}/exe", std::process::id()).into(),
                    ],
                )),
                Err(e) => failures.push(format!("sudo: {e}")),
            }
        }
        ways.push((Kind::UserNamespace, vec![PathBuf::from("/proc/self/exe")]));
        for (kind, launch) in ways {
            let mut plan = plan.clone();
            if kind == Kind::Root || uid == 0 {
                plan.read_only.extend(
                    SYSTEM_DIRS
                        .iter()
                        .map(PathBuf::from)
                        .filter(|d| d.exists() && !d.is_symlink()),
                );
            }
            let confined = Confined {
                kind,
                launch,
                uid,
                gid,
                groups: groups.clone(),
                plan,
            };
            match confined.probe() {
                Ok(()) => return Sandbox::new(State::Confined(confined)),
                Err(e) => failures.push(format!("{}: {e}", kind_name(kind))),
            }
        }
        Sandbox::unconfined(format!(
            "no way to make namespaces worked ({})",
            failures.join("; ")
        ))
    }

    /// How commands are confined, when they are.
    pub fn kind(&self) -> Option<Kind> {
        match &*self.state {
            State::Confined(c) => Some(c.kind),
            State::Unconfined(_) => None,
        }
    }

    /// One line for the log and the report.
    pub fn describe(&self) -> String {
        match &*self.state {
            State::Confined(c) => format!(
                "the change's code runs in a sandbox ({}{})",
                c.kind.describe(),
                if c.plan.network { "" } else { "; no network" }
            ),
            State::Unconfined(why) => {
                format!("the change's code runs UNSANDBOXED, as the job's user: {why}")
            }
        }
    }

    /// The command that runs `argv` in `cwd` with exactly `env`, and the bytes to write to its
    /// standard input (confined: the helper's [`Spec`], framed; unconfined: none, and stdin is
    /// empty).
    pub fn command(
        &self,
        argv: &[&str],
        cwd: &Path,
        env: &[(String, String)],
    ) -> (tokio::process::Command, Option<Vec<u8>>) {
        self.make(argv, cwd, env, false)
    }

    /// [`Sandbox::command`] for a server that talks over its standard input and output (an MCP
    /// stdio server): stdin is piped; the bytes returned (confined) go first, then the
    /// server's input.
    pub fn serving(
        &self,
        argv: &[&str],
        cwd: &Path,
        env: &[(String, String)],
    ) -> (tokio::process::Command, Option<Vec<u8>>) {
        let (mut cmd, frame) = self.make(argv, cwd, env, true);
        cmd.stdin(std::process::Stdio::piped());
        (cmd, frame)
    }

    fn make(
        &self,
        argv: &[&str],
        cwd: &Path,
        env: &[(String, String)],
        stdin: bool,
    ) -> (tokio::process::Command, Option<Vec<u8>>) {
        match &*self.state {
            State::Confined(c) => {
                let mut spec = c.spec(argv, cwd, env);
                spec.stdin = stdin;
                let mut cmd = tokio::process::Command::new(&c.launch[0]);
                cmd.args(&c.launch[1..])
                    .arg(helper::ARG)
                    .env_clear()
                    .current_dir("/")
                    .stdin(std::process::Stdio::piped());
                (cmd, Some(helper::frame(&spec)))
            }
            State::Unconfined(_) => {
                let mut cmd = tokio::process::Command::new(argv[0]);
                cmd.args(&argv[1..])
                    .current_dir(cwd)
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .stdin(std::process::Stdio::null());
                (cmd, None)
            }
        }
    }
}

impl Sandbox {
    fn new(state: State) -> Self {
        Sandbox {
            state: Arc::new(state),
            groups: Arc::default(),
        }
    }

    /// Records the process group of a command started through [`Sandbox::command`].
    pub fn started(&self, group: u32) {
        let mut live = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|pg| nix::sys::signal::killpg(nix::unistd::Pid::from_raw(*pg), None).is_ok());
        live.push(group as i32);
    }

    /// Makes sure nothing a command started is alive before qa-loop commits, pushes or writes
    /// its outputs: every recorded process group still alive is killed (with its namespace, the
    /// processes that left the group), and how many were found is returned (none, normally).
    pub fn settle(&self) -> usize {
        use nix::sys::signal::{Signal, killpg};
        let groups: Vec<i32> =
            std::mem::take(&mut *self.groups.lock().unwrap_or_else(|e| e.into_inner()));
        let alive: Vec<i32> = groups
            .into_iter()
            .filter(|pg| killpg(nix::unistd::Pid::from_raw(*pg), None).is_ok())
            .collect();
        for pg in &alive {
            tracing::error!(group = pg, "a command's processes were still alive: killed");
            let _ = killpg(nix::unistd::Pid::from_raw(*pg), Signal::SIGKILL);
        }
        alive.len()
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::unconfined("no sandbox was set up")
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Root => "root",
        Kind::Sudo => "sudo",
        Kind::UserNamespace => "user namespaces",
    }
}

impl Confined {
    fn spec(&self, argv: &[&str], cwd: &Path, env: &[(String, String)]) -> Spec {
        let program = argv.first().copied().unwrap_or("/bin/sh");
        let program = if program.contains('/') {
            program.to_string()
        } else {
            // The helper execs by path: a bare name is looked up as the command would see it.
            lookup(program, env).unwrap_or_else(|| program.to_string())
        };
        Spec {
            kind: self.kind,
            argv: std::iter::once(program)
                .chain(argv.iter().skip(1).map(|a| a.to_string()))
                .collect(),
            cwd: std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf()),
            env: env.to_vec(),
            uid: self.uid,
            gid: self.gid,
            groups: self.groups.clone(),
            masks: self.plan.masks.clone(),
            read_only: self.plan.read_only.clone(),
            network: self.plan.network,
            stdin: false,
        }
    }

    /// Runs `/bin/sh -c :` confined; Ok when it exits 0.
    fn probe(&self) -> Result<(), String> {
        use std::io::Write;
        let spec = self.spec(&["/bin/sh", "-c", ":"], Path::new("/"), &[]);
        let bytes = helper::frame(&spec);
        let mut child = std::process::Command::new(&self.launch[0])
            .args(&self.launch[1..])
            .arg(helper::ARG)
            .env_clear()
            .current_dir("/")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&bytes);
        }
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        use std::io::Read;
                        let _ = e.read_to_string(&mut err);
                    }
                    let err = err.trim().lines().last().unwrap_or_default().to_string();
                    return Err(if err.is_empty() {
                        format!("the probe ended with {status}")
                    } else {
                        err
                    });
                }
                Ok(None) if started.elapsed() > PROBE_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("the probe did not finish".into());
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// `program` on the `PATH` of `env`.
fn lookup(program: &str, env: &[(String, String)]) -> Option<String> {
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())?;
    on_path(std::ffi::OsStr::new(path), program)
        .next()
        .map(|p| p.display().to_string())
}

/// Every runnable file named `program` in the directories of `path`, in order.
pub fn on_path<'a>(
    path: &'a std::ffi::OsStr,
    program: &'a str,
) -> impl Iterator<Item = PathBuf> + 'a {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(move |d| d.join(program))
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The supplementary groups commands keep: the job's, less the group owning a container
/// daemon's socket (membership is root on the machine).
fn own_groups(primary: u32) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let daemon_groups: Vec<u32> = DAEMON_SOCKETS
        .iter()
        .filter_map(|s| std::fs::metadata(s).ok())
        .map(|m| m.gid())
        .filter(|g| *g != primary)
        .collect();
    nix::unistd::getgroups()
        .unwrap_or_default()
        .into_iter()
        .map(|g| g.as_raw())
        .filter(|g| !daemon_groups.contains(g))
        .collect()
}

/// A root-owned `sudo` that no one but root can replace (whether it asks for a password, the
/// probe through it tells).
fn find_sudo() -> Result<PathBuf, String> {
    let sudo = ["/usr/bin/sudo", "/bin/sudo"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("not installed")?;
    match writable_by_us(&sudo) {
        Some(w) => Err(format!("{} can be changed by this user", w.display())),
        None => Ok(sudo),
    }
}

/// The first of `path` and its ancestors that this process's user can write (a program found
/// there could be replaced by the change's code), if any.
pub fn writable_by_us(path: &Path) -> Option<PathBuf> {
    use nix::unistd::{AccessFlags, access};
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    real.ancestors()
        .chain(std::iter::once(path))
        .find(|p| access(*p, AccessFlags::W_OK).is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_kills_a_group_left_alive_and_finds_nothing_the_second_time() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let s = Sandbox::unconfined("test");
        s.started(child.id());
        assert_eq!(s.settle(), 1);
        let status = child.wait().unwrap();
        assert!(!status.success(), "{status}");
        assert_eq!(s.settle(), 0);
    }

    #[test]
    fn a_bare_program_is_found_on_the_commands_path() {
        let env = vec![("PATH".to_string(), "/nonexistent:/bin:/usr/bin".to_string())];
        let found = lookup("sh", &env).unwrap();
        assert!(found.ends_with("/sh"), "{found}");
        assert_eq!(lookup("no-such-program-here", &env), None);
    }

    #[test]
    fn unconfined_says_why_and_runs_the_program_itself() {
        let s = Sandbox::unconfined("sandbox: off");
        assert_eq!(s.kind(), None);
        assert!(s.describe().contains("UNSANDBOXED"), "{}", s.describe());
        assert!(s.describe().contains("sandbox: off"));
        let (cmd, input) = s.command(&["/bin/sh", "-c", ":"], Path::new("/"), &[]);
        assert!(input.is_none());
        assert_eq!(cmd.as_std().get_program(), "/bin/sh");
    }

    #[test]
    fn confined_hands_the_helper_the_whole_command_on_stdin() {
        let s = Sandbox::new(State::Confined(Confined {
            kind: Kind::UserNamespace,
            launch: vec![PathBuf::from("/proc/self/exe")],
            uid: 1000,
            gid: 1000,
            groups: vec![],
            plan: Plan {
                network: false,
                masks: vec!["/run/docker.sock".into()],
                read_only: vec!["/repo/.git".into()],
            },
        }));
        let env = vec![("HOME".to_string(), "/home/u".to_string())];
        let (cmd, input) = s.command(&["/bin/sh", "-c", "pytest"], Path::new("/repo"), &env);
        let args: Vec<_> = cmd.as_std().get_args().collect();
        assert_eq!(args, [helper::ARG]);
        // Nothing of the command in argv or the helper's environment.
        assert_eq!(cmd.as_std().get_envs().count(), 0);
        let input = input.unwrap();
        let (len, json) = input.split_at(input.iter().position(|b| *b == b'\n').unwrap());
        assert_eq!(
            std::str::from_utf8(len).unwrap().parse::<usize>().unwrap(),
            json.len() - 1
        );
        let spec: Spec = serde_json::from_slice(&json[1..]).unwrap();
        assert_eq!(spec.argv, ["/bin/sh", "-c", "pytest"]);
        assert_eq!(spec.env, env);
        assert!(!spec.network);
        assert_eq!(spec.read_only, [PathBuf::from("/repo/.git")]);
    }
}
