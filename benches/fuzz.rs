//! Mutation fuzzer for every parser of untrusted input (RELIABILITY.md).
//!
//! `cargo bench --bench fuzz -- [TARGET|all] [SECONDS] [SEED]` (default: all, 5 s each).
//!
//! cargo-fuzz needs a nightly toolchain, which cannot be installed here (only crates.io is
//! reachable, not the Rust release server), so this is a self-contained coverage-blind fuzzer:
//! seeds from the repository's fixtures, mutated by byte flips, insertions of format tokens,
//! deletions, duplications and splices between seeds; every input runs under `catch_unwind`.
//! A panic is a failure: the input is saved under `target/fuzz-crashes/<target>/` and the
//! process exits 1. The slowest input is reported, so a hang shows as a run that never ends.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Target = fn(&[u8]);

fn targets() -> Vec<(&'static str, Vec<&'static str>, Target)> {
    vec![
        (
            "config",
            vec![
                "tests/fixtures/malformed",
                "examples/quickstart/qa-loop.yml",
                "docs/examples",
            ],
            config,
        ),
        ("plan", vec!["tests/fixtures/malformed"], plan),
        (
            "status",
            vec!["tests/fixtures/fuzz/status", "tests/fixtures/malformed"],
            status,
        ),
        (
            "spec",
            vec!["examples/quickstart/spec.md", "tests/fixtures/malformed"],
            spec,
        ),
        (
            "verdict",
            vec![
                "tests/fixtures/fuzz/verdict",
                "examples/quickstart/session.json",
            ],
            verdict,
        ),
        ("junit", vec!["tests/fixtures/junit"], junit),
        ("coverage", vec!["tests/fixtures/coverage"], coverage),
        ("event", vec!["tests/fixtures/github/events"], event),
        (
            "comment",
            vec![
                "tests/fixtures/fuzz/comment",
                "tests/fixtures/github/objects/issue-comment.json",
            ],
            comment,
        ),
        (
            "conversation",
            vec!["tests/fixtures/fuzz/conversation"],
            conversation,
        ),
    ]
}

fn text(data: &[u8]) -> &str {
    std::str::from_utf8(data).unwrap_or("")
}

fn config(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let _ = qa_loop::config::load::parse_config(Path::new("qa-loop.yml"), &s);
    let _ = qa_loop::config::load::parse_config(Path::new("qa-loop.json"), &s);
}

fn plan(data: &[u8]) {
    let _ = qa_loop::config::plan::parse_plan_strategy(
        Path::new("implementation_plan.json"),
        &String::from_utf8_lossy(data),
    );
}

/// A plan's history read back and every issue compared with every earlier one (`qa-loop
/// status` on a pull request's plan).
fn status(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let matcher = qa_loop::engine::matcher::Matcher::default();
    let path = Path::new("implementation_plan.json");
    let _ = qa_loop::report::status::from_text(path, &text, &matcher, 2);
    // Most mutations are not JSON: the input's two halves also go in as the titles and
    // descriptions of two issues, so the matcher meets arbitrary text.
    let half = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(i, _)| i);
    let (a, b) = text.split_at(half);
    let issue = |title: &str, description: &str, line: u32| {
        serde_json::json!({"title": title, "description": description, "fix": title,
                           "type": "unit_test", "file": "src/lib.rs", "line": line})
    };
    let plan = serde_json::json!({"qa_iteration_history": [
        {"iteration": 1, "issues": [issue(a, b, 10)]},
        {"iteration": 2, "issues": [issue(b, a, 12), issue(a, a, 14)]}
    ]});
    let _ = qa_loop::report::status::from_text(path, &plan.to_string(), &matcher, 2);
}

fn spec(data: &[u8]) {
    let _ = qa_loop::config::load::parse_spec_criteria(
        Path::new("spec.md"),
        &String::from_utf8_lossy(data),
    );
}

fn verdict(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let _ = qa_loop::agents::verdict::from_text(&s);
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) {
        let _ = qa_loop::agents::verdict::from_value(&v);
    }
}

fn junit(data: &[u8]) {
    let _ = qa_loop::verify::junit::parse(&String::from_utf8_lossy(data));
}

fn coverage(data: &[u8]) {
    let _ = qa_loop::verify::coverage::parse(&String::from_utf8_lossy(data));
}

fn event(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        for name in [
            "pull_request",
            "pull_request_target",
            "issue_comment",
            "workflow_dispatch",
            "workflow_run",
        ] {
            if let Ok(e) = qa_loop::github::event::parse(name, &v) {
                let _ = qa_loop::github::event::decide(&e, &["*".into()]);
            }
        }
    }
    let _ = qa_loop::github::event::command(text(data));
}

fn comment(data: &[u8]) {
    let _ = qa_loop::github::comment::decode(&String::from_utf8_lossy(data));
}

/// The agent's replies (JSON or server-sent events, both wire formats), the judge's answers and
/// the request template.
fn conversation(data: &[u8]) {
    use qa_loop::conversations::endpoint::{Endpoint, render_template, sse_data};
    static ENDPOINTS: std::sync::OnceLock<[Endpoint; 2]> = std::sync::OnceLock::new();
    let endpoints = ENDPOINTS.get_or_init(|| {
        let cfg = |template: Option<&str>| qa_loop::config::ConversationsConfig {
            start: None,
            ready_url: None,
            ready_timeout: None,
            endpoint: Some("http://127.0.0.1:9/chat".into()),
            request_template: template.map(str::to_string),
            response_path: template.map(|_| "data.messages.1.text".to_string()),
            approval_marker: None,
            scenarios: Vec::new(),
        };
        [
            Endpoint::new(&cfg(None)).unwrap(),
            Endpoint::new(&cfg(Some(r#"{"m": {{text}}, "s": {{session}}}"#))).unwrap(),
        ]
    });
    let s = String::from_utf8_lossy(data);
    for e in endpoints {
        let _ = e.reply_text(&s, false);
        let _ = e.reply_text(&s, true);
    }
    let _ = sse_data(&s);
    let _ = qa_loop::conversations::judge::parse(&s);
    let body = render_template(r#"{"m": {{text}}, "s": {{session}}}"#, &s, &s);
    assert!(
        serde_json::from_str::<serde_json::Value>(&body).is_ok(),
        "a filled template is JSON whatever the text"
    );
}

/// Tokens of the formats under test, inserted by the mutator.
const TOKENS: &[&str] = &[
    "data: ",
    "data: [DONE]\n\n",
    "\r\n\r\n",
    "{{text}}",
    "\"verdict\": \"continue\"",
    "\"follow_up\": ",
    ":",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    ",",
    "\n",
    "\n  ",
    "\t",
    "#",
    "&a ",
    "*a",
    "<<: *a",
    "!!str ",
    "---",
    "...",
    "|",
    ">",
    "\\",
    "\\u0000",
    "null",
    "true",
    "-1",
    "18446744073709551616",
    "1e999",
    "NaN",
    "<",
    ">",
    "</",
    "/>",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&#0;",
    "&#x110000;",
    "<!DOCTYPE x [<!ENTITY a \"b\">]>",
    "<?xml version=\"1.0\"?>",
    "<testsuite>",
    "<testcase name=\"a\">",
    "<failure message=\"m\">",
    "SF:",
    "DA:1,1",
    "end_of_record",
    "mode: set\n",
    "a.go:1.2,3.4 1 1\n",
    "- [ ] ",
    "- [x] ",
    "- [?] ",
    "## Acceptance Criteria\n",
    "<!-- qa-loop:report -->",
    "<!-- qa-loop:state ",
    " -->",
    "```json\n",
    "```",
    "### QC VERDICT",
    "decision: approved",
    "\u{feff}",
    "é",
    "\u{1F600}",
    "\r\n",
    "\0",
];

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let i = rng.below(len + 1);
                input.splice(i..i, t.iter().copied());
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(64)).min(len);
                input.drain(i..j);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(256)).min(len);
                let part = input[i..j].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, part);
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let i = rng.below(other.len());
                    let j = (i + 1 + rng.below(512)).min(other.len());
                    let at = rng.below(len + 1);
                    input.splice(at..at, other[i..j].iter().copied());
                }
            }
            5 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            _ => input.truncate(rng.below(len + 1)),
        }
    }
    input.truncate(1 << 20);
}

fn seeds(paths: &[&str]) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    for p in paths {
        let p = root.join(p);
        if p.is_dir() {
            let mut dir: Vec<PathBuf> = std::fs::read_dir(&p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            dir.sort();
            files.extend(dir);
        } else {
            files.push(p);
        }
    }
    let mut out: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        // Large fixtures slow every execution; their first 64 KiB carry the structure.
        .map(|mut b| {
            b.truncate(64 * 1024);
            b
        })
        .collect();
    out.push(Vec::new());
    out
}

fn run(name: &str, seed_paths: &[&str], target: Target, budget: Duration, seed: u64) -> bool {
    let seeds = seeds(seed_paths);
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let (mut execs, mut slowest) = (0u64, Duration::ZERO);
    // Every seed as is first.
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    loop {
        let input = queue.pop().unwrap_or_else(|| {
            let mut i = seeds[rng.below(seeds.len())].clone();
            mutate(&mut rng, &seeds, &mut i);
            i
        });
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| target(&input)));
        slowest = slowest.max(t.elapsed());
        execs += 1;
        if result.is_err() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/fuzz-crashes")
                .join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join(format!("crash-{execs}"));
            std::fs::write(&file, &input).unwrap();
            println!(
                "fuzz {name}: PANIC after {execs} inputs; input saved to {}",
                file.display()
            );
            return false;
        }
        if execs.is_multiple_of(256) && start.elapsed() >= budget {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz {name}: {execs} inputs in {secs:.0} s ({:.0}/s) from {} seeds, 0 panics, slowest input {:.1} ms",
        execs as f64 / secs,
        seeds.len(),
        slowest.as_secs_f64() * 1000.0
    );
    true
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let which = args.first().map(String::as_str).unwrap_or("all");
    let secs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    // Panics are caught and counted; their default message would flood the output.
    std::panic::set_hook(Box::new(|_| {}));
    let mut ok = true;
    let mut ran = 0;
    for (name, seed_paths, target) in targets() {
        if which == "all" || which == name {
            ran += 1;
            ok &= run(name, &seed_paths, target, Duration::from_secs(secs), seed);
        }
    }
    if ran == 0 {
        eprintln!("unknown target `{which}`");
        std::process::exit(2);
    }
    std::process::exit(if ok { 0 } else { 1 });
}
