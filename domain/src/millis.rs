//! Unix milliseconds, the storage format of every timestamp (ARCHITECTURE.md, "Storage"),
//! and their text: converting and formatting an instant someone else read.
//!
//! What it deliberately does not do: read a clock. The desk's `Clock` does, and the mail
//! tables below the desk format their stored times here too.

use time::OffsetDateTime;

/// An instant as unix milliseconds.
pub fn to_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Unix milliseconds as an instant; one out of range is the epoch.
pub fn from_ms(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// RFC 3339 text for APIs and pages.
pub fn rfc3339(ms: i64) -> String {
    from_ms(ms)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_trip_and_read_as_rfc3339() {
        let ms = 1_733_500_800_123;
        assert_eq!(to_ms(from_ms(ms)), ms);
        assert_eq!(rfc3339(ms), "2024-12-06T16:00:00.123Z");
        assert_eq!(from_ms(i64::MAX), OffsetDateTime::UNIX_EPOCH);
    }
}
