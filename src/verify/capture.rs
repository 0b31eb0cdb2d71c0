//! Bounded capture of a command's output: everything streamed to a log file, and in memory only
//! a head + tail excerpt and the lines that look like failures — whatever the output's size.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::bytes::Regex;

/// Keeps the first `head` and last `tail` bytes of a stream, counting what was dropped.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
}

impl HeadTail {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        HeadTail {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            tail: VecDeque::with_capacity(tail_cap.min(64 * 1024)),
            head_cap,
            tail_cap,
            dropped: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.dropped += (self.tail.len() + bytes.len() - self.tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        if overflow > 0 {
            self.tail.drain(..overflow);
            self.dropped += overflow as u64;
        }
        self.tail.extend(bytes);
    }

    /// The kept text, with a marker where bytes were dropped.
    pub fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n[… {} bytes omitted …]\n", self.dropped));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        // Colour and cursor codes are noise to the reviewer and in reports (the log keeps them).
        match ansi_regex().replace_all(&out, "") {
            std::borrow::Cow::Borrowed(_) => out,
            std::borrow::Cow::Owned(clean) => clean,
        }
    }
}

/// Failure lines kept from the start and from the end of the output.
const FAILURE_HEAD: usize = 20;
const FAILURE_TAIL: usize = 20;
/// Longest line examined (the rest of a longer line is ignored) and kept.
const LINE_MAX: usize = 2048;
const SHOWN_LINE_MAX: usize = 300;

fn failure_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // Plain literals in their usual casings (no case folding) let the regex engine use its
        // SIMD multi-literal search: several GB/s on output that is mostly passing lines.
        Regex::new(
            "fail|Fail|FAIL|error|Error|ERROR|panicked|assert|Assert|ASSERT|exception|Exception\
             |EXCEPTION|Traceback|✕|✗|✘|×",
        )
        .expect("valid regex")
    })
}

fn noise_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // Summaries that report no failure: `0 failed`, `failures: 0`, `no errors`.
        Regex::new(
            r"(?i-u)\b(?:0|no) (?:failed|failures?|errors?|failing)\b|\b(?:failed|failures|errors)[=:] ?0\b",
        )
        .expect("valid regex")
    })
}

fn ansi_regex() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_])")
            .expect("valid regex")
    })
}

/// Picks the lines that look like failures (`FAILED`, `Error:`, `panicked at`, `✕` …) out of a
/// stream, keeping the first and the last ones.
#[derive(Debug, Default, Clone)]
pub struct FailureLines {
    /// The current incomplete line (capped at `LINE_MAX`).
    line: Vec<u8>,
    first: Vec<String>,
    last: VecDeque<String>,
    matched: u64,
}

impl FailureLines {
    pub fn push(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        if !self.line.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                None => {
                    extend_capped(&mut self.line, rest);
                    return;
                }
                Some(i) => {
                    extend_capped(&mut self.line, &rest[..i]);
                    let line = std::mem::take(&mut self.line);
                    if failure_regex().is_match(&line) {
                        self.keep(&line);
                    }
                    rest = &rest[i + 1..];
                }
            }
        }
        let (complete, partial) = match rest.iter().rposition(|&b| b == b'\n') {
            Some(i) => (&rest[..=i], &rest[i + 1..]),
            None => (&rest[..0], rest),
        };
        let mut at = 0;
        while let Some(m) = failure_regex().find_at(complete, at) {
            let start = complete[..m.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let end = complete[m.end()..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(complete.len(), |i| m.end() + i);
            let line = &complete[start..end.min(start + LINE_MAX)];
            self.keep(line);
            at = end + 1;
            if at >= complete.len() {
                break;
            }
        }
        extend_capped(&mut self.line, partial);
    }

    /// Ends the stream (a last line without a newline).
    pub fn finish(&mut self) {
        let line = std::mem::take(&mut self.line);
        if failure_regex().is_match(&line) {
            self.keep(&line);
        }
    }

    fn keep(&mut self, line: &[u8]) {
        if noise_regex().is_match(line) {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = ansi_regex().replace_all(&text, "");
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let shown: String = if text.chars().count() > SHOWN_LINE_MAX {
            let cut: String = text.chars().take(SHOWN_LINE_MAX).collect();
            format!("{cut}…")
        } else {
            text.to_string()
        };
        if self.first.contains(&shown) || self.last.contains(&shown) {
            return;
        }
        self.matched += 1;
        if self.first.len() < FAILURE_HEAD {
            self.first.push(shown);
        } else {
            if self.last.len() == FAILURE_TAIL {
                self.last.pop_front();
            }
            self.last.push_back(shown);
        }
    }

    /// The kept lines, with a marker when some in the middle were dropped.
    pub fn lines(&self) -> Vec<String> {
        let mut out = self.first.clone();
        let kept = (self.first.len() + self.last.len()) as u64;
        if self.matched > kept {
            out.push(format!("[… {} more failure lines …]", self.matched - kept));
        }
        out.extend(self.last.iter().cloned());
        out
    }
}

fn extend_capped(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = LINE_MAX.saturating_sub(line.len());
    line.extend_from_slice(&bytes[..room.min(bytes.len())]);
}

/// Chunks buffered between the reader and the log writer (64 × 64 KiB at most).
const LOG_QUEUE: usize = 64;

/// Streams output to a log file from its own thread, so disk writes overlap with reading the
/// pipe. A full queue makes the reader wait (and the command with it): memory stays bounded.
#[derive(Debug)]
struct LogWriter {
    path: PathBuf,
    tx: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl LogWriter {
    fn create(path: &Path) -> Result<LogWriter, String> {
        let shown = path.display().to_string();
        let file = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::File::create(path))
            .map_err(|e| format!("cannot write the log {shown}: {e}"))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(LOG_QUEUE);
        let thread = std::thread::Builder::new()
            .name("qa-loop-log".into())
            .spawn(move || {
                let mut w = std::io::BufWriter::with_capacity(256 * 1024, file);
                while let Some(chunk) = rx.blocking_recv() {
                    w.write_all(&chunk)
                        .map_err(|e| format!("cannot write the log {shown}: {e}"))?;
                }
                w.flush()
                    .map_err(|e| format!("cannot write the log {shown}: {e}"))
            })
            .map_err(|e| format!("cannot start the log writer: {e}"))?;
        Ok(LogWriter {
            path: path.to_path_buf(),
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Queues a chunk; `false` once the writer has failed.
    async fn write(&mut self, chunk: &[u8]) -> bool {
        match &self.tx {
            Some(tx) => tx.send(chunk.to_vec()).await.is_ok(),
            None => false,
        }
    }

    /// Waits for everything queued to be written.
    fn finish(mut self) -> Result<PathBuf, String> {
        drop(self.tx.take());
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Ok(()))) => Ok(self.path.clone()),
            Some(Ok(Err(e))) => Err(e),
            _ => Err(format!("the log writer of {} stopped", self.path.display())),
        }
    }
}

/// Everything kept of one command's output.
#[derive(Debug)]
pub struct Capture {
    pub excerpt: HeadTail,
    pub failures: FailureLines,
    pub bytes: u64,
    log: Option<LogWriter>,
    log_error: Option<String>,
}

impl Capture {
    /// A capture keeping `head` + `tail` bytes, streaming everything to `log` when given.
    pub fn new(head: usize, tail: usize, log: Option<&Path>) -> Self {
        let (log, log_error) = match log.map(LogWriter::create) {
            Some(Ok(w)) => (Some(w), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        Capture {
            excerpt: HeadTail::new(head, tail),
            failures: FailureLines::default(),
            bytes: 0,
            log,
            log_error,
        }
    }

    pub async fn push(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        self.excerpt.push(chunk);
        self.failures.push(chunk);
        if let Some(log) = &mut self.log
            && !log.write(chunk).await
        {
            // The writer stopped: `finish` reports why.
            let failed = self.log.take().map(LogWriter::finish);
            self.log_error = Some(match failed {
                Some(Err(e)) => e,
                _ => "the log writer stopped".into(),
            });
        }
    }

    /// Ends the capture: flushes the log; returns its path when it holds the whole output.
    pub fn finish(&mut self) -> Option<PathBuf> {
        self.failures.finish();
        match self.log.take()?.finish() {
            Ok(p) => Some(p),
            Err(e) => {
                self.log_error = Some(e);
                None
            }
        }
    }

    /// Why the log is missing or incomplete.
    pub fn log_error(&self) -> Option<&str> {
        self.log_error.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_are_bounded_whatever_the_chunking() {
        let data: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in [1, 3, 7, 64, 5000] {
            let mut ht = HeadTail::new(10, 20);
            for c in data.chunks(chunk) {
                ht.push(c);
            }
            let want = format!(
                "{}\n[… 970 bytes omitted …]\n{}",
                String::from_utf8_lossy(&data[..10]),
                String::from_utf8_lossy(&data[980..])
            );
            assert_eq!(ht.render(), want, "chunk {chunk}");
        }
        let mut ht = HeadTail::new(4, 4);
        ht.push(b"abcdefghij");
        assert_eq!(ht.render(), "abcd\n[… 2 bytes omitted …]\nghij");
        let mut ht = HeadTail::new(4, 4);
        ht.push(b"abcdef");
        assert_eq!(ht.render(), "abcdef");
    }

    #[test]
    fn failure_lines_are_found_across_chunk_boundaries() {
        let out = "collected 3 items\n\
                   tests/test_a.py::test_ok PASSED\n\
                   tests/test_a.py::test_bad FAILED\n\
                   E       AssertionError: assert 1 == 2\n\
                   \x1b[31m  ✕ renders the cart (5 ms)\x1b[0m\n\
                   thread 'main' panicked at src/lib.rs:3:5\n\
                   ===== 1 failed, 1 passed in 0.1s =====\n\
                   test result: ok. 5 passed; 0 failed\n\
                   no errors found\n\
                   last line error without newline";
        let want = vec![
            "tests/test_a.py::test_bad FAILED",
            "E       AssertionError: assert 1 == 2",
            "✕ renders the cart (5 ms)",
            "thread 'main' panicked at src/lib.rs:3:5",
            "===== 1 failed, 1 passed in 0.1s =====",
            "last line error without newline",
        ];
        for chunk in [1, 2, 5, 13, 4096] {
            let mut f = FailureLines::default();
            for c in out.as_bytes().chunks(chunk) {
                f.push(c);
            }
            f.finish();
            assert_eq!(f.lines(), want, "chunk {chunk}");
        }
    }

    #[test]
    fn failure_lines_keep_the_first_and_last_and_count_the_rest() {
        let mut f = FailureLines::default();
        for i in 0..100 {
            f.push(format!("FAILED test_{i}\n").as_bytes());
        }
        f.push(b"FAILED test_0\n"); // repeated: not counted twice
        let lines = f.lines();
        assert_eq!(lines.len(), FAILURE_HEAD + 1 + FAILURE_TAIL);
        assert_eq!(lines[0], "FAILED test_0");
        assert_eq!(lines[FAILURE_HEAD], "[… 60 more failure lines …]");
        assert_eq!(lines.last().unwrap(), "FAILED test_99");
    }

    #[test]
    fn the_log_holds_everything_and_memory_only_the_excerpt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/unit-1.log");
        let mut c = Capture::new(8, 8, Some(&path));
        let data = "line\n".repeat(10_000);
        crate::test_support::rt().block_on(async {
            for chunk in data.as_bytes().chunks(999) {
                c.push(chunk).await;
            }
        });
        assert_eq!(c.finish().as_deref(), Some(path.as_path()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), data);
        assert_eq!(c.bytes, data.len() as u64);
        assert!(c.excerpt.render().len() < 100);
        let mut bad = Capture::new(8, 8, Some(&dir.path().join("logs/unit-1.log/x")));
        crate::test_support::rt().block_on(bad.push(b"x"));
        assert_eq!(bad.finish(), None);
        assert!(bad.log_error().unwrap().contains("cannot write the log"));
    }

    #[test]
    fn colour_and_cursor_codes_are_stripped_from_the_excerpt() {
        let mut e = HeadTail::new(1000, 1000);
        e.push(b"\x1b[31mFAILED\x1b[0m test_a \x1b]8;;https://x\x07link\x1b]8;;\x07 \x1b[2K\x1b(Bdone\n");
        assert_eq!(e.render(), "FAILED test_a link done\n");
    }
}
