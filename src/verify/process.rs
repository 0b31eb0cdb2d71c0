//! Running one shell command: its own process group, a timeout (SIGTERM to the group, a grace
//! period, then SIGKILL), output captured with bounded memory (head + tail), and an environment
//! without secrets.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::config::env_vars;
use crate::model::CommandOutcome;

/// How long a process group gets between SIGTERM and SIGKILL.
pub const GRACE_PERIOD: Duration = Duration::from_secs(5);

/// Bytes kept from the start and from the end of a command's output.
pub const EXCERPT_HEAD: usize = 6 * 1024;
pub const EXCERPT_TAIL: usize = 10 * 1024;

/// Keeps the first `head` and last `tail` bytes of a stream, counting what was dropped.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
}

impl HeadTail {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        HeadTail {
            head: Vec::new(),
            tail: Default::default(),
            head_cap,
            tail_cap,
            dropped: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        for &b in bytes {
            if self.tail.len() == self.tail_cap {
                self.tail.pop_front();
                self.dropped += 1;
            }
            self.tail.push_back(b);
        }
    }

    /// The kept text, with a marker where bytes were dropped.
    pub fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n[… {} bytes omitted …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// The result of one command.
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: CommandOutcome,
    pub output: String,
    pub duration: Duration,
}

/// Runs `command` with `sh -c` in `cwd`, stdout and stderr interleaved into one bounded capture.
pub async fn run_shell(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    head: usize,
    tail: usize,
) -> Finished {
    let started = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env_vars::scrubbed_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Finished {
                outcome: CommandOutcome::CouldNotStart {
                    error: e.to_string(),
                },
                output: String::new(),
                duration: started.elapsed(),
            };
        }
    };
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    let readers = [
        tokio::spawn(pump(child.stdout.take(), tx.clone())),
        tokio::spawn(pump(child.stderr.take(), tx)),
    ];
    let mut capture = HeadTail::new(head, tail);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut timed_out = false;
    let status = loop {
        tokio::select! {
            Some(chunk) = rx.recv() => capture.push(&chunk),
            status = child.wait() => break status,
            _ = &mut deadline, if !timed_out => {
                timed_out = true;
                if let Some(pg) = pgid {
                    terminate_group(pg, &mut child).await;
                }
            }
        }
    };
    // Whatever is left in the group (background children holding the pipes) is killed so the
    // readers reach end of file.
    if let Some(pg) = pgid {
        let _ = killpg(pg, Signal::SIGKILL);
    }
    for r in readers {
        let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
    }
    while let Ok(chunk) = rx.try_recv() {
        capture.push(&chunk);
    }
    let outcome = match status {
        _ if timed_out => CommandOutcome::TimedOut {
            seconds: timeout.as_secs(),
        },
        Ok(s) if s.success() => CommandOutcome::Passed,
        Ok(s) => match s.code() {
            Some(code) => CommandOutcome::Failed { code },
            None => {
                use std::os::unix::process::ExitStatusExt;
                CommandOutcome::Signalled {
                    signal: s.signal().unwrap_or(0),
                }
            }
        },
        Err(e) => CommandOutcome::CouldNotStart {
            error: e.to_string(),
        },
    };
    Finished {
        outcome,
        output: capture.render(),
        duration: started.elapsed(),
    }
}

async fn terminate_group(pg: Pid, child: &mut tokio::process::Child) {
    let _ = killpg(pg, Signal::SIGTERM);
    if tokio::time::timeout(GRACE_PERIOD, child.wait())
        .await
        .is_err()
    {
        let _ = killpg(pg, Signal::SIGKILL);
    }
}

async fn pump<R: AsyncRead + Unpin>(reader: Option<R>, tx: tokio::sync::mpsc::Sender<Vec<u8>>) {
    let Some(mut reader) = reader else { return };
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::rt;

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
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Gone (or a zombie about to be reaped by init): signal 0 fails, or /proc shows state Z.
        let alive = nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "));
        assert!(!alive, "grandchild {pid} survived the timeout");
    }

    #[test]
    fn output_is_bounded_head_and_tail() {
        let mut ht = HeadTail::new(4, 4);
        ht.push(b"abcdefghij");
        assert_eq!(ht.render(), "abcd\n[… 2 bytes omitted …]\nghij");
    }

    #[test]
    fn secrets_do_not_reach_children() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("QA_LOOP_API_KEY", "canary-key-123") };
        let r = rt().block_on(run_shell(
            "env",
            dir.path(),
            Duration::from_secs(10),
            1 << 20,
            1 << 20,
        ));
        unsafe { std::env::remove_var("QA_LOOP_API_KEY") };
        assert!(!r.output.contains("canary-key-123"));
        assert!(r.output.contains("PATH="));
    }
}
