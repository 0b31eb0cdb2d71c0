//! `qa-loop.sarif`: the findings of the run's last iteration as SARIF 2.1.0 (OASIS; valid against
//! the schema vendored in `schema/vendor/`), for GitHub code scanning and any SARIF viewer.
//!
//! Every finding — blocking issue, suggestion (below `fix_severity`), pre-existing issue — is a
//! result: its rule is the issue type (one `tool.driver.rules` entry per type used), its level
//! comes from the severity (critical/high `error`, medium `warning`, low `note`; suggestions and
//! pre-existing issues `note`), its message is the title then the description, its location is
//! repository-relative (`uriBaseId` `%SRCROOT%`), its `partialFingerprints` carry the finding's
//! fingerprint, and its `baselineState` compares it with the previous run's last iteration:
//! `new` or `unchanged`. The prescriptive fix is `properties.fix`: a SARIF `fixes` entry needs
//! the exact replacements (`artifactChanges`), which a reviewer's words are not.
//!
//! The previous run's findings that are gone are results too, after the present ones, with
//! `baselineState: "absent"` (kind `pass`, level `none`) and the previous run's fingerprint — what
//! SARIF viewers and baseline tooling read to close a finding. qa-loop's own upload to GitHub code
//! scanning (`sarif-upload`) leaves them out: code scanning closes an alert when its result is no
//! longer uploaded, and documents no `kind` or `baselineState` it would honour.
//!
//! GitHub's documented limits are kept: at most 5,000 results per run (GitHub shows no more;
//! the most severe are kept) and one location each; a file over 10 MB — GitHub's limit for the
//! compressed upload, so always safe — drops the least severe results; what was cut is said in
//! the run's `properties.cut` and a tool notification. A finding without a file is shown at the
//! configuration file (line 1), when there is one: GitHub rejects a whole file if any result has
//! no location.

use serde_json::{Map, Value, json};

use super::RunReport;
use crate::engine::state::{IterationRecord, Outcome};
use crate::model::{Issue, IssueType, Severity};

/// The schema the file declares (the OASIS errata 01 schema, as vendored).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
/// The `partialFingerprints` key of a finding's fingerprint.
pub const FINGERPRINT_KEY: &str = "qaLoopFindingHash/v1";
/// `automationDetails.id`: the category `qa-loop` with no run id, the same for every run, so
/// each upload replaces the last one on its ref and a pull request's alerts compare with the
/// base branch's.
pub const AUTOMATION_ID: &str = "qa-loop/";
/// Results GitHub code scanning shows per run (it accepts 25,000 and keeps the first 5,000).
pub const MAX_RESULTS: usize = 5_000;
/// The largest file written: GitHub's limit for the gzip-compressed upload, met uncompressed.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;
/// Where the rules are documented.
const HELP_URI: &str = concat!(
    env!("CARGO_PKG_REPOSITORY"),
    "/blob/main/docs/configuration.md#code-scanning-sarif"
);

/// What the file needs beyond the report.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame<'a> {
    /// How many of the report's iterations come from earlier runs (the cross-run memory): the
    /// last of them is the baseline.
    pub earlier: usize,
    /// Where a finding without a file is shown: the configuration file, repository-relative.
    pub anchor: Option<&'a str>,
}

/// Why a finding is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    Blocking,
    Suggestion,
    PreExisting,
}

impl Standing {
    fn as_str(self) -> &'static str {
        match self {
            Standing::Blocking => "blocking",
            Standing::Suggestion => "suggestion",
            Standing::PreExisting => "pre-existing",
        }
    }
}

/// A record's findings with their standing: blocking, then suggestions, then pre-existing.
fn findings(record: &IterationRecord) -> Vec<(Standing, &Issue)> {
    let tag = |s: Standing| move |i| (s, i);
    record
        .issues
        .iter()
        .map(tag(Standing::Blocking))
        .chain(record.suggestions.iter().map(tag(Standing::Suggestion)))
        .chain(record.pre_existing.iter().map(tag(Standing::PreExisting)))
        .collect()
}

/// The SARIF level: a blocking issue's from its severity; set-apart findings are notes.
pub fn level(severity: Severity, blocking: bool) -> &'static str {
    match (blocking, severity) {
        (true, Severity::Critical | Severity::High) => "error",
        (true, Severity::Medium) => "warning",
        _ => "note",
    }
}

/// The iterations the file describes: this run's last (else, when this run reviewed nothing,
/// the last known one) and the previous run's last, if there was a previous run.
fn current_and_baseline(
    history: &[IterationRecord],
    earlier: usize,
) -> (Option<&IterationRecord>, Option<&IterationRecord>) {
    let earlier = earlier.min(history.len());
    let own = &history[earlier..];
    match own.last() {
        Some(last) => (Some(last), history[..earlier].last()),
        // Nothing reviewed by this run: what is known is the previous run's, unchanged.
        None => (history.last(), history.last()),
    }
}

/// Whether every finding of `record` has a fingerprint (a plan's history carries none).
fn fingerprinted(record: &IterationRecord) -> bool {
    record.all_findings().all(|i| i.fingerprint.is_some())
}

/// Renders `qa-loop.sarif`.
pub fn render(r: &RunReport<'_>, frame: &Frame<'_>) -> String {
    let log = log(r, frame);
    let pretty = serde_json::to_string_pretty(&log).expect("SARIF serializes") + "\n";
    if pretty.len() <= MAX_BYTES {
        return pretty;
    }
    // Compact, then cut to fit.
    let compact = fit(log);
    serde_json::to_string(&compact).expect("SARIF serializes") + "\n"
}

/// The SARIF log of `r`.
pub fn log(r: &RunReport<'_>, frame: &Frame<'_>) -> Value {
    let (current, baseline) = current_and_baseline(r.history, frame.earlier);
    let mut found: Vec<(Standing, &Issue)> = current.map(findings).unwrap_or_default();
    // The most severe first (blocking before set apart, then by severity): what a cut keeps.
    found.sort_by_key(|(s, i)| (*s, i.severity));
    // A baseline whose findings have no fingerprints cannot be compared with: no states.
    let comparable = baseline.is_none_or(fingerprinted);
    let before: Vec<&str> = baseline
        .iter()
        .flat_map(|b| b.all_findings())
        .filter_map(|i| i.fingerprint.as_deref())
        .collect();
    let mut kinds: Vec<IssueType> = found.iter().map(|(_, i)| i.kind).collect();
    let now: Vec<&str> = found
        .iter()
        .filter_map(|(_, i)| i.fingerprint.as_deref())
        .collect();
    // This run reviewed nothing: the baseline is the current iteration, nothing is gone.
    let same = matches!((current, baseline), (Some(c), Some(b)) if std::ptr::eq(c, b));
    let gone: Vec<(Standing, &Issue)> = baseline
        .filter(|_| comparable && !same)
        .map(findings)
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, i)| i.fingerprint.as_deref().is_some_and(|f| !now.contains(&f)))
        .collect();
    kinds.extend(gone.iter().map(|(_, i)| i.kind));
    kinds.sort();
    kinds.dedup();
    let rule_index = |k: IssueType| kinds.iter().position(|x| *x == k).unwrap_or(0);
    let iteration = current.map_or(0, |c| c.iteration);
    let state = |i: &Issue| {
        comparable.then(|| {
            let seen = i
                .fingerprint
                .as_deref()
                .is_some_and(|f| before.contains(&f));
            if seen { "unchanged" } else { "new" }
        })
    };
    let mut results: Vec<Value> = found
        .iter()
        .map(|(s, i)| result(i, *s, rule_index(i.kind), state(i), iteration, frame))
        .collect();
    let mut absent: Vec<Value> = gone
        .iter()
        .map(|(s, i)| absent_result(i, *s, rule_index(i.kind), baseline, frame))
        .collect();
    let mut cut = Map::new();
    if results.len() > MAX_RESULTS {
        cut.insert("results".into(), json!(results.len() - MAX_RESULTS));
        results.truncate(MAX_RESULTS);
    }
    // The absent ones after the present ones (a cut drops them first), within the same bound.
    let room = MAX_RESULTS.saturating_sub(results.len());
    if absent.len() > room {
        cut.insert("absentResults".into(), json!(absent.len() - room));
        absent.truncate(room);
    }
    results.extend(absent);
    let run = json!({
        "tool": {"driver": driver(&kinds)},
        "automationDetails": {"id": AUTOMATION_ID},
        "invocations": [invocation(r, current, &cut)],
        "results": results,
        "properties": run_properties(r, frame, baseline, comparable, cut),
    });
    json!({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]})
}

/// `tool.driver`: qa-loop with one rule per issue type used.
fn driver(kinds: &[IssueType]) -> Value {
    json!({
        "name": "qa-loop",
        "version": env!("CARGO_PKG_VERSION"),
        "semanticVersion": env!("CARGO_PKG_VERSION"),
        "informationUri": env!("CARGO_PKG_REPOSITORY"),
        "rules": kinds.iter().map(|k| rule(*k)).collect::<Vec<_>>(),
    })
}

/// The rule of an issue type.
fn rule(kind: IssueType) -> Value {
    let (name, short) = match kind {
        IssueType::AcceptanceCriteria => (
            "AcceptanceCriteria",
            "An acceptance criterion of the change is not met",
        ),
        IssueType::UnitTest => ("UnitTest", "A unit test fails, is missing or is wrong"),
        IssueType::IntegrationTest => (
            "IntegrationTest",
            "An integration test fails, is missing or is wrong",
        ),
        IssueType::E2eTest => (
            "E2eTest",
            "An end-to-end test fails, is missing or is wrong",
        ),
        IssueType::Coverage => ("Coverage", "The change's code is not covered by tests"),
        IssueType::CodeQuality => ("CodeQuality", "A defect or a code quality problem"),
        IssueType::ErrorHandling => ("ErrorHandling", "An error is not handled, or wrongly"),
        IssueType::Security => ("Security", "A security problem"),
        IssueType::Performance => ("Performance", "A performance problem"),
    };
    let full = format!(
        "{short}. Found by qa-loop's review of the change (the reviewer's findings and the \
         verification gates: tests, coverage, integrity checks, acceptance criteria)."
    );
    let help = format!(
        "{short}. Blocking findings stop approval and go to the fixer; findings below the \
         fix_severity bar are suggestions; findings the change did not introduce are \
         pre-existing. Each result's properties.fix says how to fix it."
    );
    // `security` (the type's own name) makes GitHub list the alerts as security alerts.
    let tags = ["qa-loop", kind.as_str()];
    json!({
        "id": kind.as_str(),
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": help},
        "helpUri": HELP_URI,
        "properties": {"tags": tags},
    })
}

/// A repository-relative path as a URI reference: `./` dropped, every byte outside the
/// unreserved characters and `/` percent-encoded (so a `:` never reads as a scheme).
pub fn uri_of(path: &str) -> String {
    let path = path.trim().trim_start_matches("./");
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A result's `locations`: its file (and line), else the anchor's line 1, else none; and
/// whether it was anchored.
fn locations(i: &Issue, frame: &Frame<'_>) -> (Vec<Value>, bool) {
    let (file, line, anchored) = match (i.file.as_deref(), frame.anchor) {
        (Some(f), _) if !f.trim().is_empty() => (f, i.line.filter(|l| *l >= 1), false),
        (_, Some(a)) => (a, Some(1), true),
        _ => return (Vec::new(), false),
    };
    let mut physical = json!({"artifactLocation": {"uri": uri_of(file), "uriBaseId": "%SRCROOT%"}});
    if let Some(l) = line {
        physical["region"] = json!({"startLine": l});
    }
    (vec![json!({"physicalLocation": physical})], anchored)
}

/// The message: the title, then the description.
fn message(i: &Issue, anchored: Option<&str>) -> String {
    let mut text = i.title.trim().to_string();
    if !i.description.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(i.description.trim());
    }
    if let Some(a) = anchored {
        text.push_str(&format!(
            "\n\n(The finding names no file: it is shown at {a}.)"
        ));
    }
    if text.is_empty() {
        text = format!("{} finding", i.kind);
    }
    text
}

/// One finding as a result.
fn result(
    i: &Issue,
    standing: Standing,
    rule_index: usize,
    state: Option<&str>,
    iteration: u32,
    frame: &Frame<'_>,
) -> Value {
    let (locations, anchored) = locations(i, frame);
    let blocking = standing == Standing::Blocking;
    let mut r = json!({
        "ruleId": i.kind.as_str(),
        "ruleIndex": rule_index,
        "level": level(i.severity, blocking),
        "message": {"text": message(i, frame.anchor.filter(|_| anchored))},
    });
    if !locations.is_empty() {
        r["locations"] = Value::Array(locations);
    }
    if let Some(fp) = &i.fingerprint {
        r["partialFingerprints"] = json!({FINGERPRINT_KEY: fp});
    }
    if let Some(s) = state {
        r["baselineState"] = json!(s);
    }
    let mut props = json!({
        "qaLoopId": i.id,
        "iteration": iteration,
        "severity": i.severity.as_str(),
        "standing": standing.as_str(),
        "blocking": blocking,
        "introduced": i.introduced,
        "tags": [standing.as_str(), i.severity.as_str()],
    });
    if !i.fix.trim().is_empty() {
        props["fix"] = json!(i.fix.trim());
    }
    if anchored {
        props["anchored"] = json!(true);
    }
    r["properties"] = props;
    r
}

/// A finding of the baseline that is gone: `absent`, kind `pass` (level `none`, as SARIF
/// requires for a kind other than `fail`).
fn absent_result(
    i: &Issue,
    standing: Standing,
    rule_index: usize,
    baseline: Option<&IterationRecord>,
    frame: &Frame<'_>,
) -> Value {
    let iteration = baseline.map_or(0, |b| b.iteration);
    let mut r = result(i, standing, rule_index, Some("absent"), iteration, frame);
    r["kind"] = json!("pass");
    r["level"] = json!("none");
    r
}

/// The invocation: whether the run ended without errors, its verdict and exit code, and the
/// notifications (errors, what was cut, a run that reviewed nothing).
fn invocation(
    r: &RunReport<'_>,
    current: Option<&IterationRecord>,
    cut: &Map<String, Value>,
) -> Value {
    let errors = matches!(r.outcome, Outcome::Errors { .. });
    let mut notes: Vec<Value> = r
        .errors
        .iter()
        .map(|e| json!({"level": "error", "message": {"text": e}}))
        .collect();
    if errors {
        notes.push(json!({"level": "error", "message": {"text": r.headline()}}));
    }
    if let Some(n) = cut.get("results") {
        notes.push(json!({"level": "warning", "message": {"text": format!(
            "{n} result(s) left out: GitHub code scanning shows at most {MAX_RESULTS} per run \
             (the most severe are kept; qa_report.md lists every finding)"
        )}}));
    }
    let deciding = r.deciding();
    json!({
        "executionSuccessful": !errors,
        "exitCode": r.outcome.exit() as u8,
        "exitCodeDescription": r.outcome.verdict(),
        "toolExecutionNotifications": notes,
        "properties": {
            "verdict": r.outcome.verdict(),
            "status": r.outcome.status().as_str(),
            "headline": r.headline(),
            "score": deciding.map(|d| d.score),
            "iterations": r.history.len(),
            "lastIteration": current.map(|c| c.iteration),
            "finished": r.finished,
            "replayed": r.replayed,
        },
    })
}

/// The run's property bag: the baseline compared with, what was cut.
fn run_properties(
    r: &RunReport<'_>,
    frame: &Frame<'_>,
    baseline: Option<&IterationRecord>,
    comparable: bool,
    cut: Map<String, Value>,
) -> Value {
    let earlier = frame.earlier.min(r.history.len());
    let baseline = match baseline {
        None => json!({"kind": "none", "note": "no earlier run: every result is new"}),
        Some(b) if !comparable => json!({"kind": "previous-run", "iteration": b.iteration,
            "note": "the previous run's findings have no fingerprints (a plan's history): no baselineState"}),
        Some(b) => json!({"kind": "previous-run", "iteration": b.iteration}),
    };
    let mut props = json!({
        "baseline": baseline,
        "earlierIterations": earlier,
        "iterationsThisRun": r.history.len() - earlier,
    });
    if !cut.is_empty() {
        props["cut"] = Value::Object(cut);
    }
    props
}

/// `log` cut to [`MAX_BYTES`] compact: the least severe results (the last) dropped first, then
/// the absent ones; the cut is recorded.
fn fit(mut log: Value) -> Value {
    let size = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
    let mut over = size(&log).saturating_sub(MAX_BYTES);
    let mut dropped = (0usize, 0usize);
    let run = &mut log["runs"][0];
    if let Some(Value::Array(items)) = run.get_mut("results") {
        // The last first: the absent ones, then the least severe.
        while over > 0 {
            let Some(last) = items.pop() else { break };
            // The separating comma too.
            over = over.saturating_sub(size(&last) + 1);
            if last["baselineState"] == "absent" {
                dropped.1 += 1;
            } else {
                dropped.0 += 1;
            }
        }
    }
    let props = &mut run["properties"];
    let cut = props
        .as_object_mut()
        .expect("the run's properties are an object")
        .entry("cut")
        .or_insert_with(|| json!({}));
    cut["bytes"] = json!({"results": dropped.0, "absentResults": dropped.1,
        "why": format!("the file would exceed {MAX_BYTES} bytes (GitHub's upload limit)")});
    if let Some(Value::Array(notes)) = run.pointer_mut("/invocations/0/toolExecutionNotifications")
    {
        notes.push(json!({"level": "warning", "message": {"text": format!(
            "{} result(s) and {} absent result(s) left out to keep the file within {MAX_BYTES} bytes",
            dropped.0, dropped.1
        )}}));
    }
    log
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Strategy;
    use crate::config::strategy::CriteriaLists;
    use crate::engine::Status;

    fn issue(id: &str, kind: IssueType, severity: Severity, at: Option<(&str, u32)>) -> Issue {
        Issue {
            id: id.into(),
            title: format!("{id} title"),
            kind,
            severity,
            file: at.map(|(f, _)| f.to_string()),
            line: at.map(|(_, l)| l),
            file_lines: None,
            description: format!("{id} description"),
            fix: format!("{id} fix"),
            recurs: None,
            introduced: true,
            fingerprint: Some(format!("fp-{id}")),
        }
    }

    fn record(iteration: u32, issues: Vec<Issue>) -> IterationRecord {
        IterationRecord {
            iteration,
            status: Status::Rejected,
            reviewer_approved: false,
            score: 50,
            summary: String::new(),
            criteria: Vec::new(),
            issues,
            suggestions: Vec::new(),
            pre_existing: Vec::new(),
            verification: Default::default(),
            timestamp: "2026-11-21T10:00:00Z".into(),
            manual_test_plan: None,
            guidance: None,
            reviewed_head: None,
        }
    }

    fn strategy() -> Strategy {
        Strategy::resolve(&Default::default(), CriteriaLists::default())
    }

    /// The SARIF log of `history` (the first `earlier` from earlier runs), rejected.
    fn sarif(history: &[IterationRecord], earlier: usize, anchor: Option<&str>) -> Value {
        let strategy = strategy();
        let outcome = Outcome::MaxIterations {
            best_iteration: history.last().map_or(1, |r| r.iteration),
        };
        let r = RunReport {
            replayed: true,
            ..RunReport::new(&outcome, history, &strategy)
        };
        let text = render(&r, &Frame { earlier, anchor });
        serde_json::from_str(&text).unwrap()
    }

    fn results(log: &Value) -> &Vec<Value> {
        log["runs"][0]["results"].as_array().unwrap()
    }

    fn by_id<'a>(list: &'a [Value], id: &str) -> &'a Value {
        list.iter()
            .find(|r| r["properties"]["qaLoopId"] == id)
            .unwrap_or_else(|| panic!("no result {id} in {list:#?}"))
    }

    #[test]
    fn every_finding_of_the_last_iteration_is_a_result_with_its_rule_level_and_place() {
        let mut last = record(
            2,
            vec![
                issue(
                    "Q1",
                    IssueType::Security,
                    Severity::Critical,
                    Some(("src/a b.py", 3)),
                ),
                issue(
                    "Q2",
                    IssueType::UnitTest,
                    Severity::Medium,
                    Some(("./t.py", 0)),
                ),
                issue("G1", IssueType::Coverage, Severity::Low, None),
            ],
        );
        last.suggestions = vec![issue(
            "Q3",
            IssueType::CodeQuality,
            Severity::Low,
            Some(("a.py", 9)),
        )];
        let mut pre = issue(
            "Q4",
            IssueType::Security,
            Severity::High,
            Some(("old.py", 1)),
        );
        pre.introduced = false;
        last.pre_existing = vec![pre];
        // An earlier iteration of this run: not reported.
        let first = record(
            1,
            vec![issue("Q9", IssueType::Performance, Severity::High, None)],
        );
        let log = sarif(&[first, last], 0, None);
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        let all = results(&log);
        assert_eq!(all.len(), 5, "{all:#?}");
        let ids: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        // One rule per type used, in the schema's order; each result points at its own.
        assert_eq!(ids, ["unit_test", "coverage", "code_quality", "security"]);
        for r in all {
            assert_eq!(ids[r["ruleIndex"].as_u64().unwrap() as usize], r["ruleId"]);
        }
        let q1 = by_id(all, "Q1");
        assert_eq!(q1["level"], "error");
        assert_eq!(q1["message"]["text"], "Q1 title\n\nQ1 description");
        let place = &q1["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], "src/a%20b.py");
        assert_eq!(place["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(place["region"]["startLine"], 3);
        assert_eq!(q1["partialFingerprints"][FINGERPRINT_KEY], "fp-Q1");
        assert_eq!(q1["properties"]["fix"], "Q1 fix");
        assert_eq!(q1["properties"]["blocking"], true);
        assert_eq!(q1["properties"]["iteration"], 2);
        // Medium blocking: a warning; `./` dropped; line 0 is no region.
        let q2 = by_id(all, "Q2");
        assert_eq!(q2["level"], "warning");
        let place = &q2["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], "t.py");
        assert!(place.get("region").is_none());
        // Low blocking, a suggestion, a pre-existing high: notes, the last two not blocking.
        assert_eq!(by_id(all, "G1")["level"], "note");
        assert!(by_id(all, "G1").get("locations").is_none());
        let q3 = by_id(all, "Q3");
        assert_eq!(
            (&q3["level"], &q3["properties"]["standing"]),
            (&json!("note"), &json!("suggestion"))
        );
        assert_eq!(q3["properties"]["blocking"], false);
        let q4 = by_id(all, "Q4");
        assert_eq!(q4["level"], "note");
        assert_eq!(q4["properties"]["standing"], "pre-existing");
        assert_eq!(q4["properties"]["introduced"], false);
        // Ordered most severe first: blocking by severity, then set apart.
        let order: Vec<&str> = all
            .iter()
            .map(|r| r["properties"]["qaLoopId"].as_str().unwrap())
            .collect();
        assert_eq!(order, ["Q1", "Q2", "G1", "Q3", "Q4"]);
        // No earlier run: all new.
        assert!(all.iter().all(|r| r["baselineState"] == "new"));
        assert_eq!(run["properties"]["baseline"]["kind"], "none");
        assert_eq!(run["automationDetails"]["id"], AUTOMATION_ID);
        let invocation = &run["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], true);
        assert_eq!(invocation["properties"]["verdict"], "rejected");
        assert_eq!(invocation["exitCode"], 1);
    }

    #[test]
    fn the_baseline_is_the_previous_runs_last_iteration() {
        let fp = |mut i: Issue, fp: &str| {
            i.fingerprint = Some(fp.into());
            i
        };
        let high = |id| issue(id, IssueType::UnitTest, Severity::High, Some(("a.py", 2)));
        // Run 1: iterations 1 and 2 (the baseline is 2: `old` in 1 was fixed within run 1).
        let run1 = vec![
            record(1, vec![fp(high("Q1"), "old")]),
            record(2, vec![fp(high("Q1"), "kept"), fp(high("Q2"), "fixed")]),
        ];
        // Run 2 reviews once: `kept` again (other id and line), and a new one.
        let mut second = run1.clone();
        let mut again = fp(high("Q7"), "kept");
        again.line = Some(40);
        second.push(record(3, vec![again, fp(high("Q8"), "fresh")]));
        let log = sarif(&second, 2, None);
        let all = results(&log);
        assert_eq!(by_id(all, "Q7")["baselineState"], "unchanged");
        assert_eq!(by_id(all, "Q8")["baselineState"], "new");
        let props = &log["runs"][0]["properties"];
        assert_eq!(props["baseline"]["iteration"], 2);
        assert_eq!(props["earlierIterations"], 2);
        // The gone finding: absent, kind pass, level none — a result after the present ones.
        let absent: Vec<&Value> = all
            .iter()
            .filter(|r| r["baselineState"] == "absent")
            .collect();
        assert_eq!(absent.len(), 1, "{absent:#?}");
        assert_eq!(all.last().unwrap()["baselineState"], "absent");
        assert_eq!(absent[0]["partialFingerprints"][FINGERPRINT_KEY], "fixed");
        assert_eq!(absent[0]["baselineState"], "absent");
        assert_eq!(
            (&absent[0]["kind"], &absent[0]["level"]),
            (&json!("pass"), &json!("none"))
        );
        // The absent result's rule is in the rules too.
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(
            rules[absent[0]["ruleIndex"].as_u64().unwrap() as usize]["id"],
            "unit_test"
        );

        // A run that reviewed nothing (waiting for `/qa resume`): the last known findings,
        // unchanged, nothing absent.
        let log = sarif(&run1, 2, None);
        assert!(
            results(&log)
                .iter()
                .all(|r| r["baselineState"] == "unchanged")
        );
        assert_eq!(results(&log).len(), 2);

        // A baseline without fingerprints (a plan's history): no states at all.
        let mut plain = run1.clone();
        plain[1].issues[0].fingerprint = None;
        plain.push(record(3, vec![fp(high("Q8"), "fresh")]));
        let log = sarif(&plain, 2, None);
        assert!(
            results(&log)
                .iter()
                .all(|r| r.get("baselineState").is_none())
        );
        assert!(
            log["runs"][0]["properties"]["baseline"]["note"]
                .as_str()
                .unwrap()
                .contains("no fingerprints")
        );
    }

    #[test]
    fn a_finding_without_a_file_is_shown_at_the_config_file() {
        let history = [record(
            1,
            vec![issue("G1", IssueType::Coverage, Severity::High, None)],
        )];
        let log = sarif(&history, 0, Some(".github/qa-loop.yml"));
        let g1 = &results(&log)[0];
        let place = &g1["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], ".github/qa-loop.yml");
        assert_eq!(place["region"]["startLine"], 1);
        assert_eq!(g1["properties"]["anchored"], true);
        assert!(
            g1["message"]["text"]
                .as_str()
                .unwrap()
                .ends_with("shown at .github/qa-loop.yml.)")
        );
    }

    #[test]
    fn uris_are_relative_references_whatever_the_path() {
        assert_eq!(uri_of("./src/a.py"), "src/a.py");
        assert_eq!(uri_of("c:/x y%.py"), "c%3A/x%20y%25.py");
        assert_eq!(uri_of("dir/ü.rs"), "dir/%C3%BC.rs");
    }

    #[test]
    fn github_limits_are_kept_and_the_cut_is_said() {
        // More results than GitHub shows: the most severe kept.
        let mut many: Vec<Issue> = (0..MAX_RESULTS)
            .map(|n| {
                issue(
                    &format!("L{n}"),
                    IssueType::CodeQuality,
                    Severity::Low,
                    Some(("a.py", 1)),
                )
            })
            .collect();
        many.push(issue(
            "C1",
            IssueType::Security,
            Severity::Critical,
            Some(("a.py", 1)),
        ));
        let log = sarif(&[record(1, many)], 0, None);
        let all = results(&log);
        assert_eq!(all.len(), MAX_RESULTS);
        assert_eq!(all[0]["properties"]["qaLoopId"], "C1");
        let run = &log["runs"][0];
        assert_eq!(run["properties"]["cut"]["results"], 1);
        let notes = run["invocations"][0]["toolExecutionNotifications"]
            .as_array()
            .unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n["message"]["text"].as_str().unwrap().contains("left out"))
        );

        // A file over 10 MB: the least severe results dropped until it fits.
        let big: Vec<Issue> = (0..3000)
            .map(|n| {
                let mut i = issue(
                    &format!("B{n}"),
                    IssueType::CodeQuality,
                    Severity::Medium,
                    Some(("a.py", 1)),
                );
                i.description = "x".repeat(4000);
                i
            })
            .collect();
        let strategy = strategy();
        let history = [record(1, big)];
        let outcome = Outcome::MaxIterations { best_iteration: 1 };
        let r = RunReport::new(&outcome, &history, &strategy);
        let text = render(&r, &Frame::default());
        assert!(text.len() <= MAX_BYTES, "{}", text.len());
        let log: Value = serde_json::from_str(&text).unwrap();
        let kept = results(&log).len();
        let cut = &log["runs"][0]["properties"]["cut"]["bytes"];
        assert!(kept < 3000 && kept > 2000, "{kept}");
        assert_eq!(cut["results"].as_u64().unwrap() as usize, 3000 - kept);
    }
}
