//! The diff that matters first (issue 23): what the reviewer (and the fixer) is shown of a
//! change within a byte budget. Lockfiles, minified bundles, vendored directories and files
//! `.gitattributes` marks `linguist-generated`, `linguist-vendored` or `-diff` are summarised as
//! one line each; the rest is ordered by relevance — files named by the criteria, open issues or
//! failing tests first, then source, then tests, then docs — before the budget cuts; what is left
//! out is listed with its size.

use std::path::Path;

/// What makes a file relevant or summarised, known before the diff is cut.
#[derive(Debug, Clone, Default)]
pub struct DiffHints {
    /// `.gitattributes` patterns marking generated, vendored or no-diff files, with the reason.
    pub marked: Vec<(glob::Pattern, &'static str)>,
    /// Paths (or file names) the criteria, the open issues or the failing tests name.
    pub named: Vec<String>,
}

/// Lockfiles by name.
const LOCKFILES: [&str; 17] = [
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "Cargo.lock",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "mix.lock",
    "Podfile.lock",
    "flake.lock",
    "packages.lock.json",
];

/// Directories of code someone else wrote.
const VENDORED: [&str; 5] = [
    "vendor/",
    "node_modules/",
    "third_party/",
    "third-party/",
    "vendored/",
];

impl DiffHints {
    /// Reads `.gitattributes` at `root` (the top-level one) for generated/vendored/-diff marks.
    pub fn from_repo(root: &Path, named: Vec<String>) -> DiffHints {
        let text = std::fs::read_to_string(root.join(".gitattributes")).unwrap_or_default();
        DiffHints {
            marked: parse_gitattributes(&text),
            named,
        }
    }

    /// Why `path` is summarised instead of shown, if it is.
    pub fn summarised(&self, path: &str) -> Option<&'static str> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if LOCKFILES.contains(&name) {
            return Some("lockfile");
        }
        if [
            ".min.js",
            ".min.css",
            ".min.mjs",
            ".bundle.js",
            ".js.map",
            ".css.map",
        ]
        .iter()
        .any(|e| name.ends_with(e))
        {
            return Some("minified bundle");
        }
        if VENDORED
            .iter()
            .any(|v| path.starts_with(v) || path.contains(&format!("/{v}")))
        {
            return Some("vendored");
        }
        let opts = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: false,
            require_literal_leading_dot: false,
        };
        self.marked
            .iter()
            .find(|(p, _)| p.matches_with(path, opts) || p.matches_with(name, opts))
            .map(|(_, why)| *why)
    }

    /// 0: named by the criteria, issues or failing tests; 1: source; 2: tests; 3: docs.
    fn rank(&self, path: &str) -> u8 {
        let name = path.rsplit('/').next().unwrap_or(path);
        if self
            .named
            .iter()
            .any(|n| n == path || path.ends_with(&format!("/{n}")) || n == name)
        {
            return 0;
        }
        if crate::verify::integrity::is_test_file(path) {
            return 2;
        }
        let doc = [".md", ".rst", ".txt", ".adoc"]
            .iter()
            .any(|e| name.ends_with(e))
            || path.starts_with("docs/");
        if doc { 3 } else { 1 }
    }
}

/// The `.gitattributes` lines that mark files generated, vendored or without a diff.
pub fn parse_gitattributes(text: &str) -> Vec<(glob::Pattern, &'static str)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_whitespace();
        let Some(pattern) = parts.next() else {
            continue;
        };
        let why = parts.find_map(|a| match a {
            "linguist-generated" | "linguist-generated=true" => Some("generated (.gitattributes)"),
            "linguist-vendored" | "linguist-vendored=true" => Some("vendored (.gitattributes)"),
            "-diff" | "binary" => Some("no diff (.gitattributes)"),
            _ => None,
        });
        let Some(why) = why else { continue };
        let p = pattern.trim_start_matches('/');
        let p = if p.ends_with('/') {
            format!("{p}**")
        } else {
            p.to_string()
        };
        if let Ok(g) = glob::Pattern::new(&p) {
            out.push((g, why));
        }
    }
    out
}

/// A diff cut to a budget, the diff that matters first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShownDiff {
    pub text: String,
    /// Files left out for the budget (names).
    pub omitted_files: Vec<String>,
    /// The same, with their diff sizes in bytes.
    pub omitted: Vec<(String, usize)>,
    /// One line per summarised file: `path` (why, +added −removed lines).
    pub summarised: Vec<String>,
}

/// One file's section of a unified diff.
struct Section<'a> {
    path: String,
    text: &'a str,
    order: usize,
}

fn sections(diff: &str) -> Vec<Section<'_>> {
    let mut starts: Vec<usize> = diff
        .match_indices("diff --git ")
        .filter(|(i, _)| *i == 0 || diff.as_bytes()[i - 1] == b'\n')
        .map(|(i, _)| i)
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut out = Vec::new();
    for (n, w) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(diff.len());
        let text = &diff[*w..end];
        if text.is_empty() {
            continue;
        }
        let path = text
            .lines()
            .next()
            .and_then(|l| l.rsplit(" b/").next())
            .unwrap_or_default()
            .to_string();
        out.push(Section {
            path,
            text,
            order: n,
        });
    }
    out
}

/// Splits a unified diff into per-file sections, summarises what nobody reviews line by line,
/// orders the rest by relevance and keeps whole sections within `budget`.
pub fn fit(diff: &str, budget: usize, hints: &DiffHints) -> ShownDiff {
    let mut out = ShownDiff::default();
    let mut shown: Vec<Section> = Vec::new();
    for s in sections(diff) {
        match hints.summarised(&s.path) {
            Some(why) if s.text.starts_with("diff --git ") => {
                let (mut added, mut removed) = (0usize, 0usize);
                for l in s.text.lines() {
                    if l.starts_with('+') && !l.starts_with("+++") {
                        added += 1;
                    } else if l.starts_with('-') && !l.starts_with("---") {
                        removed += 1;
                    }
                }
                out.summarised
                    .push(format!("`{}` ({why}, +{added} −{removed} lines)", s.path));
            }
            _ => shown.push(s),
        }
    }
    shown.sort_by_key(|s| (hints.rank(&s.path), s.order));
    let mut used = 0;
    let mut kept: Vec<&Section> = Vec::new();
    for s in &shown {
        if used + s.text.len() <= budget {
            used += s.text.len();
            kept.push(s);
        } else if !s.path.is_empty() {
            out.omitted_files.push(s.path.clone());
            out.omitted.push((s.path.clone(), s.text.len()));
        }
    }
    for s in kept {
        out.text.push_str(s.text);
    }
    out
}

/// `12.3 KiB`.
pub fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(path: &str, lines: usize) -> String {
        let body: String = (0..lines).map(|i| format!("+line {i}\n")).collect();
        format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"
        )
    }

    #[test]
    fn lockfiles_generated_and_vendored_files_are_summarised_and_the_source_shown() {
        let diff = [
            section("package-lock.json", 5000),
            section("docs/guide.md", 10),
            section("api/schema_pb2.py", 3000),
            section("vendor/lib/util.go", 2000),
            section("tests/test_cart.py", 40),
            section("src/cart.py", 30),
            section("src/pricing.py", 20),
        ]
        .concat();
        let hints = DiffHints {
            marked: parse_gitattributes(
                "# generated\n*_pb2.py linguist-generated=true\n*.png binary\n",
            ),
            named: vec!["pricing.py".into()],
        };
        let shown = fit(&diff, 4 * 1024, &hints);
        assert_eq!(
            shown.summarised,
            [
                "`package-lock.json` (lockfile, +5000 −0 lines)",
                "`api/schema_pb2.py` (generated (.gitattributes), +3000 −0 lines)",
                "`vendor/lib/util.go` (vendored, +2000 −0 lines)"
            ]
        );
        // Named first, then source, then tests, then docs — all within the budget.
        let order: Vec<usize> = [
            "src/pricing.py",
            "src/cart.py",
            "tests/test_cart.py",
            "docs/guide.md",
        ]
        .iter()
        .map(|p| shown.text.find(&format!("diff --git a/{p}")).unwrap())
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(shown.omitted.is_empty());
        // A budget too small for everything leaves out the least relevant, with sizes.
        let tight = fit(&diff, 700, &hints);
        assert!(tight.text.contains("src/pricing.py") && tight.text.contains("src/cart.py"));
        assert_eq!(tight.omitted_files, ["tests/test_cart.py", "docs/guide.md"]);
        assert!(tight.omitted.iter().all(|(_, n)| *n > 0));
    }
}
