//! Pattern checks on the lines a change adds: debug statements (per language), merge-conflict
//! markers, new TODO/FIXME notes, private keys and cloud-key-shaped secrets, plus the project's
//! own patterns. Pure: added lines in, findings out. A secret is never repeated in a finding:
//! only a masked form is shown.

use std::sync::OnceLock;

use regex::Regex;

use crate::config::file::{BuiltinCheck, PatternChecksConfig, PatternKind};
use crate::model::{Finding, Gate, GateStatus, IssueType, Severity};

/// Findings kept per gate (the rest are counted).
const MAX_FINDINGS: usize = 50;

/// Files never checked: lock files and minified bundles (generated, not written).
const GENERATED: [&str; 7] = [
    "*.lock",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "*.min.js",
    "*.min.css",
    "*.map",
];

/// One rule: a regex and what a match means.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub kind: IssueType,
    pub blocking: bool,
    regex: Regex,
    /// File extensions the rule applies to (empty: every file).
    extensions: &'static [&'static str],
    /// Globs the rule applies to (custom rules; empty: every file).
    files: Vec<glob::Pattern>,
    title: String,
    fix: String,
    /// The match is a secret: shown masked only.
    secret: bool,
    /// Lines that are comments in the file's language are skipped (debug statements).
    skip_comments: bool,
}

struct Builtin {
    check: BuiltinCheck,
    regex: &'static str,
    extensions: &'static [&'static str],
    title: &'static str,
    fix: &'static str,
}

const JS: &[&str] = &[
    "js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "vue", "svelte",
];
const PY: &[&str] = &["py"];
const RB: &[&str] = &["rb", "erb", "rake"];
const RS: &[&str] = &["rs"];
const PHP: &[&str] = &["php"];
const JVM: &[&str] = &["java", "kt", "kts", "scala", "groovy"];
const GO: &[&str] = &["go"];

const BUILTINS: &[Builtin] = &[
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"\bconsole\.(?:log|debug|trace|dir)\s*\(|^\s*debugger\s*;?\s*$",
        extensions: JS,
        title: "Debug statement added",
        fix: "Remove the debug statement (use the project's logger if the output is wanted).",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"^\s*print\s*\(|\b(?:i?pdb|pudb)\.set_trace\s*\(|^\s*breakpoint\s*\(\s*\)|^\s*import\s+i?pdb\b",
        extensions: PY,
        title: "Debug statement added",
        fix: "Remove the debug statement (use `logging` if the output is wanted).",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"\bbinding\.(?:pry|irb)\b|^\s*byebug\b|^\s*debugger\b",
        extensions: RB,
        title: "Debug statement added",
        fix: "Remove the debugger call.",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"\bdbg!\s*\(",
        extensions: RS,
        title: "Debug statement added",
        fix: "Remove the `dbg!` call.",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"\b(?:var_dump|print_r|dd)\s*\(",
        extensions: PHP,
        title: "Debug statement added",
        fix: "Remove the debug output.",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"\bSystem\.(?:out|err)\.print(?:ln|f)?\s*\(|\.printStackTrace\s*\(\s*\)",
        extensions: JVM,
        title: "Debug statement added",
        fix: "Remove the debug output (use the project's logger).",
    },
    Builtin {
        check: BuiltinCheck::DebugStatement,
        regex: r"^\s*print(?:ln)?\s*\(",
        extensions: GO,
        title: "Debug statement added",
        fix: "Remove the builtin `print`/`println` call.",
    },
    Builtin {
        check: BuiltinCheck::ConflictMarker,
        regex: r"^(?:<{7}|>{7})(?:\s|$)",
        extensions: &[],
        title: "Merge-conflict marker left in the file",
        fix: "Resolve the conflict and remove the markers.",
    },
    Builtin {
        check: BuiltinCheck::Todo,
        regex: r"\b(?:TODO|FIXME|XXX|HACK)\b",
        extensions: &[],
        title: "New TODO/FIXME note",
        fix: "Finish the work, or track it in an issue instead of the code.",
    },
    Builtin {
        check: BuiltinCheck::PrivateKey,
        regex: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        extensions: &[],
        title: "Private key added",
        fix: "Remove the key from the change and from the history, and revoke it.",
    },
    Builtin {
        check: BuiltinCheck::CloudKey,
        regex: concat!(
            r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
            r"|\bgh[pousr]_[A-Za-z0-9]{36}\b",
            r"|\bgithub_pat_[A-Za-z0-9_]{50,}",
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
            r"|\bAIza[0-9A-Za-z_\-]{35}\b",
            r"|\b[rs]k_live_[0-9A-Za-z]{20,}",
            r"|\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{20,}",
            r"|\bsk-[A-Za-z0-9_\-]*T3BlbkFJ[A-Za-z0-9_\-]{10,}",
        ),
        extensions: &[],
        title: "Credential added",
        fix: "Remove the credential from the change, revoke it, and read it from the environment or a secret store.",
    },
];

/// The built-in regexes, compiled once per process (index = position in `BUILTINS`).
fn builtin_regexes() -> &'static [Regex] {
    static RES: OnceLock<Vec<Regex>> = OnceLock::new();
    RES.get_or_init(|| {
        BUILTINS
            .iter()
            .map(|b| Regex::new(b.regex).expect("built-in pattern"))
            .collect()
    })
}

/// The rules a configuration turns on.
pub fn rules(cfg: &PatternChecksConfig) -> Vec<Rule> {
    let blocking = |c: BuiltinCheck| match &cfg.blocking {
        Some(list) => list.contains(&c),
        None => c.blocking_by_default(),
    };
    let mut out: Vec<Rule> = BUILTINS
        .iter()
        .zip(builtin_regexes())
        .filter(|(b, _)| !cfg.disable.contains(&b.check))
        .map(|(b, regex)| {
            let secret = matches!(b.check, BuiltinCheck::PrivateKey | BuiltinCheck::CloudKey);
            Rule {
                id: b.check.id().to_string(),
                kind: if secret {
                    IssueType::Security
                } else {
                    IssueType::CodeQuality
                },
                blocking: blocking(b.check),
                regex: regex.clone(),
                extensions: b.extensions,
                files: Vec::new(),
                title: b.title.to_string(),
                fix: b.fix.to_string(),
                secret,
                skip_comments: b.check == BuiltinCheck::DebugStatement,
            }
        })
        .collect();
    for c in &cfg.custom {
        let Ok(regex) = Regex::new(&c.pattern.0) else {
            continue; // validated when the config was read
        };
        out.push(Rule {
            id: c.id.clone(),
            kind: match c.kind {
                Some(PatternKind::Security) => IssueType::Security,
                _ => IssueType::CodeQuality,
            },
            blocking: c.blocking.unwrap_or(false),
            regex,
            extensions: &[],
            files: c
                .files
                .iter()
                .filter_map(|g| glob::Pattern::new(g).ok())
                .collect(),
            title: c.message.clone(),
            fix: String::new(),
            secret: false,
            skip_comments: false,
        });
    }
    out
}

fn extension(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or("", |(_, e)| e)
}

fn glob_matches(pattern: &glob::Pattern, path: &str) -> bool {
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: false,
        require_literal_leading_dot: false,
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    pattern.matches_with(path, opts) || pattern.matches_with(name, opts)
}

fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    ["//", "#", "/*", "*", "--", ";"]
        .iter()
        .any(|c| t.starts_with(c))
}

/// `AKIA…` + length: enough to find it, never enough to use it.
fn mask(secret: &str) -> String {
    let shown: String = secret.chars().take(4).collect();
    format!("{shown}… ({} characters)", secret.chars().count())
}

/// A finding with whether it blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternFinding {
    pub finding: Finding,
    pub blocking: bool,
    pub rule: String,
}

/// Runs the rules over added lines as they come, a file's lines together (the change is never
/// held whole). `skip` lists path prefixes never checked (the out dir).
pub struct Checker<'a> {
    rules: Vec<Rule>,
    excluded: Vec<glob::Pattern>,
    skip: &'a [String],
    /// The file being checked and the rules that apply to it (none: not checked).
    current: Option<(String, Applicable)>,
    /// The sets of rules seen so far (by extension, mostly), each built once.
    /// Shared, never cloned: a cloned set starts with empty caches (its lazy DFA is built again).
    sets: std::collections::HashMap<Vec<usize>, Option<std::sync::Arc<regex::RegexSet>>>,
    found: Vec<PatternFinding>,
}

/// The rules that apply to a file, and all of them as one set: a line is searched once for
/// any of them, and only a line that matches one is searched by each (most lines match none).
struct Applicable {
    rules: Vec<usize>,
    set: Option<std::sync::Arc<regex::RegexSet>>,
}

impl<'a> Checker<'a> {
    pub fn new(cfg: &PatternChecksConfig, skip: &'a [String]) -> Self {
        Checker {
            rules: rules(cfg),
            excluded: cfg
                .exclude
                .iter()
                .map(String::as_str)
                .chain(GENERATED)
                .filter_map(|g| glob::Pattern::new(g).ok())
                .collect(),
            skip,
            current: None,
            sets: std::collections::HashMap::new(),
            found: Vec::new(),
        }
    }

    /// The rules that apply to `path` (none when it is skipped or excluded).
    fn applicable(&self, path: &str) -> Vec<usize> {
        if self.skip.iter().any(|s| path.starts_with(s.as_str()))
            || self.excluded.iter().any(|g| glob_matches(g, path))
        {
            return Vec::new();
        }
        let ext = extension(path);
        (0..self.rules.len())
            .filter(|&i| {
                let r = &self.rules[i];
                (r.extensions.is_empty() || r.extensions.contains(&ext))
                    && (r.files.is_empty() || r.files.iter().any(|g| glob_matches(g, path)))
            })
            .collect()
    }

    /// Line `number` of `path`, added with `text`.
    pub fn line(&mut self, path: &str, number: u32, text: &str) {
        if self.current.as_ref().is_none_or(|(p, _)| p != path) {
            let rules = self.applicable(path);
            let set = self
                .sets
                .entry(rules.clone())
                .or_insert_with(|| {
                    regex::RegexSet::new(rules.iter().map(|&i| self.rules[i].regex.as_str()))
                        .ok()
                        .map(std::sync::Arc::new)
                })
                .clone();
            self.current = Some((path.to_string(), Applicable { rules, set }));
        }
        let Some((_, applicable)) = &self.current else {
            return;
        };
        let matched: Vec<usize> = match &applicable.set {
            Some(set) if !set.is_match(text) => return,
            Some(set) => set
                .matches(text)
                .into_iter()
                .map(|k| applicable.rules[k])
                .collect(),
            None => applicable.rules.clone(),
        };
        for i in matched {
            let rule = &self.rules[i];
            if rule.skip_comments && is_comment(text) {
                continue;
            }
            let Some(m) = rule.regex.find(text) else {
                continue;
            };
            let (title, detail) = if rule.secret {
                let shown = mask(m.as_str());
                (
                    format!("{}: `{shown}`", rule.title),
                    format!("{path}:{number}: {shown}"),
                )
            } else {
                let line: String = text.trim().chars().take(200).collect();
                (format!("{}: `{line}`", rule.title), line)
            };
            self.found.push(PatternFinding {
                finding: Finding {
                    kind: rule.kind,
                    severity: match (rule.kind, rule.blocking) {
                        (IssueType::Security, _) => Severity::Critical,
                        (_, true) => Severity::High,
                        _ => Severity::Low,
                    },
                    title,
                    file: Some(path.to_string()),
                    line: Some(number),
                    detail,
                    fix: rule.fix.clone(),
                },
                blocking: rule.blocking,
                rule: rule.id.clone(),
            });
        }
    }

    pub fn finish(self) -> Vec<PatternFinding> {
        self.found
    }
}

/// Runs the rules over added lines held in full: `(path, [(line number, text)])`.
#[cfg(test)]
pub fn check<'a>(
    added: impl IntoIterator<Item = (&'a str, &'a [(u32, String)])>,
    cfg: &PatternChecksConfig,
    skip: &[String],
) -> Vec<PatternFinding> {
    let mut checker = Checker::new(cfg, skip);
    for (path, lines) in added {
        for (n, text) in lines {
            checker.line(path, *n, text);
        }
    }
    checker.finish()
}

/// The `patterns` gate (required: blocking findings) and the `patterns:advisory` gate (shown to
/// the reviewer, never an issue by itself).
pub fn gates(findings: Vec<PatternFinding>, files_checked: usize) -> Vec<Gate> {
    let (blocking, advisory): (Vec<_>, Vec<_>) = findings.into_iter().partition(|f| f.blocking);
    let make = |name: &str, required: bool, found: Vec<PatternFinding>| {
        let status = if found.is_empty() {
            GateStatus::Passed
        } else {
            GateStatus::Failed
        };
        let summary = if found.is_empty() {
            format!("no findings on the lines added in {files_checked} file(s)")
        } else {
            let mut by_rule: std::collections::BTreeMap<&str, usize> = Default::default();
            for f in &found {
                *by_rule.entry(f.rule.as_str()).or_default() += 1;
            }
            let parts: Vec<String> = by_rule.iter().map(|(r, n)| format!("{n} {r}")).collect();
            format!("{} on added lines", parts.join(", "))
        };
        let total = found.len();
        let mut gate = Gate::new(
            name,
            if found.iter().any(|f| f.finding.kind == IssueType::Security) {
                IssueType::Security
            } else {
                IssueType::CodeQuality
            },
            required,
            status,
            summary,
            "",
        );
        gate.findings = found
            .into_iter()
            .take(MAX_FINDINGS)
            .map(|f| f.finding)
            .collect();
        if total > MAX_FINDINGS {
            gate.summary
                .push_str(&format!(" ({} not listed)", total - MAX_FINDINGS));
        }
        gate
    };
    vec![
        make("patterns", true, blocking),
        make("patterns:advisory", false, advisory),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Added lines held in full, per file.
    type AddedLines = Vec<(String, Vec<(u32, String)>)>;

    fn check(a: &AddedLines, cfg: &PatternChecksConfig, skip: &[String]) -> Vec<PatternFinding> {
        super::check(a.iter().map(|(p, l)| (p.as_str(), l.as_slice())), cfg, skip)
    }

    fn added(files: &[(&str, &[&str])]) -> AddedLines {
        files
            .iter()
            .map(|(f, lines)| {
                (
                    f.to_string(),
                    lines
                        .iter()
                        .enumerate()
                        .map(|(i, l)| (i as u32 + 1, l.to_string()))
                        .collect(),
                )
            })
            // In path order, as git lists a diff.
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect()
    }

    fn found(a: &AddedLines, cfg: &PatternChecksConfig) -> Vec<(String, String, u32, bool)> {
        check(a, cfg, &[".qa-loop/".into()])
            .into_iter()
            .map(|f| {
                (
                    f.rule,
                    f.finding.file.unwrap(),
                    f.finding.line.unwrap(),
                    f.blocking,
                )
            })
            .collect()
    }

    #[test]
    fn debug_statements_are_found_per_language_and_not_in_comments_or_other_languages() {
        let a = added(&[
            (
                "web/app.ts",
                &[
                    "const x = 1;",
                    "console.log(x);",
                    "// console.log(x)",
                    "  debugger;",
                ],
            ),
            (
                "calc.py",
                &[
                    "print('hi')",
                    "import pdb; pdb.set_trace()",
                    "    breakpoint()",
                    "# print(x)",
                    "printer(x)",
                ],
            ),
            ("lib.rs", &["let y = dbg!(x);"]),
            ("app.rb", &["binding.pry"]),
            ("x.php", &["var_dump($a);"]),
            (
                "A.java",
                &["System.out.println(a);", "e.printStackTrace();"],
            ),
            (
                "main.go",
                &[
                    "\tprintln(\"here\")",
                    "\tfmt.Println(\"kept: a CLI prints\")",
                ],
            ),
            ("README.md", &["Call `console.log(x)` to debug."]),
        ]);
        let got = found(&a, &PatternChecksConfig::default());
        let at: Vec<(&str, u32)> = got.iter().map(|g| (g.1.as_str(), g.2)).collect();
        assert_eq!(
            at,
            [
                ("A.java", 1),
                ("A.java", 2),
                ("app.rb", 1),
                ("calc.py", 1),
                ("calc.py", 2),
                ("calc.py", 3),
                ("lib.rs", 1),
                ("main.go", 1),
                ("web/app.ts", 2),
                ("web/app.ts", 4),
                ("x.php", 1),
            ]
        );
        assert!(
            got.iter().all(|g| g.0 == "debug_statement" && !g.3),
            "advisory by default"
        );
    }

    #[test]
    fn conflict_markers_todos_and_secrets_with_the_secret_masked() {
        let aws = "AKIAIOSFODNN7EXAMPLE";
        let gh = format!("ghp_{}", "a1B2".repeat(9));
        let a = added(&[(
            "config/settings.py",
            &[
                "<<<<<<< HEAD",
                "=======",
                ">>>>>>> feature",
                "# TODO: handle refunds",
                "todo_list = []",
                &format!("AWS_KEY = '{aws}'"),
                &format!("token = \"{gh}\""),
                "-----BEGIN OPENSSH PRIVATE KEY-----",
                "Heading",
                "=======",
            ],
        )]);
        let all = check(&a, &PatternChecksConfig::default(), &[]);
        let got: Vec<(&str, u32, bool)> = all
            .iter()
            .map(|f| (f.rule.as_str(), f.finding.line.unwrap(), f.blocking))
            .collect();
        assert_eq!(
            got,
            [
                ("conflict_marker", 1, true),
                ("conflict_marker", 3, true),
                ("todo", 4, false),
                ("cloud_key", 6, true),
                ("cloud_key", 7, true),
                ("private_key", 8, true),
            ]
        );
        for f in &all {
            let shown = format!("{} {}", f.finding.title, f.finding.detail);
            assert!(
                !shown.contains(aws) && !shown.contains(&gh),
                "secret leaked: {shown}"
            );
        }
        assert!(all[3].finding.title.contains("AKIA… (20 characters)"));
        assert_eq!(all[3].finding.kind, IssueType::Security);
        assert_eq!(all[3].finding.severity, Severity::Critical);
    }

    #[test]
    fn configuration_disables_excludes_changes_blocking_and_adds_custom_rules() {
        let yaml = r#"
disable: [todo]
blocking: [debug_statement]
exclude: ["tests/fixtures/**"]
custom:
  - id: focused-test
    pattern: '\b(?:it|describe|test)\.only\('
    message: Focused test left in
    files: ["*.test.ts"]
    blocking: true
"#;
        let cfg: PatternChecksConfig = serde_saphyr::from_str(yaml).unwrap();
        let a = added(&[
            ("src/a.ts", &["console.log(1) // TODO"]),
            ("src/a.test.ts", &["it.only('x', () => {})"]),
            ("src/b.ts", &["it.only('not a test file')"]),
            (
                "tests/fixtures/keys/fake.pem",
                &["-----BEGIN RSA PRIVATE KEY-----"],
            ),
            (".qa-loop/qa_report.md", &["<<<<<<< in the out dir"]),
            ("package-lock.json", &["\"TODO\": console.log("]),
        ]);
        let got = found(&a, &cfg);
        let want = [
            ("focused-test", "src/a.test.ts", 1, true),
            ("debug_statement", "src/a.ts", 1, true),
        ];
        let got: Vec<_> = got
            .iter()
            .map(|g| (g.0.as_str(), g.1.as_str(), g.2, g.3))
            .collect();
        assert_eq!(got, want);
        let bad: Result<PatternChecksConfig, _> =
            serde_saphyr::from_str("custom:\n  - id: x\n    pattern: 'a(b'\n    message: m\n");
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("invalid regular expression")
        );
    }

    #[test]
    fn gates_split_blocking_from_advisory_findings() {
        let a = added(&[("a.py", &["print(1)", "<<<<<<< HEAD"])]);
        let gates = gates(check(&a, &PatternChecksConfig::default(), &[]), 1);
        assert_eq!(gates[0].name, "patterns");
        assert_eq!(
            (gates[0].required, gates[0].status),
            (true, GateStatus::Failed)
        );
        assert_eq!(gates[0].summary, "1 conflict_marker on added lines");
        assert_eq!(gates[0].findings.len(), 1);
        assert_eq!(gates[1].name, "patterns:advisory");
        assert_eq!(
            (gates[1].required, gates[1].status),
            (false, GateStatus::Failed)
        );
        assert_eq!(gates[1].findings[0].line, Some(1));
        let clean = gates_of(&added(&[("a.py", &["x = 1"])]));
        assert!(clean.iter().all(|g| g.status == GateStatus::Passed));
    }

    fn gates_of(a: &AddedLines) -> Vec<Gate> {
        gates(check(a, &PatternChecksConfig::default(), &[]), a.len())
    }
}
