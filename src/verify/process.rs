//! Running one shell command: its own process group, a timeout (SIGINT to the group so test
//! tools write their reports, then SIGTERM, then SIGKILL, each after a grace period), output captured with bounded memory (head + tail), and an environment
//! without secrets.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;

use super::capture::Capture;
use crate::cancel::Cancel;
use crate::env_vars::EnvPolicy;
use crate::model::CommandOutcome;
use crate::sandbox::Sandbox;

/// How long a process group gets between SIGTERM and SIGKILL.
pub const GRACE_PERIOD: Duration = Duration::from_secs(5);

/// Bytes kept from the start and from the end of a command's output.
pub const EXCERPT_HEAD: usize = 6 * 1024;
pub const EXCERPT_TAIL: usize = 10 * 1024;

/// How long the output pipe may stay open after the process group is gone (a daemon that left
/// the group keeps it open forever).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// Runs commands: the environment they get and the cancellation they obey.
#[derive(Debug, Clone)]
pub struct Launcher {
    env: Arc<Vec<(String, String)>>,
    cancel: Cancel,
    /// How commands are confined (SPEC §10).
    sandbox: Sandbox,
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Bytes of output kept in memory from the start and from the end.
    pub head: usize,
    pub tail: usize,
    /// Where the whole output is streamed.
    pub log: Option<PathBuf>,
}

/// The result of one command.
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: CommandOutcome,
    /// Head + tail of stdout and stderr, interleaved as written.
    pub output: String,
    /// Lines that look like failures (first and last ones).
    pub failure_lines: Vec<String>,
    pub duration: Duration,
    /// Bytes the command wrote.
    pub bytes: u64,
    /// The log holding the whole output, when it was written completely.
    pub log: Option<PathBuf>,
}

impl Launcher {
    /// A launcher giving children the job's environment filtered by `policy`.
    pub fn new(policy: &EnvPolicy, cancel: Cancel) -> Self {
        Self::with_env(crate::env_vars::vars(), policy, cancel)
    }

    /// A launcher giving children `vars` filtered by `policy`.
    pub fn with_env(
        vars: impl IntoIterator<Item = (String, String)>,
        policy: &EnvPolicy,
        cancel: Cancel,
    ) -> Self {
        Launcher {
            env: Arc::new(policy.apply(vars)),
            cancel,
            sandbox: Sandbox::default(),
        }
    }

    /// The same launcher running its commands in `sandbox`.
    pub fn with_sandbox(&self, sandbox: Sandbox) -> Self {
        Launcher {
            sandbox,
            ..self.clone()
        }
    }

    /// How its commands are confined.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The same launcher with further variables set (e.g. `QA_FIX_REQUEST` for a fixer command).
    pub fn with_vars(&self, extra: &[(&str, String)]) -> Self {
        let mut env: Vec<(String, String)> = self
            .env
            .iter()
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
            .cloned()
            .collect();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        Launcher {
            env: Arc::new(env),
            ..self.clone()
        }
    }

    /// The environment its children get (scrubbed of secrets and the runner's channels).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The cancellation its commands obey.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// The same launcher obeying `cancel` instead (a [`Cancel::child`] of its own).
    pub fn with_cancel(&self, cancel: Cancel) -> Self {
        Launcher {
            cancel,
            ..self.clone()
        }
    }

    /// Runs `job.command` with `sh -c` in its own process group; stdout and stderr share one pipe
    /// so their order is kept. Ends at exit, at the timeout or on cancellation (SIGTERM to the
    /// group, [`GRACE_PERIOD`], SIGKILL); whatever is left in the group is killed at the end.
    pub async fn run(&self, job: Job<'_>) -> Finished {
        let started = Instant::now();
        let mut capture = Capture::new(job.head, job.tail, job.log.as_deref());
        let could_not_start = |error: String, capture: &mut Capture| Finished {
            outcome: CommandOutcome::CouldNotStart { error },
            output: String::new(),
            failure_lines: Vec::new(),
            duration: started.elapsed(),
            bytes: 0,
            log: capture.finish(),
        };
        if let Some(reason) = self.cancel.reason() {
            return Finished {
                outcome: CommandOutcome::Cancelled { reason },
                ..could_not_start(String::new(), &mut capture)
            };
        }
        let (mut reader, child) = match self.spawn(&job) {
            Ok(x) => x,
            Err(e) => return could_not_start(e.to_string(), &mut capture),
        };
        let mut child = child;
        let group = Group::new(child.id());
        let mut buf = vec![0u8; 64 * 1024];
        let deadline = Instant::now() + job.timeout;
        let mut stop: Option<CommandOutcome> = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        // The signal sent at `kill_at`: SIGTERM after a timeout's SIGINT, then SIGKILL.
        let mut next_signal = Signal::SIGKILL;
        let mut open = true;
        let status = loop {
            tokio::select! {
                read = reader.read(&mut buf), if open => match read {
                    Ok(0) | Err(_) => open = false,
                    Ok(n) => capture.push(&buf[..n]).await,
                },
                status = child.wait() => break status,
                _ = tokio::time::sleep_until(deadline.into()), if stop.is_none() => {
                    // SIGINT first, as Ctrl-C: test tools write their reports and name the
                    // test that hung (pytest, jest, go test); then SIGTERM, then SIGKILL.
                    stop = Some(CommandOutcome::TimedOut { seconds: job.timeout.as_secs() });
                    group.signal(Signal::SIGINT);
                    next_signal = Signal::SIGTERM;
                    kill_at = Some(tokio::time::Instant::now() + GRACE_PERIOD);
                }
                reason = self.cancel.cancelled(), if stop.is_none() => {
                    stop = Some(CommandOutcome::Cancelled { reason });
                    group.signal(Signal::SIGTERM);
                    kill_at = Some(tokio::time::Instant::now() + GRACE_PERIOD);
                }
                _ = sleep_until_opt(kill_at) => {
                    group.signal(next_signal);
                    kill_at = (next_signal == Signal::SIGTERM)
                        .then(|| tokio::time::Instant::now() + GRACE_PERIOD);
                    next_signal = Signal::SIGKILL;
                }
            }
        };
        // Background children still holding the pipe are killed so the reader reaches EOF.
        group.finish();
        let drain_until = tokio::time::Instant::now() + DRAIN_LIMIT;
        while open {
            match tokio::time::timeout_at(drain_until, reader.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => capture.push(&buf[..n]).await,
                _ => open = false,
            }
        }
        let outcome = match (stop, status) {
            (Some(stop), _) => stop,
            (None, Ok(s)) if s.success() => CommandOutcome::Passed,
            (None, Ok(s)) => match s.code() {
                Some(code) => CommandOutcome::Failed { code },
                None => {
                    use std::os::unix::process::ExitStatusExt;
                    CommandOutcome::Signalled {
                        signal: s.signal().unwrap_or(0),
                    }
                }
            },
            (None, Err(e)) => CommandOutcome::CouldNotStart {
                error: e.to_string(),
            },
        };
        let log = capture.finish();
        if let Some(e) = capture.log_error() {
            tracing::warn!("{e}");
        }
        Finished {
            outcome,
            output: capture.excerpt.render(),
            failure_lines: capture.failures.lines(),
            duration: started.elapsed(),
            bytes: capture.bytes,
            log,
        }
    }

    fn spawn(
        &self,
        job: &Job<'_>,
    ) -> std::io::Result<(tokio::net::unix::pipe::Receiver, tokio::process::Child)> {
        let (tx, rx) = tokio::net::unix::pipe::pipe()?;
        let out = tx.into_blocking_fd()?;
        let err = out.try_clone()?;
        // The command (holding the pipe's write end) is dropped right after the spawn, so the
        // reader sees EOF once the children are gone.
        let (mut cmd, input) = self
            .sandbox
            .command(&["sh", "-c", job.command], job.cwd, &self.env);
        let mut child = cmd
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        if let Some(id) = child.id() {
            self.sandbox.started(id);
        }
        if let (Some(input), Some(stdin)) = (input, child.stdin.take()) {
            // The sandbox helper reads its whole command before anything else happens, so the
            // write cannot wait on the command's output.
            let fd = stdin.into_owned_fd()?;
            nix::fcntl::fcntl(
                &fd,
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
            )
            .map_err(std::io::Error::from)?;
            let mut stdin = std::fs::File::from(fd);
            std::io::Write::write_all(&mut stdin, &input)?;
        }
        Ok((rx, child))
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A command's process group. Dropping it (the future was dropped, e.g. on cancellation of an
/// agent turn) kills whatever is left in the group.
struct Group(Option<Pid>);

impl Group {
    fn new(id: Option<u32>) -> Self {
        Group(id.map(|id| Pid::from_raw(id as i32)))
    }

    fn signal(&self, signal: Signal) {
        if let Some(pg) = self.0 {
            let _ = killpg(pg, signal);
        }
    }

    /// Kills the rest of the group and reaps the members that became our children (when qa-loop
    /// is PID 1 in a container, orphans are reparented to it and would stay zombies).
    fn finish(mut self) {
        if let Some(pg) = self.0.take() {
            let _ = killpg(pg, Signal::SIGKILL);
            reap_group(pg);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pg) = self.0.take() {
            let _ = killpg(pg, Signal::SIGKILL);
            reap_group(pg);
        }
    }
}

fn reap_group(pg: Pid) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    // Only processes of this group that are our own children: ECHILD at once otherwise.
    let group = Pid::from_raw(-pg.as_raw());
    for _ in 0..50 {
        match waitpid(group, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(2)),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::rt;

    /// Runs `command` with the built-in secret filter and no cancellation.
    async fn run_shell(
        command: &str,
        cwd: &Path,
        timeout: Duration,
        head: usize,
        tail: usize,
    ) -> Finished {
        Launcher::new(&EnvPolicy::default(), Cancel::new())
            .run(Job {
                command,
                cwd,
                timeout,
                head,
                tail,
                log: None,
            })
            .await
    }

    #[test]
    fn outcomes_are_enums_not_bools() {
        let dir = tempfile::tempdir().unwrap();
        let t = Duration::from_secs(10);
        rt().block_on(async {
            let ok = run_shell("echo hi", dir.path(), t, 100, 100).await;
            assert_eq!(ok.outcome, CommandOutcome::Passed);
            assert_eq!(ok.output.trim(), "hi");
            let fail = run_shell("echo oops >&2; exit 3", dir.path(), t, 100, 100).await;
            assert_eq!(fail.outcome, CommandOutcome::Failed { code: 3 });
            assert!(fail.output.contains("oops"));
            let sig = run_shell("kill -9 $$", dir.path(), t, 100, 100).await;
            assert_eq!(sig.outcome, CommandOutcome::Signalled { signal: 9 });
        });
    }

    #[test]
    fn timeout_kills_the_whole_group_including_background_children() {
        let dir = tempfile::tempdir().unwrap();
        rt().block_on(async {
            let started = Instant::now();
            let r = run_shell(
                "sleep 30 & sleep 30; echo never",
                dir.path(),
                Duration::from_millis(300),
                100,
                100,
            )
            .await;
            assert_eq!(r.outcome, CommandOutcome::TimedOut { seconds: 0 });
            assert!(!r.output.contains("never"));
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "hung for {:?}",
                started.elapsed()
            );
        });
    }

    #[test]
    fn a_grandchild_ignoring_sigterm_is_reaped_and_the_reader_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        rt().block_on(async {
            let started = Instant::now();
            // The grandchild ignores SIGTERM and keeps the output pipe open.
            let cmd = format!(
                "sh -c 'trap \"\" TERM; echo $$ > {}; sleep 60' & sleep 60",
                pidfile.display()
            );
            let r = run_shell(&cmd, dir.path(), Duration::from_millis(500), 100, 100).await;
            assert!(
                matches!(r.outcome, CommandOutcome::TimedOut { .. }),
                "{:?}",
                r.outcome
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "hung for {:?}",
                started.elapsed()
            );
        });
        let pid = read_pid(&pidfile);
        assert!(!alive(pid), "grandchild {pid} survived the timeout");
    }

    #[test]
    fn cancellation_stops_the_group_at_once_and_later_commands_do_not_start() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let cancel = Cancel::new();
        let launcher = Launcher::new(&EnvPolicy::default(), cancel.clone());
        let cmd = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let job = Job {
            command: &cmd,
            cwd: dir.path(),
            timeout: Duration::from_secs(120),
            head: 100,
            tail: 100,
            log: None,
        };
        let started = Instant::now();
        let r = rt().block_on(async {
            let run = launcher.run(job.clone());
            let stop = async {
                while std::fs::read_to_string(&pidfile).map_or(true, |p| !p.ends_with('\n')) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                cancel.cancel("SIGTERM");
            };
            tokio::join!(run, stop).0
        });
        assert_eq!(
            r.outcome,
            CommandOutcome::Cancelled {
                reason: "SIGTERM".into()
            }
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let pid = read_pid(&pidfile);
        assert!(
            !alive(pid),
            "background child {pid} survived the cancellation"
        );
        // Once cancelled, nothing new starts.
        let again = rt().block_on(launcher.run(Job {
            command: "touch started",
            ..job
        }));
        assert!(matches!(again.outcome, CommandOutcome::Cancelled { .. }));
        assert!(!dir.path().join("started").exists());
    }

    #[test]
    fn output_is_streamed_to_the_log_and_failure_lines_extracted() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/unit_tests-1.log");
        let launcher = Launcher::new(&EnvPolicy::default(), Cancel::new());
        let r = rt().block_on(launcher.run(Job {
            command: "for i in $(seq 1 5000); do echo \"ok line $i\"; done; \
                      echo 'FAILED tests/test_a.py::test_total' >&2; exit 1",
            cwd: dir.path(),
            timeout: Duration::from_secs(30),
            head: 64,
            tail: 64,
            log: Some(log.clone()),
        }));
        assert_eq!(r.outcome, CommandOutcome::Failed { code: 1 });
        assert_eq!(r.failure_lines, ["FAILED tests/test_a.py::test_total"]);
        let whole = std::fs::read_to_string(&log).unwrap();
        assert_eq!(whole.lines().count(), 5001);
        assert_eq!(r.bytes, whole.len() as u64);
        assert_eq!(r.log.as_deref(), Some(log.as_path()));
        assert!(
            r.output.len() < 200,
            "excerpt is bounded: {}",
            r.output.len()
        );
        assert!(r.output.contains("bytes omitted"));
    }

    fn read_pid(path: &Path) -> i32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether `pid` still runs 2 s after it was sent SIGKILL (delivery is asynchronous).
    fn alive(pid: i32) -> bool {
        let running = || {
            // Gone, or a zombie about to be reaped by init.
            nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z ") && !s.contains(") X "))
        };
        let until = Instant::now() + Duration::from_secs(2);
        while running() {
            if Instant::now() > until {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn secrets_do_not_reach_children() {
        let dir = tempfile::tempdir().unwrap();
        let key = "sk-canary-model-key-123";
        let vars = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("GITHUB_TOKEN", "ghs_canary_github".into()),
            ("INPUT_GITHUB-TOKEN", "ghs_canary_input".into()),
            ("ACTIONS_RUNTIME_TOKEN", "canary_runtime".into()),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "canary_oidc".into()),
            ("QA_LOOP_API_KEY", key.into()),
            ("COPY_OF_KEY", key.into()),
            ("DEPLOY_PASSWORD", "canary_user_listed".into()),
            ("NPM_TOKEN", "npm_kept_by_passthrough".into()),
            ("ORDINARY", "visible".into()),
        ];
        let mut policy = EnvPolicy::new(vec!["NPM_*".into()], vec!["*_PASSWORD".into()]);
        policy.hide_value(key);
        let launcher = Launcher::with_env(
            vars.iter().map(|(k, v)| (k.to_string(), v.clone())),
            &policy,
            Cancel::new(),
        );
        let r = rt().block_on(launcher.run(Job {
            command: "env",
            cwd: dir.path(),
            timeout: Duration::from_secs(10),
            head: 1 << 20,
            tail: 1 << 20,
            log: None,
        }));
        assert!(!r.output.contains("canary"), "{}", r.output);
        assert!(r.output.contains("NPM_TOKEN=npm_kept_by_passthrough"));
        assert!(r.output.contains("ORDINARY=visible"));
    }

    /// Issue 18: a timeout sent SIGTERM first, so pytest wrote no report and the hung test was
    /// not named. SIGINT comes first now (as Ctrl-C), SIGTERM only if that does not end it.
    #[test]
    fn a_timeout_interrupts_first_so_test_tools_write_their_reports() {
        let dir = tempfile::tempdir().unwrap();
        rt().block_on(async {
            let done = run_shell(
                "trap 'echo interrupted > report.txt; exit 130' INT; trap '' TERM; sleep 30 & wait",
                dir.path(),
                Duration::from_millis(300),
                100,
                100,
            )
            .await;
            assert!(matches!(done.outcome, CommandOutcome::TimedOut { .. }));
            let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
            assert_eq!(report.trim(), "interrupted");
        });
    }
}
