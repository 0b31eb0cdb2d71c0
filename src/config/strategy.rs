//! The resolved verification strategy: which suites run, which are gates, and the acceptance
//! criteria, after merging the config file, the plan and the spec.

use std::time::Duration;

use serde::Serialize;

use super::file::{
    ConversationsConfig, PatternChecksConfig, RiskLevel, StrategyLayer, SuiteConfig,
};

/// Default per-command timeout.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The three test suites of a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SuiteKind {
    Unit,
    Integration,
    E2e,
}

impl SuiteKind {
    /// The config key (`unit_tests`, …).
    pub fn key(self) -> &'static str {
        match self {
            SuiteKind::Unit => "unit_tests",
            SuiteKind::Integration => "integration_tests",
            SuiteKind::E2e => "e2e_tests",
        }
    }

    /// The short name used in `tests_passed{unit,integration,e2e}`.
    pub fn short(self) -> &'static str {
        match self {
            SuiteKind::Unit => "unit",
            SuiteKind::Integration => "integration",
            SuiteKind::E2e => "e2e",
        }
    }

    /// Whether the risk level requires this suite when the suite does not say.
    pub fn required_at(self, risk: RiskLevel) -> bool {
        match risk {
            RiskLevel::Trivial => false,
            RiskLevel::Low => self == SuiteKind::Unit,
            RiskLevel::Medium => matches!(self, SuiteKind::Unit | SuiteKind::Integration),
            RiskLevel::High | RiskLevel::Critical => true,
        }
    }
}

fn is_report(p: &super::file::FlakyPolicy) -> bool {
    *p == super::file::FlakyPolicy::Report
}

/// Why a suite is (or is not) a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequiredBy {
    /// The suite's own `required` field.
    Config,
    /// The risk level's rule.
    RiskLevel,
}

/// One resolved suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suite {
    pub kind: SuiteKind,
    pub required: bool,
    pub required_by: RequiredBy,
    pub commands: Vec<String>,
    pub junit: Vec<String>,
    pub coverage: Vec<String>,
    pub minimum_coverage: Option<f64>,
    pub flows: Vec<String>,
    #[serde(serialize_with = "ser_secs")]
    pub timeout: Duration,
    /// Where each command came from (same order as `commands`).
    pub sources: Vec<String>,
    /// The files the suite tests (globs); empty: every change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths_ignore: Vec<String>,
    /// Runs whatever the change touches.
    pub always: bool,
    /// Required at `high`/`critical`: every required suite runs whatever its `paths` (SPEC
    /// §3.1); below, the paths decide even for a suite the risk level requires.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paths_overridden: bool,
    /// Executing no test passes (else the suite fails: "ran no tests").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_no_tests: bool,
    /// Where the commands run, relative to the repository (`junit`/`coverage` globs are already
    /// joined to it); `None`: the repository's root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
}

impl Suite {
    /// Whether the suite is chosen by the paths a change touches.
    pub fn by_path(&self) -> bool {
        !self.paths.is_empty() || !self.paths_ignore.is_empty()
    }

    /// Why the suite is skipped for a change touching `changed` (repository-relative paths),
    /// or `None` when it runs: it has no `paths`/`paths_ignore`, is `always`, is required at
    /// `high`/`critical` (SPEC §3.1: there every required suite runs), the change is unknown (it
    /// runs — a gate never silently disappears), or a changed file is under its `paths` and not
    /// under `paths_ignore`. Below `high` the paths decide, also for a suite the risk level
    /// requires: that is what a monorepo sets them for.
    pub fn skip_reason(&self, changed: Option<&[String]>) -> Option<String> {
        if !self.by_path() || self.always || self.paths_overridden {
            return None;
        }
        let changed = changed?;
        let globs = |list: &[String]| -> Vec<glob::Pattern> {
            list.iter()
                .filter_map(|g| super::file::glob_pattern(g).ok())
                .collect()
        };
        let (paths, ignore) = (globs(&self.paths), globs(&self.paths_ignore));
        let opts = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        let relevant = changed.iter().any(|f| {
            (paths.is_empty() || paths.iter().any(|p| p.matches_with(f, opts)))
                && !ignore.iter().any(|p| p.matches_with(f, opts))
        });
        if relevant {
            return None;
        }
        Some(if changed.is_empty() {
            "skipped: the change touches no file".to_string()
        } else if self.paths.is_empty() {
            format!(
                "skipped: the change touches only files in `paths_ignore` ({})",
                self.paths_ignore.join(", ")
            )
        } else {
            format!(
                "skipped: the change touches none of {} ({} file(s) changed elsewhere)",
                self.paths.join(", "),
                changed.len()
            )
        })
    }
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// Where an acceptance criterion came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionSource {
    Spec,
    Config,
    Plan,
    PullRequest,
}

/// One acceptance criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Criterion {
    pub text: String,
    pub source: CriterionSource,
    /// Where exactly: `spec.md:42 (Success Criteria)`, `implementation_plan.json:
    /// final_acceptance[0]`, `qa-loop.yml: acceptance_criteria[1]`.
    pub origin: String,
}

/// A text and where it came from (file and line, or file and key path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sourced {
    pub text: String,
    pub origin: String,
}

impl Sourced {
    /// A criterion as it may reach a model: hidden carriers stripped ([`crate::text::visible`]).
    pub fn new(text: impl Into<String>, origin: impl Into<String>) -> Sourced {
        Sourced {
            text: crate::text::visible(&text.into()).trim().to_string(),
            origin: origin.into(),
        }
    }
}

/// The acceptance-criteria lists of each source, before merging (SPEC §3.2 order).
#[derive(Debug, Clone, Default)]
pub struct CriteriaLists {
    pub spec: Vec<Sourced>,
    /// The plan's `final_acceptance`.
    pub final_acceptance: Vec<Sourced>,
    pub config: Vec<Sourced>,
    /// The plan's `verification_strategy` criteria (and `qa_acceptance.database_verification`).
    pub plan: Vec<Sourced>,
}

/// A subtask's own check (Auto-Claude's `verification: {"type": "command"}`): run after the
/// suites as an advisory gate named after the subtask; its result is evidence for the reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The subtask id (`subtask-1-1`); the gate is `check:<name>`.
    pub name: String,
    /// The subtask's description.
    pub description: String,
    pub command: String,
    /// What the plan expects it to print or do (shown, not matched: Auto-Claude writes prose
    /// such as "All tests pass" as often as literal output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    pub origin: String,
}

/// The verification strategy qa-loop will carry out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Strategy {
    pub risk_level: RiskLevel,
    /// Suites with commands, plus required suites without any (they fail their gate).
    pub suites: Vec<Suite>,
    pub parallel: bool,
    /// Whether a test that passed only on a re-run blocks.
    #[serde(skip_serializing_if = "is_report")]
    pub flaky: super::file::FlakyPolicy,
    /// How often failing tests are re-run before they count as defects.
    pub flaky_reruns: u32,
    #[serde(skip)]
    pub conversations: Option<ConversationsConfig>,
    /// Pages verified in a headless browser (SPEC §12); `None` without pages or without the
    /// MCP server that drives the browser (the pages are then told to the reviewer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser: Option<super::file::BrowserVerificationConfig>,
    /// No test commands anywhere: QA validates by inspection (SPEC §3.1).
    pub no_test_project: bool,
    /// `critical` risk: a human must sign off before approval.
    pub human_signoff_required: bool,
    pub criteria: Vec<Criterion>,
    /// Checks on added lines; `None` when turned off.
    pub pattern_checks: Option<PatternChecksConfig>,
    /// Tests found in the project when no suite has commands (filled by `load_inputs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub discovered: Vec<super::discover::Discovered>,
    /// The plan's subtask commands, run as advisory checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// What the plan asks a reviewer to walk through (flows, pages, API calls, manual checks):
    /// told to the reviewer, never a gate by itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviewer_checks: Vec<Sourced>,
    /// The per-command timeout of the checks (the strategy's `timeout`).
    #[serde(skip)]
    pub check_timeout: Duration,
}

impl Strategy {
    /// Resolves a merged layer (config over plan) and the criteria lists, in SPEC §3.2 order.
    pub fn resolve(layer: &StrategyLayer, criteria: CriteriaLists) -> Strategy {
        let risk = layer.risk_level.unwrap_or(RiskLevel::Medium);
        let default_timeout = layer.timeout.map_or(DEFAULT_COMMAND_TIMEOUT, |d| d.0);
        let mut suites = Vec::new();
        for (kind, cfg) in [
            (SuiteKind::Unit, &layer.unit_tests),
            (SuiteKind::Integration, &layer.integration_tests),
            (SuiteKind::E2e, &layer.e2e_tests),
        ] {
            let cfg = cfg.clone().unwrap_or_default();
            let (required, required_by) = match cfg.required {
                // `required: true` where the risk level requires the suite anyway: required by
                // the risk level (at `high`/`critical` its `paths:` cannot skip it).
                Some(true) if kind.required_at(risk) && !cfg.commands.is_empty() => {
                    (true, RequiredBy::RiskLevel)
                }
                Some(r) => (r, RequiredBy::Config),
                // The risk rule requires suites that exist; `critical` requires e2e regardless.
                None => (
                    kind.required_at(risk)
                        && (!cfg.commands.is_empty()
                            || (risk == RiskLevel::Critical && kind == SuiteKind::E2e)),
                    RequiredBy::RiskLevel,
                ),
            };
            if cfg.commands.is_empty() && !required {
                continue;
            }
            let mut suite = suite(kind, cfg, required, required_by, default_timeout);
            suite.paths_overridden =
                required && matches!(risk, RiskLevel::High | RiskLevel::Critical);
            suites.push(suite);
        }
        // A suite of reports produced elsewhere (`junit`/`coverage`, no commands) is a test suite.
        let no_test_project = suites
            .iter()
            .all(|s| s.commands.is_empty() && s.junit.is_empty() && s.coverage.is_empty())
            && layer
                .conversations
                .as_ref()
                .is_none_or(|c| c.scenarios.is_empty())
            && layer
                .browser_verification
                .as_ref()
                .is_none_or(|b| b.pages.is_empty());
        let criteria = merge_criteria([
            (CriterionSource::Spec, criteria.spec),
            (CriterionSource::Plan, criteria.final_acceptance),
            (CriterionSource::Config, criteria.config),
            (CriterionSource::Plan, criteria.plan),
        ]);
        Strategy {
            risk_level: risk,
            suites,
            parallel: layer.parallel.unwrap_or(false),
            flaky: layer.flaky.unwrap_or_default(),
            flaky_reruns: layer.flaky_reruns.unwrap_or(1),
            conversations: layer.conversations.clone(),
            browser: layer
                .browser_verification
                .clone()
                .filter(|b| !b.pages.is_empty()),
            no_test_project,
            human_signoff_required: risk == RiskLevel::Critical,
            criteria,
            discovered: Vec::new(),
            checks: Vec::new(),
            reviewer_checks: Vec::new(),
            check_timeout: default_timeout,
            pattern_checks: match layer.pattern_checks.clone() {
                Some(p) if p.enabled == Some(false) => None,
                p => Some(p.unwrap_or_default()),
            },
        }
    }
}

fn suite(
    kind: SuiteKind,
    cfg: SuiteConfig,
    required: bool,
    required_by: RequiredBy,
    timeout: Duration,
) -> Suite {
    Suite {
        kind,
        required,
        required_by,
        timeout: cfg.timeout.map_or(timeout, |d| d.0),
        // Commands of the config file carry no origin (the plan's do).
        sources: (0..cfg.commands.len())
            .map(|i| {
                cfg.origins
                    .get(i)
                    .filter(|o| !o.is_empty())
                    .cloned()
                    .unwrap_or_else(|| format!("config: {}.commands[{i}]", kind.key()))
            })
            .collect(),
        commands: cfg.commands,
        junit: in_dir(&cfg.working_directory, cfg.junit),
        coverage: in_dir(&cfg.working_directory, cfg.coverage),
        working_directory: cfg.working_directory,
        minimum_coverage: cfg.minimum_coverage,
        flows: cfg.flows,
        paths: cfg.paths,
        paths_ignore: cfg.paths_ignore,
        always: cfg.always.unwrap_or(false),
        paths_overridden: false,
        allow_no_tests: cfg.allow_no_tests.unwrap_or(false),
    }
}

/// Globs relative to a suite's working directory, made relative to the repository.
fn in_dir(dir: &Option<String>, globs: Vec<String>) -> Vec<String> {
    match dir {
        None => globs,
        Some(dir) => globs
            .into_iter()
            .map(|g| format!("{dir}/{}", g.trim_start_matches("./")))
            .collect(),
    }
}

/// Merges criteria lists in order, dropping repeats ([`criterion_key`]).
pub fn merge_criteria<const N: usize>(
    lists: [(CriterionSource, Vec<Sourced>); N],
) -> Vec<Criterion> {
    let mut out = Vec::new();
    for (source, list) in lists {
        add_criteria(&mut out, source, list);
    }
    out
}

/// Appends `list` to `criteria`, dropping repeats of what is there and of each other (the same
/// [`criterion_key`]); the first occurrence's text and origin are kept.
pub fn add_criteria(criteria: &mut Vec<Criterion>, source: CriterionSource, list: Vec<Sourced>) {
    let mut seen: std::collections::HashSet<String> =
        criteria.iter().map(|c| criterion_key(&c.text)).collect();
    for Sourced { text, origin } in list {
        let text = text.trim().to_string();
        let k = criterion_key(&text);
        if !k.is_empty() && seen.insert(k) {
            criteria.push(Criterion {
                text,
                source,
                origin,
            });
        }
    }
}

/// What two criteria are compared by: the text as it reads once Markdown is rendered — code
/// spans' backticks, emphasis (`*`, `**`, `_` around words), links' and images' targets
/// (`[text](url)` is `text`) and quotes around a literal (`'hello-world'` is `` `hello-world` ``)
/// dropped — in lower case, whitespace collapsed, final `.`, `!` or `;` dropped. A code span's
/// content is kept as it is (`` `__init__` ``).
pub fn criterion_key(text: &str) -> String {
    let plain = markdown_plain(text).to_lowercase();
    let plain = unquote_literals(&plain);
    plain
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', '!', ';'])
        .trim_end()
        .to_string()
}

/// `text` without its Markdown marks (see [`criterion_key`]).
fn markdown_plain(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '`' => {
                let run = chars[i..].iter().take_while(|&&c| c == '`').count();
                let close = (i + run..chars.len()).find(|&j| {
                    chars[j..].iter().take_while(|&&c| c == '`').count() == run
                        && (j == 0 || chars[j - 1] != '`')
                });
                match close {
                    Some(j) => {
                        out.extend(&chars[i + run..j]);
                        i = j + run;
                    }
                    None => i += run,
                }
                continue;
            }
            '*' => {}
            '_' => {
                let before = i > 0 && chars[i - 1].is_alphanumeric();
                let after = chars.get(i + 1).is_some_and(|c| c.is_alphanumeric());
                if before && after {
                    out.push('_');
                }
            }
            '!' if chars.get(i + 1) == Some(&'[') && link_end(&chars, i + 1).is_some() => {}
            '[' => match link_end(&chars, i) {
                Some((text_end, end)) => {
                    out.push_str(&markdown_plain(
                        &chars[i + 1..text_end].iter().collect::<String>(),
                    ));
                    i = end;
                    continue;
                }
                None => out.push('['),
            },
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// For a `[` at `open` that starts a link `[text](url)`: where its text ends (the `]`) and the
/// index after its `)`.
fn link_end(chars: &[char], open: usize) -> Option<(usize, usize)> {
    let close = open + chars[open..].iter().position(|&c| c == ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = close + 1 + chars[close + 1..].iter().position(|&c| c == ')')?;
    Some((close, end + 1))
}

/// `text` without the quotes that open a literal after a space (or at the start) and close it
/// before a space, punctuation or the end: `returns 'hello-world'` reads `returns hello-world`
/// (a code span's way of quoting); quotes inside words and calls (`don't`, `f('x')`) stay.
fn unquote_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let quote = |c: char| matches!(c, '\'' | '"' | '‘' | '’' | '“' | '”');
    chars
        .iter()
        .enumerate()
        .filter(|&(i, &c)| {
            !quote(c)
                || !(i == 0
                    || chars[i - 1].is_whitespace()
                    || chars
                        .get(i + 1)
                        .is_none_or(|n| n.is_whitespace() || ".,;:!?".contains(*n)))
        })
        .map(|(_, &c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(risk: RiskLevel) -> StrategyLayer {
        let with = |cmd: &str| {
            Some(SuiteConfig {
                commands: vec![cmd.into()],
                ..SuiteConfig::default()
            })
        };
        StrategyLayer {
            risk_level: Some(risk),
            unit_tests: with("unit"),
            integration_tests: with("integ"),
            e2e_tests: with("e2e"),
            ..StrategyLayer::default()
        }
    }

    fn required(s: &Strategy) -> Vec<SuiteKind> {
        s.suites
            .iter()
            .filter(|s| s.required)
            .map(|s| s.kind)
            .collect()
    }

    #[test]
    fn risk_levels_decide_required_suites() {
        use SuiteKind::*;
        let table = [
            (RiskLevel::Trivial, vec![]),
            (RiskLevel::Low, vec![Unit]),
            (RiskLevel::Medium, vec![Unit, Integration]),
            (RiskLevel::High, vec![Unit, Integration, E2e]),
            (RiskLevel::Critical, vec![Unit, Integration, E2e]),
        ];
        for (risk, want) in table {
            let s = Strategy::resolve(&layer(risk), CriteriaLists::default());
            assert_eq!(required(&s), want, "{risk:?}");
            assert_eq!(s.human_signoff_required, risk == RiskLevel::Critical);
        }
    }

    #[test]
    fn explicit_required_beats_the_risk_rule() {
        let mut l = layer(RiskLevel::Trivial);
        l.unit_tests.as_mut().unwrap().required = Some(true);
        let s = Strategy::resolve(&l, CriteriaLists::default());
        assert_eq!(required(&s), vec![SuiteKind::Unit]);
        assert_eq!(s.suites[0].required_by, RequiredBy::Config);
    }

    #[test]
    fn critical_requires_e2e_even_when_absent_and_no_tests_means_no_test_project() {
        let l = StrategyLayer {
            risk_level: Some(RiskLevel::Critical),
            ..StrategyLayer::default()
        };
        let s = Strategy::resolve(&l, CriteriaLists::default());
        assert_eq!(required(&s), vec![SuiteKind::E2e]);
        assert!(s.suites[0].commands.is_empty());
        assert!(s.no_test_project);
        let s = Strategy::resolve(&layer(RiskLevel::Low), CriteriaLists::default());
        assert!(!s.no_test_project);
    }

    #[test]
    fn criteria_merge_in_order_without_repeats() {
        let s = |t: &str| Sourced::new(t, "here");
        let got = merge_criteria([
            (CriterionSource::Spec, vec![s("Users can log in"), s("  ")]),
            (
                CriterionSource::Config,
                vec![s("users can  log in."), s("Errors shown")],
            ),
            (
                CriterionSource::Plan,
                vec![s("Errors shown"), s("Audit log")],
            ),
        ]);
        let texts: Vec<_> = got.iter().map(|c| (c.text.as_str(), c.source)).collect();
        assert_eq!(
            texts,
            vec![
                ("Users can log in", CriterionSource::Spec),
                ("Errors shown", CriterionSource::Config),
                ("Audit log", CriterionSource::Plan)
            ]
        );
    }

    #[test]
    fn added_criteria_skip_what_is_there() {
        let mut got = merge_criteria([(CriterionSource::Spec, vec![Sourced::new("Sums", "s")])]);
        add_criteria(
            &mut got,
            CriterionSource::PullRequest,
            vec![Sourced::new("sums.", "pr"), Sourced::new("Docs", "pr")],
        );
        let texts: Vec<_> = got.iter().map(|c| (c.text.as_str(), c.source)).collect();
        assert_eq!(
            texts,
            vec![
                ("Sums", CriterionSource::Spec),
                ("Docs", CriterionSource::PullRequest)
            ]
        );
    }

    /// Issue 38: the same criterion written with and without Markdown is one criterion; the
    /// first occurrence's text is kept.
    #[test]
    fn criteria_are_compared_as_rendered_markdown() {
        let s = |t: &str| Sourced::new(t, "here");
        let got = merge_criteria([
            (
                CriterionSource::Spec,
                vec![
                    s("`slugify('Hello World')` returns `hello-world`"),
                    s("**Errors** are shown _inline_"),
                    s("See [the guide](https://example.com/g) for   rules"),
                    s("`__init__` exports `Cart`"),
                    s("![logo](logo.png) renders"),
                ],
            ),
            (
                CriterionSource::Plan,
                vec![
                    s("slugify('Hello World') returns 'hello-world'"),
                    s("errors are shown inline."),
                    s("see the guide for rules"),
                    s("init exports Cart"),
                    s("logo renders!"),
                    s("snake_case names stay"),
                    s("snakecase names stay"),
                    s("slugify(\"Hello World\") returns 'hello-world'"),
                ],
            ),
        ]);
        let texts: Vec<_> = got.iter().map(|c| (c.text.as_str(), c.source)).collect();
        assert_eq!(
            texts,
            vec![
                (
                    "`slugify('Hello World')` returns `hello-world`",
                    CriterionSource::Spec
                ),
                ("**Errors** are shown _inline_", CriterionSource::Spec),
                (
                    "See [the guide](https://example.com/g) for   rules",
                    CriterionSource::Spec
                ),
                ("`__init__` exports `Cart`", CriterionSource::Spec),
                ("![logo](logo.png) renders", CriterionSource::Spec),
                ("init exports Cart", CriterionSource::Plan),
                ("snake_case names stay", CriterionSource::Plan),
                ("snakecase names stay", CriterionSource::Plan),
                (
                    "slugify(\"Hello World\") returns 'hello-world'",
                    CriterionSource::Plan
                ),
            ]
        );
    }

    #[test]
    fn criterion_keys() {
        for (text, key) in [
            ("`a`  *b*  **c** _d_ __e__", "a b c d e"),
            ("``x ` y`` z", "x ` y z"),
            ("unclosed `tick", "unclosed tick"),
            (
                "[t](u) and [not a link] and [x]",
                "t and [not a link] and [x]",
            ),
            ("don't 'quote' \"this\"; ok.", "don't quote this; ok"),
            ("f('x') == 'y'!", "f('x') == y"),
            ("Tabs\tand\nlines ;", "tabs and lines"),
        ] {
            assert_eq!(criterion_key(text), key, "{text:?}");
        }
    }

    #[test]
    fn suites_are_chosen_by_the_paths_the_change_touches() {
        let mut l = layer(RiskLevel::Trivial);
        l.unit_tests.as_mut().unwrap().paths = vec!["api/".into()];
        l.unit_tests.as_mut().unwrap().required = Some(true);
        let s = Strategy::resolve(&l, CriteriaLists::default());
        let unit = &s.suites[0];
        let files = |f: &[&str]| f.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(unit.skip_reason(Some(&files(&["api/v1/users.py"]))), None);
        let why = unit
            .skip_reason(Some(&files(&["web/app.ts", "README.md"])))
            .unwrap();
        assert!(
            why.contains("the change touches none of api/") && why.contains("2 file(s)"),
            "{why}"
        );
        // An unknown change runs everything; `always` runs.
        assert_eq!(unit.skip_reason(None), None);
        let mut always = unit.clone();
        always.always = true;
        assert_eq!(always.skip_reason(Some(&files(&["web/a.ts"]))), None);
        // A suite the risk level requires runs whatever changed.
        let mut l = layer(RiskLevel::High);
        l.unit_tests.as_mut().unwrap().paths = vec!["api/**".into()];
        let s = Strategy::resolve(&l, CriteriaLists::default());
        assert_eq!(s.suites[0].required_by, RequiredBy::RiskLevel);
        assert_eq!(s.suites[0].skip_reason(Some(&files(&["web/a.ts"]))), None);
        // Also when the suite says `required: true` itself (issue 38: the docs' rule).
        l.unit_tests.as_mut().unwrap().required = Some(true);
        let s = Strategy::resolve(&l, CriteriaLists::default());
        assert_eq!(s.suites[0].skip_reason(Some(&files(&["web/a.ts"]))), None);
        // Issue 49: below `high` the paths decide, also for a suite the risk level requires.
        let mut low = layer(RiskLevel::Low);
        low.unit_tests.as_mut().unwrap().paths = vec!["py/**".into(), "shared/**".into()];
        let s = Strategy::resolve(&low, CriteriaLists::default());
        assert_eq!(s.suites[0].required_by, RequiredBy::RiskLevel);
        assert!(s.suites[0].required);
        assert_eq!(
            s.suites[0]
                .skip_reason(Some(&files(&["web/a.ts"])))
                .as_deref(),
            Some(
                "skipped: the change touches none of py/**, shared/** (1 file(s) changed elsewhere)"
            )
        );
        // `required: true` below the risk level that requires the suite: the paths decide.
        let mut low = layer(RiskLevel::Trivial);
        low.unit_tests.as_mut().unwrap().paths = vec!["api/**".into()];
        low.unit_tests.as_mut().unwrap().required = Some(true);
        let s = Strategy::resolve(&low, CriteriaLists::default());
        assert_eq!(s.suites[0].required_by, RequiredBy::Config);
        assert!(
            s.suites[0]
                .skip_reason(Some(&files(&["web/a.ts"])))
                .is_some()
        );
        // Only ignored files changed.
        let mut docs = unit.clone();
        docs.paths = vec![];
        docs.paths_ignore = vec!["**/*.md".into()];
        assert!(
            docs.skip_reason(Some(&files(&["docs/x.md", "README.md"])))
                .unwrap()
                .contains("only files in `paths_ignore`")
        );
        assert_eq!(
            docs.skip_reason(Some(&files(&["docs/x.md", "src/a.rs"]))),
            None
        );
    }
}
