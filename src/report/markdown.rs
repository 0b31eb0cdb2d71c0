//! `qa_report.md` (also the PR comment and job summary), `QA_HUMAN_ESCALATION.md` and
//! `MANUAL_TEST_PLAN.md`.

use super::RunReport;
use crate::engine::state::{Escalation, Outcome};
use crate::model::{
    CriterionResult, Gate, GateStatus, Issue, ScenarioOutcome, ScenarioResult, SuiteTests,
};

use super::untrusted::{block, code, line as cell};

fn issues_table(out: &mut String, issues: &[Issue]) {
    out.push_str("| id | severity | type | title | location |\n|---|---|---|---|---|\n");
    for i in issues {
        out.push_str(&format!(
            "| {} | {} | `{}` | {} | {} |\n",
            cell(&i.id),
            i.severity.as_str(),
            i.kind,
            cell(&i.title),
            i.location()
                .map(|l| code(&l).replace('|', "\\|"))
                .unwrap_or_default()
        ));
    }
}

/// Each page of browser verification: its checks, console errors and screenshot (a file of the
/// out dir — in the report artifact on GitHub, never inlined).
fn browser_section(out: &mut String, pages: &[crate::model::PageResult]) {
    if pages.is_empty() {
        return;
    }
    out.push_str(
        "## Browser verification

| page | result | checks | console errors | screenshot |
|---|---|---|---|---|
",
    );
    for p in pages {
        let checks: Vec<String> = p
            .checks
            .iter()
            .map(|c| {
                let mark = match c.passed {
                    Some(true) => "✅",
                    Some(false) => "❌",
                    None => "🔎",
                };
                format!("{mark} {}", c.check)
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            cell(&p.url),
            if p.passed { "✅ passed" } else { "❌ failed" },
            cell(&checks.join("; ")),
            match p.console_errors.first() {
                Some(first) => cell(&format!(
                    "{} — {}",
                    p.console_errors.len(),
                    crate::text::clip(first, 120)
                )),
                None => "0".into(),
            },
            p.screenshot.as_deref().map(code).unwrap_or_default()
        ));
    }
    out.push_str("\n🔎 = judged by the reviewer from the page snapshot and screenshot.\n\n");
}

/// Characters of a message shown in a conversation table cell.
const TURN_CELL: usize = 300;

/// Why a recurring issue's occurrences were taken for one problem, one sub-item per link.
fn push_links(out: &mut String, ri: &crate::engine::recurring::RecurringIssue) {
    for link in &ri.links {
        out.push_str(&format!("  - {}\n", cell(&link.to_string())));
    }
}

/// Each conversation scenario: outcome, warnings, and every turn with the judge's verdict.
fn conversations_section(out: &mut String, scenarios: &[ScenarioResult]) {
    if scenarios.is_empty() {
        return;
    }
    out.push_str("## Conversation scenarios\n\n");
    for s in scenarios {
        let icon = match s.outcome {
            ScenarioOutcome::Passed => "✅",
            ScenarioOutcome::Failed => "❌",
            ScenarioOutcome::NeedsHuman => "🧑‍⚖️",
            ScenarioOutcome::Error => "⚠️",
        };
        out.push_str(&format!(
            "### {icon} {} — {}{}\n\n{} ({} turn(s), {:.1} s)\n\n",
            code(&s.name),
            s.outcome.as_str().replace('_', " "),
            if s.required { "" } else { " (advisory)" },
            cell(s.reason.lines().next().unwrap_or_default()),
            s.turns.len(),
            s.duration_ms as f64 / 1000.0
        ));
        for w in &s.warnings {
            out.push_str(&format!("- ⚠️ {}\n", cell(w)));
        }
        if !s.warnings.is_empty() {
            out.push('\n');
        }
        if s.turns.is_empty() {
            continue;
        }
        out.push_str("| turn | user | agent | judge | reasoning |\n|---|---|---|---|---|\n");
        for t in &s.turns {
            let judge = match (t.verdict, &t.approval) {
                (Some(v), _) => format!("{} ({:.2})", v.as_str(), t.confidence),
                (None, Some(a)) => a.clone(),
                (None, None) => "–".into(),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                t.number,
                cell(&crate::text::clip(&t.user, TURN_CELL)),
                cell(&crate::text::clip(&t.agent, TURN_CELL)),
                cell(&judge),
                cell(&crate::text::clip(&t.reasoning, TURN_CELL))
            ));
        }
        out.push('\n');
    }
}

/// The full report.
pub fn report(r: &RunReport<'_>) -> String {
    let mut out = header(r);
    if let Some(d) = r.deciding() {
        criteria_section(&mut out, r.strategy.criteria.is_empty(), &d.criteria);
        if !d.summary.is_empty() {
            out.push_str(&format!("**Reviewer:**\n\n{}\n", block(&d.summary)));
        }
        let latest = r.latest().unwrap_or(d);
        if !latest.issues.is_empty() {
            issues_section(&mut out, latest.iteration, &latest.issues);
        }
        set_apart_section(&mut out, latest);
        if let Some(f) = latest.verification.failing_first {
            out.push_str(&format!(
                "_Failing tests first: this pass ran {} of the {} tests (what failed before the fix), and they still fail; the rest runs once they pass, before any approval._\n\n",
                f.ran, f.of
            ));
        }
        if let Some(pass) = latest.verification.reused_from {
            out.push_str(&format!(
                "_The tree is the same as the one verified in pass {pass}: its results are reused, not run again._\n\n"
            ));
        }
        gates_section(&mut out, &latest.verification.gates);
        for t in &latest.verification.tests {
            suite_tests(&mut out, t);
        }
        conversations_section(&mut out, &latest.verification.conversations);
        browser_section(&mut out, &latest.verification.browser);
        findings_section(&mut out, &latest.verification.gates);
    }
    recurring_section(&mut out, &r.recurring);
    history_section(&mut out, r);
    mcp_section(&mut out, r);
    guidance_section(&mut out, r);
    if !r.fixes.is_empty() {
        out.push_str("## Fixes applied\n\n");
        for (it, summary) in r.fixes {
            out.push_str(&format!("- after iteration {it}: {}\n", cell(summary)));
        }
        out.push('\n');
    }
    if !r.omitted_files.is_empty() {
        out.push_str(&format!(
            "## Not shown to the reviewer\n\nThe diff was too large to show whole; these files were left out of the reviewer's context: {}\n\n",
            r.omitted_files.iter().map(|f| code(f)).collect::<Vec<_>>().join(", ")
        ));
    }
    if !r.errors.is_empty() {
        out.push_str("## Errors\n\n");
        for e in r.errors {
            out.push_str(&format!("- {}\n", cell(e)));
        }
        out.push('\n');
    }
    out
}

/// The title with the verdict, the run's warnings, and the table of verdict, score, iterations,
/// risk level, tokens and cost.
fn header(r: &RunReport<'_>) -> String {
    let verdict = r.outcome.verdict();
    let icon = match r.outcome {
        Outcome::Approved { .. } => "✅",
        Outcome::Escalated { .. } => "🧑‍⚖️",
        Outcome::Errors { .. } => "⚠️",
        _ => "❌",
    };
    let mut out = format!("# {icon} QA Loop: {verdict}\n\n{}\n\n", r.headline());
    if r.replayed {
        out.push_str("> **Replayed model:** the reviewer's and fixer's answers were replayed from a recorded session; tests, tools and files were real.\n\n");
    }
    if let Some(note) = r.sandbox.as_ref().filter(|n| !n.confined) {
        out.push_str(&format!(
            "> [!WARNING]\n> **Unsandboxed:** {} (docs/security.md).\n\n",
            note.how
        ));
    }
    let score = r
        .deciding()
        .map_or("–".to_string(), |d| d.score.to_string());
    out.push_str("| | |\n|---|---|\n");
    out.push_str(&format!(
        "| Verdict | **{verdict}** |\n| Score | {score} / 100 |\n"
    ));
    out.push_str(&format!(
        "| Iterations | {} |\n| Risk level | `{}` |\n",
        r.history.len(),
        r.strategy.risk_level.as_str()
    ));
    out.push_str(&format!(
        "| Tokens | {} (in {}, out {}, cache read {}, cache write {}) in {} model calls |\n| Cost | ${:.4} |\n\n",
        r.usage.total(),
        r.usage.input_tokens,
        r.usage.output_tokens,
        r.usage.cache_read_tokens,
        r.usage.cache_write_tokens,
        r.model_calls,
        r.cost_usd
    ));
    out
}

/// The deciding iteration's verdict on each acceptance criterion (or why there were none).
fn criteria_section(out: &mut String, none_given: bool, criteria: &[CriterionResult]) {
    out.push_str("## Acceptance criteria\n\n");
    if none_given {
        out.push_str("No acceptance criteria were given; the reviewer judged the change against the pull request's title and description (a local run: its commits) and its diff.\n\n");
    }
    if !criteria.is_empty() {
        out.push_str("| criterion | met | evidence |\n|---|---|---|\n");
        for c in criteria {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&c.criterion),
                if c.met { "✅" } else { "❌" },
                cell(&c.evidence)
            ));
        }
        out.push('\n');
    }
}

/// The latest iteration's issues: the table, then the fix asked for each.
fn issues_section(out: &mut String, iteration: u32, issues: &[Issue]) {
    out.push_str(&format!("## Issues (iteration {iteration})\n\n"));
    issues_table(out, issues);
    out.push('\n');
    for i in issues.iter().filter(|i| !i.fix.is_empty()) {
        out.push_str(&format!("- **{}** fix: {}\n", cell(&i.id), cell(&i.fix)));
    }
    out.push('\n');
}

/// The latest iteration's findings that do not block: suggestions below the `fix_severity`
/// bar and issues that were there before the change.
fn set_apart_section(out: &mut String, latest: &crate::engine::IterationRecord) {
    if !latest.suggestions.is_empty() {
        out.push_str(
            "## Suggestions (below the `fix_severity` bar: reported, not fixed, not blocking)\n\n",
        );
        issues_table(out, &latest.suggestions);
        out.push('\n');
    }
    if !latest.pre_existing.is_empty() {
        out.push_str(
            "## Pre-existing issues (there before this change: reported, not fixed, not blocking)\n\n",
        );
        issues_table(out, &latest.pre_existing);
        out.push('\n');
    }
}

/// The table of the latest verification's gates.
fn gates_section(out: &mut String, gates: &[Gate]) {
    out.push_str(
        "## Tests and gates\n\n| gate | required | result | details |\n|---|---|---|---|\n",
    );
    for g in gates {
        let status = match g.status {
            GateStatus::Passed => "✅ passed",
            GateStatus::Failed => "❌ failed",
            GateStatus::Pending => "⏳ pending",
            GateStatus::Skipped => "⏭ skipped",
        };
        out.push_str(&format!(
            "| `{}` | {} | {status} | {} |\n",
            g.name,
            if g.required { "yes" } else { "no" },
            cell(&g.summary)
        ));
    }
    if gates.is_empty() {
        out.push_str("| – | – | – | no automated gates |\n");
    }
    out.push('\n');
}

/// Failing test cases listed under one suite's results.
const FAILURES_SHOWN: usize = 30;

/// One suite's ingested test results: counts, reports, problems and the first failing cases.
fn suite_tests(out: &mut String, t: &SuiteTests) {
    out.push_str(&format!(
        "**{}** — {} (from {})\n\n",
        code(&t.suite),
        t.counts.describe(),
        if t.reports.is_empty() {
            "no report".to_string()
        } else {
            t.reports
                .iter()
                .map(|r| code(r))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ));
    for p in &t.problems {
        out.push_str(&format!("- ⚠️ {}\n", cell(p)));
    }
    let failing: Vec<_> = t.cases.iter().filter(|c| c.is_failure()).collect();
    for c in failing.iter().take(FAILURES_SHOWN) {
        let at = c
            .location()
            .map(|l| format!(" — {}", code(&l)))
            .unwrap_or_default();
        let msg = c.message.lines().next().unwrap_or_default();
        out.push_str(&format!(
            "- ❌ {}{at}: {}\n",
            code(&c.full_name()),
            cell(msg)
        ));
    }
    if failing.len() > FAILURES_SHOWN {
        out.push_str(&format!(
            "- … and {} more\n",
            failing.len() - FAILURES_SHOWN
        ));
    }
    for c in t.cases.iter().filter(|c| c.proves_fix.is_some()) {
        out.push_str(&match c.proves_fix {
            Some(true) => format!(
                "- 🧪 {}: new test, fails on the code before the fix — proves the fix\n",
                code(&c.full_name())
            ),
            _ => format!(
                "- ⚠️ {}: new test, passes on the code before the fix too — proves nothing\n",
                code(&c.full_name())
            ),
        });
    }
    let flaky: Vec<_> = t.cases.iter().filter(|c| c.flaky).collect();
    for c in flaky.iter().take(FAILURES_SHOWN) {
        out.push_str(&format!(
            "- 🔁 {}: flaky — failed, then passed on a re-run\n",
            code(&c.full_name())
        ));
    }
    if flaky.len() > FAILURES_SHOWN {
        out.push_str(&format!(
            "- … and {} more flaky\n",
            flaky.len() - FAILURES_SHOWN
        ));
    }
    let evidence = t.cases.iter().any(|c| c.proves_fix.is_some());
    if !t.problems.is_empty() || !failing.is_empty() || !flaky.is_empty() || evidence {
        out.push('\n');
    }
}

/// The pattern checks' findings on the added lines (gates other than test suites and
/// conversations).
fn findings_section(out: &mut String, gates: &[Gate]) {
    let patterns: Vec<_> = gates
        .iter()
        .flat_map(|g| g.findings.iter().map(move |f| (g, f)))
        .filter(|(g, _)| !g.name.ends_with("_tests") && !g.name.starts_with("conversation"))
        .collect();
    if patterns.is_empty() {
        return;
    }
    out.push_str("**Findings on the added lines**\n\n");
    for (g, f) in patterns {
        // Only a full `file:line` is shown before the finding.
        let at = f
            .line
            .and(f.location())
            .map(|l| format!("{} ", code(&l)))
            .unwrap_or_default();
        out.push_str(&format!(
            "- {at}[{}{}] {}\n",
            f.kind,
            if g.required { ", blocking" } else { "" },
            cell(&f.title)
        ));
    }
    out.push('\n');
}

/// The issues that came back after being fixed, with why their occurrences were linked.
fn recurring_section(out: &mut String, recurring: &[crate::engine::recurring::RecurringIssue]) {
    if recurring.is_empty() {
        return;
    }
    out.push_str("## Recurring issues\n\n");
    for ri in recurring {
        out.push_str(&format!(
            "- {} — seen {} times (iterations {:?})\n",
            cell(&ri.title),
            ri.occurrences,
            ri.iterations
        ));
        push_links(out, ri);
    }
    out.push('\n');
}

/// One row per iteration: status, score, issue count and the reviewer's verdict.
fn history_section(out: &mut String, r: &RunReport<'_>) {
    out.push_str("## Iteration history\n\n| iteration | verified | status | score | issues | reviewer said |\n|---|---|---|---|---|---|\n");
    for h in r.history {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            h.iteration,
            h.verification.scope_text(),
            h.status.as_str(),
            h.score,
            h.issues.len(),
            if h.reviewer_approved {
                "approved"
            } else {
                "rejected"
            }
        ));
    }
    out.push('\n');
}

/// The MCP servers the agents had: state, tools and calls.
fn mcp_section(out: &mut String, r: &RunReport<'_>) {
    if r.mcp.is_empty() {
        return;
    }
    out.push_str("## MCP servers\n\n| server | state | tools | calls | failed calls |\n|---|---|---|---|---|\n");
    for s in &r.mcp {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            code(&s.name),
            cell(&s.state),
            s.tools.len(),
            s.calls,
            s.failed_calls
        ));
    }
    out.push('\n');
}

/// The guidance a human gave, before the iteration that received it.
fn guidance_section(out: &mut String, r: &RunReport<'_>) {
    let guided: Vec<_> = r
        .history
        .iter()
        .filter_map(|h| h.guidance.as_deref().map(|g| (h.iteration, g)))
        .collect();
    if guided.is_empty() {
        return;
    }
    out.push_str("## Human guidance\n\n");
    for (it, g) in guided {
        out.push_str(&format!(
            "Before iteration {it}:\n\n{}\n",
            crate::report::untrusted::block(g)
        ));
    }
}

/// `QA_HUMAN_ESCALATION.md`: why a human is needed, the failure analysis when one was written,
/// every iteration, what was tried. Written when the run escalated, and at the end of a run that
/// ran out of iterations.
pub fn escalation(r: &RunReport<'_>) -> Option<String> {
    let (escalation, best_iteration) = match r.outcome {
        Outcome::Escalated {
            escalation,
            best_iteration,
        } => (Some(escalation), *best_iteration),
        Outcome::MaxIterations { best_iteration } if r.finished => (None, Some(*best_iteration)),
        _ => return None,
    };
    let mut out = String::from("# QA Loop: human review needed\n\n");
    out.push_str(&format!("{}\n\n", r.headline()));
    if let Some(a) = r.analysis {
        out.push_str("## Failure analysis\n\n_Written by the model from the whole record below; check it against the facts._\n\n");
        out.push_str(&block(a));
        out.push_str("\n## The facts\n\n");
    }
    out.push_str("## Why it stopped\n\n");
    match escalation {
        None => out.push_str(&format!(
            "The loop used its {} iterations without an approval: more automated attempts are unlikely to help without a change of plan.\n",
            r.history.len()
        )),
        Some(Escalation::Recurring { issues }) => {
            out.push_str("These problems came back after being fixed, so another automated attempt is unlikely to help:\n\n");
            for ri in issues {
                out.push_str(&format!("- **{}** — {} times, iterations {:?}\n", cell(&ri.title), ri.occurrences, ri.iterations));
                push_links(&mut out, ri);
            }
        }
        Some(Escalation::BelowMinScore { best_score, min_score }) => out.push_str(&format!(
            "No iteration reached the minimum score ({best_score} < {min_score}): the change is far from its acceptance criteria.\n"
        )),
        Some(Escalation::AwaitingSignoff { gates }) => out.push_str(&format!(
            "Review and gates approve, but required gates are waiting ({}): a human sign-off (a user with write access comments `/qa approve`), or, for reports produced by other jobs, those jobs running again on the new commit.\n",
            gates
                .iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(Escalation::AwaitingResume { issue }) => out.push_str(&format!(
            "An earlier run escalated to a human in #{issue}. Nothing runs until someone comments `/qa resume` on the pull request.\n"
        )),
    }
    out.push_str("\n## Every iteration\n\n");
    for h in r.history {
        out.push_str(&format!(
            "### Iteration {} — {} (score {})\n\n",
            h.iteration,
            h.status.as_str(),
            h.score
        ));
        if !h.summary.is_empty() {
            out.push_str(&format!("{}\n", block(&h.summary)));
        }
        if !h.issues.is_empty() {
            issues_table(&mut out, &h.issues);
            out.push('\n');
        }
    }
    if !r.fixes.is_empty() {
        out.push_str("## What was tried\n\n");
        for (it, s) in r.fixes {
            out.push_str(&format!("- after iteration {it}: {}\n", cell(s)));
        }
        out.push('\n');
    }
    out.push_str("## Suggested actions\n\n");
    if let Some(b) = best_iteration {
        out.push_str(&format!(
            "- Start from iteration {b}, the best-scoring state.\n"
        ));
    }
    out.push_str("- Read the recurring issues' descriptions: a fix that keeps coming back usually means the criterion, the test or the design needs a human decision.\n");
    out.push_str("- When resolved, comment `/qa resume` on the pull request (or run `qa-loop run` again) to re-arm the loop.\n");
    Some(out)
}

/// `MANUAL_TEST_PLAN.md` for projects without automated tests: the reviewer's plan when it wrote
/// one (the latest), else a checklist from the criteria and the open issues.
pub fn manual_test_plan(r: &RunReport<'_>) -> String {
    let written = r
        .history
        .iter()
        .rev()
        .find_map(|h| h.manual_test_plan.as_deref().map(|p| (h.iteration, p)));
    if let Some((iteration, plan)) = written {
        let mut out = format!(
            "# Manual test plan\n\nThis project has no automated tests, so QA validated by inspection. The reviewer wrote this plan (iteration {iteration}); check each item by hand before merging.\n\n"
        );
        let body = plan.trim();
        // The reviewer's own top-level title would repeat ours.
        let body = body
            .strip_prefix("# Manual test plan")
            .map_or(body, str::trim_start);
        out.push_str(&block(body));
        return out;
    }
    let mut out = String::from(
        "# Manual test plan\n\nThis project has no automated tests, so QA validated by inspection. Before merging, check by hand:\n\n",
    );
    if r.strategy.criteria.is_empty() {
        out.push_str("- [ ] The change does what its pull-request title and description say\n");
    }
    for c in &r.strategy.criteria {
        out.push_str(&format!("- [ ] {}\n", cell(&c.text)));
    }
    if let Some(latest) = r.latest() {
        for i in &latest.issues {
            out.push_str(&format!(
                "- [ ] Re-check: {}{}\n",
                cell(&i.title),
                i.location()
                    .map(|l| format!(" ({})", code(&l)))
                    .unwrap_or_default()
            ));
        }
    }
    out.push_str("- [ ] Existing behaviour still works (smoke-test the main flows)\n");
    out
}
