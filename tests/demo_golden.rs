//! The demo's outputs — every report file, stdout and stderr — byte for byte against the
//! committed copies in `tests/fixtures/demo-golden/`, once times, durations and the temporary
//! directory are normalised. Restructuring the run's wiring must not change a byte of what
//! users see. After an intended change: `UPDATE_GOLDEN=1 cargo test --test demo_golden`.

use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-golden")
}

/// Times, durations and the run's directory replaced by fixed text.
fn normalise(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "<DIR>");
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        out.push_str(&normalise_line(line));
    }
    out
}

fn normalise_line(line: &str) -> String {
    // How the sandbox is made depends on the machine (root, sudo, user namespaces, none).
    if line.contains("the change's code runs") || line.contains("\"confined\": ") {
        return "<SANDBOX>\n".to_string();
    }
    // `time="0.134"` (JUnit), `"duration_ms": 134`, `"timestamp": "2026-…Z"`, RFC 3339 times.
    let mut line = line.to_string();
    for (key, end) in [
        ("time=\"", '"'),
        ("\"duration_ms\": ", ','),
        ("timestamp=\"", '"'),
        // The demo's commit id changes with the time it is made.
        ("\"reviewed_head\": \"", '"'),
    ] {
        let mut from = 0;
        while let Some(at) = line[from..].find(key) {
            let start = from + at + key.len();
            let stop = line[start..]
                .find([end, '\n'])
                .map_or(line.len(), |e| start + e);
            line.replace_range(start..stop, "N");
            from = start + 1;
        }
    }
    let bytes: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    // 2026-11-23T19:10:19Z → <TIME>
    while i < bytes.len() {
        let rest: String = bytes[i..(i + 20).min(bytes.len())].iter().collect();
        let looks_like_time = rest.len() == 20
            && rest.as_bytes()[4] == b'-'
            && rest.as_bytes()[10] == b'T'
            && rest.ends_with('Z')
            && rest[..4].chars().all(|c| c.is_ascii_digit());
        if looks_like_time {
            out.push_str("<TIME>");
            i += 20;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn the_demo_writes_exactly_what_it_wrote_before() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = std::process::Command::new(assert_cmd::cargo::cargo_bin("qa-loop"))
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .env_remove("GITHUB_ACTIONS")
        .env_remove("QA_LOOP_LOG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = dir.join("quickstart/.qa-loop");
    let mut got = vec![
        ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&o.stderr).into_owned()),
    ];
    for f in ["qa_report.md", "qa-result.json", "qa-loop-junit.xml"] {
        got.push((f, std::fs::read_to_string(out.join(f)).unwrap()));
    }
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for (name, text) in got {
        let text = normalise(&text, &dir);
        let path = golden_dir().join(name);
        if update {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
        assert!(
            text == want,
            "{name} differs from {}:\n--- want\n{want}\n--- got\n{text}",
            path.display()
        );
    }
}

#[test]
fn normalising_keeps_everything_but_times_and_the_directory() {
    let dir = Path::new("/tmp/x");
    assert_eq!(
        normalise(
            "a /tmp/x/b time=\"0.134\" \"duration_ms\": 12,\n\"timestamp\": \"2026-11-23T19:10:19Z\"\n",
            dir
        ),
        "a <DIR>/b time=\"N\" \"duration_ms\": N,\n\"timestamp\": \"<TIME>\"\n"
    );
}
