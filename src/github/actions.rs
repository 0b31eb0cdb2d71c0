//! The GitHub Actions runtime: its environment, step outputs (`$GITHUB_OUTPUT`, multi-line
//! safe), the job summary (`$GITHUB_STEP_SUMMARY`, within its size limit) and workflow commands
//! (`::group::`, `::add-mask::`, `::error file=…,line=…::`).

use std::io::Write;
use std::path::{Path, PathBuf};

/// GitHub refuses a step summary above 1 MiB.
pub const SUMMARY_LIMIT: usize = 1024 * 1024;

/// What the Actions runner tells a step through its environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionsEnv {
    pub event_name: String,
    pub event_path: Option<PathBuf>,
    /// `owner/name`.
    pub repository: String,
    /// `https://api.github.com`, or `https://HOST/api/v3` on GitHub Enterprise Server.
    pub api_url: String,
    pub server_url: String,
    pub output: Option<PathBuf>,
    pub step_summary: Option<PathBuf>,
    pub run_id: String,
    /// `GITHUB_BASE_REF`: the PR's base branch on `pull_request` events.
    pub base_ref: Option<String>,
    /// The `github-token` input (else the job's `GITHUB_TOKEN`) and the `push-token` input.
    pub github_token: Option<crate::secrets::Secret>,
    pub push_token: Option<crate::secrets::Secret>,
}

impl ActionsEnv {
    /// `None` outside GitHub Actions (`GITHUB_ACTIONS` is not `true`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<ActionsEnv> {
        if var("GITHUB_ACTIONS").as_deref() != Some("true") {
            return None;
        }
        let get = |n: &str| var(n).filter(|v| !v.is_empty());
        Some(ActionsEnv {
            event_name: get("GITHUB_EVENT_NAME").unwrap_or_default(),
            event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            repository: get("GITHUB_REPOSITORY").unwrap_or_default(),
            api_url: get("GITHUB_API_URL")
                .unwrap_or_else(|| "https://api.github.com".into())
                .trim_end_matches('/')
                .to_string(),
            server_url: get("GITHUB_SERVER_URL")
                .unwrap_or_else(|| "https://github.com".into())
                .trim_end_matches('/')
                .to_string(),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            run_id: get("GITHUB_RUN_ID").unwrap_or_default(),
            base_ref: get("GITHUB_BASE_REF"),
            github_token: github_token(&var),
            push_token: push_token(&var),
        })
    }

    /// The link to this workflow run, when known.
    pub fn run_url(&self) -> Option<String> {
        (!self.repository.is_empty() && !self.run_id.is_empty()).then(|| {
            format!(
                "{}/{}/actions/runs/{}",
                self.server_url, self.repository, self.run_id
            )
        })
    }
}

/// The GitHub token from the environment: `QA_LOOP_GITHUB_TOKEN` (the action's input),
/// `INPUT_GITHUB-TOKEN`, then `GITHUB_TOKEN`.
pub fn github_token(var: impl Fn(&str) -> Option<String>) -> Option<crate::secrets::Secret> {
    use crate::env_vars::{GITHUB_TOKEN, INPUT_GITHUB_TOKEN, QA_LOOP_GITHUB_TOKEN};
    [QA_LOOP_GITHUB_TOKEN, INPUT_GITHUB_TOKEN, GITHUB_TOKEN]
        .iter()
        .find_map(|n| var(n).filter(|t| !t.is_empty()))
        .map(crate::secrets::Secret::new)
}

/// The push token (`push-token` input), if any.
pub fn push_token(var: impl Fn(&str) -> Option<String>) -> Option<crate::secrets::Secret> {
    use crate::env_vars::{INPUT_PUSH_TOKEN, QA_LOOP_PUSH_TOKEN};
    [QA_LOOP_PUSH_TOKEN, INPUT_PUSH_TOKEN]
        .iter()
        .find_map(|n| var(n).filter(|t| !t.is_empty()))
        .map(crate::secrets::Secret::new)
}

/// `name<<DELIMITER\nvalue\nDELIMITER\n` for each output (GitHub's multi-line syntax),
/// appended to `$GITHUB_OUTPUT`, with a random delimiter per value that the value does not
/// contain: nobody can guess it to end a value early or swallow the next one.
pub fn write_outputs(path: &Path, outputs: &[(&str, String)]) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, value) in outputs {
        let delimiter = loop {
            let d = format!(
                "ghadelimiter_{:016x}{:016x}",
                crate::retry::random_u64(),
                crate::retry::random_u64()
            );
            if !value.contains(&d) {
                break d;
            }
        };
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    append(path, &crate::secrets::redact(&text))
}

/// The runner's file commands (`$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`, `$GITHUB_ENV`,
/// `$GITHUB_PATH`, `$GITHUB_STATE`) as they were when qa-loop started. Children never get
/// these paths, but a test that knows the runner's layout can still find them; whatever was
/// written to them during the run is discarded before qa-loop writes its own outputs.
#[derive(Debug, Default)]
pub struct CommandFiles {
    files: Vec<(&'static str, PathBuf, Option<Vec<u8>>)>,
}

impl CommandFiles {
    /// Reads each file the runner names (`None`: it did not exist).
    pub fn snapshot(var: impl Fn(&str) -> Option<String>) -> CommandFiles {
        let files = crate::env_vars::RUNNER_FILE_COMMANDS
            .iter()
            .filter_map(|name| {
                let path = PathBuf::from(var(name).filter(|v| !v.is_empty())?);
                let bytes = std::fs::read(&path).ok();
                Some((*name, path, bytes))
            })
            .collect();
        CommandFiles { files }
    }

    /// Puts back every file that changed since the snapshot; returns the variables whose file
    /// had been written to.
    pub fn restore(&self) -> Vec<&'static str> {
        let mut changed = Vec::new();
        for (name, path, before) in &self.files {
            let now = std::fs::read(path).ok();
            if &now == before {
                continue;
            }
            changed.push(*name);
            let put = match before {
                Some(bytes) => std::fs::write(path, bytes),
                None => std::fs::remove_file(path),
            };
            if let Err(e) = put {
                tracing::warn!("cannot restore ${name} ({}): {e}", path.display());
            }
        }
        changed
    }
}

/// Text for the log that cannot act as a workflow command: the runner runs any line that
/// starts (after blanks) with `::` and any legacy `##[` command, and CR starts a line as LF
/// does. Lines are kept; the first `:` of such a line becomes `：` and `##[` becomes `##［`.
/// Known secrets are redacted too.
pub fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    let text = crate::secrets::redact(text);
    let live = text.contains("##[")
        || text.contains('\r')
        || text.split('\n').any(|l| l.trim_start().starts_with("::"));
    if !live {
        return text;
    }
    let unified = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(unified.len() + 8);
    for (i, line) in unified.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let blanks = line.len() - line.trim_start().len();
        let (lead, rest) = line.split_at(blanks);
        out.push_str(lead);
        match rest.strip_prefix(':') {
            Some(after) if after.starts_with(':') => {
                out.push('：');
                out.push_str(&after.replace("##[", "##［"));
            }
            _ => out.push_str(&rest.replace("##[", "##［")),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A log writer for `tracing` that makes every line [`inert`] before it reaches stderr.
#[derive(Clone, Copy, Debug, Default)]
pub struct InertStderr;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for InertStderr {
    type Writer = InertStderr;
    fn make_writer(&'a self) -> Self::Writer {
        InertStderr
    }
}

impl Write for InertStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // `tracing` writes one whole event (ending in a newline) per call.
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(inert(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Appends `markdown` to the job summary, cut by bytes to GitHub's limit with a pointer to the
/// full report.
pub fn write_summary(path: &Path, markdown: &str, full_report: &str) -> std::io::Result<()> {
    let already = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let room = SUMMARY_LIMIT.saturating_sub(already);
    append(
        path,
        &cut(&crate::secrets::redact(markdown), room, full_report),
    )
}

/// `text` within `limit` bytes; when cut, ends with a note naming `full` (at a line end when
/// one is near, never inside a character).
pub fn cut(text: &str, limit: usize, full: &str) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let note = format!("\n\n… cut to fit GitHub's limit; the full report is {full}\n");
    let mut end = limit.saturating_sub(note.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(nl) = text[..end].rfind('\n')
        && end - nl < 2048
    {
        end = nl;
    }
    format!("{}{note}", &text[..end])
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// A workflow command's message (`%`, CR and LF escaped).
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (also `:` and `,`).
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::add-mask::value`: the runner hides the value in every later log line.
pub fn mask(value: &str) -> String {
    format!("::add-mask::{}", escape_data(value))
}

/// `::error file=…,line=…,title=…::message`: an annotation without the Checks API (fork PRs).
pub fn error_annotation(
    file: Option<&str>,
    line: Option<u32>,
    title: &str,
    message: &str,
) -> String {
    let mut props = Vec::new();
    if let Some(f) = file {
        props.push(format!("file={}", escape_property(f)));
        if let Some(l) = line {
            props.push(format!("line={l}"));
        }
    }
    props.push(format!(
        "title={}",
        escape_property(&crate::secrets::redact(title))
    ));
    format!(
        "::error {}::{}",
        props.join(","),
        escape_data(&crate::secrets::redact(message))
    )
}

/// Prints `::group::title` now and `::endgroup::` when dropped (only in Actions).
pub struct Group(bool);

impl Group {
    pub fn start(enabled: bool, title: &str) -> Group {
        if enabled {
            eprintln!("::group::{}", escape_data(title));
        }
        Group(enabled)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.0 {
            eprintln!("::endgroup::");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_read_only_inside_actions_and_ghes_urls_are_kept() {
        assert_eq!(ActionsEnv::from_env(|_| None), None);
        let env = ActionsEnv::from_env(|n| {
            Some(
                match n {
                    "GITHUB_ACTIONS" => "true",
                    "GITHUB_API_URL" => "https://ghe.example.com/api/v3/",
                    "GITHUB_SERVER_URL" => "https://ghe.example.com",
                    "GITHUB_REPOSITORY" => "acme/app",
                    "GITHUB_RUN_ID" => "77",
                    "GITHUB_EVENT_NAME" => "pull_request",
                    _ => "",
                }
                .to_string(),
            )
        })
        .unwrap();
        assert_eq!(env.api_url, "https://ghe.example.com/api/v3");
        assert_eq!(env.output, None);
        assert_eq!(
            env.run_url().unwrap(),
            "https://ghe.example.com/acme/app/actions/runs/77"
        );
    }

    #[test]
    fn outputs_are_multi_line_safe_and_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "earlier=1\n").unwrap();
        let tricky = "line 1\nghadelimiter_0123\nline 3".to_string();
        write_outputs(
            &path,
            &[("verdict", "approved".into()), ("summary", tricky.clone())],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // Parse it as the runner does.
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("earlier=1"));
        let mut got = Vec::new();
        while let Some(head) = lines.next() {
            let (name, delim) = head.split_once("<<").unwrap();
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                value.push(l);
            }
            got.push((name.to_string(), value.join("\n")));
        }
        assert_eq!(
            got,
            [
                ("verdict".to_string(), "approved".to_string()),
                ("summary".to_string(), tricky)
            ]
        );
    }

    #[test]
    fn delimiters_are_random_per_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        write_outputs(&path, &[("a", "1".into()), ("b", "2".into())]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let delims: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once("<<").map(|(_, d)| d))
            .collect();
        assert_eq!(delims.len(), 2);
        assert_ne!(delims[0], delims[1]);
        for d in delims {
            assert!(d.len() >= 40, "{d}");
            assert!(!d.contains(&std::process::id().to_string()), "{d}");
        }
    }

    #[test]
    fn command_files_written_during_the_run_are_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("set_output");
        let env = dir.path().join("set_env");
        let summary = dir.path().join("step_summary");
        std::fs::write(&out, "").unwrap();
        std::fs::write(&env, "KEEP=1\n").unwrap();
        let vars = |n: &str| match n {
            "GITHUB_OUTPUT" => Some(out.display().to_string()),
            "GITHUB_ENV" => Some(env.display().to_string()),
            "GITHUB_STEP_SUMMARY" => Some(summary.display().to_string()),
            _ => None,
        };
        let files = CommandFiles::snapshot(vars);
        std::fs::write(&out, "verdict=approved\n").unwrap();
        std::fs::write(&env, "KEEP=1\nLD_PRELOAD=/tmp/evil.so\n").unwrap();
        std::fs::write(&summary, "forged").unwrap();
        let mut changed = files.restore();
        changed.sort();
        assert_eq!(
            changed,
            ["GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"]
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
        assert_eq!(std::fs::read_to_string(&env).unwrap(), "KEEP=1\n");
        assert!(!summary.exists(), "a file that did not exist is removed");
        assert!(files.restore().is_empty(), "nothing changed since");
    }

    #[test]
    fn no_logged_line_can_start_a_workflow_command() {
        let text = "summary: fine\n::set-output name=verdict::approved\n  ::error::forged\r::stop-commands::x\nsee ##[set-output name=v;]1\nkeep a::b";
        let safe = inert(text);
        for line in safe.split(['\n', '\r']) {
            assert!(!line.trim_start().starts_with("::"), "{line}");
            assert!(!line.contains("##["), "{line}");
        }
        assert!(
            safe.contains("：:set-output name=verdict::approved"),
            "{safe}"
        );
        assert!(safe.ends_with("keep a::b"));
        assert!(matches!(
            inert("plain text\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_summary_is_cut_by_bytes_with_a_pointer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary");
        let big = "é line of the report\n".repeat(60_000); // 1.32 MB
        write_summary(&path, &big, ".qa-loop/qa_report.md").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() <= SUMMARY_LIMIT, "{}", text.len());
        assert!(text.len() > SUMMARY_LIMIT - 4096);
        assert!(text.ends_with("the full report is .qa-loop/qa_report.md\n"));
        assert_eq!(cut("short", 10, "x"), "short");
        // Within a multi-byte character: never split it.
        let c = cut(&"é".repeat(100), 70, "r");
        assert!(c.len() <= 70 && c.contains("full report"), "{c}");
    }

    #[test]
    fn workflow_commands_escape_their_parts() {
        assert_eq!(mask("a%b\nc"), "::add-mask::a%25b%0Ac");
        assert_eq!(
            error_annotation(Some("src/a,b.py"), Some(3), "Q1: bad", "two\nlines"),
            "::error file=src/a%2Cb.py,line=3,title=Q1%3A bad::two%0Alines"
        );
        assert_eq!(
            error_annotation(None, Some(3), "t", "m"),
            "::error title=t::m"
        );
    }
}
