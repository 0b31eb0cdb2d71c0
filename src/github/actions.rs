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

/// `name<<DELIMITER\nvalue\nDELIMITER\n` for each output, with a delimiter the value does not
/// contain (GitHub's multi-line syntax), appended to `$GITHUB_OUTPUT`.
pub fn write_outputs(path: &Path, outputs: &[(&str, String)]) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, value) in outputs {
        let mut n = 0u32;
        let delimiter = loop {
            let d = format!("ghadelimiter_{}_{n}", std::process::id());
            if !value.contains(&d) {
                break d;
            }
            n += 1;
        };
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    append(path, &text)
}

/// Appends `markdown` to the job summary, cut by bytes to GitHub's limit with a pointer to the
/// full report.
pub fn write_summary(path: &Path, markdown: &str, full_report: &str) -> std::io::Result<()> {
    let already = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let room = SUMMARY_LIMIT.saturating_sub(already);
    append(path, &cut(markdown, room, full_report))
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
    props.push(format!("title={}", escape_property(title)));
    format!("::error {}::{}", props.join(","), escape_data(message))
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
        let tricky = format!("line 1\nghadelimiter_{}_0\nline 3", std::process::id());
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
