//! Reports: pure functions from runs to text or JSON, in the layout of the paper's tables.
//!
//! Nothing here measures, reads the store or writes to a terminal; callers print what these
//! return, which keeps every layout snapshot-testable.

pub mod json;
pub mod table;

/// Seconds for the paper's operation count from nanoseconds per operation.
pub fn scaled_s(ns_per_op: f64, paper_count: u64) -> f64 {
    ns_per_op * paper_count as f64 / 1e9
}

/// "2026-11-22 08:30:12 UTC" from Unix nanoseconds (proleptic Gregorian, no leap seconds).
pub fn utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A number with precision that suits its size (3 significant digits or more).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a == 0.0 {
        "0".into()
    } else if a < 0.01 {
        format!("{v:.4}")
    } else if a < 1.0 {
        format!("{v:.3}")
    } else if a < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_336_212_000_000_000), "2026-11-22 08:30:12 UTC");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(num(0.1234), "0.123");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(1234.5), "1234.5");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "-");
    }
}
