//! The app under test: the `start` command in its own process group (secret-free environment,
//! output streamed to a log), a readiness probe, and a stop at the end (SIGTERM to the group, a
//! grace period, SIGKILL). While scenarios run, the app's output keeps being drained and its exit
//! is noticed at once, so a crash ends the scenario under way instead of leaving it waiting.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::verify::process::{Finished, Job, Launcher};

/// The app is not expected to exit by itself; this only bounds a forgotten process.
const APP_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How often readiness is probed.
const PROBE_EVERY: Duration = Duration::from_millis(200);

/// A started app (or none when no `start` command is configured).
pub struct App<'a> {
    command: String,
    running: Option<Pin<Box<dyn Future<Output = Finished> + 'a>>>,
    exited: Option<Finished>,
    stop: Option<Cancel>,
}

/// The app exited while qa-loop was waiting on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exited(pub String);

impl<'a> App<'a> {
    /// No app to start: the agent is already running (or started by the workflow).
    pub fn none() -> App<'a> {
        App {
            command: String::new(),
            running: None,
            exited: None,
            stop: None,
        }
    }

    /// Starts `command` in `cwd` on a task of its own, so its output keeps being drained while
    /// nobody waits on it (browser verification leaves the app running for the reviewer).
    /// Dropping the app stops it.
    pub fn spawn(
        launcher: &Launcher,
        command: String,
        cwd: PathBuf,
        log: Option<PathBuf>,
    ) -> App<'static> {
        let stop = launcher.cancel().child();
        let launcher = launcher.with_cancel(stop.clone());
        tracing::info!(%command, "starting the app under test");
        let shown = command.clone();
        let task = tokio::spawn(async move {
            launcher
                .run(Job {
                    command: &command,
                    cwd: &cwd,
                    timeout: APP_LIFETIME,
                    head: 2 * 1024,
                    tail: 4 * 1024,
                    log,
                })
                .await
        });
        let running = async move {
            task.await.unwrap_or_else(|e| Finished {
                outcome: crate::model::CommandOutcome::CouldNotStart {
                    error: format!("its task ended: {e}"),
                },
                output: String::new(),
                failure_lines: Vec::new(),
                duration: Duration::ZERO,
                bytes: 0,
                log: None,
            })
        };
        App {
            command: shown,
            running: Some(Box::pin(running)),
            exited: None,
            stop: Some(stop),
        }
    }

    /// Why the app is gone, if it exited.
    pub fn exit(&self) -> Option<String> {
        self.exited.as_ref().map(|f| {
            let output = f.output.trim();
            let mut out = format!(
                "the start command `{}` {}",
                self.command,
                match &f.outcome {
                    crate::model::CommandOutcome::Passed => "exited with code 0".to_string(),
                    other => other.describe(),
                }
            );
            if output.is_empty() {
                out.push_str(" (no output)");
            } else {
                out.push_str(&format!("; its last output:\n{output}"));
            }
            out
        })
    }

    /// Runs `work` while the app runs; `Err` when the app exits first (the work is dropped).
    pub async fn during<T>(&mut self, work: impl Future<Output = T>) -> Result<T, Exited> {
        let Some(running) = self.running.as_mut() else {
            return match self.exit() {
                Some(why) => Err(Exited(why)),
                None => Ok(work.await),
            };
        };
        let ended = tokio::select! {
            biased;
            done = work => Ok(done),
            finished = running.as_mut() => Err(finished),
        };
        match ended {
            Ok(done) => Ok(done),
            Err(finished) => {
                self.running = None;
                self.exited = Some(finished);
                Err(Exited(self.exit().unwrap_or_default()))
            }
        }
    }

    /// Gives an app that may be dying `grace` to show it (a refused connection usually comes
    /// just before the exit is reaped).
    pub async fn settle(&mut self, grace: Duration) {
        let _ = self.during(tokio::time::sleep(grace)).await;
    }

    /// Stops the app: SIGTERM to its group, a grace period, SIGKILL.
    pub async fn stop(mut self) {
        if let (Some(stop), Some(running)) = (self.stop.take(), self.running.take()) {
            stop.cancel("the end of its checks");
            let finished = running.await;
            tracing::info!(outcome = %finished.outcome.describe(), "the app under test was stopped");
        }
    }
}

impl Drop for App<'_> {
    /// An app dropped without [`App::stop`] is told to stop (its launcher ends its group).
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.cancel("qa-loop no longer needs it");
        }
    }
}

/// Waits until `url` answers 2xx to a GET, or `timeout` passes. `Err` names the last failure.
pub async fn probe_url(url: &str, timeout: Duration) -> Result<(), String> {
    let client = crate::llm::http::https_client(Duration::from_secs(5))?;
    let deadline = Instant::now() + timeout;
    let mut last;
    loop {
        match client.get(url).send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => last = format!("HTTP {}", r.status().as_u16()),
            Err(e) => last = super::endpoint::error_chain(&e),
        }
        if Instant::now() + PROBE_EVERY >= deadline {
            return Err(format!(
                "`ready_url` {url} did not answer 2xx within {} (last: {last})",
                humantime::format_duration(timeout)
            ));
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// Waits until a TCP connection to the endpoint's host and port succeeds (a started app without
/// a `ready_url`), or `timeout` passes.
pub async fn probe_port(endpoint: &str, timeout: Duration) -> Result<(), String> {
    let url = reqwest::Url::parse(endpoint).map_err(|e| format!("`endpoint` {endpoint}: {e}"))?;
    let host = url.host_str().unwrap_or("127.0.0.1").to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let deadline = Instant::now() + timeout;
    loop {
        let connect = tokio::net::TcpStream::connect((host.as_str(), port));
        let last = match tokio::time::timeout(Duration::from_secs(2), connect).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "connection attempt timed out".to_string(),
        };
        if Instant::now() + PROBE_EVERY >= deadline {
            return Err(format!(
                "nothing listened on {host}:{port} (the `endpoint`) within {}; last: {last}. Set `ready_url` to a health URL of the app",
                humantime::format_duration(timeout)
            ));
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}
