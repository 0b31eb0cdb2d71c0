//! The diff that matters first: what the reviewer (in its task) and both agents (through
//! `git_diff`) are shown of a change within a byte budget, read from git without holding the
//! change whole. Lockfiles, minified bundles, vendored directories and files `.gitattributes`
//! marks `linguist-generated`, `linguist-vendored` or `-diff` are summarised as one line each; the
//! rest is ordered by relevance — files named by the criteria, open issues or failing tests
//! first, then source, then tests, then docs — before the budget cuts; what is left out is listed
//! with its size.

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

/// A change as an agent is shown it: the part that fits the budget, and every file with the
/// size of its diff (untracked files, listed by name only, have size 0).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiffView {
    pub shown: ShownDiff,
    pub files: Vec<(String, usize)>,
}

/// One file's section of a unified diff, measured.
#[derive(Debug, Clone, Default)]
struct Measured {
    path: String,
    size: usize,
    added: usize,
    removed: usize,
    /// Starts with `diff --git ` (not a preamble).
    header: bool,
}

impl Measured {
    fn start(first_line: &str) -> Measured {
        Measured {
            path: first_line
                .strip_prefix("diff --git ")
                .and_then(|l| l.rsplit(" b/").next())
                .unwrap_or_default()
                .to_string(),
            header: first_line.starts_with("diff --git "),
            ..Measured::default()
        }
    }

    fn line(&mut self, line: &str) {
        self.size += line.len() + 1;
        if line.starts_with('+') && !line.starts_with("+++") {
            self.added += 1;
        } else if line.starts_with('-') && !line.starts_with("---") {
            self.removed += 1;
        }
    }
}

/// Measures a diff read line by line.
#[derive(Default)]
struct Measure {
    sections: Vec<Measured>,
}

impl Measure {
    fn line(&mut self, line: &str) {
        if line.starts_with("diff --git ") || self.sections.is_empty() {
            self.sections.push(Measured::start(line));
        }
        if let Some(s) = self.sections.last_mut() {
            s.line(line);
        }
    }
}

/// What is shown (section indices, most relevant first), summarised and left out, decided on
/// sizes alone.
struct Choice {
    shown: Vec<usize>,
    summarised: Vec<String>,
    omitted: Vec<(String, usize)>,
}

/// Summarises what nobody reviews line by line, orders the rest by relevance and keeps whole
/// sections within `budget`.
fn choose(sections: &[Measured], budget: usize, hints: &DiffHints) -> Choice {
    let mut summarised = Vec::new();
    let mut candidates: Vec<usize> = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        match hints.summarised(&s.path) {
            Some(why) if s.header => summarised.push(format!(
                "`{}` ({why}, +{} −{} lines)",
                s.path, s.added, s.removed
            )),
            _ => candidates.push(i),
        }
    }
    candidates.sort_by_key(|&i| (hints.rank(&sections[i].path), i));
    let (mut used, mut shown, mut omitted) = (0, Vec::new(), Vec::new());
    for i in candidates {
        let s = &sections[i];
        if used + s.size <= budget {
            used += s.size;
            shown.push(i);
        } else if !s.path.is_empty() {
            omitted.push((s.path.clone(), s.size));
        }
    }
    Choice {
        shown,
        summarised,
        omitted,
    }
}

impl ShownDiff {
    fn new(text: String, choice: Choice) -> ShownDiff {
        ShownDiff {
            text,
            omitted_files: choice.omitted.iter().map(|(p, _)| p.clone()).collect(),
            omitted: choice.omitted,
            summarised: choice.summarised,
        }
    }
}

/// Splits a unified diff held in memory into per-file sections, summarises what nobody
/// reviews line by line, orders the rest by relevance and keeps whole sections within
/// `budget` ([`load`] reads a change from git the same way without holding it).
#[cfg(test)]
pub fn fit(diff: &str, budget: usize, hints: &DiffHints) -> ShownDiff {
    let mut measure = Measure::default();
    let mut starts = Vec::new();
    let mut at = 0;
    for line in diff.split_inclusive('\n') {
        let before = measure.sections.len();
        measure.line(line.strip_suffix('\n').unwrap_or(line));
        if measure.sections.len() > before {
            starts.push(at);
        }
        at += line.len();
    }
    starts.push(diff.len());
    let choice = choose(&measure.sections, budget, hints);
    let mut text = String::new();
    for &i in &choice.shown {
        text.push_str(&diff[starts[i]..starts[i + 1]]);
    }
    ShownDiff::new(text, choice)
}

#[cfg(test)]
impl DiffView {
    /// The view of a diff held in memory.
    pub fn of(diff: &str, budget: usize, hints: &DiffHints) -> DiffView {
        let mut measure = Measure::default();
        for line in diff.lines() {
            measure.line(line);
        }
        DiffView {
            shown: fit(diff, budget, hints),
            files: measure
                .sections
                .into_iter()
                .filter(|s| s.header)
                .map(|s| (s.path, s.size))
                .collect(),
        }
    }
}

/// Reads the change `git diff <revs>` (plus the untracked files, by name, when `untracked`)
/// without holding it whole: a first pass measures every file's section, the choice is made on
/// sizes, and a second `git diff` limited to the chosen files gives their text. `exclude` names
/// paths left out (qa-loop's own out dir and plan bookkeeping).
pub async fn load(
    root: &Path,
    revs: &[&str],
    untracked: bool,
    budget: usize,
    hints: &DiffHints,
    exclude: &[String],
) -> Result<DiffView, String> {
    let excluded: Vec<String> = exclude
        .iter()
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty())
        .map(|p| format!(":(exclude,literal){p}"))
        .collect();
    let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
    args.extend_from_slice(revs);
    args.push("--");
    let mut first = args.clone();
    first.extend(excluded.iter().map(String::as_str));
    let mut measure = Measure::default();
    crate::vcs::git_each_line(root, &first, |l| measure.line(l)).await?;
    let sections = measure.sections;
    let choice = choose(&sections, budget, hints);
    let mut text = String::new();
    if !choice.shown.is_empty() {
        let specs: Vec<String> = choice
            .shown
            .iter()
            .map(|&i| format!(":(literal){}", sections[i].path))
            .collect();
        let mut args = args.clone();
        args.extend(specs.iter().map(String::as_str));
        let chosen = crate::vcs::git(root, &args).await?;
        let mut by_path: std::collections::HashMap<String, &str> = Default::default();
        let mut at = 0;
        let mut current: Option<(String, usize)> = None;
        for line in chosen.split_inclusive('\n') {
            if line.starts_with("diff --git ") {
                if let Some((p, from)) = current.take() {
                    by_path.insert(p, &chosen[from..at]);
                }
                current = Some((Measured::start(line.trim_end_matches('\n')).path, at));
            }
            at += line.len();
        }
        if let Some((p, from)) = current {
            by_path.insert(p, &chosen[from..]);
        }
        for &i in &choice.shown {
            if let Some(t) = by_path.get(&sections[i].path) {
                text.push_str(t);
            }
        }
    }
    let mut files: Vec<(String, usize)> = sections
        .iter()
        .filter(|s| s.header)
        .map(|s| (s.path.clone(), s.size))
        .collect();
    if untracked {
        let mut ls = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
        ls.extend(excluded.iter().map(String::as_str));
        let list = crate::vcs::git(root, &ls).await?;
        let names: Vec<&str> = list.split('\0').filter(|f| !f.is_empty()).collect();
        text.push_str(&crate::vcs::untracked_listing(&names));
        files.extend(names.into_iter().map(|f| (f.to_string(), 0)));
    }
    Ok(DiffView {
        shown: ShownDiff::new(text, choice),
        files,
    })
}

/// [`load`] of a change already read ([`crate::vcs::Change`]: one `git diff` per tree, shared
/// with the verification, its sections measured as git wrote it): the chosen sections are
/// copied from its spool, nothing is read whole again. `exclude` names paths left out
/// (qa-loop's own).
pub fn load_change(
    change: &crate::vcs::Change,
    budget: usize,
    hints: &DiffHints,
    exclude: &[String],
) -> Result<DiffView, String> {
    let excluded = |path: &str| crate::vcs::is_under(path, exclude);
    let kept: Vec<&crate::vcs::Section> = change
        .sections
        .iter()
        .filter(|s| !excluded(&s.path))
        .collect();
    let sections: Vec<Measured> = kept
        .iter()
        .map(|s| Measured {
            path: s.path.clone(),
            size: (s.end - s.start) as usize,
            added: s.added,
            removed: s.removed,
            header: s.header,
        })
        .collect();
    let choice = choose(&sections, budget, hints);
    let mut text = String::new();
    for &i in &choice.shown {
        text.push_str(&change.text(kept[i].start, kept[i].end)?);
    }
    let mut files: Vec<(String, usize)> = sections
        .iter()
        .filter(|s| s.header)
        .map(|s| (s.path.clone(), s.size))
        .collect();
    let names: Vec<&str> = change
        .untracked
        .iter()
        .map(String::as_str)
        .filter(|f| !excluded(f))
        .collect();
    text.push_str(&crate::vcs::untracked_listing(&names));
    files.extend(names.into_iter().map(|f| (f.to_string(), 0)));
    Ok(DiffView {
        shown: ShownDiff::new(text, choice),
        files,
    })
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
    fn a_change_read_once_shows_what_two_git_diffs_showed() {
        // The shared read (sections measured as git wrote them, chosen ones copied from the
        // spool) gives the reviewer the same view as reading the diff twice from git.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let git = |args: &[&str]| {
            let o = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(d)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        let write = |p: &str, t: &str| {
            let p = d.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        write("src/calc.py", "def add(a, b):\n    return a - b\n");
        write("package-lock.json", "{}\n");
        write("docs/guide.md", "old\n");
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "base"]);
        write("src/calc.py", "def add(a, b):\n    return a + b\n");
        write("package-lock.json", &"{\"x\": 1}\n".repeat(300));
        write("docs/guide.md", &"new text\n".repeat(400));
        write(".qa-loop/qa_report.md", "own\n");
        write("src/new.py", "print(1)\n");
        let hints = DiffHints::from_repo(d, vec!["src/calc.py".into()]);
        let own = vec![".qa-loop/".to_string()];
        let rt = crate::test_support::rt();
        let change = rt.block_on(crate::vcs::Change::read(d, "HEAD")).unwrap();
        for budget in [200, 5_000, 1_000_000] {
            let twice = rt
                .block_on(load(d, &["HEAD"], true, budget, &hints, &own))
                .unwrap();
            let once = load_change(&change, budget, &hints, &own).unwrap();
            assert_eq!(once.shown.text, twice.shown.text, "budget {budget}");
            assert_eq!(once.shown.omitted, twice.shown.omitted, "budget {budget}");
            assert_eq!(once.shown.summarised, twice.shown.summarised);
            assert_eq!(once.files, twice.files);
        }
        let all = load_change(&change, 1_000_000, &hints, &own).unwrap();
        assert!(all.shown.text.contains("+    return a + b"));
        assert!(all.shown.text.contains("src/new.py"));
        assert!(!all.shown.text.contains("qa_report"));
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
