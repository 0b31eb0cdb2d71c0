//! Retry policy (exponential backoff with jitter, a server's `retry-after` within a cap) and the
//! one source of randomness, shared by the model providers' and GitHub's HTTP clients and by
//! anything that needs an unguessable value (step-output delimiters, session ids).

use std::time::{Duration, SystemTime};

/// How a request is retried (model requests, GitHub writes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The first backoff; doubled on each retry, with jitter.
    pub backoff: Duration,
    /// The longest single wait, also for a server's `retry-after`: asked to wait longer, the
    /// provider gives up at once rather than stall the run.
    pub max_wait: Duration,
    /// One attempt's time limit (connection, request and the whole answer).
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 4,
            backoff: Duration::from_secs(2),
            max_wait: Duration::from_secs(60),
            timeout: Duration::from_secs(300),
        }
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Retry(Duration),
    GiveUp,
}

impl RetryPolicy {
    /// The decision after failed attempt `attempt` (0-based) that is worth retrying, given the
    /// server's `retry-after` if any. `jitter` is in [0, 1).
    pub fn next(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Next {
        if attempt >= self.retries {
            return Next::GiveUp;
        }
        let exp = self.backoff.as_secs_f64() * 2f64.powi(attempt.min(16) as i32);
        // "Equal jitter": half fixed, half random, so waits never collapse to zero.
        let backoff = Duration::from_secs_f64((exp * (0.5 + jitter / 2.0)).min(1e6));
        match retry_after {
            Some(wait) if wait > self.max_wait => Next::GiveUp,
            Some(wait) => Next::Retry(wait.max(backoff.min(self.max_wait))),
            None => Next::Retry(backoff.min(self.max_wait)),
        }
    }
}

/// A number in [0, 1) that differs between calls and processes (no RNG dependency needed).
pub fn jitter() -> f64 {
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// 64 bits that differ between calls and processes (std's randomly keyed hasher over the clock).
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after_within_the_cap() {
        let p = RetryPolicy {
            retries: 3,
            backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
        };
        assert_eq!(
            p.next(0, None, 0.0),
            Next::Retry(Duration::from_millis(500))
        );
        assert_eq!(
            p.next(1, None, 0.999_999),
            Next::Retry(Duration::from_secs_f64(2.0 * 0.999_999_5))
        );
        assert_eq!(p.next(2, None, 0.5), Next::Retry(Duration::from_secs(3)));
        assert_eq!(p.next(3, None, 0.5), Next::GiveUp);
        // The server's wait wins when longer, and a wait beyond the cap gives up at once.
        assert_eq!(
            p.next(0, Some(Duration::from_secs(7)), 0.0),
            Next::Retry(Duration::from_secs(7))
        );
        assert_eq!(p.next(0, Some(Duration::from_secs(11)), 0.0), Next::GiveUp);
        let big = RetryPolicy { retries: 40, ..p };
        assert_eq!(
            big.next(30, None, 0.0),
            Next::Retry(Duration::from_secs(10))
        );
        let j: Vec<f64> = (0..100).map(|_| jitter()).collect();
        assert!(j.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(j.iter().any(|x| (x - j[0]).abs() > 1e-9), "jitter varies");
    }
}
