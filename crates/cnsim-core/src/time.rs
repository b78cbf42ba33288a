//! Simulated time in integer picoseconds.

/// An instant, ps since the start of the run.
pub type SimTime = u64;

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Time to serialise `bytes` at `rate_bps`, ps, rounded up (exact for the usual rates:
/// 1500 B at 10 Gb/s = 1 200 000 ps).
#[inline]
pub fn tx_time_ps(bytes: u64, rate_bps: u64) -> u64 {
    debug_assert!(rate_bps > 0);
    let num = bytes as u128 * 8 * PS_PER_S as u128;
    num.div_ceil(rate_bps as u128) as u64
}

/// Seconds as f64 (for outputs only).
#[inline]
pub fn to_s(t: SimTime) -> f64 {
    t as f64 / PS_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn serialisation_times_are_exact() {
        assert_eq!(tx_time_ps(1500, 10_000_000_000), 1_200_000);
        assert_eq!(tx_time_ps(64, 10_000_000_000), 51_200);
        assert_eq!(tx_time_ps(1500, 1_000_000_000), 12_000_000);
        // 512 bit times at 10 Gb/s = 51.2 ns
        assert_eq!(tx_time_ps(64, 10_000_000_000), 512 * 100);
        // rounding up for rates that do not divide evenly
        assert_eq!(tx_time_ps(1, 3_000_000_000), 2667);
    }
}
