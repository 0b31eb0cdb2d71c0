//! The verification strategy as the engine's [`Verifier`]: the suites, then the conversation
//! scenarios, each pass in its own log group.

use std::path::PathBuf;

use crate::engine::driver::Verifier;
use crate::github::actions::Group;
use crate::model::VerificationReport;

/// The suites and, after them, the conversation scenarios against the project's chat agent.
pub struct RepoVerifier<'a> {
    pub verifier: crate::verify::Verifier,
    pub conversations: Option<crate::conversations::Conversations<'a>>,
    /// Pages verified in a headless browser (SPEC §12).
    pub browser: Option<crate::browser::BrowserVerification>,
    pub log_dir: PathBuf,
    /// `::group::` per phase in GitHub Actions.
    pub groups: bool,
    pub passes: u32,
}

impl Verifier for RepoVerifier<'_> {
    async fn verify(&mut self) -> VerificationReport {
        self.passes += 1;
        let mut report = {
            let _group = Group::start(
                self.groups,
                &format!("qa-loop: verify (pass {})", self.passes),
            );
            self.verifier.verify().await
        };
        if let Some(c) = &self.conversations {
            let _group = Group::start(
                self.groups,
                &format!("qa-loop: conversations (pass {})", self.passes),
            );
            let log = crate::conversations::log_path(&self.log_dir, self.passes);
            let done = c.run(Some(log)).await;
            let mut gates = done.gates;
            // A `/qa approve` sign-off also passes scenarios left for a human.
            if let Some(login) = self.verifier.signed_off_by() {
                for g in gates
                    .iter_mut()
                    .filter(|g| g.status == crate::model::GateStatus::Pending)
                {
                    g.status = crate::model::GateStatus::Passed;
                    g.summary = format!("signed off by @{login} (`/qa approve`): {}", g.summary);
                }
            }
            report.gates.extend(gates);
            report.conversations = done.results;
        }
        if let Some(b) = &mut self.browser {
            let _group = Group::start(
                self.groups,
                &format!("qa-loop: browser verification (pass {})", self.passes),
            );
            let log = crate::browser::log_path(&self.log_dir, self.passes);
            let done = b.run(self.passes, Some(log)).await;
            report.gates.extend(done.gates);
            report.browser = done.pages;
        }
        report
    }

    async fn release(&mut self) {
        if let Some(b) = &mut self.browser {
            b.release().await;
        }
    }
}
