//! Reading the input files: config (YAML or JSON), plan and spec. Each `parse_*` function is pure
//! (text in, value out) and each `load_*` function adds the file read; every error names the
//! file and, when the problem is inside it, the line and column.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::file::ConfigFile;
use super::strategy::Sourced;
use crate::error::InputError;
use crate::nofollow::read_text;

/// Where qa-loop looks for a config file when `--config` is not given, in order.
pub const DEFAULT_CONFIG_PATHS: [&str; 4] = [
    ".github/qa-loop.yml",
    ".github/qa-loop.yaml",
    "qa-loop.yml",
    "qa-loop.json",
];

/// Whether a path names a JSON document (by extension).
fn is_json(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Parses a config document; `path` only labels errors and picks JSON or YAML.
pub fn parse_config(path: &Path, text: &str) -> Result<ConfigFile, InputError> {
    if is_json(path) {
        parse_json(path, text)
    } else {
        parse_yaml(path, text)
    }
}

/// Parses JSON; an error about a value names the setting's path (`unit_tests.junit`), as for
/// YAML, and keeps its line and column.
pub fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T, InputError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let mut err = InputError::from_json(path, e.inner());
        err.message = expected_form(&err.message);
        let last = key.rsplit('.').next().unwrap_or(&key);
        // Values of the wrong form name their setting; syntax errors have none.
        let data = e.inner().classify() == serde_json::error::Category::Data;
        if data && !key.starts_with(['.', '?']) && !key.is_empty() && !err.message.contains(last) {
            err.message = format!("`{key}`: {}", err.message);
        }
        err
    })
}

/// Parses YAML with serde-saphyr (duplicate keys rejected, merge keys applied).
pub fn parse_yaml<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T, InputError> {
    if text.trim().is_empty() {
        // An empty file is an empty mapping: every setting at its default.
        return serde_json::from_str("{}").map_err(|e| InputError::from_json(path, &e));
    }
    serde_saphyr::from_str(text).map_err(|err| {
        let plain = err.without_snippet();
        let message = InputError::suggest(expected_form(&yaml_message(&plain.to_string())));
        match plain.location() {
            Some(loc) if loc.line() > 0 => {
                // Every error names the setting it is about.
                let message = match key_path_at(text, loc.line() as usize) {
                    // A value of the wrong form names its setting, unless the message does.
                    Some(key)
                        if about_a_value(&message)
                            && !message.contains(key.rsplit('.').next().unwrap_or(&key)) =>
                    {
                        format!("`{key}`: {message}")
                    }
                    _ => message,
                };
                InputError::at(path, loc.line(), loc.column().max(1), message)
            }
            _ => InputError::file(path, message),
        }
    })
}

/// The dotted key path of the YAML setting on `line` (1-based): the key written on it, under the
/// keys of the less indented lines above (`unit_tests.junit`). List items keep their parent key.
fn key_path_at(text: &str, line: usize) -> Option<String> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut found = None;
    for (n, raw) in text.lines().enumerate().take(line) {
        let content = raw.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = raw.len() - content.len();
        let item = content.strip_prefix("- ").map(str::trim_start);
        if item.is_some() && indent == 0 && stack.is_empty() {
            // A list at the top: its items are no settings.
            return None;
        }
        let (indent, content) = match item {
            Some(rest) => (indent + 2, rest),
            None => (indent, content),
        };
        let key = content.split_once(':').and_then(|(k, rest)| {
            let k = k.trim().trim_matches(['"', '\'']);
            let plain = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && (rest.is_empty() || rest.starts_with(' '));
            plain.then(|| k.to_string())
        });
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        if n + 1 == line {
            let mut path: Vec<String> = stack.iter().map(|(_, k)| k.clone()).collect();
            path.extend(key.clone());
            found = (!path.is_empty()).then(|| path.join("."));
        }
        if let Some(k) = key {
            stack.push((indent, k));
        }
    }
    found
}

/// Whether a message is about a setting's value (its form or range), not the file's syntax.
fn about_a_value(message: &str) -> bool {
    [
        "unknown variant",
        "expected ",
        "must ",
        "invalid type",
        "invalid value",
        "invalid duration",
        "a price needs",
        "prices must",
        "cache or long-context",
    ]
    .iter()
    .any(|p| message.starts_with(p))
}

/// The expected form in words for the parser's terse messages.
fn expected_form(message: &str) -> String {
    let m = message.trim();
    let said = match m {
        "invalid u8" | "invalid u16" | "invalid u32" | "invalid u64" | "invalid usize" => {
            "expected a whole number ≥ 0"
        }
        "invalid i32" | "invalid i64" => "expected a whole number",
        "invalid floating point" => "expected a number",
        "expected sequence start" => "expected a list (`[a, b]`, or one `- item` per line)",
        "expected mapping start" => "expected a mapping (`key: value` lines)",
        "invalid boolean" => "expected true or false",
        _ => return m.to_string(),
    };
    said.to_string()
}

/// serde-saphyr's plain message may carry its own position prefix or suffix; keep the words.
fn yaml_message(text: &str) -> String {
    let first = text.lines().next().unwrap_or(text).trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let cut = first.find(" at line ").map_or(first, |i| &first[..i]);
    // Library advice a user cannot act on.
    let cut = cut
        .find(", set DuplicateKeyPolicy")
        .map_or(cut, |i| &cut[..i]);
    cut.trim_end_matches(':').to_string()
}

/// Loads the config: an explicit path must exist; otherwise the first default path that exists
/// under `root`, or none.
pub fn load_config(
    explicit: Option<&Path>,
    root: &Path,
) -> Result<Option<(PathBuf, ConfigFile)>, InputError> {
    let Some(path) = config_path(explicit, root)? else {
        return Ok(None);
    };
    let text = read_text(&path)?;
    parse_config(&path, &text).map(|c| Some((path, c)))
}

/// Whether `path` lies inside `root` (symlinks resolved; a relative path that cannot be
/// resolved counts as inside).
pub fn inside(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => path.is_relative() || path.starts_with(root),
    }
}

/// The config file qa-loop reads: `explicit` (which must exist), else the first default path
/// under `root` that exists, else none.
pub fn config_path(explicit: Option<&Path>, root: &Path) -> Result<Option<PathBuf>, InputError> {
    Ok(Some(match explicit {
        Some(p) => {
            if !p.exists() {
                return Err(InputError::file(p, "config file not found"));
            }
            p.to_path_buf()
        }
        None => match DEFAULT_CONFIG_PATHS
            .iter()
            .map(|p| root.join(p))
            .find(|p| p.is_file())
        {
            Some(p) => p,
            None => return Ok(None),
        },
    }))
}

/// Extracts the `## Acceptance Criteria` checklist of a spec (any heading level; `- [ ]`,
/// `- [x]`, `*`, `+` and numbered items; indented continuation lines join the item), each with
/// where it is (`spec.md:42 (QA Acceptance Criteria › Unit Tests)`).
pub fn parse_spec_criteria(path: &Path, text: &str) -> Result<Vec<Sourced>, InputError> {
    parse_criteria_sections(path, text, &CRITERIA_SECTIONS)
}

/// The most criteria a pull request's description contributes, and the longest one kept
/// (the description is the PR author's text, shown to the reviewer: bounded in tokens).
const PR_CRITERIA: usize = 50;
const PR_CRITERION_CHARS: usize = 500;

/// The `## Acceptance Criteria` checklist of a pull request's description (SPEC §3.2), each
/// with where it is (`pull request #12 description:7 (Acceptance Criteria)`). Only that
/// section: a PR template's `## Verification` is what the author did, not what to check.
pub fn parse_pr_criteria(number: u64, body: &str) -> Result<Vec<Sourced>, InputError> {
    let label = std::path::PathBuf::from(format!("pull request #{number} description"));
    let mut criteria = parse_criteria_sections(&label, body, &CRITERIA_SECTIONS[..1])?;
    criteria.truncate(PR_CRITERIA);
    for c in &mut criteria {
        c.text = crate::text::clip(&c.text, PR_CRITERION_CHARS);
    }
    Ok(criteria)
}

/// The criteria of a Markdown text's `sections` (see [`parse_spec_criteria`]).
fn parse_criteria_sections(
    path: &Path,
    text: &str,
    sections: &[&str],
) -> Result<Vec<Sourced>, InputError> {
    let mut scan = CriteriaScan::new(path, sections);
    let mut in_fence = false;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx as u64 + 1;
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(level) = heading_level(trimmed) {
            scan.table = Table::Outside;
            scan.heading(level, trimmed);
            continue;
        }
        if scan.section_level.is_none() || trimmed.is_empty() {
            scan.table = Table::Outside;
            continue;
        }
        if let Some(cells) = table_cells(trimmed) {
            scan.table_line(cells, line_no);
            continue;
        }
        scan.table = Table::Outside;
        scan.list_line(raw, trimmed, line_no)?;
    }
    Ok(scan.criteria)
}

/// Where a scan for criteria sections is, and what it has found so far.
struct CriteriaScan<'a> {
    path: &'a Path,
    /// The file name, for origins.
    file: String,
    /// The titles of the sections whose items are criteria.
    sections: &'a [&'a str],
    criteria: Vec<Sourced>,
    /// The heading level of the criteria section the scan is in, if any.
    section_level: Option<usize>,
    /// The criteria section's title and the latest heading under it.
    section: String,
    sub: String,
    /// Where in a table the line before was.
    table: Table,
}

/// Where a scan is in a Markdown table.
enum Table {
    /// Not in a table: the line before was no table row.
    Outside,
    /// After a table's first row: its cells (the header, if a separator row follows) and
    /// whether it gave a criterion (which the separator row takes back).
    FirstRow { cells: Vec<String>, pushed: bool },
    /// In a table's body; `criteria` is false for a table whose header names no check.
    Body { criteria: bool },
}

impl<'a> CriteriaScan<'a> {
    /// A scan of the file at `path` for the given `sections`, before its first line.
    fn new(path: &'a Path, sections: &'a [&'a str]) -> Self {
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        CriteriaScan {
            path,
            file,
            sections,
            criteria: Vec::new(),
            section_level: None,
            section: String::new(),
            sub: String::new(),
            table: Table::Outside,
        }
    }

    /// Where a criterion on `line` is: the file, line and the headings it is under.
    fn origin(&self, line: u64) -> String {
        let (file, section, sub) = (&self.file, &self.section, &self.sub);
        if sub.is_empty() {
            format!("{file}:{line} ({section})")
        } else {
            format!("{file}:{line} ({section} › {sub})")
        }
    }

    /// A heading: it ends the criteria section at its level or above, starts one when it
    /// names one, and is the sub-heading of the section otherwise.
    fn heading(&mut self, level: usize, trimmed: &str) {
        let title = trimmed[level..].trim().trim_end_matches('#').trim();
        if self.section_level.is_some_and(|l| level <= l) {
            self.section_level = None;
        }
        // Ours, and the sections Auto-Claude's spec writer and quick specs use.
        if self.sections.iter().any(|s| title.eq_ignore_ascii_case(s))
            && self.section_level.is_none()
        {
            self.section_level = Some(level);
            self.section = title.to_string();
            self.sub.clear();
        } else if self.section_level.is_some() {
            self.sub = title.to_string();
        }
    }

    /// A table row is a criterion: its real cells joined with ` — ` ([`table_row_criterion`]).
    /// The header row is taken back when the separator row under it comes, and a table whose
    /// header names no check ([`context_table`]) gives none.
    fn table_line(&mut self, cells: Vec<&str>, line_no: u64) {
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            if let Table::FirstRow { cells, pushed } =
                std::mem::replace(&mut self.table, Table::Outside)
            {
                if pushed {
                    self.criteria.pop();
                }
                self.table = Table::Body {
                    criteria: !context_table(&cells),
                };
            }
            return;
        }
        let wanted = !matches!(self.table, Table::Body { criteria: false });
        let text = table_row_criterion(&cells).filter(|_| wanted);
        let pushed = text.is_some();
        if let Some(text) = text {
            let origin = self.origin(line_no);
            self.criteria.push(Sourced::new(text, origin));
        }
        self.table = match self.table {
            Table::Outside => Table::FirstRow {
                cells: cells.iter().map(|c| c.to_string()).collect(),
                pushed,
            },
            Table::FirstRow { .. } => Table::Body { criteria: true },
            Table::Body { criteria } => Table::Body { criteria },
        };
    }

    /// A list item is a criterion; an indented line under one continues it.
    fn list_line(&mut self, raw: &str, trimmed: &str, line_no: u64) -> Result<(), InputError> {
        let indent = raw.len() - trimmed.len();
        match list_item(trimmed) {
            Some(body) => {
                let col = (indent + (trimmed.len() - body.len())) as u64 + 1;
                let text = checkbox_text(self.path, line_no, col, body)?;
                if text.is_empty() {
                    return Err(InputError::at(
                        self.path,
                        line_no,
                        col,
                        "empty acceptance criterion",
                    ));
                }
                let origin = self.origin(line_no);
                self.criteria.push(Sourced::new(text, origin));
            }
            None if indent >= 2 && !self.criteria.is_empty() => {
                let last = self.criteria.last_mut().expect("checked non-empty");
                last.text.push(' ');
                last.text.push_str(trimmed.trim());
            }
            None => {}
        }
        Ok(())
    }
}

/// Section titles whose checklists, numbered lists and table rows are acceptance criteria.
const CRITERIA_SECTIONS: [&str; 4] = [
    "acceptance criteria",
    "success criteria",
    "qa acceptance criteria",
    "verification",
];

/// The criterion a table row states: its cells that are not placeholders ([`placeholder`]),
/// joined with ` — `. None when every cell is a placeholder (`| N/A | - | - |`), or when the
/// first cell — what the row is about: the test, flow, page or check of Auto-Claude's tables —
/// says there is none (`N/A`, `None`, `Not applicable`, `N/A (no UI)`): such a row says that
/// nothing of its kind applies (`| N/A | shopcart | Single library, no service boundaries |`).
fn table_row_criterion(cells: &[&str]) -> Option<String> {
    if cells.first().is_some_and(|c| says_none(c)) {
        return None;
    }
    let real: Vec<&str> = cells.iter().copied().filter(|c| !placeholder(c)).collect();
    (!real.is_empty()).then(|| real.join(" — "))
}

/// A table cell's text without the emphasis or code span around it (`*N/A*`, `` `-` ``).
fn bare_cell(cell: &str) -> &str {
    cell.trim().trim_matches(['*', '_', '`']).trim()
}

/// A cell that holds no content: empty, a dash (`-`, `--`, `—`, `–`), `N/A`, `TBD`, `None`,
/// `Not applicable` (any case, with or without emphasis).
fn placeholder(cell: &str) -> bool {
    let c = bare_cell(cell);
    c.chars().all(|ch| matches!(ch, '-' | '—' | '–'))
        || ["n/a", "n.a.", "na", "tbd", "none", "not applicable"]
            .iter()
            .any(|p| c.eq_ignore_ascii_case(p))
}

/// A cell saying there is none: `N/A`, `None`, `Not applicable`, alone or followed by a reason
/// (`N/A (library only)`, `N/A - no frontend`, `None: no UI`).
fn says_none(cell: &str) -> bool {
    let c = bare_cell(cell).to_ascii_lowercase();
    c == "na"
        || ["n/a", "n.a.", "none", "not applicable"].iter().any(|p| {
            c.strip_prefix(p).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.is_empty() || rest.starts_with(['(', '-', '—', '–', ':', ',', ';', '.'])
            })
        })
}

/// Column names of the tables Auto-Claude's spec writer puts outside its criteria (`Files to
/// Modify`: File, Service, What to Change; `Files to Reference`: File, Pattern to Copy) and of
/// service, library and environment tables (Service, Port, URL, Library, Role, …).
const CONTEXT_COLUMNS: [&str; 20] = [
    "file",
    "files",
    "path",
    "service",
    "services",
    "what to change",
    "pattern to copy",
    "pattern",
    "port",
    "url",
    "library",
    "libraries",
    "package",
    "dependency",
    "language",
    "framework",
    "version",
    "role",
    "variable",
    "value",
];

/// A table whose header names no check: every column is one of [`CONTEXT_COLUMNS`] (a table
/// of files, services or libraries, not of criteria).
fn context_table(header: &[String]) -> bool {
    header.iter().all(|h| {
        let h = bare_cell(h).to_lowercase();
        CONTEXT_COLUMNS.contains(&h.as_str())
    })
}

/// The cells of a Markdown table row (`| a | b |`), trimmed.
fn table_cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').map(str::trim).collect())
}

/// Loads a spec's criteria from a file.
pub fn load_spec_criteria(path: &Path) -> Result<Vec<Sourced>, InputError> {
    let text = read_text(path)?;
    parse_spec_criteria(path, &text)
}

fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    let rest = &line[hashes..];
    (hashes > 0 && hashes <= 6 && (rest.is_empty() || rest.starts_with(' '))).then_some(hashes)
}

/// The text after a list marker (`- `, `* `, `+ `, `1. `, `1) `).
fn list_item(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return rest.strip_prefix(' ').map(str::trim_start);
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(['.', ')']) {
            return rest.strip_prefix(' ').map(str::trim_start);
        }
    }
    None
}

/// Strips a `[ ]` / `[x]` box; any other box content is an error at its column.
fn checkbox_text(path: &Path, line: u64, col: u64, body: &str) -> Result<String, InputError> {
    let Some(rest) = body.strip_prefix('[') else {
        return Ok(body.trim().to_string());
    };
    match rest.find(']') {
        Some(close) if matches!(&rest[..close], " " | "x" | "X" | "") => {
            Ok(rest[close + 1..].trim().to_string())
        }
        Some(close) if close <= 3 => Err(InputError::at(
            path,
            line,
            col,
            format!(
                "malformed checkbox `[{}]`: use `[ ]` or `[x]`",
                &rest[..close]
            ),
        )),
        // A link or other bracketed text that is not a checkbox.
        _ => Ok(body.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::plan::parse_plan_strategy;

    fn p() -> PathBuf {
        PathBuf::from("qa-loop.yml")
    }

    #[test]
    fn sandbox_is_a_mode_or_a_mode_with_the_network() {
        use crate::config::file::{SandboxConfig, SandboxMode};
        let cases = [
            ("sandbox: required\n", Some(SandboxMode::Required), None),
            // A YAML 1.1 reader takes a bare `off` for false.
            ("sandbox: off\n", Some(SandboxMode::Off), None),
            ("sandbox: \"off\"\n", Some(SandboxMode::Off), None),
            ("sandbox: {network: off}\n", None, Some(false)),
            (
                "sandbox:\n  mode: off\n  network: true\n",
                Some(SandboxMode::Off),
                Some(true),
            ),
        ];
        for (text, mode, network) in cases {
            let file = parse_config(&p(), text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(
                file.sandbox,
                Some(SandboxConfig { mode, network }),
                "{text}"
            );
        }
        for bad in [
            "sandbox: maybe\n",
            "sandbox: {network: sometimes}\n",
            "sandbox: {mod: auto}\n",
        ] {
            let err = parse_config(&p(), bad).unwrap_err();
            assert_eq!(err.line, Some(1), "{bad}: {err}");
            assert!(
                err.message.contains("sandbox") || err.message.contains("`mode`"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn typo_in_yaml_names_line_and_column() {
        let err = parse_config(&p(), "risk_level: high\nmax_iteratons: 3\n").unwrap_err();
        assert_eq!((err.line, err.column), (Some(2), Some(1)), "{err}");
        assert!(err.message.contains("max_iteratons"), "{err}");
    }

    #[test]
    fn bad_yaml_syntax_names_line() {
        let err =
            parse_config(&p(), "unit_tests:\n  commands: [\"a\"\n  required: true\n").unwrap_err();
        assert!(err.line.is_some(), "{err}");
        assert!(err.to_string().starts_with("qa-loop.yml:"), "{err}");
    }

    #[test]
    fn json_config_errors_name_line_and_column() {
        let path = PathBuf::from("qa-loop.json");
        let err = parse_config(&path, "{\n  \"risk_level\": \"hihg\"\n}").unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.message.contains("hihg"), "{err}");
    }

    #[test]
    fn out_of_range_values_are_positioned_errors() {
        let err = parse_config(&p(), "mode: fix\nsimilarity_threshold: 1.5\n").unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.message.contains("between 0 and 1"), "{err}");
        let err = parse_config(&p(), "max_iterations: 0\n").unwrap_err();
        assert_eq!(err.line, Some(1), "{err}");
    }

    #[test]
    fn nested_unknown_field_is_rejected() {
        let err =
            parse_config(&p(), "unit_tests:\n  required: true\n  comands: [x]\n").unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
    }

    #[test]
    fn durations_parse_in_both_forms() {
        let c = parse_config(&p(), "timeout: 90s\nrun_timeout: 3600\n").unwrap();
        assert_eq!(c.timeout.unwrap().0.as_secs(), 90);
        assert_eq!(c.run_timeout.unwrap().0.as_secs(), 3600);
        let err = parse_config(&p(), "timeout: soon\n").unwrap_err();
        assert_eq!(err.line, Some(1), "{err}");
    }

    #[test]
    fn empty_config_is_all_defaults() {
        assert_eq!(
            parse_config(&p(), "\n# nothing\n").unwrap(),
            ConfigFile::default()
        );
    }

    #[test]
    fn plan_strategy_warns_about_unknown_keys_and_ignores_the_rest_of_the_plan() {
        let path = PathBuf::from("implementation_plan.json");
        let ok =
            r#"{"feature": "x", "phases": [1,2], "verification_strategy": {"risk_level": "low"}}"#;
        assert_eq!(
            parse_plan_strategy(&path, ok).unwrap().layer.risk_level,
            Some(super::super::file::RiskLevel::Low)
        );
        // Another tool's file: an unknown key is a warning, not an error.
        let typo = "{\n \"verification_strategy\": {\n   \"risk_levle\": \"low\"\n }\n}";
        assert_eq!(
            parse_plan_strategy(&path, typo).unwrap().layer.risk_level,
            None
        );
        let err = parse_plan_strategy(&path, "[1]").unwrap_err();
        assert_eq!(err.line, Some(1));
    }

    #[test]
    fn spec_checklist_is_extracted() {
        let spec = "# Feature\n\nintro\n\n## Acceptance Criteria\n\n- [ ] Users can log in\n- [x] Errors are\n  shown inline\n* plain item\n1. numbered\n\n```\n- [ ] not this\n```\n\n## Notes\n- not a criterion\n";
        let got: Vec<String> = parse_spec_criteria(Path::new("spec.md"), spec)
            .unwrap()
            .into_iter()
            .map(|c| c.text)
            .collect();
        assert_eq!(
            got,
            vec![
                "Users can log in",
                "Errors are shown inline",
                "plain item",
                "numbered"
            ]
        );
    }

    #[test]
    fn malformed_checkbox_is_positioned() {
        let spec = "## Acceptance criteria\n- [ ] ok\n  - [?] what\n";
        let err = parse_spec_criteria(Path::new("spec.md"), spec).unwrap_err();
        assert_eq!((err.line, err.column), (Some(3), Some(5)), "{err}");
    }

    #[test]
    fn invalid_utf8_is_positioned() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("spec.md");
        std::fs::write(&f, b"ok\nab\xffc\n").unwrap();
        let err = read_text(&f).unwrap_err();
        assert_eq!((err.line, err.column), (Some(2), Some(3)));
    }

    /// Issue 18: some errors did not name the setting or the expected form.
    #[test]
    fn errors_name_the_key_path_and_the_expected_form() {
        let p = Path::new("qa-loop.yml");
        let err = |text: &str| parse_config(p, text).unwrap_err().to_string();
        let e = err("risk_level: extreme\n");
        assert!(e.contains("`risk_level`") && e.contains("trivial"), "{e}");
        let e = err("max_iterations: -3\n");
        assert!(
            e.contains("`max_iterations`: expected a whole number"),
            "{e}"
        );
        let e = err("unit_tests:\n  commands: [\"x\"]\n  junit: \"x.xml\"\n");
        assert!(e.contains("`unit_tests.junit`: expected a list"), "{e}");
        let e = err("unit_tests:\n  minimum_coverage: lots\n");
        assert!(
            e.contains("`unit_tests.minimum_coverage`: expected a number"),
            "{e}"
        );
        let json = Path::new("qa-loop.json");
        let e = parse_config(json, r#"{"unit_tests": {"junit": "x.xml"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`unit_tests.junit`: invalid type"), "{e}");
        assert_eq!(
            key_path_at("a:\n  b:\n    - c: 1\n    - d: x\n", 4).as_deref(),
            Some("a.b.d")
        );
    }

    /// Issue 19: a real spec's criteria are under `## Success Criteria` (numbered `1. [ ]`) and
    /// A PR description: only `## Acceptance Criteria` (a template's `## Verification` is what
    /// the author did), at most 50 items of at most 500 characters, each named by its line.
    #[test]
    fn pr_descriptions_give_their_acceptance_criteria_only() {
        let body = "Intro\r\n\r\n## Verification\r\n- [x] ran it\r\n\r\n## Acceptance Criteria\r\n- [ ] Sums\r\n- [ ] Sums.\r\n";
        let got = parse_pr_criteria(7, body).unwrap();
        let got: Vec<_> = got
            .iter()
            .map(|c| (c.text.as_str(), c.origin.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "Sums",
                    "pull request #7 description:7 (Acceptance Criteria)"
                ),
                (
                    "Sums.",
                    "pull request #7 description:8 (Acceptance Criteria)"
                )
            ]
        );
        let long = format!(
            "## Acceptance Criteria\n{}",
            (0..80)
                .map(|i| format!("- [ ] {i} {}\n", "x".repeat(900)))
                .collect::<String>()
        );
        let got = parse_pr_criteria(7, &long).unwrap();
        assert_eq!(got.len(), 50);
        assert!(got.iter().all(|c| c.text.chars().count() <= 501));
        let err = parse_pr_criteria(7, "## Acceptance Criteria\n- [ ]\n").unwrap_err();
        assert!(
            err.to_string().contains("pull request #7 description:2"),
            "{err}"
        );
    }

    /// `## QA Acceptance Criteria` (tables and a sign-off checklist); quick specs use
    /// `## Verification`. Only `## Acceptance Criteria` was read.
    #[test]
    fn auto_claude_spec_sections_give_criteria() {
        let spec = "# Spec\n\n## Overview\n- not a criterion\n\n## Success Criteria\n\n1. [ ] Users can log in with email\n2. [ ] Bad passwords show an error\n\n## QA Acceptance Criteria\n\n### Unit Tests\n| Test | File | What to Verify |\n|------|------|----------------|\n| login ok | tests/test_auth.py | returns a session |\n\n### QA Sign-off Requirements\n- [ ] All unit tests pass\n\n## Notes\n- nope\n";
        let got = parse_spec_criteria(Path::new("specs/001/spec.md"), spec).unwrap();
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|c| (c.text.as_str(), c.origin.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (
                    "Users can log in with email",
                    "spec.md:8 (Success Criteria)"
                ),
                (
                    "Bad passwords show an error",
                    "spec.md:9 (Success Criteria)"
                ),
                (
                    "login ok — tests/test_auth.py — returns a session",
                    "spec.md:16 (QA Acceptance Criteria › Unit Tests)"
                ),
                (
                    "All unit tests pass",
                    "spec.md:19 (QA Acceptance Criteria › QA Sign-off Requirements)"
                )
            ]
        );
        let quick = "# Quick spec\n\n## Verification\n- [ ] `pytest` passes\n";
        assert_eq!(
            parse_spec_criteria(Path::new("spec.md"), quick).unwrap(),
            vec![Sourced::new("`pytest` passes", "spec.md:4 (Verification)")]
        );
    }

    /// Issue 38: placeholder rows of a spec's tables are no criteria. A row whose cells are all
    /// placeholders, or whose first cell (the test, flow, page or check) says there is none,
    /// is dropped; placeholder cells of a real row are left out of its text; a table of files
    /// or services in a criteria section gives none; a real row's dashes and words stay.
    #[test]
    fn table_placeholders_and_context_tables_give_no_criteria() {
        let spec = "## QA Acceptance Criteria\n\n### Unit Tests\n| Test | File | What to Verify |\n|---|---|---|\n| test_total | `tests/test_cart.py` | Totals add up |\n| Doctests | - | README examples run |\n| **N/A** | shopcart | Single library, no service boundaries |\n| N/A (no frontend) | — | – |\n| TBD | n/a |  |\n| None of the prices | tests/x.py | go negative |\n| x-y | – | re-runs — pass |\n\n### Integration Tests\n| N/A | - | - |\n|-----|---|---|\n| api | backend ↔ db | saves |\n### Services\n| Service | Role | Port |\n|---|---|---|\n| backend | primary | 5000 |\n\n### Files\n| File | What to Change |\n|---|---|\n| `cart.py` | Add discounts |\n";
        let got: Vec<String> = parse_spec_criteria(Path::new("spec.md"), spec)
            .unwrap()
            .into_iter()
            .map(|c| format!("{} @ {}", c.text, c.origin))
            .collect();
        assert_eq!(
            got,
            vec![
                "test_total — `tests/test_cart.py` — Totals add up @ spec.md:6 (QA Acceptance Criteria › Unit Tests)",
                "Doctests — README examples run @ spec.md:7 (QA Acceptance Criteria › Unit Tests)",
                "None of the prices — tests/x.py — go negative @ spec.md:11 (QA Acceptance Criteria › Unit Tests)",
                "x-y — re-runs — pass @ spec.md:12 (QA Acceptance Criteria › Unit Tests)",
                "api — backend ↔ db — saves @ spec.md:17 (QA Acceptance Criteria › Integration Tests)",
            ]
        );
    }

    #[test]
    fn placeholder_cells_are_recognised() {
        for p in [
            "",
            " ",
            "-",
            "--",
            "—",
            "–",
            "N/A",
            "n/a",
            "*N/A*",
            "`-`",
            "TBD",
            "None",
            "Not applicable",
            "NA",
        ] {
            assert!(placeholder(p), "{p:?}");
        }
        for r in ["x", "0", "No", "N/A (library)", "-v", "None of them"] {
            assert!(!placeholder(r), "{r:?}");
        }
        for n in [
            "N/A",
            "n/a (library only)",
            "N/A - no frontend",
            "None: no UI",
            "_Not applicable_",
        ] {
            assert!(says_none(n), "{n:?}");
        }
        for r in [
            "None of the prices",
            "Nonempty cart",
            "N/Answer",
            "TBD",
            "-",
            "",
        ] {
            assert!(!says_none(r), "{r:?}");
        }
    }
}
