//! Fleet queries (#21): the facts runs are filtered and grouped by (`--where KEY=VALUE`,
//! `--by KEY`: host, kernel, cpu, label, date), parsed into the store's conditions, and the
//! order of groups: kernel releases by version, as LEBench's figure orders them (#19), dates
//! in time, the rest by name.
//!
//! It reads no store and renders nothing: `catalog` asks the store for the runs and
//! `compare` builds the grouped comparison from the groups made here.

use crate::error::InputError;
use crate::model::{days_from_civil, Run};
use crate::store::{Cond, RunInfo, RunQuery};
use std::cmp::Ordering;

/// The facts of a run that are filtered and grouped on, from a listed or a loaded run.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub host: Option<&'a str>,
    pub kernel: Option<&'a str>,
    pub cpu: Option<&'a str>,
    pub label: Option<&'a str>,
    pub started_ns: i64,
}

impl<'a> From<&'a RunInfo> for Facts<'a> {
    fn from(r: &'a RunInfo) -> Self {
        Facts {
            host: r.hostname.as_deref(),
            kernel: r.kernel_release.as_deref(),
            cpu: r.cpu_model.as_deref(),
            label: r.label.as_deref(),
            started_ns: r.started_ns,
        }
    }
}

impl<'a> From<&'a Run> for Facts<'a> {
    fn from(r: &'a Run) -> Self {
        Facts {
            host: r.fingerprint.hostname.as_deref(),
            kernel: r.fingerprint.kernel_release.as_deref(),
            cpu: r.fingerprint.cpu_model.as_deref(),
            label: r.label.as_deref(),
            started_ns: r.started_ns,
        }
    }
}

/// What `--where` and `--by` ask for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub query: RunQuery,
    pub by: Option<Key>,
    /// The `--where` options as given, for messages.
    pub wheres: Vec<String>,
}

impl Selection {
    pub fn parse(wheres: &[String], by: Option<&str>) -> Result<Selection, InputError> {
        Ok(Selection {
            query: query(wheres)?,
            by: by.map(Key::parse).transpose()?,
            wheres: wheres.to_vec(),
        })
    }

    /// Neither `--where` nor `--by`: runs are named one by one.
    pub fn is_empty(&self) -> bool {
        self.query.conds.is_empty() && self.by.is_none()
    }

    /// Whether a run passes every `--where` (as the store's query would say).
    pub fn matches(&self, f: Facts<'_>) -> bool {
        let q = &self.query;
        q.conds.iter().all(|k| {
            q.conds
                .iter()
                .filter(|c| c.kind() == k.kind())
                .any(|c| cond_matches(c, f))
        })
    }
}

/// One condition on a run's facts, as [`Cond`] says it (and the store's SQL tests it).
pub fn cond_matches(c: &Cond, f: Facts<'_>) -> bool {
    match c {
        Cond::Host(h) => f.host == Some(h.as_str()),
        Cond::Kernel(k) => f.kernel.is_some_and(|r| {
            r == k
                || r.strip_prefix(k.as_str())
                    .is_some_and(|rest| rest.starts_with(['.', '-', '+']))
        }),
        Cond::Cpu(c) => f
            .cpu
            .is_some_and(|m| m.to_lowercase().contains(&c.to_lowercase())),
        Cond::Label(l) => f.label == Some(l.as_str()),
        Cond::Started(from, to) => (*from..*to).contains(&f.started_ns),
    }
}

/// A fact of a run that `--where` and `--by` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Host,
    Kernel,
    Cpu,
    Label,
    Date,
}

/// The keys, in the order the usage error lists them.
pub const KEYS: [(&str, Key, &str); 5] = [
    ("host", Key::Host, "the host name, exactly"),
    (
        "kernel",
        Key::Kernel,
        "the kernel release, or its start up to a '.', '-' or '+' (kernel=6.12 is 6.12.*)",
    ),
    (
        "cpu",
        Key::Cpu,
        "text in the CPU model, any case (cpu=epyc)",
    ),
    ("label", Key::Label, "the label, exactly"),
    (
        "date",
        Key::Date,
        "the UTC day, month or year the run started (date=2026-11-25, date=2026-11)",
    ),
];

/// The keys in words, for help texts and errors.
pub fn keys_help() -> String {
    KEYS.iter()
        .map(|(name, _, what)| format!("{name} ({what})"))
        .collect::<Vec<_>>()
        .join("; ")
}

impl Key {
    pub fn parse(s: &str) -> Result<Key, InputError> {
        KEYS.iter()
            .find(|(name, _, _)| *name == s.trim())
            .map(|(_, k, _)| *k)
            .ok_or_else(|| InputError::InvalidValue {
                what: "key",
                value: s.chars().take(40).collect(),
                why: format!(
                    "runs are filtered and grouped by {}",
                    KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
                ),
            })
    }

    pub fn name(self) -> &'static str {
        KEYS.iter()
            .find(|(_, k, _)| *k == self)
            .map_or("?", |(n, _, _)| n)
    }

    /// The fact as the database groups runs by it.
    pub fn grouped_by(self) -> crate::store::GroupBy {
        use crate::store::GroupBy;
        match self {
            Key::Host => GroupBy::Host,
            Key::Kernel => GroupBy::Kernel,
            Key::Cpu => GroupBy::Cpu,
            Key::Label => GroupBy::Label,
            Key::Date => GroupBy::Day,
        }
    }

    /// The run's value of this fact ("" when unknown), as `--by` groups it.
    pub fn value_of(self, f: Facts<'_>) -> String {
        let s = |v: Option<&str>| v.unwrap_or_default().to_string();
        match self {
            Key::Host => s(f.host),
            Key::Kernel => s(f.kernel),
            Key::Cpu => s(f.cpu),
            Key::Label => s(f.label),
            Key::Date => utc_day(f.started_ns),
        }
    }
}

/// One `--where KEY=VALUE` as the store's condition.
pub fn parse_where(s: &str) -> Result<Cond, InputError> {
    let bad = |why: String| InputError::InvalidValue {
        what: "--where",
        value: s.chars().take(60).collect(),
        why,
    };
    let Some((key, value)) = s.split_once('=') else {
        return Err(bad(format!(
            "give KEY=VALUE, with KEY one of: {}",
            keys_help()
        )));
    };
    let key = Key::parse(key).map_err(|e| bad(e.to_string()))?;
    let value = value.trim().to_string();
    if value.is_empty() && key != Key::Label {
        return Err(bad("the value is empty".into()));
    }
    Ok(match key {
        Key::Host => Cond::Host(value),
        Key::Kernel => Cond::Kernel(value),
        Key::Cpu => Cond::Cpu(value),
        Key::Label => Cond::Label(value),
        Key::Date => {
            let (from, to) = date_range(&value)
                .ok_or_else(|| bad("give a UTC date as YYYY-MM-DD, YYYY-MM or YYYY".into()))?;
            Cond::Started(from, to)
        }
    })
}

/// `--since DATE` (YYYY-MM-DD, UTC) as Unix nanoseconds.
pub fn parse_since(s: &str) -> Result<i64, InputError> {
    match date_range(s.trim()) {
        Some((from, _)) if s.trim().len() == 10 => Ok(from),
        _ => Err(InputError::InvalidValue {
            what: "--since",
            value: s.chars().take(40).collect(),
            why: "give a UTC date as YYYY-MM-DD".into(),
        }),
    }
}

/// The query of `runs`, `compare` and `report` from their `--where` options.
pub fn query(wheres: &[String]) -> Result<RunQuery, InputError> {
    Ok(RunQuery {
        conds: wheres
            .iter()
            .map(|w| parse_where(w))
            .collect::<Result<_, _>>()?,
        ..RunQuery::default()
    })
}

const DAY_NS: i64 = 86_400 * 1_000_000_000;

fn days_in_month(y: i64, m: i64) -> i64 {
    days_from_civil(
        if m == 12 { y + 1 } else { y },
        if m == 12 { 1 } else { m + 1 },
        1,
    ) - days_from_civil(y, m, 1)
}

/// `[from, to)` in Unix ns of a UTC year, month or day.
fn date_range(s: &str) -> Option<(i64, i64)> {
    let parts: Vec<&str> = s.split('-').collect();
    let num = |p: &str, len: usize| -> Option<i64> {
        (p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let y = num(parts.first()?, 4)?;
    let (from, to) = match parts.len() {
        1 => (days_from_civil(y, 1, 1), days_from_civil(y + 1, 1, 1)),
        2 | 3 => {
            let m = num(parts[1], 2).filter(|m| (1..=12).contains(m))?;
            if parts.len() == 2 {
                let from = days_from_civil(y, m, 1);
                (from, from + days_in_month(y, m))
            } else {
                let d = num(parts[2], 2).filter(|d| (1..=days_in_month(y, m)).contains(d))?;
                let from = days_from_civil(y, m, d);
                (from, from + 1)
            }
        }
        _ => return None,
    };
    Some((from.checked_mul(DAY_NS)?, to.checked_mul(DAY_NS)?))
}

/// "2026-11-25" from Unix nanoseconds.
pub fn utc_day(ns: i64) -> String {
    let (y, m, d) = crate::model::civil_from_days(ns.div_euclid(DAY_NS));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Kernel releases in version order: the numbers compared as numbers ("6.9" before "6.12"),
/// the text between them as text, a release that is a prefix of another first.
pub fn version_cmp(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let o = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((true, _), (false, _)) => Ordering::Greater,
            ((false, _), (true, _)) => Ordering::Less,
            ((false, p), (false, q)) => p.cmp(q),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// How the groups of `--by key` are ordered: kernels by version, dates in time, the rest by
/// name.
pub fn group_cmp(key: Key, a: &str, b: &str) -> Ordering {
    match key {
        Key::Kernel => version_cmp(a, b),
        _ => a.cmp(b),
    }
}

/// The groups the database counted for `key` ([`crate::store::Backend::count_groups`]), each
/// named by its value as [`Key::value_of`] names it ("" when unknown; the day of a `date`
/// group), in [`group_cmp`] order; groups of one name (no value and an empty one) merged.
pub fn counted(
    key: Key,
    counts: Vec<crate::store::GroupCount>,
) -> Vec<(String, crate::store::GroupCount)> {
    let mut groups: Vec<(String, crate::store::GroupCount)> = Vec::new();
    for c in counts {
        let name = match key {
            Key::Date => utc_day(c.newest_ns),
            _ => c.value.clone().unwrap_or_default(),
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, g)) => {
                g.runs += c.runs;
                g.complete += c.complete;
                g.newest_ns = g.newest_ns.max(c.newest_ns);
            }
            None => groups.push((name, c)),
        }
    }
    groups.sort_by(|a, b| group_cmp(key, &a.0, &b.0));
    groups
}

/// The items grouped by `key` (the value of each from `facts`), the groups in [`group_cmp`]
/// order, each keeping the items' order and at most `per_group` of them.
pub fn group<T>(
    items: impl IntoIterator<Item = T>,
    key: Key,
    facts: impl Fn(&T) -> String,
    per_group: usize,
) -> Vec<(String, Vec<T>)> {
    let mut groups: Vec<(String, Vec<T>)> = Vec::new();
    for r in items {
        let v = facts(&r);
        match groups.iter_mut().find(|(k, _)| *k == v) {
            Some((_, g)) => {
                if g.len() < per_group {
                    g.push(r);
                }
            }
            None => groups.push((v, vec![r])),
        }
    }
    groups.sort_by(|a, b| group_cmp(key, &a.0, &b.0));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_sort_by_version_not_text() {
        let mut k = vec![
            "6.12.9-amd64",
            "5.10.0-28-amd64",
            "6.9.7-amd64",
            "6.1.0-18-amd64",
            "6.1.0-9-amd64",
            "4.19",
        ];
        k.sort_by(|a, b| version_cmp(a, b));
        assert_eq!(
            k,
            [
                "4.19",
                "5.10.0-28-amd64",
                "6.1.0-9-amd64",
                "6.1.0-18-amd64",
                "6.9.7-amd64",
                "6.12.9-amd64"
            ]
        );
    }

    #[test]
    fn where_parses_each_key_and_refuses_others_listing_the_keys() {
        assert_eq!(parse_where("host=a").unwrap(), Cond::Host("a".into()));
        assert_eq!(
            parse_where("kernel=6.12").unwrap(),
            Cond::Kernel("6.12".into())
        );
        let e = parse_where("colour=red").unwrap_err().to_string();
        for k in ["host", "kernel", "cpu", "label", "date"] {
            assert!(e.contains(k), "{e}");
        }
        assert!(parse_where("kernel").is_err());
        assert!(parse_where("date=2026-13").is_err());
        assert!(parse_where("date=2026-02-30").is_err());
    }

    #[test]
    fn the_selection_matches_runs_as_the_stores_query_does() {
        // The same cases as store::scale_tests' query test, tested on the facts directly.
        let facts = |host, kernel, cpu| Facts {
            host: Some(host),
            kernel: Some(kernel),
            cpu: Some(cpu),
            label: None,
            started_ns: 0,
        };
        let sel = |w: &[&str]| {
            let w: Vec<String> = w.iter().map(|s| s.to_string()).collect();
            Selection::parse(&w, None).unwrap()
        };
        let a = facts("a", "6.1.0-18-amd64", "AMD EPYC 7B13");
        let b = facts("b", "6.12.9", "Intel Xeon");
        let c = facts("a", "6.120", "AMD EPYC 9654");
        let d = facts("c", "6.12", "Intel Xeon");
        let pick = |w: &[&str]| -> Vec<bool> {
            let s = sel(w);
            [a, b, c, d].iter().map(|f| s.matches(*f)).collect()
        };
        assert_eq!(pick(&["kernel=6.12"]), [false, true, false, true]);
        assert_eq!(pick(&["kernel=6.1"]), [true, false, false, false]);
        assert_eq!(pick(&["host=a", "host=b"]), [true, true, true, false]);
        assert_eq!(
            pick(&["host=a", "kernel=6.120"]),
            [false, false, true, false]
        );
        assert_eq!(pick(&["cpu=epyc"]), [true, false, true, false]);
    }

    #[test]
    fn dates_are_utc_days_months_and_years() {
        let Cond::Started(from, to) = parse_where("date=2026-11-25").unwrap() else {
            panic!("not a date")
        };
        assert_eq!(utc_day(from), "2026-11-25");
        assert_eq!(to - from, DAY_NS);
        let Cond::Started(from, to) = parse_where("date=2024-02").unwrap() else {
            panic!("not a date")
        };
        assert_eq!(
            (utc_day(from), to - from),
            ("2024-02-01".into(), 29 * DAY_NS)
        );
        assert_eq!(parse_since("1970-01-02").unwrap(), DAY_NS);
        assert!(parse_since("2026-11").is_err());
    }
}
