//! Defect concepts: the different words reviewers use for one kind of defect, so that
//! `console.log left in Cart` and `debug output in Cart` are recognised as the same problem and
//! `SQL injection in search()` and `XSS in search()` as different ones.
//!
//! The vocabulary comes from public taxonomies, not from labelled examples: MITRE CWE names
//! (the weakness and the words of its description), and the rule names of common linters that
//! flag the defect (ESLint, Ruff/flake8, Clippy, RuboCop, Credo, errcheck, go vet). Each concept
//! is a set of marks looked for in the lower-cased title: a mark is a phrase (matched on word
//! boundaries) or a code form (`console.log`, `dbg!`, `shell=true`) matched as written.

/// A kind of defect and the marks that name it.
pub struct Concept {
    pub name: &'static str,
    /// Where the vocabulary comes from.
    pub source: &'static str,
    pub marks: &'static [&'static str],
    /// Words one of which must also occur for a mark to count (empty: none needed).
    pub context: &'static [&'static str],
    /// A kind specific enough that two issues of one file naming it are one problem (unless
    /// their code identifiers differ); a broad kind (input validation) only lowers the bar.
    pub decisive: bool,
}

const SQL: &[&str] = &["sql", "query", "queries", "jdbc", "select"];
const HTML: &[&str] = &["html", "render", "page", "dom", "template"];

pub const CONCEPTS: &[Concept] = &[
    Concept {
        name: "debug_output",
        source: "ESLint no-console/no-debugger; Ruff T201 `print` found, T203 pprint; Clippy dbg_macro, print_stdout; PMD SystemPrintln; RuboCop Lint/Debugger, Rails/Output; Credo IoInspect; PHP var_dump/print_r",
        marks: &[
            "console.log",
            "console.debug",
            "console.dir",
            "debugger",
            "print(",
            "print()",
            "pprint",
            "println",
            "fmt.print",
            "system.out",
            "system.err",
            "dbg!",
            "puts",
            "io.inspect",
            "var_dump",
            "print_r",
            "pdb",
            "breakpoint()",
            "stdout",
            "debug output",
            "debug print",
            "debug logging",
            "debug statement",
            "debugging statement",
            "debugging output",
            "debug macro",
            "print statement",
            "print call",
            "debug line",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "debug_output",
        source: "ESLint no-console (console output left in code)",
        marks: &["console"],
        context: &[
            "log",
            "logs",
            "logging",
            "print",
            "prints",
            "debug",
            "debugging",
            "left",
            "leftover",
            "stray",
        ],
        decisive: true,
    },
    Concept {
        name: "sql_injection",
        source: "CWE-89 Improper Neutralization of Special Elements used in an SQL Command; SpotBugs SQL_NONCONSTANT_STRING_PASSED_TO_EXECUTE; Bandit B608",
        marks: &[
            "sql injection",
            "sqli",
            "prepared statement",
            "preparedstatement",
            "parameterized",
            "parametrized",
            "bind parameter",
            "executequery",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "sql_injection",
        source: "CWE-89: externally-influenced input used to construct an SQL command",
        marks: &[
            "concatenat",
            "interpolat",
            "f-string",
            "format string",
            "string formatting",
            "unsanitized",
            "unsanitised",
            "user input",
            "user-controlled",
            "injectable",
            "raw sql",
        ],
        context: SQL,
        decisive: true,
    },
    Concept {
        name: "xss",
        source: "CWE-79 Improper Neutralization of Input During Web Page Generation (Cross-site Scripting); eslint-plugin-react no-danger; vue/no-v-html",
        marks: &[
            "xss",
            "cross-site scripting",
            "cross site scripting",
            "dangerouslysetinnerhtml",
            "innerhtml",
            "v-html",
            "html injection",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "xss",
        source: "CWE-79: user-controllable input placed in a web page without neutralization",
        marks: &[
            "unescaped",
            "raw",
            "unsanitized",
            "unsanitised",
            "untrusted",
            "injected",
        ],
        context: HTML,
        decisive: true,
    },
    Concept {
        name: "command_injection",
        source: "CWE-78 Improper Neutralization of Special Elements used in an OS Command; Bandit B602/B605; eslint-plugin-security detect-child-process",
        marks: &[
            "command injection",
            "shell=true",
            "os.system",
            "child_process",
            "exec(",
            "popen",
            "shell command",
            "os command",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "path_traversal",
        source: "CWE-22 Improper Limitation of a Pathname to a Restricted Directory (Path Traversal)",
        marks: &[
            "path traversal",
            "directory traversal",
            "../",
            "arbitrary file",
            "without normalisation",
            "without normalization",
            "not normalised",
            "not normalized",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "race_condition",
        source: "CWE-362 Concurrent Execution using Shared Resource with Improper Synchronization (Race Condition); CWE-367 TOCTOU; Go race detector (DATA RACE, concurrent map writes)",
        marks: &[
            "race",
            "data race",
            "race condition",
            "concurrent",
            "concurrently",
            "unsynchronized",
            "synchronization",
            "mutex",
            "thread-safe",
            "thread safe",
            "out-of-order",
            "out of order",
            "toctou",
            "lost update",
            "intermittent",
            "intermittently",
            "nondeterministic",
            "non-deterministic",
            "timing window",
            "interleaving",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "deadlock",
        source: "CWE-833 Deadlock; Microsoft VSTHRD002 avoid problematic synchronous waits",
        marks: &[
            "deadlock",
            "sync-over-async",
            "synchronous wait",
            "waits synchronously",
            ".result",
            ".wait()",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "null_dereference",
        source: "CWE-476 NULL Pointer Dereference",
        marks: &[
            "null",
            "nil",
            "npe",
            "nullpointerexception",
            "nonetype",
            "undefined",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "resource_leak",
        source: "CWE-772 Missing Release of Resource after Effective Lifetime; CWE-401 Missing Release of Memory; CWE-404 Improper Resource Shutdown or Release",
        marks: &[
            "leak",
            "leaks",
            "not closed",
            "never closed",
            "not released",
            "never released",
            "never exits",
            "does not stop",
            "keeps running",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "hardcoded_secret",
        source: "CWE-798 Use of Hard-coded Credentials; CWE-259 Hard-coded Password; Bandit B105/B106; gitleaks",
        marks: &[
            "hardcoded",
            "hard-coded",
            "credentials",
            "plaintext password",
            "secret",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "unchecked_error",
        source: "CWE-252 Unchecked Return Value; CWE-391 Unchecked Error Condition; CWE-396 Declaration of Catch for Generic Exception; errcheck; Ruff E722 bare-except, S110 try-except-pass",
        marks: &[
            "unchecked",
            "ignored",
            "ignores",
            "ignore",
            "discard",
            "discards",
            "discarded",
            "swallow",
            "swallows",
            "bare except",
            "except: pass",
            "silently",
            "_ :=",
        ],
        context: &[
            "error",
            "errors",
            "err",
            "exception",
            "exceptions",
            "failure",
            "failures",
            "except",
        ],
        decisive: true,
    },
    Concept {
        name: "uncaught_exception",
        source: "CWE-248 Uncaught Exception; eslint-plugin-promise catch-or-return; Node unhandledRejection",
        marks: &[
            "unhandled",
            "uncaught",
            ".catch",
            "rejected promise",
            "rejection",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "n_plus_one",
        source: "CWE-1073 Non-SQL-Invokable Control Element with Excessive Number of Data Resource Accesses; Bullet N+1 query detection",
        marks: &[
            "n+1",
            "query per",
            "queries per",
            "select per",
            "separate query",
            "per row",
            "in a loop",
            "eager loading",
            "eager-load",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_timeout",
        source: "CWE-1088 Synchronous Access of Remote Resource without Timeout",
        marks: &[
            "timeout",
            "time out",
            "hang forever",
            "hangs forever",
            "abortcontroller",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "retry_storm",
        source: "CWE-400 Uncontrolled Resource Consumption: retries without backoff",
        marks: &["backoff", "back-off", "tight loop", "without delay"],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "unbounded_retry",
        source: "CWE-835 Loop with Unreachable Exit Condition: a message retried without a limit",
        marks: &[
            "forever",
            "endlessly",
            "endless",
            "infinite",
            "dead-letter",
            "dead letter",
            "poison",
        ],
        context: &[
            "retry", "retries", "retried", "job", "jobs", "message", "messages",
        ],
        decisive: true,
    },
    Concept {
        name: "integer_overflow",
        source: "CWE-190 Integer Overflow or Wraparound; Clippy arithmetic_side_effects",
        marks: &[
            "overflow",
            "overflows",
            "checked_mul",
            "checked_add",
            "wraparound",
            "wraps around",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "float_money",
        source: "CWE-1339 Insufficient Precision or Accuracy of a Real Number",
        marks: &[
            "float",
            "floating point",
            "double",
            "bigdecimal",
            "precision",
            "decimal",
        ],
        context: &[
            "money", "total", "totals", "price", "amount", "amounts", "invoice", "cent", "cents",
        ],
        decisive: true,
    },
    Concept {
        name: "missing_throttle",
        source: "CWE-770 Allocation of Resources Without Limits or Throttling",
        marks: &[
            "debounce",
            "debounced",
            "throttle",
            "throttled",
            "keystroke",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_list_key",
        source: "eslint-plugin-react jsx-key: Missing \"key\" prop for element in iterator",
        marks: &["key prop", "unique key", "keys", "key"],
        context: &[
            "list", "child", "children", "items", "mapped", "iterator", "element", "elements",
        ],
        decisive: true,
    },
    Concept {
        name: "side_effect_in_transaction",
        source: "Rails after_commit vs after_save; CWE-662 Improper Synchronization",
        marks: &[
            "after_commit",
            "rolled back",
            "rollback",
            "transaction",
            "committed",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "panic",
        source: "CWE-248 Uncaught Exception; CWE-703 Improper Check or Handling of Exceptional Conditions; Clippy unwrap_used, expect_used, panic",
        marks: &["panic", "panics", "unwrap", "unwrap()", ".expect("],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "input_validation",
        source: "CWE-20 Improper Input Validation; CWE-1286 Improper Validation of Syntactic Correctness of Input",
        marks: &[
            "validation",
            "validate",
            "validated",
            "unvalidated",
            "malformed",
            "sanitize",
            "sanitise",
            "without checking",
            "not checked",
            "no check",
            "not enforced",
            "invalid",
        ],
        context: &[],
        decisive: false,
    },
    Concept {
        name: "timezone",
        source: "Ruff/flake8-datetimez DTZ001-DTZ012 (naive datetimes, missing tzinfo)",
        marks: &[
            "timezone",
            "time zone",
            "tzinfo",
            "utc",
            "offset",
            "naive datetime",
        ],
        context: &[
            "date",
            "dates",
            "datetime",
            "time",
            "timestamp",
            "timestamps",
            "parse",
            "parsed",
            "parse_date",
            "iso",
        ],
        decisive: true,
    },
    Concept {
        name: "coverage",
        source: "coverage.py fail_under / JaCoCo / Istanbul coverage thresholds",
        marks: &["coverage", "covered", "uncovered", "untested", "more tests"],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "hardcoded_secret",
        source: "CWE-259 Use of Hard-coded Password: a password written in the source code",
        marks: &["password", "passwd", "api key", "token"],
        context: &[
            "literal",
            "plaintext",
            "committed",
            "source",
            "in code",
            "hardcoded",
            "hard-coded",
        ],
        decisive: true,
    },
    Concept {
        name: "missing_limit",
        source: "CWE-770 Allocation of Resources Without Limits or Throttling; CWE-400 Uncontrolled Resource Consumption",
        marks: &[
            "size limit",
            "maximum size",
            "max size",
            "too large",
            "larger than",
            "no limit",
            "unbounded",
            "limit is not enforced",
        ],
        context: &[],
        decisive: true,
    },
];

/// Whether `mark` occurs in `text` (both lower-case): a phrase of letters on word boundaries,
/// a code form as written.
fn has(text: &str, mark: &str) -> bool {
    let wordy = mark
        .chars()
        .all(|c| c.is_alphanumeric() || c == ' ' || c == '-');
    if !wordy {
        return text.contains(mark);
    }
    text.match_indices(mark).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + mark.len()..].chars().next();
        // A stem (`concatenat`, `interpolat`) may go on into its word.
        let stem = matches!(mark, "concatenat" | "interpolat");
        before.is_none_or(|c| !c.is_alphanumeric())
            && (stem || after.is_none_or(|c| !c.is_alphanumeric()))
    })
}

/// Whether an identifier (lower-case) is itself a concept's mark: a library call that names
/// the defect (`console.log`, `child_process.exec`, `checked_mul`, `after_commit`).
pub fn is_mark(identifier: &str) -> bool {
    CONCEPTS.iter().flat_map(|c| c.marks).any(|m| {
        let m = m.trim_end_matches(['(', ')', '!']);
        if m.len() <= 3 || m.contains(' ') {
            return false;
        }
        // A qualified mark (`console.log`, `checked_mul`) anywhere in a call; a plain word only
        // as a whole part of a qualified name (`fmt.println`), never inside a test's or a
        // function's own name (`test_login_locks_after_5_attempts` is no `lock`).
        if m.contains(['.', '_']) {
            identifier.contains(m)
        } else {
            identifier == m
                || (identifier.contains('.') && identifier.split(['.', '_']).any(|part| part == m))
        }
    })
}

/// Kinds of one family (a race and a deadlock are both concurrency defects): not told apart.
pub fn related(a: &[&str], b: &[&str]) -> bool {
    const FAMILIES: &[&[&str]] = &[
        &["race_condition", "deadlock"],
        &[
            "panic",
            "null_dereference",
            "uncaught_exception",
            "unchecked_error",
        ],
        &["retry_storm", "unbounded_retry", "missing_timeout"],
    ];
    FAMILIES
        .iter()
        .any(|f| a.iter().any(|x| f.contains(x)) && b.iter().any(|y| f.contains(y)))
}

/// Whether the concept `name` is decisive (see [`Concept::decisive`]).
pub fn decisive(name: &str) -> bool {
    CONCEPTS.iter().any(|c| c.name == name && c.decisive)
}

/// The concepts a title names.
pub fn of(title: &str) -> Vec<&'static str> {
    let text = title.to_lowercase();
    let mut found: Vec<&'static str> = Vec::new();
    for c in CONCEPTS {
        let named = c.marks.iter().any(|m| has(&text, m))
            && (c.context.is_empty() || c.context.iter().any(|w| has(&text, w)));
        if named && !found.contains(&c.name) {
            found.push(c.name);
        }
    }
    // A deadlock is a concurrency defect of its own, not a race.
    if found.contains(&"deadlock") {
        found.retain(|c| *c != "race_condition");
    }
    found
}

/// HTTP status codes a title names (`returns 500 instead of 404`), in order: they tell two
/// defects of one endpoint apart.
pub fn status_codes(title: &str) -> Vec<u16> {
    let lower = title.to_lowercase();
    let http = [
        "status",
        "return",
        "answer",
        "respon",
        "http",
        "yield",
        "get ",
        "post ",
        "put ",
        "delete ",
        "patch ",
        "expected",
        "instead of",
        "endpoint",
    ];
    if !http.iter().any(|w| lower.contains(w)) {
        return Vec::new();
    }
    // Codes as numbers and as RFC 9110 reason phrases, in the order the title names them.
    let mut found: Vec<(usize, u16)> = Vec::new();
    let mut at = 0;
    for t in lower.split(|c: char| !c.is_ascii_digit()) {
        let pos = lower[at..].find(t).map_or(at, |i| at + i);
        at = pos + t.len();
        if t.len() == 3
            && let Ok(c) = t.parse::<u16>()
            && (100..600).contains(&c)
        {
            found.push((pos, c));
        }
    }
    const PHRASES: [(&str, u16); 10] = [
        ("internal server error", 500),
        ("not found", 404),
        ("bad request", 400),
        ("unauthorized", 401),
        ("forbidden", 403),
        ("conflict", 409),
        ("unprocessable", 422),
        ("too many requests", 429),
        ("service unavailable", 503),
        ("no content", 204),
    ];
    for (phrase, code) in PHRASES {
        for (pos, _) in lower.match_indices(phrase) {
            found.push((pos, code));
        }
    }
    found.sort();
    found.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concepts_are_named_by_their_many_words() {
        assert_eq!(of("Stray console.log(cart) in Cart.tsx"), ["debug_output"]);
        assert_eq!(
            of("Remove debug logging from Cart render"),
            ["debug_output"]
        );
        assert_eq!(of("Leftover dbg! in the parser"), ["debug_output"]);
        assert_eq!(
            of("Query in get_orders is not parameterized"),
            ["sql_injection"]
        );
        assert_eq!(
            of("user input concatenated into the query"),
            ["sql_injection"]
        );
        assert!(of("strings are concatenated slowly").is_empty());
        assert_eq!(of("Cross-site scripting via the description"), ["xss"]);
        assert_eq!(
            of("Deadlock between two concurrent transfers"),
            ["deadlock"]
        );
        assert!(of("Missing test for empty input").is_empty());
        // A word inside another word is not a mark.
        assert!(!of("The overflowing menu is cut").contains(&"integer_overflow"));
    }

    #[test]
    fn status_codes_need_an_http_context() {
        assert_eq!(
            status_codes("GET /reports/1 returns 500 instead of 404"),
            [500, 404]
        );
        assert!(status_codes("Coverage is 800 lines short").is_empty());
        assert_eq!(
            status_codes("an unknown id yields an internal server error rather than 404"),
            [500, 404]
        );
    }
}
