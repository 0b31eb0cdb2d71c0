//! Scores the recurring-issue matcher on the labelled pairs in `tests/fixtures/` and prints
//! precision, recall and F1 (`cargo test --test recurring_matcher -- --nocapture`): the first
//! set (`recurring_pairs.json`, tuned on), and twelve sets split by scenario before tuning
//! (`recurring_pairs_split.json`, written by the matcher's author; `recurring_pairs_independent.json`
//! to `recurring_pairs_independent_5.json` and `recurring_pairs_details.json` to
//! `recurring_pairs_details_6.json` — whose issues carry a description and a fix, and in the
//! last three the file's length — each written by four authors who never read the matcher). The weighed decision's weights are fitted on the
//! `tune` parts only, and a test refits them. The established reference rule
//! (SequenceMatcher ≥ 0.8 on `title|file|line`) scores F1 0.31 on the same set
//! (`python3 tests/fixtures/reference_matcher.py`).

use qa_loop::engine::matcher::{Decision, Evidence, IssueKey, Matcher, WEIGHTS, Weights};
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
    /// How many lines the file had (`recurring_pairs_details_4.json` and later).
    #[serde(default)]
    file_lines: Option<u32>,
    /// The reviewer's description and fix (the `details` sets only).
    #[serde(default)]
    description: String,
    #[serde(default)]
    fix: String,
}

#[derive(Deserialize)]
struct Pair {
    comment: String,
    kind: String,
    same: bool,
    a: Side,
    b: Side,
    /// `tune` or `heldout` (the split sets only).
    #[serde(default)]
    split: Option<String>,
}

type Counts = (u32, u32, u32, u32);

/// (TP, FP, FN, TN) of the default matcher on `pairs`, printing the misses: on all pairs, and
/// on the pairs the matcher's judgement decides. SPEC §4 rules that issues in two different
/// files are different issues, so pairs whose issues name different files (known from the
/// paths alone, whatever their label) are decided by that rule, not by the matcher.
fn score<'a>(m: &Matcher, pairs: impl Iterator<Item = &'a Pair>, show: bool) -> (Counts, Counts) {
    let pairs: Vec<&Pair> = pairs.collect();
    let all = score_all(m, pairs.iter().copied(), show);
    let judged = pairs
        .into_iter()
        .filter(|p| m.decide(key(&p.a), key(&p.b)) != Decision::DifferentFile);
    (all, score_all(m, judged, false))
}

fn score_all<'a>(m: &Matcher, pairs: impl Iterator<Item = &'a Pair>, show: bool) -> Counts {
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

fn f1((tp, fp, fn_, _): Counts) -> (f64, f64, f64) {
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let f1 = 2.0 * precision * recall / (precision + recall).max(f64::EPSILON);
    (precision, recall, f1)
}

/// The split sets: the first written by the matcher's author (scenarios split before tuning),
/// the others each by four authors who never read the matcher or the other sets (split by
/// scenario before they were first scored).
const SPLIT_SETS: &[&str] = &[
    "tests/fixtures/recurring_pairs_split.json",
    "tests/fixtures/recurring_pairs_independent.json",
    "tests/fixtures/recurring_pairs_independent_2.json",
    "tests/fixtures/recurring_pairs_independent_3.json",
    "tests/fixtures/recurring_pairs_independent_4.json",
    "tests/fixtures/recurring_pairs_independent_5.json",
    "tests/fixtures/recurring_pairs_details.json",
    "tests/fixtures/recurring_pairs_details_2.json",
    "tests/fixtures/recurring_pairs_details_3.json",
    "tests/fixtures/recurring_pairs_details_4.json",
    "tests/fixtures/recurring_pairs_details_5.json",
    "tests/fixtures/recurring_pairs_details_6.json",
];

fn add(a: Counts, b: Counts) -> Counts {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3)
}

fn report(name: &str, counts: Counts) -> f64 {
    let (p, r, f) = f1(counts);
    println!(
        "recurring matcher, {name}: {} pairs, TP={} FP={} FN={} TN={} precision={p:.3} recall={r:.3} F1={f:.3}",
        counts.0 + counts.1 + counts.2 + counts.3,
        counts.0,
        counts.1,
        counts.2,
        counts.3
    );
    f
}

/// The matcher is tuned on the `tune` parts only; the `heldout` parts (scenarios it never saw,
/// fixed before tuning) measure it. Misses of the tuning parts are printed on request
/// (`QA_LOOP_SHOW_MISSES=1`); the held-out parts' never are.
#[test]
fn matcher_f1_on_held_out_pairs() {
    let show = std::env::var_os("QA_LOOP_SHOW_MISSES").is_some();
    let zero = (0, 0, 0, 0);
    let (mut tune_all, mut tune_judged, mut held_all, mut held_judged) = (zero, zero, zero, zero);
    // The sets whose issues carry a description and a fix, as the loop's do.
    let mut held_details = zero;
    let mut total = 0;
    let m = Matcher::default();
    for path in SPLIT_SETS {
        let pairs = read(path);
        total += pairs.len();
        let part = |name: &'static str| {
            pairs
                .iter()
                .filter(move |p| p.split.as_deref() == Some(name))
        };
        let (tune, tune_j) = score(&m, part("tune"), show);
        let (held, held_j) = score(&m, part("heldout"), false);
        report(&format!("{path}, tune part"), tune);
        report(&format!("{path}, tune part, matcher-judged"), tune_j);
        report(&format!("{path}, heldout part"), held);
        report(&format!("{path}, heldout part, matcher-judged"), held_j);
        tune_all = add(tune_all, tune);
        tune_judged = add(tune_judged, tune_j);
        held_all = add(held_all, held);
        held_judged = add(held_judged, held_j);
        if path.contains("details") {
            held_details = add(held_details, held_j);
        }
    }
    assert!(total >= 300, "the labelled sets need at least 300 pairs");
    report("all tune parts", tune_all);
    report("all tune parts, matcher-judged", tune_judged);
    report(
        "heldout parts with descriptions and fixes, matcher-judged",
        held_details,
    );
    report("all heldout parts", held_all);
    // How the fitted weights meet authors they never saw: each independently written set scored
    // (both parts) with weights fitted on the other sets' tune parts only.
    let mut unseen = zero;
    for path in &SPLIT_SETS[1..] {
        let m = Matcher {
            weights: Weights::fit(&tune_samples(Some(path)), PENALTY),
            ..Matcher::default()
        };
        let (_, judged) = score(&m, read(path).iter(), false);
        unseen = add(unseen, judged);
    }
    report(
        "independent sets, weights fitted without their authors, matcher-judged",
        unseen,
    );
    let held_f1 = report("all heldout parts, matcher-judged", held_judged);
    assert!(
        held_f1 >= HELD_OUT_FLOOR,
        "held-out F1 {held_f1:.3} is below {HELD_OUT_FLOOR}"
    );
}

/// Issue 22's target: F1 0.9 on all held-out parts, matcher-judged pairs (0.903 with line
/// distances scaled by file length and descriptions read against the identifier and
/// kind-of-defect rules; 0.898 when the sixth details set joined, before either). The
/// independently written parts differ (0.85-0.93); sets whose authors have no tune part at all
/// scored 0.864 and 0.853 when new (`recurring_pairs_details_5.json`,
/// `recurring_pairs_details_6.json`, both parts, before their tune parts were used). Never tune
/// or fit on a held-out part.
const HELD_OUT_FLOOR: f64 = 0.90;

/// The L2 penalty of the fit (scikit-learn's `C = 1`).
const PENALTY: f64 = 1.0;

/// The weighed decision's weights are fitted on the `tune` parts only: this refits them from
/// those pairs and fails when the weights in `src/engine/matcher.rs` are not what the fit gives
/// (printing the weights to paste). A held-out pair never reaches the fit.
#[test]
fn weights_are_fitted_on_the_tune_parts_only() {
    let samples = tune_samples(None);
    let fitted = Weights::fit(&samples, PENALTY);
    let literal: Vec<String> = fitted.w.iter().map(|w| format!("{w:.4}")).collect();
    println!(
        "weights fitted on {} tune pairs that reach the weighed decision: [{}]",
        samples.len(),
        literal.join(", ")
    );
    for (i, (have, want)) in WEIGHTS.w.iter().zip(fitted.w).enumerate() {
        assert!(
            (have - want).abs() < 1e-3,
            "weight {i} is {have}, the fit on the tune parts gives {want:.4}"
        );
    }
}

fn read(path: &str) -> Vec<Pair> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The evidence of every `tune` pair (but those of the set `except`) that reaches the weighed
/// decision, with its label: what the weights are fitted on.
fn tune_samples(except: Option<&str>) -> Vec<(Evidence, bool)> {
    let m = Matcher::default();
    let mut samples = Vec::new();
    for path in SPLIT_SETS.iter().filter(|p| Some(**p) != except) {
        for p in read(path)
            .iter()
            .filter(|p| p.split.as_deref() == Some("tune"))
        {
            if let Some(w) = m.decide(key(&p.a), key(&p.b)).weighed() {
                samples.push((w.evidence, p.same));
            }
        }
    }
    samples
}

fn key(s: &Side) -> IssueKey<'_> {
    IssueKey {
        title: &s.title,
        kind: IssueType::parse_lenient(&s.kind),
        file: s.file.as_deref(),
        line: s.line,
        file_lines: s.file_lines,
        description: &s.description,
        fix: &s.fix,
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
