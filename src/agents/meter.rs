//! Token and cost accounting, and the run's budgets (tokens, cost, time).

use std::time::Instant;

use crate::llm::Usage;

/// Totals of a run and its limits.
#[derive(Debug, Clone)]
pub struct Meter {
    pub usage: Usage,
    pub cost_usd: f64,
    pub calls: u64,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub deadline: Option<Instant>,
    /// USD per million (input, output) tokens of the model in use; zero for `replay`.
    pub price_per_mtok: (f64, f64),
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
            price_per_mtok: (0.0, 0.0),
        }
    }

    pub fn record(&mut self, usage: Usage) {
        self.calls += 1;
        self.usage.add(usage);
        let (pin, pout) = self.price_per_mtok;
        self.cost_usd +=
            (usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens) as f64 * pin
                / 1e6
                + usage.output_tokens as f64 * pout / 1e6;
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
        m.record(Usage {
            input_tokens: 60,
            output_tokens: 40,
            ..Usage::default()
        });
        assert!(m.exhausted().unwrap().starts_with("tokens"));
        let mut m = Meter::new(None, Some(0.01), None);
        m.price_per_mtok = (3.0, 15.0);
        m.record(Usage {
            input_tokens: 1000,
            output_tokens: 1000,
            ..Usage::default()
        });
        assert!((m.cost_usd - 0.018).abs() < 1e-9);
        assert!(m.exhausted().unwrap().starts_with("cost"));
    }
}
