//! Path confinement for agent tools: every path is relative to the repository root, never
//! absolute, never through `..`, never out through a symlink; `.git/` is neither readable (it
//! may hold credentials left by actions/checkout) nor writable; `.github/workflows/` and
//! qa-loop's own files are writable only when allowed.

use std::path::{Component, Path, PathBuf};

/// The largest file whose lines [`Confinement::line_count`] counts.
pub const MAX_COUNTED_BYTES: u64 = 32 * 1024 * 1024;

/// What a tool wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// The rules of one repository.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// Canonical repository root.
    root: PathBuf,
    allow_workflow_edits: bool,
    /// Canonical paths the agents may read but never write (the out dir, the plan file).
    protected: Vec<PathBuf>,
}

impl Confinement {
    pub fn new(
        root: &Path,
        allow_workflow_edits: bool,
        protected: &[PathBuf],
    ) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        let protected = protected
            .iter()
            .map(|p| {
                let abs = if p.is_absolute() {
                    p.clone()
                } else {
                    root.join(p)
                };
                canonicalize_lenient(&abs)
            })
            .collect();
        Ok(Confinement {
            root,
            allow_workflow_edits,
            protected,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a model-supplied path, or says why it is refused.
    pub fn resolve(&self, raw: &str, access: Access) -> Result<PathBuf, String> {
        let raw = raw.trim();
        let rel = Path::new(if raw.is_empty() { "." } else { raw });
        if rel.is_absolute() || raw.starts_with('~') {
            return Err(format!(
                "`{raw}`: absolute paths are refused; use a path relative to the repository root"
            ));
        }
        let mut clean = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(part) => clean.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(format!(
                        "`{raw}`: `..` is refused; paths stay inside the repository"
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!("`{raw}`: absolute paths are refused"));
                }
            }
        }
        if clean
            .components()
            .next()
            .is_some_and(|c| c.as_os_str() == ".git")
        {
            return Err(format!("`{raw}`: `.git/` is off limits"));
        }
        let full = self.root.join(&clean);
        // Symlinks: the real location (of the path, or of its nearest existing ancestor) must be
        // inside the root and not inside `.git/`.
        let real = canonicalize_lenient(&full);
        if !real.starts_with(&self.root) {
            return Err(format!(
                "`{raw}`: resolves outside the repository (symlink)"
            ));
        }
        let real_rel = real.strip_prefix(&self.root).unwrap_or(&real);
        if real_rel
            .components()
            .next()
            .is_some_and(|c| c.as_os_str() == ".git")
        {
            return Err(format!("`{raw}`: `.git/` is off limits"));
        }
        if access == Access::Write {
            if !self.allow_workflow_edits
                && (real_rel.starts_with(".github/workflows")
                    || clean.starts_with(".github/workflows"))
            {
                return Err(format!(
                    "`{raw}`: `.github/workflows/` is not writable (set `allow_workflow_edits: true` to allow it)"
                ));
            }
            if self.protected.iter().any(|p| real.starts_with(p)) {
                return Err(format!("`{raw}`: qa-loop's own output is not writable"));
            }
            if full.is_dir() {
                return Err(format!("`{raw}`: is a directory"));
            }
        }
        Ok(full)
    }

    /// How many lines the file at a model-supplied path has (a reviewer's issue points at it),
    /// when it is a text file of at most [`MAX_COUNTED_BYTES`] inside the repository; the
    /// recurring-issue matcher scales line distances by it. None for anything else, refused
    /// paths included.
    pub fn line_count(&self, raw: &str) -> Option<u32> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        // The real file, opened without following a link swapped in since and without waiting
        // on a FIFO; its kind and size are read from the open handle, and no more is read.
        let real = self.resolve(raw, Access::Read).ok()?.canonicalize().ok()?;
        if !real.starts_with(&self.root) {
            return None;
        }
        let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags.bits())
            .open(&real)
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > MAX_COUNTED_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_COUNTED_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.is_empty() || bytes.len() as u64 > MAX_COUNTED_BYTES || bytes.contains(&0) {
            return None;
        }
        // As `str::lines` counts them: a last line without a newline counts too.
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        let lines = newlines + usize::from(bytes.last() != Some(&b'\n'));
        u32::try_from(lines).ok()
    }

    /// The path relative to the root, for display.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// Canonicalizes the longest existing prefix and appends the rest (for files not yet created).
fn canonicalize_lenient(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reviewer's issue may point anywhere: only regular text files inside the repository are
    /// counted, as `read_file` numbers their lines; a FIFO is refused without waiting on it.
    #[test]
    fn line_counts_of_files_in_the_repository_only() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "a\nb\nc\n").unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "a\nb\n").unwrap();
        std::fs::write(root.join("a.py"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(root.join("b.py"), "one\r\ntwo").unwrap();
        std::fs::write(root.join("empty.py"), "").unwrap();
        std::fs::write(root.join("blob.bin"), b"a\n\0b\n").unwrap();
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("a.py"), root.join("inside.py")).unwrap();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let c = Confinement::new(root, false, &[]).unwrap();
        assert_eq!(c.line_count("a.py"), Some(3));
        assert_eq!(c.line_count("./b.py"), Some(2));
        assert_eq!(c.line_count("inside.py"), Some(3));
        for refused in [
            "empty.py",
            "blob.bin",
            "pipe",
            "dir",
            "missing.py",
            "link.txt",
            ".git/config",
            "../x",
        ] {
            assert_eq!(c.line_count(refused), None, "{refused}");
        }
        let abs = outside.path().join("secret.txt");
        assert_eq!(c.line_count(abs.to_str().unwrap()), None);
    }

    #[test]
    fn escapes_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "token").unwrap();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("src/link.txt"))
            .unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("g")).unwrap();
        let c = Confinement::new(root, false, &[PathBuf::from(".qa-loop")]).unwrap();
        let refused_reads = [
            "../x",
            "src/../../x",
            "/etc/passwd",
            "~/.ssh/id_rsa",
            ".git/config",
            "./.git/HEAD",
            "out/secret.txt",
            "src/link.txt",
            "g/config",
            "src/../.git/config",
        ];
        for p in refused_reads {
            assert!(
                c.resolve(p, Access::Read).is_err(),
                "read of {p} should be refused"
            );
        }
        let refused_writes = [
            ".github/workflows/ci.yml",
            ".qa-loop/qa_report.md",
            "out/new.txt",
            "src",
            ".git/hooks/pre-commit",
        ];
        for p in refused_writes {
            assert!(
                c.resolve(p, Access::Write).is_err(),
                "write of {p} should be refused"
            );
        }
        for p in [
            "src/a.py",
            "src/new/b.py",
            ".",
            "README.md",
            ".github/dependabot.yml",
        ] {
            assert!(
                c.resolve(p, Access::Write).is_ok() || p == ".",
                "{p} should be allowed"
            );
        }
        assert!(c.resolve(".github/workflows/ci.yml", Access::Read).is_ok());
        let allowed = Confinement::new(root, true, &[]).unwrap();
        assert!(
            allowed
                .resolve(".github/workflows/ci.yml", Access::Write)
                .is_ok()
        );
    }
}
