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
const HTML: &[&str] = &[
    "html", "render", "rendered", "renders", "page", "dom", "template", "markdown",
];

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
        source: "CWE-476 NULL Pointer Dereference; detekt UnsafeCallOnNullableType (`!!`); typescript-eslint no-non-null-assertion; SwiftLint force_unwrapping, force_cast (`as!`)",
        marks: &[
            "null",
            "nil",
            "npe",
            "nullpointerexception",
            "nonetype",
            "undefined",
            "!!",
            "as!",
            "force unwrap",
            "force-unwrap",
            "force unwrapping",
            "force cast",
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
            "eager loading",
            "eager-load",
            "repo.preload",
            "lazy loading",
            "loaded lazily",
            "lazy-loaded",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "n_plus_one",
        source: "CWE-1073: data fetched per row or in a loop (a per-row render is no N+1)",
        marks: &["per row", "in a loop", "row by row", "one at a time"],
        context: &[
            "sql", "query", "queries", "jdbc", "select", "fetch", "fetched", "fetches", "loaded",
            "lookup", "database", "db",
        ],
        decisive: true,
    },
    Concept {
        name: "missing_timeout",
        source: "CWE-1088 Synchronous Access of Remote Resource without Timeout (the call may hang indefinitely)",
        marks: &[
            "timeout",
            "time out",
            "hang forever",
            "hangs forever",
            "indefinitely",
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
        source: "eslint-plugin-react no-array-index-key; React docs: keys must be stable",
        marks: &[
            "index as key",
            "index as the key",
            "array index as key",
            "no-array-index-key",
            "unstable key",
            "unstable keys",
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
        name: "flaky_test",
        source: "Google Testing Blog, Flaky Tests at Google; pytest-rerunfailures / Jest retryTimes / Gradle test-retry (tests that pass and fail on one code); the waits that fix them: XCTest waitForExistence, Testing Library waitFor, Playwright waitForSelector/waitForTimeout",
        marks: &[
            "flaky",
            "flakey",
            "flakiness",
            "intermittent",
            "intermittently",
            "nondeterministic",
            "non-deterministic",
            "nondeterministically",
            "non-deterministically",
            "sporadic",
            "sporadically",
            "passes/fails",
            "randomly fails",
            "fails randomly",
            "sometimes fails",
            "fails sometimes",
            "order-dependent",
            "timing-dependent",
            "waitforexistence",
            "waitfor",
            "waitforselector",
            "waitfortimeout",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "coverage",
        source: "coverage.py fail_under / JaCoCo / Istanbul coverage thresholds; the coverage tools by name (JaCoCo, Kover, SimpleCov, Istanbul/nyc, c8, gcov, llvm-cov, tarpaulin, Codecov, Coveralls)",
        marks: &[
            "coverage",
            "jacoco",
            "kover",
            "simplecov",
            "istanbul",
            "nyc",
            "c8",
            "gcov",
            "llvm-cov",
            "tarpaulin",
            "codecov",
            "coveralls",
            "covered",
            "uncovered",
            "untested",
            "more tests",
            "no test",
            "no tests",
            "no unit test",
            "no unit tests",
            "not tested",
            "never executed",
        ],
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
    }, // CWE Top 25 (2024) and common linter rules not covered above: each a kind of defect of its
    // own, named by its CWE title, its usual short name and the linter rules that flag it.
    Concept {
        name: "csrf",
        source: "CWE-352 Cross-Site Request Forgery; Django CsrfViewMiddleware; Brakeman CSRF (Rails `protect_from_forgery`, `verify_authenticity_token`)",
        marks: &[
            "csrf",
            "verify_authenticity_token",
            "protect_from_forgery",
            "xsrf",
            "cross-site request forgery",
            "cross site request forgery",
            "anti-forgery",
            "antiforgery",
            "forgery token",
            "csrf_exempt",
            "cross-site post",
            "cross-site posts",
            "cross-site request",
            "cross-site requests",
            "forged request",
            "forged requests",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "ssrf",
        source: "CWE-918 Server-Side Request Forgery",
        marks: &[
            "ssrf",
            "server-side request forgery",
            "server side request forgery",
            "fetches any url",
            "arbitrary url",
            "user-supplied url",
            "user supplied url",
            "169.254.169.254",
            "metadata endpoint",
            "internal addresses",
            "internal address",
            "private ranges",
            "private ip",
            "internal network",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_authorization",
        source: "CWE-862 Missing Authorization; CWE-863 Incorrect Authorization; CWE-639 Authorization Bypass Through User-Controlled Key (IDOR); OWASP A01 Broken Access Control",
        marks: &[
            "authorization check",
            "authorisation check",
            "missing authorization",
            "missing authorisation",
            "without authorization",
            "without authorisation",
            "unauthorized access",
            "unauthorised access",
            "idor",
            "insecure direct object reference",
            "access control",
            "permission check",
            "permission checks",
            "ownership check",
            "privilege escalation",
            "another user",
            "any user can",
            "not the owner",
            "belongs to another",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_authentication",
        source: "CWE-306 Missing Authentication for Critical Function; CWE-287 Improper Authentication; Django login_required",
        marks: &[
            "unauthenticated",
            "missing authentication",
            "without authentication",
            "authentication bypass",
            "auth bypass",
            "login_required",
            "without logging in",
            "no login required",
            "not logged in",
            "anonymous users",
            "anonymous user",
            "no authentication",
            "authentication check",
            "not authenticated",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "insecure_deserialization",
        source: "CWE-502 Deserialization of Untrusted Data; Bandit B301 pickle, B506 yaml_load; Semgrep java ObjectInputStream, .NET BinaryFormatter",
        marks: &[
            "deserialization",
            "deserialisation",
            "deserializes",
            "deserialises",
            "deserialize",
            "deserialise",
            "unpickling",
            "unpickles",
            "pickle.load",
            "pickle.loads",
            "yaml.load",
            "marshal.loads",
            "unserialize",
            "objectinputstream",
            "binaryformatter",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "code_injection",
        source: "CWE-94 Improper Control of Generation of Code; CWE-95 Eval Injection; ESLint no-eval, no-implied-eval, no-new-func; Bandit B307 eval",
        marks: &[
            "eval(",
            "eval",
            "new function(",
            "code injection",
            "eval injection",
            "dynamic code",
            "arbitrary code",
            "remote code execution",
            "rce",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "open_redirect",
        source: "CWE-601 URL Redirection to Untrusted Site (Open Redirect): its name and description (phishing)",
        marks: &[
            "open redirect",
            "unvalidated redirect",
            "arbitrary redirect",
            "redirects to any",
            "redirect to any",
            "redirect to an external",
            "next parameter",
            "arbitrary external url",
            "arbitrary url",
            "untrusted site",
            "phishing",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "sensitive_data_exposure",
        source: "CWE-200 Exposure of Sensitive Information; CWE-532 Insertion of Sensitive Information into Log File; CWE-209 Error Message Containing Sensitive Information; CWE-312 Cleartext Storage",
        marks: &[
            "sensitive data",
            "sensitive information",
            "information disclosure",
            "information exposure",
            "pii",
            "personal data",
            "plaintext password",
            "plain-text password",
            "plain text password",
            "cleartext",
            "clear text",
            "in plain text",
            "stack trace to",
            "exposes the stack trace",
            "leaks the stack trace",
            "internal details",
            "password in the log",
            "logs the password",
            "logs passwords",
            "token in the log",
            "logs the token",
            "logs tokens",
            "secrets in logs",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "sensitive_data_exposure",
        source: "CWE-532 Insertion of Sensitive Information into Log File: credentials or secrets written to a log",
        marks: &[
            "password",
            "passwords",
            "credential",
            "credentials",
            "secret",
            "secrets",
            "sensitive",
            "token",
            "tokens",
        ],
        context: &[
            "log", "logs", "logged", "logger", "logging", "redact", "redacted", "prints",
            "printed", "tracing",
        ],
        decisive: true,
    },
    Concept {
        name: "weak_crypto",
        source: "CWE-327 Use of a Broken or Risky Cryptographic Algorithm; CWE-328 Weak Hash; CWE-916 Password Hash With Insufficient Computational Effort; Bandit B303/B324",
        marks: &[
            "md5",
            "sha1",
            "sha-1",
            "weak hash",
            "weak hashing",
            "weak cipher",
            "weak encryption",
            "insecure hash",
            "broken cryptographic",
            "ecb mode",
            "unsalted",
            "without a salt",
            "without salt",
            "bcrypt",
            "argon2",
            "pbkdf2",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "insecure_randomness",
        source: "CWE-330 Use of Insufficiently Random Values; CWE-338 Weak PRNG; Bandit B311; SonarQube S2245",
        marks: &[
            "math.random",
            "random.random",
            "random.randint",
            "rand(",
            "insecure random",
            "weak random",
            "predictable token",
            "predictable tokens",
            "predictable id",
            "predictable ids",
            "not cryptographically secure",
            "cryptographically secure",
            "secrets module",
            "secure random",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "xxe",
        source: "CWE-611 Improper Restriction of XML External Entity Reference; Bandit B314-B320",
        marks: &[
            "xxe",
            "xml external entity",
            "xml external entities",
            "external entity",
            "external entities",
            "defusedxml",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "unrestricted_upload",
        source: "CWE-434 Unrestricted Upload of File with Dangerous Type",
        marks: &[
            "unrestricted upload",
            "file upload",
            "file uploads",
            "uploaded file",
            "uploaded files",
            "upload validation",
            "file type",
            "file extension",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "memory_safety",
        source: "CWE-787 Out-of-bounds Write; CWE-125 Out-of-bounds Read; CWE-416 Use After Free; CWE-415 Double Free; CWE-119 buffer errors",
        marks: &[
            "buffer overflow",
            "buffer overrun",
            "out-of-bounds",
            "out of bounds",
            "use after free",
            "use-after-free",
            "double free",
            "double-free",
            "dangling pointer",
            "heap overflow",
            "index out of range",
            "indexerror",
            "arrayindexoutofboundsexception",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "off_by_one",
        source: "CWE-193 Off-by-one Error",
        marks: &[
            "off-by-one",
            "off by one",
            "fencepost",
            "one too many",
            "one too few",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "division_by_zero",
        source: "CWE-369 Divide By Zero; Python ZeroDivisionError",
        marks: &[
            "division by zero",
            "divide by zero",
            "divides by zero",
            "dividing by zero",
            "divided by zero",
            "zerodivisionerror",
            "zero denominator",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "infinite_loop",
        source: "CWE-835 Loop with Unreachable Exit Condition ('Infinite Loop'); ESLint no-unmodified-loop-condition",
        marks: &[
            "infinite loop",
            "endless loop",
            "loops forever",
            "never terminates",
            "never exits",
            "infinite recursion",
            "unbounded recursion",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "unused_code",
        source: "ESLint no-unused-vars, no-unreachable; Ruff F401 unused-import, F841 unused-variable; rustc dead_code, unused_imports; Go vet unusedresult",
        marks: &[
            "unused import",
            "unused imports",
            "unused variable",
            "unused variables",
            "unused parameter",
            "unused function",
            "dead code",
            "unreachable code",
            "is never used",
            "are never used",
            "never read",
            "not used anywhere",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "mutable_default",
        source: "flake8-bugbear B006 mutable-argument-default; Pylint W0102 dangerous-default-value",
        marks: &[
            "mutable default",
            "mutable defaults",
            "dangerous default",
            "default argument is a list",
            "default argument is a dict",
            "shared default",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_await",
        source: "typescript-eslint no-floating-promises, require-await, no-misused-promises; Ruff RUF006; Python RuntimeWarning coroutine was never awaited",
        marks: &[
            "missing await",
            "not awaited",
            "never awaited",
            "unawaited",
            "un-awaited",
            "without await",
            "floating promise",
            "floating promises",
            "forgot to await",
            "fire-and-forget",
            "fire and forget",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "hook_dependencies",
        source: "eslint-plugin-react-hooks exhaustive-deps, rules-of-hooks",
        marks: &[
            "exhaustive-deps",
            "dependency array",
            "dependencies array",
            "deps array",
            "stale closure",
            "missing dependency",
            "rules of hooks",
            "hook called conditionally",
            "hooks called conditionally",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "accessibility",
        source: "eslint-plugin-jsx-a11y alt-text, label-has-associated-control, click-events-have-key-events; axe-core rules; WCAG 2.2",
        marks: &[
            "a11y",
            "accessibility",
            "alt text",
            "alt attribute",
            "aria-label",
            "aria label",
            "screen reader",
            "screen readers",
            "keyboard navigation",
            "keyboard users",
            "color contrast",
            "colour contrast",
            "focus trap",
            "focusable",
            "contentdescription",
            "accessibilitylabel",
            "accessibility label",
            "talkback",
            "voiceover",
            "unlabeled",
            "unlabelled",
            "axe",
            "wcag",
            "<label>",
            "label-has-associated-control",
            "htmlfor",
            "accessible name",
            "not announced",
            "alt=\"\"",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "toctou",
        source: "CWE-367 Time-of-check Time-of-use (TOCTOU) Race Condition",
        marks: &[
            "toctou",
            "time-of-check",
            "time of check",
            "check-then-act",
            "check then act",
            "check-then-update",
            "check-then-set",
            "not atomic",
            "non-atomic",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "redos",
        source: "CWE-1333 Inefficient Regular Expression Complexity; eslint-plugin-regexp no-super-linear-backtracking",
        marks: &[
            "redos",
            "catastrophic backtracking",
            "regular expression denial of service",
            "regex denial of service",
            "super-linear",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "permissive_cors",
        source: "CWE-942 Permissive Cross-domain Policy with Untrusted Domains",
        marks: &[
            "cors",
            "access-control-allow-origin",
            "allow-origin",
            "any origin",
            "wildcard origin",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "cookie_flags",
        source: "CWE-614 Sensitive Cookie Without 'Secure' Attribute; CWE-1004 Sensitive Cookie Without 'HttpOnly' Flag; CWE-1275 SameSite",
        marks: &[
            "httponly",
            "http-only",
            "secure flag",
            "secure attribute",
            "samesite",
            "same-site",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "unchecked_status",
        source: "CWE-252 Unchecked Return Value, for HTTP responses: fetch `response.ok`, requests `raise_for_status()`",
        marks: &[
            "response.ok",
            "res.ok",
            "resp.ok",
            "raise_for_status",
            "status code is not checked",
            "status code not checked",
            "without checking the status",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "premature_ack",
        source: "Kafka consumer delivery semantics (enable.auto.commit; Spring Kafka AckMode): at-least-once delivery needs the commit after processing",
        marks: &[
            "enable.auto.commit",
            "auto.commit",
            "auto-commit",
            "autocommit",
            "ackmode",
            "manual ack",
            "at-least-once",
            "at least once",
            "commit before",
            "commits before",
            "acknowledged before",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "untrusted_checkout",
        source: "GitHub Security Lab, Preventing pwn requests; zizmor dangerous-triggers; CodeQL actions/untrusted-checkout",
        marks: &[
            "pull_request_target",
            "pwn request",
            "untrusted checkout",
            "dangerous trigger",
            "privileged trigger",
            "pull_request.head.sha",
            "pull_request.head.ref",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "excess_rerender",
        source: "Angular ChangeDetectionStrategy.OnPush; React Profiler / eslint-plugin-react-perf (unnecessary re-renders); Vue deep watchers",
        marks: &[
            "change detection",
            "changedetectionstrategy",
            "onpush",
            "re-render",
            "re-renders",
            "rerender",
            "rerenders",
            "re-rendering",
            "deep watcher",
            "deep: true",
            "recompute",
            "recomputes",
            "recalculates",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "ignored_cancellation",
        source: "Go contextcheck and go vet lostcancel; .NET CA2016 (forward the CancellationToken): work that outlives its caller",
        marks: &[
            "context.background",
            "context.todo",
            "cancellation",
            "cancellationtoken",
            "ctx.done",
            "lostcancel",
            "contextcheck",
            "hangs up",
            "hung up",
            "client disconnects",
            "caller disconnects",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_rate_limit",
        source: "CWE-307 Improper Restriction of Excessive Authentication Attempts; CWE-799 Improper Control of Interaction Frequency; OWASP API4 (rate limiting)",
        marks: &[
            "rate limit",
            "rate-limit",
            "rate limiting",
            "rate-limiting",
            "throttling",
            "brute force",
            "brute-force",
            "login attempts",
            "password guesses",
            "unlimited attempts",
            "lockout",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "sensitive_query_string",
        source: "CWE-598 Use of GET Request Method With Sensitive Query Strings",
        marks: &[
            "query string",
            "query parameter",
            "in the url",
            "url parameter",
        ],
        context: &[
            "key",
            "token",
            "password",
            "secret",
            "credential",
            "credentials",
            "session",
        ],
        decisive: true,
    },
    Concept {
        name: "timing_attack",
        source: "CWE-208 Observable Timing Discrepancy; Python hmac.compare_digest, Node crypto.timingSafeEqual, Rails secure_compare",
        marks: &[
            "timing attack",
            "timing side channel",
            "timing side-channel",
            "constant-time",
            "constant time",
            "compare_digest",
            "timingsafeequal",
            "secure_compare",
            "compared with ==",
            "compares with ==",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "hardcoded_text",
        source: "eslint-plugin-i18next no-literal-string; i18n-tasks; gettext: user-facing text not routed through translations",
        marks: &[
            "i18n",
            "l10n",
            "translation",
            "translations",
            "translated",
            "localization",
            "localisation",
            "localized",
            "locale",
            "__()",
            "gettext",
            "literal strings",
            "hard-coded english",
            "hardcoded english",
            "hard-coded strings",
            "hard-coded text",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "sensitive_data_exposure",
        source: "CWE-200: a secret that leaks is exposed, not a resource left open; `set -x` traces (ShellCheck, GitHub's secret masking)",
        marks: &["leak", "leaks", "leaked", "leaking", "set -x", "traces"],
        context: &[
            "secret",
            "secrets",
            "password",
            "passwords",
            "token",
            "tokens",
            "credential",
            "credentials",
            "api key",
            "key",
        ],
        decisive: true,
    },
    Concept {
        name: "blocking_migration",
        source: "strong_migrations (`null: false` on an existing column needs a default or a backfill)",
        marks: &["null: false", "backfill"],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "mass_assignment",
        source: "CWE-915 Improperly Controlled Modification of Dynamically-Determined Object Attributes; Brakeman Mass Assignment (`permit!`, `attr_accessible`); Laravel `$guarded`/`$fillable`; ASP.NET over-posting",
        marks: &[
            "mass assignment",
            "mass-assignment",
            "permit!",
            "strong params",
            "strong parameters",
            "$guarded",
            "$fillable",
            "guarded attributes",
            "fillable",
            "attr_accessible",
            "over-posting",
            "overposting",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "session_fixation",
        source: "CWE-384 Session Fixation",
        marks: &[
            "session fixation",
            "session not regenerated",
            "regenerate the session",
            "session id is not rotated",
            "session id not rotated",
            "rotate the session",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "insufficient_expiration",
        source: "CWE-613 Insufficient Session Expiration; CWE-324 Use of a Key Past its Expiration Date",
        marks: &[
            "expired",
            "expiry",
            "expiration",
            "never expire",
            "never expires",
            "ttl",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "resource_exhaustion",
        source: "CWE-400 Uncontrolled Resource Consumption; Sobelow DOS.StringToAtom (atom table exhaustion)",
        marks: &[
            "uncontrolled resource consumption",
            "resource exhaustion",
            "exhaust",
            "exhausts",
            "exhaustion",
            "to_atom",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "excessive_privilege",
        source: "CWE-250 Execution with Unnecessary Privileges; CWE-269 Improper Privilege Management; principle of least privilege",
        marks: &[
            "least privilege",
            "least-privilege",
            "all privileges",
            "grant all",
            "excessive privileges",
            "excessive permissions",
            "unnecessary privileges",
            "read-only",
            "superuser",
        ],
        context: &[
            "role",
            "user",
            "grant",
            "privileges",
            "permissions",
            "account",
        ],
        decisive: true,
    },
    Concept {
        name: "duplicate_action",
        source: "CWE-837 Improper Enforcement of a Single, Unique Action; idempotency keys (Stripe API)",
        marks: &[
            "idempotent",
            "idempotency",
            "twice",
            "double-charge",
            "double charge",
            "duplicate charge",
            "duplicate charges",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "missing_index",
        source: "PostgreSQL seq scan; squawk / strong_migrations (index on foreign keys); active_record_doctor missing_foreign_key_indexes",
        marks: &[
            "not indexed",
            "no index",
            "missing index",
            "without an index",
            "unindexed",
            "full table scan",
            "seq scan",
            "sequential scan",
        ],
        context: &[],
        decisive: true,
    },
    Concept {
        name: "blocking_migration",
        source: "squawk require-concurrent-index-creation, adding-required-field; strong_migrations (non-concurrent index, NOT NULL without default)",
        marks: &[
            "concurrently",
            "locks the table",
            "lock the table",
            "table lock",
            "exclusive lock",
            "not null",
            "non-nullable",
            "without default",
            "without a default",
            "no default",
            "adding-required-field",
            "require-concurrent-index-creation",
            "transaction block",
            "non-transactional",
            "disable_ddl_transaction",
        ],
        context: &["migration", "index", "table", "column", "alter", "deploy"],
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
        // CWE-662 Improper Synchronization: a transaction is how the others are fixed.
        &[
            "race_condition",
            "deadlock",
            "toctou",
            "side_effect_in_transaction",
        ],
        &["missing_authorization", "missing_authentication"],
        &["memory_safety", "off_by_one"],
        &["insecure_deserialization", "code_injection"],
        &[
            "panic",
            "null_dereference",
            "uncaught_exception",
            "unchecked_error",
        ],
        &["retry_storm", "unbounded_retry", "missing_timeout"],
        // Work done on every input event: debouncing and memoising are both its remedy.
        &["missing_throttle", "excess_rerender"],
        &["missing_throttle", "missing_rate_limit"],
    ];
    FAMILIES
        .iter()
        .any(|f| a.iter().any(|x| f.contains(x)) && b.iter().any(|y| f.contains(y)))
}

/// Whether the concept `name` is decisive (see [`Concept::decisive`]).
pub fn decisive(name: &str) -> bool {
    CONCEPTS.iter().any(|c| c.name == name && c.decisive)
}

/// Kinds that, when a title names them, show what its other marks really mean: a deadlock is a
/// concurrency defect of its own, not a race; an index built `CONCURRENTLY` is no race, a
/// `NOT NULL` column no null dereference and a non-transactional migration no side effect in a
/// transaction; a secret that leaks is exposed, not a resource left open; hard-coded text to
/// translate is no hard-coded credential.
const OUTRANKS: &[(&str, &[&str])] = &[
    ("deadlock", &["race_condition"]),
    (
        "blocking_migration",
        &[
            "race_condition",
            "null_dereference",
            "side_effect_in_transaction",
        ],
    ),
    ("sensitive_data_exposure", &["resource_leak"]),
    ("hardcoded_text", &["hardcoded_secret"]),
];

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
    let ruled_out: Vec<&str> = OUTRANKS
        .iter()
        .filter(|(kind, _)| found.contains(kind))
        .flat_map(|(_, others)| others.iter().copied())
        .collect();
    found.retain(|c| !ruled_out.contains(c));
    found
}

/// HTTP status codes a title names (`returns 500 instead of 404`), in order: they tell two
/// defects of one endpoint apart.
pub fn status_codes(title: &str) -> Vec<u16> {
    status_mentions(&title.to_lowercase())
        .into_iter()
        .map(|(_, c)| c)
        .collect()
}

/// The statuses a title says an endpoint answers and the ones it says it should answer
/// (`returns 200 instead of 201`, `should return 201, still returns 200`: 200 answered, 201
/// expected). A status is expected when the words since the previous status (or the start)
/// say so: `expected`, `should`, `must`, `instead of`, `rather than`, `want`.
pub fn status_roles(title: &str) -> (Vec<u16>, Vec<u16>) {
    let lower = title.to_lowercase();
    let (mut answered, mut expected) = (Vec::new(), Vec::new());
    let mut from = 0;
    for (pos, code) in status_mentions(&lower) {
        let before = &lower[from.min(pos)..pos];
        let wanted = [
            "expect",
            "should",
            "must",
            "instead of",
            "rather than",
            "want",
        ]
        .iter()
        .any(|w| before.contains(w));
        let list = if wanted { &mut expected } else { &mut answered };
        if !list.contains(&code) {
            list.push(code);
        }
        from = pos + 3;
    }
    answered.sort_unstable();
    expected.sort_unstable();
    (answered, expected)
}

/// Each status a lower-cased title names, with its byte offset, in order.
fn status_mentions(lower: &str) -> Vec<(usize, u16)> {
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
    // Codes as numbers and as RFC 9110 reason phrases, in the order the title names them. A
    // number inside a name (`create_order_returns_201`, `v2`) is part of the name.
    let mut found: Vec<(usize, u16)> = Vec::new();
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_alphabetic() || c == '_');
    let mut at = 0;
    for t in lower.split(|c: char| !c.is_ascii_digit()) {
        let pos = lower[at..].find(t).map_or(at, |i| at + i);
        at = pos + t.len();
        if t.len() == 3
            && let Ok(c) = t.parse::<u16>()
            && (100..600).contains(&c)
            && !glued(lower[..pos].chars().next_back())
            && !glued(lower[pos + 3..].chars().next())
        {
            found.push((pos, c));
        }
    }
    // gRPC status codes name the same outcomes (google.rpc.Code's HTTP mapping).
    const PHRASES: &[(&str, u16)] = &[
        ("codes.notfound", 404),
        ("codes.invalidargument", 400),
        ("codes.failedprecondition", 400),
        ("codes.outofrange", 400),
        ("codes.internal", 500),
        ("codes.unknown", 500),
        ("codes.permissiondenied", 403),
        ("codes.unauthenticated", 401),
        ("codes.alreadyexists", 409),
        ("codes.aborted", 409),
        ("codes.resourceexhausted", 429),
        ("codes.unavailable", 503),
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
    for &(phrase, code) in PHRASES {
        for (pos, _) in lower.match_indices(phrase) {
            found.push((pos, code));
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symptoms_and_platform_words_name_their_kind() {
        assert_eq!(
            of("LoginTest is flaky: sometimes fails on CI"),
            ["flaky_test"]
        );
        assert_eq!(
            of("Avatar ImageView has no contentDescription"),
            ["accessibility"]
        );
        assert_eq!(
            of("VoiceOver reads the close icon as 'xmark'"),
            ["accessibility"]
        );
        assert_eq!(
            of("Preview fetcher can reach 169.254.169.254 from the server"),
            ["ssrf"]
        );
        assert_eq!(
            of("Request logger writes the reset token to stdout logs"),
            ["debug_output", "sensitive_data_exposure"]
        );
        assert_eq!(of("Balance check-then-update is not atomic"), ["toctou"]);
        assert!(related(
            &["race_condition"],
            &["side_effect_in_transaction"]
        ));
        assert_eq!(of("No unit tests for the slugify helper"), ["coverage"]);
    }

    #[test]
    fn tools_attacks_and_user_text_name_their_kind() {
        // A coverage tool's name is a coverage issue.
        assert_eq!(of("Kover gate fails for :core"), ["coverage"]);
        assert_eq!(of("SimpleCov drops below the minimum"), ["coverage"]);
        // Rate limits and brute force (CWE-307), apart from debouncing but related to it.
        assert_eq!(
            of("Password reset has no rate limit"),
            ["missing_rate_limit"]
        );
        assert!(related(&["missing_throttle"], &["missing_rate_limit"]));
        // A credential in a query string (CWE-598); a query string alone is nothing.
        assert_eq!(
            of("Session token passed in the query string"),
            ["sensitive_query_string"]
        );
        assert!(of("Search keeps its filters in the query string").is_empty());
        // Timing side channels (CWE-208).
        assert_eq!(
            of("Webhook signature compared with == instead of compare_digest"),
            ["timing_attack"]
        );
        // Text to translate is not a hard-coded secret.
        assert_eq!(
            of("Hard-coded English labels on the invoice page"),
            ["hardcoded_text"]
        );
        // A secret that leaks is exposed, not a leaked resource.
        assert_eq!(
            of("CI log leaks the registry password"),
            ["sensitive_data_exposure"]
        );
        assert_eq!(of("File handle leaks on early return"), ["resource_leak"]);
        // Index keys need no list word; plain `key` still does.
        assert_eq!(of("Rows use the array index as key"), ["missing_list_key"]);
        assert!(of("Primary key of orders is not unique").is_empty());
        // A migration that must run outside a transaction is a migration hazard.
        assert_eq!(
            of("Index migration cannot run inside a transaction block"),
            ["blocking_migration"]
        );
    }

    #[test]
    fn per_row_needs_data_and_printing_a_secret_exposes_it() {
        // Work per row is an N+1 only when it fetches data.
        assert_eq!(
            of("Each invoice's customer is fetched in a loop"),
            ["n_plus_one"]
        );
        assert!(!of("Per row render builds a new NumberFormatter").contains(&"n_plus_one"));
        // A Debug impl that prints a token exposes it.
        assert!(of("Debug impl prints the session token").contains(&"sensitive_data_exposure"));
        // strong_migrations: `null: false` wants a default or a backfill.
        assert_eq!(
            of("Set `null: false` on users.role only after a backfill"),
            ["blocking_migration"]
        );
    }

    #[test]
    fn remedies_linter_rules_and_migration_hazards_name_their_kind() {
        // Operators and lint names for a null dereference.
        assert_eq!(
            of("`user.email!!` in ProfileFragment"),
            ["null_dereference"]
        );
        assert!(of("Force unwrap of the cached avatar URL").contains(&"null_dereference"));
        // The remedy names the kind as well as the defect does.
        assert_eq!(
            of("Sweep job should be idempotent: a second run bills twice"),
            ["duplicate_action"]
        );
        assert_eq!(
            of("Checkout flow test: use waitFor before reading the total"),
            ["flaky_test"]
        );
        assert_eq!(
            of("Receipts consumer: enable.auto.commit loses records on crash"),
            ["premature_ack"]
        );
        assert_eq!(
            of("Deploy workflow runs on pull_request_target with the fork's code"),
            ["untrusted_checkout"]
        );
        assert_eq!(
            of("Each change to the filter re-renders the whole table"),
            ["excess_rerender"]
        );
        assert!(related(&["missing_throttle"], &["excess_rerender"]));
        assert_eq!(
            of("Report export keeps querying after the client hangs up"),
            ["ignored_cancellation"]
        );
        assert_eq!(
            of("Image fetch may block indefinitely"),
            ["missing_timeout"]
        );
        assert_eq!(
            of("Upload helper never looks at response.ok"),
            ["unchecked_status"]
        );
        // CWE names of their own.
        assert_eq!(
            of("Profile update uses strong params with permit!"),
            ["mass_assignment"]
        );
        assert_eq!(
            of("Login keeps the pre-auth session id (session fixation)"),
            ["session_fixation"]
        );
        assert_eq!(
            of("Cached API keys are used after their expiry"),
            ["insufficient_expiration"]
        );
        assert_eq!(
            of("`binary_to_atom` on webhook fields can exhaust the atom table"),
            ["resource_exhaustion"]
        );
        assert_eq!(
            of("Analytics role gets GRANT ALL on the schema"),
            ["excessive_privilege"]
        );
        // The words need their context: a read-only input is no privilege.
        assert!(of("Read-only date input can still be typed into").is_empty());
        // Migration hazards: a missing index, a blocking build, a required column; an index
        // built CONCURRENTLY is no race and a NOT NULL column no null dereference.
        assert_eq!(of("payments.user_id is not indexed"), ["missing_index"]);
        assert_eq!(
            of("Migration builds the index without CONCURRENTLY"),
            ["blocking_migration"]
        );
        assert_eq!(
            of("Migration adds a NOT NULL column with no default"),
            ["blocking_migration"]
        );
        assert_eq!(
            of("Phishing risk: login follows any URL in `continue`"),
            ["open_redirect"]
        );
        assert_eq!(
            of("Search field is only described by its placeholder, no <label>"),
            ["accessibility"]
        );
    }

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
    fn the_cwe_top_25_and_common_linter_rules_are_kinds_of_their_own() {
        for (title, kind) in [
            ("Transfer form has no CSRF token", "csrf"),
            ("Webhook preview fetches any URL the user gives", "ssrf"),
            (
                "A user can read another user's invoices (IDOR)",
                "missing_authorization",
            ),
            (
                "Export endpoint is reachable unauthenticated",
                "missing_authentication",
            ),
            (
                "Session cookie is loaded with pickle.loads",
                "insecure_deserialization",
            ),
            ("Formula field is passed to eval", "code_injection"),
            (
                "Login's next parameter allows an open redirect",
                "open_redirect",
            ),
            (
                "Reset tokens are written to the log in plain text",
                "sensitive_data_exposure",
            ),
            ("Passwords are hashed with MD5", "weak_crypto"),
            ("Invite codes come from Math.random", "insecure_randomness"),
            ("XML import resolves external entities", "xxe"),
            (
                "Avatar upload does not check the file type",
                "unrestricted_upload",
            ),
            (
                "Parser reads out of bounds on a short header",
                "memory_safety",
            ),
            (
                "Pagination skips an item: off-by-one in the last page",
                "off_by_one",
            ),
            (
                "Average of an empty list divides by zero",
                "division_by_zero",
            ),
            (
                "Retry loop never terminates when the queue is empty",
                "infinite_loop",
            ),
            ("Unused import of os in utils", "unused_code"),
            ("add_item has a mutable default argument", "mutable_default"),
            ("save() promise is not awaited", "missing_await"),
            (
                "useEffect dependency array misses userId",
                "hook_dependencies",
            ),
            ("Product image has no alt text", "accessibility"),
            ("Check-then-act on the file's existence (TOCTOU)", "toctou"),
            ("Email regex has catastrophic backtracking", "redos"),
            ("API allows any origin through CORS", "permissive_cors"),
            ("Session cookie lacks the HttpOnly flag", "cookie_flags"),
        ] {
            assert!(of(title).contains(&kind), "{title}: {:?}", of(title));
            assert!(decisive(kind), "{kind}");
        }
        // Two of them in one file are two problems; one family's members are not told apart.
        assert!(!related(&["csrf"], &["open_redirect"]));
        assert!(related(&["toctou"], &["race_condition"]));
        assert!(of("Publicly accessible bucket listing").is_empty());
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
