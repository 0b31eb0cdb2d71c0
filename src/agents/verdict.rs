//! Reading the reviewer's verdict (SPEC §5.3): the `submit_verdict` arguments, or text holding
//! the JSON object (bare or fenced), or the markdown form (`### QC VERDICT: PASS|FAIL`,
//! `### SCORE:`, `### FEEDBACK:`, `### ISSUES FOUND:`, `### REQUIRED FIXES:`). `decision:
//! PASS|REWORK|FAIL` is accepted for `status`. Errors name the field, for the repair request.

use serde_json::Value;

use crate::model::{CriterionResult, Issue, IssueType, ReviewStatus, Severity, Verdict};

/// Parses a verdict from tool-call arguments.
pub fn from_value(value: &Value) -> Result<Verdict, String> {
    let value = match value {
        // Some models send the arguments as a JSON string, or wrap them as {"verdict": {...}}.
        Value::String(s) => {
            &serde_json::from_str::<Value>(s).map_err(|e| format!("arguments are not JSON: {e}"))?
        }
        v => v,
    };
    let obj = value
        .as_object()
        .ok_or("the verdict must be a JSON object")?;
    if let Some(inner) = obj.get("verdict").filter(|v| v.is_object()) {
        return from_value(inner);
    }
    let status = match (obj.get("status"), obj.get("decision")) {
        (Some(v), _) => parse_status(v.as_str().ok_or("`status` must be a string")?)?,
        (None, Some(v)) => parse_status(v.as_str().ok_or("`decision` must be a string")?)?,
        (None, None) => return Err("`status` is missing (\"approved\" or \"rejected\")".into()),
    };
    let score = match obj.get("score") {
        None | Some(Value::Null) => default_score(status),
        Some(v) => {
            let f = v.as_f64().ok_or("`score` must be a number from 0 to 100")?;
            if !(0.0..=100.0).contains(&f) {
                return Err(format!("`score` must be from 0 to 100, got {f}"));
            }
            f.round() as u8
        }
    };
    let confidence = match obj.get("confidence") {
        None | Some(Value::Null) => 0.5,
        Some(v) => {
            let f = v
                .as_f64()
                .ok_or("`confidence` must be a number from 0 to 1")?;
            // Some models answer in percent.
            let f = if f > 1.0 && f <= 100.0 { f / 100.0 } else { f };
            if !(0.0..=1.0).contains(&f) {
                return Err(format!("`confidence` must be from 0 to 1, got {f}"));
            }
            f
        }
    };
    let summary = str_field(obj.get("summary")).unwrap_or_default();
    let criteria = match obj.get("criteria") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, c)| parse_criterion(i, c))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`criteria` must be an array".into()),
    };
    let issues = match obj.get("issues") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| parse_issue(i, v))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`issues` must be an array".into()),
    };
    Ok(Verdict {
        status,
        score,
        confidence,
        summary,
        criteria,
        issues,
        manual_test_plan: str_field(obj.get("manual_test_plan")).filter(|p| !p.trim().is_empty()),
        reviewed_head: None,
    })
}

fn default_score(status: ReviewStatus) -> u8 {
    match status {
        ReviewStatus::Approved => 90,
        ReviewStatus::Rejected => 40,
    }
}

fn parse_status(s: &str) -> Result<ReviewStatus, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "approved" | "approve" | "pass" | "passed" => Ok(ReviewStatus::Approved),
        "rejected" | "reject" | "fail" | "failed" | "rework" | "changes_requested" => {
            Ok(ReviewStatus::Rejected)
        }
        other => Err(format!(
            "`status` must be \"approved\" or \"rejected\", got \"{other}\""
        )),
    }
}

fn str_field(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn parse_criterion(i: usize, v: &Value) -> Result<CriterionResult, String> {
    let o = v
        .as_object()
        .ok_or(format!("criteria[{i}] must be an object"))?;
    let criterion =
        str_field(o.get("criterion")).ok_or(format!("criteria[{i}].criterion is missing"))?;
    let met = o
        .get("met")
        .and_then(Value::as_bool)
        .ok_or(format!("criteria[{i}].met must be true or false"))?;
    Ok(CriterionResult {
        criterion,
        met,
        evidence: str_field(o.get("evidence")).unwrap_or_default(),
    })
}

fn parse_issue(i: usize, v: &Value) -> Result<Issue, String> {
    let o = v
        .as_object()
        .ok_or(format!("issues[{i}] must be an object"))?;
    let title = str_field(o.get("title"))
        .filter(|t| !t.is_empty())
        .ok_or(format!("issues[{i}].title is missing"))?;
    let kind = match str_field(o.get("type")) {
        Some(t) => IssueType::parse_lenient(&t).ok_or(format!(
            "issues[{i}].type \"{t}\" is not one of acceptance_criteria, unit_test, integration_test, e2e_test, coverage, code_quality, error_handling, security, performance"
        ))?,
        None => IssueType::CodeQuality,
    };
    let severity = match str_field(o.get("severity")) {
        Some(s) => Severity::parse_lenient(&s).ok_or(format!(
            "issues[{i}].severity \"{s}\" is not one of critical, high, medium, low"
        ))?,
        None => Severity::Medium,
    };
    let line = match o.get("line") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|&n| n > 0)
            .map(|n| n.min(u32::MAX as u64) as u32),
        Some(Value::String(s)) => s.trim().parse::<u32>().ok().filter(|&n| n > 0),
        Some(_) => return Err(format!("issues[{i}].line must be a positive integer")),
    };
    let introduced = match o.get("introduced") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => true,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => false,
        Some(_) => return Err(format!("issues[{i}].introduced must be true or false")),
    };
    Ok(Issue {
        id: str_field(o.get("id"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("Q{}", i + 1)),
        title,
        kind,
        severity,
        file: str_field(o.get("file")).filter(|s| !s.is_empty()),
        line,
        file_lines: None,
        description: str_field(o.get("description")).unwrap_or_default(),
        fix: str_field(o.get("fix")).unwrap_or_default(),
        recurs: str_field(o.get("recurs")).filter(|s| !s.is_empty()),
        introduced,
        fingerprint: None,
    })
}

/// Parses a verdict from the model's text answer.
pub fn from_text(text: &str) -> Result<Verdict, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the answer was empty".into());
    }
    if let Some(v) = json_candidates(trimmed)
        .into_iter()
        .find_map(|c| serde_json::from_str::<Value>(c).ok())
    {
        return from_value(&v);
    }
    if trimmed.to_ascii_uppercase().contains("### QC VERDICT") {
        return from_markdown(trimmed);
    }
    if let Some(status) = decision_line(trimmed) {
        return Ok(Verdict {
            status,
            score: default_score(status),
            confidence: 0.5,
            summary: trimmed
                .lines()
                .filter(|l| decision_of(l).is_none())
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string(),
            criteria: Vec::new(),
            issues: Vec::new(),
            manual_test_plan: None,
            reviewed_head: None,
        });
    }
    Err("no verdict found: call submit_verdict, or answer with the verdict JSON object".into())
}

/// Fenced ```json blocks first, then the outermost `{…}` of the text.
pub(crate) fn json_candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                out.push(body[..end].trim());
                rest = &body[end + 3..];
            }
            None => break,
        }
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}'))
        && a < b
    {
        out.push(&text[a..=b]);
    }
    out
}

fn decision_of(line: &str) -> Option<ReviewStatus> {
    let l = line
        .trim()
        .trim_start_matches(['*', '#', '-', ' '])
        .to_ascii_lowercase();
    let rest = l
        .strip_prefix("decision")?
        .trim_start_matches(['*', ' '])
        .strip_prefix(':')?;
    match rest.trim().trim_matches('*').trim() {
        "pass" => Some(ReviewStatus::Approved),
        "rework" | "fail" => Some(ReviewStatus::Rejected),
        _ => None,
    }
}

fn decision_line(text: &str) -> Option<ReviewStatus> {
    text.lines().find_map(decision_of)
}

/// The markdown form: sections introduced by `### NAME:` headings.
fn from_markdown(text: &str) -> Result<Verdict, String> {
    let mut status = None;
    let mut score = None;
    let mut section = String::new();
    let mut feedback = Vec::new();
    let mut found: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix("###") {
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            section = name.trim().to_ascii_uppercase();
            let value = value.trim().trim_matches('*').trim();
            match section.as_str() {
                "QC VERDICT" => {
                    status = Some(match value.to_ascii_uppercase().as_str() {
                        "PASS" | "PASSED" | "APPROVED" => ReviewStatus::Approved,
                        "FAIL" | "FAILED" | "REJECTED" | "REWORK" => ReviewStatus::Rejected,
                        other => {
                            return Err(format!(
                                "### QC VERDICT must be PASS or FAIL, got \"{other}\""
                            ));
                        }
                    })
                }
                "SCORE" => {
                    let num: String = value
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || *c == '.')
                        .collect();
                    let f: f64 = num
                        .parse()
                        .map_err(|_| format!("### SCORE must be a number, got \"{value}\""))?;
                    if !(0.0..=100.0).contains(&f) {
                        return Err(format!("### SCORE must be from 0 to 100, got {f}"));
                    }
                    score = Some(f.round() as u8);
                }
                _ if !value.is_empty() => feedback.push(value.to_string()),
                _ => {}
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        let item = t.trim_start_matches(['-', '*', '+', ' ']).trim();
        let item = item
            .split_once(". ")
            .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
            .map_or(item, |(_, r)| r);
        match section.as_str() {
            "ISSUES FOUND" | "ISSUES" => found.push(item.to_string()),
            "REQUIRED FIXES" | "FIXES" => fixes.push(item.to_string()),
            _ => feedback.push(t.to_string()),
        }
    }
    let status = status.ok_or("### QC VERDICT is missing")?;
    let issues = found
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.eq_ignore_ascii_case("none"))
        .map(|(i, title)| Issue {
            id: format!("Q{}", i + 1),
            title: title.clone(),
            kind: IssueType::CodeQuality,
            severity: Severity::Medium,
            file: None,
            line: None,
            file_lines: None,
            description: String::new(),
            fix: fixes.get(i).cloned().unwrap_or_default(),
            recurs: None,
            introduced: true,
            fingerprint: None,
        })
        .collect();
    Ok(Verdict {
        status,
        score: score.unwrap_or(default_score(status)),
        confidence: 0.5,
        summary: feedback.join("\n"),
        criteria: Vec::new(),
        issues,
        manual_test_plan: None,
        reviewed_head: None,
    })
}

/// Which judged entry answers each of the `expected` criteria (in order): the same text
/// (ignoring case, spacing, quotes and a leading number such as `2.` or `C2:`), one text
/// containing the other, or a bare reference to its number (`2`, `#2`).
fn match_criteria(judged: &[CriterionResult], expected: &[String]) -> Vec<Option<usize>> {
    let judged_keys: Vec<String> = judged.iter().map(|c| criterion_key(&c.criterion)).collect();
    let mut taken = vec![false; judged.len()];
    let mut out = Vec::with_capacity(expected.len());
    for (i, text) in expected.iter().enumerate() {
        let key = criterion_key(text);
        let number = (i + 1).to_string();
        let by = |ok: &dyn Fn(&str, &str) -> bool| {
            judged_keys
                .iter()
                .enumerate()
                .position(|(j, k)| !taken[j] && ok(k, judged[j].criterion.trim()))
        };
        let found = by(&|k, _| *k == key)
            .or_else(|| by(&|_, raw| reference(raw) == Some(number.as_str())))
            .or_else(|| {
                by(&|k, _| {
                    k.len() >= 12 && key.len() >= 12 && (k.contains(&key) || key.contains(k))
                })
            });
        if let Some(j) = found {
            taken[j] = true;
        }
        out.push(found);
    }
    out
}

/// A criterion's text for comparison: lower case, words only, without a leading number.
fn criterion_key(text: &str) -> String {
    let t = text.trim().to_lowercase();
    let t = t
        .strip_prefix("criterion")
        .map(str::trim_start)
        .unwrap_or(&t);
    let t = t.trim_start_matches(['#', 'c']);
    let t = t.trim_start_matches(|c: char| c.is_ascii_digit());
    let t = t.trim_start_matches(['.', ')', ':', '-']);
    t.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `2`, `#2`, `C2`, `criterion 2` → `2`.
fn reference(raw: &str) -> Option<&str> {
    let r = raw.trim().trim_start_matches("criterion").trim();
    let r = r
        .trim_start_matches(['#', 'C', 'c'])
        .trim_end_matches(['.', ':', ')']);
    (!r.is_empty() && r.chars().all(|c| c.is_ascii_digit())).then_some(r)
}

/// The `expected` criteria (1-based numbers and texts) the verdict does not judge.
pub fn missing_criteria<'a>(v: &Verdict, expected: &'a [String]) -> Vec<(usize, &'a str)> {
    match_criteria(&v.criteria, expected)
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_none())
        .map(|(i, _)| (i + 1, expected[i].as_str()))
        .collect()
}

/// What is said of a criterion the reviewer did not judge.
pub const NOT_JUDGED: &str = "not judged: the reviewer's verdict did not address this criterion";

/// The verdict's criteria as the merged list, in its order and with its texts: each with the
/// reviewer's judgement, or not met ([`NOT_JUDGED`]) when the reviewer left it out; entries of
/// the reviewer's own follow (when no criteria were given they are all there is).
pub fn complete_criteria(v: &mut Verdict, expected: &[String]) {
    if expected.is_empty() {
        return;
    }
    let matches = match_criteria(&v.criteria, expected);
    let mut used = vec![false; v.criteria.len()];
    let mut out: Vec<CriterionResult> = Vec::new();
    for (text, m) in expected.iter().zip(&matches) {
        out.push(match m {
            Some(j) => {
                used[*j] = true;
                CriterionResult {
                    criterion: text.clone(),
                    ..v.criteria[*j].clone()
                }
            }
            None => CriterionResult {
                criterion: text.clone(),
                met: false,
                evidence: NOT_JUDGED.into(),
            },
        });
    }
    out.extend(
        v.criteria
            .iter()
            .zip(used)
            .filter(|(_, u)| !u)
            .map(|(c, _)| c.clone()),
    );
    v.criteria = out;
}

/// The one follow-up asked of a reviewer whose verdict left criteria out.
pub fn missing_criteria_request(missing: &[(usize, &str)]) -> String {
    let list: Vec<String> = missing.iter().map(|(n, t)| format!("{n}. {t}")).collect();
    format!(
        "Your verdict does not judge these acceptance criteria:\n{}\n\nA criterion left out counts as not met. Call `submit_verdict` again with the whole verdict: one `criteria` entry for every acceptance criterion, its text copied as given, `met` and concrete `evidence`.",
        list.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepted_forms() {
        let full = json!({"status": "rejected", "score": 35, "confidence": 0.8, "summary": "s",
            "criteria": [{"criterion": "c", "met": false, "evidence": "e"}],
            "issues": [{"id": "Q1", "title": "t", "type": "unit_test", "severity": "high", "file": "a.py", "line": 3, "fix": "f", "recurs": "I1.Q2"}]});
        let v = from_value(&full).unwrap();
        assert_eq!(
            (
                v.status,
                v.score,
                v.issues[0].line,
                v.issues[0].recurs.as_deref()
            ),
            (ReviewStatus::Rejected, 35, Some(3), Some("I1.Q2"))
        );

        let cases: &[(&str, &str, ReviewStatus)] = &[
            (
                "bare JSON",
                r#"{"status": "approved", "score": 91, "summary": "ok", "issues": []}"#,
                ReviewStatus::Approved,
            ),
            (
                "fenced JSON with prose",
                "Here is my verdict:\n```json\n{\"status\": \"rejected\", \"score\": 20, \"summary\": \"x\", \"issues\": []}\n```\nThanks",
                ReviewStatus::Rejected,
            ),
            (
                "decision field",
                r#"{"decision": "REWORK", "score": 50}"#,
                ReviewStatus::Rejected,
            ),
            (
                "decision line",
                "Decision: PASS\nAll good.",
                ReviewStatus::Approved,
            ),
            (
                "markdown",
                "### QC VERDICT: FAIL\n### SCORE: 45\n### FEEDBACK:\nNot yet.\n### ISSUES FOUND:\n1. Empty input crashes\n### REQUIRED FIXES:\n1. Guard empty input in parse()\n",
                ReviewStatus::Rejected,
            ),
        ];
        for (comment, text, want) in cases {
            let v = from_text(text).unwrap_or_else(|e| panic!("{comment}: {e}"));
            assert_eq!(v.status, *want, "{comment}");
        }
        let md = from_text(cases[4].1).unwrap();
        assert_eq!((md.score, md.issues.len()), (45, 1));
        assert_eq!(md.issues[0].fix, "Guard empty input in parse()");
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"score": 3}), "`status` is missing"),
            (json!({"status": "maybe"}), "\"maybe\""),
            (
                json!({"status": "approved", "score": 140}),
                "`score` must be from 0 to 100",
            ),
            (
                json!({"status": "rejected", "issues": [{"title": "t", "type": "style"}]}),
                "issues[0].type \"style\"",
            ),
            (
                json!({"status": "rejected", "issues": [{"type": "unit_test"}]}),
                "issues[0].title is missing",
            ),
            (json!([1, 2]), "must be a JSON object"),
        ];
        for (value, want) in cases {
            let err = from_value(&value).unwrap_err();
            assert!(err.contains(want), "{value}: {err}");
        }
        assert!(from_text("I think it is fine").is_err());
        assert!(
            from_text("### QC VERDICT: MAYBE")
                .unwrap_err()
                .contains("PASS or FAIL")
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Arbitrary JSON values, nested.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,20}".prop_map(Value::String),
            prop::sample::select(vec![
                "approved",
                "rejected",
                "PASS",
                "FAIL",
                "unit_test",
                "high",
                "Q1"
            ])
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "status",
                            "score",
                            "confidence",
                            "summary",
                            "criteria",
                            "issues",
                            "id",
                            "title",
                            "type",
                            "severity",
                            "file",
                            "line",
                            "fix",
                            "recurs",
                            "met",
                            "criterion",
                            "evidence",
                            "manual_test_plan",
                            "other",
                        ]),
                        inner
                    ),
                    0..8
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    /// Text around verdict-looking pieces: fences, headings, JSON, decision lines.
    fn verdict_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            ".{0,40}",
            Just("```json\n".to_string()),
            Just("```\n".to_string()),
            Just("### QC VERDICT: PASS\n".to_string()),
            Just("### QC VERDICT: FAIL\n".to_string()),
            Just("### SCORE: 101\n".to_string()),
            Just("### ISSUES FOUND:\n- [high] x (a.py:3)\n".to_string()),
            Just("### REQUIRED FIXES:\n1. do it\n".to_string()),
            Just("decision: REWORK\n".to_string()),
            Just("{\"status\": \"approved\", \"score\": 90}".to_string()),
            Just("{\"status\": \"rejected\", \"issues\": [{\"title\": ".to_string()),
            Just("}".to_string()),
            Just("é✓\u{0}".to_string()),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary text never panics the parser: it is a verdict or an error, and a verdict
        /// always carries a valid score.
        #[test]
        fn arbitrary_text_is_a_verdict_or_an_error(text in ".{0,400}") {
            if let Ok(v) = from_text(&text) {
                prop_assert!(v.score <= 100);
            }
        }

        #[test]
        fn verdict_shaped_text_is_a_verdict_or_an_error(text in verdict_text()) {
            if let Ok(v) = from_text(&text) {
                prop_assert!(v.score <= 100);
            }
        }

        #[test]
        fn arbitrary_json_is_a_verdict_or_an_error(value in json_value()) {
            if let Ok(v) = from_value(&value) {
                prop_assert!(v.score <= 100);
                prop_assert!((0.0..=1.0).contains(&v.confidence));
            }
        }
    }

    /// Issue 18: a reviewer returning `criteria: []` approved a change with two criteria.
    #[test]
    fn every_expected_criterion_is_matched_or_marked_not_judged() {
        let expected: Vec<String> = vec![
            "`slugify` lowercases the title".into(),
            "Separators collapse to one dash".into(),
            "`truncate` adds a marker".into(),
        ];
        let judged = |c: &str, met: bool| CriterionResult {
            criterion: c.into(),
            met,
            evidence: "e".into(),
        };
        let mut v = from_value(&serde_json::json!({"status": "approved", "score": 90,
            "criteria": [], "issues": []}))
        .unwrap();
        v.criteria = vec![
            judged("2. separators collapse to one dash.", true),
            judged("#3", true),
            judged("An extra point of the reviewer's", true),
        ];
        assert_eq!(
            missing_criteria(&v, &expected),
            vec![(1, expected[0].as_str())]
        );
        complete_criteria(&mut v, &expected);
        let got: Vec<(&str, bool)> = v
            .criteria
            .iter()
            .map(|c| (c.criterion.as_str(), c.met))
            .collect();
        assert_eq!(
            got,
            [
                ("`slugify` lowercases the title", false),
                ("Separators collapse to one dash", true),
                ("`truncate` adds a marker", true),
                ("An extra point of the reviewer's", true),
            ]
        );
        assert_eq!(v.criteria[0].evidence, NOT_JUDGED);
        assert!(missing_criteria_request(&[(1, "A")]).contains("1. A"));
    }
}
