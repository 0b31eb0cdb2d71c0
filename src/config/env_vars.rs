//! Every environment variable qa-loop reads or scrubs, in one place.

/// Prefix of the flag variables: `--max-iterations` ↔ `QA_LOOP_MAX_ITERATIONS`.
pub const PREFIX: &str = "QA_LOOP_";
pub const QA_LOOP_API_KEY: &str = "QA_LOOP_API_KEY";
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
pub const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
pub const GH_TOKEN: &str = "GH_TOKEN";
pub const ACTIONS_RUNTIME_TOKEN: &str = "ACTIONS_RUNTIME_TOKEN";
/// `ACTIONS_ID_TOKEN_REQUEST_URL` / `_TOKEN`: the OIDC token request.
pub const ACTIONS_ID_TOKEN_REQUEST_PREFIX: &str = "ACTIONS_ID_TOKEN_REQUEST_";
/// Action inputs arrive as `INPUT_<NAME>`; those holding tokens or keys are secrets.
pub const INPUT_PREFIX: &str = "INPUT_";
/// `NO_COLOR` disables colour in log output.
pub const NO_COLOR: &str = "NO_COLOR";

/// Whether a variable must never reach a child process (test commands, tools, agents).
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    matches!(
        upper.as_str(),
        QA_LOOP_API_KEY
            | ANTHROPIC_API_KEY
            | OPENAI_API_KEY
            | GITHUB_TOKEN
            | GH_TOKEN
            | ACTIONS_RUNTIME_TOKEN
    ) || upper.starts_with(ACTIONS_ID_TOKEN_REQUEST_PREFIX)
        || (upper.starts_with(INPUT_PREFIX)
            && ["TOKEN", "KEY", "SECRET", "PASSWORD"]
                .iter()
                .any(|w| upper.contains(w)))
}

/// The current environment minus secrets, for child processes.
pub fn scrubbed_env() -> Vec<(String, String)> {
    std::env::vars().filter(|(k, _)| !is_secret(k)).collect()
}

#[cfg(test)]
mod tests {
    use super::is_secret;

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
