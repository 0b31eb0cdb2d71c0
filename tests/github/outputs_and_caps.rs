//! Attacks 8 and 10 of issue 15 (SECURITY.md): a test forging the step's outputs, model text
//! forging workflow commands in the log, and a model asking for hundreds of commands at once.

use super::*;

/// One fixer answer asking for `n` `run_command` calls, each appending a line to `ran.txt`.
fn many_commands(n: usize) -> Value {
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("c{i}"), "name": "run_command",
            "arguments": {"command": format!("echo {i} >> ran.txt")}})
        })
        .collect();
    json!({"role": "fixer", "tool_calls": calls})
}

/// Attack 10: one model turn with 500 `run_command` calls ran all 500. Now at most
/// `max_tool_calls_per_turn` run per answer and `max_tool_calls_per_iteration` per iteration;
/// the rest are answered with an error, and `finish` still ends the turn.
#[test]
fn tool_calls_are_capped_per_answer_and_per_iteration() {
    let dir = tempfile::tempdir().unwrap();
    // The fix first, then 500 commands in the same answer; then 20 more; then `finish`.
    let mut first = many_commands(500);
    let edit = fix_calls()[0]["tool_calls"][0].clone();
    first["tool_calls"].as_array_mut().unwrap().insert(0, edit);
    let calls = vec![
        verdict("rejected", 30),
        first,
        many_commands(20),
        fix_calls()[1].clone(),
        verdict("approved", 92),
    ];
    project(dir.path(), json!(calls));
    let gh: Shared = Arc::default();
    let api = start(gh.clone());
    let o = actions_run(
        dir.path(),
        &api,
        "pull_request",
        &payload("pull_request.opened"),
        &["--max-tool-calls-per-iteration", "40"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ran = std::fs::read_to_string(dir.path().join("ran.txt")).unwrap();
    let ran: Vec<&str> = ran.lines().collect();
    // The edit and 24 of the 500 (25 per answer by default), then 15 of the 20 (40 per
    // iteration).
    let want: Vec<String> = (0..24).chain(0..15).map(|i| i.to_string()).collect();
    assert_eq!(ran, want, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("tool calls over the cap were not run"),
        "{}",
        stderr(&o)
    );
}
