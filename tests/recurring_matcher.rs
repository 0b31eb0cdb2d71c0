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
}

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
