//! Durations as the user types them, read by one parser: a number of seconds (`10`, `2.5`)
//! or, where a command allows units, a number with `s`, `m` or `h` (`90s`, `5m`, `1h`),
//! within the bounds of the option ([`Bounds`]). `--min-time`, `--timeout` and the other
//! seconds options, `trace --system`, `profile --system` and `watch INTERVAL` all read their
//! durations here, so they take the same spellings and refuse the same things with the same
//! words.
//!
//! The refusal says what is wrong and what to give, without repeating the text (every caller
//! shows the value beside it). Seconds come back as an `f64`, as typed: a caller that wants a
//! `Duration` converts, so that a run records exactly what was asked.
//!
//! It also writes CPU lists ([`format_list`]), the other quantity every layer prints alike;
//! reading them from the kernel's files stays with the harness (`harness::placement`).

/// What one option accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Whether `s`, `m` and `h` are accepted after the number.
    pub units: bool,
    /// The shortest duration, with why (the refusal says "of at least MIN s (WHY)");
    /// None: anything above 0.
    pub min: Option<(f64, &'static str)>,
    /// The longest duration in seconds, and its name in the refusal ("a day").
    pub max: (f64, &'static str),
}

/// A day: the most a seconds option takes (anything longer is almost surely a typo).
pub const DAY_S: f64 = 86_400.0;

/// A week: the most a whole-machine observation lasts.
pub const WEEK_S: f64 = 7.0 * DAY_S;

/// Seconds without units, above 0, at most a day: `--min-time`, `--timeout`, `--seconds`, ...
pub const SECONDS: Bounds = Bounds {
    units: false,
    min: None,
    max: (DAY_S, "a day"),
};

/// A span with units, at most a week: `trace --system`, `profile --system`.
pub const SPAN: Bounds = Bounds {
    units: true,
    min: None,
    max: (WEEK_S, "a week"),
};

/// Seconds in `s` within `bounds`, or why not: what is wrong, then what to give.
pub fn parse_seconds(s: &str, bounds: &Bounds) -> Result<f64, String> {
    let (max, name) = bounds.max;
    let floor = match bounds.min {
        Some((min, why)) => format!("of at least {min} s ({why})"),
        None => "above 0".to_string(),
    };
    let refuse = |problem: &str| {
        Err(if bounds.units {
            format!("{problem}; give a duration {floor} and at most {name}: seconds (3, 2.5) or 10s, 5m, 1h")
        } else {
            format!("{problem}; give a number of seconds {floor} and at most {name} ({max} s), such as 10 or 2.5")
        })
    };
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 's')) if bounds.units => (&t[..i], 1.0),
        Some((i, 'm')) if bounds.units => (&t[..i], 60.0),
        Some((i, 'h')) if bounds.units => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let Ok(v) = num.trim().parse::<f64>() else {
        return refuse(if bounds.units {
            "not a duration"
        } else {
            "not a number of seconds"
        });
    };
    let secs = v * scale;
    if secs.is_nan() || secs <= 0.0 {
        return refuse("not positive");
    }
    if bounds.min.is_some_and(|(min, _)| secs < min) {
        return refuse("too short");
    }
    if secs > max {
        return refuse(&format!("more than {name}"));
    }
    Ok(secs)
}

/// Formats CPUs compactly, as the kernel writes CPU lists ("0-3,5"): the one spelling of a
/// CPU list in sysperf's output, for the harness, the engine and the reports alike (#46).
pub fn format_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_written_compactly() {
        assert_eq!(format_list(&[5, 0, 1, 2, 3]), "0-3,5");
        assert_eq!(format_list(&[3, 3, 1]), "1,3");
        assert_eq!(format_list(&[]), "");
    }

    #[test]
    fn seconds_and_spans_read_as_typed() {
        assert_eq!(parse_seconds("10", &SECONDS), Ok(10.0));
        assert_eq!(parse_seconds(" 2.5 ", &SECONDS), Ok(2.5));
        assert_eq!(parse_seconds("90s", &SPAN), Ok(90.0));
        assert_eq!(parse_seconds("5m", &SPAN), Ok(300.0));
        assert_eq!(parse_seconds(" 1h ", &SPAN), Ok(3600.0));
        assert_eq!(parse_seconds("168h", &SPAN), Ok(WEEK_S));
    }

    #[test]
    fn what_an_option_does_not_take_is_refused_with_why() {
        for bad in ["", "0", "-1", "5x", "m", "nan", "inf", "200h", "1e9"] {
            assert!(parse_seconds(bad, &SPAN).is_err(), "{bad}");
        }
        // Units only where the option takes them.
        assert!(parse_seconds("5m", &SECONDS)
            .unwrap_err()
            .contains("not a number of seconds"));
        assert!(parse_seconds("1e300", &SECONDS)
            .unwrap_err()
            .contains("more than a day"));
        assert!(parse_seconds("1e9", &SECONDS)
            .unwrap_err()
            .contains("at most a day"));
        let interval = Bounds {
            min: Some((0.1, "ticks")),
            ..SECONDS
        };
        assert_eq!(
            parse_seconds("0.05", &interval),
            Err("too short; give a number of seconds of at least 0.1 s (ticks) and at most a day (86400 s), such as 10 or 2.5".into())
        );
        // Every refusal of a span says how to spell one; every refusal says what is wrong.
        for bad in ["0", "3d", "soon", "200h"] {
            assert!(
                parse_seconds(bad, &SPAN)
                    .unwrap_err()
                    .contains("10s, 5m, 1h"),
                "{bad}"
            );
        }
        for (bad, why) in [("0", "positive"), ("-1", "positive"), ("NaN", "positive")] {
            assert!(
                parse_seconds(bad, &SECONDS).unwrap_err().contains(why),
                "{bad}"
            );
        }
        assert_eq!(parse_seconds("0.1", &interval), Ok(0.1));
    }
}
