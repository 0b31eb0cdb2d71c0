//! Recurring issues across iterations: groups the issues of an iteration history into problems
//! (the reviewer's `recurs` marks first, the [`Matcher`] otherwise) and reports those seen in
//! at least `threshold` iterations.

use serde::Serialize;

use super::matcher::{IssueKey, Matcher, Prepared};

/// One issue of one iteration, as the grouping sees it.
#[derive(Debug, Clone, Copy)]
pub struct Occurrence<'a> {
    pub iteration: u32,
    /// The issue's id within its iteration (`Q1`).
    pub id: &'a str,
    pub key: IssueKey<'a>,
    /// The reviewer's mark: `I2.Q1` (iteration 2, issue Q1) or `Q1` (latest earlier iteration).
    pub recurs: Option<&'a str>,
}

/// A problem seen in several iterations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecurringIssue {
    /// The title of its latest occurrence.
    pub title: String,
    /// How many iterations it appeared in.
    pub occurrences: u32,
    pub iterations: Vec<u32>,
    /// Why its occurrences were taken for one problem, one link per later occurrence joined.
    pub links: Vec<Link>,
}

/// One occurrence taken for an earlier one's problem, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// The later occurrence (`I3.Q1`: iteration 3, issue Q1).
    pub issue: String,
    /// The earlier occurrence it repeats.
    pub repeats: String,
    /// `reviewer` (its own `recurs` mark) or `matcher`.
    pub by: &'static str,
    /// The matcher's reason (`both name one failing test`); none for a reviewer's mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for Link {
    /// `I2.Q1 repeats I1.Q3 (matcher: both name one failing test)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reason {
            Some(why) => write!(
                f,
                "{} repeats {} (matcher: {why})",
                self.issue, self.repeats
            ),
            None => write!(
                f,
                "{} repeats {} (the reviewer's `recurs` mark)",
                self.issue, self.repeats
            ),
        }
    }
}

impl Link {
    fn new(later: &Occurrence<'_>, earlier: &Occurrence<'_>, reason: Option<String>) -> Link {
        let name = |o: &Occurrence<'_>| format!("I{}.{}", o.iteration, o.id);
        Link {
            issue: name(later),
            repeats: name(earlier),
            by: if reason.is_some() {
                "matcher"
            } else {
                "reviewer"
            },
            reason,
        }
    }
}

/// Groups the occurrences and returns the problems seen in `threshold` or more iterations, most
/// frequent first.
pub fn find_recurring(
    occurrences: &[Occurrence<'_>],
    matcher: &Matcher,
    threshold: u32,
) -> Vec<RecurringIssue> {
    let n = occurrences.len();
    // Each issue is read once; every pair then compares what was read.
    let prepared: Vec<Prepared<'_>> = occurrences.iter().map(|o| Prepared::new(o.key)).collect();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    // The links that joined two groups, by the later occurrence's index.
    let mut links: Vec<(usize, Link)> = Vec::new();
    for j in 0..n {
        let cur = &occurrences[j];
        // The reviewer's own mark wins when it names a known earlier issue.
        if let Some(target) = cur
            .recurs
            .and_then(|r| resolve_mark(occurrences, cur.iteration, r))
        {
            let (a, b) = (root(&mut parent, target), root(&mut parent, j));
            if a != b {
                links.push((j, Link::new(cur, &occurrences[target], None)));
            }
            parent[b] = a;
            continue;
        }
        for (i, earlier) in occurrences.iter().enumerate() {
            if earlier.iteration >= cur.iteration {
                continue;
            }
            let decision = matcher.decide_prepared(&prepared[i], &prepared[j]);
            if decision.is_same() {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                if a != b {
                    links.push((j, Link::new(cur, earlier, Some(decision.reason()))));
                }
                parent[b] = a;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..n {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    let mut out: Vec<RecurringIssue> = groups
        .into_values()
        .filter_map(|members| {
            let mut iterations: Vec<u32> =
                members.iter().map(|&m| occurrences[m].iteration).collect();
            iterations.sort_unstable();
            iterations.dedup();
            let latest = members.iter().max_by_key(|&&m| occurrences[m].iteration)?;
            (iterations.len() as u32 >= threshold).then(|| RecurringIssue {
                title: occurrences[*latest].key.title.to_string(),
                occurrences: iterations.len() as u32,
                iterations,
                links: links
                    .iter()
                    .filter(|(j, _)| members.contains(j))
                    .map(|(_, l)| l.clone())
                    .collect(),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.occurrences
            .cmp(&a.occurrences)
            .then(a.iterations.cmp(&b.iterations))
    });
    out
}

/// Resolves `I2.Q1` or `Q1` to the index of an occurrence of an earlier iteration.
fn resolve_mark(occurrences: &[Occurrence<'_>], current: u32, mark: &str) -> Option<usize> {
    let mark = mark.trim();
    let (iteration, id) = match mark.split_once('.') {
        Some((it, id)) => (it.trim_start_matches(['I', 'i']).parse::<u32>().ok(), id),
        None => (None, mark),
    };
    occurrences
        .iter()
        .enumerate()
        .filter(|(_, o)| o.iteration < current && o.id.eq_ignore_ascii_case(id))
        .filter(|(_, o)| iteration.is_none_or(|it| o.iteration == it))
        .max_by_key(|(_, o)| o.iteration)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ<'a>(
        iteration: u32,
        id: &'a str,
        title: &'a str,
        recurs: Option<&'a str>,
    ) -> Occurrence<'a> {
        Occurrence {
            iteration,
            id,
            key: IssueKey {
                title,
                kind: None,
                file: Some("src/cart.py"),
                line: Some(10 + iteration),
                file_lines: None,
                description: "",
                fix: "",
            },
            recurs,
        }
    }

    #[test]
    fn a_reworded_issue_in_three_iterations_recurs_three_times() {
        let list = [
            occ(
                1,
                "Q1",
                "Missing validation for negative quantity in add_to_cart",
                None,
            ),
            occ(
                2,
                "Q1",
                "Negative quantity is not validated in add_to_cart",
                None,
            ),
            occ(
                3,
                "Q2",
                "Error: add_to_cart does not validate negative quantity",
                None,
            ),
        ];
        let got = find_recurring(&list, &Matcher::default(), 3);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].iterations, vec![1, 2, 3]);
        assert_eq!(
            got[0].title,
            "Error: add_to_cart does not validate negative quantity"
        );
        // Each later occurrence says which earlier one it repeats, and why.
        let links: Vec<(&str, &str, &str)> = got[0]
            .links
            .iter()
            .map(|l| (l.issue.as_str(), l.repeats.as_str(), l.by))
            .collect();
        assert_eq!(
            links,
            [("I2.Q1", "I1.Q1", "matcher"), ("I3.Q2", "I1.Q1", "matcher")]
        );
        assert!(
            got[0].links[0]
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("similarity")),
            "{:?}",
            got[0].links
        );
    }

    #[test]
    fn three_different_defects_do_not_recur() {
        let list = [
            occ(1, "Q1", "Missing test for empty input in add_to_cart", None),
            occ(
                2,
                "Q1",
                "Missing test for unicode input in add_to_cart",
                None,
            ),
            occ(3, "Q1", "SQL injection in add_to_cart query", None),
        ];
        assert!(find_recurring(&list, &Matcher::default(), 2).is_empty());
    }

    #[test]
    fn reviewer_marks_win_over_the_matcher() {
        // Titles the matcher would call different, marked as the same by the reviewer.
        let list = [
            occ(1, "Q1", "Totals are wrong", None),
            occ(2, "Q3", "Rounding drops a cent", Some("I1.Q1")),
            occ(3, "Q1", "Cent lost in invoice sum", Some("Q3")),
        ];
        let got = find_recurring(&list, &Matcher::default(), 3);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].occurrences, 3);
        let shown: Vec<String> = got[0].links.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "I2.Q3 repeats I1.Q1 (the reviewer's `recurs` mark)",
                "I3.Q1 repeats I2.Q3 (the reviewer's `recurs` mark)"
            ]
        );
        assert!(got[0].links.iter().all(|l| l.reason.is_none()));
        // A mark naming an unknown issue falls back to the matcher.
        let unknown = [
            occ(1, "Q1", "Totals are wrong", None),
            occ(2, "Q1", "Rounding drops a cent", Some("I9.Q9")),
        ];
        assert!(find_recurring(&unknown, &Matcher::default(), 2).is_empty());
    }

    /// Issue 37: a failed gate (no file: "Required gate `unit_tests` failed …") and the
    /// reviewer's located defect, both in three iterations, are two recurring problems — never
    /// joined by words alone; they are one only when the defect names a test the gate failed.
    #[test]
    fn a_gate_failure_and_a_located_defect_are_two_problems_unless_they_name_one_test() {
        let gate = |iteration: u32, failing: &'static str| Occurrence {
            iteration,
            id: "G1",
            key: IssueKey {
                title: "Required gate `unit_tests` failed: `python3 -m pytest -q` exit code 1; 12 tests: 11 passed, 1 failed",
                kind: Some(crate::model::IssueType::UnitTest),
                file: None,
                line: None,
                file_lines: None,
                description: failing,
                fix: "Make the `unit_tests` gate pass",
            },
            recurs: None,
        };
        let defect = |iteration: u32, title: &'static str| Occurrence {
            iteration,
            id: "Q1",
            key: IssueKey {
                title,
                kind: Some(crate::model::IssueType::UnitTest),
                file: Some("src/cart.py"),
                line: Some(40),
                file_lines: Some(120),
                description: "The discount is applied after the tax, so the total is too high.",
                fix: "Apply the discount before the tax.",
            },
            recurs: None,
        };
        let failing =
            "FAILED tests/test_orders.py::test_unit_tests_pass_for_orders - assert 3 == 4";
        let mut list = Vec::new();
        for i in 1..=3 {
            list.push(gate(i, failing));
            list.push(defect(
                i,
                "Unit tests fail: cart total applies the discount after tax",
            ));
        }
        let got = find_recurring(&list, &Matcher::default(), 3);
        assert_eq!(got.len(), 2, "two problems: {got:#?}");
        // The defect names the very test the gate failed on: one problem.
        let failing = "FAILED tests/test_cart.py::test_total_applies_discount - assert 110 == 100";
        let mut list = Vec::new();
        for i in 1..=3 {
            list.push(gate(i, failing));
            list.push(defect(
                i,
                "test_total_applies_discount fails: the discount is applied after tax",
            ));
        }
        let got = find_recurring(&list, &Matcher::default(), 3);
        assert_eq!(got.len(), 1, "one problem: {got:#?}");
    }
}
