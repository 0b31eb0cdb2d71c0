//! Running only some tests of a suite, with the runner's own selection: the suite's command
//! with the runner's filter added — pytest `-k`, `go test -run` (and gotestsum's), jest and vitest `-t`,
//! node:test `--test-name-pattern`, cargo's name filters, Maven Surefire's `-Dtest=Class#method`
//! and Gradle's `--tests Class.method`. Used to re-run failing tests before
//! they count as defects (flaky tests). A command qa-loop cannot read as one of these runners
//! (a pipe after it, a wrapper script, another runner) has no selection: the caller runs the
//! whole suite instead.
//!
//! A filter may select a few more tests than asked (`-k test_add` also matches
//! `test_add_negative`); callers only read the outcomes of the tests they asked for.

use crate::model::TestCase;

/// The runners whose selection qa-loop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Pytest,
    GoTest,
    /// gotestsum: `go test`'s flags after its `--`.
    Gotestsum,
    Jest,
    Vitest,
    NodeTest,
    Cargo,
    /// `mvn test` / `./mvnw test` (Surefire).
    Maven,
    /// `gradle test` / `./gradlew test`.
    Gradle,
}

/// `command` narrowed to `tests`, or `None` when its runner has no selection qa-loop knows.
pub fn narrowed(command: &str, tests: &[&TestCase]) -> Option<String> {
    if tests.is_empty() {
        return None;
    }
    let runner = runner_of(command)?;
    let names: Vec<String> = tests.iter().map(|t| base_name(runner, t)).collect();
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let filter = match runner {
        Runner::Pytest => format!("-k {}", quote(&names.join(" or "))),
        Runner::GoTest => format!("-run {}", quote(&format!("^({})$", names.join("|")))),
        Runner::Gotestsum => {
            let run = format!("-run {}", quote(&format!("^({})$", names.join("|"))));
            if command.contains(" -- ") || command.trim_end().ends_with(" --") {
                run
            } else {
                format!("-- {run}")
            }
        }
        Runner::Jest | Runner::Vitest => {
            let escaped: Vec<String> = names.iter().map(|n| regex_escape(n)).collect();
            format!("-t {}", quote(&escaped.join("|")))
        }
        Runner::NodeTest => {
            let escaped: Vec<String> = names.iter().map(|n| regex_escape(n)).collect();
            format!(
                "--test-name-pattern={}",
                quote(&format!("^({})$", escaped.join("|")))
            )
        }
        Runner::Cargo => {
            let list: Vec<String> = names.iter().map(|n| quote(n)).collect();
            if command.contains(" -- ") || command.ends_with(" --") {
                return None;
            }
            format!("-- {}", list.join(" "))
        }
        Runner::Maven => format!(
            // A module without the selected tests must not fail the build.
            "-Dtest={} -Dsurefire.failIfNoSpecifiedTests=false",
            quote(&names.join(","))
        ),
        Runner::Gradle => names
            .iter()
            .map(|n| format!("--tests {}", quote(n)))
            .collect::<Vec<_>>()
            .join(" "),
    };
    Some(format!("{} {filter}", command.trim_end()))
}

/// The runner of the command's last step, when nothing follows it (no pipe, redirect or
/// further command) and the step is one runner invocation.
pub fn runner_of(command: &str) -> Option<Runner> {
    let last = command.rsplit(['&', ';']).next().unwrap_or(command).trim();
    if last.contains(['|', '>', '<', '`', '$', '(', ')']) {
        return None;
    }
    let words: Vec<&str> = last.split_whitespace().collect();
    let mut i = 0;
    // `VAR=value` prefixes and launchers (`npx`, `python3 -m`, `uv run`).
    while words
        .get(i)
        .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
    {
        i += 1;
    }
    let w = |k: usize| words.get(i + k).copied().unwrap_or("");
    let program = w(0).rsplit('/').next().unwrap_or("");
    match program {
        "pytest" | "py.test" => Some(Runner::Pytest),
        p if p.starts_with("python") && w(1) == "-m" && w(2) == "pytest" => Some(Runner::Pytest),
        "go" if w(1) == "test" => Some(Runner::GoTest),
        "gotestsum" => Some(Runner::Gotestsum),
        "jest" => Some(Runner::Jest),
        "vitest" => Some(Runner::Vitest),
        "npx" | "pnpm" | "yarn" | "bunx" => match w(1) {
            "jest" => Some(Runner::Jest),
            "vitest" => Some(Runner::Vitest),
            _ => None,
        },
        "node" if words[i + 1..].contains(&"--test") => Some(Runner::NodeTest),
        "cargo" if w(1) == "test" => Some(Runner::Cargo),
        "mvn" | "mvnw"
            if words[i + 1..]
                .iter()
                .any(|a| matches!(*a, "test" | "verify")) =>
        {
            Some(Runner::Maven)
        }
        "gradle" | "gradlew"
            if words[i + 1..]
                .iter()
                .any(|a| *a == "test" || a.ends_with(":test")) =>
        {
            Some(Runner::Gradle)
        }
        _ => None,
    }
}

/// The name the runner's filter matches: pytest's function without its parameters, Go's
/// top-level test (subtests run with it), the test's own title for the JavaScript runners,
/// cargo's full path.
fn base_name(runner: Runner, t: &TestCase) -> String {
    let name = t.name.as_str();
    match runner {
        Runner::Pytest => name.split('[').next().unwrap_or(name).to_string(),
        Runner::GoTest | Runner::Gotestsum => name.split('/').next().unwrap_or(name).to_string(),
        // jest-junit names a test "{describe blocks} {title}": a leading space without a
        // describe block, which jest's `-t` (matched against the full name) does not have.
        Runner::Jest | Runner::Vitest | Runner::NodeTest => name.trim().to_string(),
        Runner::Cargo => name.to_string(),
        // JUnit's class and method; a JUnit 5 method's `()` and a parameterised run's `[1]` off.
        Runner::Maven | Runner::Gradle => {
            let method = name.split(['(', '[']).next().unwrap_or(name).trim();
            let sep = if runner == Runner::Maven { '#' } else { '.' };
            format!("{}{sep}{method}", t.classname)
        }
    }
}

/// One shell word, single-quoted.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CaseStatus;
    use std::sync::Arc;

    fn case(name: &str) -> TestCase {
        TestCase {
            suite: Arc::from("s"),
            classname: Arc::from("c"),
            name: name.into(),
            status: CaseStatus::Failed,
            file: None,
            line: None,
            time: None,
            message: String::new(),
            detail: String::new(),
            flaky: false,
            proves_fix: None,
        }
    }

    #[test]
    fn each_runner_gets_its_own_filter() {
        let (a, b) = (case("test_add[1-2]"), case("test_add"));
        let both = [&a, &b];
        for (command, want) in [
            (
                "python3 -m pytest -q --junitxml=r.xml tests",
                Some("python3 -m pytest -q --junitxml=r.xml tests -k 'test_add'"),
            ),
            ("cd py && pytest", Some("cd py && pytest -k 'test_add'")),
            ("pytest | tee log", None),
            ("./run-tests.sh", None),
        ] {
            assert_eq!(narrowed(command, &both).as_deref(), want, "{command}");
        }
        let (x, y) = (case("TestSum/negative"), case("TestDiv"));
        assert_eq!(
            narrowed("go test ./...", &[&x, &y]).as_deref(),
            Some("go test ./... -run '^(TestDiv|TestSum)$'")
        );
        assert_eq!(
            narrowed("gotestsum --junitfile r.xml -- ./...", &[&y]).as_deref(),
            Some("gotestsum --junitfile r.xml -- ./... -run '^(TestDiv)$'")
        );
        assert_eq!(
            narrowed("gotestsum --junitfile r.xml", &[&y]).as_deref(),
            Some("gotestsum --junitfile r.xml -- -run '^(TestDiv)$'")
        );
        let j = case("adds (1 + 2)");
        assert_eq!(
            narrowed("npx jest --ci", &[&j]).as_deref(),
            Some("npx jest --ci -t 'adds \\(1 \\+ 2\\)'")
        );
        // jest-junit's name of a test outside any describe block starts with a space.
        let top = case(" adds");
        assert_eq!(
            narrowed("npx jest --ci", &[&top]).as_deref(),
            Some("npx jest --ci -t 'adds'")
        );
        assert_eq!(
            narrowed("node --test", &[&j]).as_deref(),
            Some("node --test --test-name-pattern='^(adds \\(1 \\+ 2\\))$'")
        );
        let c = case("tests::it's");
        assert_eq!(
            narrowed("cargo test -q", &[&c]).as_deref(),
            Some("cargo test -q -- 'tests::it'\\''s'")
        );
        assert_eq!(narrowed("cargo test -- --nocapture", &[&c]), None);
        assert_eq!(narrowed("pytest", &[]), None);
    }

    /// Surefire and Gradle select by JUnit class and method (a JUnit 5 method's `()` and a
    /// parameterised run's index dropped).
    #[test]
    fn maven_and_gradle_select_class_and_method() {
        let mut a = case("adds()");
        a.classname = Arc::from("com.example.CalcTest");
        let mut b = case("divides(int)[2]");
        b.classname = Arc::from("com.example.DivTest");
        assert_eq!(
            narrowed("mvn -B -q test", &[&a, &b]).as_deref(),
            Some(
                "mvn -B -q test -Dtest='com.example.CalcTest#adds,com.example.DivTest#divides' -Dsurefire.failIfNoSpecifiedTests=false"
            )
        );
        assert_eq!(
            narrowed("./gradlew :core:test", &[&a]).as_deref(),
            Some("./gradlew :core:test --tests 'com.example.CalcTest.adds'")
        );
        assert_eq!(narrowed("mvn package", &[&a]), None);
        assert_eq!(narrowed("gradle build", &[&a]), None);
    }
}
