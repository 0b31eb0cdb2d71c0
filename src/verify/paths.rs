//! Where a path a test tool wrote points in the repository, the way a user reads it: an absolute
//! path inside the checkout made relative (node:test, Playwright and jest stacks); a path relative
//! to the suite's working directory (the `cd` of its command, or its `working_directory:`)
//! resolved from there (tools run inside a monorepo package); otherwise a unique suffix match in
//! the repository; a bare file name (Go, Java) looked up by name and the class's package.
//! A path that leads nowhere in the checkout resolves to nothing: never a guess.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Resolves report paths for one suite; the repository's file index is built on first need.
pub struct Resolver<'a> {
    root: &'a Path,
    /// The root as the tools see it after symlinks are resolved (`/tmp` → `/private/tmp`).
    canonical: Option<PathBuf>,
    /// The suite's working directory, relative to the root (`py`, `packages/web`).
    workdir: Option<String>,
    index: Option<FileIndex>,
}

impl<'a> Resolver<'a> {
    pub fn new(root: &'a Path, workdir: Option<String>) -> Self {
        Resolver {
            root,
            canonical: root.canonicalize().ok().filter(|c| c != root),
            workdir: workdir.filter(|w| !w.is_empty() && w != "."),
            index: None,
        }
    }

    /// The repository-relative path `path` names, or `None` when it names no file of the
    /// checkout. `classname` (the JUnit class) chooses among files of one bare name.
    pub fn resolve(&mut self, path: &str, classname: &str) -> Option<String> {
        let path = path.trim().replace('\\', "/");
        let path = path.strip_prefix("file://").unwrap_or(&path);
        if path.is_empty() {
            return None;
        }
        if Path::new(path).is_absolute() {
            return self.resolve_absolute(path);
        }
        if let Some(dir) = &self.workdir
            && let Some(rel) = normalise(&format!("{dir}/{path}"))
            && self.is_file(&rel)
        {
            return Some(rel);
        }
        let rel = normalise(path)?;
        if self.is_file(&rel) {
            return Some(rel);
        }
        if rel.contains('/') {
            return self.index().by_suffix(&rel);
        }
        self.index().find(&rel, classname)
    }

    /// An absolute path: inside the checkout, relative to it; elsewhere (a report written on
    /// another machine, `/home/runner/work/repo/repo/src/x.py`) the longest suffix of at least
    /// two parts that names one file of the checkout.
    fn resolve_absolute(&mut self, path: &str) -> Option<String> {
        let p = Path::new(path);
        let inside = p.strip_prefix(self.root).ok().or_else(|| {
            self.canonical
                .as_deref()
                .and_then(|c| p.strip_prefix(c).ok())
        });
        if let Some(rel) = inside {
            let rel = normalise(&rel.to_string_lossy())?;
            return self.is_file(&rel).then_some(rel);
        }
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        (1..parts.len().saturating_sub(1)).find_map(|skip| {
            let suffix = parts[skip..].join("/");
            if self.is_file(&suffix) {
                return Some(suffix);
            }
            self.index().by_suffix(&suffix)
        })
    }

    fn is_file(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.root.join(rel)).is_ok_and(|m| m.is_file())
    }

    fn index(&mut self) -> &FileIndex {
        self.index.get_or_insert_with(|| FileIndex::of(self.root))
    }
}

/// `a/./b/../c` → `a/c`; `None` when it climbs out of the root.
fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The directory a suite command works in: its leading `cd <dir> &&` steps (`cd py && pytest`,
/// `cd packages/web && npx jest`), joined; `None` without one.
pub fn command_dir(command: &str) -> Option<String> {
    let mut dir = String::new();
    for step in command.split("&&") {
        let words: Vec<&str> = step.split_whitespace().collect();
        match words.as_slice() {
            ["cd", d] if !d.starts_with(['/', '~', '$', '-']) => {
                let d = d.trim_matches(['"', '\'']);
                dir = if dir.is_empty() {
                    d.to_string()
                } else {
                    format!("{dir}/{d}")
                };
            }
            _ => break,
        }
    }
    normalise(&dir)
}

/// The repository's files by name.
pub struct FileIndex {
    by_name: HashMap<String, Vec<String>>,
}

impl FileIndex {
    /// Files past this many are not indexed (a bare name then stays unresolved).
    const MAX_FILES: usize = 200_000;

    pub fn of(root: &Path) -> Self {
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walk.flatten().take(Self::MAX_FILES) {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if let (Some(rel), Some(name)) = (
                rel.to_str(),
                entry.path().file_name().and_then(|n| n.to_str()),
            ) {
                by_name
                    .entry(name.to_string())
                    .or_default()
                    .push(rel.to_string());
            }
        }
        FileIndex { by_name }
    }

    /// The one file called `name`; among several, the one under the path the class's package
    /// names (`org.apache.commons.cli.CommandLineTest` → `org/apache/commons/cli/`).
    pub fn find(&self, name: &str, classname: &str) -> Option<String> {
        let found = self.by_name.get(name)?;
        if let [one] = found.as_slice() {
            return Some(one.clone());
        }
        let package = classname
            .rsplit_once('.')
            .map(|(p, _)| p.replace('.', "/"))
            .filter(|p| !p.is_empty())?;
        let mut under = found
            .iter()
            .filter(|f| f.ends_with(&format!("{package}/{name}")));
        let first = under.next()?;
        under.next().is_none().then(|| first.clone())
    }

    /// The one file whose path ends with `suffix` at a directory boundary.
    fn by_suffix(&self, suffix: &str) -> Option<String> {
        let name = suffix.rsplit('/').next()?;
        let tail = format!("/{suffix}");
        let mut found = self
            .by_name
            .get(name)?
            .iter()
            .filter(|f| f.as_str() == suffix || f.ends_with(&tail));
        let first = found.next()?;
        found.next().is_none().then(|| first.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        dir
    }

    #[test]
    fn paths_resolve_the_way_a_user_reads_them() {
        let dir = tree(&[
            "py/tests/test_calc.py",
            "web/test/calc.test.js",
            "tests/test_calc.py",
            "go/calc_test.go",
            "a/Util.java",
            "b/Util.java",
            "src/main/java/org/x/Util.java",
        ]);
        let root = dir.path();
        let abs = root.join("web/test/calc.test.js");
        let mut r = Resolver::new(root, None);
        // Absolute inside the checkout → relative.
        assert_eq!(
            r.resolve(&abs.to_string_lossy(), "test").as_deref(),
            Some("web/test/calc.test.js")
        );
        // Absolute from another machine → the unique suffix of at least two parts.
        assert_eq!(
            r.resolve("/home/runner/work/r/r/web/test/calc.test.js", "")
                .as_deref(),
            Some("web/test/calc.test.js")
        );
        assert_eq!(r.resolve("/usr/lib/node/calc_test.go", ""), None);
        // From the root first, then a unique suffix.
        assert_eq!(
            r.resolve("tests/test_calc.py", "").as_deref(),
            Some("tests/test_calc.py")
        );
        assert_eq!(
            r.resolve("test/calc.test.js", "").as_deref(),
            Some("web/test/calc.test.js")
        );
        assert_eq!(
            r.resolve("./go/calc_test.go", "").as_deref(),
            Some("go/calc_test.go")
        );
        assert_eq!(
            r.resolve("calc_test.go", "").as_deref(),
            Some("go/calc_test.go")
        );
        // Ambiguous names resolve by the class's package, else not at all.
        assert_eq!(r.resolve("Util.java", "Util"), None);
        assert_eq!(
            r.resolve("Util.java", "org.x.Util").as_deref(),
            Some("src/main/java/org/x/Util.java")
        );
        assert_eq!(r.resolve("../outside.py", ""), None);
        assert_eq!(r.resolve("missing/file.py", ""), None);
        // The suite's working directory wins over the root for a relative path.
        let mut in_py = Resolver::new(root, Some("py".into()));
        assert_eq!(
            in_py.resolve("tests/test_calc.py", "").as_deref(),
            Some("py/tests/test_calc.py")
        );
        assert_eq!(
            in_py.resolve("../web/test/calc.test.js", "").as_deref(),
            Some("web/test/calc.test.js")
        );
    }

    #[test]
    fn a_commands_leading_cd_is_its_directory() {
        assert_eq!(command_dir("cd py && pytest -q").as_deref(), Some("py"));
        assert_eq!(
            command_dir("cd packages && cd web && npx jest").as_deref(),
            Some("packages/web")
        );
        assert_eq!(command_dir("pytest"), None);
        assert_eq!(command_dir("cd /tmp && pytest"), None);
        assert_eq!(command_dir("cd $HOME && pytest"), None);
    }
}
