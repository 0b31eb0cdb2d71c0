//! Helpers shared by the integration tests: git in a test repository, and serving a local fake
//! HTTP service (model APIs, GitHub) on 127.0.0.1.
#![allow(dead_code)] // each test crate uses a part

use std::net::SocketAddr;
use std::path::Path;

/// `git` in `dir` with a fixed identity; fails the test on error.
pub fn git(dir: &Path, args: &[&str]) {
    git_out(dir, args);
}

/// `git` output in `dir` (trimmed); fails the test on error.
pub fn git_out(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Serves `app` on a free 127.0.0.1 port from a thread with its own runtime.
pub fn serve(app: axum::Router) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
    });
    addr
}
