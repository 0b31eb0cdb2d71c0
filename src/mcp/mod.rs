//! MCP servers for the agents (SPEC §12): stdio servers started in their own process group with
//! the scrubbed environment of test commands plus what the config passes, or streamable HTTP
//! servers; their tools offered to the agents as `mcp__<server>__<tool>` (allow-listed per server
//! and per agent); results bounded and redacted like every tool result, images saved to the out
//! dir; every server stopped at the end (SIGTERM to its group, a grace period, SIGKILL). A server
//! that does not start, or dies, is a clear status in the report and a tool error for the model —
//! never a hang. The protocol is the official Rust SDK's (`rmcp`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::file::{McpAgent, McpServerConfig};
use crate::llm::ToolSpec;

/// Default time a server has to start and answer `initialize`.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time one tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Time a stopped server's group gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// The last bytes of a stdio server's stderr kept for error reports.
const STDERR_TAIL: usize = 4 * 1024;
/// The prefix of every MCP tool name.
pub const PREFIX: &str = "mcp__";

/// One configured server, as the run sees it.
struct Server {
    name: String,
    agents: Vec<McpAgent>,
    call_timeout: Duration,
    state: State,
    /// The tools offered (after the allow-list), with their model-facing names.
    tools: Vec<(String, rmcp::model::Tool)>,
    calls: AtomicU32,
    failed_calls: AtomicU32,
    /// The connection broke during a call (the server died).
    exited: AtomicBool,
    /// The stdio server's process group.
    group: Option<Pid>,
    stderr: std::sync::Arc<Mutex<Vec<u8>>>,
    /// The task draining the stdio server's stderr (it ends when the server exits).
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

enum State {
    Running(Box<RunningService<RoleClient, ()>>),
    Failed(String),
}

/// What the report says about one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `running`, `stopped` or why it failed.
    pub state: String,
    pub tools: Vec<String>,
    pub calls: u32,
    pub failed_calls: u32,
}

/// A tool call's result: text for the model, images saved as files.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub text: String,
    pub is_error: bool,
    /// Images the tool returned, written to the out dir (paths relative to the root).
    pub images: Vec<String>,
    /// The same images for the model: downscaled, at most [`MODEL_IMAGES_PER_CALL`].
    pub model_images: Vec<ModelImage>,
}

/// An image as the model gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelImage {
    pub media_type: String,
    /// Base64.
    pub data: String,
    /// Estimated input tokens (width × height / 750, Anthropic's rule; OpenAI's tiles cost
    /// about the same at this size).
    pub tokens: u64,
}

/// The longest side of an image sent to a model, in pixels.
pub const MODEL_IMAGE_MAX_SIDE: u32 = 1024;
/// Images of one tool result sent to the model; more are saved only.
pub const MODEL_IMAGES_PER_CALL: usize = 2;

/// Downscales an image so its longest side is at most [`MODEL_IMAGE_MAX_SIDE`], as PNG.
pub fn for_model(bytes: &[u8]) -> Result<ModelImage, String> {
    use base64::Engine as _;
    let img =
        image::load_from_memory(bytes).map_err(|e| format!("not an image qa-loop reads: {e}"))?;
    let img = if img.width() > MODEL_IMAGE_MAX_SIDE || img.height() > MODEL_IMAGE_MAX_SIDE {
        img.resize(
            MODEL_IMAGE_MAX_SIDE,
            MODEL_IMAGE_MAX_SIDE,
            image::imageops::FilterType::Triangle,
        )
    } else {
        img
    };
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png)
        .map_err(|e| format!("cannot encode the image: {e}"))?;
    Ok(ModelImage {
        media_type: "image/png".into(),
        data: base64::engine::general_purpose::STANDARD.encode(png.into_inner()),
        tokens: (u64::from(img.width()) * u64::from(img.height())).div_ceil(750),
    })
}

/// The run's MCP servers.
pub struct Hub {
    servers: Vec<Server>,
    /// Where images go (`<out-dir>/mcp`), and the repository root they are named from.
    artifacts: PathBuf,
    root: PathBuf,
    images: AtomicU32,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.status())
            .finish()
    }
}

/// The model-facing name of a server's tool: `mcp__<server>__<tool>`, cut to the 64 characters
/// every provider accepts, characters outside `[A-Za-z0-9_-]` replaced.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = format!("{PREFIX}{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    clean.chars().take(64).collect()
}

/// How stdio servers are started: the sandbox of the run and the scrubbed environment every
/// command from the change gets.
pub struct Launch<'a> {
    pub sandbox: &'a crate::sandbox::Sandbox,
    pub env: &'a [(String, String)],
}

/// `${NAME}` in a configured value, taken from qa-loop's environment (empty when unset).
fn expand(value: &str, env: &impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        match rest[i + 2..].find('}') {
            Some(j) => {
                out.push_str(&env(&rest[i + 2..i + 2 + j]).unwrap_or_default());
                rest = &rest[i + 2 + j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

impl Hub {
    /// No servers.
    pub fn empty() -> Hub {
        Hub {
            servers: Vec::new(),
            artifacts: PathBuf::new(),
            root: PathBuf::new(),
            images: AtomicU32::new(0),
        }
    }

    /// Starts every configured server; a server that fails is recorded as failed.
    /// `child_env` is the scrubbed environment test commands get; `env` reads qa-loop's own.
    /// A stdio server runs in `sandbox` like every command from the change (SPEC §10), unless
    /// its entry says `sandbox: false` (kept only from a config outside the checkout).
    pub async fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        root: &Path,
        artifacts: PathBuf,
        launch: Launch<'_>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Hub {
        // One after another: a handful of servers, each bounded by its startup timeout.
        let mut servers = Vec::new();
        for (name, cfg) in configs {
            let env_vars: Vec<(String, String)> = cfg
                .env
                .iter()
                .map(|(k, v)| (k.clone(), expand(v, &env)))
                .collect();
            let headers: Vec<(String, String)> = cfg
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), expand(v, &env)))
                .collect();
            servers.push(start_one(name, cfg, root, &launch, env_vars, headers).await);
        }
        Hub {
            servers,
            artifacts,
            root: root.to_path_buf(),
            images: AtomicU32::new(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The tools `agent` gets.
    pub fn specs(&self, agent: McpAgent) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .filter(|s| s.agents.contains(&agent) && matches!(s.state, State::Running(_)))
            .flat_map(|s| {
                s.tools.iter().map(|(name, t)| ToolSpec {
                    name: name.clone().into(),
                    description: format!(
                        "[MCP server `{}`] {}",
                        s.name,
                        t.description.as_deref().unwrap_or("")
                    )
                    .into(),
                    parameters: Value::Object((*t.input_schema).clone()),
                })
            })
            .collect()
    }

    /// Calls the tool with the model-facing `name` for `agent` (only tools offered to it).
    pub async fn call(&self, agent: McpAgent, name: &str, arguments: &Value) -> CallResult {
        let Some((server, tool)) = self
            .servers
            .iter()
            .filter(|s| s.agents.contains(&agent))
            .find_map(|s| s.tools.iter().find(|(n, _)| n == name).map(|(_, t)| (s, t)))
        else {
            return failure(format!("no MCP tool `{name}`"));
        };
        self.counted(server, &tool.name, arguments).await
    }

    /// A call, counted in the server's calls and failed calls.
    async fn counted(&self, server: &Server, tool: &str, arguments: &Value) -> CallResult {
        server.calls.fetch_add(1, Ordering::Relaxed);
        let result = self.call_on(server, tool, arguments).await;
        if result.is_error {
            server.failed_calls.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Calls `tool` of `server` for qa-loop itself (browser verification): the agents'
    /// allow-list does not apply.
    pub async fn call_tool(&self, server: &str, tool: &str, arguments: &Value) -> CallResult {
        let Some(s) = self.servers.iter().find(|s| s.name == server) else {
            return failure(format!("no MCP server `{server}` is configured"));
        };
        self.counted(s, tool, arguments).await
    }

    /// Why `server` cannot be used, if it cannot.
    pub fn unavailable(&self, server: &str) -> Option<String> {
        match self.status().into_iter().find(|s| s.name == server) {
            None => Some(format!("no MCP server `{server}` is configured")),
            Some(s) if s.state == "running" => None,
            Some(s) => Some(format!(
                "the MCP server `{server}` is not running ({})",
                s.state
            )),
        }
    }

    async fn call_on(&self, server: &Server, tool: &str, arguments: &Value) -> CallResult {
        let client = match live_client(server) {
            Ok(client) => client,
            Err(why) => return why,
        };
        let args = match object_arguments(arguments) {
            Ok(args) => args,
            Err(why) => return why,
        };
        let mut params = rmcp::model::CallToolRequestParams::new(tool.to_string());
        if let Some(a) = args {
            params = params.with_arguments(a);
        }
        let answer = tokio::time::timeout(server.call_timeout, client.call_tool(params)).await;
        let result = match answer {
            Err(_) => {
                return failure(format!(
                    "the MCP server `{}` did not answer within {}s",
                    server.name,
                    server.call_timeout.as_secs()
                ));
            }
            Ok(Err(e)) => {
                if matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    server.exited.store(true, Ordering::Relaxed);
                }
                return failure(format!(
                    "the MCP server `{}` failed: {e}{}",
                    server.name,
                    last_output(server)
                ));
            }
            Ok(Ok(r)) => r,
        };
        // Read as the wire format (content blocks), robust to the SDK's Rust types.
        let wire = serde_json::to_value(&result).unwrap_or(Value::Null);
        self.read_result(&server.name, &wire)
    }

    /// Reads a tool's result (wire format): its texts, its images saved (and the first few
    /// for the model), other content named as left out.
    fn read_result(&self, server: &str, wire: &Value) -> CallResult {
        let mut text = String::new();
        let mut images = Vec::new();
        let mut model_images = Vec::new();
        for block in wire
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    text.push_str(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    );
                    text.push('\n');
                }
                Some("image") => {
                    self.read_image(server, block, &mut text, &mut images, &mut model_images);
                }
                Some(other) => text.push_str(&format!("[{other} content left out]\n")),
                None => {}
            }
        }
        if let Some(s) = wire.get("structuredContent").filter(|v| !v.is_null())
            && text.trim().is_empty()
        {
            text = s.to_string();
        }
        CallResult {
            text: text.trim_end().to_string(),
            is_error: wire
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            images,
            model_images,
        }
    }

    /// Reads one image block: saves it, keeps it for the model while there is room, and notes
    /// in `text` what happened.
    fn read_image(
        &self,
        server: &str,
        block: &Value,
        text: &mut String,
        images: &mut Vec<String>,
        model_images: &mut Vec<ModelImage>,
    ) {
        let data = block
            .get("data")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mime = block
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("image/png");
        use base64::Engine as _;
        let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
            Ok(b) => b,
            Err(e) => {
                text.push_str(&format!("[an image could not be read: not base64: {e}]\n"));
                return;
            }
        };
        match self.save_image(server, &bytes, mime) {
            Ok(path) => {
                text.push_str(&format!("[image saved to {path}]\n"));
                images.push(path);
            }
            Err(e) => text.push_str(&format!("[an image could not be saved: {e}]\n")),
        }
        if model_images.len() < MODEL_IMAGES_PER_CALL {
            match for_model(&bytes) {
                Ok(m) => model_images.push(m),
                Err(e) => text.push_str(&format!("[the image is not shown: {e}]\n")),
            }
        }
    }

    fn save_image(&self, server: &str, bytes: &[u8], mime: &str) -> Result<String, String> {
        let ext = match mime {
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            _ => "png",
        };
        std::fs::create_dir_all(&self.artifacts).map_err(|e| e.to_string())?;
        let n = self.images.fetch_add(1, Ordering::Relaxed) + 1;
        let path = self.artifacts.join(format!("{server}-{n}.{ext}"));
        crate::nofollow::write_atomic(&path, bytes).map_err(|e| e.to_string())?;
        Ok(path
            .strip_prefix(&self.root)
            .unwrap_or(&path)
            .display()
            .to_string())
    }

    /// What the report shows.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|s| ServerStatus {
                name: s.name.clone(),
                state: match &s.state {
                    State::Running(c) if c.is_closed() || s.exited.load(Ordering::Relaxed) => {
                        "exited".into()
                    }
                    State::Running(_) => "running".into(),
                    State::Failed(why) => format!("failed: {why}"),
                },
                tools: s.tools.iter().map(|(n, _)| n.clone()).collect(),
                calls: s.calls.load(Ordering::Relaxed),
                failed_calls: s.failed_calls.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Stops every server: the session closed, then SIGTERM to a stdio server's group, a grace
    /// period, SIGKILL.
    pub async fn shutdown(&self) {
        for s in &self.servers {
            if let State::Running(client) = &s.state {
                client.cancellation_token().cancel();
            }
            if let Some(pg) = s.group {
                stop_group(pg).await;
            }
        }
    }
}

fn failure(text: String) -> CallResult {
    CallResult {
        text,
        is_error: true,
        images: Vec::new(),
        model_images: Vec::new(),
    }
}

/// The server's live connection, or the tool error saying why there is none.
fn live_client(server: &Server) -> Result<&RunningService<RoleClient, ()>, CallResult> {
    match &server.state {
        State::Running(c) if !c.is_closed() && !server.exited.load(Ordering::Relaxed) => Ok(c),
        State::Running(_) => Err(failure(format!(
            "the MCP server `{}` has exited{}",
            server.name,
            last_output(server)
        ))),
        State::Failed(why) => Err(failure(format!(
            "the MCP server `{}` is not running: {why}",
            server.name
        ))),
    }
}

/// A call's arguments as a JSON object (none for `null`; a JSON string is parsed), or the
/// tool error.
fn object_arguments(arguments: &Value) -> Result<Option<Map<String, Value>>, CallResult> {
    match arguments {
        Value::Object(m) => Ok(Some(m.clone())),
        Value::Null => Ok(None),
        // Some models send arguments as a JSON string.
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            _ => Err(failure("the arguments must be a JSON object".into())),
        },
        _ => Err(failure("the arguments must be a JSON object".into())),
    }
}

/// `; its last output:` and the server's stderr tail, or nothing when it wrote none.
fn last_output(server: &Server) -> String {
    let tail = stderr_tail(&server.stderr);
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its last output:\n{tail}")
    }
}

fn stderr_tail(buf: &Mutex<Vec<u8>>) -> String {
    let b = buf.lock().expect("stderr lock");
    crate::secrets::redact(String::from_utf8_lossy(&b).trim()).into_owned()
}

async fn stop_group(pg: Pid) {
    if killpg(pg, Signal::SIGTERM).is_err() {
        return;
    }
    let until = tokio::time::Instant::now() + STOP_GRACE;
    while tokio::time::Instant::now() < until {
        // Signal 0: is anyone of the group left?
        if killpg(pg, None).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = killpg(pg, Signal::SIGKILL);
}

async fn start_one(
    name: &str,
    cfg: &McpServerConfig,
    root: &Path,
    launch: &Launch<'_>,
    env_vars: Vec<(String, String)>,
    headers: Vec<(String, String)>,
) -> Server {
    let mut server = Server {
        name: name.to_string(),
        agents: cfg
            .agents
            .clone()
            .unwrap_or_else(|| vec![McpAgent::Reviewer]),
        call_timeout: cfg.call_timeout.map_or(CALL_TIMEOUT, |d| d.0),
        state: State::Failed("not started".into()),
        tools: Vec::new(),
        calls: AtomicU32::new(0),
        failed_calls: AtomicU32::new(0),
        exited: AtomicBool::new(false),
        group: None,
        stderr: Default::default(),
        stderr_reader: None,
    };
    let timeout = cfg.startup_timeout.map_or(STARTUP_TIMEOUT, |d| d.0);
    let started = tokio::time::timeout(
        timeout,
        connect(&mut server, cfg, root, launch, env_vars, headers),
    )
    .await;
    let client = match started {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => return fail(server, why).await,
        Err(_) => {
            return fail(
                server,
                format!("it did not start within {}s", timeout.as_secs()),
            )
            .await;
        }
    };
    let listed = tokio::time::timeout(timeout, client.list_all_tools()).await;
    let tools = match listed {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return fail(server, format!("cannot list its tools: {e}")).await,
        Err(_) => {
            return fail(
                server,
                format!("it did not list its tools within {}s", timeout.as_secs()),
            )
            .await;
        }
    };
    let allowed = |t: &str| cfg.tools.as_ref().is_none_or(|a| a.iter().any(|x| x == t));
    if let Some(list) = &cfg.tools {
        for t in list {
            if !tools.iter().any(|x| x.name == *t) {
                tracing::warn!("MCP server `{name}` has no tool `{t}` (in its `tools` list)");
            }
        }
    }
    server.tools = tools
        .into_iter()
        .filter(|t| allowed(&t.name))
        .map(|t| (tool_name(name, &t.name), t))
        .collect();
    tracing::info!(
        server = name,
        tools = server.tools.len(),
        "MCP server started"
    );
    server.state = State::Running(Box::new(client));
    server
}

async fn fail(mut server: Server, why: String) -> Server {
    if let Some(pg) = server.group.take() {
        stop_group(pg).await;
    }
    // What a crashed server wrote may still be in the pipe: read it to its end (bounded).
    if let Some(reader) = server.stderr_reader.take() {
        let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
    }
    let tail = stderr_tail(&server.stderr);
    let why = if tail.is_empty() {
        why
    } else {
        format!("{why}; its last output:\n{tail}")
    };
    tracing::warn!("MCP server `{}` is not available: {why}", server.name);
    server.state = State::Failed(why);
    server
}

async fn connect(
    server: &mut Server,
    cfg: &McpServerConfig,
    root: &Path,
    launch: &Launch<'_>,
    env_vars: Vec<(String, String)>,
    headers: Vec<(String, String)>,
) -> Result<RunningService<RoleClient, ()>, String> {
    if let Some(url) = &cfg.url {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let k = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("header `{k}`: {e}"))?;
            let v = reqwest::header::HeaderValue::from_str(&v)
                .map_err(|e| format!("header `{k}`: {e}"))?;
            map.insert(k, v);
        }
        let client = crate::llm::http::client_builder()
            .connect_timeout(Duration::from_secs(15))
            .default_headers(map)
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
        );
        return ().serve(transport).await.map_err(|e| format!("cannot connect to {url}: {e}"));
    }
    let program = cfg.command.as_deref().unwrap_or_default();
    let env: Vec<(String, String)> = launch.env.iter().cloned().chain(env_vars).collect();
    let argv: Vec<&str> = std::iter::once(program)
        .chain(cfg.args.iter().map(String::as_str))
        .collect();
    let unsandboxed;
    let sandbox = match cfg.sandbox {
        Some(false) => {
            unsandboxed = crate::sandbox::Sandbox::unconfined("`sandbox: false` in its entry");
            tracing::warn!(
                "MCP server `{}` runs outside the sandbox (`sandbox: false`)",
                server.name
            );
            &unsandboxed
        }
        _ => launch.sandbox,
    };
    let (mut cmd, frame) = sandbox.serving(&argv, root, &env);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    server.group = child.id().map(|id| Pid::from_raw(id as i32));
    let mut stdin = child.stdin.take().ok_or("no standard input")?;
    let stdout = child.stdout.take().ok_or("no standard output")?;
    let stderr = child.stderr.take();
    // Reaped as soon as it exits (a stop waits for its group to be gone); killed when the
    // runtime ends.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    if let Some(frame) = frame {
        use tokio::io::AsyncWriteExt;
        stdin
            .write_all(&frame)
            .await
            .map_err(|e| format!("cannot start `{program}` in the sandbox: {e}"))?;
    }
    if let Some(mut err) = stderr {
        let buf = server.stderr.clone();
        server.stderr_reader = Some(tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut chunk = [0u8; 4096];
            while let Ok(n) = err.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut b = buf.lock().expect("stderr lock");
                b.extend_from_slice(&chunk[..n]);
                if b.len() > STDERR_TAIL {
                    let cut = b.len() - STDERR_TAIL;
                    b.drain(..cut);
                }
            }
        }));
    }
    ().serve((stdout, stdin))
        .await
        .map_err(|e| format!("`{program}` did not complete the MCP handshake: {e}"))
}

#[cfg(test)]
mod tests;
