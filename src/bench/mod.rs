//! The registry of benchmarks: what each one is (metadata, the paper's words and count) and
//! how to run its hot loop.
//!
//! A benchmark follows lmbench's shape: `setup` (outside the timed region), `run(iterations)`
//! (the hot loop, nothing else) and `teardown`. A benchmark never reads a clock and never
//! prints; the harness does both. Each family lives in its own file and exposes `specs()`;
//! [`all`] concatenates them in the order of the paper's tables, which is the order of every
//! listing and report. Adding a benchmark touches its family file, or one new file plus one
//! line in [`all`].

use crate::error::{BenchError, InputError};

pub mod exec;
pub mod fork;
pub(crate) mod forker;
pub mod ipc;
pub mod lebench;
pub mod paging;
pub mod ready;
pub mod signal;
pub mod syscall;

/// The paper's grouping, which is also how reports split their tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Table 1/2: kernel micro-operations (system calls, signals, pipes, sockets, fork, exec).
    Kernel,
    /// Tables 6/7: the paging tests.
    Paging,
    /// LEBench's core operations (issue #19): not in the default selection.
    Lebench,
}

impl Group {
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Kernel => "kernel",
            Group::Paging => "paging",
            Group::Lebench => "lebench",
        }
    }

    /// Whether a run without ids (`sysperf run`) includes the group: the papers' tables do;
    /// LEBench's operations are chosen by id or glob (`sysperf run 'le-*'`), which keeps the
    /// default run as long as it was.
    pub fn in_default_run(self) -> bool {
        !matches!(self, Group::Lebench)
    }
}

/// A chart of the report and of `sysperf plot --group NAME`: tests of similar magnitude on
/// one axis (Table 2 spans 0.1 to 300 us, which no single axis shows well). Each family
/// declares its chart, or names another family's, and every spec carries it; [`charts`]
/// lists them.
#[derive(Debug, PartialEq, Eq)]
pub struct Chart {
    /// The group's name (`--group NAME`).
    pub name: &'static str,
    pub title: &'static str,
    /// What the group holds, for `plot --help`, when its name does not say it.
    pub about: Option<&'static str>,
}

/// The chart of tests this sysperf does not know (runs of another version, imported).
pub static OTHER: Chart = Chart {
    name: "other",
    title: "Other tests",
    about: None,
};

/// Every chart: the benchmarks' in registry order, each once, then [`OTHER`].
pub fn charts() -> Vec<&'static Chart> {
    let mut out: Vec<&'static Chart> = Vec::new();
    for s in all() {
        if !out.iter().any(|c| c.name == s.chart.name) {
            out.push(s.chart);
        }
    }
    out.push(&OTHER);
    out
}

/// The chart test `id` is drawn on: its spec's, else [`OTHER`].
pub fn chart_of(id: &str) -> &'static Chart {
    find(id).map_or(&OTHER, |s| s.chart)
}

/// How many processes a benchmark runs at once, which decides what CPU placement means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One process (possibly creating short-lived children that inherit its CPU).
    Single,
    /// Two processes exchanging work for the whole trial (placement: same, spread or free).
    Pair,
}

/// Static description of one benchmark; the single source for `list`, help, filters and tests.
pub struct Spec {
    /// Registry id, exactly as in the paper's tables (`execs0null-1kenv` for the 1K env row).
    pub id: &'static str,
    /// Row label in Table 2/7 style output.
    pub label: &'static str,
    pub group: Group,
    /// The chart it is drawn on (`report`, `sysperf plot --group`).
    pub chart: &'static Chart,
    /// The paper's description (Tables 1 and 6).
    pub paper: &'static str,
    /// What sysperf does today for it.
    pub today: &'static str,
    /// Operations in the paper's run; table seconds are scaled to this count.
    pub paper_count: u64,
    /// What one operation is.
    pub unit: &'static str,
    /// Operations performed by one iteration of `run`.
    pub ops_per_iteration: u64,
    pub shape: Shape,
    /// Makes a fresh instance in the worker process.
    pub make: fn() -> Box<dyn Benchmark>,
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec").field("id", &self.id).finish()
    }
}

/// CPU placement of a benchmark's processes, decided by the harness before `setup`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Placement {
    /// The worker and its children share the worker's pinning (or lack of it).
    #[default]
    Inherit,
    /// The second process of a pair pins itself to this CPU right after fork.
    ChildOn(u32),
}

/// What a benchmark may ask of the harness during setup. The default, children placed
/// where the worker is, is what a benchmark's own tests run it with.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    pub placement: Placement,
}

impl Ctx {
    /// Call first in every long-lived child a benchmark forks: dies with its parent (so
    /// nothing outlives a killed run) and applies the child's CPU placement.
    pub fn child_init(&self) {
        crate::sys::set_parent_death_signal(libc::SIGKILL);
        if let Placement::ChildOn(cpu) = self.placement {
            // A failure leaves the child where the scheduler puts it; the harness records the
            // placement it asked for, and the CPU the parent ran on.
            let _ = crate::sys::set_affinity(&[cpu]);
        }
    }
}

/// One benchmark instance, living in a worker process for exactly one trial.
pub trait Benchmark {
    /// Prepares everything the hot loop needs (memory, descriptors, children). Not timed.
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError>;
    /// Performs exactly `iterations` iterations and reaps any child it used, so that the
    /// children's CPU time is accounted to the trial. Timed.
    fn run(&mut self, iterations: u64) -> Result<(), BenchError>;
    /// Releases what setup made. Not timed.
    fn teardown(&mut self) -> Result<(), BenchError> {
        Ok(())
    }
    /// When the operations of `run` were done by a helper process that stays alive between
    /// runs (the paper's forks and execs programs, see `forker`), what it reports of the last
    /// run; the harness counts its own usage as the test process's, its children's as the
    /// children's, and its size as the forking process's. None for most benchmarks.
    fn helper(&mut self) -> Option<Helper> {
        None
    }
    /// Whether every trial takes the system-wide /proc counters (as `run --observe` does for
    /// all), because what this benchmark reports is in them (the network suite's softirqs).
    fn counted(&self) -> bool {
        false
    }
}

/// Checks a reaped child's exit code; shared by the fork and exec families and the suites' own
/// children.
pub(crate) fn check_status(op: &str, code: i32, want: i32) -> Result<(), BenchError> {
    if code != want {
        return Err(BenchError::Protocol(format!(
            "{op}: child exited with {code}, expected {want}"
        )));
    }
    Ok(())
}

/// A helper process's account of one run: its own usage, its reaped children's, and its size
/// when the run began.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Helper {
    pub own: crate::model::Usage,
    pub children: crate::model::Usage,
    pub rss_bytes: u64,
    pub rss_anon_bytes: u64,
    pub maps: u64,
}

/// Every benchmark, in the order of the paper's Table 2 (udg tests after the pipe tests),
/// then Table 7, then LEBench's operations.
pub fn all() -> Vec<&'static Spec> {
    let mut v: Vec<&'static Spec> = Vec::new();
    v.extend(syscall::SPECS);
    v.extend(signal::SPECS);
    v.extend(ipc::SPECS);
    v.extend(fork::SPECS);
    v.extend(exec::SPECS);
    v.extend(paging::SPECS);
    v.extend(lebench::SPECS);
    v
}

/// The spec with this exact id.
pub fn find(id: &str) -> Option<&'static Spec> {
    all().into_iter().find(|s| s.id == id)
}

/// Resolves a user's selection (ids and shell-style globs with `*`, `?` and `[...]`) into
/// specs in registry order, without duplicates. An empty selection means every benchmark of
/// the default run ([`Group::in_default_run`]).
/// Exactly one benchmark for a command that takes one (`trace`): an id or a glob matching one.
pub fn select_one(pattern: &str, command: &str) -> Result<&'static Spec, InputError> {
    match select(&[pattern.to_string()])?.as_slice() {
        [one] => Ok(*one),
        many => Err(InputError::InvalidValue {
            what: "benchmark",
            value: pattern.to_string(),
            why: format!(
                "{command} takes one benchmark; this matches {} ({})",
                many.len(),
                many.iter().map(|s| s.id).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

pub fn select(patterns: &[String]) -> Result<Vec<&'static Spec>, InputError> {
    let registry = all();
    if patterns.is_empty() {
        return Ok(registry
            .into_iter()
            .filter(|s| s.group.in_default_run())
            .collect());
    }
    let mut chosen = vec![false; registry.len()];
    for p in patterns {
        let is_glob = p.contains(['*', '?', '[']);
        let mut matched = false;
        for (i, s) in registry.iter().enumerate() {
            if glob_match(p, s.id) {
                chosen[i] = true;
                matched = true;
            }
        }
        if !matched {
            return Err(if is_glob {
                InputError::EmptyGlob { pattern: p.clone() }
            } else {
                InputError::UnknownBenchmark {
                    given: p.clone(),
                    suggestions: suggestions(p, &registry),
                }
            });
        }
    }
    Ok(registry
        .into_iter()
        .zip(chosen)
        .filter_map(|(s, c)| c.then_some(s))
        .collect())
}

/// Up to three ids closest to a mistyped one.
fn suggestions(given: &str, registry: &[&'static Spec]) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = registry
        .iter()
        .map(|s| (strsim::jaro_winkler(given, s.id), s.id))
        .filter(|(score, _)| *score > 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, id)| id.to_string())
        .collect()
}

/// Shell-style glob: `*` any run, `?` any one character, `[abc]`/`[a-z]`/`[!x]` a class.
/// A malformed class (no closing `]`) matches its `[` literally.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|i| glob_at(&p[1..], &t[i..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => match (class_end(p), t.first()) {
            (Some(end), Some(&c)) => {
                class_matches(&p[1..end], c) && glob_at(&p[end + 1..], &t[1..])
            }
            (Some(_), None) => false,
            (None, Some(&c)) => c == '[' && glob_at(&p[1..], &t[1..]),
            (None, None) => false,
        },
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

fn class_end(p: &[char]) -> Option<usize> {
    // The first character after '[' (or after '[!') may be ']' itself.
    let start = if p.get(1) == Some(&'!') { 2 } else { 1 };
    (start + 1..p.len()).find(|&i| p[i] == ']')
}

fn class_matches(class: &[char], c: char) -> bool {
    let (neg, body) = match class.first() {
        Some('!') => (true, &class[1..]),
        _ => (false, class),
    };
    let mut i = 0;
    let mut hit = false;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == '-' {
            hit |= body[i] <= c && c <= body[i + 2];
            i += 3;
        } else {
            hit |= body[i] == c;
            i += 1;
        }
    }
    hit != neg
}

/// The ids the core suite must register: the paper's Table 1, the run script's udg tests
/// and Table 6, in table order.
#[cfg(test)]
pub(crate) const PAPER_IDS: &[&str] = &[
    "syscall",
    "csw",
    "signocsw",
    "pipeself4",
    "pipeself512",
    "pipediscard4",
    "pipediscard512",
    "pipediscard4.4k",
    "pipediscard512.4k",
    "pipeback4",
    "pipeback512",
    "udgself4",
    "udgself512",
    "udgdiscard4",
    "udgdiscard512",
    "udgback4",
    "udgback512",
    "forks0",
    "forks1k",
    "forks100k",
    "vforks0",
    "vforks1k",
    "vforks100k",
    "execs0null",
    "execs0null-1kenv",
    "execs1knull",
    "execs1knull-1kenv",
    "execs100knull",
    "vexecs0null",
    "vexecs1knull",
    "vexecs100knull",
    "execs0big",
    "execs1kbig",
    "execs100kbig",
    "vexecs0big",
    "vexecs1kbig",
    "vexecs100kbig",
    "seqpage",
    "seqpage-v",
    "randpage",
    "randpage-v",
    "gausspage.1",
    "gausspage.10",
    "gausspage.30",
    "gausspage.40",
    "gausspage.50",
    "gausspage.60",
    "gausspage.80",
    "gausspage.inf",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_holds_exactly_the_papers_ids_in_table_order() {
        let ids: Vec<&str> = all()
            .iter()
            .filter(|s| s.group != Group::Lebench)
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, PAPER_IDS);
        assert_eq!(ids.len(), 49);
        // LEBench's operations follow the papers' tables.
        assert!(all()[49..].iter().all(|s| s.group == Group::Lebench));
    }

    #[test]
    fn every_spec_is_complete() {
        for s in all() {
            assert!(!s.paper.is_empty() && !s.today.is_empty(), "{}", s.id);
            assert!(s.paper_count > 0 && s.ops_per_iteration > 0, "{}", s.id);
            assert!(!s.unit.is_empty() && !s.label.is_empty(), "{}", s.id);
            // Ids must be usable unquoted on a command line and in a file name.
            assert!(
                s.id.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'),
                "{}",
                s.id
            );
        }
    }

    #[test]
    fn globs_select_in_registry_order() {
        let got: Vec<&str> = select(&["pipeback*".into(), "syscall".into()])
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(got, ["syscall", "pipeback4", "pipeback512"]);
        // The default run is the papers' 49; LEBench's operations are asked for by glob.
        assert_eq!(select(&[]).unwrap().len(), 49);
        assert_eq!(
            select(&["le-*".into()]).unwrap().len(),
            lebench::SPECS.len()
        );
        let g: Vec<&str> = select(&["gausspage.[1-4]*".into()])
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(
            g,
            [
                "gausspage.1",
                "gausspage.10",
                "gausspage.30",
                "gausspage.40"
            ]
        );
    }

    #[test]
    fn unknown_id_suggests_neighbours() {
        match select(&["pipebak4".into()]) {
            Err(InputError::UnknownBenchmark { suggestions, .. }) => {
                assert_eq!(suggestions.first().map(String::as_str), Some("pipeback4"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            select(&["nothing*".into()]),
            Err(InputError::EmptyGlob { .. })
        ));
    }

    #[test]
    fn glob_edge_cases() {
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("[!x]y", "ay"));
        assert!(!glob_match("[!a]y", "ay"));
        assert!(glob_match("[", "["));
        assert!(!glob_match("[ab", "a"));
        assert!(glob_match("exec*null", "execs100knull"));
    }
}
