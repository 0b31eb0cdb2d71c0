//! Cancellation of a run: SIGINT/SIGTERM of qa-loop itself (which may be PID 1 in a container,
//! where signals without a handler are ignored) stop running commands (SIGTERM to their process
//! group, grace, SIGKILL) and end the loop cleanly with the reports written.

use std::sync::Arc;

use tokio::sync::watch;

/// A cloneable cancellation flag carrying the reason (`SIGTERM`, `SIGINT`, …).
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: Arc<watch::Sender<Option<String>>>,
    rx: watch::Receiver<Option<String>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self::new()
    }
}

impl Cancel {
    /// A flag that nothing has raised yet.
    pub fn new() -> Self {
        let (tx, rx) = watch::channel(None);
        Cancel {
            tx: Arc::new(tx),
            rx,
        }
    }

    /// Raises the flag (the first reason wins).
    pub fn cancel(&self, reason: &str) {
        self.tx.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason.to_string());
                true
            } else {
                false
            }
        });
    }

    /// A flag raised by this one (with its reason) or on its own: stops one part of the run
    /// (an app under test at the end of its scenarios) without stopping the rest. Must be
    /// called inside a tokio runtime.
    pub fn child(&self) -> Cancel {
        let child = Cancel::new();
        let (parent, forward) = (self.clone(), child.clone());
        tokio::spawn(async move {
            tokio::select! {
                reason = parent.cancelled() => forward.cancel(&reason),
                _ = forward.cancelled() => {}
            }
        });
        child
    }

    /// Why the run was cancelled, if it was.
    pub fn reason(&self) -> Option<String> {
        self.rx.borrow().clone()
    }

    /// Waits until the flag is raised; returns the reason.
    pub async fn cancelled(&self) -> String {
        let mut rx = self.rx.clone();
        let reason = rx
            .wait_for(Option::is_some)
            .await
            .map(|r| r.clone().unwrap_or_default());
        match reason {
            Ok(r) => r,
            // The sender lives as long as any clone of `self`: unreachable, but never resolve.
            Err(_) => std::future::pending().await,
        }
    }

    /// Raises the flag on SIGINT or SIGTERM. Must be called inside a tokio runtime.
    pub fn on_signals(&self) -> std::io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let name = tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                };
                if me.reason().is_none() {
                    tracing::warn!(
                        "{name} received: stopping running commands and writing the reports"
                    );
                } else {
                    tracing::warn!("{name} received: already stopping");
                }
                me.cancel(name);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rt;

    #[test]
    fn the_first_reason_wins_and_waiters_wake() {
        rt().block_on(async {
            let c = Cancel::new();
            assert_eq!(c.reason(), None);
            let waiter = tokio::spawn({
                let c = c.clone();
                async move { c.cancelled().await }
            });
            tokio::task::yield_now().await;
            c.cancel("SIGTERM");
            c.cancel("SIGINT");
            assert_eq!(waiter.await.unwrap(), "SIGTERM");
            assert_eq!(c.reason().as_deref(), Some("SIGTERM"));
            // Already raised: resolves at once.
            assert_eq!(c.cancelled().await, "SIGTERM");
        });
    }
}
