//! Model input per reviewer call and prompt-cache reuse (results in BENCHMARKS.md).
//!
//! The fixture PR is the quickstart project (`examples/quickstart/`) with `slugify` and its tests
//! as an uncommitted change. The real `qa-loop` binary runs the demo's conversation (the same tool
//! calls as `examples/quickstart/session.json`) against a local fake of the Anthropic Messages API
//! that simulates its prompt cache: an entry is written at each `cache_control` breakpoint, and a
//! request reads the longest cached prefix ending at a breakpoint or at most 20 blocks before one
//! (the documented rule). Tokens are estimated at 4 bytes per token on the exact request JSON
//! blocks, the same estimator for every figure, so shares are exact for the requests qa-loop sends
//! and absolute counts are estimates.
//!
//! `cargo bench --bench agents`

use std::collections::{HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

#[derive(Debug, Clone, Default)]
struct Call {
    role: String,
    iteration: u32,
    read: u64,
    write: u64,
    uncached: u64,
    /// Cache read possible with breakpoints on tools and system only.
    stable_only_read: u64,
    /// The answer's tokens (same estimator).
    output: u64,
}

impl Call {
    fn input(&self) -> u64 {
        self.read + self.write + self.uncached
    }
}

#[derive(Default)]
struct Fake {
    replies: VecDeque<Value>,
    cache: HashSet<u64>,
    stable_cache: HashSet<u64>,
    calls: Vec<Call>,
    iteration: u32,
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let project = fixture_pr(dir.path());
    let session: Value =
        serde_json::from_str(include_str!("../examples/quickstart/session.json")).unwrap();
    let replies: VecDeque<Value> = session["calls"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(n, c)| anthropic_answer(n, c))
        .collect();
    let state = Arc::new(Mutex::new(Fake {
        replies,
        ..Fake::default()
    }));
    let addr = serve(state.clone());

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qa-loop"))
        .current_dir(&project)
        .env("ANTHROPIC_API_KEY", "sk-bench")
        .env_remove("GITHUB_BASE_REF")
        // The provider's default model.
        .args(["run", "--provider", "anthropic", "--no-github"])
        .args(["--base-url", &format!("http://{addr}")])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let calls = state.lock().unwrap().calls.clone();
    println!("## Model input per call on the quickstart PR (Anthropic, simulated prompt cache)");
    println!();
    println!("| call | agent | iteration | input tokens | cache read | cache write | uncached |");
    println!("|---|---|---|---|---|---|---|");
    for (i, c) in calls.iter().enumerate() {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            c.role,
            c.iteration,
            c.input(),
            c.read,
            c.write,
            c.uncached
        );
    }
    let reviewer: Vec<&Call> = calls.iter().filter(|c| c.role == "reviewer").collect();
    let mean = reviewer.iter().map(|c| c.input()).sum::<u64>() as f64 / reviewer.len() as f64;
    let later: Vec<&&Call> = reviewer.iter().filter(|c| c.iteration >= 2).collect();
    let share = |f: &dyn Fn(&Call) -> u64| {
        100.0 * later.iter().map(|c| f(c)).sum::<u64>() as f64
            / later.iter().map(|c| c.input()).sum::<u64>() as f64
    };
    let all = calls.iter().map(Call::input).sum::<u64>();
    let all_read = calls.iter().map(|c| c.read).sum::<u64>();
    println!();
    println!(
        "Reviewer: {} calls, {mean:.0} input tokens per call on average (max {}).",
        reviewer.len(),
        reviewer.iter().map(|c| c.input()).max().unwrap_or(0)
    );
    println!(
        "From iteration 2 on, {:.1}% of the reviewer's input is read from the cache ({} calls); with breakpoints on tools and system only it would be {:.1}%.",
        share(&|c| c.read),
        later.len(),
        share(&|c| c.stable_only_read)
    );
    println!(
        "Whole run: {all} input tokens, {:.1}% read from the cache.",
        100.0 * all_read as f64 / all as f64
    );
    cost(&calls);
}

/// The conversation's tokens and cost at the registry's prices of the default models (and of
/// the previous Anthropic default), with the same cache reads and writes for every model.
fn cost(calls: &[Call]) {
    use qa_loop::llm::Usage;
    use qa_loop::llm::registry::Registry;
    let usage = calls.iter().fold(Usage::default(), |mut u, c| {
        u.add(Usage {
            input_tokens: c.uncached,
            output_tokens: c.output,
            cache_read_tokens: c.read,
            cache_write_tokens: c.write,
        });
        u
    });
    println!();
    println!(
        "Tokens: {} uncached input, {} cache read, {} cache write, {} output.",
        usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens
    );
    println!();
    println!("| model | cost of the demo's conversation (USD) |");
    println!("|---|---|");
    let registry = Registry::default();
    for (model, note) in [
        (qa_loop::llm::anthropic::DEFAULT_MODEL, "Anthropic default"),
        (qa_loop::llm::openai::DEFAULT_MODEL, "OpenAI default"),
        ("claude-sonnet-4-5", "previous Anthropic default"),
    ] {
        let c = registry
            .cost(model, &usage)
            .expect("default models are priced");
        println!("| `{model}` ({note}) | {c:.4} |");
    }
}

/// The quickstart project with `slugify` (and its tests) as the change under review.
fn fixture_pr(base: &Path) -> std::path::PathBuf {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (project, _) = rt
        .block_on(qa_loop::commands::demo::prepare(Some(base)))
        .unwrap();
    let changed = ["textutil.py", "test_textutil.py"];
    let saved: Vec<String> = changed
        .iter()
        .map(|f| std::fs::read_to_string(project.join(f)).unwrap())
        .collect();
    std::fs::write(
        project.join("textutil.py"),
        "\"\"\"Small text helpers used to build URL paths.\"\"\"\n",
    )
    .unwrap();
    std::fs::write(project.join("test_textutil.py"), "print('no tests yet')\n").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&project)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    git(&["commit", "-q", "-a", "--amend", "-m", "base"]);
    for (f, text) in changed.iter().zip(saved) {
        std::fs::write(project.join(f), text).unwrap();
    }
    project
}

/// A session call as a Messages API answer.
fn anthropic_answer(n: usize, call: &Value) -> Value {
    let mut content = Vec::new();
    if let Some(t) = call["text"].as_str().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "text", "text": t}));
    }
    for (i, t) in call["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        content.push(json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": t["name"], "input": t["arguments"]}));
    }
    json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": qa_loop::llm::anthropic::DEFAULT_MODEL,
           "content": content, "stop_reason": "tool_use", "stop_sequence": null})
}

fn serve(state: Arc<Mutex<Fake>>) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new()
                .route("/v1/messages", axum::routing::post(handle))
                .with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    addr
}

async fn handle(State(state): State<Arc<Mutex<Fake>>>, Json(body): Json<Value>) -> Json<Value> {
    let mut fake = state.lock().unwrap();
    // The cache's order: tools, system, messages; each block without its cache_control.
    let mut blocks: Vec<(String, bool)> = Vec::new();
    let push = |blocks: &mut Vec<(String, bool)>, v: &Value, prefix: &str| {
        let mut v = v.clone();
        let marked = v
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
            .is_some();
        blocks.push((format!("{prefix}{v}"), marked));
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push(&mut blocks, t, "tool:");
    }
    for s in body["system"].as_array().into_iter().flatten() {
        push(&mut blocks, s, "system:");
    }
    let stable = blocks.len();
    for m in body["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            push(&mut blocks, b, m["role"].as_str().unwrap());
        }
    }
    let mut hashes = Vec::new();
    let mut h = DefaultHasher::new();
    for (text, _) in &blocks {
        text.hash(&mut h);
        hashes.push(h.finish());
    }
    let tokens = |range: std::ops::Range<usize>| {
        blocks[range]
            .iter()
            .map(|(t, _)| t.len() as u64)
            .sum::<u64>()
            / 4
    };
    let breakpoints: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
    let hit = |cache: &HashSet<u64>, bps: &[usize]| {
        bps.iter()
            .flat_map(|&bp| (bp.saturating_sub(20)..=bp).rev())
            .filter(|&j| cache.contains(&hashes[j]))
            .max()
    };
    let read_to = hit(&fake.cache, &breakpoints).map_or(0, |j| j + 1);
    let last_bp = breakpoints.last().map_or(0, |&b| b + 1);
    let stable_bps: Vec<usize> = breakpoints
        .iter()
        .copied()
        .filter(|&b| b < stable)
        .collect();
    let stable_read_to = hit(&fake.stable_cache, &stable_bps).map_or(0, |j| j + 1);
    for &bp in &breakpoints {
        fake.cache.insert(hashes[bp]);
    }
    for &bp in &stable_bps {
        fake.stable_cache.insert(hashes[bp]);
    }
    let system = body["system"][0]["text"].as_str().unwrap_or_default();
    let role = if system.contains("You are the **reviewer**") {
        "reviewer"
    } else {
        "fixer"
    };
    // The newest review task in the conversation names the iteration.
    let tasks = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap());
    if let Some(n) = tasks
        .filter_map(|b| b["text"].as_str()?.strip_prefix("# QA review, iteration "))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .max()
    {
        fake.iteration = n;
    }
    let call = Call {
        role: role.into(),
        iteration: fake.iteration,
        read: tokens(0..read_to),
        write: tokens(read_to..last_bp.max(read_to)),
        uncached: tokens(last_bp.max(read_to)..blocks.len()),
        stable_only_read: tokens(0..stable_read_to),
        output: 0,
    };
    let mut call = call;
    let mut answer = fake.replies.pop_front().expect("a scripted answer");
    call.output = answer["content"].to_string().len() as u64 / 4;
    answer["usage"] = json!({"input_tokens": call.uncached, "output_tokens": call.output,
        "cache_creation_input_tokens": call.write, "cache_read_input_tokens": call.read});
    fake.calls.push(call);
    Json(answer)
}
