//! Token and cost accounting, and the run's budgets (tokens, cost, time).

use std::time::Instant;

use std::collections::BTreeSet;

use crate::llm::Usage;
use crate::llm::registry::Registry;

/// Totals of a run and its limits.
#[derive(Debug, Clone)]
pub struct Meter {
    pub usage: Usage,
    pub cost_usd: f64,
    pub calls: u64,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub deadline: Option<Instant>,
    pub registry: Registry,
    /// Models that answered without a known price (their calls cost nothing in `cost_usd`).
    pub unpriced: BTreeSet<String>,
    /// The provider refused the run's credentials: no later call can succeed.
    pub refused: Option<String>,
}

impl Meter {
    pub fn new(
        max_tokens: Option<u64>,
        max_cost_usd: Option<f64>,
        deadline: Option<Instant>,
    ) -> Self {
        Meter {
            usage: Usage::default(),
            cost_usd: 0.0,
            calls: 0,
            max_tokens,
            max_cost_usd,
            deadline,
            registry: Registry::default(),
            unpriced: BTreeSet::new(),
            refused: None,
        }
    }

    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Counts one call's tokens and cost. `model` is empty for replayed answers (free).
    pub fn record(&mut self, model: &str, usage: Usage) {
        self.calls += 1;
        self.usage.add(usage);
        if model.is_empty() {
            return;
        }
        match self.registry.cost(model, &usage) {
            Some(c) => self.cost_usd += c,
            None => {
                if self.unpriced.insert(model.to_string()) {
                    tracing::warn!(
                        model,
                        "no price known for this model: its cost is not counted (add it under `models:` in the config: input, output)"
                    );
                }
            }
        }
    }

    /// Which budget is spent, if any.
    pub fn exhausted(&self) -> Option<String> {
        if let Some(max) = self.max_tokens
            && self.usage.total() >= max
        {
            return Some(format!("tokens: {} of {max}", self.usage.total()));
        }
        if let Some(max) = self.max_cost_usd
            && self.cost_usd >= max
        {
            return Some(format!("cost: ${:.4} of ${max:.2}", self.cost_usd));
        }
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            return Some("time: the run's --timeout elapsed".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_trip_when_reached() {
        let mut m = Meter::new(Some(100), Some(1.0), None);
        assert!(m.exhausted().is_none());
        m.record(
            "",
            Usage {
                input_tokens: 60,
                output_tokens: 40,
                ..Usage::default()
            },
        );
        assert!(m.exhausted().unwrap().starts_with("tokens"));
        let mut m = Meter::new(None, Some(0.01), None);
        m.record(
            "claude-sonnet-4-5-20250929",
            Usage {
                input_tokens: 1000,
                output_tokens: 1000,
                ..Usage::default()
            },
        );
        assert!((m.cost_usd - 0.018).abs() < 1e-9);
        assert!(m.exhausted().unwrap().starts_with("cost"));
        m.record("my-local-model", Usage::default());
        assert_eq!(m.unpriced.iter().collect::<Vec<_>>(), ["my-local-model"]);
        assert_eq!(m.calls, 2);
    }
}
