//! Test discovery: does the project have tests that the configuration does not run? A project
//! with no test commands and nothing discoverable is a `no_test_project` (SPEC §3.1).

use std::path::Path;

use serde::Serialize;

/// Files looked at, at most (a bounded, .gitignore-aware walk).
const MAX_ENTRIES: usize = 20_000;
/// Directory depth searched for test files.
const MAX_DEPTH: usize = 4;

/// Tests found in the project, with the command that would run them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Discovered {
    /// The usual command (`npm test`, `pytest`, `cargo test` …).
    pub command: String,
    /// What was found (`package.json scripts.test`, `tests/test_cart.py` …).
    pub evidence: String,
}

/// npm's placeholder `test` script.
const NPM_PLACEHOLDER: &str = "no test specified";

/// Looks for tests under `root`.
pub fn discover(root: &Path) -> Vec<Discovered> {
    let mut found: Vec<Discovered> = Vec::new();
    from_build_files(root, &mut found);
    from_test_files(root, &mut found);
    found
}

/// Adds `command` with its evidence, unless it was found already.
fn add(found: &mut Vec<Discovered>, command: &str, evidence: String) {
    if !found.iter().any(|d| d.command == command) {
        found.push(Discovered {
            command: command.to_string(),
            evidence,
        });
    }
}

/// Tests set up in the project's build files (package.json, Cargo.toml, pytest's, Makefile …).
fn from_build_files(root: &Path, found: &mut Vec<Discovered>) {
    let read = |name: &str| std::fs::read_to_string(root.join(name)).ok();
    if let Some(pkg) = read("package.json")
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&pkg)
        && let Some(script) = v.pointer("/scripts/test").and_then(|s| s.as_str())
        && !script.contains(NPM_PLACEHOLDER)
    {
        add(
            found,
            "npm test",
            format!("package.json scripts.test (`{script}`)"),
        );
    }
    if read("Cargo.toml").is_some() {
        add(found, "cargo test", "Cargo.toml".into());
    }
    for (file, marker) in [
        ("pytest.ini", ""),
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ] {
        if read(file).is_some_and(|t| t.contains(marker)) {
            add(found, "python -m pytest", file.to_string());
        }
    }
    if read("pom.xml").is_some() {
        add(found, "mvn test", "pom.xml".into());
    }
    for f in ["build.gradle", "build.gradle.kts"] {
        if read(f).is_some() {
            add(found, "gradle test", f.to_string());
        }
    }
    for f in ["phpunit.xml", "phpunit.xml.dist"] {
        if read(f).is_some() {
            add(found, "vendor/bin/phpunit", f.to_string());
        }
    }
    if let Some(make) = read("Makefile")
        && make.lines().any(|l| l.starts_with("test:"))
    {
        add(found, "make test", "Makefile target `test`".into());
    }
}

/// Test files by name, in a bounded walk that skips dependency and build directories.
fn from_test_files(root: &Path, found: &mut Vec<Discovered>) {
    let walk = ignore::WalkBuilder::new(root)
        .max_depth(Some(MAX_DEPTH))
        .hidden(true)
        .require_git(false)
        .filter_entry(|e| {
            !matches!(
                e.file_name().to_str(),
                Some("node_modules" | "vendor" | "target" | "venv" | ".venv" | "dist" | "build")
            )
        })
        .build();
    for entry in walk.flatten().take(MAX_ENTRIES) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .display()
            .to_string();
        if let Some(c) = test_file_command(name) {
            add(found, c, rel);
        }
    }
}

/// The command that runs a test file of this name, if it is one.
fn test_file_command(name: &str) -> Option<&'static str> {
    if name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py")) {
        Some("python -m pytest")
    } else if name.ends_with("_test.go") {
        Some("go test ./...")
    } else if [".test.", ".spec."].iter().any(|m| name.contains(m))
        && [".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs"]
            .iter()
            .any(|e| name.ends_with(e))
    {
        Some("npm test")
    } else if name.ends_with("_spec.rb") {
        Some("bundle exec rspec")
    } else if name.ends_with("Test.php") {
        Some("vendor/bin/phpunit")
    } else if name.ends_with("Test.java") || name.ends_with("Test.kt") {
        Some("mvn test")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_test_setups_and_files_but_not_npm_s_placeholder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        assert!(discover(p).is_empty());
        std::fs::write(
            p.join("package.json"),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        )
        .unwrap();
        std::fs::write(p.join("index.js"), "module.exports = 1\n").unwrap();
        assert!(discover(p).is_empty(), "npm's placeholder is not a test");
        std::fs::create_dir_all(p.join("src/cart")).unwrap();
        std::fs::write(p.join("src/cart/total.spec.ts"), "").unwrap();
        std::fs::create_dir_all(p.join("tests")).unwrap();
        std::fs::write(p.join("tests/test_api.py"), "").unwrap();
        std::fs::create_dir_all(p.join("node_modules/x")).unwrap();
        std::fs::write(p.join(".gitignore"), "node_modules/\n").unwrap();
        std::fs::write(p.join("node_modules/x/a.test.js"), "").unwrap();
        let got: Vec<(String, String)> = discover(p)
            .into_iter()
            .map(|d| (d.command, d.evidence))
            .collect();
        assert!(
            got.contains(&("npm test".into(), "src/cart/total.spec.ts".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&("python -m pytest".into(), "tests/test_api.py".into())),
            "{got:?}"
        );
        assert_eq!(got.len(), 2, "{got:?}");
        std::fs::write(
            p.join("package.json"),
            r#"{"scripts":{"test":"vitest run"}}"#,
        )
        .unwrap();
        assert_eq!(
            discover(p)[0].evidence,
            "package.json scripts.test (`vitest run`)"
        );
    }
}
