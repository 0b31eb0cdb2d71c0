//! The agents' system prompts: compiled in from `prompts/`, overridable per repository with
//! `.github/qa-loop/prompts/<name>.md`.

use std::path::Path;

/// A prompt qa-loop uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    Reviewer,
    Fixer,
    Judge,
    Analyst,
}

impl Prompt {
    pub fn file_name(self) -> &'static str {
        match self {
            Prompt::Reviewer => "reviewer.md",
            Prompt::Fixer => "fixer.md",
            Prompt::Judge => "judge.md",
            Prompt::Analyst => "analyst.md",
        }
    }

    pub fn builtin(self) -> &'static str {
        match self {
            Prompt::Reviewer => include_str!("../../prompts/reviewer.md"),
            Prompt::Fixer => include_str!("../../prompts/fixer.md"),
            Prompt::Judge => include_str!("../../prompts/judge.md"),
            Prompt::Analyst => include_str!("../../prompts/analyst.md"),
        }
    }

    /// The repository's override if it has one, else the built-in prompt.
    pub fn load(self, root: &Path) -> String {
        let path = root.join(".github/qa-loop/prompts").join(self.file_name());
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                tracing::info!(path = %path.display(), "using the repository's prompt override");
                text
            }
            _ => self.builtin().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prompts_name_the_contract_tools_and_overrides_win() {
        let dir = tempfile::tempdir().unwrap();
        let reviewer = Prompt::Reviewer.load(dir.path());
        assert!(reviewer.contains("submit_verdict"));
        assert!(Prompt::Fixer.load(dir.path()).contains("finish"));
        std::fs::create_dir_all(dir.path().join(".github/qa-loop/prompts")).unwrap();
        std::fs::write(
            dir.path().join(".github/qa-loop/prompts/reviewer.md"),
            "custom",
        )
        .unwrap();
        assert_eq!(Prompt::Reviewer.load(dir.path()), "custom");
    }
}
