//! Scores the recurring-issue matcher on the labelled pairs in
//! `tests/fixtures/recurring_pairs.json` and prints precision, recall and F1
//! (`cargo test --test recurring_matcher -- --nocapture`). The established reference rule
//! (SequenceMatcher ≥ 0.8 on `title|file|line`) scores F1 0.31 on the same set
//! (`python3 tests/fixtures/reference_matcher.py`).

use qa_loop::engine::matcher::{IssueKey, Matcher};
use qa_loop::model::IssueType;
use serde::Deserialize;

#[derive(Deserialize)]
struct Side {
    title: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<u32>,
}

#[derive(Deserialize)]
struct Pair {
    comment: String,
    kind: String,
    same: bool,
    a: Side,
    b: Side,
    /// `tune` or `heldout` (recurring_pairs_split.json only).
    #[serde(default)]
    split: Option<String>,
}

/// (TP, FP, FN, TN) of the default matcher on `pairs`, printing the misses.
fn score<'a>(pairs: impl Iterator<Item = &'a Pair>, show: bool) -> (u32, u32, u32, u32) {
    let m = Matcher::default();
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for p in pairs {
        let d = m.decide(key(&p.a), key(&p.b));
        match (d.is_same(), p.same) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => tn += 1,
        }
        if show && d.is_same() != p.same {
            println!(
                "MISS [{}] want same={} got {:?}\n   a: {}\n   b: {}\n   ({})",
                p.kind, p.same, d, p.a.title, p.b.title, p.comment
            );
        }
    }
    (tp, fp, fn_, tn)
}

fn f1((tp, fp, fn_, _): (u32, u32, u32, u32)) -> (f64, f64, f64) {
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let f1 = 2.0 * precision * recall / (precision + recall).max(f64::EPSILON);
    (precision, recall, f1)
}

/// The matcher is tuned on the `tune` part only; the `heldout` part (scenarios it never saw,
/// fixed by `scripts/gen-recurring-pairs.py` before tuning) measures it. Misses of the tuning
/// part are printed; the held-out part's are not looked at while tuning.
#[test]
fn matcher_f1_on_held_out_pairs() {
    let text = std::fs::read_to_string("tests/fixtures/recurring_pairs_split.json").unwrap();
    let pairs: Vec<Pair> = serde_json::from_str(&text).unwrap();
    assert!(
        pairs.len() >= 300,
        "the labelled set needs at least 300 pairs"
    );
    let part = |name: &'static str| {
        pairs
            .iter()
            .filter(move |p| p.split.as_deref() == Some(name))
    };
    let tune = score(
        part("tune"),
        std::env::var_os("QA_LOOP_SHOW_MISSES").is_some(),
    );
    let held = score(part("heldout"), false);
    for (name, counts) in [("tune", tune), ("heldout", held)] {
        let (p, r, f) = f1(counts);
        println!(
            "recurring matcher, {name} part: {} pairs, TP={} FP={} FN={} TN={} precision={p:.3} recall={r:.3} F1={f:.3}",
            counts.0 + counts.1 + counts.2 + counts.3,
            counts.0,
            counts.1,
            counts.2,
            counts.3
        );
    }
    let (_, _, held_f1) = f1(held);
    // Issue 22's target is 0.9 on the held-out part; the matcher reaches 0.873 today (its
    // recall on unseen wordings is the gap). This floor keeps what was reached from slipping;
    // raise it as the matcher improves, never tune on the held-out part.
    assert!(
        held_f1 >= HELD_OUT_FLOOR,
        "held-out F1 {held_f1:.3} is below {HELD_OUT_FLOOR}"
    );
}

/// The held-out F1 reached (0.873), rounded down.
const HELD_OUT_FLOOR: f64 = 0.87;

fn key(s: &Side) -> IssueKey<'_> {
    IssueKey {
        title: &s.title,
        kind: IssueType::parse_lenient(&s.kind),
        file: s.file.as_deref(),
        line: s.line,
    }
}

#[test]
fn matcher_f1_on_labelled_pairs() {
    let text = std::fs::read_to_string("tests/fixtures/recurring_pairs.json").unwrap();
    let pairs: Vec<Pair> = serde_json::from_str(&text).unwrap();
    assert!(
        pairs.len() >= 40,
        "the labelled set needs at least 40 pairs"
    );
    let m = Matcher::default();
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for p in &pairs {
        let d = m.decide(key(&p.a), key(&p.b));
        match (d.is_same(), p.same) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => tn += 1,
        }
        if d.is_same() != p.same {
            println!(
                "MISS [{}] want same={} got {:?}\n   a: {}\n   b: {}\n   ({})",
                p.kind, p.same, d, p.a.title, p.b.title, p.comment
            );
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let f1 = 2.0 * precision * recall / (precision + recall).max(f64::EPSILON);
    println!(
        "recurring matcher on {} labelled pairs: TP={tp} FP={fp} FN={fn_} TN={tn} precision={precision:.3} recall={recall:.3} F1={f1:.3}",
        pairs.len()
    );
    assert!(f1 >= 0.9, "F1 {f1:.3} is below 0.9");
}
