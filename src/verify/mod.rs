//! Verification: runs the strategy's suites (concurrently with `parallel: true`) and turns their
//! results into gates.
//!
//! Each command's whole output goes to a log file under `<out-dir>/logs/`; gates, the report and
//! the reviewer get only the extracted failure lines and a head + tail excerpt.

pub mod capture;
pub mod coverage;
pub mod first;
#[cfg(test)]
mod fixtures;
pub mod integrity;
pub mod junit;
pub mod no_tests;
pub mod paths;
pub mod patterns;
pub mod process;
pub mod select;
mod xml;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use crate::config::file::FlakyPolicy;
use crate::config::{Strategy, Suite, SuiteKind};
use crate::model::{
    CommandRun, Finding, Gate, GateStatus, IssueType, Severity, SuiteTests, TestCounts,
    VerificationReport,
};
use crate::vcs::AddedLines;
use process::{Job, Launcher};

/// Runs the verification strategy in a repository.
#[derive(Debug, Clone)]
pub struct Verifier {
    pub strategy: Strategy,
    pub root: PathBuf,
    launcher: Launcher,
    /// Where command logs go (`<out-dir>/logs`); none keeps output in memory only.
    log_dir: Option<PathBuf>,
    /// Verification passes run so far (log files are numbered by pass).
    passes: u32,
    /// What the change is compared with (pattern checks, added-line coverage).
    diff_base: Option<crate::vcs::DiffBase>,
    /// Path prefixes (relative to the root) never pattern-checked: qa-loop's own out dir.
    own_paths: Vec<String>,
    /// The change, read once per tree and shared with the reviewer.
    change: crate::vcs::ChangeCache,
    /// Who signed a `critical` change off (`/qa approve` by a user with write access).
    signed_off_by: Option<String>,
    /// Set by a failing-first run that passed: the full verification after it belongs to the
    /// same pass (and its log directory).
    continuing: bool,
    /// Suites the failing-first run of this pass ran whole and that passed: the full
    /// verification takes their results instead of running them again.
    carried: Vec<Carried>,
    /// The narrowed runs of a failing-first run that passed: listed first in the full pass (its
    /// time is the pass's too).
    first_runs: Vec<CommandRun>,
    /// Prefix of the log files (`first-` while failing first runs).
    log_tag: &'static str,
}

/// A suite run whole by failing first, carried into the full verification of the same pass.
#[derive(Debug, Clone)]
struct Carried {
    kind: SuiteKind,
    gate: Gate,
    runs: Vec<CommandRun>,
    tests: Option<SuiteTests>,
    /// Its coverage gate, read right after it ran (before any other suite could rewrite the
    /// reports).
    coverage: Option<Gate>,
}

/// What one suite produced.
struct SuiteResult {
    gates: Vec<Gate>,
    runs: Vec<CommandRun>,
    tests: Option<SuiteTests>,
}

impl Verifier {
    pub fn new(strategy: Strategy, root: PathBuf, launcher: Launcher) -> Self {
        Verifier {
            strategy,
            root,
            launcher,
            log_dir: None,
            passes: 0,
            diff_base: None,
            own_paths: Vec::new(),
            change: crate::vcs::ChangeCache::default(),
            signed_off_by: None,
            continuing: false,
            carried: Vec::new(),
            first_runs: Vec::new(),
            log_tag: "",
        }
    }

    /// Compares the change with `base` (its merge base with `HEAD`); `own_paths` (the out dir,
    /// the plan) are never pattern-checked.
    pub fn with_diff_base(mut self, base: crate::vcs::DiffBase, own_paths: Vec<String>) -> Self {
        self.diff_base = Some(base);
        self.own_paths = own_paths;
        self
    }

    /// Reads the change through `cache` (shared with the reviewer: one read per tree).
    pub fn with_change(mut self, cache: crate::vcs::ChangeCache) -> Self {
        self.change = cache;
        self
    }

    /// The change against the diff base: read once per tree.
    async fn read_change(&self) -> Result<std::sync::Arc<crate::vcs::Change>, String> {
        match &self.diff_base {
            Some(base) => self.change.get(&self.root, base.rev()?).await,
            None => Err("no diff base".into()),
        }
    }

    /// A human's sign-off (`/qa approve`): the `human_signoff` gate passes.
    pub fn set_signoff(&mut self, login: Option<String>) {
        self.signed_off_by = login;
    }

    /// Who signed off with `/qa approve`, if anyone.
    pub fn signed_off_by(&self) -> Option<&str> {
        self.signed_off_by.as_deref()
    }

    /// Streams every command's output to `dir/pass-<n>/<suite>-<k>.log`.
    pub fn with_logs(mut self, dir: PathBuf) -> Self {
        self.log_dir = Some(dir);
        self
    }

    /// Runs every suite and returns the gates: suites one after another, or all at once with
    /// `parallel: true` (commands within a suite always run in order).
    pub async fn verify(&mut self) -> VerificationReport {
        self.clear_earlier_logs();
        if !std::mem::take(&mut self.continuing) {
            self.passes += 1;
        }
        let carried = std::mem::take(&mut self.carried);
        // Pattern checks run on each added line as the diff is read (it is never held whole).
        let mut checker = self
            .strategy
            .pattern_checks
            .as_ref()
            .map(|cfg| patterns::Checker::new(cfg, &self.own_paths));
        let added = self.added_lines(&mut checker).await;
        // The change is read before the change's code runs in this pass (above, or here when
        // no check wants its lines): what the commands write into the checkout is not what the
        // reviewer is shown.
        if added.is_none()
            && self.diff_base.is_some()
            && let Err(e) = self.read_change().await
        {
            tracing::debug!("the change is not read: {e}");
        }
        if let Some(Err(e)) = &added {
            tracing::warn!("the lines the change adds are unknown: {e}");
        }
        // Without them the checks on added lines fail (closed), naming why.
        let unknown = match &added {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let added = added.as_ref().and_then(|a| a.as_ref().ok());
        let changed = self.changed_files().await;
        let skipped: Vec<Option<String>> = self
            .strategy
            .suites
            .iter()
            .map(|s| s.skip_reason(changed.as_deref()))
            .collect();
        let results = self
            .run_suites(&skipped, carried, added, unknown.as_deref())
            .await;
        let mut report = VerificationReport {
            commands: std::mem::take(&mut self.first_runs),
            ..VerificationReport::default()
        };
        report.gates.extend(self.skipped_gates(&skipped));
        for r in results {
            report.gates.extend(r.gates);
            report.commands.extend(r.runs);
            report.tests.extend(r.tests);
        }
        // The plan's subtask checks: advisory evidence, after the suites.
        for check in &self.strategy.checks {
            let (gate, run) = self.run_check(check).await;
            report.gates.push(gate);
            report.commands.push(run);
        }
        match (checker, added, &unknown) {
            (Some(checker), Some(added), _) => {
                report
                    .gates
                    .extend(patterns::gates(checker.finish(), added.len()));
            }
            (Some(_), None, Some(why)) => report.gates.push(Gate::new(
                "patterns",
                IssueType::CodeQuality,
                true,
                GateStatus::Failed,
                format!("the lines the change adds could not be checked: {why}"),
                "",
            )),
            _ => {}
        }
        report.gates.extend(self.signoff_gate());
        report
    }

    /// Before the first pass, removes the logs of an earlier run from the log dir.
    fn clear_earlier_logs(&self) {
        if self.passes == 0
            && let Some(dir) = &self.log_dir
            && dir.exists()
        {
            // Logs of an earlier run would be mistaken for this one's.
            if let Err(e) = std::fs::remove_dir_all(dir) {
                tracing::warn!("cannot clear {}: {e}", dir.display());
            }
        }
    }

    /// The lines the change adds, each fed to `checker` as the diff is read; none without a
    /// diff base or when neither pattern checks nor coverage want them.
    async fn added_lines(
        &self,
        checker: &mut Option<patterns::Checker<'_>>,
    ) -> Option<Result<AddedLines, String>> {
        // The lines the change adds: for pattern checks and for the coverage of new code (the
        // git calls are skipped when neither is wanted).
        let wanted = self.strategy.pattern_checks.is_some()
            || self.strategy.suites.iter().any(|s| !s.coverage.is_empty());
        if self.diff_base.is_none() || !wanted {
            return None;
        }
        let base = match self.diff_base.as_ref().map(crate::vcs::DiffBase::rev) {
            Some(Ok(base)) => base,
            Some(Err(e)) => return Some(Err(e)),
            None => return None,
        };
        let mut visit = |path: &str, n: u32, text: &str| {
            if let Some(c) = checker {
                c.line(path, n, text);
            }
        };
        // Read now (the pass's first reader): the checks run as git writes the diff.
        let read = self.change.get_visiting(&self.root, base, &mut visit).await;
        Some(read.and_then(|(change, seen)| {
            crate::vcs::visit_added_lines(&self.root, &change, seen, &mut visit)
        }))
    }

    /// The files the change touches (outside qa-loop's own paths), for suites chosen by path;
    /// none when no suite is, or when they are unknown (then every suite runs).
    async fn changed_files(&self) -> Option<Vec<String>> {
        match &self.diff_base {
            Some(_) if self.strategy.suites.iter().any(Suite::by_path) => {
                let change = self.read_change().await;
                match change.and_then(|c| crate::vcs::changed_files_of(&c)) {
                    Ok(files) => Some(
                        files
                            .into_iter()
                            .filter(|f| !self.own_paths.iter().any(|o| f.starts_with(o.as_str())))
                            .collect(),
                    ),
                    Err(e) => {
                        tracing::warn!(
                            "the files the change touches are unknown, every suite runs: {e}"
                        );
                        None
                    }
                }
            }
            _ => None,
        }
    }

    /// Runs the suites not `skipped` (a reason per suite of the strategy), concurrently with
    /// `parallel: true`; results in the strategy's order.
    async fn run_suites(
        &self,
        skipped: &[Option<String>],
        mut carried: Vec<Carried>,
        added: Option<&AddedLines>,
        unknown: Option<&str>,
    ) -> Vec<SuiteResult> {
        let suites: Vec<(&Suite, Option<Carried>)> = self
            .strategy
            .suites
            .iter()
            .zip(skipped)
            .filter(|(_, why)| why.is_none())
            .map(|(s, _)| {
                let done = carried.iter().position(|c| c.kind == s.kind);
                (s, done.map(|i| carried.swap_remove(i)))
            })
            .collect();
        if self.strategy.parallel && suites.len() > 1 {
            join_all(
                suites
                    .into_iter()
                    .map(|(s, done)| Box::pin(self.run_suite(s, done, added, unknown)) as _)
                    .collect(),
            )
            .await
        } else {
            let mut out = Vec::new();
            for (suite, done) in suites {
                out.push(self.run_suite(suite, done, added, unknown).await);
            }
            out
        }
    }

    /// A skipped gate, saying why, for each suite with a reason in `skipped`.
    fn skipped_gates(&self, skipped: &[Option<String>]) -> Vec<Gate> {
        let mut gates = Vec::new();
        for (suite, why) in self.strategy.suites.iter().zip(skipped) {
            if let Some(why) = why {
                tracing::info!(suite = suite.kind.key(), "{why}");
                gates.push(Gate::new(
                    suite.kind.key(),
                    suite_issue_type(suite.kind),
                    suite.required,
                    GateStatus::Skipped,
                    why.clone(),
                    String::new(),
                ));
            }
        }
        gates
    }

    /// The `human_signoff` gate when the strategy requires one: passed once someone signed off.
    fn signoff_gate(&self) -> Option<Gate> {
        if !self.strategy.human_signoff_required {
            return None;
        }
        let (status, summary) = match &self.signed_off_by {
            Some(login) => (
                GateStatus::Passed,
                format!("critical risk: signed off by @{login} (`/qa approve`)"),
            ),
            None => (
                GateStatus::Pending,
                "critical risk: waiting for a `/qa approve` comment by a user with write access"
                    .to_string(),
            ),
        };
        Some(Gate::new(
            "human_signoff",
            IssueType::AcceptanceCriteria,
            true,
            status,
            summary,
            "",
        ))
    }

    fn log_path(&self, suite: SuiteKind, index: usize) -> Option<PathBuf> {
        self.log_dir.as_ref().map(|d| {
            d.join(format!("pass-{}", self.passes)).join(format!(
                "{}{}-{}.log",
                self.log_tag,
                suite.key(),
                index + 1
            ))
        })
    }

    async fn run_suite(
        &self,
        suite: &Suite,
        carried: Option<Carried>,
        added: Option<&AddedLines>,
        added_unknown: Option<&str>,
    ) -> SuiteResult {
        let name = suite.kind.key().to_string();
        let issue_type = suite_issue_type(suite.kind);
        let gate = |status, summary: String, excerpt: String| {
            Gate::new(&name, issue_type, suite.required, status, summary, excerpt)
        };
        if suite.commands.is_empty() {
            if suite.junit.is_empty() && suite.coverage.is_empty() {
                let summary = format!(
                    "required at risk level but no `{}.commands` (nor `junit`/`coverage` reports) are configured",
                    suite.kind.key()
                );
                return SuiteResult {
                    gates: vec![gate(GateStatus::Failed, summary, String::new())],
                    runs: Vec::new(),
                    tests: None,
                };
            }
            return self.read_suite(suite, added, added_unknown);
        }
        let (main, runs, tests, coverage) = match carried {
            // Run whole a moment ago by failing first, on this same tree.
            Some(c) => (c.gate, c.runs, c.tests, c.coverage),
            None => {
                let (main, runs, tests, started) = self.run_commands(suite, &suite.commands).await;
                let coverage = coverage_gate(&self.root, suite, added, Some(started));
                (main, runs, tests, coverage)
            }
        };
        let mut gates = vec![main];
        gates.extend(coverage.map(|mut g| {
            if let (None, Some(why)) = (added, added_unknown) {
                g.summary
                    .push_str(&format!("; coverage of the added lines unknown: {why}"));
            }
            g
        }));
        SuiteResult { gates, runs, tests }
    }

    /// Runs `commands` of `suite` (its own, or narrowed to some tests), re-running what failed
    /// (flaky tests); the suite's gate from their outcomes and JUnit results.
    async fn run_commands(
        &self,
        suite: &Suite,
        commands: &[String],
    ) -> (
        Gate,
        Vec<CommandRun>,
        Option<SuiteTests>,
        std::time::SystemTime,
    ) {
        let gate = |status, summary: String, excerpt: String| {
            let issue_type = suite_issue_type(suite.kind);
            Gate::new(
                suite.kind.key(),
                issue_type,
                suite.required,
                status,
                summary,
                excerpt,
            )
        };
        let first = self.execute(suite, commands, 0).await;
        let Execution {
            runs,
            failure,
            tests,
            started,
        } = self.rerun_failing(suite, first).await;
        let mut main = match &failure {
            None => gate(
                GateStatus::Passed,
                format!("{} command(s) passed", runs.len()),
                String::new(),
            ),
            Some((_, summary, excerpt)) => {
                gate(GateStatus::Failed, summary.clone(), excerpt.clone())
            }
        };
        if let Some(t) = &tests {
            apply_test_results(&mut main, t, &self.root, failure.is_none());
        }
        fail_if_no_tests(&mut main, suite, tests.as_ref(), &runs);
        fail_if_flaky(&mut main, self.strategy.flaky, tests.as_ref());
        (main, runs, tests, started)
    }

    /// Failing first, after a fix (`first`): runs only what failed in `previous` (`of`: the
    /// test cases of the last full pass). The pass when it still fails; `None` when what it ran
    /// passed, or when failing first does not apply — the caller then runs [`Self::verify`].
    pub async fn verify_failing_first(
        &mut self,
        previous: &VerificationReport,
        of: u64,
    ) -> Option<VerificationReport> {
        let selected = first::plan(&self.strategy, previous)?;
        if self.diff_base.is_some()
            && let Err(e) = self.read_change().await
        {
            tracing::debug!("the change is not read: {e}");
        }
        self.passes += 1;
        self.log_tag = "first-";
        let mut report = VerificationReport::default();
        let mut still_fails = false;
        let (mut whole, mut narrowed_runs) = (Vec::new(), Vec::new());
        for sel in &selected {
            tracing::info!(
                suite = %sel.suite.kind.key(),
                how = if sel.narrowed { "the failing tests" } else { "the whole suite" },
                "failing first: running what failed before the fix"
            );
            let (gate, runs, tests, started) = self.run_commands(sel.suite, &sel.commands).await;
            still_fails |= first::still_fails(sel, gate.status, tests.as_ref());
            if sel.narrowed {
                narrowed_runs.extend(runs.iter().cloned());
            } else {
                // Its coverage now, before another suite runs (the change was read above).
                let added = match sel.suite.coverage.is_empty() {
                    true => None,
                    false => self.read_change().await.ok(),
                };
                let added = added.map(|c| crate::vcs::added_lines_of(&self.root, &c));
                whole.push(Carried {
                    kind: sel.suite.kind,
                    gate: gate.clone(),
                    runs: runs.clone(),
                    tests: tests.clone(),
                    coverage: coverage_gate(&self.root, sel.suite, added.as_ref(), Some(started)),
                });
            }
            report.gates.push(gate);
            report.commands.extend(runs);
            report.tests.extend(tests);
        }
        self.log_tag = "";
        if !still_fails {
            tracing::info!(
                "failing first: what failed now passes; the full verification runs (suites just run whole are not run again)"
            );
            // The full verification is the rest of this pass.
            self.continuing = true;
            self.carried = whole;
            self.first_runs = narrowed_runs;
            return None;
        }
        report.failing_first = Some(crate::model::FailingFirst {
            ran: report.test_count(),
            of,
        });
        Some(report)
    }
}

/// What running some of a suite's commands produced.
struct Execution {
    runs: Vec<CommandRun>,
    /// The first failed command: its index in the commands run, summary and excerpt.
    failure: Option<(usize, String, String)>,
    tests: Option<SuiteTests>,
    started: std::time::SystemTime,
}

impl Verifier {
    /// Runs `commands` of `suite` in order (logs numbered from `first_log`), then reads the
    /// suite's JUnit reports they wrote.
    async fn execute(&self, suite: &Suite, commands: &[String], first_log: usize) -> Execution {
        self.execute_in(&self.root, suite, commands, Some(first_log))
            .await
    }

    /// [`Self::execute`] in another checkout of the project (`root`), logs numbered from
    /// `first_log` (none: not logged).
    async fn execute_in(
        &self,
        root: &Path,
        suite: &Suite,
        commands: &[String],
        first_log: Option<usize>,
    ) -> Execution {
        let name = suite.kind.key();
        let mut runs = Vec::new();
        let mut failure = None;
        let started = std::time::SystemTime::now();
        let cwd = match &suite.working_directory {
            Some(dir) => root.join(dir),
            None => root.to_path_buf(),
        };
        if let Some(dir) = suite.working_directory.as_deref().filter(|_| !cwd.is_dir()) {
            let error =
                format!("`{name}.working_directory: {dir}` is not a directory of the checkout");
            let (run, why) = not_started(name, commands, error);
            return Execution {
                runs: vec![run],
                failure: Some((0, why.clone(), why)),
                tests: None,
                started,
            };
        }
        for (i, command) in commands.iter().enumerate() {
            tracing::info!(suite = %name, %command, "running");
            let done = self
                .launcher
                .run(Job {
                    command,
                    cwd: &cwd,
                    timeout: suite.timeout,
                    head: process::EXCERPT_HEAD,
                    tail: process::EXCERPT_TAIL,
                    log: first_log.and_then(|n| self.log_path(suite.kind, n + i)),
                })
                .await;
            tracing::info!(suite = %name, %command, outcome = %done.outcome.describe(), "finished");
            let run = CommandRun {
                suite: name.to_string(),
                command: command.clone(),
                outcome: done.outcome,
                duration_ms: done.duration.as_millis() as u64,
                excerpt: done.output,
                failure_lines: done.failure_lines,
                output_bytes: done.bytes,
                log: done.log.map(|p| display_path(root, &p)),
            };
            if failure.is_none() && !run.outcome.passed() {
                failure = Some((
                    i,
                    format!("`{command}` {}", run.outcome.describe()),
                    failure_excerpt(&run),
                ));
            }
            let cancelled = matches!(run.outcome, crate::model::CommandOutcome::Cancelled { .. });
            runs.push(run);
            if cancelled {
                break;
            }
        }
        // Reports are read after the suite's commands wrote them.
        let tests = junit_results(root, suite, Some(started));
        Execution {
            runs,
            failure,
            tests,
            started,
        }
    }

    /// The first path component of every suite's `junit` and `coverage` globs: where the
    /// suites write their reports (`reports`, `coverage.xml`).
    pub fn report_roots(&self) -> Vec<String> {
        self.strategy
            .suites
            .iter()
            .flat_map(|s| s.junit.iter().chain(&s.coverage))
            .filter_map(|g| {
                let g = g.trim_start_matches("./");
                g.split('/').next().map(str::to_string)
            })
            .collect()
    }

    /// Runs `tests` of the suite named `suite` in `root` — another checkout, such as the code
    /// before a fix with the fix's tests over it — with the runner's own selection when the
    /// suite's last command has one, else the whole suite; their results there. Not logged.
    pub async fn run_tests_in(
        &self,
        root: &Path,
        suite: &str,
        tests: &[&crate::model::TestCase],
    ) -> Option<SuiteTests> {
        let suite = self
            .strategy
            .suites
            .iter()
            .find(|s| s.kind.key() == suite && !s.commands.is_empty())?;
        let last = suite.commands.len() - 1;
        tracing::info!(suite = %suite.kind.key(), tests = tests.len(), "running the tests the fix changed on the code before the fix");
        if let Some(narrowed) = select::narrowed(&suite.commands[last], tests) {
            let found = self.execute_in(root, suite, &[narrowed], None).await.tests;
            // A selection that did not run every asked test (a name the filter does not match)
            // proves nothing about the missing ones: the whole suite then.
            if found.as_ref().is_some_and(|f| ran_all(f, tests)) {
                return found;
            }
            tracing::info!(suite = %suite.kind.key(), "the selection did not run every test; running the whole suite");
        }
        self.execute_in(root, suite, &suite.commands, None)
            .await
            .tests
    }

    /// Re-runs the tests that failed (`flaky_reruns` times at most; SPEC §3.1), with the
    /// runner's own selection when the suite's last command has one, else the whole suite. A
    /// test that passes on its re-run is flaky: passed, marked, never a defect for the fixer.
    /// The suite's coverage and JUnit reports are left as the first run wrote them (a narrowed
    /// re-run would shrink them to its few tests, and a later workflow step publishing the
    /// project's own report would show those): the re-run's results are read, then the files
    /// restored.
    async fn rerun_failing(&self, suite: &Suite, mut ex: Execution) -> Execution {
        for _ in 0..self.strategy.flaky_reruns {
            let Some(tests) = &ex.tests else { break };
            let failing: Vec<&crate::model::TestCase> =
                tests.cases.iter().filter(|c| c.is_failure()).collect();
            if failing.is_empty() || ex.runs.iter().any(is_cancelled) {
                break;
            }
            let last = suite.commands.len() - 1;
            let narrowed = select::narrowed(&suite.commands[last], &failing);
            tracing::info!(
                suite = %suite.kind.key(),
                failing = failing.len(),
                how = if narrowed.is_some() { "the failing tests" } else { "the whole suite" },
                "re-running what failed before it counts as a defect"
            );
            let commands = narrowed
                .clone()
                .map_or_else(|| suite.commands.clone(), |c| vec![c]);
            // A narrowed re-run would leave coverage and results of those tests alone; a whole
            // one measures and reports everything again.
            let kept = narrowed.is_some().then(|| {
                let reports: Vec<String> =
                    suite.coverage.iter().chain(&suite.junit).cloned().collect();
                KeptReports::of(&self.root, &reports)
            });
            let again = self.execute(suite, &commands, ex.runs.len()).await;
            if let Some(kept) = kept {
                kept.restore();
            }
            ex = merge_rerun(ex, again, narrowed.map(|_| last));
        }
        ex
    }
}

/// The run of a suite whose commands could not start (`error`), and its failure summary.
fn not_started(suite: &str, commands: &[String], error: String) -> (CommandRun, String) {
    let outcome = crate::model::CommandOutcome::CouldNotStart { error };
    let command = commands.first().cloned().unwrap_or_default();
    let why = format!("`{command}` {}", outcome.describe());
    let run = CommandRun {
        suite: suite.to_string(),
        command,
        outcome,
        duration_ms: 0,
        excerpt: String::new(),
        failure_lines: Vec::new(),
        output_bytes: 0,
        log: None,
    };
    (run, why)
}

/// Whether every one of `asked` ran (passed or failed, not skipped or absent) in `found`.
fn ran_all(found: &SuiteTests, asked: &[&crate::model::TestCase]) -> bool {
    asked.iter().all(|t| {
        found.cases.iter().any(|c| {
            c.classname == t.classname
                && c.name == t.name
                && c.status != crate::model::CaseStatus::Skipped
        })
    })
}

fn is_cancelled(run: &CommandRun) -> bool {
    matches!(run.outcome, crate::model::CommandOutcome::Cancelled { .. })
}

/// A suite's first run and its re-run as one result. A narrowed re-run (of the command at
/// `narrowed`) updates the tests it re-ran; a whole re-run is the suite's result. Either way a
/// test that failed first and passed on the re-run is flaky.
fn merge_rerun(first: Execution, again: Execution, narrowed: Option<usize>) -> Execution {
    let mut runs = first.runs;
    runs.extend(again.runs);
    let (Some(before), Some(after)) = (first.tests, again.tests) else {
        // No report from the re-run: the first run stands.
        return Execution {
            runs,
            failure: first.failure,
            tests: None,
            started: first.started,
        };
    };
    let key = |c: &crate::model::TestCase| (c.classname.clone(), c.name.clone());
    let failed_before: std::collections::HashSet<_> = before
        .cases
        .iter()
        .filter(|c| c.is_failure())
        .map(key)
        .collect();
    let (mut tests, failure) = match narrowed {
        None => (after, again.failure),
        Some(command) => {
            let rerun: std::collections::HashMap<_, _> =
                after.cases.into_iter().map(|c| (key(&c), c)).collect();
            let mut tests = before;
            // Only a test the re-run ran counts: one its filter skipped or missed still failed.
            for case in tests.cases.iter_mut().filter(|c| c.is_failure()) {
                if let Some(new) = rerun
                    .get(&key(case))
                    .filter(|n| n.status != crate::model::CaseStatus::Skipped)
                {
                    *case = new.clone();
                }
            }
            // The re-run command's failure was these tests': gone when they all passed.
            let cleared = again.failure.is_none()
                && first.failure.as_ref().is_some_and(|(i, ..)| *i == command)
                && !tests.cases.iter().any(|c| c.is_failure());
            (tests, if cleared { None } else { first.failure })
        }
    };
    for case in &mut tests.cases {
        if failed_before.contains(&key(case)) && case.status == crate::model::CaseStatus::Passed {
            case.flaky = true;
        }
    }
    tests.counts = TestCounts::of(&tests.cases);
    Execution {
        runs,
        failure,
        tests: Some(tests),
        started: first.started,
    }
}

/// Reports kept across a re-run and written back after it, text and modification time (a
/// stale report stays stale).
struct KeptReports(Vec<(PathBuf, Vec<u8>, std::time::SystemTime)>);

impl KeptReports {
    fn of(root: &Path, globs: &[String]) -> Self {
        let (paths, _) = expand_globs(root, globs);
        KeptReports(
            paths
                .into_iter()
                .filter_map(|p| {
                    // Never through a link: a report linked to a file outside the checkout is
                    // not copied into it.
                    let modified = std::fs::symlink_metadata(&p)
                        .and_then(|m| m.modified())
                        .ok()?;
                    let text = crate::nofollow::read_to_string(root, &p).ok()?;
                    Some((p, text.into_bytes(), modified))
                })
                .collect(),
        )
    }

    fn restore(self) {
        for (path, bytes, modified) in self.0 {
            let restored = crate::nofollow::write_atomic(&path, &bytes).and_then(|()| {
                std::fs::File::options()
                    .write(true)
                    .open(&path)?
                    .set_modified(modified)
            });
            if let Err(e) = restored {
                tracing::warn!("cannot restore {} after the re-run: {e}", path.display());
            }
        }
    }
}

impl Verifier {
    /// One of the plan's subtask commands (`verification: {"type": "command"}`): an advisory
    /// gate `check:<subtask>`; its expected output is shown, not matched.
    async fn run_check(&self, check: &crate::config::strategy::Check) -> (Gate, CommandRun) {
        let name = format!("check:{}", check.name);
        let file: String = check
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let log = self.log_dir.as_ref().map(|d| {
            d.join(format!("pass-{}", self.passes))
                .join(format!("check-{file}.log"))
        });
        tracing::info!(check = %name, command = %check.command, "running");
        let done = self
            .launcher
            .run(Job {
                command: &check.command,
                cwd: &self.root,
                timeout: self.strategy.check_timeout,
                head: process::EXCERPT_HEAD,
                tail: process::EXCERPT_TAIL,
                log,
            })
            .await;
        let run = CommandRun {
            suite: name.clone(),
            command: check.command.clone(),
            outcome: done.outcome,
            duration_ms: done.duration.as_millis() as u64,
            excerpt: done.output,
            failure_lines: done.failure_lines,
            output_bytes: done.bytes,
            log: done.log.map(|p| display_path(&self.root, &p)),
        };
        let what = if check.description.is_empty() {
            format!("`{}`", check.command)
        } else {
            format!("{}: `{}`", check.description, check.command)
        };
        let expected = check
            .expected
            .as_deref()
            .map(|e| format!(" (the plan expects: {e})"))
            .unwrap_or_default();
        let (status, summary, excerpt) = if run.outcome.passed() {
            (
                GateStatus::Passed,
                format!("{what} passed{expected}"),
                // The reviewer compares the output with what the plan expects.
                run.excerpt.clone(),
            )
        } else {
            (
                GateStatus::Failed,
                format!("{what} {}{expected}", run.outcome.describe()),
                failure_excerpt(&run),
            )
        };
        let gate = Gate::new(&name, IssueType::UnitTest, false, status, summary, excerpt);
        (gate, run)
    }

    /// A suite of results produced elsewhere (`junit`/`coverage` and no commands: e.g. the
    /// downloaded artifacts of a CI matrix): read, not run. After this run's fixes they are
    /// out of date — the change they tested is not the one now — so the gates wait (pending)
    /// for the jobs that produce them to run on the new commit.
    fn read_suite(
        &self,
        suite: &Suite,
        added: Option<&AddedLines>,
        added_unknown: Option<&str>,
    ) -> SuiteResult {
        let name = suite.kind.key().to_string();
        // They were written before this run (downloaded): no staleness check.
        let tests = junit_results(&self.root, suite, None);
        let mut main = Gate::new(
            &name,
            suite_issue_type(suite.kind),
            suite.required,
            GateStatus::Passed,
            "results read from reports produced elsewhere (no commands run here)".to_string(),
            String::new(),
        );
        if let Some(t) = &tests {
            apply_test_results(&mut main, t, &self.root, true);
        }
        fail_if_no_tests(&mut main, suite, tests.as_ref(), &[]);
        fail_if_flaky(&mut main, self.strategy.flaky, tests.as_ref());
        let mut gates = vec![main];
        gates.extend(coverage_gate(&self.root, suite, added, None).map(|mut g| {
            if let (None, Some(why)) = (added, added_unknown) {
                g.summary
                    .push_str(&format!("; coverage of the added lines unknown: {why}"));
            }
            g
        }));
        if self.passes > 1 {
            for g in &mut gates {
                g.status = GateStatus::Pending;
                g.summary = format!(
                    "out of date: the reports predate this run's fixes (re-run the jobs that produce them on the new commit); before: {}",
                    g.summary
                );
                g.findings.clear();
            }
        }
        SuiteResult {
            gates,
            runs: Vec::new(),
            tests,
        }
    }
}

/// Failing test cases turned into findings per gate; the rest are counted in the gate summary.
const MAX_TEST_FINDINGS: usize = 20;
/// Bytes of a failing test's text kept in its finding.
const TEST_DETAIL_MAX: usize = 1500;
/// A report older than its suite's start (minus this slack for coarse file-system clocks) was
/// left by an earlier run and is ignored.
const STALE_SLACK: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads the suite's `junit` reports written since `started`. `None` when the suite lists none.
fn junit_results(
    root: &Path,
    suite: &Suite,
    started: Option<std::time::SystemTime>,
) -> Option<SuiteTests> {
    if suite.junit.is_empty() {
        return None;
    }
    let mut out = SuiteTests {
        suite: suite.kind.key().to_string(),
        reports: Vec::new(),
        counts: TestCounts::default(),
        cases: Vec::new(),
        problems: Vec::new(),
    };
    let (paths, mut problems) = expand_globs(root, &suite.junit);
    out.problems.append(&mut problems);
    let mut resolver = paths::Resolver::new(root, suite_workdir(suite));
    let fresh_after = started.map(|s| s.checked_sub(STALE_SLACK).unwrap_or(s));
    for path in paths {
        let shown = display_path(root, &path);
        let modified = std::fs::metadata(&path).and_then(|m| m.modified());
        if let Some(fresh_after) = fresh_after
            && modified.is_ok_and(|m| m < fresh_after)
        {
            out.problems
                .push(format!("{shown} is older than this run and was ignored"));
            continue;
        }
        match crate::nofollow::read_to_string(root, &path)
            .map_err(|e| e.to_string())
            .and_then(|t| junit::parse(&t))
        {
            Ok(mut cases) => {
                locate_cases(&mut cases, &mut resolver);
                out.reports.push(shown);
                out.cases.append(&mut cases);
            }
            Err(e) => out.problems.push(format!("{shown}: {e}")),
        }
    }
    if out.reports.is_empty() && out.problems.is_empty() {
        out.problems.push(format!(
            "no JUnit report matched {}",
            suite.junit.join(", ")
        ));
    }
    out.counts = TestCounts::of(&out.cases);
    Some(out)
}

/// The directory a suite's tools report paths from, relative to the root: its
/// `working_directory` and the leading `cd` of its last command (`cd py && pytest`).
fn suite_workdir(suite: &Suite) -> Option<String> {
    let cd = suite.commands.last().and_then(|c| paths::command_dir(c));
    match (&suite.working_directory, cd) {
        (Some(dir), Some(cd)) => Some(format!("{dir}/{cd}")),
        (dir, cd) => cd.or_else(|| dir.clone()),
    }
}

/// Every case's file made repository-relative (`paths::Resolver`); a failing case whose file is
/// not in the checkout takes the first location of its failure text that is, with its line.
fn locate_cases(cases: &mut [crate::model::TestCase], resolver: &mut paths::Resolver<'_>) {
    type Key = (std::sync::Arc<str>, std::sync::Arc<str>);
    let mut seen: std::collections::HashMap<Key, Option<std::sync::Arc<str>>> =
        std::collections::HashMap::new();
    for c in cases {
        if let Some(f) = c.file.clone() {
            let to = seen
                .entry((f.clone(), c.classname.clone()))
                .or_insert_with(|| resolver.resolve(&f, &c.classname).map(std::sync::Arc::from))
                .clone();
            if let Some(to) = to {
                c.file = Some(to);
                continue;
            }
        }
        if !c.is_failure() {
            continue;
        }
        for (path, line) in junit::locations(&c.detail) {
            if let Some(found) = resolver.resolve(&path, &c.classname) {
                c.file = Some(std::sync::Arc::from(found));
                c.line = Some(line);
                break;
            }
        }
    }
}

/// Glob patterns relative to `root` → existing files (sorted, unique), and bad patterns.
fn expand_globs(root: &Path, patterns: &[String]) -> (Vec<PathBuf>, Vec<String>) {
    let mut paths = Vec::new();
    let mut problems = Vec::new();
    for pattern in patterns {
        let full = root.join(pattern);
        match glob::glob(&full.to_string_lossy()) {
            Ok(found) => paths.extend(found.flatten().filter(|p| p.is_file())),
            Err(e) => problems.push(format!("bad glob `{pattern}`: {e}")),
        }
    }
    paths.sort();
    paths.dedup();
    (paths, problems)
}

/// A suite that passed although it executed no test fails ("ran no tests"), unless it allows
/// that (`allow_no_tests`). A suite that failed only because its runner found nothing to run —
/// pytest exits 5, jest 1, unittest 5 since Python 3.12 — reads as "ran no tests" too (and passes
/// with `allow_no_tests`); any other failure stays the failure it is.
fn fail_if_no_tests(
    gate: &mut Gate,
    suite: &Suite,
    tests: Option<&SuiteTests>,
    runs: &[CommandRun],
) {
    let whole = (process::EXCERPT_HEAD + process::EXCERPT_TAIL) as u64;
    if gate.status == GateStatus::Failed && gate.findings.is_empty() {
        let failed: Vec<CommandRun> = runs
            .iter()
            .filter(|r| !r.outcome.passed())
            .cloned()
            .collect();
        let every_one_ran_none = !failed.is_empty()
            && failed
                .iter()
                .all(|r| no_tests::runner_said_none(&r.excerpt, r.output_bytes <= whole).is_some());
        if every_one_ran_none && let Some(why) = no_tests::ran_none(tests, &failed, whole) {
            if suite.allow_no_tests {
                gate.status = GateStatus::Passed;
                gate.summary = format!("ran no tests (allowed: `allow_no_tests: true`): {why}");
            } else {
                gate.summary = format!(
                    "ran no tests: {why} (set `{}.allow_no_tests: true` if that is intended)",
                    suite.kind.key()
                );
            }
        }
        return;
    }
    if suite.allow_no_tests || gate.status != GateStatus::Passed {
        return;
    }
    if let Some(why) = no_tests::ran_none(tests, runs, whole) {
        gate.status = GateStatus::Failed;
        gate.summary = format!(
            "ran no tests: {why} (set `{}.allow_no_tests: true` if that is intended); {}",
            suite.kind.key(),
            gate.summary
        );
    }
}

/// With `flaky: fail`, a test that passed only on a re-run fails the suite's gate, each such
/// test a finding (to be made deterministic); with `flaky: report` it is counted and listed only.
fn fail_if_flaky(gate: &mut Gate, policy: FlakyPolicy, tests: Option<&SuiteTests>) {
    let Some(t) = tests.filter(|t| t.counts.flaky > 0) else {
        return;
    };
    if policy != FlakyPolicy::Fail {
        return;
    }
    if gate.status == GateStatus::Passed {
        gate.status = GateStatus::Failed;
        gate.summary = format!(
            "{} flaky test(s) passed only on a re-run (`flaky: fail`); {}",
            t.counts.flaky, gate.summary
        );
    }
    for case in t.cases.iter().filter(|c| c.flaky).take(MAX_TEST_FINDINGS) {
        gate.findings.push(Finding {
            kind: gate.issue_type,
            severity: Severity::High,
            title: format!(
                "Test `{}` is flaky: it failed, then passed on a re-run",
                case.full_name()
            ),
            file: case
                .file
                .as_deref()
                .map(str::to_string)
                .filter(|f| !Path::new(f).is_absolute()),
            line: None,
            detail: String::new(),
            fix: format!(
                "Make `{}` pass on every run (no order, time or shared-state dependence).",
                case.full_name()
            ),
        });
    }
}

/// Adds the JUnit figures to the suite gate: failing cases fail it (also when every command
/// exited 0, e.g. `pytest || true`) and become findings with file and line.
fn apply_test_results(gate: &mut Gate, tests: &SuiteTests, root: &Path, commands_passed: bool) {
    let c = tests.counts;
    let failing: Vec<_> = tests.cases.iter().filter(|c| c.is_failure()).collect();
    let mut summary = if tests.reports.is_empty() {
        gate.summary.clone()
    } else {
        format!("{}; {}", gate.summary, c.describe())
    };
    for p in &tests.problems {
        summary.push_str(&format!("; {p}"));
    }
    if !failing.is_empty() && commands_passed {
        gate.status = GateStatus::Failed;
        summary = format!(
            "the JUnit reports hold {} failing test(s) although the commands exited 0; {summary}",
            failing.len()
        );
    }
    gate.summary = summary;
    for case in failing.iter().take(MAX_TEST_FINDINGS) {
        let verb = if case.status == crate::model::CaseStatus::Errored {
            "errored"
        } else {
            "failed"
        };
        let message = useful_message(&case.message, &case.detail);
        let message = message.as_str();
        let title = if message.is_empty() {
            format!("Test `{}` {verb}", case.full_name())
        } else {
            format!("Test `{}` {verb}: {message}", case.full_name())
        };
        let detail = crate::text::head_tail(&case.detail, TEST_DETAIL_MAX);
        // Only locations inside the repository are kept as file/line (`locate_cases` resolved
        // what it could).
        let inside = case
            .file
            .as_deref()
            .filter(|f| !Path::new(f).is_absolute() && root.join(f).exists())
            .map(str::to_string);
        gate.findings.push(Finding {
            kind: gate.issue_type,
            severity: Severity::High,
            title,
            line: inside.as_ref().and(case.line),
            file: inside,
            detail,
            fix: format!("Make `{}` pass.", case.full_name()),
        });
    }
    if failing.len() > MAX_TEST_FINDINGS {
        gate.findings.push(Finding {
            kind: gate.issue_type,
            severity: Severity::High,
            title: format!(
                "{} more failing tests in `{}` (see the JUnit reports)",
                failing.len() - MAX_TEST_FINDINGS,
                gate.name
            ),
            file: None,
            line: None,
            detail: tests.reports.join(", "),
            fix: String::new(),
        });
    }
}

/// A failure message worth a title: the report's own, unless it says nothing (`Failed`, as
/// gotestsum writes), then the first line of the failure text that says something
/// (`path_test.go:185: Clean("a") = "b", want "a"`).
fn useful_message(message: &str, detail: &str) -> String {
    let first = message.lines().next().unwrap_or_default().trim();
    let generic = matches!(
        first.to_ascii_lowercase().as_str(),
        "" | "failed" | "failure" | "fail" | "error" | "errored"
    );
    if !generic {
        return crate::text::title(first);
    }
    detail
        .lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("=== ")
                && !l.starts_with("--- ")
                && !l.eq_ignore_ascii_case("fail")
                && !l.starts_with("FAIL")
        })
        .map(crate::text::title)
        .unwrap_or_else(|| crate::text::title(first))
}

/// How much of the code a change adds its tests run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddedCoverage {
    /// Added lines the reports measure (executable lines).
    pub measured: u64,
    pub covered: u64,
    /// Added lines that never ran, per file.
    pub uncovered: std::collections::BTreeMap<String, Vec<u32>>,
}

impl AddedCoverage {
    pub fn describe(&self) -> String {
        if self.measured == 0 {
            return "no line added by the change is measured by the reports".into();
        }
        format!(
            "lines added by the change: {}/{} covered ({:.1}%)",
            self.covered,
            self.measured,
            self.covered as f64 * 100.0 / self.measured as f64
        )
    }

    fn uncovered_text(&self) -> String {
        let mut out = String::from("Added lines the tests never ran:");
        for (f, ls) in self.uncovered.iter().take(20) {
            let shown: Vec<String> = ls.iter().take(30).map(u32::to_string).collect();
            out.push_str(&format!("\n  {f}: {}", shown.join(", ")));
        }
        out
    }
}

/// Matches the reports' files to the changed files (reports may use absolute paths or paths
/// relative to a source root) and counts the added lines they measure.
pub fn added_line_coverage(
    root: &Path,
    lines: &std::collections::BTreeMap<String, std::collections::BTreeMap<u64, bool>>,
    added: &AddedLines,
) -> AddedCoverage {
    let mut out = AddedCoverage::default();
    // Changed files by their last component: a report's path is matched against those only
    // (no scan of every changed file for every reported one).
    let mut by_name: std::collections::HashMap<&str, Vec<&String>> = Default::default();
    for k in added.keys() {
        by_name
            .entry(k.rsplit('/').next().unwrap_or(k))
            .or_default()
            .push(k);
    }
    let under = |longer: &str, shorter: &str| {
        longer
            .strip_suffix(shorter)
            .is_some_and(|rest| rest.ends_with('/'))
    };
    for (report_path, measured) in lines {
        let rel = Path::new(report_path)
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| report_path.clone());
        let rel = rel.trim_start_matches("./");
        let changed = added.get(rel).map(|l| (rel.to_string(), l)).or_else(|| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            by_name
                .get(name)?
                .iter()
                .find(|k| under(k, rel) || under(rel, k))
                .map(|k| ((*k).clone(), &added[*k]))
        });
        let Some((file, new_lines)) = changed else {
            continue;
        };
        for n in new_lines.numbers() {
            match measured.get(&u64::from(n)) {
                Some(true) => {
                    out.measured += 1;
                    out.covered += 1;
                }
                Some(false) => {
                    out.measured += 1;
                    out.uncovered.entry(file.clone()).or_default().push(n);
                }
                None => {}
            }
        }
    }
    out
}

fn suite_issue_type(kind: SuiteKind) -> IssueType {
    match kind {
        SuiteKind::Unit => IssueType::UnitTest,
        SuiteKind::Integration => IssueType::IntegrationTest,
        SuiteKind::E2e => IssueType::E2eTest,
    }
}

/// What the reviewer and the fixer see of a failed command: the failure lines, then the head
/// and tail of the output, and where the whole log is.
pub fn failure_excerpt(run: &CommandRun) -> String {
    let mut out = String::new();
    if !run.failure_lines.is_empty() {
        out.push_str("Failure lines:\n");
        for l in &run.failure_lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&run.excerpt);
    if let Some(log) = &run.log {
        out.push_str(&format!(
            "\n[full output: {log}, {} bytes]",
            run.output_bytes
        ));
    }
    out
}

fn display_path(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Polls every future concurrently on the current task; results in input order.
async fn join_all<'a, T>(mut futures: Vec<BoxFuture<'a, T>>) -> Vec<T> {
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futures.iter_mut().zip(results.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results
        .into_iter()
        .map(|r| r.expect("every future completed"))
        .collect()
}

/// The `coverage:<suite>` gate: required when the suite is and it sets `minimum_coverage`;
/// advisory (informational) when it only lists reports.
pub fn coverage_gate(
    root: &Path,
    suite: &Suite,
    added: Option<&AddedLines>,
    started: Option<std::time::SystemTime>,
) -> Option<Gate> {
    if suite.coverage.is_empty() && suite.minimum_coverage.is_none() {
        return None;
    }
    let name = format!("coverage:{}", suite.kind.key());
    let required = suite.required && suite.minimum_coverage.is_some();
    let gate = |status: GateStatus, summary: String, excerpt: String| {
        Gate::new(
            &name,
            IssueType::Coverage,
            required,
            status,
            summary,
            excerpt,
        )
    };
    let MeasuredCoverage {
        percent,
        summary: measured,
        excerpt,
    } = match measure_coverage(root, suite, added, started) {
        Ok(m) => m,
        Err(why) => return Some(gate(GateStatus::Failed, why, String::new())),
    };
    Some(match suite.minimum_coverage {
        Some(min) if percent + 1e-9 < min => gate(
            GateStatus::Failed,
            format!("{measured}, below the minimum {min}%"),
            excerpt,
        ),
        Some(min) => gate(
            GateStatus::Passed,
            format!("{measured}, minimum {min}%"),
            excerpt,
        ),
        None => gate(GateStatus::Passed, measured, excerpt),
    })
}

/// A suite's coverage as its reports measure it.
struct MeasuredCoverage {
    /// The overall percentage the minimum applies to.
    percent: f64,
    /// What was measured, from which reports (and of the added lines).
    summary: String,
    /// The added lines never run, and the least covered files.
    excerpt: String,
}

/// Reads and merges the suite's fresh coverage reports; why not, when none is configured,
/// found or readable, or they measure no lines.
fn measure_coverage(
    root: &Path,
    suite: &Suite,
    added: Option<&AddedLines>,
    started: Option<std::time::SystemTime>,
) -> Result<MeasuredCoverage, String> {
    if suite.coverage.is_empty() {
        return Err(format!(
            "`{}.minimum_coverage` is set but no `coverage` reports are configured",
            suite.kind.key()
        ));
    }
    let (paths, problems) = expand_globs(root, &suite.coverage);
    if let Some(p) = problems.first() {
        return Err(p.clone());
    }
    let (paths, stale_note) = fresh_reports(root, paths, started);
    if paths.is_empty() {
        return Err(match &stale_note {
            Some(note) => format!("no fresh coverage report: {note}"),
            None => format!("no coverage report matched {}", suite.coverage.join(", ")),
        });
    }
    let (reports, sources) = read_reports(root, &paths)?;
    let merged_from = reports.len();
    let merged = coverage::merge(reports, |f| {
        let rel = Path::new(f)
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| f.to_string());
        rel.trim_start_matches("./").to_string()
    });
    let Some(percent) = merged.overall.percent() else {
        return Err(format!(
            "coverage reports measure no lines: {}",
            sources.join(", ")
        ));
    };
    let mut excerpt = lowest_covered_files(&merged.files);
    let mut summary = merged_summary(&merged, percent, &sources, merged_from);
    if let Some(note) = &stale_note {
        summary.push_str(&format!("; {note}"));
    }
    if let Some(added) = added {
        let new = added_line_coverage(root, &merged.lines, added);
        summary.push_str(&format!("; {}", new.describe()));
        if !new.uncovered.is_empty() {
            excerpt = format!("{}\n\n{excerpt}", new.uncovered_text());
        }
    }
    Ok(MeasuredCoverage {
        percent,
        summary,
        excerpt,
    })
}

/// Keeps the reports written since the suite `started`; those older were left by an earlier
/// run (a collection error writes none) and are named in the note, and ignored.
fn fresh_reports(
    root: &Path,
    paths: Vec<PathBuf>,
    started: Option<std::time::SystemTime>,
) -> (Vec<PathBuf>, Option<String>) {
    let (paths, stale): (Vec<PathBuf>, Vec<PathBuf>) = match started {
        Some(started) => {
            let fresh_after = started.checked_sub(STALE_SLACK).unwrap_or(started);
            paths.into_iter().partition(|p| {
                std::fs::metadata(p)
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m >= fresh_after)
            })
        }
        None => (paths, Vec::new()),
    };
    let stale_note = (!stale.is_empty()).then(|| {
        let names: Vec<String> = stale.iter().map(|p| display_path(root, p)).collect();
        format!(
            "{} older than this run and ignored (stale): {}",
            if names.len() == 1 {
                "a report is"
            } else {
                "reports are"
            },
            names.join(", ")
        )
    });
    (paths, stale_note)
}

/// Parses every coverage report, with each one's name and format; why not, at the first that
/// cannot be read.
fn read_reports(
    root: &Path,
    paths: &[PathBuf],
) -> Result<(Vec<coverage::Coverage>, Vec<String>), String> {
    let mut reports = Vec::new();
    let mut sources = Vec::new();
    for path in paths {
        let shown = display_path(root, path);
        let parsed = crate::nofollow::read_to_string(root, path)
            .map_err(|e| e.to_string())
            .and_then(|text| coverage::parse(&text));
        match parsed {
            Ok(c) => {
                sources.push(format!("{shown} ({})", c.format.as_str()));
                reports.push(c);
            }
            Err(e) => return Err(format!("cannot read coverage report {shown}: {e}")),
        }
    }
    Ok((reports, sources))
}

/// The ten least covered files, one `percent  file` line each.
fn lowest_covered_files(files: &std::collections::BTreeMap<String, coverage::Counts>) -> String {
    let mut lowest: Vec<(&String, f64)> = files
        .iter()
        .filter_map(|(f, c)| c.percent().map(|p| (f, p)))
        .collect();
    lowest.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
    lowest
        .iter()
        .take(10)
        .map(|(f, p)| format!("{p:6.1}%  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the merged reports measure: the overall coverage, from which reports, and the branch
/// coverage when they have it.
fn merged_summary(
    merged: &coverage::Merged,
    percent: f64,
    sources: &[String],
    merged_from: usize,
) -> String {
    let mut summary = format!(
        "{} coverage {percent:.1}% ({}/{}) from {}{}",
        merged.measure.as_str(),
        merged.overall.covered,
        merged.overall.total,
        sources.join(", "),
        if merged_from > 1 {
            " (merged: a line covered in any report counts once)"
        } else {
            ""
        }
    );
    if let Some(b) = merged.branches.and_then(|b| b.percent().map(|p| (p, b))) {
        summary.push_str(&format!(
            "; branch coverage {:.1}% ({}/{}, not gated)",
            b.0, b.1.covered, b.1.total
        ));
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::strategy::SuiteKind;

    fn tests_of(cases: &[(&str, crate::model::CaseStatus)]) -> SuiteTests {
        let cases: Vec<crate::model::TestCase> = cases
            .iter()
            .map(|(name, status)| crate::model::TestCase {
                suite: std::sync::Arc::from("s"),
                classname: std::sync::Arc::from("c"),
                name: (*name).into(),
                status: *status,
                file: None,
                line: None,
                time: None,
                message: String::new(),
                detail: String::new(),
                flaky: false,
                proves_fix: None,
            })
            .collect();
        SuiteTests {
            suite: "unit_tests".into(),
            reports: vec![],
            counts: TestCounts::of(&cases),
            cases,
            problems: vec![],
        }
    }

    fn execution(tests: SuiteTests, failed: bool) -> Execution {
        Execution {
            runs: vec![],
            failure: failed.then(|| (0, "exit code 1".into(), String::new())),
            tests: Some(tests),
            started: std::time::SystemTime::now(),
        }
    }

    /// A narrowed re-run whose filter skipped the failing test (or did not report it) leaves it
    /// failed: only a test that ran and passed is flaky.
    #[test]
    fn a_rerun_that_skipped_the_failing_test_leaves_it_failed() {
        use crate::model::CaseStatus::{Failed, Passed, Skipped};
        let first = || execution(tests_of(&[("adds", Failed), ("subs", Passed)]), true);
        for again in [
            tests_of(&[("adds", Skipped), ("subs", Skipped)]),
            tests_of(&[("subs", Passed)]),
        ] {
            let merged = merge_rerun(first(), execution(again, false), Some(0));
            let tests = merged.tests.unwrap();
            assert_eq!(tests.counts.failed, 1, "{:?}", tests.cases);
            assert_eq!(tests.counts.flaky, 0);
            assert!(merged.failure.is_some(), "the suite still failed");
        }
        let merged = merge_rerun(
            first(),
            execution(tests_of(&[("adds", Passed), ("subs", Skipped)]), false),
            Some(0),
        );
        let tests = merged.tests.unwrap();
        assert_eq!((tests.counts.failed, tests.counts.flaky), (0, 1));
        assert!(merged.failure.is_none());
    }

    /// The old-code run's narrowed selection counts only when it ran every asked test.
    #[test]
    fn a_selection_ran_all_only_when_every_asked_test_ran() {
        use crate::model::CaseStatus::{Failed, Passed, Skipped};
        let asked = tests_of(&[("adds", Failed)]);
        let asked: Vec<&crate::model::TestCase> = asked.cases.iter().collect();
        assert!(ran_all(&tests_of(&[("adds", Passed)]), &asked));
        assert!(ran_all(&tests_of(&[("adds", Failed)]), &asked));
        assert!(!ran_all(&tests_of(&[("adds", Skipped)]), &asked));
        assert!(!ran_all(&tests_of(&[("subs", Passed)]), &asked));
    }

    fn suite(coverage: &[&str], min: Option<f64>) -> Suite {
        Suite {
            coverage: coverage.iter().map(|s| s.to_string()).collect(),
            minimum_coverage: min,
            ..fixtures::suite()
        }
    }

    use fixtures::strategy;

    fn timed(kind: SuiteKind, name: &str) -> Suite {
        // Records its start and end (ns since the epoch), sleeping 1 s in between.
        let cmd = format!("date +%s%N > {name}.start; sleep 1; date +%s%N > {name}.end");
        Suite {
            kind,
            commands: vec![cmd],
            ..suite(&[], None)
        }
    }

    fn stamp(dir: &Path, file: &str) -> u128 {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn independent_suites_run_concurrently_with_parallel_true() {
        let dir = tempfile::tempdir().unwrap();
        let launcher = Launcher::new(&Default::default(), Default::default());
        for parallel in [true, false] {
            let suites = vec![
                timed(SuiteKind::Unit, "unit"),
                timed(SuiteKind::Integration, "integ"),
            ];
            let mut v = Verifier::new(
                strategy(parallel, suites),
                dir.path().to_path_buf(),
                launcher.clone(),
            );
            let started = std::time::Instant::now();
            let report = crate::test_support::rt().block_on(v.verify());
            let took = started.elapsed();
            let names: Vec<_> = report.gates.iter().map(|g| g.name.as_str()).collect();
            assert_eq!(
                names,
                ["unit_tests", "integration_tests"],
                "input order kept"
            );
            assert!(report.gates.iter().all(|g| g.status == GateStatus::Passed));
            let d = dir.path();
            let overlap = stamp(d, "unit.start") < stamp(d, "integ.end")
                && stamp(d, "integ.start") < stamp(d, "unit.end");
            assert_eq!(overlap, parallel, "parallel={parallel}, took {took:?}");
            if parallel {
                // Run one after the other, two 1 s suites cannot take less than 2 s.
                assert!(
                    took < std::time::Duration::from_millis(1900),
                    "took {took:?}"
                );
            }
        }
    }

    #[test]
    fn a_failed_command_gives_its_failure_lines_excerpt_and_log_to_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let launcher = Launcher::new(&Default::default(), Default::default());
        let failing = Suite {
            commands: vec![
                "echo 'collected 2 items'; echo 'FAILED test_cart.py::test_total - assert 3 == 4'; exit 1"
                    .into(),
                "echo second".into(),
            ],
            ..suite(&[], None)
        };
        let out = dir.path().join(".qa-loop/logs");
        let mut v = Verifier::new(
            strategy(false, vec![failing]),
            dir.path().to_path_buf(),
            launcher,
        )
        .with_logs(out.clone());
        let report = crate::test_support::rt().block_on(v.verify());
        let gate = &report.gates[0];
        assert_eq!(gate.status, GateStatus::Failed);
        assert!(gate.summary.contains("exit code 1"), "{}", gate.summary);
        assert!(
            gate.excerpt
                .starts_with("Failure lines:\nFAILED test_cart.py::test_total - assert 3 == 4\n"),
            "{}",
            gate.excerpt
        );
        assert!(
            gate.excerpt
                .contains("[full output: .qa-loop/logs/pass-1/unit_tests-1.log")
        );
        assert_eq!(
            std::fs::read_to_string(out.join("pass-1/unit_tests-2.log")).unwrap(),
            "second\n"
        );
        assert_eq!(report.commands.len(), 2, "later commands still run");
        // A second pass writes new logs beside the first.
        crate::test_support::rt().block_on(v.verify());
        assert!(out.join("pass-2/unit_tests-1.log").exists());
        assert!(out.join("pass-1/unit_tests-1.log").exists());
    }

    #[test]
    fn junit_failures_fail_the_gate_even_when_commands_exit_0_and_become_located_findings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_calc.py"), "# the tests\n").unwrap();
        std::fs::copy(
            "tests/fixtures/junit/pytest-9.2.0-xunit1.xml",
            dir.path().join("pytest.xml"),
        )
        .unwrap();
        let s = Suite {
            // `|| true` hides pytest's exit code; the report still tells.
            commands: vec!["touch pytest.xml || true".into()],
            junit: vec!["*.xml".into(), "missing/*.xml".into()],
            ..suite(&[], None)
        };
        let mut v = Verifier::new(
            strategy(false, vec![s]),
            dir.path().to_path_buf(),
            Launcher::new(&Default::default(), Default::default()),
        );
        let report = crate::test_support::rt().block_on(v.verify());
        let gate = &report.gates[0];
        assert_eq!(gate.status, GateStatus::Failed);
        assert!(
            gate.summary
                .contains("4 failing test(s) although the commands exited 0")
                && gate
                    .summary
                    .contains("8 tests: 3 passed, 3 failed, 1 errored, 1 skipped"),
            "{}",
            gate.summary
        );
        let located: Vec<_> = gate
            .findings
            .iter()
            .map(|f| (f.file.as_deref(), f.line, f.kind))
            .collect();
        assert_eq!(
            located,
            [
                (Some("tests/test_calc.py"), Some(25), IssueType::UnitTest),
                (Some("tests/test_calc.py"), Some(29), IssueType::UnitTest),
                (Some("tests/test_calc.py"), Some(33), IssueType::UnitTest),
                (Some("tests/test_calc.py"), Some(8), IssueType::UnitTest),
            ]
        );
        assert!(
            gate.findings[3]
                .title
                .starts_with("Test `tests.test_calc::test_fixture_error` errored")
        );
        let t = &report.tests[0];
        assert_eq!(
            (t.reports.as_slice(), t.cases.len()),
            (&["pytest.xml".to_string()][..], 8)
        );

        // A report left by an earlier run is not taken as this run's result.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join("pytest.xml"))
            .unwrap();
        f.set_modified(old).unwrap();
        let s = Suite {
            commands: vec!["true".into()],
            junit: vec!["pytest.xml".into()],
            ..suite(&[], None)
        };
        v.strategy = strategy(false, vec![s]);
        let report = crate::test_support::rt().block_on(v.verify());
        let gate = &report.gates[0];
        // Without this run's report the suite shows no test ran: it fails, saying why.
        assert_eq!(gate.status, GateStatus::Failed, "{}", gate.summary);
        assert!(
            gate.summary
                .starts_with("ran no tests: no JUnit report was read"),
            "{}",
            gate.summary
        );
        assert!(
            gate.summary
                .contains("pytest.xml is older than this run and was ignored"),
            "{}",
            gate.summary
        );
        assert!(report.tests[0].cases.is_empty());
    }

    /// A directory holding the real coverage.py reports (Cobertura and lcov).
    fn coveragepy_reports() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in ["coveragepy-7.17.3.cobertura.xml", "coveragepy-7.17.3.lcov"] {
            std::fs::copy(
                format!("tests/fixtures/coverage/{name}"),
                dir.path().join(name),
            )
            .unwrap();
        }
        dir
    }

    #[test]
    fn coverage_of_the_added_lines_from_real_coveragepy_reports() {
        let dir = coveragepy_reports();
        // shop/cart.py: lines 2 and 13 ran, 3 and 12 did not, 6 is not executable.
        let mut added = AddedLines::new();
        added.insert(
            "shop/cart.py".into(),
            [2, 3, 6, 12, 13]
                .map(|n| (n, String::new()))
                .to_vec()
                .into(),
        );
        added.insert("README.md".into(), vec![(1, String::new())].into());
        for pattern in ["*.cobertura.xml", "*.lcov"] {
            let g =
                coverage_gate(dir.path(), &suite(&[pattern], None), Some(&added), None).unwrap();
            assert!(
                g.summary
                    .ends_with("; lines added by the change: 2/4 covered (50.0%)"),
                "{pattern}: {}",
                g.summary
            );
            assert!(
                g.excerpt
                    .starts_with("Added lines the tests never ran:\n  shop/cart.py: 3, 12\n"),
                "{pattern}: {}",
                g.excerpt
            );
        }
        let mut other = AddedLines::new();
        other.insert("docs/x.md".into(), vec![(1, String::new())].into());
        let g = coverage_gate(dir.path(), &suite(&["*.lcov"], None), Some(&other), None).unwrap();
        assert!(
            g.summary
                .ends_with("no line added by the change is measured by the reports")
        );
    }

    #[test]
    fn coverage_gate_enforces_the_minimum_on_real_coveragepy_reports() {
        let dir = coveragepy_reports();
        // coverage.py's own total for this project: 15/19 = 78.947%.
        for pattern in ["*.cobertura.xml", "*.lcov"] {
            let g = coverage_gate(dir.path(), &suite(&[pattern], Some(80.0)), None, None).unwrap();
            assert_eq!(
                (g.status, g.required),
                (GateStatus::Failed, true),
                "{pattern}: {}",
                g.summary
            );
            assert!(
                g.summary.contains("78.9% (15/19)"),
                "{pattern}: {}",
                g.summary
            );
            assert!(
                g.excerpt.contains("73.3%  shop/cart.py"),
                "{pattern}: {}",
                g.excerpt
            );
            let g = coverage_gate(dir.path(), &suite(&[pattern], Some(78.9)), None, None).unwrap();
            assert_eq!(g.status, GateStatus::Passed, "{}", g.summary);
        }
        let g = coverage_gate(dir.path(), &suite(&["*.lcov"], None), None, None).unwrap();
        assert_eq!((g.status, g.required), (GateStatus::Passed, false));
        let g = coverage_gate(
            dir.path(),
            &suite(&["nothing/*.xml"], Some(50.0)),
            None,
            None,
        )
        .unwrap();
        assert_eq!(g.status, GateStatus::Failed);
        assert!(g.summary.contains("no coverage report matched"));
        let g = coverage_gate(dir.path(), &suite(&[], Some(50.0)), None, None).unwrap();
        assert!(g.summary.contains("no `coverage` reports are configured"));
        std::fs::write(dir.path().join("bad.lcov"), "SF:a\nDA:x\nend_of_record\n").unwrap();
        let g = coverage_gate(dir.path(), &suite(&["bad.lcov"], Some(50.0)), None, None).unwrap();
        assert!(g.summary.contains("bad.lcov: line 2"), "{}", g.summary);
        assert!(coverage_gate(dir.path(), &suite(&[], None), None, None).is_none());
    }

    /// Issue 18: a coverage report left by an earlier run passed the gate.
    #[test]
    fn a_coverage_report_older_than_the_suite_is_stale_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("old.lcov"),
            "SF:a.py\nDA:1,1\nend_of_record\n",
        )
        .unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let g = coverage_gate(
            dir.path(),
            &suite(&["*.lcov"], Some(50.0)),
            None,
            Some(later),
        )
        .unwrap();
        assert_eq!(g.status, GateStatus::Failed);
        assert!(
            g.summary.contains("stale") && g.summary.contains("old.lcov"),
            "{}",
            g.summary
        );
        let g = coverage_gate(dir.path(), &suite(&["*.lcov"], Some(50.0)), None, None).unwrap();
        assert_eq!(g.status, GateStatus::Passed, "{}", g.summary);
    }

    /// Issue 18: Go and Java name a failing test's file without its directory, and gotestsum's
    /// message is "Failed".
    #[test]
    fn bare_file_names_resolve_to_the_repository_path_and_titles_say_something() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "path/path_test.go",
            "src/test/java/org/apache/cli/CommandLineTest.java",
            "other/org/x/CommandLineTest.java",
        ] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "").unwrap();
        }
        let index = paths::FileIndex::of(root);
        assert_eq!(
            index.find("path_test.go", "path").as_deref(),
            Some("path/path_test.go")
        );
        assert_eq!(
            index
                .find("CommandLineTest.java", "org.apache.cli.CommandLineTest")
                .as_deref(),
            Some("src/test/java/org/apache/cli/CommandLineTest.java")
        );
        assert_eq!(
            index.find("CommandLineTest.java", "CommandLineTest"),
            None,
            "ambiguous"
        );
        assert_eq!(index.find("nope.go", ""), None);
        let detail = "=== RUN   TestClean\n    path_test.go:185: Clean(\"a/\") = \"a/\", want \"a\"\n--- FAIL: TestClean (0.00s)\n";
        assert_eq!(
            useful_message("Failed", detail),
            "path_test.go:185: Clean(\"a/\") = \"a/\", want \"a\""
        );
        assert_eq!(
            useful_message("expected 2, got 3", detail),
            "expected 2, got 3"
        );
    }
}
