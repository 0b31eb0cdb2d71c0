//! The action's install step (`scripts/install.sh`) against a local HTTP server serving
//! release-like assets: the right checksum installs a binary that runs (and is cached); a wrong
//! or missing checksum refuses with a clear error; no asset for the runner builds from source.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// `python3 -m http.server` over `dir` on a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--directory",
        ])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "the test server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

fn target() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x86_64-unknown-linux-musl",
        "aarch64" => "aarch64-unknown-linux-musl",
        other => panic!("untested arch {other}"),
    }
}

/// A release directory `v<version>/` with the real binary packed as the asset, and its checksum
/// (`wrong` writes another one).
fn release(root: &Path, checksum: Option<&str>) -> PathBuf {
    let dir = root.join(format!("v{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&dir).unwrap();
    let stage = root.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_qa-loop"), stage.join("qa-loop")).unwrap();
    let asset = dir.join(format!("qa-loop-{}.tar.gz", target()));
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(&asset)
        .arg("-C")
        .arg(&stage)
        .arg("qa-loop")
        .status()
        .unwrap();
    assert!(ok.success());
    let sum = Command::new("sha256sum").arg(&asset).output().unwrap();
    let real = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let line = match checksum {
        Some("right") => format!("{real}  qa-loop-{}.tar.gz\n", target()),
        Some(other) => format!("{other}  qa-loop-{}.tar.gz\n", target()),
        None => return dir,
    };
    std::fs::write(
        dir.join(format!("qa-loop-{}.tar.gz.sha256", target())),
        line,
    )
    .unwrap();
    dir
}

fn install(base: &str, cache: &Path, extra_path: Option<&Path>) -> (Output, String) {
    let output_file = cache.join("gh-output");
    let _ = std::fs::remove_file(&output_file);
    let mut path = std::env::var("PATH").unwrap();
    if let Some(p) = extra_path {
        path = format!("{}:{path}", p.display());
    }
    let o = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"))
        .env("QA_LOOP_ACTION_PATH", env!("CARGO_MANIFEST_DIR"))
        .env("QA_LOOP_DOWNLOAD_BASE", base)
        .env("RUNNER_TOOL_CACHE", cache.join("tool-cache"))
        .env("RUNNER_TEMP", {
            let temp = cache.join("runner-temp");
            std::fs::create_dir_all(&temp).unwrap();
            temp
        })
        .env("GITHUB_OUTPUT", &output_file)
        .env("PATH", path)
        .output()
        .unwrap();
    (o, std::fs::read_to_string(output_file).unwrap_or_default())
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_right_checksum_installs_a_binary_that_runs_and_is_cached() {
    let root = tempfile::tempdir().unwrap();
    release(root.path(), Some("right"));
    let server = serve(root.path());
    let cache = tempfile::tempdir().unwrap();
    let (o, out) = install(&server.url, cache.path(), None);
    assert!(o.status.success(), "{}", text(&o));
    let bin = out.strip_prefix("bin=").unwrap().trim();
    let v = Command::new(bin).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&v.stdout).contains(env!("CARGO_PKG_VERSION")));
    // The archive is cached: a second install downloads only the checksum (the archive is gone
    // from the server) and unpacks the cached archive once it matches.
    let dir = root.path().join(format!("v{}", env!("CARGO_PKG_VERSION")));
    std::fs::remove_file(dir.join(format!("qa-loop-{}.tar.gz", target()))).unwrap();
    let (o, out2) = install(&server.url, cache.path(), None);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("from the tool cache matches"),
        "{}",
        text(&o)
    );
    let bin2 = out2.strip_prefix("bin=").unwrap().trim();
    assert_eq!(
        sha256(Path::new(bin2)),
        sha256(Path::new(env!("CARGO_BIN_EXE_qa-loop")))
    );
    // Without the checksum nothing is installed, cache or not.
    drop(server);
    let (o, out3) = install("http://127.0.0.1:9", cache.path(), None);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("refusing to install an unverified binary"),
        "{}",
        text(&o)
    );
    assert!(out3.is_empty());
}

fn sha256(path: &Path) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Issue 47, point 3: what an earlier step (or an earlier job on a self-hosted runner) plants in
/// the tool cache — an executable in the binary's old slot, a tampered archive in the archive's —
/// is never published: the released binary, verified against the release's checksum, is.
#[test]
fn a_binary_planted_in_the_tool_cache_is_never_published() {
    let root = tempfile::tempdir().unwrap();
    release(root.path(), Some("right"));
    let server = serve(root.path());
    let cache = tempfile::tempdir().unwrap();
    let slot = cache.path().join(format!(
        "tool-cache/qa-loop/{}/{}",
        env!("CARGO_PKG_VERSION"),
        target()
    ));
    std::fs::create_dir_all(slot.join("stage")).unwrap();
    let planted = "#!/bin/sh\necho qa-loop 0.0.0-planted\n";
    for path in [slot.join("qa-loop"), slot.join("stage/qa-loop")] {
        std::fs::write(&path, planted).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let archive = slot.join(format!("qa-loop-{}.tar.gz", target()));
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(slot.join("stage"))
        .arg("qa-loop")
        .status()
        .unwrap();
    assert!(ok.success());
    let (o, out) = install(&server.url, cache.path(), None);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("does not match the release's checksum"),
        "{}",
        text(&o)
    );
    let bin = out.strip_prefix("bin=").unwrap().trim();
    assert!(
        !Path::new(bin).starts_with(cache.path().join("tool-cache")),
        "{bin}"
    );
    assert_eq!(
        sha256(Path::new(bin)),
        sha256(Path::new(env!("CARGO_BIN_EXE_qa-loop")))
    );
    let v = Command::new(bin).arg("--version").output().unwrap();
    assert!(!String::from_utf8_lossy(&v.stdout).contains("planted"));
}

#[test]
fn a_wrong_or_missing_checksum_refuses_to_install() {
    for checksum in [
        Some("0000000000000000000000000000000000000000000000000000000000000000"),
        None,
    ] {
        let root = tempfile::tempdir().unwrap();
        release(root.path(), checksum);
        let server = serve(root.path());
        let cache = tempfile::tempdir().unwrap();
        let (o, out) = install(&server.url, cache.path(), None);
        assert!(!o.status.success());
        let t = text(&o);
        let want = if checksum.is_some() {
            "checksum mismatch"
        } else {
            "checksum file"
        };
        assert!(
            t.contains("::error title=qa-loop install::") && t.contains(want),
            "{t}"
        );
        assert!(t.contains("refusing"), "{t}");
        assert!(out.is_empty(), "no binary published");
        let cached = cache.path().join(format!(
            "tool-cache/qa-loop/{}/{}/qa-loop",
            env!("CARGO_PKG_VERSION"),
            target()
        ));
        assert!(!cached.exists());
    }
}

/// No asset for the runner (404): qa-loop is built from the action's source with cargo (a
/// stand-in `cargo` here, which records its arguments).
#[test]
fn no_release_asset_builds_from_source() {
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path());
    let fake = tempfile::tempdir().unwrap();
    let log = fake.path().join("cargo-args");
    std::fs::write(
        fake.path().join("cargo"),
        format!(
            "#!/bin/sh\necho \"$@\" > {log}\nroot=\"\"\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=\"$2\"; shift; done\nmkdir -p \"$root/bin\" && cp {bin} \"$root/bin/qa-loop\"\n",
            log = log.display(),
            bin = env!("CARGO_BIN_EXE_qa-loop"),
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(fake.path().join("cargo"))
        .status()
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (o, out) = install(&server.url, cache.path(), Some(fake.path()));
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("building from source"), "{}", text(&o));
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.starts_with("install --quiet --locked --path"),
        "{args}"
    );
    assert!(out.starts_with("bin="));
}
