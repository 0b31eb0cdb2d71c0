//! The agents' tools (SPEC §5.2). Arguments are typed at the boundary; every failure (bad
//! arguments, refused path, no match) is returned to the model as the tool's result.

pub mod paths;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::llm::{ToolCall, ToolSpec};
use crate::nofollow::write_atomic;
use crate::verify::process;
pub use paths::{Access, Confinement};

/// Largest tool result sent back to the model (head + tail beyond it).
pub const RESULT_BUDGET: usize = 16 * 1024;
/// Largest file `read_file` returns whole.
const MAX_READ_LINES: usize = 2000;
const MAX_LIST: usize = 500;
const MAX_MATCHES: usize = 200;
const DEFAULT_COMMAND_TIMEOUT: u64 = 300;
const MAX_COMMAND_TIMEOUT: u64 = 1800;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Images for the model (an MCP tool's screenshots, downscaled).
    pub images: Box<[crate::mcp::ModelImage]>,
    /// `submit_verdict` / `finish` end the agent's turn.
    pub end: Option<TurnEnd>,
}

/// A tool call that ends the agent's turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    Verdict(serde_json::Value),
    Finish(String),
}

impl ToolOutput {
    fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            images: Box::default(),
            content: truncate(content.into()),
            is_error: false,
            end: None,
        }
    }
    fn err(content: impl Into<String>) -> Self {
        ToolOutput {
            images: Box::default(),
            content: content.into(),
            is_error: true,
            end: None,
        }
    }
}

/// Which tool set an agent gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSet {
    /// read_file, list_files, search, git_diff, run_command, submit_verdict.
    Reviewer,
    /// read_file, list_files, search, git_diff, run_command, write_file, edit_file, finish.
    Fixer,
}

/// The tools of one repository.
#[derive(Debug, Clone)]
pub struct ToolBox {
    pub confinement: Confinement,
    /// What `git_diff` compares the working tree with.
    pub diff_base: crate::vcs::DiffBase,
    /// Runs `run_command` (secret-free environment, cancellation).
    pub launcher: process::Launcher,
    /// Whether `run_command` is offered: not for untrusted code (the fork-safe publisher,
    /// `pull_request_target`), where nothing of the change may run.
    pub commands: bool,
    /// The run's MCP servers (`mcp__<server>__<tool>`), when any are configured.
    pub mcp: Option<std::sync::Arc<crate::mcp::Hub>>,
    /// qa-loop's own paths (out dir, plan), left out of `git_diff`'s whole change.
    pub own: Vec<String>,
}

#[derive(Deserialize)]
struct ReadFileArgs {
    path: String,
    #[serde(default)]
    start_line: Option<usize>,
    #[serde(default)]
    end_line: Option<usize>,
}

#[derive(Deserialize)]
struct GitDiffArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
struct ListFilesArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
struct RunCommandArgs {
    command: String,
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

#[derive(Deserialize)]
struct WriteFileArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
struct EditFileArgs {
    path: String,
    old: String,
    new: String,
}

#[derive(Deserialize)]
struct FinishArgs {
    #[serde(default)]
    summary: String,
}

fn parse<T: for<'de> Deserialize<'de>>(
    tool: &str,
    args: &serde_json::Value,
) -> Result<T, ToolOutput> {
    // Some models send arguments as a JSON string.
    let value = match args {
        serde_json::Value::String(s) => serde_json::from_str(s).unwrap_or(serde_json::Value::Null),
        serde_json::Value::Null => json!({}),
        v => v.clone(),
    };
    serde_json::from_value(value)
        .map_err(|e| ToolOutput::err(format!("invalid arguments for {tool}: {e}")))
}

impl ToolBox {
    pub fn new(
        confinement: Confinement,
        diff_base: impl Into<crate::vcs::DiffBase>,
        launcher: process::Launcher,
    ) -> Self {
        ToolBox {
            confinement,
            diff_base: diff_base.into(),
            launcher,
            commands: true,
            mcp: None,
            own: Vec::new(),
        }
    }

    /// The same tools with qa-loop's own paths (out dir, plan) left out of `git_diff`.
    pub fn with_own_paths(mut self, own: Vec<String>) -> Self {
        self.own = own;
        self
    }

    /// The same tools plus the MCP servers' (for the agents each server names).
    pub fn with_mcp(mut self, hub: std::sync::Arc<crate::mcp::Hub>) -> Self {
        self.mcp = (!hub.is_empty()).then_some(hub);
        self
    }

    /// The same tools without `run_command`.
    pub fn without_commands(mut self) -> Self {
        self.commands = false;
        self
    }

    fn root(&self) -> &Path {
        self.confinement.root()
    }

    /// The tool specs offered to an agent.
    pub fn specs(&self, set: ToolSet) -> Vec<ToolSpec> {
        let mut specs = Self::all_specs(set);
        if !self.commands {
            specs.retain(|s| s.name != "run_command");
        }
        if let Some(hub) = &self.mcp {
            specs.extend(hub.specs(match set {
                ToolSet::Reviewer => crate::config::file::McpAgent::Reviewer,
                ToolSet::Fixer => crate::config::file::McpAgent::Fixer,
            }));
        }
        specs
    }

    fn all_specs(set: ToolSet) -> Vec<ToolSpec> {
        let mut specs = vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a text file of the repository, optionally a range of lines (1-based, inclusive). Output lines are prefixed with their numbers.".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "path relative to the repository root"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}}, "required": ["path"]}),
            },
            ToolSpec {
                name: "list_files".into(),
                description: "List the files under a directory of the repository (respects .gitignore).".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec {
                name: "search".into(),
                description: "Search the repository with a regular expression (respects .gitignore). Returns file:line: text.".into(),
                parameters: json!({"type": "object", "properties": {
                    "pattern": {"type": "string"}, "path": {"type": "string"}}, "required": ["pattern"]}),
            },
            ToolSpec {
                name: "git_diff".into(),
                description: "Show the change under review: git diff against the base, plus untracked files. Give `path` (a file or directory) to see only that part.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec {
                name: "run_command".into(),
                description: "Run a shell command in the repository root (no secrets in its environment). Output is truncated to its head and tail.".into(),
                parameters: json!({"type": "object", "properties": {
                    "command": {"type": "string"},
                    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_COMMAND_TIMEOUT}}, "required": ["command"]}),
            },
        ];
        match set {
            ToolSet::Reviewer => specs.push(ToolSpec {
                name: "submit_verdict".into(),
                description: "Submit your verdict. Call exactly once, at the end.".into(),
                parameters: verdict_schema(),
            }),
            ToolSet::Fixer => {
                specs.push(ToolSpec {
                    name: "write_file".into(),
                    description: "Create or overwrite a file with the given content.".into(),
                    parameters: json!({"type": "object", "properties": {
                        "path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
                });
                specs.push(ToolSpec {
                    name: "edit_file".into(),
                    description: "Replace the exact string `old` (which must occur exactly once) with `new`.".into(),
                    parameters: json!({"type": "object", "properties": {
                        "path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
                        "required": ["path", "old", "new"]}),
                });
                specs.push(ToolSpec {
                    name: "finish".into(),
                    description: "End your turn with a summary of what you changed, per issue id.".into(),
                    parameters: json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
                });
            }
        }
        specs
    }

    /// Runs one tool call for an agent with the given tool set.
    /// Tools that end the agent's turn (`submit_verdict`, `finish`): never capped.
    pub fn ends_turn(name: &str) -> bool {
        matches!(name, "submit_verdict" | "finish")
    }

    pub async fn execute(&self, set: ToolSet, call: &ToolCall) -> ToolOutput {
        let allowed = self.specs(set).iter().any(|s| s.name == call.name);
        if !allowed {
            return ToolOutput::err(format!(
                "unknown or unavailable tool `{}` for this agent",
                call.name
            ));
        }
        let result = match call.name.as_str() {
            "read_file" => parse(&call.name, &call.arguments).map(|a| self.read_file(a)),
            "list_files" => parse(&call.name, &call.arguments).map(|a| self.list_files(a)),
            "search" => parse(&call.name, &call.arguments).map(|a| self.search(a)),
            "git_diff" => match parse::<GitDiffArgs>(&call.name, &call.arguments) {
                Ok(a) => Ok(self.git_diff(a).await),
                Err(e) => Err(e),
            },
            "run_command" => match parse::<RunCommandArgs>(&call.name, &call.arguments) {
                Ok(a) => Ok(self.run_command(a).await),
                Err(e) => Err(e),
            },
            "write_file" => parse(&call.name, &call.arguments).map(|a| self.write_file(a)),
            "edit_file" => parse(&call.name, &call.arguments).map(|a| self.edit_file(a)),
            "submit_verdict" => Ok(ToolOutput {
                images: Box::default(),
                content: "verdict received".into(),
                is_error: false,
                end: Some(TurnEnd::Verdict(call.arguments.clone())),
            }),
            "finish" => parse::<FinishArgs>(&call.name, &call.arguments).map(|a| ToolOutput {
                images: Box::default(),
                content: "finished".into(),
                is_error: false,
                end: Some(TurnEnd::Finish(a.summary)),
            }),
            name if name.starts_with(crate::mcp::PREFIX) => match &self.mcp {
                Some(hub) => {
                    let agent = match set {
                        ToolSet::Reviewer => crate::config::file::McpAgent::Reviewer,
                        ToolSet::Fixer => crate::config::file::McpAgent::Fixer,
                    };
                    let r = hub.call(agent, name, &call.arguments).await;
                    Ok(ToolOutput {
                        images: r.model_images.into_boxed_slice(),
                        content: truncate(r.text),
                        is_error: r.is_error,
                        end: None,
                    })
                }
                None => Err(ToolOutput::err(format!("unknown tool `{name}`"))),
            },
            other => Err(ToolOutput::err(format!("unknown tool `{other}`"))),
        };
        let mut out = result.unwrap_or_else(|e| e);
        // Nothing qa-loop holds reaches the model through a tool (`env`, `.git/config`).
        if let std::borrow::Cow::Owned(redacted) = crate::secrets::redact(&out.content) {
            out.content = redacted;
        }
        out
    }

    fn read_file(&self, a: ReadFileArgs) -> ToolOutput {
        let path = match self.confinement.resolve(&a.path, Access::Read) {
            Ok(p) => p,
            Err(e) => return ToolOutput::err(e),
        };
        let text = match std::fs::read(&path) {
            Ok(bytes) if bytes.contains(&0) => {
                return ToolOutput::err(format!("`{}` is a binary file", a.path));
            }
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => return ToolOutput::err(format!("cannot read `{}`: {e}", a.path)),
        };
        let lines: Vec<&str> = text.lines().collect();
        let start = a.start_line.unwrap_or(1).max(1);
        let end = a
            .end_line
            .unwrap_or(lines.len())
            .min(lines.len())
            .min(start + MAX_READ_LINES - 1);
        if start > lines.len().max(1) {
            return ToolOutput::err(format!(
                "`{}` has {} lines; start_line {start} is past the end",
                a.path,
                lines.len()
            ));
        }
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
            out.push_str(&format!("{:>5}  {line}\n", i + 1));
        }
        let asked_end = a.end_line.unwrap_or(lines.len()).min(lines.len());
        if end < asked_end {
            out.push_str(&format!(
                "[… {} more lines; use start_line/end_line]\n",
                asked_end - end
            ));
        }
        ToolOutput::ok(out)
    }

    fn walk(&self, base: &Path) -> ignore::Walk {
        ignore::WalkBuilder::new(base)
            .hidden(false)
            .git_ignore(true)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build()
    }

    fn list_files(&self, a: ListFilesArgs) -> ToolOutput {
        let base = match self
            .confinement
            .resolve(a.path.as_deref().unwrap_or("."), Access::Read)
        {
            Ok(p) => p,
            Err(e) => return ToolOutput::err(e),
        };
        let mut files: Vec<String> = self
            .walk(&base)
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| self.confinement.display(e.path()))
            .collect();
        files.sort();
        let total = files.len();
        files.truncate(MAX_LIST);
        let mut out = files.join("\n");
        if total > MAX_LIST {
            out.push_str(&format!("\n[… {} more files]", total - MAX_LIST));
        }
        ToolOutput::ok(out)
    }

    fn search(&self, a: SearchArgs) -> ToolOutput {
        let re = match regex::Regex::new(&a.pattern) {
            Ok(r) => r,
            Err(e) => return ToolOutput::err(format!("invalid regular expression: {e}")),
        };
        let base = match self
            .confinement
            .resolve(a.path.as_deref().unwrap_or("."), Access::Read)
        {
            Ok(p) => p,
            Err(e) => return ToolOutput::err(e),
        };
        let mut hits = Vec::new();
        'files: for entry in self.walk(&base).filter_map(Result::ok) {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    hits.push(format!(
                        "{}:{}: {}",
                        self.confinement.display(entry.path()),
                        n + 1,
                        line.trim_end()
                    ));
                    if hits.len() >= MAX_MATCHES {
                        hits.push(format!("[stopped at {MAX_MATCHES} matches]"));
                        break 'files;
                    }
                }
            }
        }
        if hits.is_empty() {
            return ToolOutput::ok("no matches");
        }
        ToolOutput::ok(hits.join("\n"))
    }

    async fn git_diff(&self, a: GitDiffArgs) -> ToolOutput {
        let path = match a.path.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            None => None,
            Some(raw) => match self.confinement.resolve(raw, Access::Read) {
                Ok(full) => Some(self.confinement.display(&full)),
                Err(e) => return ToolOutput::err(e),
            },
        }
        // `.` is the whole change.
        .filter(|p| !p.is_empty());
        let Some(path) = path else {
            return self.whole_diff().await;
        };
        let diff = crate::vcs::diff_paths(self.root(), &self.diff_base, &[&path]).await;
        match diff {
            Ok(d) if d.trim().is_empty() => ToolOutput::ok("no changes"),
            Ok(d) => ToolOutput::ok(d),
            Err(e) => ToolOutput::err(e),
        }
    }

    /// The whole change within the result budget, the diff that matters first: generated,
    /// vendored and lock files summarised, the rest by relevance, what is left out listed with
    /// sizes (each readable with `path`).
    async fn whole_diff(&self) -> ToolOutput {
        let root = self.root();
        // The base is the merge base already (resolved once for the run); the tree is read
        // live: the fixer's own changes show.
        let base = match self.diff_base.rev() {
            Ok(b) => b.to_string(),
            Err(e) => return ToolOutput::err(e),
        };
        let hints = crate::diffview::DiffHints::from_repo(root, Vec::new());
        let view =
            match crate::diffview::load(root, &[&base], true, RESULT_BUDGET / 2, &hints, &self.own)
                .await
            {
                Ok(v) => v,
                Err(e) => return ToolOutput::err(e),
            };
        let shown = &view.shown;
        if shown.text.trim().is_empty() && shown.summarised.is_empty() && shown.omitted.is_empty() {
            return ToolOutput::ok("no changes");
        }
        let mut out = shown.text.clone();
        for s in &shown.summarised {
            out.push_str(&format!("\n[summarised, not shown: {s}]"));
        }
        if !shown.omitted.is_empty() {
            const LISTED: usize = 60;
            let list: Vec<String> = shown
                .omitted
                .iter()
                .take(LISTED)
                .map(|(p, n)| format!("`{p}` ({})", crate::diffview::size(*n)))
                .collect();
            let more = shown.omitted.len().saturating_sub(LISTED);
            out.push_str(&format!(
                "\n[{} file(s) left out for size; call git_diff with `path` to read one: {}{}]",
                shown.omitted.len(),
                list.join(", "),
                if more > 0 {
                    format!(" … and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        ToolOutput::ok(out)
    }

    async fn run_command(&self, a: RunCommandArgs) -> ToolOutput {
        let secs = a
            .timeout_seconds
            .unwrap_or(DEFAULT_COMMAND_TIMEOUT)
            .clamp(1, MAX_COMMAND_TIMEOUT);
        let done = self
            .launcher
            .run(process::Job {
                command: &a.command,
                cwd: self.root(),
                timeout: Duration::from_secs(secs),
                head: RESULT_BUDGET / 3,
                tail: RESULT_BUDGET / 2,
                log: None,
            })
            .await;
        let content = format!("[{}]\n{}", done.outcome.describe(), done.output);
        ToolOutput {
            images: Box::default(),
            content,
            is_error: !done.outcome.passed(),
            end: None,
        }
    }

    fn write_file(&self, a: WriteFileArgs) -> ToolOutput {
        let path = match self.confinement.resolve(&a.path, Access::Write) {
            Ok(p) => p,
            Err(e) => return ToolOutput::err(e),
        };
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return ToolOutput::err(format!("cannot create the directory of `{}`: {e}", a.path));
        }
        match write_atomic(&path, a.content.as_bytes()) {
            Ok(()) => ToolOutput::ok(format!("wrote {} bytes to {}", a.content.len(), a.path)),
            Err(e) => ToolOutput::err(format!("cannot write `{}`: {e}", a.path)),
        }
    }

    fn edit_file(&self, a: EditFileArgs) -> ToolOutput {
        let path = match self.confinement.resolve(&a.path, Access::Write) {
            Ok(p) => p,
            Err(e) => return ToolOutput::err(e),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return ToolOutput::err(format!("cannot read `{}`: {e}", a.path)),
        };
        if a.old.is_empty() {
            return ToolOutput::err("`old` is empty; use write_file to create a file");
        }
        match text.matches(&a.old).count() {
            0 => ToolOutput::err(format!(
                "`old` was not found in `{}`; read the file and copy the exact text, including indentation",
                a.path
            )),
            1 => {
                let updated = text.replacen(&a.old, &a.new, 1);
                match write_atomic(&path, updated.as_bytes()) {
                    Ok(()) => ToolOutput::ok(format!("edited {}", a.path)),
                    Err(e) => ToolOutput::err(format!("cannot write `{}`: {e}", a.path)),
                }
            }
            n => ToolOutput::err(format!(
                "`old` occurs {n} times in `{}`; include more context so it matches once",
                a.path
            )),
        }
    }
}

/// Cuts a tool result to [`RESULT_BUDGET`] bytes, keeping head and tail.
pub fn truncate(text: String) -> String {
    if text.len() <= RESULT_BUDGET {
        return text;
    }
    let head_end = floor_char_boundary(&text, RESULT_BUDGET / 3);
    let tail_start = floor_char_boundary(&text, text.len() - RESULT_BUDGET / 2);
    format!(
        "{}\n[… {} bytes omitted …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The JSON Schema of the verdict (SPEC §5.3), offered as `submit_verdict`'s parameters.
pub fn verdict_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["approved", "rejected"]},
            "score": {"type": "integer", "minimum": 0, "maximum": 100},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "summary": {"type": "string"},
            "criteria": {"type": "array", "items": {"type": "object", "properties": {
                "criterion": {"type": "string"}, "met": {"type": "boolean"}, "evidence": {"type": "string"}},
                "required": ["criterion", "met"]}},
            "issues": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"}, "title": {"type": "string"},
                "type": {"type": "string", "enum": ["acceptance_criteria", "unit_test", "integration_test", "e2e_test",
                    "coverage", "code_quality", "error_handling", "security", "performance"]},
                "severity": {"type": "string", "enum": ["critical", "high", "medium", "low"]},
                "file": {"type": "string"}, "line": {"type": "integer"},
                "description": {"type": "string"}, "fix": {"type": "string"}, "recurs": {"type": "string"},
                "introduced": {"type": "boolean",
                    "description": "false when the problem was already there before this change (on the base branch): reported apart, never fixed by this change. Default true."}},
                "required": ["title", "type", "severity", "fix"]}},
            "manual_test_plan": {"type": "string",
                "description": "Only for projects without automated tests: a markdown checklist of manual checks for a human."}
        },
        "required": ["status", "score", "summary", "issues"]
    })
}

/// Paths agents must not write: the out dir and the plan file.
pub fn protected_paths(out_dir: &Path, plan: Option<&PathBuf>) -> Vec<PathBuf> {
    let mut v = vec![out_dir.to_path_buf()];
    v.extend(plan.cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        }
    }

    use crate::test_support::rt;

    #[test]
    fn git_diff_shows_the_whole_change_or_one_path_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(dir.path().join("b.py"), "b = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "base"]);
        std::fs::write(dir.path().join("src/a.py"), "a = 2\n").unwrap();
        std::fs::write(dir.path().join("b.py"), "b = 2\n").unwrap();
        std::fs::write(dir.path().join("src/[new].py"), "n = 1\n").unwrap();
        // qa-loop's plan bookkeeping is not part of the change it shows.
        std::fs::write(dir.path().join("plan.json"), "{\"qa\": 1}\n").unwrap();
        git(&["add", "plan.json"]);
        let tb = ToolBox::new(
            Confinement::new(dir.path(), false, &[]).unwrap(),
            "HEAD",
            process::Launcher::new(&Default::default(), Default::default()),
        )
        .with_own_paths(vec!["plan.json".into(), ".qa-loop/".into()]);
        rt().block_on(async {
            let diff = |args| {
                let tb = &tb;
                async move { tb.execute(ToolSet::Reviewer, &call("git_diff", args)).await }
            };
            let all = diff(json!({})).await;
            assert!(all.content.contains("+a = 2") && all.content.contains("+b = 2"));
            assert!(!all.content.contains("plan.json"), "{}", all.content);
            // One directory: its files and untracked files only; `[` is no glob.
            let src = diff(json!({"path": "src"})).await;
            assert!(src.content.contains("+a = 2"), "{src:?}");
            assert!(!src.content.contains("+b = 2"), "{src:?}");
            assert!(src.content.contains("src/[new].py"), "{src:?}");
            let one = diff(json!({"path": "b.py"})).await;
            assert!(one.content.contains("+b = 2") && !one.content.contains("a = 2"));
            assert_eq!(diff(json!({"path": "."})).await.content, all.content);
            let out = diff(json!({"path": "../etc"})).await;
            assert!(out.is_error && out.content.contains(".."), "{out:?}");
        });
        // A large change: the lockfile summarised, the big file left out with its size (and
        // readable by path), the small source shown — never cut blindly in the middle.
        std::fs::write(dir.path().join("package-lock.json"), "{}\n".repeat(5000)).unwrap();
        std::fs::write(dir.path().join("big.py"), "x = 1\n".repeat(10_000)).unwrap();
        git(&["add", "package-lock.json", "big.py"]);
        rt().block_on(async {
            let all = tb
                .execute(ToolSet::Fixer, &call("git_diff", json!({})))
                .await;
            let c = &all.content;
            assert!(c.contains("+a = 2") && c.contains("+b = 2"), "{c}");
            assert!(
                c.contains("[summarised, not shown: `package-lock.json` (lockfile, +5000"),
                "{c}"
            );
            assert!(
                c.contains("1 file(s) left out for size; call git_diff with `path` to read one: `big.py` (68.5 KiB)"),
                "{c}"
            );
            assert!(!c.contains("x = 1"), "{c}");
            let big = tb
                .execute(ToolSet::Fixer, &call("git_diff", json!({"path": "big.py"})))
                .await;
            assert!(big.content.contains("+x = 1"));
        });
    }

    #[test]
    fn tools_work_and_errors_are_results() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\ny = 2\nx = 1\n").unwrap();
        let tb = ToolBox::new(
            Confinement::new(dir.path(), false, &[]).unwrap(),
            "HEAD",
            process::Launcher::new(&Default::default(), Default::default()),
        );
        rt().block_on(async {
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call(
                        "read_file",
                        json!({"path": "a.py", "start_line": 2, "end_line": 2}),
                    ),
                )
                .await;
            assert_eq!(r.content, "    2  y = 2\n");
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call(
                        "edit_file",
                        json!({"path": "a.py", "old": "x = 1", "new": "x = 3"}),
                    ),
                )
                .await;
            assert!(r.is_error && r.content.contains("occurs 2 times"), "{r:?}");
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call(
                        "edit_file",
                        json!({"path": "a.py", "old": "y = 2", "new": "y = 5"}),
                    ),
                )
                .await;
            assert!(!r.is_error, "{r:?}");
            assert_eq!(
                std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
                "x = 1\ny = 5\nx = 1\n"
            );
            let r = tb
                .execute(
                    ToolSet::Reviewer,
                    &call("write_file", json!({"path": "b.py", "content": "z"})),
                )
                .await;
            assert!(
                r.is_error && r.content.contains("unavailable"),
                "the reviewer has no write tools: {r:?}"
            );
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call("write_file", json!({"path": "../b.py", "content": "z"})),
                )
                .await;
            assert!(r.is_error);
            let r = tb
                .execute(ToolSet::Fixer, &call("read_file", json!({"file": "a.py"})))
                .await;
            assert!(
                r.is_error && r.content.contains("invalid arguments"),
                "{r:?}"
            );
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call("search", json!({"pattern": "y = \\d"})),
                )
                .await;
            assert_eq!(r.content, "a.py:2: y = 5");
            let r = tb
                .execute(
                    ToolSet::Fixer,
                    &call("run_command", json!({"command": "exit 2"})),
                )
                .await;
            assert!(
                r.is_error && r.content.starts_with("[exit code 2]"),
                "{r:?}"
            );
            let r = tb
                .execute(
                    ToolSet::Reviewer,
                    &call("submit_verdict", json!({"status": "approved"})),
                )
                .await;
            assert!(matches!(r.end, Some(TurnEnd::Verdict(_))));
            // Untrusted code: `run_command` is neither offered nor run.
            let ro = tb.clone().without_commands();
            for set in [ToolSet::Reviewer, ToolSet::Fixer] {
                assert!(!ro.specs(set).iter().any(|s| s.name == "run_command"));
                assert!(tb.specs(set).iter().any(|s| s.name == "run_command"));
            }
            let r = ro
                .execute(
                    ToolSet::Reviewer,
                    &call("run_command", json!({"command": "touch ran"})),
                )
                .await;
            assert!(r.is_error && r.content.contains("unavailable"), "{r:?}");
            assert!(!tb.root().join("ran").exists());
        });
    }

    /// Escape attempts through the agents' tools (RELIABILITY.md counts them): every one is
    /// refused as a tool error, and nothing outside the repository, in `.git/` or in the
    /// workflows changes.
    #[test]
    fn path_escapes_through_the_tools_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "CANARY_OUTSIDE").unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[remote \"origin\"]\n").unwrap();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::write(root.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
        let link = |target: &Path, name: &str| std::os::unix::fs::symlink(target, root.join(name));
        link(outside.path(), "out").unwrap();
        link(&outside.path().join("secret.txt"), "src/secret.txt").unwrap();
        link(&root.join(".git"), "g").unwrap();
        link(&root.join(".github/workflows"), "wf").unwrap();
        link(Path::new("/etc"), "etc").unwrap();
        let tb = ToolBox::new(
            Confinement::new(root, false, &[root.join(".qa-loop")]).unwrap(),
            "HEAD",
            process::Launcher::new(&Default::default(), Default::default()),
        );
        let read = |p: &str| ("read_file", json!({ "path": p }));
        let write = |p: &str| ("write_file", json!({ "path": p, "content": "pwned" }));
        let attempts = [
            read("../secret.txt"),
            read("src/../../secret.txt"),
            read("/etc/passwd"),
            read("~/.ssh/id_rsa"),
            read(&outside.path().join("secret.txt").display().to_string()),
            read("out/secret.txt"),
            read("src/secret.txt"),
            read("etc/passwd"),
            read(".git/config"),
            read("./.git/config"),
            read("src/../.git/config"),
            read("g/config"),
            ("list_files", json!({"path": ".."})),
            ("list_files", json!({"path": "out"})),
            ("list_files", json!({"path": ".git"})),
            ("search", json!({"pattern": "CANARY", "path": "out"})),
            ("search", json!({"pattern": "remote", "path": ".git"})),
            ("search", json!({"pattern": "root", "path": "/etc"})),
            write("../escaped.txt"),
            write("out/new.txt"),
            write("src/secret.txt"),
            write(".git/config"),
            write(".git/hooks/pre-push"),
            write("g/hooks/pre-commit"),
            write(".github/workflows/ci.yml"),
            write(".github/./workflows/new.yml"),
            write("wf/ci.yml"),
            write(".qa-loop/qa_report.md"),
            write("/tmp/qa-loop-escape.txt"),
            (
                "edit_file",
                json!({"path": "src/secret.txt", "old": "CANARY_OUTSIDE", "new": "x"}),
            ),
            (
                "edit_file",
                json!({"path": ".github/workflows/ci.yml", "old": "push", "new": "pull_request_target"}),
            ),
            (
                "edit_file",
                json!({"path": "g/config", "old": "origin", "new": "evil"}),
            ),
        ];
        assert!(attempts.len() >= 30);
        rt().block_on(async {
            for (tool, args) in &attempts {
                let r = tb.execute(ToolSet::Fixer, &call(tool, args.clone())).await;
                assert!(r.is_error, "{tool} {args} was not refused: {r:?}");
                assert!(
                    !r.content.contains("CANARY_OUTSIDE") && !r.content.contains("root:x:0"),
                    "{tool} {args} leaked: {r:?}"
                );
            }
        });
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
            "CANARY_OUTSIDE"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert!(!root.parent().unwrap().join("escaped.txt").exists());
        assert!(!Path::new("/tmp/qa-loop-escape.txt").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[remote \"origin\"]\n"
        );
        assert!(!root.join(".git/hooks/pre-push").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".github/workflows/ci.yml")).unwrap(),
            "on: push\n"
        );
        assert!(!root.join(".github/workflows/new.yml").exists());
    }

    #[test]
    fn truncation_keeps_head_and_tail() {
        let long = "a".repeat(RESULT_BUDGET) + &"b".repeat(RESULT_BUDGET);
        let t = truncate(long);
        assert!(t.len() < RESULT_BUDGET + 100 && t.starts_with('a') && t.ends_with('b'));
    }
}
