//! The raw layers read from files: the config file (YAML or JSON) and the plan's
//! `verification_strategy`. Every field is optional here; [`super::settings`] resolves them.
//!
//! Unknown fields are rejected everywhere so a typo is an error with a position, not a silently
//! ignored setting.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// How much automated verification a change needs (SPEC §3.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Nothing automated: review only.
    Trivial,
    /// Unit tests, if present.
    Low,
    /// Unit and integration tests.
    Medium,
    /// Every suite and every coverage minimum.
    High,
    /// Everything of `high`, e2e tests, and a human sign-off (`/qa approve`).
    Critical,
}

impl RiskLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Trivial => "trivial",
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
            RiskLevel::Critical => "critical",
        }
    }
}

/// What qa-loop may do to the code.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Review only; never writes code.
    Review,
    /// Review, fix and (on GitHub) push fix commits.
    Fix,
    /// Review and fix, but offer the fixes as suggestions instead of pushing.
    Suggest,
}

/// Whether a test that passed only on a re-run blocks (`flaky:`, SPEC §3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlakyPolicy {
    /// Reported (counted, listed), never blocking and never handed to the fixer.
    #[default]
    Report,
    /// A flaky test fails its suite's gate.
    Fail,
}

/// How the change's code is confined (`sandbox:`, `--sandbox`, input `sandbox`; SPEC §10).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// A sandbox where one can be made (root, sudo, user namespaces); else run unsandboxed and
    /// say so in the log, the report and the check run.
    Auto,
    /// Refuse to run the change's code without a sandbox.
    Required,
    /// No sandbox (honoured from a flag, the environment, an action input or a config file
    /// outside the checkout only).
    Off,
}

/// `sandbox:` in the config file: a mode (`sandbox: required`) or `{mode, network}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    pub mode: Option<SandboxMode>,
    /// `network: off` runs the change's code with loopback only.
    pub network: Option<bool>,
}

impl<'de> Deserialize<'de> for SandboxConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = SandboxConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`auto`, `required`, `off`, or a map with `mode` and `network`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let mode =
                    SandboxMode::deserialize(serde::de::value::StrDeserializer::<E>::new(v))?;
                Ok(SandboxConfig {
                    mode: Some(mode),
                    network: None,
                })
            }
            /// YAML 1.1 readers take a bare `off` for false (and `on` for true).
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(SandboxConfig {
                    mode: Some(if v {
                        SandboxMode::Auto
                    } else {
                        SandboxMode::Off
                    }),
                    network: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = SandboxConfig::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "mode" => out.mode = map.next_value::<SandboxConfig>()?.mode,
                        "network" => out.network = Some(map.next_value::<OnOff>()?.0),
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &["mode", "network"],
                            ));
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// `on`/`off` or a boolean.
struct OnOff(bool);

impl<'de> Deserialize<'de> for OnOff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = OnOff;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`on`, `off`, true or false")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<OnOff, E> {
                Ok(OnOff(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<OnOff, E> {
                match v {
                    "on" | "true" => Ok(OnOff(true)),
                    "off" | "false" => Ok(OnOff(false)),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for SandboxConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SandboxConfig".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "How the change's code is confined (docs/security.md): `auto` (default), `required`, `off` (ignored in a config file inside the checkout), or `{mode, network}` where `network: off` leaves the code loopback only.",
            "anyOf": [
                { "type": "string", "enum": ["auto", "required", "off"] },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "mode": { "type": "string", "enum": ["auto", "required", "off"] },
                        "network": { "anyOf": [ { "type": "boolean" }, { "type": "string", "enum": ["on", "off"] } ] }
                    }
                }
            ]
        })
    }
}

/// Which model service answers.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, clap::ValueEnum, serde::Serialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    Anthropic,
    Openai,
    OpenaiCompatible,
    /// Claude through Amazon Bedrock (the Messages API; SigV4 or a Bedrock API key).
    Bedrock,
    /// Claude through Google Vertex AI (the Messages API; Google credentials).
    Vertex,
    /// Claude on Microsoft Foundry (the Messages API; a Foundry key or an Entra ID token).
    Foundry,
    /// Answers from a recorded session file (tests, the demo).
    Replay,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
            ProviderKind::OpenaiCompatible => "openai-compatible",
            ProviderKind::Bedrock => "bedrock",
            ProviderKind::Vertex => "vertex",
            ProviderKind::Foundry => "foundry",
            ProviderKind::Replay => "replay",
        }
    }
}

/// A duration written as `90s`, `20m`, `1h30m`, or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationSetting(pub Duration);

impl<'de> Deserialize<'de> for DurationSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Seconds(u64),
            Text(String),
        }
        // `untagged` is confined to this two-way scalar choice; the error below names the field's
        // expected form.
        match Raw::deserialize(deserializer) {
            Ok(Raw::Seconds(0)) => Err(serde::de::Error::custom(
                "a duration must be greater than zero",
            )),
            Ok(Raw::Seconds(s)) => Ok(DurationSetting(Duration::from_secs(s))),
            Ok(Raw::Text(t)) => parse_duration(&t)
                .map(DurationSetting)
                .map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "expected a duration such as `90s`, `20m`, `1h` or a number of seconds",
            )),
        }
    }
}

impl serde::Serialize for DurationSetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl JsonSchema for DurationSetting {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration such as `90s`, `20m`, `1h30m`, or a number of seconds.",
            "anyOf": [
                { "type": "string", "pattern": "^\\s*[0-9]+\\s*[a-zA-Z]+(\\s*[0-9]+\\s*[a-zA-Z]+)*\\s*$" },
                { "type": "integer", "minimum": 1 }
            ]
        })
    }
}

/// Parses `90s`, `20m`, `1h30m`; a duration of zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    // A bare number is seconds, as in the config file.
    if let Ok(secs) = text.parse::<u64>() {
        return match secs {
            0 => Err(format!(
                "invalid duration `{text}`: must be greater than zero"
            )),
            s => Ok(Duration::from_secs(s)),
        };
    }
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("invalid duration `{text}`: {e} (use e.g. `90s`, `20m`, `1h`)"))?;
    if d.is_zero() {
        return Err(format!(
            "invalid duration `{text}`: must be greater than zero"
        ));
    }
    Ok(d)
}

/// One test suite of the verification strategy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    /// Whether the suite is a gate; when absent the risk level decides.
    #[serde(default)]
    pub required: Option<bool>,
    /// Shell commands (run with `sh -c`); a non-zero exit fails the suite.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Globs of JUnit XML files the commands write.
    #[serde(default)]
    pub junit: Vec<String>,
    /// Globs of coverage reports (lcov, Cobertura, JaCoCo, Go cover profile).
    #[serde(default)]
    pub coverage: Vec<String>,
    /// Minimum overall line coverage in percent.
    #[serde(default, deserialize_with = "de_percent")]
    #[schemars(range(min = 0, max = 100))]
    pub minimum_coverage: Option<f64>,
    /// Named user flows covered by the suite (documentation for the reviewer).
    #[serde(default)]
    pub flows: Vec<String>,
    /// Per-command timeout for this suite (overrides the strategy's `timeout`).
    #[serde(default)]
    pub timeout: Option<DurationSetting>,
    /// Globs of the files the suite tests (`web/**`, `api/`): when the change touches none of
    /// them the suite is skipped, with the reason (monorepos).
    #[serde(default, deserialize_with = "de_globs")]
    pub paths: Vec<String>,
    /// Globs of files that never make the suite run (`**/*.md`).
    #[serde(default, deserialize_with = "de_globs")]
    pub paths_ignore: Vec<String>,
    /// Run whatever the change touches (default false).
    #[serde(default)]
    pub always: Option<bool>,
    /// A suite that executes no test passes (default false: it fails with "ran no tests").
    #[serde(default)]
    pub allow_no_tests: Option<bool>,
    /// Where the suite's commands run and where its `junit`/`coverage` globs and the relative
    /// paths inside its reports start (a monorepo package: `web`), relative to the repository.
    #[serde(default, deserialize_with = "de_workdir")]
    pub working_directory: Option<String>,
    /// Where each command came from when it is not the config file (the plan's key paths).
    #[serde(skip)]
    pub origins: Vec<String>,
}

/// A path glob as written (`web/` means `web/**`), checked.
pub fn glob_pattern(glob: &str) -> Result<glob::Pattern, String> {
    let g = glob.trim().trim_start_matches("./");
    let g = if g.ends_with('/') {
        format!("{g}**")
    } else {
        g.to_string()
    };
    glob::Pattern::new(&g).map_err(|e| format!("`{glob}` is not a glob: {e}"))
}

/// A directory inside the repository, normalised (`./web/` → `web`; `.` → none).
fn de_workdir<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let Some(dir) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    for c in std::path::Path::new(dir.trim()).components() {
        match c {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            _ => {
                return Err(serde::de::Error::custom(format!(
                    "working_directory `{dir}` must be a directory inside the repository (relative, no `..`)"
                )));
            }
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

fn de_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let globs = Vec::<String>::deserialize(d)?;
    for g in &globs {
        glob_pattern(g).map_err(serde::de::Error::custom)?;
    }
    Ok(globs)
}

/// The built-in checks run on the lines a change adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinCheck {
    /// `console.log(`, `debugger`, `print(`, `pdb.set_trace()`, `breakpoint()`, `dbg!(`,
    /// `binding.pry`, `var_dump(`, `System.out.println(` … by file extension.
    DebugStatement,
    /// `<<<<<<< ` and `>>>>>>> ` lines left by a merge.
    ConflictMarker,
    /// New `TODO`, `FIXME`, `XXX`, `HACK` notes.
    Todo,
    /// `-----BEGIN … PRIVATE KEY-----`.
    PrivateKey,
    /// Cloud and service credentials: AWS access key ids, GitHub, Slack, Google, Stripe,
    /// OpenAI and Anthropic key shapes.
    CloudKey,
}

impl BuiltinCheck {
    pub const ALL: [BuiltinCheck; 5] = [
        BuiltinCheck::DebugStatement,
        BuiltinCheck::ConflictMarker,
        BuiltinCheck::Todo,
        BuiltinCheck::PrivateKey,
        BuiltinCheck::CloudKey,
    ];

    pub fn id(self) -> &'static str {
        match self {
            BuiltinCheck::DebugStatement => "debug_statement",
            BuiltinCheck::ConflictMarker => "conflict_marker",
            BuiltinCheck::Todo => "todo",
            BuiltinCheck::PrivateKey => "private_key",
            BuiltinCheck::CloudKey => "cloud_key",
        }
    }

    /// Blocking unless `pattern_checks.blocking` says otherwise.
    pub fn blocking_by_default(self) -> bool {
        matches!(
            self,
            BuiltinCheck::ConflictMarker | BuiltinCheck::PrivateKey | BuiltinCheck::CloudKey
        )
    }
}

/// The issue type a custom pattern's findings get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    CodeQuality,
    Security,
}

/// A regular expression, checked when the config is read.
#[derive(Debug, Clone, PartialEq, JsonSchema, serde::Serialize)]
#[serde(transparent)]
pub struct RegexSetting(pub String);

impl<'de> Deserialize<'de> for RegexSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        regex::Regex::new(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid regular expression: {}",
                e.to_string().lines().last().unwrap_or_default().trim()
            ))
        })?;
        Ok(RegexSetting(text))
    }
}

/// A project-specific pattern to flag on added lines.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CustomPattern {
    /// A short id shown with each finding.
    pub id: String,
    /// The regular expression (Rust `regex` syntax) matched against each added line.
    pub pattern: RegexSetting,
    /// What the finding says.
    pub message: String,
    /// `code_quality` (default) or `security`.
    #[serde(default, rename = "type")]
    pub kind: Option<PatternKind>,
    /// Globs of the files checked (default: every file).
    #[serde(default)]
    pub files: Vec<String>,
    /// Whether a finding fails the `patterns` gate (default false).
    #[serde(default)]
    pub blocking: Option<bool>,
}

/// Checks run on the lines the change adds (against the diff base).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PatternChecksConfig {
    /// Turn every pattern check off (default true: on).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Built-in checks to turn off.
    #[serde(default)]
    pub disable: Vec<BuiltinCheck>,
    /// Built-in checks whose findings fail the required `patterns` gate (default:
    /// `conflict_marker`, `private_key`, `cloud_key`). The others are advisory.
    #[serde(default)]
    pub blocking: Option<Vec<BuiltinCheck>>,
    /// Globs of files never checked (fixtures with fake keys, vendored code).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Project-specific patterns.
    #[serde(default)]
    pub custom: Vec<CustomPattern>,
}

/// How qa-loop answers an agent's approval prompt in a conversation scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    Manual,
    AutoApprove,
    AutoDeny,
}

/// One conversation scenario (SPEC §8).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// Unique among the scenarios; names the JUnit test case and the gate `conversation:<name>`.
    pub name: String,
    /// The first user message sent to the agent.
    pub query: String,
    /// Facts shown to the judge only, never to the agent under test.
    #[serde(default)]
    pub context: Option<String>,
    /// What the agent must achieve; the judge decides against it.
    pub pass_criteria: String,
    /// Soft turn limit (default 5): past it the judge is warned; at twice it the scenario fails.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Soft time limit (default 300): past it the judge is warned; at twice it the scenario fails.
    #[serde(default)]
    pub max_time_seconds: Option<u64>,
    /// How an approval prompt of the agent is answered (default `manual`: a human must look).
    #[serde(default)]
    pub approval_mode: Option<ApprovalMode>,
    /// Whether a failure blocks approval (default `true`).
    #[serde(default)]
    pub required: Option<bool>,
}

/// The keys of `conversations:` as written; checked across fields into [`ConversationsConfig`].
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationsFile {
    /// Command that starts the agent under test (own process group, stopped at the end).
    #[serde(default)]
    pub start: Option<String>,
    /// URL polled (GET) until it answers 2xx, before the first scenario.
    #[serde(default)]
    pub ready_url: Option<String>,
    /// How long to wait for `ready_url` (default 60s).
    #[serde(default)]
    pub ready_timeout: Option<DurationSetting>,
    /// The URL each user message is POSTed to: an OpenAI chat-completions endpoint, or any JSON
    /// endpoint with `request_template`.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// A JSON request body with `{{text}}` and `{{session}}` placeholders (each replaced by a
    /// JSON string), instead of the chat-completions body.
    #[serde(default)]
    pub request_template: Option<String>,
    /// With `request_template`: dotted path of the reply text in the response JSON
    /// (`reply`, `data.messages.0.text`).
    #[serde(default)]
    pub response_path: Option<String>,
    /// Reply text meaning "the agent waits for an approval".
    #[serde(default)]
    pub approval_marker: Option<String>,
    #[serde(default)]
    pub scenarios: Vec<ScenarioConfig>,
}

/// Conversation scenarios for projects that are chat agents (SPEC §8), checked: an endpoint when
/// there are scenarios, a template with `{{text}}` that renders to JSON and a `response_path`,
/// URLs that parse, unique scenario names, limits of at least 1, a marker for approval modes.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(try_from = "ConversationsFile")]
#[schemars(with = "ConversationsFile")]
pub struct ConversationsConfig {
    pub start: Option<String>,
    pub ready_url: Option<String>,
    pub ready_timeout: Option<DurationSetting>,
    pub endpoint: Option<String>,
    pub request_template: Option<String>,
    pub response_path: Option<String>,
    pub approval_marker: Option<String>,
    pub scenarios: Vec<ScenarioConfig>,
}

/// The longest `max_time_seconds` and `ready_timeout`: a day.
const MAX_SCENARIO_SECONDS: u64 = 24 * 3600;

impl TryFrom<ConversationsFile> for ConversationsConfig {
    type Error = String;

    fn try_from(f: ConversationsFile) -> Result<Self, String> {
        let url = |key: &str, value: &Option<String>| -> Result<(), String> {
            match value {
                Some(u) => match reqwest::Url::parse(u) {
                    Ok(p) if matches!(p.scheme(), "http" | "https") => Ok(()),
                    Ok(_) => Err(format!("conversations.{key}: `{u}` is not an http(s) URL")),
                    Err(e) => Err(format!("conversations.{key}: `{u}` is not a URL: {e}")),
                },
                None => Ok(()),
            }
        };
        url("endpoint", &f.endpoint)?;
        if f.ready_timeout
            .is_some_and(|d| d.0.as_secs() > MAX_SCENARIO_SECONDS)
        {
            return Err("conversations.ready_timeout: must be at most 24h".into());
        }
        url("ready_url", &f.ready_url)?;
        if !f.scenarios.is_empty() && f.endpoint.is_none() {
            return Err("conversations: `endpoint` is required when `scenarios` are listed (the URL each user message is POSTed to)".into());
        }
        if let Some(t) = &f.request_template {
            if !t.contains("{{text}}") {
                return Err("conversations.request_template: has no `{{text}}` placeholder for the user message".into());
            }
            let sample = t
                .replace("{{text}}", "\"hello\"")
                .replace("{{session}}", "\"s-1\"");
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&sample) {
                let what = e.to_string();
                let what = what.split(" at line ").next().unwrap_or_default();
                return Err(format!(
                    "conversations.request_template: is not JSON once `{{{{text}}}}` and `{{{{session}}}}` are replaced by JSON strings ({what}); write the placeholders without quotes, e.g. {{\"message\": {{{{text}}}}}}"
                ));
            }
            if f.response_path
                .as_deref()
                .is_none_or(|p| p.trim().is_empty())
            {
                return Err("conversations.response_path: required with `request_template` (the dotted path of the reply text, e.g. `reply`)".into());
            }
        } else if f.response_path.is_some() {
            return Err("conversations.response_path: only used with `request_template` (a chat-completions endpoint answers in `choices.0.message.content`)".into());
        }
        if f.approval_marker
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            return Err("conversations.approval_marker: must not be empty".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, s) in f.scenarios.iter().enumerate() {
            let at = format!("conversations.scenarios[{i}]");
            if s.name.trim().is_empty() {
                return Err(format!("{at}.name: must not be empty"));
            }
            if !seen.insert(s.name.trim()) {
                return Err(format!(
                    "{at}.name: `{}` is used by an earlier scenario; names must be unique",
                    s.name
                ));
            }
            if s.query.trim().is_empty() {
                return Err(format!("{at}.query: must not be empty"));
            }
            if s.pass_criteria.trim().is_empty() {
                return Err(format!("{at}.pass_criteria: must not be empty"));
            }
            if s.max_turns == Some(0) {
                return Err(format!("{at}.max_turns: must be at least 1"));
            }
            if s.max_time_seconds
                .is_some_and(|t| t == 0 || t > MAX_SCENARIO_SECONDS)
            {
                return Err(format!(
                    "{at}.max_time_seconds: must be from 1 to {MAX_SCENARIO_SECONDS} (24 hours)"
                ));
            }
            if s.max_turns.is_some_and(|t| t > 1000) {
                return Err(format!("{at}.max_turns: must be from 1 to 1000"));
            }
            if s.approval_mode.is_some() && f.approval_marker.is_none() {
                return Err(format!(
                    "{at}.approval_mode: set, but `conversations.approval_marker` is not: qa-loop cannot tell an approval prompt from a reply"
                ));
            }
        }
        Ok(ConversationsConfig {
            start: f.start,
            ready_url: f.ready_url,
            ready_timeout: f.ready_timeout,
            endpoint: f.endpoint,
            request_template: f.request_template,
            response_path: f.response_path,
            approval_marker: f.approval_marker,
            scenarios: f.scenarios,
        })
    }
}

/// The verification strategy as read from the plan's `verification_strategy` key (another
/// tool's file: keys qa-loop does not know are warned about by `config::plan`, not refused).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct StrategyLayer {
    #[serde(default)]
    pub risk_level: Option<RiskLevel>,
    #[serde(default)]
    pub acceptance_criteria: Option<Vec<String>>,
    #[serde(default)]
    pub unit_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub integration_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub e2e_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub conversations: Option<ConversationsConfig>,
    /// Per-command timeout (default 20m).
    #[serde(default)]
    pub timeout: Option<DurationSetting>,
    /// Run independent suites concurrently.
    #[serde(default)]
    pub parallel: Option<bool>,
    /// Whether a test that passed only on a re-run blocks: `report` (default) or `fail`.
    #[serde(default)]
    pub flaky: Option<FlakyPolicy>,
    /// How often failing tests are re-run before they count as defects (default 1; 0: never).
    #[serde(default, deserialize_with = "de_reruns")]
    #[schemars(range(max = 5))]
    pub flaky_reruns: Option<u32>,
    /// Checks on the lines the change adds.
    #[serde(default)]
    pub pattern_checks: Option<PatternChecksConfig>,
    #[serde(default, deserialize_with = "de_browser")]
    pub browser_verification: Option<BrowserVerificationConfig>,
}

impl StrategyLayer {
    /// Field-wise merge: `self` wins where it sets a field.
    pub fn or(self, lower: StrategyLayer) -> StrategyLayer {
        StrategyLayer {
            risk_level: self.risk_level.or(lower.risk_level),
            acceptance_criteria: self.acceptance_criteria.or(lower.acceptance_criteria),
            unit_tests: self.unit_tests.or(lower.unit_tests),
            integration_tests: self.integration_tests.or(lower.integration_tests),
            e2e_tests: self.e2e_tests.or(lower.e2e_tests),
            conversations: self.conversations.or(lower.conversations),
            timeout: self.timeout.or(lower.timeout),
            parallel: self.parallel.or(lower.parallel),
            flaky: self.flaky.or(lower.flaky),
            flaky_reruns: self.flaky_reruns.or(lower.flaky_reruns),
            pattern_checks: self.pattern_checks.or(lower.pattern_checks),
            browser_verification: match (self.browser_verification, lower.browser_verification) {
                (Some(a), Some(b)) => Some(a.or(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// `browser_verification:` (SPEC §12): pages loaded in a headless browser through an MCP server.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserVerificationConfig {
    /// A page that fails a check blocks approval (default false: advisory).
    #[serde(default)]
    pub required: Option<bool>,
    /// The entry of `mcp_servers` that drives the browser (default `playwright`).
    #[serde(default)]
    pub server: Option<String>,
    /// Command that starts the app (own process group, stopped at the end); none when the app
    /// is already running (started by the workflow, or an Electron app attached over CDP).
    #[serde(default)]
    pub start: Option<String>,
    /// URL that answers 2xx once the app is ready.
    #[serde(default)]
    pub ready_url: Option<String>,
    /// How long to wait for `ready_url` (default 60s).
    #[serde(default)]
    pub ready_timeout: Option<DurationSetting>,
    /// The pages to verify: a URL, or a path (`/settings`) on `ready_url`'s origin.
    #[serde(default)]
    pub pages: Vec<BrowserPage>,
}

/// One page of `browser_verification.pages`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserPage {
    pub url: String,
    /// `renders`, `no-console-errors`, or free text the reviewer judges from the page's
    /// snapshot and screenshot (default: `renders`, `no-console-errors`).
    #[serde(default)]
    pub checks: Vec<String>,
}

/// The server `browser_verification` uses unless it names another.
pub const DEFAULT_BROWSER_SERVER: &str = "playwright";

impl BrowserVerificationConfig {
    /// Field-wise merge: `self` wins where it sets a field; pages come from one side.
    pub fn or(self, lower: BrowserVerificationConfig) -> BrowserVerificationConfig {
        BrowserVerificationConfig {
            required: self.required.or(lower.required),
            server: self.server.or(lower.server),
            start: self.start.or(lower.start),
            ready_url: self.ready_url.or(lower.ready_url),
            ready_timeout: self.ready_timeout.or(lower.ready_timeout),
            pages: if self.pages.is_empty() {
                lower.pages
            } else {
                self.pages
            },
        }
    }

    /// The MCP server's name.
    pub fn server(&self) -> &str {
        self.server.as_deref().unwrap_or(DEFAULT_BROWSER_SERVER)
    }

    /// What is wrong with the section, if anything.
    pub fn problem(&self) -> Option<String> {
        for (key, value) in [("ready_url", &self.ready_url)] {
            if let Some(u) = value {
                match reqwest::Url::parse(u) {
                    Ok(p) if matches!(p.scheme(), "http" | "https") => {}
                    _ => return Some(format!("`{key}` `{u}` is not an http(s) URL")),
                }
            }
        }
        for (i, page) in self.pages.iter().enumerate() {
            if let Err(e) = self.page_url(&page.url) {
                return Some(format!("pages[{i}]: {e}"));
            }
        }
        None
    }

    /// A page's absolute URL (a path is taken on `ready_url`'s origin).
    pub fn page_url(&self, url: &str) -> Result<String, String> {
        if url.starts_with('/') {
            let Some(base) = self
                .ready_url
                .as_deref()
                .and_then(|u| reqwest::Url::parse(u).ok())
            else {
                return Err(format!(
                    "`{url}` is a path; give a full URL or set `ready_url` (the origin it is taken on)"
                ));
            };
            return base
                .join(url)
                .map(|u| u.to_string())
                .map_err(|e| format!("`{url}`: {e}"));
        }
        match reqwest::Url::parse(url) {
            Ok(p) if matches!(p.scheme(), "http" | "https" | "file") => Ok(url.to_string()),
            _ => Err(format!("`{url}` is not an http(s) URL or a path")),
        }
    }
}

/// The check that the page loads with a non-error status and shows something.
pub const RENDERS: &str = "renders";
/// The check that the page logs no console errors.
pub const NO_CONSOLE_ERRORS: &str = "no-console-errors";
/// Whether `check` is one qa-loop decides itself (`renders`, `no-console-errors`).
pub fn is_builtin_check(check: &str) -> bool {
    builtin_check(check).is_some()
}

/// The canonical name of a check qa-loop decides itself, in any of its spellings.
pub fn builtin_check(check: &str) -> Option<&'static str> {
    let c: String = check
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '_' || c == ' ' { '-' } else { c })
        .collect();
    match c.as_str() {
        "renders" | "render" | "loads" => Some(RENDERS),
        "no-console-errors" | "no-console-error" | "no-errors-in-console" => {
            Some(NO_CONSOLE_ERRORS)
        }
        _ => None,
    }
}

fn de_browser<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BrowserVerificationConfig>, D::Error> {
    let b = Option::<BrowserVerificationConfig>::deserialize(d)?;
    if let Some(problem) = b.as_ref().and_then(BrowserVerificationConfig::problem) {
        return Err(serde::de::Error::custom(problem));
    }
    Ok(b)
}

/// The config file: the verification strategy at the top level (SPEC §3.1) plus the run
/// settings, under the snake_case names of their flags.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "qa-loop configuration",
    description = "Configuration of qa-loop (`.github/qa-loop.yml`). See docs/configuration.md."
)]
pub struct ConfigFile {
    /// The JSON Schema this file follows (for editors; ignored).
    #[serde(default, rename = "$schema")]
    pub schema: Option<String>,

    // ---- verification strategy (same fields as StrategyLayer) ----
    /// `trivial | low | medium | high | critical` (default `medium`).
    #[serde(default)]
    pub risk_level: Option<RiskLevel>,
    /// Acceptance criteria, merged with the spec's, the plan's and the PR's.
    #[serde(default)]
    pub acceptance_criteria: Option<Vec<String>>,
    #[serde(default)]
    pub unit_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub integration_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub e2e_tests: Option<SuiteConfig>,
    #[serde(default)]
    pub conversations: Option<ConversationsConfig>,
    /// Pages verified in a headless browser through an MCP server (docs/browser-verification.md).
    #[serde(default, deserialize_with = "de_browser")]
    pub browser_verification: Option<BrowserVerificationConfig>,
    /// Per-command timeout (default 20m).
    #[serde(default)]
    pub timeout: Option<DurationSetting>,
    /// Run independent suites concurrently.
    #[serde(default)]
    pub parallel: Option<bool>,
    /// Whether a test that passed only on a re-run (a runner's retry) blocks: `report`
    /// (default: listed, never blocking, never handed to the fixer) or `fail`.
    #[serde(default)]
    pub flaky: Option<FlakyPolicy>,
    /// How often the tests a suite's JUnit reports show failing are re-run (with the runner's
    /// own selection where qa-loop knows it) before they count as defects: a test that then
    /// passes is flaky. Default 1; 0 turns re-runs off.
    #[serde(default, deserialize_with = "de_reruns")]
    #[schemars(range(max = 5))]
    pub flaky_reruns: Option<u32>,
    /// Checks on the lines the change adds (debug statements, conflict markers, TODOs, keys).
    #[serde(default)]
    pub pattern_checks: Option<PatternChecksConfig>,
    /// How the change's code is confined: `auto` (default), `required`, `off`, or
    /// `{mode, network: off}` (SPEC §10, docs/security.md).
    #[serde(default)]
    pub sandbox: Option<SandboxConfig>,

    // ---- run settings (flags; CLI and env win) ----
    /// Path of an `implementation_plan.json` (`--plan`).
    #[serde(default)]
    pub plan: Option<String>,
    /// Path of a `spec.md` (`--spec`).
    #[serde(default)]
    pub spec: Option<String>,
    /// Output directory (`--out-dir`, default `.qa-loop`).
    #[serde(default)]
    pub out_dir: Option<String>,
    /// What the change is compared with (`--base`): a branch, tag or commit; the change is
    /// `merge-base(base, HEAD)` to the working tree. Default: the pull request's base branch on
    /// GitHub, else `HEAD` (uncommitted work).
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub mode: Option<Mode>,
    #[serde(default, deserialize_with = "de_positive")]
    #[schemars(range(min = 1))]
    pub max_iterations: Option<u32>,
    #[serde(default, deserialize_with = "de_positive")]
    #[schemars(range(min = 1))]
    pub max_consecutive_errors: Option<u32>,
    #[serde(default, deserialize_with = "de_recurring")]
    #[schemars(range(min = 2))]
    pub recurring_threshold: Option<u32>,
    #[serde(default, deserialize_with = "de_unit_interval")]
    #[schemars(range(min = 0, max = 1))]
    pub similarity_threshold: Option<f64>,
    #[serde(default, deserialize_with = "de_score")]
    #[schemars(range(min = 0, max = 100))]
    pub min_score: Option<u8>,
    /// Issues below this severity are reported as suggestions — in the report, the check run
    /// (notice level), SARIF and JUnit — never fixed, never blocking (default `low`: every issue
    /// counts). Gate issues are never below it.
    #[serde(default)]
    pub fix_severity: Option<crate::model::Severity>,
    #[serde(default)]
    pub provider: Option<ProviderKind>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub reviewer_model: Option<String>,
    #[serde(default)]
    pub fixer_model: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    /// The cloud region of `provider: bedrock` (default `AWS_REGION` / `AWS_DEFAULT_REGION`) or
    /// `vertex` (default `CLOUD_ML_REGION`; `global` allowed).
    #[serde(default)]
    pub region: Option<String>,
    /// The Google Cloud project of `provider: vertex` (default `ANTHROPIC_VERTEX_PROJECT_ID`,
    /// `GOOGLE_CLOUD_PROJECT`, or the credentials' project).
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default, deserialize_with = "de_non_negative")]
    #[schemars(range(min = 0))]
    pub max_cost_usd: Option<f64>,
    #[serde(default, deserialize_with = "de_positive_u64")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Thinking of the reviewer: a budget in tokens (at least 1024) or an effort level (`low`,
    /// `medium`, `high`, `xhigh`, `max`), sent the way the model takes it (Anthropic budget or
    /// adaptive effort, OpenAI reasoning effort). Default: none (the model's default).
    #[serde(default)]
    pub reviewer_thinking: Option<crate::llm::Thinking>,
    /// Thinking of the fixer (as `reviewer_thinking`).
    #[serde(default)]
    pub fixer_thinking: Option<crate::llm::Thinking>,
    /// Thinking of the conversation judge (as `reviewer_thinking`; default: the reviewer's).
    #[serde(default)]
    pub judge_thinking: Option<crate::llm::Thinking>,
    /// When a run ends escalated, at max iterations or below the minimum score, one model call
    /// (the reviewer's model) writes a failure analysis at the top of `QA_HUMAN_ESCALATION.md`
    /// and the escalation issue (default true; false keeps the factual report only).
    #[serde(default)]
    pub failure_analysis: Option<bool>,
    /// Tool calls run per model answer; the rest are answered with an error (default 25).
    #[serde(default, deserialize_with = "de_positive")]
    #[schemars(range(min = 1))]
    pub max_tool_calls_per_turn: Option<u32>,
    /// Tool calls run per iteration, reviewer and fixer together (default 250).
    #[serde(default, deserialize_with = "de_positive")]
    #[schemars(range(min = 1))]
    pub max_tool_calls_per_iteration: Option<u32>,
    /// Time limit of the whole run (`--timeout`), e.g. `45m`.
    #[serde(default)]
    pub run_timeout: Option<DurationSetting>,
    /// Let the fixer edit `.github/workflows/` (default false).
    #[serde(default)]
    pub allow_workflow_edits: Option<bool>,
    /// Replay session file for `provider: replay`.
    #[serde(default)]
    pub replay_session: Option<String>,
    /// Time limit of one model request (default 5m).
    #[serde(default)]
    pub model_timeout: Option<DurationSetting>,
    /// Retries of a model request on 429, 5xx, timeouts and connection errors (default 4).
    #[serde(default)]
    pub model_retries: Option<u32>,
    /// First wait before a retry, doubled on each retry with jitter (default 2s); a server's
    /// `retry-after` is honoured when longer.
    #[serde(default)]
    pub model_retry_backoff: Option<DurationSetting>,
    /// The model registry's entries by model id (or id prefix: `llama3.1` covers
    /// `llama3.1:8b`): API, context window, output limit, thinking style and prices (USD per
    /// million tokens); given fields win over the built-in table's. A price is needed for
    /// `max_cost_usd` with a model the table does not know.
    #[serde(default, deserialize_with = "de_models")]
    pub models: Option<std::collections::BTreeMap<String, crate::llm::registry::ModelEntry>>,
    /// MCP servers whose tools the agents get, as `mcp__<server>__<tool>` (SPEC §12). Never
    /// started in an untrusted run when this file is part of the checkout.
    #[serde(default, deserialize_with = "de_mcp_servers")]
    pub mcp_servers: Option<std::collections::BTreeMap<String, McpServerConfig>>,
    /// Where run events are sent: Linear, Slack, Telegram, a webhook (docs/notifications.md).
    #[serde(default, deserialize_with = "de_notify")]
    pub notify: Option<NotifyConfig>,
    /// Deprecated (read, with a warning): the earlier form of `models:` — prices and context
    /// windows only.
    #[serde(default)]
    pub prices: Option<std::collections::BTreeMap<String, LegacyPrice>>,
    /// Ignored, with a warning: a pull request could switch it on in its own copy of this file.
    /// Set the action input `allow-pull-request-target-fixes` (`--allow-pull-request-target-fixes`)
    /// instead.
    #[serde(default)]
    pub allow_pull_request_target_fixes: Option<bool>,
    /// Bots whose events still start a run on GitHub (`dependabot`, `renovate`, `*` for all);
    /// other bot-triggered runs are skipped (`--allowed-bots`).
    #[serde(default)]
    pub allowed_bots: Option<Vec<String>>,
    /// An external coding agent run instead of the built-in fixer (`sh -c`, in the repository
    /// root), with `QA_FIX_REQUEST.md`'s path in `$QA_FIX_REQUEST` (`--fixer-command`).
    #[serde(default)]
    pub fixer_command: Option<String>,
    /// Variables kept in test commands' environment although secret by default (e.g.
    /// `GITHUB_TOKEN` for a test that calls the API, or a cloud credential such as
    /// `AWS_SECRET_ACCESS_KEY` for a test that needs one — a deliberate hole). `*` is a wildcard.
    /// The model's API key is never passed on. `pass_env` is the same key (SPEC §5.1).
    #[serde(default, alias = "pass_env")]
    pub env_passthrough: Option<Vec<String>>,
    /// Further variables removed from test commands' and tools' environment (e.g. `AWS_*`,
    /// `*_PASSWORD`). `*` is a wildcard; matching ignores case.
    #[serde(default)]
    pub secret_env: Option<Vec<String>>,
}

impl ConfigFile {
    /// The verification-strategy part of the file.
    pub fn strategy(&self) -> StrategyLayer {
        StrategyLayer {
            risk_level: self.risk_level,
            acceptance_criteria: self.acceptance_criteria.clone(),
            unit_tests: self.unit_tests.clone(),
            integration_tests: self.integration_tests.clone(),
            e2e_tests: self.e2e_tests.clone(),
            conversations: self.conversations.clone(),
            timeout: self.timeout,
            parallel: self.parallel,
            flaky: self.flaky,
            flaky_reruns: self.flaky_reruns,
            pattern_checks: self.pattern_checks.clone(),
            browser_verification: self.browser_verification.clone(),
        }
    }
}

fn de_positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = Option::<u32>::deserialize(d)?;
    match v {
        Some(0) => Err(serde::de::Error::custom("must be at least 1")),
        v => Ok(v),
    }
}

type ModelEntries = std::collections::BTreeMap<String, crate::llm::registry::ModelEntry>;

/// An MCP server the agents may use (SPEC §12), in the shape of the `mcpServers` entries users
/// know: a stdio server (`command`, `args`, `env`) or a streamable HTTP one (`url`, `headers`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// A stdio server: the program, started in the repository root in its own process group,
    /// with the scrubbed environment of test commands plus `env`.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables for a stdio server; a value `${NAME}` takes qa-loop's own variable `NAME`.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// A streamable HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers for an HTTP server; a value may hold `${NAME}` as in `env`.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The tools the agents get (names as the server lists them); default all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The agents that get the tools: `reviewer`, `fixer`, `judge` (default: the reviewer).
    #[serde(default)]
    pub agents: Option<Vec<McpAgent>>,
    /// How long the server may take to start and answer `initialize` (default 60s).
    #[serde(default)]
    pub startup_timeout: Option<DurationSetting>,
    /// How long one tool call may take (default 120s).
    #[serde(default)]
    pub call_timeout: Option<DurationSetting>,
    /// `false` starts a stdio server outside the sandbox, as the job's user with qa-loop's
    /// reach: honoured only from a config file outside the checkout (an action input, a path
    /// the operator gave), never from one the change could have written. Default: sandboxed.
    #[serde(default)]
    pub sandbox: Option<bool>,
}

/// An agent that can get MCP tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpAgent {
    Reviewer,
    Fixer,
    /// The conversation scenarios' judge (it may look at the app while it judges).
    Judge,
}

impl McpServerConfig {
    /// What is wrong with the entry, if anything.
    pub fn problem(&self) -> Option<String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                Some("has both `command` and `url`: a server is one or the other".into())
            }
            (None, None) => {
                Some("needs `command` (a stdio server) or `url` (a streamable HTTP server)".into())
            }
            (Some(c), None) if c.trim().is_empty() => Some("`command` is empty".into()),
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                Some(format!("`url` `{u}` is not an http(s) URL"))
            }
            (Some(_), None) if !self.headers.is_empty() => {
                Some("`headers` are for `url` servers; a `command` server takes `env`".into())
            }
            (None, Some(_)) if !self.args.is_empty() || !self.env.is_empty() => Some(
                "`args` and `env` are for `command` servers; a `url` server takes `headers`".into(),
            ),
            _ => None,
        }
    }
}

fn de_mcp_servers<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::collections::BTreeMap<String, McpServerConfig>>, D::Error> {
    let servers = Option::<std::collections::BTreeMap<String, McpServerConfig>>::deserialize(d)?;
    for (name, entry) in servers.iter().flatten() {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(serde::de::Error::custom(format!(
                "`{name}`: a server name is letters, digits, `-` and `_` (it becomes part of tool names)"
            )));
        }
        if let Some(problem) = entry.problem() {
            return Err(serde::de::Error::custom(format!("`{name}`: {problem}")));
        }
    }
    Ok(servers)
}

fn de_models<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ModelEntries>, D::Error> {
    let models = Option::<ModelEntries>::deserialize(d)?;
    for (id, entry) in models.iter().flatten() {
        if let Some(problem) = entry.problem() {
            return Err(serde::de::Error::custom(format!("`{id}`: {problem}")));
        }
    }
    Ok(models)
}

/// An entry of the deprecated `prices:` key.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyPrice {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    #[serde(default)]
    pub context_window: Option<u64>,
}

impl From<LegacyPrice> for crate::llm::registry::ModelEntry {
    fn from(p: LegacyPrice) -> Self {
        crate::llm::registry::ModelEntry {
            input: Some(p.input),
            output: Some(p.output),
            cache_read: p.cache_read,
            cache_write: p.cache_write,
            context_window: p.context_window,
            ..Default::default()
        }
    }
}

fn de_reruns<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<u32>::deserialize(d)? {
        Some(n) if n > 5 => Err(serde::de::Error::custom(
            "must be at most 5 (a test that needs more re-runs to pass is not flaky but failing)",
        )),
        v => Ok(v),
    }
}

fn de_positive_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        Some(0) => Err(serde::de::Error::custom("must be at least 1")),
        v => Ok(v),
    }
}

fn de_recurring<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = Option::<u32>::deserialize(d)?;
    match v {
        Some(n) if n < 2 => Err(serde::de::Error::custom(
            "must be at least 2 (an issue recurs when it is seen again)",
        )),
        v => Ok(v),
    }
}

fn de_unit_interval<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        Some(f) if !(0.0..=1.0).contains(&f) => Err(serde::de::Error::custom(format!(
            "must be between 0 and 1, got {f}"
        ))),
        v => Ok(v),
    }
}

fn de_percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        Some(f) if !(0.0..=100.0).contains(&f) => Err(serde::de::Error::custom(format!(
            "must be a percentage between 0 and 100, got {f}"
        ))),
        v => Ok(v),
    }
}

fn de_non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        Some(f) if f < 0.0 || !f.is_finite() => Err(serde::de::Error::custom(format!(
            "must be a non-negative number, got {f}"
        ))),
        v => Ok(v),
    }
}

fn de_score<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let v = Option::<u32>::deserialize(d)?;
    match v {
        Some(n) if n > 100 => Err(serde::de::Error::custom(format!(
            "must be between 0 and 100, got {n}"
        ))),
        v => Ok(v.map(|n| n as u8)),
    }
}

/// A run event a notification can be sent for (SPEC §11).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    Started,
    Rejected,
    Approved,
    MaxIterations,
    Escalated,
    Error,
}

impl NotifyEvent {
    pub const ALL: [NotifyEvent; 6] = [
        NotifyEvent::Started,
        NotifyEvent::Rejected,
        NotifyEvent::Approved,
        NotifyEvent::MaxIterations,
        NotifyEvent::Escalated,
        NotifyEvent::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NotifyEvent::Started => "started",
            NotifyEvent::Rejected => "rejected",
            NotifyEvent::Approved => "approved",
            NotifyEvent::MaxIterations => "max_iterations",
            NotifyEvent::Escalated => "escalated",
            NotifyEvent::Error => "error",
        }
    }
}

/// `notify:` (SPEC §11): secrets are named, never written (`*_env` keys name variables).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// The events sent (default: all).
    #[serde(default)]
    pub events: Option<Vec<NotifyEvent>>,
    #[serde(default)]
    pub linear: Option<LinearNotify>,
    #[serde(default)]
    pub slack: Option<SlackNotify>,
    #[serde(default)]
    pub telegram: Option<TelegramNotify>,
    #[serde(default)]
    pub webhook: Option<WebhookNotify>,
}

/// A comment on the Linear issue of the change for each event.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinearNotify {
    /// The variable holding the API key (sent as `Authorization: <key>`, without `Bearer`).
    pub api_key_env: String,
    /// The issue (`ENG-123`); default: found in the branch name, the PR title or body, or the
    /// plan's `linear_issue`.
    #[serde(default)]
    pub issue: Option<String>,
    /// The GraphQL endpoint (default `https://api.linear.app/graphql`).
    #[serde(default)]
    pub url: Option<String>,
    /// Workflow states (by name) the issue moves to on these events, e.g.
    /// `{approved: Done, escalated: Blocked}`.
    #[serde(default)]
    pub states: std::collections::BTreeMap<NotifyEvent, String>,
}

/// Whether `s` is a Linear issue identifier like `ENG-123`.
pub fn is_linear_identifier(s: &str) -> bool {
    let Some((team, number)) = s.split_once('-') else {
        return false;
    };
    !team.is_empty()
        && team.len() <= 10
        && team.starts_with(|c: char| c.is_ascii_uppercase())
        && team
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && !number.is_empty()
        && number.len() <= 7
        && number.chars().all(|c| c.is_ascii_digit())
}

/// A Slack message per event (incoming webhook), or one message per run with thread replies
/// (a bot token and a channel).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlackNotify {
    /// The variable holding the incoming-webhook URL.
    #[serde(default)]
    pub webhook_url_env: Option<String>,
    /// The variable holding a bot token (`chat:write`): one message per run, events as replies.
    #[serde(default)]
    pub bot_token_env: Option<String>,
    /// The channel for the bot token (`C0123…` or `#name`).
    #[serde(default)]
    pub channel: Option<String>,
    /// The Web API base (default `https://slack.com/api`).
    #[serde(default)]
    pub api_url: Option<String>,
}

/// A Telegram message per event (`sendMessage`, HTML).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelegramNotify {
    /// The variable holding the bot token.
    pub bot_token_env: String,
    /// The chat (`-100123…`, or `@channel`).
    pub chat_id: String,
    /// The Bot API base (default `https://api.telegram.org`).
    #[serde(default)]
    pub api_url: Option<String>,
}

/// A JSON POST per event, signed: `X-QA-Loop-Signature: sha256=<hex HMAC-SHA256 of the body>`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookNotify {
    pub url: String,
    /// The variable holding the signing secret (without it the body is sent unsigned).
    #[serde(default)]
    pub secret_env: Option<String>,
}

impl McpServerConfig {
    /// The variables whose values qa-loop substitutes (`${NAME}`) into the server's `env` or
    /// `headers`: each value is a secret (redacted everywhere, kept from test commands).
    pub fn secret_vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        for value in self.env.values().chain(self.headers.values()) {
            let mut rest = value.as_str();
            while let Some(i) = rest.find("${") {
                let Some(j) = rest[i + 2..].find('}') else {
                    break;
                };
                let name = &rest[i + 2..i + 2 + j];
                if !name.is_empty() && !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
                rest = &rest[i + 2 + j + 1..];
            }
        }
        out
    }
}

impl NotifyConfig {
    /// The variables the targets read their secrets from.
    pub fn secret_vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(l) = &self.linear {
            out.push(l.api_key_env.clone());
        }
        if let Some(s) = &self.slack {
            out.extend(s.webhook_url_env.clone());
            out.extend(s.bot_token_env.clone());
        }
        if let Some(t) = &self.telegram {
            out.push(t.bot_token_env.clone());
        }
        if let Some(w) = &self.webhook {
            out.extend(w.secret_env.clone());
        }
        out
    }

    /// What is wrong with the section, if anything (key path first).
    pub fn problem(&self) -> Option<String> {
        let env_name = |key: &str, v: &str| -> Option<String> {
            let ok = !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && !v.starts_with(|c: char| c.is_ascii_digit());
            (!ok).then(|| {
                format!("`{key}` must name an environment variable (like `SLACK_WEBHOOK_URL`), not hold the secret itself")
            })
        };
        let url = |key: &str, v: &str| -> Option<String> {
            match reqwest::Url::parse(v) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => None,
                _ => Some(format!("`{key}` `{v}` is not an http(s) URL")),
            }
        };
        if let Some(l) = &self.linear {
            if let Some(p) = env_name("linear.api_key_env", &l.api_key_env) {
                return Some(p);
            }
            if let Some(p) = l.url.as_deref().and_then(|u| url("linear.url", u)) {
                return Some(p);
            }
            if let Some(id) = &l.issue
                && !is_linear_identifier(id)
            {
                return Some(format!(
                    "`linear.issue` `{id}` is not an issue identifier like `ENG-123`"
                ));
            }
        }
        if let Some(s) = &self.slack {
            match (&s.webhook_url_env, &s.bot_token_env, &s.channel) {
                (None, None, _) => {
                    return Some(
                        "`slack` needs `webhook_url_env` or `bot_token_env` with `channel`".into(),
                    );
                }
                (_, Some(_), None) => return Some("`slack.bot_token_env` needs `channel`".into()),
                _ => {}
            }
            for (k, v) in [
                ("slack.webhook_url_env", &s.webhook_url_env),
                ("slack.bot_token_env", &s.bot_token_env),
            ] {
                if let Some(p) = v.as_deref().and_then(|v| env_name(k, v)) {
                    return Some(p);
                }
            }
            if let Some(p) = s.api_url.as_deref().and_then(|u| url("slack.api_url", u)) {
                return Some(p);
            }
        }
        if let Some(t) = &self.telegram {
            if let Some(p) = env_name("telegram.bot_token_env", &t.bot_token_env) {
                return Some(p);
            }
            if t.chat_id.trim().is_empty() {
                return Some("`telegram.chat_id` is empty".into());
            }
            if let Some(p) = t
                .api_url
                .as_deref()
                .and_then(|u| url("telegram.api_url", u))
            {
                return Some(p);
            }
        }
        if let Some(w) = &self.webhook {
            if let Some(p) = url("webhook.url", &w.url) {
                return Some(p);
            }
            if let Some(p) = w
                .secret_env
                .as_deref()
                .and_then(|v| env_name("webhook.secret_env", v))
            {
                return Some(p);
            }
        }
        None
    }
}

fn de_notify<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NotifyConfig>, D::Error> {
    let n = Option::<NotifyConfig>::deserialize(d)?;
    if let Some(problem) = n.as_ref().and_then(NotifyConfig::problem) {
        return Err(serde::de::Error::custom(problem));
    }
    Ok(n)
}
