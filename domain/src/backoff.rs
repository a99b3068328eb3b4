//! The one backoff of the product: wait `first`, then twice as long after each failed
//! attempt, never longer than `cap`. The provider client, the model client and the mail
//! sender all retry by it (each with its own `first` and `cap`, from its settings); the
//! provider client spreads its retries with `jittered`. No clock, no sleep: callers wait.

use std::time::Duration;

/// Doubling waits between `first` and `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub cap: Duration,
}

impl Backoff {
    pub fn new(first: Duration, cap: Duration) -> Self {
        Backoff { first, cap }
    }

    /// The wait before retry number `attempt + 1` (attempt 0 is the first retry):
    /// `first × 2^attempt`, at most `cap`, never below `first` unless `cap` is lower.
    pub fn delay(self, attempt: u32) -> Duration {
        let doubled = self
            .first
            .saturating_mul(2u32.saturating_pow(attempt.min(31)));
        doubled.max(self.first).min(self.cap)
    }

    /// `delay(attempt)` scaled by `jitter` ∈ [0, 1] into 75–100 % of itself, so that
    /// clients failing together do not retry together; never below `first` (or `cap`).
    pub fn jittered(self, attempt: u32, jitter: f64) -> Duration {
        let full = self.delay(attempt);
        let spread = full.mul_f64(0.75 + 0.25 * jitter.clamp(0.0, 1.0));
        spread.max(self.first.min(self.cap))
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_wait_doubles_per_attempt_and_stops_at_the_cap() {
        let b = Backoff::new(ms(500), ms(5_000));
        let waits: Vec<_> = (0..6).map(|a| b.delay(a)).collect();
        assert_eq!(
            waits,
            [
                ms(500),
                ms(1_000),
                ms(2_000),
                ms(4_000),
                ms(5_000),
                ms(5_000)
            ]
        );
        assert_eq!(
            b.delay(u32::MAX),
            ms(5_000),
            "no overflow on a huge attempt count"
        );
    }

    #[test]
    fn jitter_keeps_the_wait_between_three_quarters_and_all_of_it_and_above_the_first() {
        let b = Backoff::new(ms(500), ms(5_000));
        assert_eq!(b.jittered(1, 1.0), ms(1_000));
        assert_eq!(b.jittered(1, 0.0), ms(750));
        assert_eq!(b.jittered(0, 0.0), ms(500), "never below the first wait");
        assert_eq!(
            b.jittered(9, 2.0),
            ms(5_000),
            "jitter outside [0, 1] is clamped"
        );
    }

    #[test]
    fn a_cap_below_the_first_wait_wins() {
        let b = Backoff::new(ms(500), ms(100));
        assert_eq!(b.delay(0), ms(100));
        assert_eq!(b.jittered(3, 0.0), ms(100));
    }
}
