//! Findings teams can live with (SPEC §3.1 `fix_severity`, §5.3 `introduced`): the severity bar
//! below which an issue is a suggestion, the check of a claim that an issue was there before the
//! change, and a stable fingerprint per finding — the same problem keeps one fingerprint across
//! iterations and runs, decided by the recurring-issue matcher (what the problem is, where it
//! is), never by its wording alone.

use sha2::{Digest, Sha256};

use super::matcher::{IssueKey, Matcher, Prepared};
use crate::model::{Issue, Severity};
use crate::vcs::AddedLines;

/// Whether `issue` is below the bar `fix_severity` (`low` < `medium` < `high` < `critical`):
/// reported as a suggestion, never fixed, never blocking.
pub fn below_bar(issue: &Issue, bar: Severity) -> bool {
    // `Severity` orders from critical (least) to low (greatest).
    issue.severity > bar
}

/// Whether a claim that `issue` was there before the change holds: it names a file and a line,
/// the change's diff was read, and that line is not one the change adds (a line of a file the
/// change adds is added). `Err` says why the claim does not hold.
pub fn pre_existing_claim(issue: &Issue, added: Option<&AddedLines>) -> Result<(), String> {
    let (Some(file), Some(line)) = (issue.file.as_deref(), issue.line) else {
        return Err("a claim of \"pre-existing\" without a file and line cannot be checked".into());
    };
    let Some(added) = added else {
        return Err("the change's diff could not be read".into());
    };
    if added.get(file).is_some_and(|f| f.contains(line)) {
        return Err(format!("{file}:{line} is a line the change adds"));
    }
    Ok(())
}

/// Gives each of `new` a fingerprint: the one of the latest `earlier` finding of the same type
/// the matcher says is the same problem, else a fresh one from its type, file and title. A
/// finding of another type is another finding (a docstring nit beside a wrong result is not the
/// wrong result, whatever the matcher makes of the place). Two findings of one iteration never
/// share a fingerprint.
pub fn assign(new: &mut [&mut Issue], earlier: &[&Issue], matcher: &Matcher) {
    let known: Vec<(Prepared<'_>, &str, crate::model::IssueType)> = earlier
        .iter()
        .rev()
        .filter_map(|i| {
            let fp = i.fingerprint.as_deref()?;
            Some((Prepared::new(IssueKey::from(*i)), fp, i.kind))
        })
        .collect();
    let mut taken: Vec<String> = Vec::new();
    for issue in new.iter_mut() {
        let this = Prepared::new(IssueKey::from(&**issue));
        let inherited = known
            .iter()
            .filter(|(_, fp, kind)| *kind == issue.kind && !taken.iter().any(|t| t == fp))
            .find(|(k, ..)| matcher.decide_prepared(&this, k).is_same())
            .map(|(_, fp, _)| fp.to_string());
        let mut fp = inherited.unwrap_or_else(|| fresh(issue));
        let mut n = 1;
        while taken.contains(&fp) {
            n += 1;
            fp = format!("{}-{n}", fresh(issue));
        }
        taken.push(fp.clone());
        issue.fingerprint = Some(fp);
    }
}

/// A new finding's fingerprint: 16 hex digits of SHA-256 over its type, file and title in
/// lower case with runs of whitespace collapsed (never its line, which moves).
fn fresh(issue: &Issue) -> String {
    let title = issue
        .title
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut h = Sha256::new();
    h.update(issue.kind.as_str().as_bytes());
    h.update([0]);
    h.update(issue.file.as_deref().unwrap_or_default().as_bytes());
    h.update([0]);
    h.update(title.as_bytes());
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IssueType;

    fn issue(title: &str, file: &str, line: u32, severity: Severity) -> Issue {
        Issue {
            id: "Q1".into(),
            title: title.into(),
            kind: IssueType::ErrorHandling,
            severity,
            file: Some(file.into()),
            line: Some(line),
            file_lines: None,
            description: String::new(),
            fix: String::new(),
            recurs: None,
            introduced: true,
            fingerprint: None,
        }
    }

    #[test]
    fn the_bar_keeps_what_is_at_or_above_it() {
        let low = issue("t", "a.py", 1, Severity::Low);
        let high = issue("t", "a.py", 1, Severity::High);
        assert!(!below_bar(&low, Severity::Low));
        assert!(below_bar(&low, Severity::Medium));
        assert!(!below_bar(&high, Severity::High));
        assert!(below_bar(&high, Severity::Critical));
    }

    #[test]
    fn a_pre_existing_claim_holds_only_off_the_added_lines() {
        let mut added = AddedLines::new();
        added.insert("a.py".into(), vec![(3, String::new())].into());
        let old = issue("t", "a.py", 10, Severity::High);
        assert_eq!(pre_existing_claim(&old, Some(&added)), Ok(()));
        let new = issue("t", "a.py", 3, Severity::High);
        assert!(
            pre_existing_claim(&new, Some(&added))
                .unwrap_err()
                .contains("adds")
        );
        assert!(pre_existing_claim(&old, None).is_err());
        let mut nowhere = old.clone();
        nowhere.line = None;
        assert!(pre_existing_claim(&nowhere, Some(&added)).is_err());
    }

    /// The same problem reworded and moved keeps its fingerprint; another problem gets its own;
    /// two findings of one iteration never share one.
    #[test]
    fn fingerprints_follow_the_problem_not_the_words() {
        let matcher = Matcher::new(0.8);
        let mut first = issue(
            "SQL injection: the query is built with an f-string",
            "app/db.py",
            44,
            Severity::High,
        );
        assign(&mut [&mut first], &[], &matcher);
        let fp = first.fingerprint.clone().unwrap();
        assert_eq!(fp.len(), 16);
        let mut again = issue(
            "SQL injection in the user query (f-string)",
            "app/db.py",
            46,
            Severity::High,
        );
        let mut other = issue(
            "Division by zero when the cart is empty",
            "app/cart.py",
            12,
            Severity::High,
        );
        let mut twin = again.clone();
        assign(
            &mut [&mut again, &mut other, &mut twin],
            &[&first],
            &matcher,
        );
        assert_eq!(again.fingerprint.as_deref(), Some(fp.as_str()));
        assert_ne!(other.fingerprint.as_deref(), Some(fp.as_str()));
        assert_ne!(twin.fingerprint, again.fingerprint);
        // Another type at the same place is another finding (the matcher alone joins these two:
        // same function, neighbouring lines).
        let mut bug = issue(
            "add() subtracts instead of adding",
            "calc.py",
            2,
            Severity::High,
        );
        bug.kind = IssueType::UnitTest;
        assign(&mut [&mut bug], &[], &matcher);
        let mut nit = issue("add has no docstring", "calc.py", 1, Severity::Low);
        nit.kind = IssueType::CodeQuality;
        assign(&mut [&mut nit], &[&bug], &matcher);
        assert_ne!(nit.fingerprint, bug.fingerprint);
        // Stable: the same new finding gets the same fresh fingerprint in another run.
        let mut once_more = other.clone();
        once_more.fingerprint = None;
        assign(&mut [&mut once_more], &[], &matcher);
        assert_eq!(once_more.fingerprint, other.fingerprint);
    }
}
