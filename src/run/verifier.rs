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
    /// The test-integrity guard's memory of the last pass and the fix after it.
    pub guard: Guard,
    /// The pass before (what failing first runs again after a fix).
    pub last: Option<VerificationReport>,
    /// The test cases of the last full pass (the "of" in "failing tests first: 2 of 340").
    pub full_tests: u64,
}

/// What the test-integrity guard compares the fixes with: the run's first pass and the tree
/// before the first fix (so a weakening stays found until it is undone, whatever later fixes
/// do), and every issue the fixer was asked to fix.
#[derive(Default)]
pub struct Guard {
    pub root: PathBuf,
    /// qa-loop's own paths (out dir, plan), left out of the snapshots.
    pub own_paths: Vec<String>,
    first: Option<VerificationReport>,
    tree_before_fixes: Option<String>,
    asked: Vec<crate::model::Issue>,
    /// Every tree verified so far (a snapshot id) with its report: a tree seen again (a fix
    /// that changed nothing) reuses its results instead of being verified twice.
    verified: Vec<(String, VerificationReport)>,
    /// The change and the tree's snapshot, read once per tree (shared with the reviewer).
    pub change: crate::vcs::ChangeCache,
}

impl Guard {
    /// The tree now (without qa-loop's own files); `None`, with a warning, when it cannot be read.
    async fn snapshot(&self) -> Option<String> {
        self.change
            .snapshot(|| crate::vcs::snapshot(&self.root, &self.own_paths))
            .await
            .map_err(|e| tracing::warn!("cannot read the tree: {e}"))
            .ok()
    }

    /// Remembers that `tree` was verified in pass `pass` with `report`.
    fn remember(&mut self, tree: String, report: &VerificationReport, pass: u32) {
        if self.verified.iter().all(|(t, _)| *t != tree) {
            let mut kept = report.clone();
            kept.reused_from = Some(report.reused_from.unwrap_or(pass));
            self.verified.push((tree, kept));
        }
    }

    /// The results of `tree` when it was verified before: the same content is not verified
    /// twice (a fix that changed nothing, or one that undid the last).
    fn verified_as(&self, tree: &str) -> Option<VerificationReport> {
        let (_, report) = self.verified.iter().find(|(t, _)| t == tree)?;
        tracing::info!(
            pass = report.reused_from,
            "the tree is the same as one already verified: its results are reused"
        );
        Some(report.clone())
    }

    pub fn new(root: PathBuf, own_paths: Vec<String>, change: crate::vcs::ChangeCache) -> Guard {
        Guard {
            root,
            own_paths,
            change,
            ..Guard::default()
        }
    }

    /// The `test_integrity` gate for a pass after a fix (none before the first fix, or when the
    /// tree could not be read — said in the log). When the fixes changed tests that failed in
    /// the first pass, those tests run, as the fixes left them, on the code before the fixes.
    async fn after(
        &mut self,
        now: Option<&str>,
        report: &mut VerificationReport,
        verifier: &crate::verify::Verifier,
    ) -> Option<crate::model::Gate> {
        let tree = self.tree_before_fixes.as_deref()?;
        self.first.as_ref()?;
        let Some(now) = now else {
            tracing::warn!("the test-integrity guard cannot read the tree");
            return None;
        };
        let diff = match crate::vcs::diff_trees(&self.root, tree, now).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("the test-integrity guard cannot diff the fix: {e}");
                return None;
            }
        };
        let (old_code, evidence) = self.old_code_run(tree, &diff, report, verifier).await;
        let first = self.first.as_ref()?;
        let mut gate = crate::verify::integrity::check(first, report, &diff, &self.asked, old_code);
        mark_evidence(report, &mut gate, evidence);
        Some(gate)
    }

    /// The tests that failed before the fixes and that the fixes changed, run as the fixes left
    /// them against the code before the fixes (`tree`), in a scratch checkout: one that passes
    /// there no longer catches the defect. Dependencies the repository does not track
    /// (`node_modules`, a virtualenv) are linked into the scratch checkout.
    async fn old_code_run(
        &self,
        tree: &str,
        diff: &str,
        report: &VerificationReport,
        verifier: &crate::verify::Verifier,
    ) -> (Vec<crate::model::Finding>, Vec<Evidence>) {
        let Some(first) = &self.first else {
            return (Vec::new(), Vec::new());
        };
        let candidates = crate::verify::integrity::old_code_candidates(first, diff, &self.asked);
        let added = crate::verify::integrity::new_tests(first, report, diff);
        if candidates.is_empty() && added.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let scratch = match self
            .old_code_checkout(tree, diff, &verifier.report_roots())
            .await
        {
            Ok(dir) => dir,
            Err(e) => {
                tracing::warn!(
                    "the test-integrity guard cannot check the tests on the code before the fix: {e}"
                );
                return (Vec::new(), Vec::new());
            }
        };
        let mut suites: Vec<&str> = candidates.iter().chain(&added).map(|(s, _)| *s).collect();
        suites.dedup();
        let mut findings = Vec::new();
        let mut evidence = Vec::new();
        for suite in suites {
            let (failed, new) = (tests_of(&candidates, suite), tests_of(&added, suite));
            let all: Vec<&crate::model::TestCase> = failed.iter().chain(&new).copied().collect();
            let Some(old) = verifier.run_tests_in(scratch.path(), suite, &all).await else {
                tracing::warn!("the tests of `{suite}` left no results on the code before the fix");
                continue;
            };
            findings.extend(crate::verify::integrity::passing_on_old_code(&failed, &old));
            evidence.extend(
                crate::verify::integrity::evidence(&new, &old)
                    .into_iter()
                    .map(|(classname, name, proves)| (suite.to_string(), classname, name, proves)),
            );
        }
        (findings, evidence)
    }

    /// The code before the fixes with the test files as the fixes left them.
    async fn old_code_checkout(
        &self,
        tree: &str,
        diff: &str,
        report_roots: &[String],
    ) -> Result<tempfile::TempDir, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        crate::vcs::materialize(&self.root, tree, dir.path()).await?;
        for f in crate::verify::integrity::parse_diff(diff) {
            let path = f.renamed_to.as_deref().unwrap_or(&f.path);
            if !crate::verify::integrity::is_test_file(path) {
                continue;
            }
            let to = dir.path().join(path);
            match crate::nofollow::read_to_string(&self.root, &self.root.join(path)) {
                Ok(text) => {
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                    }
                    std::fs::write(&to, text).map_err(|e| e.to_string())?;
                }
                Err(_) => {
                    let _ = std::fs::remove_file(&to);
                }
            }
        }
        // What the repository does not track but the tests need: linked, never copied — but
        // not where the suites write their reports, which must stay the scratch checkout's own.
        let entries = std::fs::read_dir(&self.root).map_err(|e| e.to_string())?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let shown = name.to_string_lossy();
            let own = self
                .own_paths
                .iter()
                .any(|p| p.trim_end_matches('/') == shown)
                || report_roots.iter().any(|r| *r == shown);
            if shown == ".git" || own || dir.path().join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), dir.path().join(&name));
        }
        Ok(dir)
    }
}

/// The tests of `suite` in a per-suite list.
fn tests_of<'t>(
    list: &[(&str, Vec<&'t crate::model::TestCase>)],
    suite: &str,
) -> Vec<&'t crate::model::TestCase> {
    list.iter()
        .filter(|(s, _)| *s == suite)
        .flat_map(|(_, t)| t.iter().copied())
        .collect()
}

/// A new test's old-code verdict: suite, class, name, and whether it failed there.
type Evidence = (String, String, String, bool);

/// Marks each new test with its old-code verdict (report, check run, JUnit) and lists them on
/// the integrity gate.
fn mark_evidence(
    report: &mut VerificationReport,
    gate: &mut crate::model::Gate,
    evidence: Vec<Evidence>,
) {
    for (suite, classname, name, proves) in evidence {
        let case = report
            .tests
            .iter_mut()
            .filter(|s| s.suite == suite)
            .flat_map(|s| s.cases.iter_mut())
            .find(|c| *c.classname == *classname && c.name == name);
        if let Some(case) = case {
            case.proves_fix = Some(proves);
            gate.excerpt.push_str(&format!(
                "new test `{}`: {}\n",
                case.full_name(),
                if proves {
                    "fails on the code before the fix — proves the fix"
                } else {
                    "passes on the code before the fix too — proves nothing"
                }
            ));
        }
    }
}

impl Verifier for RepoVerifier<'_> {
    async fn verify(&mut self) -> VerificationReport {
        self.passes += 1;
        // After a fix: the tree now, to reuse the results of a tree already verified and for
        // the integrity guard (the first pass needs neither).
        let now = match self.guard.tree_before_fixes.is_some() {
            true => self.guard.snapshot().await,
            false => None,
        };
        if let Some(reused) = now.as_deref().and_then(|t| self.guard.verified_as(t)) {
            self.last = Some(reused.clone());
            return reused;
        }
        if let Some(partial) = self.failing_first().await {
            if let Some(now) = now {
                self.guard.remember(now, &partial, self.passes);
            }
            self.last = Some(partial.clone());
            return partial;
        }
        let mut report = self.measure().await;
        self.full_tests = report.test_count();
        if let Some(gate) = self
            .guard
            .after(now.as_deref(), &mut report, &self.verifier)
            .await
        {
            if gate.status == crate::model::GateStatus::Failed {
                tracing::warn!("{}", gate.summary);
            }
            report.gates.push(gate);
        }
        if self.guard.first.is_none() {
            self.guard.first = Some(report.clone());
        }
        if let Some(now) = now {
            self.guard.remember(now, &report, self.passes);
        }
        self.last = Some(report.clone());
        report
    }

    async fn release(&mut self) {
        if let Some(b) = &mut self.browser {
            b.release().await;
        }
    }

    async fn before_fix(&mut self, issues: &[crate::model::Issue]) {
        self.release().await;
        self.guard.asked.extend_from_slice(issues);
        if self.guard.tree_before_fixes.is_none() {
            let (root, own) = (&self.guard.root, &self.guard.own_paths);
            match self
                .guard
                .change
                .snapshot(|| crate::vcs::snapshot(root, own))
                .await
            {
                Ok(tree) => {
                    // The first pass verified this tree (nothing changes between a pass, its
                    // review and the fix).
                    if let Some(first) = self.guard.first.clone() {
                        self.guard.remember(tree.clone(), &first, 1);
                    }
                    self.guard.tree_before_fixes = Some(tree);
                }
                Err(e) => tracing::warn!(
                    "the test-integrity guard cannot read the tree before the fix: {e}"
                ),
            }
        }
        // The fix changes the tree: the change is read again after it.
        self.guard.change.invalidate().await;
    }
}

impl RepoVerifier<'_> {
    /// Reads the change and the tree through `cache` (shared with the reviewer).
    pub fn with_change(mut self, cache: crate::vcs::ChangeCache) -> Self {
        self.verifier = self.verifier.with_change(cache.clone());
        self.guard.change = cache;
        self
    }

    /// After a fix, what failed in the pass before runs first (`verify::first`): that pass
    /// when it still fails, `None` when it passes or does not apply (the full pass runs).
    async fn failing_first(&mut self) -> Option<VerificationReport> {
        let previous = self.last.as_ref().filter(|_| self.passes > 1)?;
        let _group = Group::start(
            self.groups,
            &format!("qa-loop: failing first (pass {})", self.passes),
        );
        self.verifier
            .verify_failing_first(previous, self.full_tests)
            .await
    }

    /// One pass: the suites, the conversations, the browser pages.
    async fn measure(&mut self) -> VerificationReport {
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
}
