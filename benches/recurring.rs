//! Cost of finding recurring issues in a long plan history (results in BENCHMARKS.md).
//!
//! `qa-loop status` and every iteration of the loop compare each issue with every earlier
//! iteration's issues: n occurrences cost about n²/2 matcher decisions. This times
//! `status::from_text` (reading the plan and finding the recurring issues) on generated
//! histories of 10 to 20 iterations of 10 to 15 issues, with and without the reviewer's
//! descriptions and fixes (the matcher reads them where titles fall short), median of 5.
//!
//! `cargo bench --bench recurring`

use std::path::Path;
use std::time::{Duration, Instant};

use qa_loop::engine::matcher::Matcher;
use qa_loop::report::status;
use serde_json::{Value, json};

/// Words for titles and descriptions, picked by a fixed linear congruential sequence, so every
/// run compares the same history.
const WORDS: &[&str] = &[
    "cache",
    "token",
    "order",
    "invoice",
    "user",
    "session",
    "query",
    "handler",
    "retry",
    "timeout",
    "lock",
    "race",
    "null",
    "index",
    "migration",
    "coverage",
    "test",
    "parse",
    "config",
    "secret",
    "log",
    "error",
    "leak",
    "render",
    "state",
    "thread",
    "pool",
    "payload",
    "webhook",
    "signature",
];

fn history(iterations: u32, per_iteration: u32, details: bool) -> Value {
    let mut seed: u64 = 0x5eed;
    let mut pick = |n: usize| -> String {
        (0..n)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                WORDS[(seed >> 33) as usize % WORDS.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let entries: Vec<Value> = (1..=iterations)
        .map(|it| {
            let issues: Vec<Value> = (0..per_iteration)
                .map(|q| {
                    let mut issue = json!({
                        "id": format!("Q{}", q + 1), "title": pick(6), "type": "error_handling",
                        "file": format!("src/module_{}.py", q % 5), "line": 10 + q * 7 + it,
                    });
                    if details {
                        issue["description"] = pick(20).into();
                        issue["fix"] = pick(8).into();
                    }
                    issue
                })
                .collect();
            json!({"iteration": it, "status": "rejected", "issues": issues})
        })
        .collect();
    json!({ "qa_iteration_history": entries })
}

fn main() {
    let matcher = Matcher::default();
    println!("| iterations × issues | occurrences | descriptions | median of 5 |");
    println!("|---|---|---|---|");
    for (iterations, per) in [(10, 10), (20, 15)] {
        for details in [false, true] {
            let text = history(iterations, per, details).to_string();
            let mut times: Vec<Duration> = (0..5)
                .map(|_| {
                    let start = Instant::now();
                    let view = status::from_text(Path::new("plan.json"), &text, &matcher, 3)
                        .expect("the generated plan reads");
                    std::hint::black_box(view);
                    start.elapsed()
                })
                .collect();
            times.sort();
            println!(
                "| {iterations} × {per} | {} | {} | {:.1} ms |",
                iterations * per,
                if details { "yes" } else { "no" },
                times[2].as_secs_f64() * 1000.0
            );
        }
    }
}
