//! `qa-loop demo`: the real loop, offline, on the bundled example project with a replayed model
//! session (SPEC §9). The example is compiled into the binary so the demo works from any install.

use std::path::{Path, PathBuf};

use crate::config::{FlagLayer, ProviderKind, load_inputs};
use crate::run::{RunError, RunResult, run};

/// The files of `examples/quickstart/` (the session stays outside the project's tree).
const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../examples/quickstart/README.md"),
    ),
    (
        "qa-loop.yml",
        include_str!("../../examples/quickstart/qa-loop.yml"),
    ),
    ("spec.md", include_str!("../../examples/quickstart/spec.md")),
    (
        "textutil.py",
        include_str!("../../examples/quickstart/textutil.py"),
    ),
    (
        "test_textutil.py",
        include_str!("../../examples/quickstart/test_textutil.py"),
    ),
    (".gitignore", ".qa-loop/\n__pycache__/\n"),
];
const SESSION: &str = include_str!("../../examples/quickstart/session.json");

/// Where the demo ran.
#[derive(Debug)]
pub struct Demo {
    pub project: PathBuf,
    pub session: PathBuf,
    pub result: RunResult,
}

/// Creates the demo project under `base` (a new temp dir when `None`) as a git repository.
pub async fn prepare(base: Option<&Path>) -> Result<(PathBuf, PathBuf), RunError> {
    let io = |what: &str, e: std::io::Error| RunError::Io(format!("demo: cannot {what}: {e}"));
    let dir = match base {
        Some(b) => {
            std::fs::create_dir_all(b).map_err(|e| io("create the demo directory", e))?;
            b.to_path_buf()
        }
        None => tempfile::Builder::new()
            .prefix("qa-loop-demo-")
            .tempdir()
            .map_err(|e| io("create a temporary directory", e))?
            .keep(),
    };
    let project = dir.join("quickstart");
    if project.exists() {
        return Err(RunError::Usage(format!(
            "demo: {} already exists; choose an empty directory",
            project.display()
        )));
    }
    std::fs::create_dir_all(&project).map_err(|e| io("create the project", e))?;
    for (name, text) in PROJECT {
        std::fs::write(project.join(name), text).map_err(|e| io("write the example", e))?;
    }
    let session = dir.join("session.json");
    std::fs::write(&session, SESSION).map_err(|e| io("write the session", e))?;
    let identity = [
        "-c",
        "user.name=qa-loop demo",
        "-c",
        "user.email=demo@qa-loop.invalid",
        "-c",
        "commit.gpgsign=false",
    ];
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "quickstart: slugify"],
    ] {
        let full: Vec<&str> = identity.iter().chain(args).copied().collect();
        crate::vcs::git(&project, &full)
            .await
            .map_err(|e| RunError::Io(format!("demo needs git: {e}")))?;
    }
    Ok((project, session))
}

/// Runs the demo: prepare, then the real loop with `--provider replay`.
pub async fn demo(base: Option<&Path>, flags: &FlagLayer) -> Result<Demo, RunError> {
    // The example project's tests are Python: without python3 the run would only show errors.
    let python = tokio::process::Command::new("python3")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await;
    if !python.is_ok_and(|s| s.success()) {
        return Err(RunError::Usage(
            "demo: the example project's tests run with python3, which is not installed here \
             (the qa-loop container image has only git); install python3 or run the demo where it is"
                .into(),
        ));
    }
    let (project, session) = prepare(base).await?;
    let flags = FlagLayer {
        config: Some(project.join("qa-loop.yml")),
        provider: Some(ProviderKind::Replay),
        replay_session: Some(session.clone()),
        out_dir: Some(project.join(".qa-loop")),
        no_github: true,
        ..flags.clone()
    };
    let inputs = load_inputs(&project, &flags)?;
    let result = run(&crate::run::context::local(inputs).await?).await?;
    Ok(Demo {
        project,
        session,
        result,
    })
}
