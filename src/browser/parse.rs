//! Reading the Playwright MCP server's answers (text in markdown sections, as `@playwright/mcp`
//! writes them: `### Result`, `### Error`, `### Page` with `- HTTP status: 404 Not Found`).

use serde_json::Value;

/// Bytes of the page snapshot kept in the gate (the reviewer reads it).
pub const SNAPSHOT_BUDGET: usize = 6 * 1024;

/// A request or message about the browser's own favicon: not the page's fault.
fn is_favicon(line: &str) -> bool {
    line.contains("/favicon.ico")
}

/// The status of the main document from `browser_navigate`'s `- HTTP status:` line (written
/// only for error statuses).
pub fn http_status(text: &str) -> Option<(u16, String)> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("- HTTP status:")?.trim();
        let (code, reason) = rest.split_once(' ').unwrap_or((rest, ""));
        Some((code.parse().ok()?, reason.trim().to_string()))
    })
}

/// The first meaningful line of an error answer (`### Error` / `Error: …`).
pub fn error_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("###"))
        .unwrap_or("the browser reported an error");
    let line = line.strip_prefix("Error:").unwrap_or(line).trim();
    // `browserBackend.callTool: net::ERR_CONNECTION_REFUSED at http://…`
    let line = line
        .split_once(": net::")
        .map_or(line.to_string(), |(_, r)| format!("net::{r}"));
    crate::text::clip(&line, 300)
}

/// `[ERROR] message @ source` lines of `browser_console_messages`, the favicon left out.
pub fn console_errors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("[ERROR]"))
        .map(str::trim)
        .filter(|l| !is_favicon(l))
        .map(str::to_string)
        .collect()
}

/// `N. [GET] url => [404] Not Found` / `=> [FAILED] net::…` lines of
/// `browser_network_requests` with an error status or no answer, the favicon left out.
pub fn failed_requests(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !is_favicon(l))
        .filter_map(|l| {
            let (_, outcome) = l.split_once(" => [")?;
            let status = outcome.split(']').next()?;
            let failed = status == "FAILED" || status.parse::<u16>().is_ok_and(|c| c >= 400);
            failed.then(|| {
                l.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                    .trim()
                    .to_string()
            })
        })
        .collect()
}

/// The JSON value under `### Result` (`browser_evaluate`).
pub fn result_json(text: &str) -> Option<Value> {
    let rest = text.split_once("### Result")?.1;
    let body = rest.split("\n###").next()?.trim();
    serde_json::from_str(body).ok()
}

/// The page snapshot (the accessibility tree in YAML), cut to [`SNAPSHOT_BUDGET`] bytes.
pub fn snapshot(text: &str) -> String {
    // The tree is under `### Snapshot` (or the whole answer in older versions), in a yaml fence.
    let body = text.split_once("### Snapshot").map_or(text, |(_, r)| r);
    let body = body.split("\n### ").next().unwrap_or(body);
    let body = body
        .trim()
        .trim_start_matches("```yaml")
        .trim_end_matches("```")
        .trim();
    let shown = crate::text::prefix(body, SNAPSHOT_BUDGET);
    if shown.len() < body.len() {
        format!(
            "{shown}\n… (cut: {} of {} bytes shown)",
            shown.len(),
            body.len()
        )
    } else {
        shown.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Answers of @playwright/mcp 0.0.83 with Chromium 142, copied from a run.
    const NAV_404: &str = "### Ran Playwright code\n```js\nawait page.goto('http://127.0.0.1:8765/nope.html');\n```\n### Page\n- Page URL: http://127.0.0.1:8765/nope.html\n- Page Title: Error response\n- HTTP status: 404 File not found\n- Console: 1 errors, 0 warnings\n### Snapshot\n- [Snapshot](out/page-2026-11-24T15-36-09-873Z.yml)\n";
    const NAV_OK: &str = "### Ran Playwright code\n```js\nawait page.goto('http://127.0.0.1:8765/index.html');\n```\n### Page\n- Page URL: http://127.0.0.1:8765/index.html\n- Page Title: Home\n";
    const NAV_REFUSED: &str = "### Error\nError: browserBackend.callTool: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:8799/\nCall log:\n  - navigating to \"http://127.0.0.1:8799/\", waiting until \"domcontentloaded\"\n";
    const CONSOLE: &str = "### Result\nTotal messages: 3 (Errors: 3, Warnings: 0)\n\n[ERROR] boom: broken widget @ http://127.0.0.1:8765/bad.html:0\n[ERROR] Failed to load resource: the server responded with a status of 404 (File not found) @ http://127.0.0.1:8765/missing.json:0\n[ERROR] Failed to load resource: the server responded with a status of 404 (File not found) @ http://127.0.0.1:8765/favicon.ico:0\n";
    const NETWORK: &str = "### Result\n1. [GET] http://127.0.0.1:8765/ok.json => [200] OK\n2. [GET] http://127.0.0.1:8765/missing.json => [404] File not found\n3. [GET] http://127.0.0.1:8799/ => [FAILED] net::ERR_CONNECTION_REFUSED\n4. [GET] http://127.0.0.1:8765/favicon.ico => [404] File not found\n\nNote: 1 static request not shown, run with \"static\" option to see it.\n";
    const EVAL: &str = "### Result\n{\n  \"text\": 0,\n  \"elements\": 2\n}\n### Ran Playwright code\n```js\nawait page.evaluate('() => 1');\n```\n";

    #[test]
    fn statuses_errors_and_results_are_read_from_the_real_answers() {
        assert_eq!(http_status(NAV_404), Some((404, "File not found".into())));
        assert_eq!(http_status(NAV_OK), None);
        assert_eq!(
            error_line(NAV_REFUSED),
            "net::ERR_CONNECTION_REFUSED at http://127.0.0.1:8799/"
        );
        assert_eq!(
            console_errors(CONSOLE),
            [
                "boom: broken widget @ http://127.0.0.1:8765/bad.html:0",
                "Failed to load resource: the server responded with a status of 404 (File not found) @ http://127.0.0.1:8765/missing.json:0"
            ]
        );
        assert_eq!(
            failed_requests(NETWORK),
            [
                "[GET] http://127.0.0.1:8765/missing.json => [404] File not found",
                "[GET] http://127.0.0.1:8799/ => [FAILED] net::ERR_CONNECTION_REFUSED"
            ]
        );
        assert_eq!(result_json(EVAL).unwrap()["elements"], 2);
        assert_eq!(result_json(NAV_OK), None);
    }

    #[test]
    fn snapshots_are_cut_to_the_budget() {
        let small =
            "### Page\n- Page URL: x\n### Snapshot\n```yaml\n- heading \"Hello\" [level=1]\n```\n";
        assert_eq!(snapshot(small), "- heading \"Hello\" [level=1]");
        let big = format!("```yaml\n{}```", "- text: abcdefgh\n".repeat(2000));
        let cut = snapshot(&big);
        assert!(cut.len() < super::SNAPSHOT_BUDGET + 100, "{}", cut.len());
        assert!(
            cut.ends_with(&format!(
                "of {} bytes shown)",
                "- text: abcdefgh\n".repeat(2000).trim().len()
            )),
            "{cut}"
        );
    }
}
