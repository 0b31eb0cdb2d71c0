//! The check run's content, decided without I/O: the conclusion of an outcome, the annotations of
//! the issues (lines the change touches first, batches of 50, a cap with the overflow counted),
//! and output texts cut by bytes to GitHub's 65 535 limit with a pointer to the full report.

use serde_json::{Value, json};

use crate::engine::Outcome;
use crate::model::{Issue, Severity};
use crate::vcs::AddedLines;

/// Annotations per request (GitHub's limit).
pub const BATCH: usize = 50;
/// Annotations sent per run at most (8 requests): with the check's creation, the comment's
/// read and write, a run stays within 11 requests; the rest are counted in the summary.
pub const MAX_ANNOTATIONS: usize = 400;
/// `output.summary` and `output.text` limit, in bytes.
pub const TEXT_LIMIT: usize = 65_535;

pub use crate::config::settings::ErrorConclusion;

/// SPEC §7: success, failure, action_required (escalated / awaiting sign-off), and the chosen
/// conclusion for errors.
pub fn conclusion(outcome: &Outcome, on_error: ErrorConclusion) -> &'static str {
    match outcome {
        Outcome::Approved { .. } => "success",
        Outcome::Rejected { .. } | Outcome::MaxIterations { .. } => "failure",
        Outcome::Escalated { .. } => "action_required",
        Outcome::Errors { .. } => match on_error {
            ErrorConclusion::Failure => "failure",
            ErrorConclusion::Neutral => "neutral",
        },
    }
}

/// The annotations of `issues` with a file and line, those on lines the change added (or near
/// them, within 3 lines) first, then the rest of the changed files, then others; each group in
/// severity order. Returns the annotations (at most [`MAX_ANNOTATIONS`]) and how many were left
/// out. The findings set `apart` (suggestions below the `fix_severity` bar, pre-existing
/// issues) are notices after the rest.
pub fn annotations(issues: &[Issue], apart: &[Issue], added: &AddedLines) -> (Vec<Value>, usize) {
    let mut located: Vec<(u8, u8, &Issue)> = issues
        .iter()
        .chain(apart)
        .filter(|i| i.file.is_some() && i.line.is_some())
        .map(|i| {
            let file = i.file.as_deref().unwrap_or_default();
            let line = i.line.unwrap_or(1);
            let rank = match added.get(file) {
                _ if !blocks(i, issues) => 3,
                Some(lines) if lines.near(line, 3) => 0,
                Some(_) => 1,
                None => 2,
            };
            (rank, severity_rank(i.severity), i)
        })
        .collect();
    located.sort_by_key(|(rank, sev, _)| (*rank, *sev));
    let overflow = located.len().saturating_sub(MAX_ANNOTATIONS);
    let out = located
        .into_iter()
        .take(MAX_ANNOTATIONS)
        .map(|(_, _, i)| annotation(i, blocks(i, issues)))
        .collect();
    (out, overflow)
}

/// Whether `i` is one of `issues` (the blocking ones), by identity.
fn blocks(i: &Issue, issues: &[Issue]) -> bool {
    issues.iter().any(|b| std::ptr::eq(b, i))
}

fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Critical => 0,
        Severity::High => 1,
        Severity::Medium => 2,
        Severity::Low => 3,
    }
}

fn annotation(i: &Issue, blocking: bool) -> Value {
    let line = i.line.unwrap_or(1).max(1);
    let level = match i.severity {
        _ if !blocking => "notice",
        Severity::Critical | Severity::High => "failure",
        Severity::Medium => "warning",
        Severity::Low => "notice",
    };
    let apart = match (blocking, i.introduced) {
        (true, _) => "",
        (false, false) => "pre-existing: ",
        (false, true) => "suggestion: ",
    };
    let mut message = if i.description.is_empty() {
        i.title.clone()
    } else {
        i.description.clone()
    };
    if !i.fix.is_empty() {
        message.push_str(&format!("\n\nFix: {}", i.fix));
    }
    json!({
        "path": i.file.as_deref().unwrap_or_default().trim_start_matches("./"),
        "start_line": line,
        "end_line": line,
        "annotation_level": level,
        "title": crate::text::prefix(&format!("{apart}{} [{}] {}", i.id, i.kind, i.title), 255),
        // GitHub limits a message to 64 KB.
        "message": crate::github::actions::cut(&message, 60_000, "the report"),
    })
}

/// A check-run `output` object; `summary` and `text` cut to [`TEXT_LIMIT`] bytes with a
/// pointer to `full_report`.
pub fn output(
    title: &str,
    summary: &str,
    text: &str,
    annotations: &[Value],
    full_report: &str,
) -> Value {
    let mut out = json!({
        "title": crate::text::prefix(title, 255),
        "summary": crate::github::actions::cut(summary, TEXT_LIMIT, full_report),
    });
    if !text.is_empty() {
        out["text"] = json!(crate::github::actions::cut(text, TEXT_LIMIT, full_report));
    }
    if !annotations.is_empty() {
        out["annotations"] = json!(annotations);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IssueType;

    fn issue(id: &str, file: Option<&str>, line: Option<u32>, severity: Severity) -> Issue {
        Issue {
            id: id.into(),
            title: format!("problem {id}"),
            kind: IssueType::CodeQuality,
            severity,
            file: file.map(str::to_string),
            line,
            file_lines: None,
            description: String::new(),
            fix: "do it".into(),
            recurs: None,
            introduced: true,
            fingerprint: None,
        }
    }

    #[test]
    fn conclusions_follow_the_spec() {
        use crate::engine::state::ErrorStop;
        assert_eq!(
            conclusion(
                &Outcome::Approved { iteration: 1 },
                ErrorConclusion::Failure
            ),
            "success"
        );
        assert_eq!(
            conclusion(
                &Outcome::MaxIterations { best_iteration: 2 },
                ErrorConclusion::Failure
            ),
            "failure"
        );
        let err = Outcome::Errors {
            stop: ErrorStop::Budget {
                what: "tokens".into(),
            },
            best_iteration: None,
        };
        assert_eq!(conclusion(&err, ErrorConclusion::Failure), "failure");
        assert_eq!(conclusion(&err, ErrorConclusion::Neutral), "neutral");
    }

    #[test]
    fn changed_lines_come_first_and_the_overflow_is_counted() {
        let mut added = AddedLines::new();
        added.insert("src/a.py".into(), vec![(10, "x".into())].into());
        let issues = vec![
            issue("Q1", Some("src/other.py"), Some(5), Severity::Critical),
            issue("Q2", Some("src/a.py"), Some(40), Severity::High),
            issue("Q3", Some("src/a.py"), Some(12), Severity::Low),
            issue("Q4", None, None, Severity::Critical),
            issue("Q5", Some("src/a.py"), None, Severity::Critical),
        ];
        let (a, overflow) = annotations(&issues, &[], &added);
        let order: Vec<&str> = a
            .iter()
            .map(|v| &v["title"].as_str().unwrap()[..2])
            .collect();
        assert_eq!(order, ["Q3", "Q2", "Q1"]);
        assert_eq!(overflow, 0);
        assert_eq!(a[0]["annotation_level"], "notice");
        assert_eq!(a[1]["annotation_level"], "failure");
        assert_eq!(a[0]["message"], "problem Q3\n\nFix: do it");
        let many: Vec<Issue> = (0..620)
            .map(|n| {
                issue(
                    &format!("Q{n}"),
                    Some("b.py"),
                    Some(n + 1),
                    Severity::Medium,
                )
            })
            .collect();
        let (a, overflow) = annotations(&many, &[], &added);
        assert_eq!((a.len(), overflow), (MAX_ANNOTATIONS, 220));
        assert_eq!(a.chunks(BATCH).count(), 8);
    }

    #[test]
    fn output_texts_are_cut_by_bytes() {
        let long = "ü".repeat(40_000); // 80 000 bytes
        let o = output("t", &long, &long, &[], "qa_report.md in the artifacts");
        assert!(o["summary"].as_str().unwrap().len() <= TEXT_LIMIT);
        assert!(
            o["text"]
                .as_str()
                .unwrap()
                .ends_with("qa_report.md in the artifacts\n")
        );
        assert!(o.get("annotations").is_none());
    }
}
