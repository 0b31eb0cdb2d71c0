//! The MCP client against a minimal stdio MCP server written for the tests
//! (`tests/fixtures/mcp/test_server.py`, the wire format of the 2025-06-18 protocol).

use super::*;
use serde_json::json;

fn server(mode: &str) -> McpServerConfig {
    McpServerConfig {
        command: Some("python3".into()),
        args: vec![
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/mcp/test_server.py"
            )
            .into(),
            mode.into(),
        ],
        env: [("GREETING".to_string(), "${QA_TEST_GREETING}".to_string())].into(),
        startup_timeout: Some(crate::config::file::DurationSetting(Duration::from_secs(5))),
        ..McpServerConfig::default()
    }
}

async fn hub(configs: &[(&str, McpServerConfig)], root: &Path) -> Hub {
    let map: BTreeMap<String, McpServerConfig> = configs
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect();
    // A child environment without the secret the parent holds.
    let child_env = vec![(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    )];
    let sandbox = crate::sandbox::Sandbox::default();
    let launch = Launch {
        sandbox: &sandbox,
        env: &child_env,
    };
    Hub::start(&map, root, root.join(".qa-loop/mcp"), launch, |k| {
        (k == "QA_TEST_GREETING").then(|| "hello".to_string())
    })
    .await
}

#[tokio::test]
async fn tools_are_listed_allow_listed_called_and_images_saved() {
    let dir = tempfile::tempdir().unwrap();
    let mut only = server("ok");
    only.tools = Some(vec![
        "echo".into(),
        "image".into(),
        "env".into(),
        "fail".into(),
        "note".into(),
    ]);
    only.agents = Some(vec![McpAgent::Reviewer, McpAgent::Fixer]);
    let hub = hub(&[("test", only)], dir.path()).await;
    let names: Vec<String> = hub
        .specs(McpAgent::Fixer)
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "mcp__test__echo",
            "mcp__test__note",
            "mcp__test__image",
            "mcp__test__env",
            "mcp__test__fail"
        ]
    );
    let echo = hub
        .call(
            McpAgent::Fixer,
            "mcp__test__echo",
            &json!({"text": "hi there"}),
        )
        .await;
    assert_eq!((echo.text.as_str(), echo.is_error), ("hi there", false));
    // Arguments as a JSON string (some models send them so).
    let echo = hub
        .call(
            McpAgent::Fixer,
            "mcp__test__echo",
            &json!("{\"text\": \"as string\"}"),
        )
        .await;
    assert_eq!(echo.text, "as string");
    let img = hub
        .call(McpAgent::Fixer, "mcp__test__image", &json!({}))
        .await;
    assert_eq!(img.images, [".qa-loop/mcp/test-1.png"]);
    // The model gets the image too (a 1x1 pixel costs one token).
    assert_eq!(img.model_images.len(), 1);
    assert_eq!(
        (
            img.model_images[0].media_type.as_str(),
            img.model_images[0].tokens
        ),
        ("image/png", 1)
    );
    assert!(
        img.text
            .contains("[image saved to .qa-loop/mcp/test-1.png]"),
        "{}",
        img.text
    );
    let png = std::fs::read(dir.path().join(".qa-loop/mcp/test-1.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    // The configured variable (expanded from qa-loop's own), nothing else of the parent's.
    let env = hub
        .call(
            McpAgent::Fixer,
            "mcp__test__env",
            &json!({"name": "GREETING"}),
        )
        .await;
    assert_eq!(env.text, "hello");
    let fail = hub
        .call(McpAgent::Fixer, "mcp__test__fail", &json!({}))
        .await;
    assert!(
        fail.is_error && fail.text.contains("it went wrong"),
        "{fail:?}"
    );
    // A tool left out of the allow-list is not offered and cannot be called.
    let die = hub
        .call(McpAgent::Fixer, "mcp__test__die", &json!({}))
        .await;
    assert!(die.is_error && die.text.contains("no MCP tool"), "{die:?}");
    let status = hub.status();
    // A call to a tool no server offers is not a server's call.
    assert_eq!(
        (status[0].calls, status[0].failed_calls),
        (5, 1),
        "{status:?}"
    );
    hub.shutdown().await;
    assert_eq!(hub.status()[0].state, "exited");
}

#[tokio::test]
async fn a_server_that_crashes_hangs_or_dies_is_reported_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut silent = server("silent");
    silent.startup_timeout = Some(crate::config::file::DurationSetting(Duration::from_millis(
        800,
    )));
    let mut missing = server("ok");
    missing.command = Some("/nonexistent/mcp-server".into());
    let started = std::time::Instant::now();
    let hub = hub(
        &[
            ("crashes", server("crash")),
            ("hangs", silent),
            ("missing", missing),
            ("dies", server("ok")),
        ],
        dir.path(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let status: BTreeMap<String, String> = hub
        .status()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    assert!(
        status["crashes"].starts_with("failed:")
            && status["crashes"].contains("cannot start (on purpose)"),
        "{status:?}"
    );
    assert!(
        status["hangs"].contains("did not start within"),
        "{status:?}"
    );
    assert!(
        status["missing"].contains("cannot start `/nonexistent/mcp-server`"),
        "{status:?}"
    );
    assert_eq!(status["dies"], "running");
    // Only the running server's tools are offered.
    assert!(
        hub.specs(McpAgent::Reviewer)
            .iter()
            .all(|s| s.name.starts_with("mcp__dies__"))
    );
    // A server that dies during a call: an error naming it, then "exited" for every later call.
    let died = hub
        .call(McpAgent::Reviewer, "mcp__dies__die", &json!({}))
        .await;
    assert!(died.is_error && died.text.contains("`dies`"), "{died:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = hub
        .call(McpAgent::Reviewer, "mcp__dies__echo", &json!({"text": "x"}))
        .await;
    assert!(
        after.is_error && after.text.contains("has exited"),
        "{after:?}"
    );
    assert!(
        after.text.contains("dying on purpose"),
        "its stderr is shown: {after:?}"
    );
    hub.shutdown().await;
}

#[test]
fn names_and_variables() {
    assert_eq!(
        tool_name("playwright", "browser_navigate"),
        "mcp__playwright__browser_navigate"
    );
    assert_eq!(tool_name("s", "a.b/c"), "mcp__s__a_b_c");
    assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    let env = |k: &str| (k == "T").then(|| "tok".to_string());
    assert_eq!(expand("Bearer ${T}", &env), "Bearer tok");
    assert_eq!(expand("${MISSING}x", &env), "x");
    assert_eq!(expand("open ${T", &env), "open ${T");
}

#[test]
fn images_for_the_model_are_downscaled_and_counted() {
    use base64::Engine as _;
    let big = image::RgbImage::from_pixel(2000, 1000, image::Rgb([200, 30, 30]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(big)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    let m = for_model(png.get_ref()).unwrap();
    let back = image::load_from_memory(
        &base64::engine::general_purpose::STANDARD
            .decode(&m.data)
            .unwrap(),
    )
    .unwrap();
    assert_eq!((back.width(), back.height()), (1024, 512));
    assert_eq!((m.media_type.as_str(), m.tokens), ("image/png", 700));
    // A small image keeps its size; what is not an image is an error, not a panic.
    let small = image::RgbImage::from_pixel(40, 30, image::Rgb([0, 0, 0]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(small)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    assert_eq!(for_model(png.get_ref()).unwrap().tokens, 2);
    assert!(for_model(b"<html>").unwrap_err().contains("not an image"));
}

/// A streamable HTTP server: reached at its URL with the configured headers (`${NAME}`
/// expanded from qa-loop's environment), tools listed and called like a stdio server's.
#[tokio::test]
async fn a_streamable_http_server_is_reached_with_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let mut child = tokio::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/mcp/test_server.py"
        ))
        .arg("http")
        .arg(&port_file)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut port = String::new();
    for _ in 0..100 {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            port = p;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!port.is_empty(), "the HTTP test server did not start");
    let cfg = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        headers: [(
            "Authorization".to_string(),
            "Bearer ${QA_TEST_GREETING}".to_string(),
        )]
        .into(),
        startup_timeout: Some(crate::config::file::DurationSetting(Duration::from_secs(
            10,
        ))),
        ..McpServerConfig::default()
    };
    let hub = hub(&[("web", cfg)], dir.path()).await;
    assert_eq!(hub.status()[0].state, "running", "{:?}", hub.status());
    let echo = hub
        .call(
            McpAgent::Reviewer,
            "mcp__web__echo",
            &json!({"text": "over http"}),
        )
        .await;
    assert_eq!((echo.text.as_str(), echo.is_error), ("over http", false));
    let auth = std::fs::read_to_string(dir.path().join("port.auth")).unwrap();
    assert!(
        auth.lines().all(|l| l == "Bearer hello") && !auth.is_empty(),
        "{auth}"
    );
    hub.shutdown().await;
    let _ = child.kill().await;
}
