//! The change under review, read once per tree: one `git diff <base>`, streamed — as git writes
//! it, each line goes into an unnamed spool file (never held whole, never reachable by path),
//! into the added lines (each handed to a visitor: the pattern checks) and into an index of
//! its per-file sections (sizes, offsets) — and one `git status` (the untracked files, whether
//! the working tree is `HEAD`'s, `HEAD` itself), run at the same time.
//! Every reader of the change in a pass — the pattern checks and the coverage of added lines,
//! the suites chosen by path, the reviewer's diff and its commit, the pre-existing check — takes
//! it from a [`ChangeCache`]: two git processes per tree instead of one or two per reader.
//!
//! The tree changes only through a fix: the cache is emptied before each
//! ([`ChangeCache::invalidate`]). What a verification pass's own commands write into the
//! checkout is not part of the change read at its start.

use std::io::{BufRead, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::added::{AddedLines, AddedParser, header_paths, side_path};
use super::command::{git_each_raw_line, isolated, succeeded};

/// One file's section of the diff.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    /// The path after `b/` in its `diff --git` header (empty for a preamble).
    pub path: String,
    /// Where it starts and ends in the spool.
    pub start: u64,
    pub end: u64,
    /// Its `+` and `-` lines.
    pub added: usize,
    pub removed: usize,
    /// Starts with `diff --git ` (not a preamble).
    pub header: bool,
}

/// The sections of a diff read a line at a time.
#[derive(Debug, Default)]
struct Index {
    sections: Vec<Section>,
    /// In a section's header lines (before its first hunk).
    in_header: bool,
}

impl Index {
    /// Line `line` of the diff, starting at byte `at`, `len` bytes with its newline.
    fn line(&mut self, line: &str, at: u64, len: u64) {
        let header = line.starts_with("diff --git ");
        if header || self.sections.is_empty() {
            self.in_header = header;
            self.sections.push(Section {
                path: match header {
                    true => header_paths(line).1,
                    false => String::new(),
                },
                start: at,
                end: at,
                header,
                ..Section::default()
            });
        }
        let Some(s) = self.sections.last_mut() else {
            return;
        };
        s.end = at + len;
        if self.in_header {
            // The `+++` line names the new side exactly (quoted names decoded).
            if line.starts_with("@@") {
                self.in_header = false;
            } else if let Some(path) = line.strip_prefix("+++ ").and_then(side_path) {
                s.path = path;
                return;
            } else if line.starts_with("--- ") {
                return;
            }
        }
        if line.starts_with('+') && !line.starts_with("+++") {
            s.added += 1;
        } else if line.starts_with('-') && !line.starts_with("---") {
            s.removed += 1;
        }
    }
}

/// One read of the change.
#[derive(Debug)]
pub struct Change {
    /// `git diff <base>` (whole tree, rename detection on, default context).
    spool: std::fs::File,
    /// Bytes in the spool.
    pub bytes: u64,
    /// The diff's per-file sections, in order.
    pub sections: Vec<Section>,
    /// The lines the diff adds (untracked files not included).
    pub added: AddedLines,
    /// Untracked files, repository-relative (`.gitignore` respected).
    pub untracked: Vec<String>,
    /// Tracked paths that differ from `HEAD` (staged or not).
    pub modified: Vec<String>,
    /// `HEAD`; none before the first commit.
    pub head: Option<String>,
}

impl Change {
    /// Reads the change against `base` (a commit: the merge base, decided once per run) in the
    /// repository at `root`: the diff and the status at once.
    pub async fn read(root: &Path, base: &str) -> Result<Change, String> {
        Self::read_visiting(root, base, &mut |_, _, _| {}).await
    }

    /// [`Change::read`], handing each line the diff adds to `visit` (`path`, line number,
    /// text) as git writes it.
    pub async fn read_visiting(
        root: &Path,
        base: &str,
        visit: &mut dyn FnMut(&str, u32, &str),
    ) -> Result<Change, String> {
        let (diff, status) = tokio::join!(stream_diff(root, base, visit), status(root));
        let diff = diff?;
        let status = status?;
        Ok(Change {
            spool: diff.spool,
            bytes: diff.bytes,
            sections: diff.sections,
            added: diff.added,
            untracked: status.untracked,
            modified: status.modified,
            head: status.head,
        })
    }

    /// Hands every line of the diff (without its `\n`; invalid UTF-8 replaced) to `each`, with
    /// the byte offset where it starts.
    pub fn each_line(&self, mut each: impl FnMut(&str, u64)) -> Result<(), String> {
        let mut reader = std::io::BufReader::with_capacity(
            256 * 1024,
            At {
                file: &self.spool,
                pos: 0,
            },
        );
        let mut buf = Vec::new();
        let mut at = 0u64;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("cannot read the diff: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
            each(&String::from_utf8_lossy(line), at);
            at += n as u64;
        }
    }

    /// The diff's bytes `from..to` as text.
    pub fn text(&self, from: u64, to: u64) -> Result<String, String> {
        let mut buf = vec![0; to.saturating_sub(from) as usize];
        self.spool
            .read_exact_at(&mut buf, from)
            .map_err(|e| format!("cannot read the diff: {e}"))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// `HEAD`, when the working tree outside `exclude` (qa-loop's own paths) is exactly
    /// `HEAD`'s: nothing modified, staged or untracked there.
    pub fn clean_head(&self, exclude: &[String]) -> Option<&str> {
        let dirty = self
            .modified
            .iter()
            .chain(&self.untracked)
            .any(|p| !is_under(p, exclude));
        (!dirty).then_some(self.head.as_deref()).flatten()
    }
}

/// Whether `path` is one of `paths` or inside one (a directory, with or without its `/`): how
/// qa-loop's own paths are left out of the change.
pub fn is_under(path: &str, paths: &[String]) -> bool {
    paths.iter().any(|e| {
        let e = e.trim_end_matches('/');
        !e.is_empty()
            && path
                .strip_prefix(e)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Reads a file at a position of its own (`pread`): readers never share an offset.
struct At<'f> {
    file: &'f std::fs::File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// What streaming the diff produced.
struct Streamed {
    spool: std::fs::File,
    bytes: u64,
    sections: Vec<Section>,
    added: AddedLines,
}

/// `git diff <base>` read as git writes it: each line into the spool (an unnamed file), the
/// added-lines parser (and `visit`) and the section index.
async fn stream_diff(
    root: &Path,
    base: &str,
    visit: &mut dyn FnMut(&str, u32, &str),
) -> Result<Streamed, String> {
    let spool = tempfile::tempfile().map_err(|e| format!("cannot spool the diff: {e}"))?;
    let mut out = std::io::BufWriter::with_capacity(
        256 * 1024,
        spool
            .try_clone()
            .map_err(|e| format!("cannot spool the diff: {e}"))?,
    );
    // Every setting that changes how a diff reads is set here: the repository's own config
    // (which a test command can write) does not decide it. Renames are a deletion and an
    // addition: a moved file's lines count as added (the checks see them).
    let args = [
        "-c",
        "core.quotePath=false",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--no-relative",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        base,
        "--",
    ];
    let mut parser = AddedParser::new(visit);
    let mut index = Index::default();
    let mut at = 0u64;
    let spooled = |e: std::io::Error| format!("cannot spool the diff: {e}");
    git_each_raw_line(root, &args, |raw| {
        out.write_all(raw).map_err(spooled)?;
        let line = String::from_utf8_lossy(raw.strip_suffix(b"\n").unwrap_or(raw));
        parser.line(&line);
        index.line(&line, at, raw.len() as u64);
        at += raw.len() as u64;
        Ok(())
    })
    .await?;
    out.flush().map_err(spooled)?;
    Ok(Streamed {
        spool,
        bytes: at,
        sections: index.sections,
        added: parser.finish(),
    })
}

/// What `git status` says.
#[derive(Debug, Default, PartialEq)]
struct Status {
    head: Option<String>,
    modified: Vec<String>,
    untracked: Vec<String>,
}

/// `git status --porcelain=v2` without taking the index lock (it never writes the index).
async fn status(root: &Path) -> Result<Status, String> {
    let args = [
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ];
    let mut cmd = isolated(root, &[]);
    cmd.args(args).env("GIT_OPTIONAL_LOCKS", "0");
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    succeeded(&out, &args)?;
    Ok(parse_status(&String::from_utf8_lossy(&out.stdout)))
}

/// Parses `git status --porcelain=v2 -z --branch` output.
fn parse_status(out: &str) -> Status {
    let mut status = Status::default();
    let mut fields = out.split('\0');
    while let Some(entry) = fields.next() {
        let mut kind = entry.splitn(2, ' ');
        let (tag, rest) = (kind.next().unwrap_or(""), kind.next().unwrap_or(""));
        match tag {
            "#" => {
                if let Some(oid) = rest.strip_prefix("branch.oid ")
                    && oid.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    status.head = Some(oid.to_string());
                }
            }
            // Ordinary: `XY sub mH mI mW hH hI path`.
            "1" => status
                .modified
                .extend(rest.splitn(8, ' ').nth(7).map(str::to_string)),
            // Renamed or copied: `… X<score> path`, then the original path as its own field.
            "2" => {
                status
                    .modified
                    .extend(rest.splitn(9, ' ').nth(8).map(str::to_string));
                status.modified.extend(fields.next().map(str::to_string));
            }
            // Unmerged: `XY sub m1 m2 m3 mW h1 h2 h3 path`.
            "u" => status
                .modified
                .extend(rest.splitn(10, ' ').nth(9).map(str::to_string)),
            "?" => status.untracked.push(rest.to_string()),
            _ => {}
        }
    }
    status
}

/// A read of the change and the base it was read against.
type ReadOf = (String, Arc<Change>);

/// The change read once per tree, shared by everything that reads it in a pass; and the
/// tree's snapshot (`vcs::snapshot`), taken once for the integrity guard and the reviewer.
#[derive(Debug, Clone, Default)]
pub struct ChangeCache {
    read: Arc<tokio::sync::Mutex<Option<ReadOf>>>,
    tree: Arc<tokio::sync::Mutex<Option<String>>>,
}

impl ChangeCache {
    /// The change against `base`: read now, or the read of this tree already made.
    pub async fn get(&self, root: &Path, base: &str) -> Result<Arc<Change>, String> {
        Ok(self.get_visiting(root, base, &mut |_, _, _| {}).await?.0)
    }

    /// [`ChangeCache::get`], and whether `visit` saw the diff's added lines: only when the
    /// change is read now (else the caller reads them from the spool).
    pub async fn get_visiting(
        &self,
        root: &Path,
        base: &str,
        visit: &mut dyn FnMut(&str, u32, &str),
    ) -> Result<(Arc<Change>, bool), String> {
        let mut read = self.read.lock().await;
        if let Some((b, change)) = read.as_ref()
            && b == base
        {
            return Ok((change.clone(), false));
        }
        let change = Arc::new(Change::read_visiting(root, base, visit).await?);
        *read = Some((base.to_string(), change.clone()));
        Ok((change, true))
    }

    /// The tree's snapshot: `take` makes it, once per tree (every caller leaves out the same
    /// paths: qa-loop's own).
    pub async fn snapshot<F>(&self, take: impl FnOnce() -> F) -> Result<String, String>
    where
        F: std::future::Future<Output = Result<String, String>>,
    {
        let mut tree = self.tree.lock().await;
        if let Some(t) = tree.as_ref() {
            return Ok(t.clone());
        }
        let t = take().await?;
        *tree = Some(t.clone());
        Ok(t)
    }

    /// Forgets the read and the snapshot: the tree is about to change (a fix).
    pub async fn invalidate(&self) {
        *self.read.lock().await = None;
        *self.tree.lock().await = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_head_modified_renamed_and_untracked_paths() {
        let out = "# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head main\0\
1 .M N... 100644 100644 100644 aaaa aaaa src/a b.py\0\
2 R. N... 100644 100644 100644 bbbb bbbb R100 new name.py\0old name.py\0\
u UU N... 100644 100644 100644 100644 c1 c2 c3 conflict.txt\0\
? notes/new file.md\0";
        let s = parse_status(out);
        assert_eq!(
            s.head.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
        assert_eq!(
            s.modified,
            ["src/a b.py", "new name.py", "old name.py", "conflict.txt"]
        );
        assert_eq!(s.untracked, ["notes/new file.md"]);
        // Before the first commit.
        assert_eq!(parse_status("# branch.oid (initial)\0").head, None);
    }

    fn change(modified: &[&str], untracked: &[&str]) -> Change {
        Change {
            spool: tempfile::tempfile().unwrap(),
            bytes: 0,
            sections: Vec::new(),
            added: AddedLines::new(),
            untracked: untracked.iter().map(|s| s.to_string()).collect(),
            modified: modified.iter().map(|s| s.to_string()).collect(),
            head: Some("h".into()),
        }
    }

    #[test]
    fn the_head_is_the_reviewed_commit_only_when_nothing_but_own_paths_differ() {
        let own = [".qa-loop/".to_string(), "plan.json".to_string()];
        assert_eq!(change(&[], &[]).clean_head(&own), Some("h"));
        assert_eq!(
            change(&["plan.json"], &[".qa-loop/qa_report.md"]).clean_head(&own),
            Some("h")
        );
        assert_eq!(change(&["calc.py"], &[]).clean_head(&own), None);
        assert_eq!(change(&[], &["new.py"]).clean_head(&own), None);
        // A prefix is not a directory.
        assert_eq!(change(&["plan.json.bak"], &[]).clean_head(&own), None);
    }
}
