//! The recurring-issue matcher: decides, deterministically, whether an issue of a later
//! iteration is the same problem as an earlier one.
//!
//! The reference rule of earlier QA-loop tooling (`SequenceMatcher(title|file|line) ≥ 0.8`)
//! scores how alike two strings *look*: it misses rewordings and merges near-misses that differ
//! in one decisive word. This matcher combines five signals instead:
//!
//! 1. **File**: two issues naming different files are different problems.
//! 2. **Identifiers** (`parse_duration`, `getDisplayName`, `orders.created_at`): when both titles
//!    name code identifiers and share none, they are about different code — unless one issue's
//!    description or fix names the other title's code (a failing test named on one side, the
//!    mechanism on the other). Likewise two different kinds of defect are two problems unless
//!    one issue's description or fix names the other's kind (a cause and its effect).
//! 3. **Substitution**: titles identical but for one slot of one or two words (`empty` vs
//!    `unicode` input, `negative` vs `zero` amount) name a different case of the same check.
//! 4. **Opposite symptoms** (`accepts`/`rejects`, `too short`/`too long`, `first`/`last`) are
//!    different defects.
//! 5. **Weighed evidence**, when no structural rule (these and others below) told the two
//!    apart: the similarity of the titles' defect words (normalised content words, light
//!    stemming, identifiers split into sub-words) and of title, description and fix together,
//!    each measured against a bar, and where the two sit in one file, weighed by a logistic
//!    model into the likelihood that they are one problem (joined at 0.5 or more).
//!
//! Line distances are scaled by the file's length when both issues carry it (`file_lines`,
//! counted by qa-loop when the review raised the issue): the earlier line is carried to the same
//! share of the later file, so code a fix inserted above an issue does not push it apart from
//! its restatement ([`line_distance`]).
//!
//! The bar starts at the configured similarity threshold (default 0.8), drops by 0.1 when a file
//! is missing on one side, and in one file by 0.35 with lines more than 30 apart, 0.5 without
//! lines and 0.65 for lines within 30 of each other, and moves with the kinds of defect and
//! issue types; identifiers both titles name are location, not defect words, and do not count
//! towards similarity. A higher threshold raises the bar and so lowers every likelihood. The
//! model's [`WEIGHTS`] are fitted on the `tune` parts of the labelled pairs in
//! `tests/fixtures/recurring_pairs*.json` only and measured on their `heldout` parts;
//! `tests/recurring_matcher.rs` refits the weights (failing when they differ from these) and
//! prints the figures.

use std::collections::HashSet;

use crate::model::{Issue, IssueType};

/// The fields of an issue the matcher looks at (issues in a plan's history may lack some).
#[derive(Debug, Clone, Copy)]
pub struct IssueKey<'a> {
    pub title: &'a str,
    pub kind: Option<IssueType>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    /// How many lines the file had when the issue was raised, when known.
    pub file_lines: Option<u32>,
    /// What the reviewer wrote beside the title (`description`, `fix`); empty when unknown.
    pub description: &'a str,
    pub fix: &'a str,
}

impl IssueKey<'_> {
    /// Whether the reviewer described the issue: a fix alone (`Add tests`, `validate it`) is
    /// too often the same few words for different defects.
    fn has_detail(&self) -> bool {
        !self.description.trim().is_empty()
    }

    /// Title, description and fix as one text.
    fn whole(&self) -> String {
        format!("{}. {} {}", self.title, self.description, self.fix)
    }
}

impl<'a> From<&'a Issue> for IssueKey<'a> {
    fn from(issue: &'a Issue) -> Self {
        IssueKey {
            title: &issue.title,
            kind: Some(issue.kind),
            file: issue.file.as_deref(),
            line: issue.line,
            file_lines: issue.file_lines,
            description: &issue.description,
            fix: &issue.fix,
        }
    }
}

/// Why two issues were judged the same or different (for reports and debugging).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// No structural rule told the two apart, and the weighed evidence says one problem.
    Same(Weighed),
    /// Both titles name one test and say it fails (or a failed gate's text names the test a
    /// located defect names).
    SameFailingTest,
    /// A failed gate's own issue (no file) and a located defect that names none of the gate's
    /// failing tests: never one problem by words alone.
    GateAndDefect,
    /// Both name one specific kind of defect (a CWE, a lint rule) in one file.
    SameKindInFile(&'static str),
    DifferentFile,
    DifferentIdentifiers,
    Substitution,
    OppositeSymptoms,
    /// One endpoint, another HTTP status (`500 instead of 404` vs `400 instead of 404`).
    DifferentStatus,
    /// The same file, lines too far apart for a fix to have moved one to the other, and no
    /// code identifier in common: two occurrences of one kind of defect.
    FarApart,
    /// Both name a kind of defect (CWE, linter rule) and the kinds differ.
    DifferentConcepts,
    /// No defect word in common, in the titles nor in the descriptions.
    NothingInCommon,
    /// No structural rule told the two apart, and the weighed evidence says two problems.
    Dissimilar(Weighed),
}

/// What one file adds to the location bonus (see [`location_bonus`]).
const SAME_FILE: f64 = 0.25;

/// Lines further apart than this in one file are different places (a fix moves code by less).
pub const FAR_LINES: u32 = 200;
/// Lines this close in one file are one place, whatever identifiers each title names.
const SAME_PLACE_LINES: u32 = 10;
/// How much a shared specific defect concept lowers the similarity bar (files unknown).
const CONCEPT_BONUS: f64 = 0.3;
/// How much a kind of defect named on one side only raises it.
const ONE_SIDED_CONCEPT: f64 = 0.1;
/// How much a shared broad concept (input validation) lowers it.
const BROAD_CONCEPT_BONUS: f64 = 0.1;

impl Decision {
    pub fn is_same(&self) -> bool {
        matches!(
            self,
            Decision::Same(_) | Decision::SameFailingTest | Decision::SameKindInFile(_)
        )
    }

    /// The weighed evidence, when no structural rule decided.
    pub fn weighed(&self) -> Option<&Weighed> {
        match self {
            Decision::Same(w) | Decision::Dissimilar(w) => Some(w),
            _ => None,
        }
    }

    /// Why, in words a user can check against the two titles.
    pub fn reason(&self) -> String {
        match self {
            Decision::Same(w) | Decision::Dissimilar(w) => w.reason(),
            Decision::SameFailingTest => "both name one failing test".to_string(),
            Decision::SameKindInFile(kind) => {
                format!("both name one kind of defect ({kind}) in one file")
            }
            Decision::DifferentFile => "different files".to_string(),
            Decision::GateAndDefect => {
                "a failed gate and a located defect naming none of its tests".to_string()
            }
            Decision::DifferentIdentifiers => "different code identifiers or endpoints".to_string(),
            Decision::Substitution => "another case or requirement of one subject".to_string(),
            Decision::OppositeSymptoms => "opposite symptoms".to_string(),
            Decision::DifferentStatus => "different HTTP statuses".to_string(),
            Decision::FarApart => format!("more than {FAR_LINES} lines apart in one file"),
            Decision::DifferentConcepts => "different kinds of defect".to_string(),
            Decision::NothingInCommon => {
                "no defect word in common (titles, descriptions and fixes)".to_string()
            }
        }
    }
}

/// The matcher, parameterised by the similarity threshold (`--similarity-threshold`) and the
/// weights of its weighed decision ([`WEIGHTS`]; others only to measure how fitting generalises).
#[derive(Debug, Clone, Copy)]
pub struct Matcher {
    pub threshold: f64,
    pub weights: Weights,
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher::new(crate::config::settings::defaults::SIMILARITY_THRESHOLD)
    }
}

impl Matcher {
    pub fn new(threshold: f64) -> Self {
        Matcher {
            threshold,
            weights: WEIGHTS,
        }
    }

    /// Whether `a` and `b` are the same problem.
    pub fn same(&self, a: IssueKey<'_>, b: IssueKey<'_>) -> bool {
        self.decide(a, b).is_same()
    }

    /// The decision with its reason.
    pub fn decide(&self, a: IssueKey<'_>, b: IssueKey<'_>) -> Decision {
        self.decide_prepared(&Prepared::new(a), &Prepared::new(b))
    }

    /// The decision on two issues prepared once each (comparing every issue with every earlier
    /// one reads each title once, not once per pair): the structural rules in order, the first
    /// that decides wins; else the weighed evidence.
    pub fn decide_prepared(&self, pa: &Prepared<'_>, pb: &Prepared<'_>) -> Decision {
        let file_relation = file_relation(pa.key.file, pb.key.file);
        if file_relation == FileRelation::Different {
            return Decision::DifferentFile;
        }
        let pair = Pair::new(pa, pb, file_relation);
        let structural = pair
            .gate_and_defect()
            .or_else(|| pair.different_code())
            .or_else(|| pair.different_quoted_tests())
            .or_else(|| pair.another_requirement())
            .or_else(|| pair.different_endpoints())
            .or_else(|| pair.same_failing_test())
            .or_else(|| pair.substituted_case())
            .or_else(|| pair.opposite_symptoms())
            .or_else(|| pair.different_statuses())
            .or_else(|| pair.far_apart());
        if let Some(decision) = structural {
            return decision;
        }
        let kinds = Kinds::of(&pair);
        pair.different_concepts(&kinds)
            .or_else(|| pair.same_kind_in_file(&kinds))
            .unwrap_or_else(|| self.weigh(&pair, &kinds))
    }

    /// The weighed evidence, once no structural rule told the two apart: the defect words in
    /// common against a bar set by where the two sit and the kinds of defect they name.
    fn weigh(&self, pair: &Pair<'_>, kinds: &Kinds) -> Decision {
        let (pa, pb) = (pair.a, pair.b);
        let (a, b) = (pa.key, pb.key);
        let mut similarity = pa.title.defect_similarity(&pb.title);
        let place = Place::of(pair.file_relation, pair.distance);
        let mut bar = self.threshold - location_bonus(place);
        if kinds.specific.0 != kinds.specific.1 {
            // One names a kind of defect, the other does not name it.
            bar += ONE_SIDED_CONCEPT;
        }
        if kinds.decisive {
            // The kind counts as a word both titles share.
            similarity = (similarity + 1.0) / 2.0;
            bar -= CONCEPT_BONUS;
        } else if !kinds.shared.is_empty() {
            bar -= BROAD_CONCEPT_BONUS;
        }
        match (a.kind, b.kind) {
            (Some(x), Some(y)) if x != y && x.family() != y.family() => bar += 0.1,
            _ => {}
        }
        // Titles are short; the reviewer's description and fix say more of the same defect in
        // more words, when both issues are described.
        let detail = match (pa.whole(), pb.whole()) {
            (Some(wa), Some(wb)) => Some(wa.defect_similarity(wb)),
            _ => None,
        };
        // No defect word in common in the titles, nor in the descriptions when there are any:
        // nothing but the place, which many problems share.
        if similarity == 0.0 && detail.is_none_or(|d| d == 0.0) {
            return Decision::NothingInCommon;
        }
        let evidence = Evidence {
            similarity,
            detail,
            bar,
            place,
            scaled: pair.distance.is_some() && scaled_by_length(&a, &b),
        };
        let weighed = Weighed {
            evidence,
            likelihood: self.weights.likelihood(&evidence),
        };
        if weighed.likelihood >= 0.5 {
            Decision::Same(weighed)
        } else {
            Decision::Dissimilar(weighed)
        }
    }
}

/// Two prepared issues in files that may be one, with what several rules read of them.
struct Pair<'p> {
    a: &'p Prepared<'p>,
    b: &'p Prepared<'p>,
    file_relation: FileRelation,
    /// How far apart their lines are ([`line_distance`]).
    distance: Option<u32>,
    /// Whether either is a test issue or in a test file.
    in_tests: bool,
    /// Whether both titles name the same wrong status for the same expected one.
    same_statuses: bool,
}

impl<'p> Pair<'p> {
    /// The pair of `a` and `b`, whose files are in `file_relation`.
    fn new(a: &'p Prepared<'p>, b: &'p Prepared<'p>, file_relation: FileRelation) -> Self {
        Pair {
            a,
            b,
            file_relation,
            distance: line_distance(&a.key, &b.key),
            in_tests: a.in_tests || b.in_tests,
            // The same wrong status for the same expected one (`200 instead of 201` / `should
            // return 201, still 200`) names the defect as precisely as a kind of defect does, in
            // whatever words and order the rest of the title comes.
            same_statuses: a.statuses_named >= 2 && a.roles == b.roles,
        }
    }

    /// A failed gate's own issue ("Required gate `unit_tests` failed: …", no file) against a
    /// located defect: one problem only when the gate's text (its summary and failure lines)
    /// names a test the defect names; otherwise two, whatever words they share.
    fn gate_and_defect(&self) -> Option<Decision> {
        let (gate, defect) = match (self.a.gate, self.b.gate) {
            (true, false) => (self.a, self.b),
            (false, true) => (self.b, self.a),
            _ => return None,
        };
        defect.key.file?;
        let text = gate.key.whole().to_lowercase();
        let named = named_tests(&defect.title, defect.in_tests)
            .iter()
            .any(|t| text.contains(&t.to_lowercase()));
        Some(if named {
            Decision::SameFailingTest
        } else {
            Decision::GateAndDefect
        })
    }

    /// Different code: both titles name code identifiers, none related, and neither issue
    /// names the other's code in its description or fix.
    fn different_code(&self) -> Option<Decision> {
        let (pa, pb) = (self.a, self.b);
        let (ia, ib) = (&pa.code, &pb.code);
        // Within a few lines of one file, a method and a call in it are one place (two tests
        // are two tests, however close).
        let same_place = !self.in_tests
            && self.file_relation == FileRelation::Same
            && self.distance.is_some_and(|d| d <= SAME_PLACE_LINES);
        (!same_place
            && !ia.is_empty()
            && !ib.is_empty()
            && !any_related(ia, ib)
            // A restatement may name other code in its title (the failing test, the mechanism)
            // and the earlier issue's code in its description or fix.
            && !pb.names_in_detail(ia)
            && !pa.names_in_detail(ib))
        .then_some(Decision::DifferentIdentifiers)
    }

    /// Different tests: test runners name tests by quoted strings (`it('applies a valid
    /// coupon')`): two tests quoted by name, none in common (nor one inside the other, as a
    /// quoted message and a word quoted in it), are two tests.
    fn different_quoted_tests(&self) -> Option<Decision> {
        if !self.in_tests {
            return None;
        }
        let (qa, qb) = (&self.a.quoted, &self.b.quoted);
        let overlap = |x: &String| {
            qb.iter()
                .any(|y| x.contains(y.as_str()) || y.contains(x.as_str()))
        };
        (!qa.is_empty() && !qb.is_empty() && !qa.iter().any(overlap))
            .then_some(Decision::DifferentIdentifiers)
    }

    /// Another requirement: the titles differ in the requirement they name (unless they name
    /// the same statuses), or name different acceptance criteria.
    fn another_requirement(&self) -> Option<Decision> {
        let (na, nb) = (&self.a.criteria, &self.b.criteria);
        (!self.same_statuses && different_requirement(&self.a.title, &self.b.title)
            || !na.is_empty() && !nb.is_empty() && na != nb)
            .then_some(Decision::Substitution)
    }

    /// Different endpoints named in the two titles.
    fn different_endpoints(&self) -> Option<Decision> {
        match (&self.a.endpoint, &self.b.endpoint) {
            (Some(x), Some(y)) if x != y => Some(Decision::DifferentIdentifiers),
            _ => None,
        }
    }

    /// Both titles name one test and say it fails.
    fn same_failing_test(&self) -> Option<Decision> {
        same_failing_test(&self.a.title, &self.b.title, self.in_tests)
            .then_some(Decision::SameFailingTest)
    }

    /// Titles identical but for one slot: another case of the same check (unless they name the
    /// same statuses).
    fn substituted_case(&self) -> Option<Decision> {
        (!self.same_statuses && is_substitution(&self.a.title.sequence, &self.b.title.sequence))
            .then_some(Decision::Substitution)
    }

    /// Opposite symptoms (`accepts` / `rejects`).
    fn opposite_symptoms(&self) -> Option<Decision> {
        opposite_symptoms(&self.a.title.content, &self.b.title.content)
            .then_some(Decision::OppositeSymptoms)
    }

    /// Another status in the same role is another defect (`returns 500` / `returns 400`); one
    /// title naming only a status the other names too (`500 instead of 400` / `should return
    /// 400`) is not, nor is the status answered on one side and the one expected on the other
    /// (`returns 500` / `should return 409`).
    fn different_statuses(&self) -> Option<Decision> {
        let (roles_a, roles_b) = (&self.a.roles, &self.b.roles);
        let within = |x: &[u16], y: &[u16]| x.iter().all(|c| y.contains(c));
        let clash =
            |x: &[u16], y: &[u16]| !x.is_empty() && !y.is_empty() && !within(x, y) && !within(y, x);
        (clash(&roles_a.0, &roles_b.0) || clash(&roles_a.1, &roles_b.1))
            .then_some(Decision::DifferentStatus)
    }

    /// Lines more than [`FAR_LINES`] apart in one file, and no identifier in common.
    fn far_apart(&self) -> Option<Decision> {
        let shares_identifier = any_related(&self.a.title.identifiers, &self.b.title.identifiers);
        match (self.file_relation, self.distance) {
            (FileRelation::Same, Some(d)) if d > FAR_LINES && !shares_identifier => {
                Some(Decision::FarApart)
            }
            _ => None,
        }
    }

    /// Different kinds of defect: both titles name a specific kind, none shared or related,
    /// and neither issue's description or fix names the other's.
    fn different_concepts(&self, kinds: &Kinds) -> Option<Decision> {
        let (pa, pb) = (self.a, self.b);
        let (ca, cb) = (&pa.concepts, &pb.concepts);
        (kinds.specific.0
            && kinds.specific.1
            && !kinds.decisive
            && !super::concepts::related(ca, cb)
            // The cause named on one side, its effect on the other, and the cause in the
            // other's description or fix: one defect.
            && !pb.concepts_in_detail(ca)
            && !pa.concepts_in_detail(cb))
        .then_some(Decision::DifferentConcepts)
    }

    /// One specific kind of defect in one file is one problem.
    fn same_kind_in_file(&self, kinds: &Kinds) -> Option<Decision> {
        if self.file_relation != FileRelation::Same {
            return None;
        }
        let kind = kinds.shared.iter().find(|c| super::concepts::decisive(c))?;
        Some(Decision::SameKindInFile(kind))
    }
}

/// The kinds of defect (concepts) the two titles of a pair name.
struct Kinds {
    /// The kinds both name.
    shared: Vec<&'static str>,
    /// Whether they name the defect alike precisely: the same statuses, or a specific kind.
    decisive: bool,
    /// Whether each names a specific kind of defect.
    specific: (bool, bool),
}

impl Kinds {
    /// The kinds of defect the titles of `pair` name, shared and each.
    fn of(pair: &Pair<'_>) -> Self {
        let (ca, cb) = (&pair.a.concepts, &pair.b.concepts);
        let shared: Vec<&'static str> = ca.iter().filter(|c| cb.contains(c)).copied().collect();
        let decisive = pair.same_statuses || shared.iter().any(|c| super::concepts::decisive(c));
        let specific = |cs: &[&str]| cs.iter().any(|c| super::concepts::decisive(c));
        Kinds {
            shared,
            decisive,
            specific: (specific(ca), specific(cb)),
        }
    }
}

/// Where two issues of one problem-to-be sit relative to each other, as the weighed decision
/// reads it (issues in two different files never get that far).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A file is missing on one side.
    FileUnknown,
    /// One file, a line missing on one side.
    SameFile,
    /// One file, lines at most 10 apart.
    Within10,
    /// One file, lines 11 to 30 apart.
    Within30,
    /// One file, lines further apart (more than [`FAR_LINES`] only when the titles share an
    /// identifier).
    Beyond30,
}

impl Place {
    pub const ALL: [Place; 5] = [
        Place::FileUnknown,
        Place::SameFile,
        Place::Within10,
        Place::Within30,
        Place::Beyond30,
    ];

    /// Where two issues sit, from how their files relate and how far apart their lines are
    /// ([`line_distance`]).
    fn of(file: FileRelation, distance: Option<u32>) -> Place {
        match (file, distance) {
            (FileRelation::Same, Some(d)) if d <= SAME_PLACE_LINES => Place::Within10,
            (FileRelation::Same, Some(d)) if d <= 30 => Place::Within30,
            (FileRelation::Same, Some(_)) => Place::Beyond30,
            (FileRelation::Same, None) => Place::SameFile,
            _ => Place::FileUnknown,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Place::FileUnknown => "no file on one side",
            Place::SameFile => "one file",
            Place::Within10 => "one file, within 10 lines",
            Place::Within30 => "one file, within 30 lines",
            Place::Beyond30 => "one file, more than 30 lines apart",
        }
    }
}

/// What the weighed decision reads, once no structural rule has told two issues apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    /// Similarity of the titles' defect words (a shared kind of defect counts as a shared word).
    pub similarity: f64,
    /// The same of title, description and fix together, when both issues are described.
    pub detail: Option<f64>,
    /// The similarity threshold after location, kinds of defect and issue types.
    pub bar: f64,
    pub place: Place,
    /// Whether the lines' distance was scaled by the file's length ([`line_distance`]).
    pub scaled: bool,
}

impl Evidence {
    /// The inputs of the logistic model, in the order of [`Weights::w`]: title and detail
    /// similarity each measured against the bar, whether both are described, the place (one
    /// input per place but the first, which is the reference), and a constant.
    pub fn inputs(&self) -> [f64; INPUTS] {
        let mut x = [0.0; INPUTS];
        x[0] = self.similarity - self.bar;
        if let Some(d) = self.detail {
            x[1] = d - self.bar;
            x[2] = 1.0;
        }
        if let Some(i) = Place::ALL.iter().position(|p| *p == self.place)
            && i > 0
        {
            x[2 + i] = 1.0;
        }
        x[INPUTS - 1] = 1.0;
        x
    }
}

/// How many inputs [`Evidence::inputs`] gives: two similarities, described, four places, a
/// constant.
pub const INPUTS: usize = 8;

/// The weighed decision: how likely two issues are one problem, from [`Evidence`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weighed {
    pub evidence: Evidence,
    pub likelihood: f64,
}

impl Weighed {
    /// `title similarity 0.45, with description and fix 0.38, against a bar of 0.15; one file,
    /// within 10 lines: one problem at 0.81`.
    fn reason(&self) -> String {
        let e = &self.evidence;
        let detail = e
            .detail
            .map(|d| format!(", with description and fix {d:.2}"))
            .unwrap_or_default();
        let verdict = if self.likelihood >= 0.5 {
            "one problem"
        } else {
            "two problems"
        };
        format!(
            "title similarity {:.2}{detail}, against a bar of {:.2} (after location and kind of defect); {}{}: {verdict} at {:.2}",
            e.similarity,
            e.bar,
            e.place.describe(),
            if e.scaled {
                " (lines scaled by the file's length)"
            } else {
                ""
            },
            if self.likelihood >= 0.5 {
                self.likelihood
            } else {
                1.0 - self.likelihood
            }
        )
    }
}

/// The weights of a logistic model over [`Evidence::inputs`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub w: [f64; INPUTS],
}

/// Fitted on the `tune` parts of the labelled sets only (never a `heldout` part), by
/// [`Weights::fit`]; `tests/recurring_matcher.rs` refits them and fails when these differ.
pub const WEIGHTS: Weights = Weights {
    w: [
        1.3992, 2.8538, -0.2765, 0.0090, -1.0603, -3.2360, -2.7507, 2.7745,
    ],
};

impl Weights {
    pub fn likelihood(&self, evidence: &Evidence) -> f64 {
        let x = evidence.inputs();
        let z: f64 = self.w.iter().zip(x).map(|(w, x)| w * x).sum();
        1.0 / (1.0 + (-z).exp())
    }

    /// A logistic regression with an L2 penalty of `lambda` on every weight but the constant,
    /// by Newton's method (deterministic: the same samples give the same weights).
    pub fn fit(samples: &[(Evidence, bool)], lambda: f64) -> Weights {
        let mut w = [0.0; INPUTS];
        for _ in 0..100 {
            let mut grad = [0.0; INPUTS];
            let mut hess = [[0.0; INPUTS]; INPUTS];
            for (i, g) in grad.iter_mut().enumerate().take(INPUTS - 1) {
                *g = lambda * w[i];
                hess[i][i] = lambda;
            }
            for (e, same) in samples {
                let x = e.inputs();
                let z: f64 = w.iter().zip(x).map(|(w, x)| w * x).sum();
                let p = 1.0 / (1.0 + (-z).exp());
                let y = if *same { 1.0 } else { 0.0 };
                for i in 0..INPUTS {
                    grad[i] += (p - y) * x[i];
                    for j in 0..INPUTS {
                        hess[i][j] += p * (1.0 - p) * x[i] * x[j];
                    }
                }
            }
            let step = solve(hess, grad);
            let mut largest: f64 = 0.0;
            for i in 0..INPUTS {
                w[i] -= step[i];
                largest = largest.max(step[i].abs());
            }
            if largest < 1e-10 {
                break;
            }
        }
        Weights { w }
    }
}

/// `a x = b` by Gaussian elimination with partial pivoting (`a` is a positive definite Hessian
/// plus a penalty; an input no sample sets keeps a zero column but for the penalty, and the
/// constant's column is never zero).
fn solve(mut a: [[f64; INPUTS]; INPUTS], mut b: [f64; INPUTS]) -> [f64; INPUTS] {
    for col in 0..INPUTS {
        let pivot = (col..INPUTS)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        if a[col][col].abs() < 1e-12 {
            continue;
        }
        let pivot_row = a[col];
        for row in col + 1..INPUTS {
            let f = a[row][col] / pivot_row[col];
            for (cell, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *cell -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; INPUTS];
    for row in (0..INPUTS).rev() {
        if a[row][row].abs() < 1e-12 {
            continue;
        }
        let rest: f64 = (row + 1..INPUTS).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    x
}

/// One issue with everything the matcher reads from it alone, computed once.
pub struct Prepared<'a> {
    key: IssueKey<'a>,
    title: Title,
    /// The code its title names: library calls that name the defect (`console.log`,
    /// `checked_mul`, `after_commit`) say nothing about which code it is in; nor does a class
    /// or module named on one side (`PaymentService`) against one of its members on the other
    /// (`ChargeAsync`).
    code: HashSet<String>,
    /// A test issue, or an issue in a test file.
    in_tests: bool,
    /// A failed gate's own issue (`Required gate … failed: …`).
    gate: bool,
    quoted: Vec<String>,
    /// Statuses answered and expected.
    roles: (Vec<u16>, Vec<u16>),
    /// How many statuses the title names (each mention).
    statuses_named: usize,
    criteria: Vec<u32>,
    endpoint: Option<String>,
    concepts: Vec<&'static str>,
    /// Title, description and fix read together, when the issue is described (built when
    /// first needed).
    whole: std::cell::OnceCell<Option<Title>>,
    /// The kinds of defect title, description and fix name together (built when first needed).
    detail_concepts: std::cell::OnceCell<Vec<&'static str>>,
}

impl<'a> Prepared<'a> {
    pub fn new(key: IssueKey<'a>) -> Self {
        let title = Title::new(key.title, key.file);
        let code = title
            .identifiers
            .iter()
            .filter(|i| !super::concepts::is_mark(i) && !is_container(i))
            .cloned()
            .collect();
        Prepared {
            key,
            code,
            title,
            in_tests: matches!(
                key.kind,
                Some(IssueType::UnitTest | IssueType::IntegrationTest | IssueType::E2eTest)
            ) || key.file.is_some_and(is_test_file),
            gate: key.file.is_none() && crate::model::is_gate_failure_title(key.title),
            quoted: quoted(key.title),
            roles: super::concepts::status_roles(key.title),
            statuses_named: super::concepts::status_codes(key.title).len(),
            criteria: criterion_numbers(key.title),
            endpoint: endpoint(key.title),
            concepts: super::concepts::of(key.title),
            whole: std::cell::OnceCell::new(),
            detail_concepts: std::cell::OnceCell::new(),
        }
    }

    /// Whether the reviewer's description or fix of this issue names one of `code`.
    fn names_in_detail(&self, code: &HashSet<String>) -> bool {
        self.whole()
            .is_some_and(|w| any_related(code, &w.identifiers))
    }

    /// Whether the reviewer's description or fix of this issue names a kind of defect of
    /// `kinds` (one of the specific ones).
    fn concepts_in_detail(&self, kinds: &[&'static str]) -> bool {
        let detail = self.detail_concepts.get_or_init(|| {
            if self.key.has_detail() {
                super::concepts::of(&self.key.whole())
            } else {
                Vec::new()
            }
        });
        kinds
            .iter()
            .any(|k| super::concepts::decisive(k) && detail.contains(k))
    }

    fn whole(&self) -> Option<&Title> {
        self.whole
            .get_or_init(|| {
                self.key
                    .has_detail()
                    .then(|| Title::new(&self.key.whole(), self.key.file))
            })
            .as_ref()
    }
}

/// How far apart the lines of two issues of one file are, scaled by the file's length when the
/// length is known on both sides: the first issue's line (the earlier one, as the loop and
/// `status` compare them) is carried to the same share of the second's file (a fix that grew
/// the file moves what follows its change down). Line 1,920 of 2,912 and
/// line 1,976 of 2,968 are 19 lines apart, not 56; without both lengths the distance is the
/// lines' own.
fn line_distance(a: &IssueKey<'_>, b: &IssueKey<'_>) -> Option<u32> {
    let (x, y) = (a.line?, b.line?);
    match (a.file_lines, b.file_lines) {
        (Some(la), Some(lb)) if scaled_by_length(a, b) => {
            let carried = f64::from(x) * f64::from(lb) / f64::from(la);
            // A line past its file's end (bad data) saturates the cast.
            Some((carried - f64::from(y)).abs().round() as u32)
        }
        _ => Some(x.abs_diff(y)),
    }
}

/// Whether both issues carry their file's length ([`line_distance`] scales by it).
fn scaled_by_length(a: &IssueKey<'_>, b: &IssueKey<'_>) -> bool {
    a.file_lines.is_some_and(|l| l > 0) && b.file_lines.is_some_and(|l| l > 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileRelation {
    Same,
    Different,
    Unknown,
}

fn file_relation(a: Option<&str>, b: Option<&str>) -> FileRelation {
    match (a.map(normalise_path), b.map(normalise_path)) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => {
            // `invoice.py` and `src/billing/invoice.py` name the same file.
            let same = a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"));
            if same {
                FileRelation::Same
            } else {
                FileRelation::Different
            }
        }
        _ => FileRelation::Unknown,
    }
}

fn normalise_path(p: &str) -> String {
    p.trim()
        .trim_start_matches("./")
        .replace('\\', "/")
        .to_lowercase()
}

/// How much location evidence lowers the similarity bar. One file is strong evidence: once the
/// structural rules (other identifiers, another requirement or case, opposite symptoms, another
/// status, far apart, another kind of defect) have not told two issues of one file apart, a
/// quarter of their defect words in common is enough (tuned on the `tune` part of the labelled
/// pairs, where no pair of different defects of one file got that far with any word in common).
fn location_bonus(place: Place) -> f64 {
    match place {
        Place::Within10 | Place::Within30 => 0.4 + SAME_FILE,
        Place::Beyond30 => 0.1 + SAME_FILE,
        Place::SameFile => 0.25 + SAME_FILE,
        Place::FileUnknown => 0.1,
    }
}

/// Prefixes reviewers put before the real title: `Error:`, `[HIGH]`, `Bug -`, ….
const PREFIX_WORDS: &[&str] = &[
    "error",
    "issue",
    "bug",
    "problem",
    "warning",
    "critical",
    "high",
    "medium",
    "low",
    "major",
    "minor",
    "blocker",
    "fix",
    "todo",
    "fixme",
    "note",
    "regression",
    "e2e",
    "security",
    "performance",
];

fn strip_prefixes(title: &str) -> &str {
    let mut rest = title.trim();
    loop {
        let before = rest;
        if let Some(r) = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(_, r)| r)
        {
            rest = r.trim_start();
        }
        let lower = rest.to_ascii_lowercase();
        for word in PREFIX_WORDS {
            if let Some(r) = lower.strip_prefix(word) {
                let r = r.trim_start();
                if let Some(r2) = r.strip_prefix([':', '-', '–', '—']) {
                    rest = rest[rest.len() - r2.len()..].trim_start();
                    break;
                }
            }
        }
        for phrase in [
            "acceptance criterion not met:",
            "acceptance criteria not met:",
            "criterion not met:",
            "unmet criterion:",
        ] {
            if lower.starts_with(phrase) {
                rest = rest[phrase.len()..].trim_start();
            }
        }
        if rest == before {
            return rest;
        }
    }
}

/// Words that carry no identity: articles, prepositions, auxiliaries and negations (a missing
/// thing and a thing that is not there are the same issue).
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "in", "on", "of", "for", "to", "is", "are", "be", "been", "by", "with",
    "when", "while", "at", "from", "and", "or", "that", "this", "it", "its", "does", "do", "doesn",
    "don", "isn", "aren", "t", "should", "still", "now", "has", "have", "can", "will", "after",
    "so", "as", "into", "no", "not", "never", "missing", "without", "lack", "lacks", "absent",
    "fail", "fails", "failing", "failed", "there", "any", "all", "which", "than", "then", "also",
    "only", "yet", "being", "was", "were", "use", "uses", "using", "fix", "fixed",
];

/// A few synonyms reviewers swap when they reword (canonical form last).
fn canonical(word: &str) -> &str {
    match word {
        "tests" | "testing" | "tested" | "spec" | "specs" => "test",
        "nil" | "none" | "npe" | "nullpointerexception" | "undefined" => "null",
        "panic" | "panics" | "crashes" | "crashed" | "throws" | "throw" | "raises" => "crash",
        "ignored" | "ignores" | "swallowed" | "swallows" | "unchecked" | "discarded" => "ignore",
        "leaks" | "leaked" | "leaking" | "unclosed" => "leak",
        "hardcoded" | "hard" | "coded" => "hardcode",
        "vat" | "gst" | "taxes" => "tax",
        "deps" | "dependencies" | "dependency" => "dep",
        "under" | "beneath" | "lower" => "below",
        "db" => "database",
        "ctx" => "context",
        _ => word,
    }
}

fn stem(word: &str) -> String {
    static ENGLISH: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    let w = canonical(word);
    ENGLISH
        .get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
        .stem(w)
        .into_owned()
}

/// Pairs of words naming opposite symptoms: one title with the one, the other with the other, are
/// different defects (stemmed forms).
const OPPOSITES: &[(&str, &str)] = &[
    ("accept", "reject"),
    ("short", "long"),
    ("first", "last"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("few", "many"),
    ("low", "high"),
    ("small", "large"),
    ("increas", "decreas"),
    ("allow", "deny"),
    ("early", "late"),
    ("empti", "null"),
];

fn opposite_symptoms(a: &HashSet<String>, b: &HashSet<String>) -> bool {
    OPPOSITES.iter().any(|(x, y)| {
        let (x, y) = (x.to_string(), y.to_string());
        (a.contains(&x) && b.contains(&y) && !a.contains(&y) && !b.contains(&x))
            || (a.contains(&y) && b.contains(&x) && !a.contains(&x) && !b.contains(&y))
    })
}

/// A title, normalised for comparison.
struct Title {
    /// Every word, stemmed, in order, articles removed (for substitution detection).
    sequence: Vec<String>,
    /// The same words lower-cased as written.
    words: Vec<String>,
    /// Content words and identifier sub-words, stemmed.
    content: HashSet<String>,
    /// Code identifiers, lower-cased (`parse_duration`, `getdisplayname`, `orders.created_at`).
    identifiers: HashSet<String>,
    /// Each identifier's sub-words, stemmed, split as written (`ListUsers` → list, user).
    identifier_words: std::collections::HashMap<String, Vec<String>>,
    /// Every word, lower-cased, as written.
    raw_words: Vec<String>,
    /// The title as written, lower-cased, prefixes stripped (`n+1 query in …`).
    text: String,
}

impl Title {
    /// Normalises `raw`; words of the issue's own file path are location, not content.
    fn new(raw: &str, file: Option<&str>) -> Title {
        let text = strip_prefixes(raw);
        let path_words: HashSet<String> = file
            .map(|f| f.split(['/', '\\', '.']).map(str::to_lowercase).collect())
            .unwrap_or_default();
        let mut sequence = Vec::new();
        let mut words = Vec::new();
        let mut content = HashSet::new();
        let mut identifiers = HashSet::new();
        let mut identifier_words = std::collections::HashMap::new();
        let mut raw_words = Vec::new();
        for token in &tokens(text) {
            let token = token.as_str();
            let lower = token.to_lowercase();
            raw_words.push(lower.clone());
            if is_file_name(&lower) {
                continue;
            }
            if is_identifier(token) && !is_exception_name(&lower) {
                let id = lower.trim_matches(['.', '_']).to_string();
                let parts: Vec<(String, String)> = sub_words(token)
                    .into_iter()
                    .map(|p| {
                        let s = stem(&p);
                        (p, s)
                    })
                    .collect();
                for (part, stemmed) in &parts {
                    if !STOPWORDS.contains(&part.as_str()) && part.len() > 1 {
                        content.insert(stemmed.clone());
                    }
                }
                identifier_words.insert(id.clone(), parts.into_iter().map(|(_, s)| s).collect());
                identifiers.insert(id);
                words.push(lower.clone());
                sequence.push(lower);
                continue;
            }
            if matches!(lower.as_str(), "a" | "an" | "the") {
                continue;
            }
            let stemmed = stem(&lower);
            // Numbers (`62%`, `N+1`) and single letters change between rewordings.
            let noise = lower.chars().count() < 2 || lower.chars().all(|c| c.is_ascii_digit());
            if !STOPWORDS.contains(&lower.as_str()) && !noise && !path_words.contains(&lower) {
                content.insert(stemmed.clone());
            }
            // A measurement changes between rewordings (`61%` / `64%`): the sequence keeps its
            // place, not its value, so the words around it decide.
            sequence.push(if noise && lower.len() > 1 {
                "#".to_string()
            } else {
                stemmed
            });
            words.push(lower);
        }
        Title {
            sequence,
            words,
            content,
            identifiers,
            identifier_words,
            raw_words,
            text: text.to_lowercase(),
        }
    }

    /// Mean of the Dice coefficient and the overlap coefficient of the content words: the overlap
    /// term keeps a terse title similar to its longer rewording.
    /// Similarity of the words that describe the defect: sub-words of identifiers both titles
    /// name are location, not defect, and are left out.
    /// The text of the first `n` words as written (`N+1 query`, where the words are `n`, `1`,
    /// `query`).
    fn start(&self, n: usize) -> &str {
        let mut end = 0;
        for w in &self.words[..n.min(self.words.len())] {
            match self.text[end..].find(w.as_str()) {
                Some(i) => end += i + w.len(),
                None => break,
            }
        }
        &self.text[..end]
    }

    pub fn defect_similarity(&self, other: &Title) -> f64 {
        let shared: HashSet<String> = self
            .identifiers
            .intersection(&other.identifiers)
            .flat_map(|i| {
                self.identifier_words
                    .get(i)
                    .into_iter()
                    .chain(other.identifier_words.get(i))
                    .flatten()
                    .cloned()
            })
            .collect();
        let a: HashSet<String> = self.content.difference(&shared).cloned().collect();
        let b: HashSet<String> = other.content.difference(&shared).cloned().collect();
        if a.is_empty() || b.is_empty() {
            // Nothing but the identifiers both name (`test_x still fails` / `Failing test:
            // test_x`): the same subject, restated. No content words at all (`Fix it`): only
            // an identical title is the same.
            return if self.sequence == other.sequence || !shared.is_empty() {
                1.0
            } else {
                0.0
            };
        }
        set_similarity(&a, &b)
    }
}

/// Mean of the Dice and overlap coefficients of two word sets.
fn set_similarity(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    {
        if a.is_empty() || b.is_empty() {
            return if a.is_empty() && b.is_empty() {
                1.0
            } else {
                0.0
            };
        }
        let common = a.intersection(b).count() as f64;
        let dice = 2.0 * common / (a.len() + b.len()) as f64;
        let overlap = common / a.len().min(b.len()) as f64;
        (dice + overlap) / 2.0
    }
}

/// Splits on anything but word characters and the joiners of qualified names: `.`, and `@`,
/// `#` or `::` between two names (`PostController@update`, `OrdersController#index`,
/// `Config::load`) read as `.`.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let word = |j: Option<&char>| j.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut joined = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let before = i.checked_sub(1).and_then(|j| chars.get(j));
        if matches!(c, '@' | '#') && word(before) && word(chars.get(i + 1)) {
            joined.push('.');
        } else if c == ':'
            && chars.get(i + 1) == Some(&':')
            && word(before)
            && word(chars.get(i + 2))
        {
            // `Config::load`: both colons, a name on either side.
            joined.push('.');
            i += 1;
        } else {
            joined.push(c);
        }
        i += 1;
    }
    joined
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map(|t| t.trim_matches('.').to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// A file name in a title (`main.go`, `Cart.tsx`): location, not content or identifier.
fn is_file_name(lower: &str) -> bool {
    const EXTENSIONS: [&str; 22] = [
        "py", "js", "jsx", "ts", "tsx", "go", "rs", "java", "kt", "rb", "php", "cs", "ex", "exs",
        "c", "h", "cpp", "swift", "scala", "vue", "yml", "yaml",
    ];
    lower
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext))
}

/// Exception and error class names (`NullPointerException`, `ValueError`) name the defect, not
/// the code: they are content words. Snake-case names ending so are tests or functions
/// (`test_raises_value_error`, `Apply_WhenExpired_ThrowsException`).
fn is_exception_name(lower: &str) -> bool {
    (lower.ends_with("exception") || lower.ends_with("error")) && !lower.contains('_')
}

/// Names of what holds code rather than of code (`PaymentService`, `order_repository`,
/// `CartComponent`): a title naming one may be about any of its members.
fn is_container(lower: &str) -> bool {
    const KINDS: [&str; 14] = [
        "service",
        "controller",
        "manager",
        "repository",
        "repo",
        "handler",
        "client",
        "provider",
        "component",
        "module",
        "factory",
        "store",
        "class",
        "helper",
    ];
    sub_words(lower)
        .last()
        .is_some_and(|w| KINDS.contains(&w.as_str()))
        || KINDS
            .iter()
            .any(|k| lower.len() > k.len() && lower.ends_with(k))
}

/// `snake_case`, `dotted.name`, or `camelCase`/`PascalCase` (not an ALL-CAPS acronym, nor its
/// plural: `URLs`, `POSTs`).
fn is_identifier(token: &str) -> bool {
    if let Some(stem) = token.strip_suffix('s')
        && stem.len() > 1
        && stem.chars().all(|c| c.is_ascii_uppercase())
    {
        return false;
    }
    let has_lower = token.chars().any(|c| c.is_lowercase());
    let inner_upper = token.chars().skip(1).any(|c| c.is_uppercase());
    (token.contains('_') || token.contains('.')) && token.chars().any(char::is_alphabetic)
        || (has_lower && inner_upper)
}

/// `getDisplayName` → get, display, name; `orders.created_at` → orders, created, at.
fn sub_words(token: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in token.chars() {
        if c == '_' || c == '.' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Words that say a test fails.
const FAILING: &[&str] = &[
    "fail", "fails", "failing", "failed", "red", "errors", "broken", "break", "breaks", "expected",
];

/// Both titles name one test (an identifier like `test_x`, `TestX`, `x_test`, `XSpec`) and
/// both say it fails: the same failure, restated (`test_x still fails` / `Failing test: test_x`).
/// In a test file or a test issue, every identifier names a test (`refund_returns200`).
/// The tests each title names must be one: a class named on both sides does not make
/// `SubscriptionTest::test_renews` and `SubscriptionTest::test_cancels` one failure, while
/// `OrderServiceTest.placeOrder_appliesDiscount` and `placeOrder_appliesDiscount` are one.
fn same_failing_test(a: &Title, b: &Title, in_tests: bool) -> bool {
    let fails = |t: &Title| t.raw_words.iter().any(|w| FAILING.contains(&w.as_str()));
    let (xa, xb) = (named_tests(a, in_tests), named_tests(b, in_tests));
    let covered = |x: &[String], y: &[String]| x.iter().all(|i| y.iter().any(|j| related_id(i, j)));
    !xa.is_empty()
        && !xb.is_empty()
        && (covered(&xa, &xb) || covered(&xb, &xa))
        && fails(a)
        && fails(b)
}

/// The tests a title names: identifiers like `test_x`, `TestX`, `x_test`, `XSpec` — in a test
/// file or a test issue, every identifier.
fn named_tests(t: &Title, in_tests: bool) -> Vec<String> {
    t.identifiers
        .iter()
        .filter(|i| in_tests || i.starts_with("test") || i.ends_with("test") || i.ends_with("spec"))
        .filter(|i| !super::concepts::is_mark(i))
        .cloned()
        .collect()
}

/// The numbers of the acceptance criteria a title names (`AC3`, `AC #4`, `criterion 2`): two
/// numbered criteria are two requirements.
fn criterion_numbers(title: &str) -> Vec<u32> {
    let lower = title.to_lowercase();
    let mut found = Vec::new();
    for word in ["ac", "criterion", "criteria"] {
        for (i, _) in lower.match_indices(word) {
            if lower[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
            {
                continue;
            }
            let rest = lower[i + word.len()..].trim_start_matches([' ', '#', '-']);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                found.push(n);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// One identifier names the other or a part of it (`tokenCache.Set` and `tokenCache`,
/// `Blog.list_posts` and `list_posts`).
fn related_id(a: &str, b: &str) -> bool {
    let part_of = |x: &str, whole: &str| whole.split('.').any(|p| p == x);
    a == b || part_of(a, b) || part_of(b, a)
}

fn any_related<S: AsRef<str>>(
    a: impl IntoIterator<Item = S> + Copy,
    b: impl IntoIterator<Item = S> + Copy,
) -> bool {
    a.into_iter()
        .any(|x| b.into_iter().any(|y| related_id(x.as_ref(), y.as_ref())))
}

/// A test file by its path, as the common runners find them: a `test`/`tests`/`spec`/
/// `__tests__`/`e2e` directory, `test_x.py`, `x_test.go`, `x_spec.rb`, `x.test.ts`, `x.spec.ts`,
/// and JUnit's and Failsafe's `FooTest`, `FooTests`, `FooIT`, `FooITCase`.
fn is_test_file(path: &str) -> bool {
    let path = path.replace('\\', "/");
    let name = path.rsplit('/').next().unwrap_or(&path);
    let stem = name.split('.').next().unwrap_or(name);
    let lower = stem.to_lowercase();
    path.to_lowercase()
        .split('/')
        .any(|d| matches!(d, "test" | "tests" | "spec" | "specs" | "__tests__" | "e2e"))
        || lower.starts_with("test_")
        || lower.ends_with("_test")
        || lower.ends_with("_spec")
        || ["Test", "Tests", "Spec", "IT", "ITCase"]
            .iter()
            .any(|s| stem.len() > s.len() && stem.ends_with(s))
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// The HTTP endpoint a title names (`PUT /api/users/{id}/role`), path parameters unified.
fn endpoint(title: &str) -> Option<String> {
    let words: Vec<&str> = title.split_whitespace().collect();
    words.windows(2).find_map(|w| {
        let method = w[0].trim_start_matches(['`', '(', '"']);
        let path = w[1].trim_end_matches(['`', ')', '"', ',', ';', ':', '.']);
        if !matches!(method, "GET" | "POST" | "PUT" | "PATCH" | "DELETE") || !path.starts_with('/')
        {
            return None;
        }
        let path = path
            .split('/')
            .map(|s| {
                if s.starts_with([':', '{', '<']) {
                    "*"
                } else {
                    s
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        Some(format!("{method} {}", path.trim_end_matches('/')))
    })
}

/// One subject, different requirements or cases: the titles start alike (two words or more)
/// and what follows has words of its own on each side, more than it shares (`Username must be
/// at most 30 characters` / `Username must not contain spaces`; `No test for an empty cart` /
/// `No test for a cart with one item`).
fn different_requirement(a: &Title, b: &Title) -> bool {
    let prefix = a
        .sequence
        .iter()
        .zip(&b.sequence)
        .take_while(|(x, y)| x == y)
        .count();
    if prefix < 2 {
        return false;
    }
    // A shared start that names the kind of defect (`Open redirect via …` / `Open redirect:
    // …`) is not a shared subject; `No test for …` names what is missing after it.
    if super::concepts::of(a.start(prefix))
        .iter()
        .any(|c| super::concepts::decisive(c) && *c != "coverage")
    {
        return false;
    }
    let tail = |t: &Title| -> HashSet<String> {
        t.sequence[prefix..]
            .iter()
            .filter(|w| t.content.contains(*w) || t.identifiers.contains(*w))
            .cloned()
            .collect()
    };
    // The same kind of defect named after the shared start is that defect restated.
    let rest = |t: &Title| t.words[prefix..].join(" ");
    let (ka, kb) = (super::concepts::of(&rest(a)), super::concepts::of(&rest(b)));
    if ka
        .iter()
        .any(|c| super::concepts::decisive(c) && kb.contains(c))
    {
        return false;
    }
    let (ta, tb) = (tail(a), tail(b));
    let shared = ta.intersection(&tb).count();
    let (only_a, only_b) = (ta.len() - shared, tb.len() - shared);
    only_a > 0 && only_b > 0 && shared <= only_a.min(only_b)
}

/// The quoted strings of a title (`'…'`, `"…"`, `‘…’`, `“…”`), lower-cased: a quote opens after
/// a blank, `(` or the start and closes before a blank, punctuation or the end, so an
/// apostrophe inside a word (`doesn't`) opens nothing.
fn quoted(title: &str) -> Vec<String> {
    let chars: Vec<char> = title.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let close = match chars[i] {
            '\'' => '\'',
            '"' => '"',
            '‘' => '’',
            '“' => '”',
            _ => {
                i += 1;
                continue;
            }
        };
        let opens = i == 0 || chars[i - 1].is_whitespace() || chars[i - 1] == '(';
        let end = (i + 1..chars.len()).find(|&j| {
            chars[j] == close
                && chars
                    .get(j + 1)
                    .is_none_or(|c| c.is_whitespace() || c.is_ascii_punctuation())
        });
        match end {
            Some(j) if opens && j > i + 1 => {
                let text: String = chars[i + 1..j].iter().collect();
                out.push(text.trim().to_lowercase());
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether two word sequences differ in exactly one slot of one or two words on each side (the
/// rest identical and at least two words long), and the slot holds content on both sides.
fn is_substitution(a: &[String], b: &[String]) -> bool {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let slot_a = &a[prefix..a.len() - suffix];
    let slot_b = &b[prefix..b.len() - suffix];
    let content = |slot: &[String]| slot.iter().any(|w| !STOPWORDS.contains(&w.as_str()));
    !slot_a.is_empty()
        && !slot_b.is_empty()
        && slot_a.len() <= 2
        && slot_b.len() <= 2
        && prefix + suffix >= 2
        && content(slot_a)
        && content(slot_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(title: &'a str, file: Option<&'a str>, line: Option<u32>) -> IssueKey<'a> {
        IssueKey {
            title,
            kind: Some(IssueType::UnitTest),
            file,
            line,
            file_lines: None,
            description: "",
            fix: "",
        }
    }

    fn typed<'a>(title: &'a str, kind: IssueType, file: &'a str, line: u32) -> IssueKey<'a> {
        IssueKey {
            title,
            kind: Some(kind),
            file: Some(file),
            line: Some(line),
            file_lines: None,
            description: "",
            fix: "",
        }
    }

    #[test]
    fn identifiers_tests_endpoints_and_grpc_codes() {
        let m = Matcher::default();
        let svc = "internal/billing/server.go";
        let test = "src/test/java/com/acme/CartServiceTest.java";
        use IssueType::{CodeQuality, ErrorHandling, IntegrationTest, Security};
        // A qualified name and its member are one piece of code.
        assert!(m.same(
            typed(
                "`sessionStore.Put` writes the map without a lock",
                CodeQuality,
                svc,
                40
            ),
            typed(
                "Data race on sessionStore: concurrent writes from goroutines",
                CodeQuality,
                svc,
                44
            ),
        ));
        // A test named with its class and without it is one failing test; in a test file
        // any identifier names a test, whatever its spelling.
        assert!(m.same(
            typed(
                "`CartServiceTest.addItem_mergesQuantities` fails",
                IntegrationTest,
                test,
                30
            ),
            typed(
                "addItem_mergesQuantities still failing: expected 3 but was 2",
                IntegrationTest,
                test,
                30
            ),
        ));
        // The test's name holds a status; the failure names another.
        let rs = "tests/api.rs";
        assert!(m.same(
            typed("`refund_returns_200` fails", IntegrationTest, rs, 12),
            typed(
                "refund_returns_200 still failing with 403 Forbidden",
                IntegrationTest,
                rs,
                12
            ),
        ));
        // One class, two of its tests: two failures.
        assert!(!m.same(
            typed(
                "CartServiceTest::test_add_item fails on a full cart",
                IntegrationTest,
                test,
                30
            ),
            typed(
                "CartServiceTest::test_remove_item fails: cart not emptied",
                IntegrationTest,
                test,
                70
            ),
        ));
        // Two endpoints of one controller.
        assert_eq!(
            m.decide(
                typed(
                    "PATCH /api/users/{id}/email performs no ownership check",
                    Security,
                    svc,
                    80
                ),
                typed("Any user can call DELETE /api/users/:id", Security, svc, 60),
            ),
            Decision::DifferentIdentifiers
        );
        // gRPC codes are statuses: another wrong code is another defect.
        assert_eq!(
            m.decide(
                typed("GetInvoice returns codes.Internal for a missing id; should return codes.NotFound", ErrorHandling, svc, 120),
                typed("GetInvoice returns codes.Internal for an empty id; should return codes.InvalidArgument", ErrorHandling, svc, 112),
            ),
            Decision::DifferentStatus
        );
        // A shared start naming the kind of defect is not a shared subject.
        assert!(m.same(
            typed(
                "Open redirect via the unchecked `return_to` parameter",
                Security,
                svc,
                20
            ),
            typed(
                "Open redirect: `return_to` is passed to redirect() unvalidated",
                Security,
                svc,
                24
            ),
        ));
        // … while `No test for …` names what is missing after it.
        assert!(!m.same(
            typed("No test for an expired coupon", CodeQuality, svc, 20),
            typed("No test for a coupon used twice", CodeQuality, svc, 20),
        ));
    }

    #[test]
    fn places_cases_and_numbered_criteria() {
        let m = Matcher::default();
        use IssueType::{AcceptanceCriteria, ErrorHandling, UnitTest};
        let cs = "src/Worker/InvoiceListener.cs";
        // A method and the call in it, four lines apart: one place.
        assert!(m.same(
            typed(
                "`HandleAsync` in InvoiceListener drops exceptions",
                ErrorHandling,
                cs,
                40
            ),
            typed(
                "`Task.Run` fire-and-forget drops exceptions in the listener",
                ErrorHandling,
                cs,
                44
            ),
        ));
        // Two tests four lines apart are two tests.
        let t = "tests/InvoiceTests.cs";
        assert!(!m.same(
            typed("`Total_WhenEmpty_IsZero` fails", UnitTest, t, 40),
            typed("`Total_WhenNegative_Throws` fails", UnitTest, t, 44),
        ));
        // An empty input and a null input are two cases.
        assert!(!m.same(
            typed(
                "Empty email accepted by RegisterHandler",
                ErrorHandling,
                cs,
                10
            ),
            typed("Null email crashes RegisterHandler", ErrorHandling, cs, 12),
        ));
        // Two numbered criteria are two requirements.
        assert_eq!(
            criterion_numbers("AC #3 not met: export ignores the filter"),
            [3]
        );
        assert!(!m.same(
            typed(
                "AC2 not met: the export button is missing on the report page",
                AcceptanceCriteria,
                cs,
                5
            ),
            typed(
                "AC5 not met: the export button is missing its tooltip on the report page",
                AcceptanceCriteria,
                cs,
                5
            ),
        ));
    }

    #[test]
    fn names_hold_their_own_words_and_numbers() {
        let m = Matcher::default();
        use IssueType::{Security, UnitTest};
        // Test names ending in `Exception` or `_error` are names, not exception classes: two
        // of them are two tests.
        let t = "tests/AccountTests.cs";
        assert!(!m.same(
            typed(
                "Overdraft test `Withdraw_WhenOverdrawn_ThrowsException` fails, withdrawal goes through",
                UnitTest,
                t,
                20
            ),
            typed(
                "`Withdraw_WhenFrozen_ThrowsException` fails: the withdrawal goes through",
                UnitTest,
                t,
                20
            ),
        ));
        assert!(!m.same(
            typed(
                "`test_parse_raises_value_error` fails",
                UnitTest,
                "tests/test_cfg.py",
                8
            ),
            typed(
                "`test_load_raises_value_error` fails",
                UnitTest,
                "tests/test_cfg.py",
                8
            ),
        ));
        // A status inside a test's name is part of the name.
        assert!(super::super::concepts::status_codes("`delete_user_returns_204` fails").is_empty());
        assert_eq!(
            super::super::concepts::status_codes("delete_user returns 204"),
            [204]
        );
        // What follows a shared start counts its code names too: `ConfigMap` on both sides is
        // a shared subject, not another requirement.
        let k = "deploy/k8s/app.yaml";
        assert!(m.same(
            typed(
                "Stripe key stored in plain `ConfigMap` billing-config",
                Security,
                k,
                12
            ),
            typed(
                "Stripe key kept in `ConfigMap` billing-config, use a Secret",
                Security,
                k,
                12
            ),
        ));
    }

    #[test]
    fn plurals_actions_and_status_pairs() {
        let m = Matcher::default();
        use IssueType::{ErrorHandling, Security};
        // An acronym's plural is a word, not an identifier.
        assert!(!is_identifier("URLs"));
        assert!(!is_identifier("POSTs"));
        assert!(is_identifier("toURLs"));
        // `Controller@action` and `Controller#action` name a method: two actions of one
        // controller are two places.
        let php = "app/Http/Controllers/InvoiceController.php";
        assert!(!m.same(
            typed(
                "InvoiceController@show lacks authorization: any user can read any invoice",
                Security,
                php,
                30
            ),
            typed(
                "InvoiceController@export lacks authorization: any user can export any invoice",
                Security,
                php,
                75
            ),
        ));
        let rb = "app/controllers/invoices_controller.rb";
        assert!(!m.same(
            typed(
                "InvoicesController#show is missing an ownership check",
                Security,
                rb,
                12
            ),
            typed(
                "InvoicesController#export is missing an ownership check",
                Security,
                rb,
                48
            ),
        ));
        // One title naming only a status the other names too is not another status.
        let go = "internal/api/orders.go";
        assert!(m.same(
            typed(
                "Unknown order id: handler answers 500 instead of 404",
                ErrorHandling,
                go,
                40
            ),
            typed(
                "Lookup of a missing order should return 404",
                ErrorHandling,
                go,
                44
            ),
        ));
        // The same wrong status for the same expected one is one defect, however worded.
        assert!(m.same(
            typed(
                "ErrNoRows mapped to HTTP 500; a deleted order must give 404",
                ErrorHandling,
                go,
                40
            ),
            typed(
                "Still 500 instead of 404 when the row is gone",
                ErrorHandling,
                go,
                90
            ),
        ));
    }

    #[test]
    fn paths_of_names_and_kinds_after_a_shared_start() {
        let m = Matcher::default();
        use IssueType::{CodeQuality, ErrorHandling};
        let rs = "src/parser.rs";
        // `Type::method` names a method: the same panic in two methods is two places.
        assert!(!m.same(
            typed(
                "`.unwrap()` in `Parser::header` panics on a short frame",
                ErrorHandling,
                rs,
                40
            ),
            typed(
                "`unwrap()` in `Parser::trailer` panics when the checksum is missing",
                ErrorHandling,
                rs,
                90
            ),
        ));
        // One subject, then the same kind of defect in other words: restated, not another
        // requirement.
        assert!(m.same(
            typed(
                "`static mut TOTAL` written from several threads without a mutex",
                CodeQuality,
                rs,
                12
            ),
            typed(
                "`static mut TOTAL` still updated by worker threads, unsynchronized",
                CodeQuality,
                rs,
                12
            ),
        ));
    }

    #[test]
    fn test_files_are_known_by_their_paths() {
        for p in [
            "tests/api.rs",
            "pkg/auth/cache_test.go",
            "src/test/java/com/acme/PaymentControllerIT.java",
            "app/__tests__/cart.tsx",
            "src/cart.spec.ts",
            "tests/test_orders.py",
            "spec/models/user_spec.rb",
        ] {
            assert!(is_test_file(p), "{p}");
        }
        for p in [
            "src/orders.py",
            "pkg/auth/cache.go",
            "src/Edit.java",
            "app/latest.ts",
        ] {
            assert!(!is_test_file(p), "{p}");
        }
    }

    #[test]
    fn table_of_decisions() {
        let m = Matcher::default();
        let f = Some("src/phone.py");
        let cases: &[(&str, IssueKey, IssueKey, bool)] = &[
            (
                "prefix only",
                key("Error: empty list crashes sum", f, Some(3)),
                key("empty list crashes sum", f, Some(3)),
                true,
            ),
            (
                "bracket prefix and shifted line",
                key("[HIGH] Missing test for empty input", f, Some(10)),
                key("Missing test for empty input", f, Some(31)),
                true,
            ),
            (
                "same title, other file",
                key("Missing test for empty input", f, Some(10)),
                key(
                    "Missing test for empty input",
                    Some("src/mail.py"),
                    Some(10),
                ),
                false,
            ),
            (
                "one decisive word",
                key("Missing test for empty input", f, Some(10)),
                key("Missing test for unicode input", f, Some(10)),
                false,
            ),
            (
                "different identifiers",
                key("test_login_ok fails", f, None),
                key("test_logout_ok fails", f, None),
                false,
            ),
            (
                "different defect, same line",
                IssueKey {
                    kind: Some(IssueType::Security),
                    ..key("SQL injection in report query", f, Some(7))
                },
                IssueKey {
                    kind: Some(IssueType::CodeQuality),
                    ..key("Report query cursor is never closed", f, Some(7))
                },
                false,
            ),
            (
                "rewording at the same place",
                key("Negative quantity is not validated", f, Some(8)),
                key("Missing validation for negative quantity", f, Some(8)),
                true,
            ),
            (
                "a class on one side, its method on the other",
                key("CartService dereferences a null cart", f, Some(40)),
                key("addItem dereferences the cart when it is null", f, Some(42)),
                true,
            ),
            (
                "test names that contain a defect word (`lock`) are still names",
                key("test_login_locks_after_5_attempts fails", f, Some(30)),
                key("test_login_rejects_bad_password fails", f, Some(14)),
                false,
            ),
            (
                "one call named alike (`ListUsers`), different defects of it",
                key("Timeout is not set on the client in ListUsers", f, Some(20)),
                key("ListUsers returns users in random order", f, Some(21)),
                false,
            ),
            (
                "one file, a quarter of the defect words in common",
                key("Password reset token never expires", f, Some(50)),
                key("Reset tokens stay valid forever", f, Some(52)),
                true,
            ),
        ];
        for (comment, a, b, want) in cases {
            assert_eq!(m.same(*a, *b), *want, "{comment}: {:?}", m.decide(*a, *b));
        }
    }

    #[test]
    fn prefixes_are_stripped() {
        assert_eq!(strip_prefixes("Error: Issue - [HIGH] x y"), "x y");
        assert_eq!(
            strip_prefixes("Acceptance criterion not met: CSV has header"),
            "CSV has header"
        );
        assert_eq!(strip_prefixes("Errors are shown"), "Errors are shown");
    }

    #[test]
    fn identifiers_split_into_sub_words() {
        assert_eq!(sub_words("getDisplayName"), vec!["get", "display", "name"]);
        assert_eq!(
            sub_words("orders.created_at"),
            vec!["orders", "created", "at"]
        );
        assert!(
            is_identifier("parse_duration") && is_identifier("useEffect") && !is_identifier("MD5")
        );
    }

    #[test]
    fn status_roles_measurements_and_forgery_checks() {
        let m = Matcher::default();
        use IssueType::{AcceptanceCriteria, Coverage, Security};
        let api = "src/routes/invoices.ts";
        // One wrong status for one expected status, in other words and another order.
        assert!(m.same(
            typed(
                "`PATCH /invoices/:id` answers 200 instead of 202 when queued",
                AcceptanceCriteria,
                api,
                40
            ),
            typed(
                "PATCH /invoices/:id must reply 202 Accepted for queued updates; it still gives 200",
                AcceptanceCriteria,
                api,
                44
            ),
        ));
        // The same two statuses with their roles swapped are two defects.
        assert!(!m.same(
            typed(
                "`PATCH /invoices/:id` gives 409 for a stale version; expected 412",
                AcceptanceCriteria,
                api,
                40
            ),
            typed(
                "`PATCH /invoices/:id` gives 412 for a missing If-Match header; expected 409",
                AcceptanceCriteria,
                api,
                44
            ),
        ));
        assert_eq!(
            super::super::concepts::status_roles("should return 201 Created, still returns 200"),
            (vec![200], vec![201])
        );
        // A measurement keeps its place, not its value: two packages below one target are
        // two coverage gaps.
        let gradle = "build.gradle.kts";
        assert!(!m.same(
            typed(
                "Kover: billing package at 58% branch coverage, minimum 75%",
                Coverage,
                gradle,
                20
            ),
            typed(
                "Kover: invoicing package at 66% branch coverage, minimum 75%",
                Coverage,
                gradle,
                20
            ),
        ));
        // Rails' CSRF check named by its callback is CSRF.
        let rb = "app/controllers/webhooks_controller.rb";
        assert!(m.same(
            typed(
                "`protect_from_forgery` is turned off for the refunds actions",
                Security,
                rb,
                3
            ),
            typed(
                "Refund endpoints accept cross-site forged requests",
                Security,
                rb,
                5
            ),
        ));
    }

    /// Line distances are scaled by the file's length when both reviews measured it: a fix
    /// that grew the file moves what follows its change down.
    #[test]
    fn line_distances_scale_by_the_files_length() {
        let file = "tests/Feature/OrderControllerTest.php";
        let at = |line, file_lines| IssueKey {
            file_lines,
            ..typed(
                "No test for refunding a cancelled order",
                IssueType::UnitTest,
                file,
                line,
            )
        };
        // 56 lines apart as written; the file grew by 56 lines above the test.
        let (a, b) = (at(1920, Some(2912)), at(1976, Some(2968)));
        let b = IssueKey {
            title: "Still missing a feature test for the cancel -> automatic refund path",
            ..b
        };
        assert_eq!(line_distance(&a, &b), Some(19));
        assert_eq!(line_distance(&b, &a), Some(19));
        for (x, y) in [
            (at(1920, None), at(1976, None)),
            (at(1920, Some(2912)), at(1976, None)),
            (at(1920, Some(0)), at(1976, Some(2968))),
        ] {
            assert_eq!(line_distance(&x, &y), Some(56));
        }
        assert_eq!(
            line_distance(&at(1920, Some(2912)), &key("t", Some(file), None)),
            None
        );
        let m = Matcher::default();
        let place = |x, y| m.decide(x, y).weighed().map(|w| w.evidence.place);
        assert_eq!(place(a, b), Some(Place::Within30));
        let unscaled = IssueKey {
            file_lines: None,
            ..b
        };
        assert_eq!(place(at(1920, None), unscaled), Some(Place::Beyond30));
        // 250 lines apart as written, after a fix inserted 250 lines above: not far apart.
        let go = "internal/ledger/ledger.go";
        let at = |line, file_lines| IssueKey {
            file_lines,
            ..typed(
                "Error from closing the result set is ignored",
                IssueType::ErrorHandling,
                go,
                line,
            )
        };
        assert_eq!(m.decide(at(300, None), at(550, None)), Decision::FarApart);
        assert_ne!(
            m.decide(at(300, Some(1000)), at(550, Some(1250))),
            Decision::FarApart
        );
        // Where a file did not change length, its lines are as far apart as written.
        assert_eq!(
            m.decide(at(300, Some(1000)), at(550, Some(1000))),
            Decision::FarApart
        );
        // The reason says the distance was scaled.
        let reason = m.decide(a, b).reason();
        assert!(reason.contains("scaled by the file's length"), "{reason}");
        let reason = m.decide(at(1920, None), unscaled).reason();
        assert!(!reason.contains("scaled"), "{reason}");
    }

    /// A restatement may name other code in its title (the failing test against the mechanism)
    /// or another kind of defect (the effect against the cause), while its description or fix
    /// names the earlier issue's code or kind.
    #[test]
    fn the_other_issues_code_or_kind_in_a_description() {
        let m = Matcher::default();
        let ex = "test/chat/chat_room_test.exs";
        let a = typed(
            "Flaky test: `ChatRoomTest` broadcast case fails intermittently",
            IssueType::UnitTest,
            ex,
            40,
        );
        let b = typed(
            "`assert_receive` waits with the default 100ms timeout",
            IssueType::UnitTest,
            ex,
            44,
        );
        assert_eq!(m.decide(a, b), Decision::DifferentIdentifiers);
        let b_told = IssueKey {
            description: "ChatRoomTest still fails on CI now and then: the broadcast arrives \
                          after assert_receive gave up",
            fix: "Pass an explicit timeout of 1_000 to assert_receive",
            ..b
        };
        assert_ne!(m.decide(a, b_told), Decision::DifferentIdentifiers);
        // A description that names neither title's code changes nothing.
        let b_vague = IssueKey {
            description: "The broadcast arrives late on CI now and then",
            ..b
        };
        assert_eq!(m.decide(a, b_vague), Decision::DifferentIdentifiers);

        let rb = "app/controllers/search_controller.rb";
        let a = typed(
            "SQL injection in search: `params[:q]` interpolated into `where`",
            IssueType::Security,
            rb,
            12,
        );
        let b = typed(
            "Stored XSS: search term echoed unescaped on the results page",
            IssueType::Security,
            rb,
            14,
        );
        assert_eq!(m.decide(a, b), Decision::DifferentConcepts);
        let b_cause = IssueKey {
            description: "The results page still shows raw markup, because the term reaches the \
                          query through string interpolation: the same SQL injection path",
            fix: "Bind the term as a query parameter",
            ..b
        };
        assert_ne!(m.decide(a, b_cause), Decision::DifferentConcepts);
        let b_own = IssueKey {
            description: "The term is rendered with raw, so markup runs in the browser",
            fix: "Escape it with h()",
            ..b
        };
        assert_eq!(m.decide(a, b_own), Decision::DifferentConcepts);
    }

    #[test]
    fn descriptions_and_fixes_join_titles_that_share_no_words() {
        let m = Matcher::default();
        let go = "internal/export/writer.go";
        let titled = |title, line| typed(title, IssueType::ErrorHandling, go, line);
        let a = titled("Write errors ignored in flushRows", 88);
        let b = titled("Truncated CSV files reach customers silently", 93);
        // The titles alone share no defect word.
        assert!(!m.same(a, b));
        // A fix alone is no description: the same few words of remedy fit many defects.
        let remedy = "Handle the error";
        assert!(!m.same(IssueKey { fix: remedy, ..a }, IssueKey { fix: remedy, ..b }));
        let a = IssueKey {
            description: "bufio.Writer.Flush returns an error that flushRows drops, so a full \
                          disk leaves a truncated export without any error",
            fix: "Return the error from Flush and fail the export job",
            ..a
        };
        let b = IssueKey {
            description: "When the disk fills, the export job still reports success: the error \
                          of Flush is dropped and the truncated file is uploaded",
            fix: "Check the Flush error and mark the export failed",
            ..b
        };
        let d = m.decide(a, b);
        assert!(
            matches!(d, Decision::Same(w) if w.evidence.detail.is_some()),
            "{d:?}"
        );
        // The titles alone would not have joined them: the descriptions did.
        let untold = |k: IssueKey<'static>| IssueKey {
            description: "",
            fix: "",
            ..k
        };
        assert!(!m.same(untold(a), untold(b)));
        // The loop's own issues carry both.
        let issue = |k: IssueKey<'_>| Issue {
            id: "Q1".into(),
            title: k.title.into(),
            kind: IssueType::ErrorHandling,
            severity: crate::model::Severity::High,
            file: k.file.map(str::to_string),
            line: k.line,
            file_lines: None,
            description: k.description.into(),
            fix: k.fix.into(),
            recurs: None,
            introduced: true,
            fingerprint: None,
        };
        let (ia, ib) = (issue(a), issue(b));
        assert_eq!(m.decide((&ia).into(), (&ib).into()), d);
        assert!(d.reason().contains("with description and fix"), "{d:?}");
        // A structural rule the titles decide still wins: another case with another status is
        // another defect, whatever the descriptions share.
        let api = "src/routes/export.ts";
        let s1 = IssueKey {
            description: "The export handler answers before the file is written",
            fix: "Await the write before answering",
            ..typed(
                "GET /exports/:id returns 200 for a missing export; expected 404",
                IssueType::AcceptanceCriteria,
                api,
                10,
            )
        };
        let s2 = IssueKey {
            description: "The export handler answers before the file is written",
            fix: "Await the write before answering",
            ..typed(
                "GET /exports/:id returns 500 for a malformed id; expected 400",
                IssueType::AcceptanceCriteria,
                api,
                12,
            )
        };
        let d = m.decide(s1, s2);
        assert!(
            matches!(d, Decision::Substitution | Decision::DifferentStatus),
            "{d:?}"
        );
    }

    #[test]
    fn the_weighed_decision_reads_its_evidence_in_one_direction() {
        let m = Matcher::default();
        let at = |similarity: f64, detail: Option<f64>, place: Place| {
            m.weights.likelihood(&Evidence {
                scaled: false,
                similarity,
                detail,
                bar: 0.15,
                place,
            })
        };
        for place in Place::ALL {
            // Descriptions that share more make two issues more alike.
            assert!(at(0.2, Some(0.4), place) > at(0.2, Some(0.1), place));
            for detail in [None, Some(0.1), Some(0.4)] {
                // More words in common never make two issues less alike.
                let mut last = 0.0;
                for s in [0.0, 0.1, 0.3, 0.6, 1.0] {
                    let l = at(s, detail, place);
                    assert!(l >= last, "{place:?} {detail:?} {s}: {l} < {last}");
                    last = l;
                }
            }
            // The same title is one problem.
            assert!(at(1.0, None, place) >= 0.5, "{place:?}");
        }
        // Nothing in common but the place: two problems, however close.
        let f = Some("src/worker.py");
        let (typo, env) = (
            key("Typo in log message", f, Some(30)),
            key(
                "Retry count read from the wrong environment variable",
                f,
                Some(31),
            ),
        );
        assert_eq!(m.decide(typo, env), Decision::NothingInCommon);
        let described = |k: IssueKey<'static>, description| IssueKey { description, ..k };
        assert_eq!(
            m.decide(
                described(typo, "The message says recieved."),
                described(env, "RETRIES is ignored; RETRY_COUNT is read.")
            ),
            Decision::NothingInCommon
        );
        // A higher threshold raises the bar and never raises a likelihood.
        let (a, b) = (
            key(
                "Cart total ignores discounts",
                Some("src/cart.ts"),
                Some(40),
            ),
            key(
                "Discounts are not applied to the total",
                Some("src/cart.ts"),
                Some(44),
            ),
        );
        let (lenient, strict) = (
            Matcher::new(0.6).decide(a, b),
            Matcher::new(0.95).decide(a, b),
        );
        let like = |d: Decision| d.weighed().map(|w| w.likelihood).unwrap();
        assert!(like(lenient) > like(strict), "{lenient:?} {strict:?}");
        assert!(m.decide(a, b).is_same());
        assert!(m.decide(a, b).reason().ends_with(&format!(
            "one file, within 10 lines: one problem at {:.2}",
            like(m.decide(a, b))
        )));
    }

    #[test]
    fn fitting_finds_the_rule_its_samples_follow() {
        // Samples labelled by one rule (the titles reach the bar) with a few against it: the
        // fit weighs title similarity up and decides the rule's side on fresh evidence.
        let sample = |similarity: f64, place: Place| Evidence {
            scaled: false,
            similarity,
            detail: None,
            bar: 0.4,
            place,
        };
        let mut samples = Vec::new();
        for i in 0..=40 {
            let s = f64::from(i) / 40.0;
            for place in [Place::FileUnknown, Place::Within10] {
                samples.push((sample(s, place), s >= 0.4));
            }
        }
        samples.push((sample(0.9, Place::FileUnknown), false));
        samples.push((sample(0.1, Place::Within10), true));
        let w = Weights::fit(&samples, 1.0);
        assert!(w.w[0] > 1.0, "{w:?}");
        assert_eq!(Weights::fit(&samples, 1.0), w, "deterministic");
        for place in [Place::FileUnknown, Place::Within10] {
            assert!(w.likelihood(&sample(0.8, place)) > 0.5, "{w:?}");
            assert!(w.likelihood(&sample(0.05, place)) < 0.5, "{w:?}");
        }
    }

    #[test]
    fn quoted_tests_written_kinds_and_statuses_by_role() {
        let m = Matcher::default();
        use IssueType::{AcceptanceCriteria, E2eTest, Performance};
        // Two tests quoted by name are two tests; a quoted message and a word quoted inside it
        // are not two names.
        let spec = "e2e/checkout.spec.ts";
        assert!(!m.same(
            typed(
                "e2e 'removes an item from the cart' is failing",
                E2eTest,
                spec,
                30
            ),
            typed(
                "e2e 'empties the cart after payment' is failing",
                E2eTest,
                spec,
                34
            ),
        ));
        let go = "db/migrate_test.go";
        assert!(m.same(
            typed(
                "Migration test fails: table \"orders\" already exists",
                IssueType::IntegrationTest,
                go,
                40
            ),
            typed(
                "Migration test still fails with 'table \"orders\" already exists'",
                IssueType::IntegrationTest,
                go,
                42
            ),
        ));
        assert_eq!(
            quoted(
                "Test fails with 'relation \"orders\" already exists' (doesn't run the users' seeds)"
            ),
            ["relation \"orders\" already exists"]
        );
        // A kind of defect written with symbols (`N+1`) at the shared start is no shared
        // subject.
        let rb = "app/controllers/invoices_controller.rb";
        assert!(m.same(
            typed(
                "N+1 query when rendering invoice lines in InvoicesController#index",
                Performance,
                rb,
                12
            ),
            typed(
                "N+1 query still there when invoices are listed with their lines",
                Performance,
                rb,
                14
            ),
        ));
        // The status answered on one side and the one expected on the other are one defect;
        // two answered statuses are two.
        let api = "src/routes/accounts.ts";
        assert!(m.same(
            typed(
                "Creating an account with a taken handle returns 500",
                AcceptanceCriteria,
                api,
                20
            ),
            typed(
                "Creating an account with a taken handle should return 409",
                AcceptanceCriteria,
                api,
                22
            ),
        ));
        assert_eq!(
            m.decide(
                typed(
                    "Creating an account with a taken handle returns 500",
                    AcceptanceCriteria,
                    api,
                    20
                ),
                typed(
                    "Creating an account with a taken handle still returns 400",
                    AcceptanceCriteria,
                    api,
                    22
                ),
            ),
            Decision::DifferentStatus
        );
    }
}
