//! Writing the report files into the out dir (atomically: a crash never leaves half a file).

use std::path::{Path, PathBuf};

use super::{RunReport, junit, markdown, plan, result, sarif};
use crate::engine::state::Outcome;
use crate::nofollow::write_atomic;

pub const REPORT: &str = "qa_report.md";
pub const JUNIT: &str = "qa-loop-junit.xml";
pub const SARIF: &str = "qa-loop.sarif";
pub const RESULT: &str = "qa-result.json";
pub const FIX_REQUEST: &str = "QA_FIX_REQUEST.md";
pub const ESCALATION: &str = "QA_HUMAN_ESCALATION.md";
pub const MANUAL_TEST_PLAN: &str = "MANUAL_TEST_PLAN.md";
/// Command logs, `logs/pass-<n>/<suite>-<k>.log`.
pub const LOGS_DIR: &str = "logs";

fn write(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    write_atomic(&path, crate::secrets::redact(text).as_bytes())?;
    Ok(path)
}

/// Writes the fix request for the fixer.
pub fn write_fix_request(out_dir: &Path, text: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out_dir)?;
    write(out_dir, FIX_REQUEST, text)
}

/// Writes every report of a finished (or in-progress) run; returns the report's path. `frame`
/// places the run among earlier ones for `qa-loop.sarif`.
pub fn write_all(
    out_dir: &Path,
    r: &RunReport<'_>,
    frame: &sarif::Frame<'_>,
    plan_path: Option<&Path>,
    now: &str,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out_dir)?;
    let report = write(out_dir, REPORT, &markdown::report(r))?;
    write(out_dir, JUNIT, &junit::render(r))?;
    write(out_dir, SARIF, &sarif::render(r, frame))?;
    write(out_dir, RESULT, &result::render(r))?;
    match markdown::escalation(r) {
        Some(text) => {
            write(out_dir, ESCALATION, &text)?;
        }
        None => remove_if_present(&out_dir.join(ESCALATION))?,
    }
    if matches!(r.outcome, Outcome::Approved { .. }) {
        // No fixes are pending any more.
        remove_if_present(&out_dir.join(FIX_REQUEST))?;
    }
    if r.strategy.no_test_project {
        write(out_dir, MANUAL_TEST_PLAN, &markdown::manual_test_plan(r))?;
    }
    if let Some(p) = plan_path {
        let text = crate::nofollow::read_text(p).map_err(std::io::Error::other)?;
        let updated = plan::update(&text, r, now).map_err(std::io::Error::other)?;
        write_atomic(p, crate::secrets::redact(&updated).as_bytes())?;
    }
    Ok(report)
}

fn remove_if_present(p: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Adds warnings that arose after the reports were written (failed notifications) to
/// `qa_report.md` (a "Warnings" section) and `qa-result.json` (`warnings`).
pub fn append_warnings(out_dir: &Path, warnings: &[String]) -> std::io::Result<()> {
    let report = out_dir.join(REPORT);
    if let Ok(text) = std::fs::read_to_string(&report) {
        let mut text = text.trim_end().to_string();
        text.push_str("\n\n## Warnings\n\n");
        for w in warnings {
            text.push_str(&format!("- {}\n", super::untrusted::line(w)));
        }
        write_atomic(&report, crate::secrets::redact(&text).as_bytes())?;
    }
    let result = out_dir.join(RESULT);
    if let Ok(text) = std::fs::read_to_string(&result)
        && let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str(&text)
    {
        let list = map
            .entry("warnings")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(a) = list {
            a.extend(
                warnings
                    .iter()
                    .map(|w| serde_json::Value::String(w.clone())),
            );
        }
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(map))
            .map_err(std::io::Error::other)?
            + "\n";
        write_atomic(&result, crate::secrets::redact(&text).as_bytes())?;
    }
    Ok(())
}
