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

pub mod command;
pub mod exec;
pub mod fork;
pub(crate) mod forker;
pub mod hostspeed;
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
    /// A program given on the command line (`sysperf ab --a CMD --b CMD`): never in a
    /// default selection.
    Command,
    /// A papers' test changed where today's machines differ in a way the papers' could not
    /// (`seqpage-thp`: the region left to the machine's transparent huge pages): chosen by id,
    /// never in a default selection, so that the default run stays the papers' tables.
    Variant,
    /// The host-speed reference (`hostspeed`, #42): a user-space loop `run` adds to every
    /// round by itself; never a test of a default selection.
    Reference,
}

impl Group {
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Kernel => "kernel",
            Group::Paging => "paging",
            Group::Lebench => "lebench",
            Group::Command => "command",
            Group::Variant => "variant",
            Group::Reference => "reference",
        }
    }

    /// Whether a run without ids (`sysperf run`) includes the group: the papers' tables do;
    /// LEBench's operations are chosen by id or glob (`sysperf run 'le-*'`), which keeps the
    /// default run as long as it was.
    pub fn in_default_run(self) -> bool {
        !matches!(
            self,
            Group::Lebench | Group::Command | Group::Variant | Group::Reference
        )
    }
}

/// Whether a test of this group (as stored: [`Group::as_str`]) has a paper's operation count,
/// to which Table 2 scales its seconds. LEBench's operations (its paper counts none: 10,000
/// is sysperf's) and the host-speed reference have none, and their tables print "-" there
/// rather than seconds for an invented count (#43).
pub fn has_paper_count(group: &str) -> bool {
    !matches!(group, "lebench" | "reference")
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

/// Whose CPU time a test's User and System columns count: what `time` charged the paper's
/// program for it. csh's `time` reports the usage of the job it waited for, and 4.2BSD's
/// `exit()` adds into a process's usage that of every child it reaped
/// (`ruadd(p->p_ru, &u.u_cru)`), so a child that the Appendix A program waited for is in the
/// paper's User and System and one that it never reaped is not. Every entry of the registry
/// says which (`tests` hold each against the program's source in
/// data/reference/appendix_a.txt); the All CPU column counts every child either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// The process alone: its program forks no child (syscall, signocsw, pipeself, the paging
    /// tests) or never waits for the one it forks (csw, pipediscard, pipeback: the child is
    /// left to init), as 4.2BSD pipeback4's 3.2 + 34.2 s of CPU in 75.0 s elapsed shows.
    Own,
    /// The process and the children it waited for (`wait(&status)` in the forks and execs
    /// programs, and the vforks and vexecs made from them): forks0's 0.3 + 37.6 s of CPU in
    /// 41.0 s elapsed, and execs0null's 82.5 s of system time, most of it the exec in the child.
    Waited,
}

impl Charge {
    /// How the rule reads in a table header or `list`.
    pub fn describe(self) -> &'static str {
        match self {
            Charge::Own => "the test process's own",
            Charge::Waited => "the test process and the children it waited for",
        }
    }
}

/// The CPU time a result's User and System columns show, per operation: the summary's own
/// figures, or for a test whose program waited for its children ([`Charge::Waited`]) the
/// process with them (the summary's `whole`). Suite points, published runs (whose figures are
/// the paper's own) and runs made before sysperf kept children apart show the summary's own
/// figures. None without a summary.
pub fn charged(
    r: &crate::model::BenchResult,
) -> Option<(crate::model::Estimate, crate::model::Estimate)> {
    let s = r.summary.as_ref()?;
    let waited = find(&r.id).is_some_and(|spec| spec.charge == Charge::Waited);
    Some(match (&s.whole, waited) {
        (Some(w), true) => (w.user_ns_per_op, w.sys_ns_per_op),
        _ => (s.user_ns_per_op, s.sys_ns_per_op),
    })
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
    /// Whose CPU time its User and System columns count (the paper's `time`).
    pub charge: Charge,
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
    /// The `command` benchmark's command line (`sysperf ab --a/--b`).
    pub command: Option<command::CommandLine>,
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
    /// Performs exactly `iterations` iterations, and reaps the children it waited for as the
    /// paper's program did (the fork and exec tests' children). Timed.
    fn run(&mut self, iterations: u64) -> Result<(), BenchError>;
    /// Reaps, after the clock stopped, the children the paper's program never waited for
    /// (csw's partner, the reader of the discard and back tests): its `time` stopped when the
    /// program exited, while such a child could still be at work (pipediscard's reader
    /// draining up to a pipe's worth of messages). Returns their usage, which the trial's All
    /// CPU counts and its User and System do not; an error when one ended wrongly. Not timed.
    fn reap_unwaited(&mut self) -> Result<crate::model::Usage, BenchError> {
        Ok(crate::model::Usage::default())
    }
    /// Releases what setup made. Not timed.
    fn teardown(&mut self) -> Result<(), BenchError> {
        Ok(())
    }
    /// How many times another process used the trial's own channel while it ran (#41: a
    /// connection to `net.connect`'s listening socket, whose address any local user can
    /// read), asked after teardown: the trial's figure holds the work they cost, and the
    /// harness says so in an `intruded` warning. 0 for most benchmarks.
    fn intrusions(&mut self) -> u64 {
        0
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
/// then Table 7, then LEBench's operations, the variants of the papers' tests, the
/// command of `ab --a/--b`, and the host-speed reference.
pub fn all() -> Vec<&'static Spec> {
    let mut v: Vec<&'static Spec> = Vec::new();
    v.extend(syscall::SPECS);
    v.extend(signal::SPECS);
    v.extend(ipc::SPECS);
    v.extend(fork::SPECS);
    v.extend(exec::SPECS);
    v.extend(paging::SPECS);
    v.extend(lebench::SPECS);
    v.extend(paging::VARIANTS);
    v.extend(command::SPECS);
    v.extend(hostspeed::SPECS);
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

    /// Appendix A as the paper printed it: each program's text by name.
    fn appendix_a() -> Vec<(&'static str, String)> {
        let text = include_str!("../../data/reference/appendix_a.txt");
        let mut out: Vec<(&'static str, String)> = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('%')) {
            if let Some(name) = line.strip_prefix("=== ") {
                out.push((name, String::new()));
            } else if let Some((_, body)) = out.last_mut() {
                body.push_str(line);
                body.push('\n');
            }
        }
        out
    }

    /// The Appendix A program a test's figures came from: the vforks and vexecs programs
    /// "are constructed from the forks and execs programs ... by substituting calls to fork
    /// with calls to vfork"; the run script's udg tests have no source in the appendix and are
    /// the pipe programs' shapes over datagram sockets.
    fn program_of(id: &str) -> &'static str {
        let id = id
            .strip_prefix('v')
            .filter(|r| r.starts_with("fork") || r.starts_with("exec"))
            .unwrap_or(id);
        [
            "syscall",
            "csw",
            "signocsw",
            "pipeself",
            "pipediscard",
            "pipeback",
            "forks",
            "execs",
            "seqpage",
            "randpage",
            "gausspage",
        ]
        .into_iter()
        .find(|p| {
            id.starts_with(p)
                || id
                    .strip_prefix("udg")
                    .is_some_and(|r| format!("pipe{r}").starts_with(p))
        })
        .unwrap_or_else(|| panic!("{id}: no Appendix A program"))
    }

    #[test]
    fn every_tests_cpu_charge_is_what_its_appendix_a_program_was_charged() {
        let sources = appendix_a();
        let run_script = &sources.iter().find(|(n, _)| *n == "run").unwrap().1;
        let papers =
            |s: &&Spec| !matches!(s.group, Group::Lebench | Group::Command | Group::Reference);
        for s in all().into_iter().filter(papers) {
            let program = program_of(s.id);
            let (_, src) = sources
                .iter()
                .find(|(n, _)| *n == program)
                .unwrap_or_else(|| panic!("{program} is not in Appendix A"));
            // csh's time charged a child only if the program reaped it: wait() in its source.
            let waits = src.contains("wait(");
            let want = if waits { Charge::Waited } else { Charge::Own };
            assert_eq!(
                s.charge,
                want,
                "{}: its program {program} {} wait()",
                s.id,
                if waits { "calls" } else { "never calls" }
            );
            // The run script timed each of these programs under its own name.
            let name = [
                "syscall",
                "csw",
                "signocsw",
                "pipeself",
                "pipediscard",
                "pipeback",
                "udgself",
                "udgdiscard",
                "udgback",
                "forks",
                "vforks",
                "execs",
                "vexecs",
                "seqpage",
                "randpage",
                "gausspage",
            ]
            .into_iter()
            .filter(|n| s.id.starts_with(n))
            .max_by_key(|n| n.len())
            .unwrap();
            assert!(
                run_script.contains(&format!("time {name} ")),
                "{}: 'time {name}' is not in the run script",
                s.id
            );
        }
        // The fork and exec tests waited for their children; the IPC tests' children were
        // never reaped (4.2BSD pipeback4: 3.2 + 34.2 s of CPU in 75.0 s elapsed).
        assert_eq!(find("forks0").unwrap().charge, Charge::Waited);
        assert_eq!(find("vexecs100kbig").unwrap().charge, Charge::Waited);
        assert_eq!(find("pipeback4").unwrap().charge, Charge::Own);
        assert_eq!(find("csw").unwrap().charge, Charge::Own);
    }

    #[test]
    fn charged_cpu_is_the_whole_tree_only_for_the_tests_that_waited() {
        use crate::model::{BenchResult, Estimate, Summary, WholeCpu};
        let e = |v: f64| Estimate::single(v, 0.95, 5);
        let result = |id: &str, whole: bool| BenchResult {
            id: id.into(),
            group: "kernel".into(),
            ops_per_iteration: 1,
            paper_count: 1,
            unit: "op".into(),
            placement: "same".into(),
            cpus: vec![],
            trials: vec![],
            summary: Some(Summary {
                whole: whole.then(|| WholeCpu {
                    user_ns_per_op: e(2.0),
                    sys_ns_per_op: e(90.0),
                }),
                ..Summary::of_times(e(100.0), e(1.0), e(50.0))
            }),
            error: None,
        };
        let sys = |r: &BenchResult| charged(r).unwrap().1.median;
        assert_eq!(sys(&result("forks0", true)), 90.0);
        assert_eq!(sys(&result("execs0null", true)), 90.0);
        assert_eq!(sys(&result("pipeback4", true)), 50.0);
        // Runs made before sysperf kept children apart, and suite points: the summary's own.
        assert_eq!(sys(&result("forks0", false)), 50.0);
        assert_eq!(sys(&result("bbn.pipe@4096", true)), 50.0);
    }

    #[test]
    fn registry_holds_exactly_the_papers_ids_in_table_order() {
        let ids: Vec<&str> = all()
            .iter()
            .filter(|s| s.group.in_default_run())
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, PAPER_IDS);
        assert_eq!(ids.len(), 49);
        // LEBench's operations follow the papers' tables, then the variants, the command
        // of `ab --a/--b` and the host-speed reference.
        let rest = &all()[49..];
        assert!(rest[..rest.len() - 3]
            .iter()
            .all(|s| s.group == Group::Lebench));
        assert_eq!(rest[rest.len() - 3].id, "seqpage-thp");
        assert_eq!(rest[rest.len() - 3].group, Group::Variant);
        assert_eq!(rest[rest.len() - 2].id, "command");
        assert_eq!(rest[rest.len() - 1].id, hostspeed::ID);
        assert_eq!(rest[rest.len() - 1].group, Group::Reference);
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
