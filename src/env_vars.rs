//! Every environment variable qa-loop reads or scrubs, in one place.

/// Prefix of the flag variables: `--max-iterations` ↔ `QA_LOOP_MAX_ITERATIONS`.
pub const PREFIX: &str = "QA_LOOP_";
pub const QA_LOOP_API_KEY: &str = "QA_LOOP_API_KEY";
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
pub const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
/// The action's `github-token` and `push-token` inputs, as the wrapper passes them and as
/// the runner names inputs.
pub const QA_LOOP_GITHUB_TOKEN: &str = "QA_LOOP_GITHUB_TOKEN";
pub const INPUT_GITHUB_TOKEN: &str = "INPUT_GITHUB-TOKEN";
pub const QA_LOOP_PUSH_TOKEN: &str = "QA_LOOP_PUSH_TOKEN";
pub const INPUT_PUSH_TOKEN: &str = "INPUT_PUSH-TOKEN";
pub const GH_TOKEN: &str = "GH_TOKEN";
pub const ACTIONS_RUNTIME_TOKEN: &str = "ACTIONS_RUNTIME_TOKEN";
/// `ACTIONS_ID_TOKEN_REQUEST_URL` / `_TOKEN`: the OIDC token request.
pub const ACTIONS_ID_TOKEN_REQUEST_PREFIX: &str = "ACTIONS_ID_TOKEN_REQUEST_";
/// Action inputs arrive as `INPUT_<NAME>`; those holding tokens or keys are secrets.
pub const INPUT_PREFIX: &str = "INPUT_";
/// The event that started the workflow (`validate` says how it is handled).
pub const GITHUB_EVENT_NAME: &str = "GITHUB_EVENT_NAME";
/// `NO_COLOR` disables colour in log output.
pub const NO_COLOR: &str = "NO_COLOR";
/// The runner's file commands: what a step appends there becomes its outputs, the job summary,
/// or the environment, `PATH` and state of later steps.
pub const GITHUB_OUTPUT: &str = "GITHUB_OUTPUT";
pub const GITHUB_STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";
pub const GITHUB_ENV: &str = "GITHUB_ENV";
pub const GITHUB_PATH: &str = "GITHUB_PATH";
pub const GITHUB_STATE: &str = "GITHUB_STATE";
pub const RUNNER_FILE_COMMANDS: [&str; 5] = [
    GITHUB_OUTPUT,
    GITHUB_STEP_SUMMARY,
    GITHUB_ENV,
    GITHUB_PATH,
    GITHUB_STATE,
];
/// The runner's temp directory: the checkout's persisted credentials, step scripts, file
/// commands.
pub const RUNNER_TEMP: &str = "RUNNER_TEMP";
/// The runner's own services (`ACTIONS_RUNTIME_URL`/`_TOKEN`, cache, results, OIDC).
pub const ACTIONS_PREFIX: &str = "ACTIONS_";

/// Whether a variable is a channel to the runner (its file commands, its runtime services):
/// never given to a child, whatever `env_passthrough` says — a test that can write there
/// forges the step's outputs or poisons later steps.
pub fn is_runner_channel(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    RUNNER_FILE_COMMANDS.contains(&upper.as_str()) || upper.starts_with(ACTIONS_PREFIX)
}

/// The cloud credentials the providers' credential chains read (SPEC §5.1): values that are
/// credentials, or name a file holding one. Never in a child's environment unless the trusted
/// config passes them on (`pass_env`).
pub const CLOUD_CREDENTIALS: [&str; 20] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GHA_CREDS_PATH",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "OPENAI_IDENTITY_TOKEN",
    "OPENAI_IDENTITY_TOKEN_FILE",
];

/// The variables of [`CLOUD_CREDENTIALS`] that name a file: the file is hidden from the
/// sandboxed commands too.
pub const CREDENTIAL_FILES: [&str; 9] = [
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GHA_CREDS_PATH",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "OPENAI_IDENTITY_TOKEN_FILE",
];

/// Whether a variable must never reach a child process (test commands, tools, agents).
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if CLOUD_CREDENTIALS.contains(&upper.as_str()) {
        return true;
    }
    matches!(
        upper.as_str(),
        QA_LOOP_API_KEY
            | ANTHROPIC_API_KEY
            | OPENAI_API_KEY
            | GITHUB_TOKEN
            | GH_TOKEN
            | ACTIONS_RUNTIME_TOKEN
    ) || upper.starts_with(ACTIONS_ID_TOKEN_REQUEST_PREFIX)
        || ((upper.starts_with(INPUT_PREFIX) || upper.starts_with("QA_LOOP_"))
            && ["TOKEN", "KEY", "SECRET", "PASSWORD"]
                .iter()
                .any(|w| upper.contains(w)))
}

/// One variable of qa-loop's own environment: the one place that reads it (with the Actions
/// reader, which takes this function).
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// qa-loop's whole environment (children get it through an [`EnvPolicy`]).
pub fn vars() -> Vec<(String, String)> {
    std::env::vars().collect()
}

/// The current environment minus the built-in secrets and the runner's channels (for git and
/// other internal commands).
pub fn scrubbed_env() -> Vec<(String, String)> {
    vars()
        .into_iter()
        .filter(|(k, _)| !is_secret(k) && !is_runner_channel(k))
        .collect()
}

/// The LLM key and push token variables: their values are removed from a child's environment
/// under any name.
const LLM_KEYS: [&str; 5] = [
    QA_LOOP_API_KEY,
    ANTHROPIC_API_KEY,
    OPENAI_API_KEY,
    QA_LOOP_PUSH_TOKEN,
    INPUT_PUSH_TOKEN,
];

/// Which variables reach test commands and agent tools.
///
/// The job's environment minus the built-in secrets ([`is_secret`]) and the user's `secret_env`
/// patterns; `env_passthrough` patterns bring built-in secrets back (a test that needs
/// `GITHUB_TOKEN`). The model's API key never reaches a child, under any name: variables whose
/// value equals it are dropped whatever the lists say.
#[derive(Clone, Default)]
pub struct EnvPolicy {
    /// Patterns (`*` wildcard, case-insensitive) of variables kept although secret by default.
    pub passthrough: Vec<String>,
    /// Patterns of further variables to remove.
    pub secret: Vec<String>,
    /// Values that never reach a child (the API key in use).
    secret_values: Vec<String>,
}

impl std::fmt::Debug for EnvPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvPolicy")
            .field("passthrough", &self.passthrough)
            .field("secret", &self.secret)
            .field(
                "secret_values",
                &format_args!("[{} hidden]", self.secret_values.len()),
            )
            .finish()
    }
}

impl EnvPolicy {
    pub fn new(passthrough: Vec<String>, secret: Vec<String>) -> Self {
        EnvPolicy {
            passthrough,
            secret,
            secret_values: Vec::new(),
        }
    }

    /// Adds a value that must never reach a child (ignored when too short to be a credential).
    pub fn hide_value(&mut self, value: &str) {
        if value.len() >= 8 && !self.secret_values.iter().any(|v| v == value) {
            self.secret_values.push(value.to_string());
        }
    }

    /// Hides the values of the LLM key variables found in `vars`.
    pub fn hide_llm_keys<'a>(&mut self, vars: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (k, v) in vars {
            if LLM_KEYS.iter().any(|n| k.eq_ignore_ascii_case(n)) {
                self.hide_value(v);
            }
        }
    }

    /// Whether `name=value` may reach a child.
    pub fn keeps(&self, name: &str, value: &str) -> bool {
        if is_runner_channel(name) || self.secret_values.iter().any(|s| s == value) {
            return false;
        }
        if self.secret.iter().any(|p| wildcard(p, name)) {
            return false;
        }
        !is_secret(name) || self.passthrough.iter().any(|p| wildcard(p, name))
    }

    /// The environment a child gets, from `vars` (normally the job's environment).
    pub fn apply(&self, vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
        vars.into_iter().filter(|(k, v)| self.keeps(k, v)).collect()
    }
}

/// `*`-wildcard match, ASCII case-insensitive.
pub fn wildcard(pattern: &str, name: &str) -> bool {
    let p = pattern.to_ascii_uppercase();
    let n = name.to_ascii_uppercase();
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == n;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !n.starts_with(first) || n.len() < first.len() + last.len() || !n.ends_with(last) {
        return false;
    }
    let mut rest = &n[first.len()..n.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{EnvPolicy, is_secret, wildcard};

    #[test]
    fn wildcards_match_case_insensitively() {
        for (p, n, want) in [
            ("AWS_*", "AWS_SECRET_ACCESS_KEY", true),
            ("aws_*", "AWS_REGION", true),
            ("*_TOKEN", "NPM_TOKEN", true),
            ("*_TOKEN", "TOKENS", false),
            ("A*B*C", "AxxBxxC", true),
            ("A*B*C", "AxxCxxB", false),
            ("AB*BA", "ABA", false),
            ("PATH", "PATH", true),
            ("PATH", "PATHS", false),
            ("*", "ANY", true),
        ] {
            assert_eq!(wildcard(p, n), want, "{p} vs {n}");
        }
    }

    #[test]
    fn the_policy_drops_secrets_keeps_passthrough_and_never_the_api_key() {
        let key = "sk-ant-canary-0123456789";
        let vars = [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghs_canary_token_1"),
            ("GH_TOKEN", "ghs_canary_token_2"),
            ("ANTHROPIC_API_KEY", key),
            ("MY_ALIAS", key),
            ("AWS_SECRET_ACCESS_KEY", "aws-canary-secret"),
            ("AWS_REGION", "eu-west-1"),
            ("NPM_TOKEN", "npm_canary_value"),
            ("INPUT_PUSH-TOKEN", "ghp_canary_push"),
            ("QA_LOOP_PUSH_TOKEN", "ghp_canary_push_2"),
            ("QA_LOOP_GITHUB_TOKEN", "ghs_canary_token_3"),
            ("PUSH_ALIAS", "ghp_canary_push_2"),
            ("SHORT", "abc"),
        ];
        let mut policy = EnvPolicy::new(
            vec!["GITHUB_TOKEN".into(), "ANTHROPIC_API_KEY".into()],
            vec!["AWS_SECRET_*".into()],
        );
        policy.hide_llm_keys(vars.iter().copied());
        policy.hide_value("abc"); // too short to hide by value
        let kept: Vec<String> = policy
            .apply(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            kept,
            ["PATH", "GITHUB_TOKEN", "AWS_REGION", "NPM_TOKEN", "SHORT"],
            "passthrough brings GITHUB_TOKEN back but never the API key (by name or by value)"
        );
        assert!(!format!("{policy:?}").contains("canary"));
    }

    #[test]
    fn runner_channels_never_reach_a_child_even_when_passed_through() {
        let policy = EnvPolicy::new(vec!["*".into()], vec![]);
        for name in [
            "GITHUB_OUTPUT",
            "github_env",
            "GITHUB_PATH",
            "GITHUB_STATE",
            "GITHUB_STEP_SUMMARY",
            "ACTIONS_RUNTIME_URL",
            "ACTIONS_CACHE_URL",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
        ] {
            assert!(!policy.keeps(name, "/runner/_temp/x"), "{name}");
        }
        assert!(policy.keeps("GITHUB_WORKSPACE", "/w"));
        assert!(policy.keeps("RUNNER_TEMP", "/runner/_temp"));
    }

    #[test]
    fn secrets_are_recognised_and_ordinary_variables_are_not() {
        for name in [
            "GITHUB_TOKEN",
            "gh_token",
            "QA_LOOP_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "INPUT_GITHUB-TOKEN",
            "INPUT_PUSH-TOKEN",
            "INPUT_API-KEY",
        ] {
            assert!(is_secret(name), "{name} should be scrubbed");
        }
        for name in [
            "PATH",
            "HOME",
            "INPUT_MODE",
            "GITHUB_SHA",
            "CI",
            "QA_LOOP_MODE",
        ] {
            assert!(!is_secret(name), "{name} should be kept");
        }
    }
}
