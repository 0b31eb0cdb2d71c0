//! Files qa-loop itself reads or writes in the checkout, never through a link (SPEC §10): a
//! link committed by the change (or planted by its tests) as the out dir, `QA_FIX_REQUEST.md`
//! or a test report would make qa-loop write outside the checkout, or read — outside the
//! sandbox, with qa-loop's reach — a file the change's code could not (the runner's credential
//! files) into a report, the model's context or an uploaded artifact. Input files (config, plan,
//! spec, replay sessions) are read as UTF-8 without leaving the checkout through a link
//! (`read_text`); qa-loop's own files are written atomically (`write_atomic`).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::InputError;

/// The first component of `path` below `root` that is a symbolic link, if any. Only the part of
/// `path` inside `root` is checked (a path outside the checkout is the caller's choice); a `..`
/// is followed as written (no link was met before it, so it leads where the file system would).
pub fn first_link(root: &Path, path: &Path) -> Option<PathBuf> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (root, path) = (abs(root), abs(path));
    let mut at = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::RootDir => at = PathBuf::from("/"),
            Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => {
                at.pop();
                continue;
            }
            Component::Normal(name) => at.push(name),
        }
        if at == root || !at.starts_with(&root) {
            continue;
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Where `path` really leads when a link inside `root` takes it outside (inputs qa-loop reads —
/// config, plan, spec — may be links within the checkout, never out of it). The path is
/// followed component by component as the file system resolves it: a `..` the operator wrote
/// that leaves the checkout (`--config ../qa.yml`) is their choice and no link; only a link that
/// sits inside the checkout and leads out of it is returned.
pub fn escapes(root: &Path, path: &Path) -> Option<PathBuf> {
    let real_root = std::fs::canonicalize(root).ok()?;
    let mut at = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        real_root.clone()
    };
    for c in path.components() {
        match c {
            Component::RootDir => at = PathBuf::from("/"),
            Component::CurDir | Component::Prefix(_) => {}
            // `at` is always a real path: its parent is where `..` leads.
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                let next = at.join(name);
                let is_link =
                    std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
                if !is_link {
                    at = next;
                    continue;
                }
                let target = std::fs::canonicalize(&next).ok()?;
                if at.starts_with(&real_root) && !target.starts_with(&real_root) {
                    return Some(target);
                }
                at = target;
            }
        }
    }
    None
}

/// Reads the regular file at `path` (inside `root`) as text: refused when any component is a
/// link, opened with `O_NOFOLLOW` (a link swapped in after the check fails to open) and
/// `O_NONBLOCK` (a FIFO cannot stall the run), its kind read from the open handle.
pub fn read_to_string(root: &Path, path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(link) = first_link(root, path) {
        return Err(std::io::Error::other(format!(
            "{} is a link: qa-loop does not follow links in the checkout",
            link.display()
        )));
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// Reads a file as UTF-8, naming the line and column of the first invalid byte.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    // A file in the checkout (the working directory) that a link takes outside it is not read:
    // its text would reach error messages, the model or the report.
    if let Some(target) = std::env::current_dir()
        .ok()
        .and_then(|cwd| escapes(&cwd, path))
    {
        return Err(InputError::file(
            path,
            format!(
                "a link to {}, outside the checkout: not read",
                target.display()
            ),
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| InputError::file(path, format!("cannot read file: {e}")))?;
    text_of(path, bytes)
}

fn text_of(path: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(err) => {
            let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            let col = valid.iter().rev().take_while(|&&b| b != b'\n').count() as u64 + 1;
            Err(InputError::at(path, line, col, "file is not valid UTF-8"))
        }
    }
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file; keeps
/// the file's permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_anywhere_on_the_path_are_found_and_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("reports")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "token").unwrap();
        std::fs::write(root.join("reports/real.xml"), "<testsuite/>").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("reports/unit.xml")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        assert_eq!(
            read_to_string(&root, &root.join("reports/real.xml")).unwrap(),
            "<testsuite/>"
        );
        let err = read_to_string(&root, &root.join("reports/unit.xml")).unwrap_err();
        assert!(err.to_string().contains("is a link"), "{err}");
        assert_eq!(
            first_link(&root, &root.join("out/secret")),
            Some(root.join("out"))
        );
        assert!(read_to_string(&root, &root.join("out/secret")).is_err());
        assert_eq!(first_link(&root, &root.join("reports/new/x")), None);
        // Inputs may be links inside the checkout, never out of it.
        std::os::unix::fs::symlink("real.xml", root.join("reports/alias.xml")).unwrap();
        assert_eq!(escapes(&root, &root.join("reports/alias.xml")), None);
        assert_eq!(
            escapes(&root, &root.join("reports/unit.xml")),
            Some(std::fs::canonicalize(outside.join("secret")).unwrap())
        );
        assert_eq!(
            escapes(&root, &outside.join("secret")),
            None,
            "outside: the caller's choice"
        );
        // Issue 49: a `..` the operator wrote is no link, inside or out; relative paths too.
        assert_eq!(escapes(&root, Path::new("../outside/secret")), None);
        assert_eq!(escapes(&root, &root.join("../outside/secret")), None);
        assert_eq!(
            escapes(&root, &root.join("reports/../reports/real.xml")),
            None
        );
        assert_eq!(
            escapes(&root, Path::new("reports/unit.xml")),
            Some(std::fs::canonicalize(outside.join("secret")).unwrap())
        );
        // A link inside leading out, then `..` back: still left through the link.
        assert_eq!(
            escapes(&root, Path::new("out/../outside/secret")),
            Some(std::fs::canonicalize(&outside).unwrap())
        );
        assert_eq!(first_link(&root, &root.join("../outside/secret")), None);
        assert_eq!(
            first_link(&root, &root.join("reports/../out/secret")),
            Some(root.join("out"))
        );
        // A FIFO neither blocks nor counts as a file.
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_to_string(&root, &root.join("fifo")).is_err());
    }
}
