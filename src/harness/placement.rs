//! CPU placement: which CPUs a benchmark's processes run on, decided before each benchmark and
//! recorded with its result. Pure apart from reading this process's allowed CPUs.
//!
//! Two-process benchmarks run `same` (both pinned to one CPU, as on the papers'
//! uniprocessors; the default), `spread` (parent and child pinned to different CPUs) or `free`
//! (the scheduler decides). One-process benchmarks, and the short-lived children of fork and
//! exec tests, are pinned to the first chosen CPU under `same` and `spread` and left free
//! under `free`.

use crate::bench::Shape;
use crate::error::InputError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Same,
    Spread,
    Free,
}

impl Mode {
    /// Every mode, in the order `--placement` lists them.
    pub const ALL: [Mode; 3] = [Mode::Same, Mode::Spread, Mode::Free];

    /// The mode with this name.
    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Same => "same",
            Mode::Spread => "spread",
            Mode::Free => "free",
        }
    }
}

/// The CPUs a run may use, in order of preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuChoice {
    pub cpus: Vec<u32>,
    /// True when the user named them with --cpu (then nothing else is used, even under free).
    pub explicit: bool,
}

impl CpuChoice {
    /// From --cpu (validated against `allowed`) or, by default, the allowed CPUs in reverse
    /// order: CPU 0 usually takes more interrupts and housekeeping, so the last CPU goes first.
    pub fn new(requested: Option<Vec<u32>>, allowed: &[u32]) -> Result<CpuChoice, InputError> {
        match requested {
            Some(cpus) => {
                if let Some(bad) = cpus.iter().find(|c| !allowed.contains(c)) {
                    return Err(InputError::InvalidValue {
                        what: "--cpu",
                        value: bad.to_string(),
                        why: format!(
                            "CPU {bad} is not available to this process (allowed: {}); choose from those",
                            crate::units::format_list(allowed)
                        ),
                    });
                }
                Ok(CpuChoice {
                    cpus,
                    explicit: true,
                })
            }
            None => Ok(CpuChoice {
                cpus: allowed.iter().rev().copied().collect(),
                explicit: false,
            }),
        }
    }
}

/// Where one benchmark's processes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Affinity of the worker (and children that do not re-pin); None = not pinned.
    pub worker: Option<Vec<u32>>,
    /// The CPU the second process of a pair pins itself to.
    pub child: Option<u32>,
    /// What the result records: "same", "spread", "free" or "single".
    pub label: &'static str,
    /// CPUs recorded with the result (parent first).
    pub cpus: Vec<u32>,
}

pub fn plan(mode: Mode, shape: Shape, choice: &CpuChoice) -> Result<Plan, InputError> {
    let first = *choice
        .cpus
        .first()
        .ok_or_else(|| InputError::InvalidValue {
            what: "--cpu",
            value: String::new(),
            why: "no CPU to run on".into(),
        })?;
    let free = Plan {
        worker: choice.explicit.then(|| choice.cpus.clone()),
        child: None,
        label: "free",
        cpus: choice.cpus.clone(),
    };
    Ok(match (mode, shape) {
        (Mode::Free, _) => free,
        (_, Shape::Single) => Plan {
            worker: Some(vec![first]),
            child: None,
            label: "single",
            cpus: vec![first],
        },
        (Mode::Same, Shape::Pair) => Plan {
            worker: Some(vec![first]),
            child: None,
            label: "same",
            cpus: vec![first],
        },
        (Mode::Spread, Shape::Pair) => {
            let second = *choice.cpus.get(1).ok_or_else(|| InputError::InvalidValue {
                what: "--placement",
                value: "spread".into(),
                why: format!(
                    "spread needs two CPUs but only CPU {first} is available; use --placement same or free, or name two CPUs with --cpu"
                ),
            })?;
            Plan {
                worker: Some(vec![first]),
                child: Some(second),
                label: "spread",
                cpus: vec![first, second],
            }
        }
    })
}

/// Parses a CPU list like "0-3,5" (the kernel's cpulist format).
pub fn parse_list(s: &str) -> Result<Vec<u32>, InputError> {
    let bad = |why: &str| InputError::InvalidValue {
        what: "--cpu",
        value: s.to_string(),
        why: why.to_string(),
    };
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(bad("empty item; write a list like 0-3,5"));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: u32 = lo
            .parse()
            .map_err(|_| bad("not a CPU number; write a list like 0-3,5"))?;
        let hi: u32 = hi
            .parse()
            .map_err(|_| bad("not a CPU number; write a list like 0-3,5"))?;
        if lo > hi {
            return Err(bad("a range must go upwards, like 0-3"));
        }
        if hi >= 4096 {
            return Err(bad("CPU numbers above 4095 are not supported"));
        }
        for c in lo..=hi {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_list("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_list("1").unwrap(), vec![1]);
        assert_eq!(parse_list("1,0").unwrap(), vec![1, 0]);
        for bad in ["", "a", "3-1", "1,,2", "-1", "99999"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_choice_prefers_the_last_cpu() {
        let c = CpuChoice::new(None, &[0, 1]).unwrap();
        assert_eq!(c.cpus, vec![1, 0]);
        assert!(CpuChoice::new(Some(vec![7]), &[0, 1]).is_err());
    }

    #[test]
    fn plans_follow_the_mode_and_shape() {
        let c = CpuChoice::new(None, &[0, 1]).unwrap();
        let p = plan(Mode::Same, Shape::Pair, &c).unwrap();
        assert_eq!((p.worker, p.child, p.label), (Some(vec![1]), None, "same"));
        let p = plan(Mode::Spread, Shape::Pair, &c).unwrap();
        assert_eq!((p.child, p.cpus, p.label), (Some(0), vec![1, 0], "spread"));
        let p = plan(Mode::Spread, Shape::Single, &c).unwrap();
        assert_eq!(p.label, "single");
        let p = plan(Mode::Free, Shape::Pair, &c).unwrap();
        assert_eq!((p.worker, p.label), (None, "free"));
        let one = CpuChoice::new(Some(vec![0]), &[0, 1]).unwrap();
        assert!(plan(Mode::Spread, Shape::Pair, &one).is_err());
        assert_eq!(
            plan(Mode::Free, Shape::Pair, &one).unwrap().worker,
            Some(vec![0])
        );
    }
}
