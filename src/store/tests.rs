//! Tests of the store against real database files in temporary directories.

use super::*;
use crate::model::*;
use std::collections::BTreeMap;
use tempfile::TempDir;

fn usage(base: u64) -> Usage {
    Usage {
        user_ns: base + 1,
        sys_ns: base + 2,
        minflt: base + 3,
        majflt: base + 4,
        nvcsw: base + 5,
        nivcsw: base + 6,
    }
}

fn trial(kind: TrialKind, seed: u64) -> Trial {
    Trial {
        kind,
        iterations: 1000 + seed,
        wall_ns: 123_456_789 + seed,
        usage: usage(10 * seed),
        children: seed.is_multiple_of(2).then(|| usage(seed)),
        worker_total: usage(100 * seed + 7),
        worker_rss_bytes: 4096 * (seed + 1),
        worker_maps: 40 + seed,
        migrations: Some(seed),
        cpu_start: Some(3),
        cpu_end: Some(u32::MAX),
        outlier: Outlier::Mild,
        error: Some(format!("trial {seed} failed: 'quotes' \"and\" é")),
        counters: None,
        round: seed.is_multiple_of(2).then_some(seed as u32),
        started_ns: seed
            .is_multiple_of(2)
            .then_some(1_700_000_000_000_000_000 + seed as i64),
    }
}

fn estimate(x: f64) -> Estimate {
    Estimate {
        // Values with 17 significant digits and awkward exponents, where inexact code fails.
        median: x + 0.1 + 0.2,
        ci_low: x * 0.987_654_321_012_345_6,
        ci_high: x * 1.012_345_678_901_234_5,
        ci_level: 0.953_125,
        min: -0.0,
        max: 1.797_693_134_862_315_7e308,
        mean: 5e-324,
        cv: 2.225_073_858_507_201e-308,
        n: 31,
    }
}

fn summary(x: f64) -> Summary {
    Summary {
        wall_ns_per_op: estimate(x),
        user_ns_per_op: estimate(x / 3.0),
        sys_ns_per_op: estimate(x / 7.0),
        whole: None,
        minflt_per_op: 0.333_333_333_333_333_3,
        majflt_per_op: 1e-9,
        csw_per_op: 2.000_000_000_000_000_4,
        nvcsw_per_op: 1.5,
        nivcsw_per_op: 0.5,
        migrations_per_op: Some(1e-7),
        worker_rss_bytes: i64::MAX as u64,
        worker_maps: 77,
        counters: None,
    }
}

fn result(name: &str, x: f64) -> BenchResult {
    BenchResult {
        id: name.to_string(),
        group: "ipc".to_string(),
        ops_per_iteration: 2,
        paper_count: 10_000,
        unit: "round trip".to_string(),
        placement: "spread".to_string(),
        cpus: vec![0, 5, u32::MAX],
        trials: vec![
            trial(TrialKind::Calibration, 1),
            trial(TrialKind::Warmup, 2),
            Trial {
                outlier: Outlier::None,
                migrations: None,
                cpu_start: None,
                cpu_end: None,
                error: None,
                ..trial(TrialKind::Measured, 3)
            },
            Trial {
                outlier: Outlier::Severe,
                ..trial(TrialKind::Measured, 4)
            },
        ],
        summary: Some(summary(x)),
        error: Some("partly failed".to_string()),
    }
}

fn warning(bench: Option<&str>, kind: &str) -> Warning {
    Warning {
        bench: bench.map(str::to_string),
        kind: kind.into(),
        message: format!("{kind} happened"),
    }
}

/// A small kernel configuration for the fingerprint of [`full_run`].
fn config() -> std::collections::BTreeMap<String, String> {
    crate::fingerprint::parse_kernel_config("CONFIG_HZ=250\nCONFIG_PREEMPT_VOLUNTARY=y\n")
}

pub(super) fn full_run(id: &str) -> Run {
    let mut vulnerabilities = BTreeMap::new();
    vulnerabilities.insert("meltdown".to_string(), "Not affected".to_string());
    vulnerabilities.insert(
        "spectre_v2".to_string(),
        "Mitigation: Retpolines".to_string(),
    );
    Run {
        id: id.to_string(),
        label: Some("baseline".to_string()),
        started_ns: 1_700_000_000_123_456_789,
        ended_ns: Some(1_700_000_100_987_654_321),
        complete: true,
        sysperf_version: "0.1.0".to_string(),
        source: "published".into(),
        citation: Some("Leffler et al. 1984, Table 2".into()),
        params: RunParams {
            selection: vec!["pipe*".to_string(), "syscall".to_string()],
            suites: Vec::new(),
            trials: 31,
            min_time_s: 0.1 + 0.2,
            quick: true,
            placement: "spread".to_string(),
            cpus: Some(vec![0, 2]),
            timeout_s: 60.000_000_000_000_01,
            order: Some("interleaved".into()),
            seed: Some(u64::MAX),
            group: Some("0123456789ab".into()),
            replicate: Some(2),
            precision_pct: Some(2.5),
            settle_s: Some(60.0),
            ab: Some(crate::model::AbSide {
                side: "b".into(),
                partner: "0123456789ab".into(),
                design: "duet".into(),
                command: None,
            }),
        },
        fingerprint: Fingerprint {
            hostname: Some("box".to_string()),
            os: Some("Debian GNU/Linux 12".to_string()),
            kernel_release: Some("6.1.0-18-amd64".to_string()),
            kernel_version: Some("#1 SMP PREEMPT_DYNAMIC".to_string()),
            kernel_cmdline: Some("root=/dev/sda1 quiet".to_string()),
            arch: Some("x86_64".to_string()),
            cpu_model: Some("Some CPU @ 3.00GHz".to_string()),
            cores: Some(8),
            threads: Some(16),
            memory_bytes: Some(u64::MAX),
            virtualization: Some("kvm".to_string()),
            clocksource: Some("tsc".to_string()),
            cpufreq_governor: Some("performance".to_string()),
            smt: Some("on".to_string()),
            thp: Some("madvise".to_string()),
            vulnerabilities,
            cgroup_cpu_limit: Some(1.0 / 3.0),
            cgroup_memory_limit_bytes: Some(8 << 30),
            cgroup_version: Some("2".to_string()),
            loadavg: Some([0.123_456_789_012_345_67, 1e-300, 12.5]),
            hz: Some(250),
            nohz: Some("idle".to_string()),
            kernel_config_hash: Some(crate::fingerprint::config_hash(&config())),
            kernel_config: config(),
            sysctls: [
                ("vm.overcommit_memory", "1"),
                ("net.core.rmem_default", "212992"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
            microcode: Some("0xa0011d1".to_string()),
            cpu_split: Some("tick-sampled: (CONFIG_TICK_CPU_ACCOUNTING, HZ=250)".to_string()),
        },
        overhead: Some(Overhead {
            timer_ns: 23.456_789_012_345_67,
            loop_ns_per_iteration: 0.312_345_678_901_234_56,
        }),
        results: vec![result("pipeback4", 1234.5678), result("syscall", 98.765)],
        derived: vec![
            Derived {
                na: None,
                name: "context_switch".to_string(),
                value: 0.1 + 0.7,
                unit: "ns".to_string(),
                formula: "(pipeback2 - pipeself2) / 2".to_string(),
            },
            Derived {
                na: None,
                name: "exec_overhead".to_string(),
                value: -0.0,
                unit: "ns".to_string(),
                formula: "vexec - vfork".to_string(),
            },
        ],
        warnings: vec![
            warning(None, "busy_cpu"),
            warning(Some("pipeback4"), "high_cv"),
            warning(Some("syscall"), "outlier"),
        ],
        findings: vec![
            Finding {
                id: "thp".into(),
                severity: Severity::Warn,
                title: "transparent huge pages are 'always'".into(),
                detail: "quotes ' \" and é survive".into(),
                fix: "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled".into(),
            },
            Finding {
                id: "virtualization".into(),
                severity: Severity::Info,
                title: "running virtualized (kvm)".into(),
                detail: String::new(),
                fix: "use dedicated vCPUs".into(),
            },
        ],
        series: vec![
            series("bbn.pipe", &[4.0, 4096.0]),
            series("bbn.fifo", &[4.0]),
        ],
        notes: vec!["workload: used cc, grep, sort".into()],
    }
}

/// A measured series with one point per x, each carrying a full benchmark result.
fn series(id: &str, xs: &[f64]) -> Series {
    Series {
        suite: "bbn".into(),
        id: id.into(),
        figure: "bbn.throughput".into(),
        figure_title: "Throughput against block size".into(),
        curve: "pipe \"quoted\" é".into(),
        paper: "BBN Table 1".into(),
        x_name: "block size".into(),
        x_unit: "bytes".into(),
        x_log: true,
        y_kind: YKind::BytesPerSec,
        unit: "block".into(),
        points: xs
            .iter()
            .map(|&x| SeriesPoint {
                x,
                label: (x < 10.0).then(|| "small".to_string()),
                bytes_per_op: x,
                y: Some(estimate(x * 1e6 + 0.1)),
                result: result(&format!("{id}@{x}"), x),
            })
            .collect(),
        paper_points: vec![[4.0, 1.0e5], [4096.0, 2.5e6]],
        paper_system: Some("PDP-11/70".into()),
    }
}

/// A run as `begin_run` sees it: nothing measured yet.
fn started(run: &Run) -> Run {
    Run {
        ended_ns: None,
        complete: false,
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
        ..run.clone()
    }
}

fn temp_store() -> (TempDir, Store) {
    let dir = TempDir::new().unwrap();
    let store = Store::open(&dir.path().join("sub/dir/sysperf.db")).unwrap();
    (dir, store)
}

#[path = "../../tests/it/support/pg.rs"]
mod pg_cluster;

/// A store of either backend for a test written once for both, and a way to count its rows.
struct Backing {
    store: Box<dyn Backend>,
    /// The SQLite file's directory, or the PostgreSQL database's URL.
    _dir: Option<TempDir>,
    url: Option<String>,
}

impl Backing {
    fn sqlite() -> Backing {
        let (dir, store) = temp_store();
        Backing {
            store: Box::new(store),
            _dir: Some(dir),
            url: None,
        }
    }

    /// A store in a new database of the tests' private PostgreSQL cluster; None (the test
    /// is skipped) when PostgreSQL is not installed, except under CI.
    fn postgres(test: &str) -> Option<Backing> {
        let url = pg_cluster::fresh_db(test)?;
        Some(Backing {
            store: Box::new(PgStore::connect(&url).unwrap()),
            _dir: None,
            url: Some(url),
        })
    }

    /// Runs the statements `sql` on the store's database directly.
    fn exec(&self, sql: &str) {
        match (&self.url, self.store.location()) {
            (Some(url), _) => {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                c.batch_execute(sql).unwrap();
            }
            (None, Location::Sqlite(path)) => {
                Connection::open(path).unwrap().execute_batch(sql).unwrap();
            }
            (None, other) => panic!("no way to run statements in {other}"),
        }
    }

    /// The same store opened again (migrated by the opening, as a new process would be).
    fn reopen(&self) -> Box<dyn Backend> {
        match (&self.url, self.store.location()) {
            (Some(url), _) => Box::new(PgStore::connect(url).unwrap()),
            (None, Location::Sqlite(path)) => Box::new(Store::open(&path).unwrap()),
            (None, other) => panic!("no way to open {other} again"),
        }
    }

    /// The integer the query `sql` answers, asked of the store's database directly.
    fn count(&self, sql: &str) -> i64 {
        match (&self.url, self.store.location()) {
            (Some(url), _) => {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                c.query_one(sql, &[]).unwrap().get(0)
            }
            (None, Location::Sqlite(path)) => {
                let conn = Connection::open(path).unwrap();
                conn.query_row(sql, [], |r| r.get(0)).unwrap()
            }
            (None, other) => panic!("no way to count rows in {other}"),
        }
    }
}

/// Runs each named test body (a `fn(Backing)`) once on SQLite and once on PostgreSQL, as
/// the tests `NAME::sqlite` and `NAME::postgres`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backing::sqlite());
            }
            #[test]
            fn postgres() {
                if let Some(b) = super::Backing::postgres(stringify!($name)) {
                    super::$name(b);
                }
            }
        }
    )*};
}

on_both_backends!(
    full_run_round_trips_exactly,
    a_kernel_configuration_is_stored_once_and_runs_keep_its_hash,
    series_are_appended_as_measured_and_notes_kept_by_finish,
    sparse_run_round_trips_exactly,
    non_finite_floats_in_columns_round_trip,
    non_finite_float_in_json_column_is_refused_and_nothing_written,
    save_run_is_idempotent,
    save_runs_is_all_or_nothing_and_skips_present_ids,
    incremental_run_loads_as_assembled,
    finish_run_replaces_warnings_and_derived,
    interrupted_run_keeps_finished_results,
    a_killed_runs_heartbeat_says_when_and_where_it_stopped,
    a_run_being_measured_beats_between_its_writes,
    replace_run_completes_an_unfinished_run_in_one_write,
    add_result_to_unknown_run_is_no_such_run,
    value_too_large_is_refused_and_nothing_written,
    list_runs_is_newest_first_with_counts,
    resolve_finds_runs_by_every_kind_of_spec,
    resolve_latest_on_empty_store_is_no_such_run,
    a_too_short_id_prefix_says_that_it_needs_four_digits,
    remove_run_cascades_to_every_row,
    observed_counters_round_trip_exactly,
    profiles_round_trip_in_order_and_go_with_their_run,
    fleet_queries_filter_count_and_find_a_machines_runs,
    groups_are_counted_and_chosen_by_the_database_as_listing_them_would,
    test_histories_keep_each_historys_newest_points,
    a_migrated_store_knows_its_disturbed_results_as_a_fresh_one,
    a_batch_of_runs_larger_than_an_insert_round_trips,
    import_runs_stores_a_stream_in_one_transaction,
    loads_and_writes_in_turn_on_one_store,
    load_runs_reads_runs_together_in_the_order_asked,
    observations_are_stored_listed_found_and_removed,
    traces_are_stored_found_by_benchmark_and_never_loaded_as_system_profiles,
    observations_are_imported_in_the_import_transaction,
);

/// `runs --where/--since/--limit`, the count behind "N more", and a machine's history, alike
/// on both backends (PostgreSQL reads the same conditions in its own dialect).
fn fleet_queries_filter_count_and_find_a_machines_runs(b: Backing) {
    use super::{Cond, RunQuery};
    let store = &*b.store;
    let kernels = ["6.1.0-18-amd64", "6.12.3", "6.120.1"];
    for (i, k) in kernels.iter().enumerate() {
        let mut run = full_run(&format!("00000000000{i}"));
        run.fingerprint.kernel_release = Some(k.to_string());
        run.fingerprint.hostname = Some(if i == 0 { "a" } else { "b" }.to_string());
        run.started_ns = 1_000 + i as i64;
        run.source = "measured".into();
        assert!(store.save_run(&run).unwrap());
    }
    let ids = |q: &RunQuery| -> Vec<String> {
        store
            .query_runs(q)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    let k612 = RunQuery {
        conds: vec![Cond::Kernel("6.12".into())],
        ..RunQuery::default()
    };
    assert_eq!(ids(&k612), ["000000000001"], "6.12 is not 6.120");
    let either = RunQuery {
        conds: vec![Cond::Kernel("6.12".into()), Cond::Kernel("6.1".into())],
        ..RunQuery::default()
    };
    assert_eq!(ids(&either), ["000000000001", "000000000000"]);
    let both = RunQuery {
        conds: vec![Cond::Host("b".into()), Cond::Cpu("some cpu".into())],
        since_ns: Some(1_002),
        ..RunQuery::default()
    };
    assert_eq!(ids(&both), ["000000000002"]);
    let newest = RunQuery {
        limit: Some(2),
        ..RunQuery::default()
    };
    assert_eq!(ids(&newest), ["000000000002", "000000000001"]);
    assert_eq!(
        store.count_runs(&newest).unwrap(),
        3,
        "the count ignores the limit"
    );
    assert_eq!(
        store.list_runs().unwrap()[0].cpu_model.as_deref(),
        Some("Some CPU @ 3.00GHz")
    );
    assert_eq!(
        store.machine_runs(Some("b"), Some("6.12.3"), 10).unwrap(),
        ["000000000001"]
    );
    assert!(store
        .machine_runs(None, Some("6.12.3"), 10)
        .unwrap()
        .is_empty());
}

/// #35 item 5: `--by` groups counted (`count_groups`) and their newest runs chosen
/// (`newest_per_group`) by the database give what grouping the listed runs gave, for every
/// key, with a filter, a limit, runs without a host, and days.
fn groups_are_counted_and_chosen_by_the_database_as_listing_them_would(b: Backing) {
    use super::{GroupCount, RunQuery};
    use crate::fleet::{self, Facts, KEYS};
    let store = &*b.store;
    let day = 86_400_000_000_000i64;
    for i in 0..12i64 {
        let mut run = full_run(&format!("{i:012x}"));
        run.fingerprint.kernel_release = Some(["6.1.0", "6.12.3", "6.9"][i as usize % 3].into());
        run.fingerprint.hostname =
            [Some("a"), Some("b"), None, Some("")][i as usize % 4].map(Into::into);
        run.label = (i % 5 == 0).then(|| "x".to_string());
        run.started_ns = 20_000 * day + (i % 4) * day + i;
        run.complete = i % 3 != 1;
        assert!(store.save_run(&run).unwrap());
    }
    for limit in [None, Some(7)] {
        let q = RunQuery {
            limit,
            ..RunQuery::default()
        };
        let listed = store.query_runs(&q).unwrap();
        for (_, key, _) in KEYS {
            let want: Vec<(String, GroupCount)> = fleet::group(
                listed.iter(),
                key,
                |r| key.value_of(Facts::from(*r)),
                usize::MAX,
            )
            .into_iter()
            .map(|(v, g)| {
                let count = GroupCount {
                    value: None,
                    runs: g.len() as u64,
                    complete: g.iter().filter(|r| r.complete).count() as u64,
                    newest_ns: g.iter().map(|r| r.started_ns).max().unwrap(),
                };
                (v, count)
            })
            .collect();
            let got: Vec<(String, GroupCount)> =
                fleet::counted(key, store.count_groups(&q, key.grouped_by()).unwrap())
                    .into_iter()
                    .map(|(v, g)| (v, GroupCount { value: None, ..g }))
                    .collect();
            assert_eq!(got, want, "{} {limit:?}", key.name());
            let newest: Vec<String> =
                fleet::group(listed.iter(), key, |r| key.value_of(Facts::from(*r)), 2)
                    .into_iter()
                    .flat_map(|(_, g)| g.into_iter().map(|r| r.id.clone()))
                    .collect();
            let mut chosen = store.newest_per_group(&q, key.grouped_by(), 2).unwrap();
            let mut newest = newest;
            chosen.sort();
            newest.sort();
            // A host that is unknown and one that is empty are one group by name, two in the
            // database: each keeps its 2 newest, so the database's choice holds the listing's.
            assert!(
                newest.iter().all(|id| chosen.contains(id)),
                "{} {limit:?}: {chosen:?} lacks some of {newest:?}",
                key.name()
            );
            if key != fleet::Key::Host {
                assert_eq!(chosen, newest, "{} {limit:?}", key.name());
            }
        }
    }
}

/// #35 item 5: `test_histories` (counted, then read newest first a page at a time) keeps
/// the newest points of each (host, test, placement), oldest first, as a listing of the runs
/// would: with tests that come and go (one measured only by the oldest runs, so that the
/// newest pages hold none of it), runs without a host, runs that are incomplete, published
/// or hold only failed results, ties in start time, a --where filter, and every `newest`.
/// A result whose test ran beside other work (a busy_cpu, busy_machine or steal warning for
/// it) is left out and counted; other warnings, or one for another test, leave it in. #42:
/// runs measured with other options (trials) are another history, runs whose options differ
/// only in the order of a list or in what is no option (seed, group) are not, a run without
/// an order is a sequential one, and sides of `ab` and quick runs are in no history, counted.
fn test_histories_keep_each_historys_newest_points(b: Backing) {
    use super::{Cond, Histories, HistoryPoint, RunQuery, TestHistory};
    let store = &*b.store;
    let mut runs = Vec::new();
    for i in 0..60i64 {
        let mut run = full_run(&format!("{i:012x}"));
        run.fingerprint.hostname = [Some("a"), Some("b"), None][i as usize % 3].map(Into::into);
        // Every fifth pair of runs starts at the same time: the later stored is the newer.
        run.started_ns = 1_000 + i - i64::from(i % 5 == 1);
        run.complete = i % 11 != 4;
        run.source = if i == 7 { "published" } else { "measured" }.into();
        let ok = |name: &str, x: f64| BenchResult {
            error: None,
            ..result(name, x)
        };
        // full_run is a quick `ab` side; these are plain runs but where said. Its trial
        // length, 0.1 + 0.2, is no short decimal: the store must read it back as it is.
        let ab = run.params.ab.take();
        run.params.quick = false;
        match i % 13 {
            3 => run.params.ab = ab,
            5 => run.params.quick = true,
            _ => {}
        }
        if i % 6 == 1 {
            run.params.trials = 5;
        }
        if i % 8 == 2 {
            run.params.selection.reverse();
        }
        if i % 10 == 7 {
            run.params.seed = Some(i as u64);
            run.params.group = None;
        }
        match i % 9 {
            4 => run.params.order = None,
            5 => run.params.order = Some("sequential".into()),
            _ => {}
        }
        run.results = vec![ok("syscall", 100.0 + i as f64)];
        if i < 12 {
            run.results.push(ok("pipeback4", 2_000.0 + i as f64));
        }
        if i % 4 == 0 {
            let mut single = ok("syscall", 50.0 + i as f64);
            single.placement = "single".into();
            run.results.push(single);
        }
        if i % 9 == 0 {
            // Failed: no point.
            run.results.push(result("fork", 1.0));
        }
        let warn = |bench: &str, kind: &str| crate::model::Warning {
            bench: Some(bench.into()),
            kind: crate::model::WarningKind::from(kind),
            message: format!("{kind} of {bench}"),
        };
        match i % 7 {
            2 => run.warnings.push(warn("syscall", "busy_machine")),
            3 => run.warnings.push(warn("pipeback4", "busy_cpu")),
            4 => run.warnings.push(warn("syscall", "steal")),
            5 => run.warnings.push(warn("syscall", "high_cv")),
            _ => {}
        }
        // Every pipeback4 result of the host-less runs ran beside other work: a history of
        // none but left-out results.
        if i < 12 && i % 3 == 2 {
            run.warnings.push(warn("pipeback4", "busy_cpu"));
        }
        assert!(store.save_run(&run).unwrap());
        runs.push(run);
    }
    // What a listing gives: per history, the complete measured runs' points in start order.
    let want = |newest: usize, host: Option<&str>| -> Histories {
        let mut order: Vec<&Run> = runs
            .iter()
            .filter(|r| r.complete && r.source == "measured")
            .filter(|r| host.is_none() || r.fingerprint.hostname.as_deref() == host)
            .collect();
        order.sort_by_key(|r| r.started_ns); // stable: stored order breaks ties
        let mut out: Vec<TestHistory> = Vec::new();
        let (mut ab_sides, mut quick) = (0, 0);
        for r in order {
            let measured = r.results.iter().filter(|x| x.error.is_none()).count();
            if r.params.ab.is_some() {
                ab_sides += measured;
                continue;
            }
            if r.params.quick {
                quick += measured;
                continue;
            }
            for res in r.results.iter().filter(|x| x.error.is_none()) {
                let key = (
                    r.fingerprint.hostname.clone(),
                    res.id.clone(),
                    res.placement.clone(),
                    r.params.options(),
                );
                let disturbed = r.disturbed(&res.id);
                let point = HistoryPoint {
                    run_id: r.id.clone(),
                    started_ns: r.started_ns,
                    wall_median_ns: res.summary.as_ref().unwrap().wall_ns_per_op.median,
                };
                // One history: runs that measure alike (`measures_like`).
                let at = out.iter().position(|h| {
                    (&h.host, &h.test, &h.placement, &h.options) == (&key.0, &key.1, &key.2, &key.3)
                });
                let h = match at {
                    Some(at) => &mut out[at],
                    None => {
                        out.push(TestHistory {
                            host: key.0,
                            test: key.1,
                            placement: key.2,
                            options: key.3,
                            points: Vec::new(),
                            disturbed: 0,
                        });
                        out.last_mut().unwrap()
                    }
                };
                if disturbed {
                    h.disturbed += 1;
                } else {
                    h.points.push(point);
                }
            }
        }
        for h in &mut out {
            let extra = h.points.len().saturating_sub(newest);
            h.points.drain(..extra);
        }
        out.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        Histories {
            histories: out,
            ab_sides,
            quick,
        }
    };
    // The options that make histories: trials 31 and 5, interleaved and sequential.
    let all = want(100, None);
    let mut sets: Vec<String> = all.histories.iter().map(|h| h.options.key()).collect();
    sets.sort();
    sets.dedup();
    assert_eq!(sets.len(), 4, "{sets:?}");
    assert!(all.ab_sides > 0 && all.quick > 0, "{all:?}");
    for newest in [1, 2, 3, 5, 7, 100] {
        let got = store.test_histories(&RunQuery::default(), newest).unwrap();
        assert_eq!(got, want(newest, None), "newest {newest}");
        let q = RunQuery {
            conds: vec![Cond::Host("b".into())],
            ..RunQuery::default()
        };
        let got = store.test_histories(&q, newest).unwrap();
        assert_eq!(got, want(newest, Some("b")), "newest {newest}, host b");
    }
    // #44: the same store as the version before made it (no options, reasons or points kept
    // on the runs), migrated by opening it: its runs' options read out of their parameters
    // and their points out of their results by the migration, in the store's own SQL, give
    // the same histories as the columns written with the runs.
    let kept = |b: &Backing| {
        [
            "history_options IS NOT NULL",
            "left_out_as IS NOT NULL",
            "points IS NOT NULL",
        ]
        .map(|c| b.count(&format!("SELECT count(*) FROM runs WHERE {c}")))
    };
    let written = kept(&b);
    assert_eq!(written[0] + written[1], 60, "{written:?}");
    assert!(
        written[0] > 0 && written[1] > 0 && written[2] == 60,
        "{written:?}"
    );
    b.exec(&format!(
        "{UNDO_RUN_COLUMNS} {}",
        if b.url.is_some() {
            "UPDATE sysperf_schema SET version = 8;"
        } else {
            "PRAGMA user_version = 14;"
        }
    ));
    let migrated = b.reopen();
    assert_eq!(kept(&b), written, "after the migration");
    for newest in [1, 2, 3, 5, 7, 100] {
        let got = migrated
            .test_histories(&RunQuery::default(), newest)
            .unwrap();
        assert_eq!(got, want(newest, None), "newest {newest}, migrated");
        let q = RunQuery {
            conds: vec![Cond::Host("b".into())],
            ..RunQuery::default()
        };
        let got = migrated.test_histories(&q, newest).unwrap();
        assert_eq!(
            got,
            want(newest, Some("b")),
            "newest {newest}, host b, migrated"
        );
    }
}

/// What SQLite's migration 15 and PostgreSQL's 9 add (#44: what `changes` counts of a run,
/// kept on it), taken away again: a store as the version before made it, but for the
/// schema's number.
const UNDO_RUN_COLUMNS: &str = "DROP INDEX runs_by_history; DROP INDEX runs_by_host;
    ALTER TABLE runs DROP COLUMN history_options; ALTER TABLE runs DROP COLUMN left_out_as;
    ALTER TABLE runs DROP COLUMN points;";

/// Plain measured runs on hosts a and b, each of two tests, with warnings of every sort:
/// none, a disturbing kind for one test or both, for the whole run, and of a kind that does
/// not disturb (#44).
fn busy_runs() -> Vec<Run> {
    (0..24i64)
        .map(|i| {
            let mut run = full_run(&format!("{:012x}", 0xb00 + i));
            run.fingerprint.hostname = Some(["a", "b"][i as usize % 2].into());
            run.started_ns = 1_000 + i;
            run.source = "measured".into();
            run.params.ab = None;
            run.params.quick = false;
            let ok = |name: &str, x: f64| BenchResult {
                error: None,
                ..result(name, x)
            };
            run.results = vec![ok("syscall", 100.0 + i as f64), ok("pipeback4", 900.0)];
            run.warnings = match i % 5 {
                0 => vec![],
                1 => vec![warning(Some("syscall"), "busy_cpu")],
                2 => vec![
                    warning(Some("syscall"), "busy_machine"),
                    warning(Some("pipeback4"), "busy_machine"),
                ],
                3 => vec![
                    warning(Some("syscall"), "high_cv"),
                    warning(Some("pipeback4"), "steal"),
                ],
                _ => vec![warning(None, "busy_machine")],
            };
            run
        })
        .collect()
}

/// Each stored result's `disturbed` flag, in the runs' order.
fn disturbed_flags(b: &Backing, runs: &[Run]) -> Vec<i64> {
    let mut out = Vec::new();
    for run in runs {
        for r in &run.results {
            out.push(b.count(&format!(
                "SELECT disturbed FROM results WHERE run_id = '{}' AND bench = '{}'",
                run.id, r.id
            )));
        }
    }
    out
}

/// #44 item 3: a result says whether other work ran beside its test (`results.disturbed`,
/// what `Run::disturbed` says of the stored run), whether the run was stored whole or as it
/// was measured (a result's warning in its own write, a warning known only at the end, a
/// result's later snapshot); and a store made before the flag gets it by the migration that
/// adds it, answering `changes` as the fresh store does.
fn a_migrated_store_knows_its_disturbed_results_as_a_fresh_one(b: Backing) {
    use super::RunQuery;
    let runs = busy_runs();
    let (whole, measured) = runs.split_at(18);
    for run in whole {
        assert!(b.store.save_run(run).unwrap());
    }
    for run in measured {
        // syscall's warning (if any) with its result, pipeback4's only at the end.
        let of = |bench: &str| -> Vec<Warning> {
            (run.warnings.iter())
                .filter(|w| w.bench.as_deref() == Some(bench))
                .cloned()
                .collect()
        };
        b.store.begin_run(&started(run)).unwrap();
        (b.store)
            .add_result(&run.id, &run.results[0], &of("syscall"))
            .unwrap();
        b.store.put_result(&run.id, 0, &run.results[0]).unwrap();
        b.store.add_result(&run.id, &run.results[1], &[]).unwrap();
        b.store.finish_run(run).unwrap();
    }
    let want: Vec<i64> = (runs.iter())
        .flat_map(|run| run.results.iter().map(|r| i64::from(run.disturbed(&r.id))))
        .collect();
    assert!(want.contains(&0) && want.contains(&1), "{want:?}");
    assert_eq!(disturbed_flags(&b, &runs), want);
    let fresh: Vec<_> = [1, 3, 100]
        .map(|n| b.store.test_histories(&RunQuery::default(), n).unwrap())
        .into();
    assert!(fresh[2].histories.iter().any(|h| h.disturbed > 0));
    // The store as the version before made it: no flag, SQLite's schema 13 (PostgreSQL
    // numbers its own migrations: 7, the store id of #44 item 1 being its 7th).
    let pg = b.url.is_some();
    b.exec(&format!(
        "{UNDO_RUN_COLUMNS} ALTER TABLE results DROP COLUMN disturbed; {}",
        if pg {
            "UPDATE sysperf_schema SET version = 7;"
        } else {
            "PRAGMA user_version = 13;"
        }
    ));
    let migrated = b.reopen();
    assert_eq!(disturbed_flags(&b, &runs), want, "after the migration");
    for (i, n) in [1, 3, 100].into_iter().enumerate() {
        let got = migrated.test_histories(&RunQuery::default(), n).unwrap();
        assert_eq!(got, fresh[i], "newest {n}");
    }
}

/// #44 item 3: `changes` (`test_histories`) tells the disturbed results from the result rows
/// it reads anyway: none of its statements reads the warnings (joining their distinct
/// (run, test) pairs took 6 s a statement at 100,000 busy runs), whatever the share of
/// disturbed results. Seen in SQLite's query plans of the statements it sends.
#[test]
fn histories_find_disturbed_results_without_reading_the_warnings() {
    use super::query::{test_histories, Db, Dialect, Query};
    use super::{Reader, RunQuery};
    struct Planned<'c> {
        lite: Lite<'c>,
        plans: Vec<String>,
    }
    impl Db for Planned<'_> {
        fn dialect(&self) -> Dialect {
            Dialect::Sqlite
        }
        fn rows(
            &mut self,
            q: &Query,
            each: &mut dyn FnMut(&Reader<'_>) -> Result<()>,
        ) -> Result<()> {
            let mut stmt = self
                .lite
                .0
                .prepare(&format!("EXPLAIN QUERY PLAN {}", q.sql))?;
            let plan: Vec<String> = stmt
                .query_map(params_from_iter(&q.params), |r| r.get(3))?
                .collect::<rusqlite::Result<_>>()?;
            self.plans.push(plan.join("; "));
            self.lite.rows(q, each)
        }
        fn execute(&mut self, q: &Query) -> Result<u64> {
            self.lite.execute(q)
        }
    }
    let (dir, store) = temp_store();
    for run in busy_runs() {
        assert!(store.save_run(&run).unwrap());
    }
    let conn = Connection::open(dir.path().join("sub/dir/sysperf.db")).unwrap();
    let mut db = Planned {
        lite: Lite(&conn),
        plans: Vec::new(),
    };
    let got = test_histories(&mut db, &RunQuery::default(), 3).unwrap();
    assert!(got.histories.iter().any(|h| h.disturbed > 0), "{got:?}");
    assert!(
        db.plans.iter().any(|p| p.contains("results")),
        "{:?}",
        db.plans
    );
    for plan in &db.plans {
        assert!(
            !plan
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "warnings"),
            "a statement of test_histories reads the warnings: {plan}"
        );
    }
    // The histories are counted from the runs' own columns along the index that holds them
    // all (migration 15): no result read, no run's row (its parameters) read either.
    assert!(
        db.plans[0].contains("COVERING INDEX runs_by_history") && !db.plans[0].contains("results"),
        "counting the histories reads more than the index: {}",
        db.plans[0]
    );
}

/// Every float of the run, as bits, so -0.0 and 0.0 are told apart.
fn float_bits(run: &Run) -> Vec<u64> {
    let mut out = vec![
        run.params.min_time_s.to_bits(),
        run.params.timeout_s.to_bits(),
    ];
    out.extend(run.fingerprint.cgroup_cpu_limit.map(f64::to_bits));
    out.extend(
        run.fingerprint
            .loadavg
            .iter()
            .flatten()
            .map(|f| f.to_bits()),
    );
    if let Some(o) = run.overhead {
        out.extend([o.timer_ns.to_bits(), o.loop_ns_per_iteration.to_bits()]);
    }
    for r in &run.results {
        if let Some(s) = &r.summary {
            for e in [&s.wall_ns_per_op, &s.user_ns_per_op, &s.sys_ns_per_op] {
                out.extend(
                    [
                        e.median, e.ci_low, e.ci_high, e.ci_level, e.min, e.max, e.mean, e.cv,
                    ]
                    .map(f64::to_bits),
                );
            }
            out.extend(
                [
                    s.minflt_per_op,
                    s.majflt_per_op,
                    s.csw_per_op,
                    s.nvcsw_per_op,
                    s.nivcsw_per_op,
                ]
                .map(f64::to_bits),
            );
            out.extend(s.migrations_per_op.map(f64::to_bits));
        }
    }
    out.extend(run.derived.iter().map(|d| d.value.to_bits()));
    out
}

fn full_run_round_trips_exactly(b: Backing) {
    let store = &*b.store;
    let run = full_run("0123456789ab");
    assert!(store.save_run(&run).unwrap());
    let back = store.load_run("0123456789ab").unwrap();
    assert_eq!(back, run);
    assert_eq!(float_bits(&back), float_bits(&run));
}

fn a_kernel_configuration_is_stored_once_and_runs_keep_its_hash(b: Backing) {
    let store = &*b.store;
    for id in ["0123456789a1", "0123456789a2"] {
        assert!(store.save_run(&full_run(id)).unwrap());
    }
    assert_eq!(b.count("SELECT count(*) FROM kernel_configs"), 1);
    // The runs' fingerprint JSON holds the hash, not the options.
    let with_options: i64 =
        b.count("SELECT count(*) FROM runs WHERE fingerprint_json LIKE '%CONFIG_HZ%'");
    assert_eq!(with_options, 0);
    let back = store.load_run("0123456789a2").unwrap();
    assert_eq!(back.fingerprint.kernel_config, config());
    // Another configuration is a second row.
    let mut other = full_run("0123456789a3");
    other
        .fingerprint
        .kernel_config
        .insert("CONFIG_HZ".into(), "1000".into());
    other.fingerprint.kernel_config_hash = Some(crate::fingerprint::config_hash(
        &other.fingerprint.kernel_config,
    ));
    store.save_run(&other).unwrap();
    assert_eq!(b.count("SELECT count(*) FROM kernel_configs"), 2);
    assert_eq!(
        store
            .load_run("0123456789a3")
            .unwrap()
            .fingerprint
            .kernel_config["CONFIG_HZ"],
        "1000"
    );
}

#[test]
fn findings_are_stored_with_the_run_start_and_old_rows_have_none() {
    let (_dir, store) = temp_store();
    let run = full_run("0123456789ac");
    // Findings are collected before anything is measured, so begin_run stores them.
    store.begin_run(&started(&run)).unwrap();
    assert_eq!(
        store.load_run(&run.id).unwrap().findings,
        run.findings,
        "findings after begin_run"
    );
    store.finish_run(&run).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap().findings, run.findings);
    // A row written before the column existed (NULL) reads back as no findings.
    store
        .conn
        .execute(
            "UPDATE runs SET findings_json = NULL WHERE id = ?1",
            [&run.id],
        )
        .unwrap();
    assert!(store.load_run(&run.id).unwrap().findings.is_empty());
    store
        .conn
        .execute(
            "UPDATE runs SET findings_json = 'nope' WHERE id = ?1",
            [&run.id],
        )
        .unwrap();
    assert!(
        matches!(store.load_run(&run.id), Err(StoreError::Corrupt(m)) if m.contains("findings_json"))
    );
}

fn series_are_appended_as_measured_and_notes_kept_by_finish(b: Backing) {
    let store = &*b.store;
    let run = full_run("0123456789ad");
    store.begin_run(&started(&run)).unwrap();
    for r in &run.results {
        store.add_result(&run.id, r, &[]).unwrap();
    }
    for s in &run.series {
        store.add_series(&run.id, s).unwrap();
    }
    let mid = store.load_run(&run.id).unwrap();
    assert_eq!(mid.series, run.series, "series in the order added");
    assert!(mid.notes.is_empty(), "notes come with finish_run");
    store.finish_run(&run).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), run);
    assert!(matches!(
        store.add_series("ffffffffffff", &run.series[0]),
        Err(StoreError::NoSuchRun { .. })
    ));
    // Removing the run removes its series.
    store.remove_run(&run.id).unwrap();
    assert_eq!(b.count("SELECT count(*) FROM series"), 0);
}

fn sparse_run_round_trips_exactly(b: Backing) {
    let store = &*b.store;
    let mut run = full_run("00000000000a");
    run.label = None;
    run.ended_ns = None;
    run.complete = false;
    run.overhead = None;
    run.fingerprint = Fingerprint::default();
    run.params.cpus = None;
    run.results[0].summary = None;
    run.results[0].error = None;
    run.results[0].trials.clear();
    run.results[0].cpus.clear();
    run.results[1].summary.as_mut().unwrap().migrations_per_op = None;
    run.derived.clear();
    run.warnings.clear();
    store.save_run(&run).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), run);
}

fn non_finite_floats_in_columns_round_trip(b: Backing) {
    let store = &*b.store;
    let mut run = full_run("0000000000ff");
    let s = run.results[0].summary.as_mut().unwrap();
    s.wall_ns_per_op.cv = f64::NAN;
    s.wall_ns_per_op.max = f64::INFINITY;
    s.wall_ns_per_op.min = f64::NEG_INFINITY;
    s.migrations_per_op = Some(f64::NAN);
    run.derived[0].value = f64::NAN;
    store.save_run(&run).unwrap();
    let back = store.load_run(&run.id).unwrap();
    let b = back.results[0].summary.as_ref().unwrap();
    assert!(b.wall_ns_per_op.cv.is_nan());
    assert_eq!(b.wall_ns_per_op.max, f64::INFINITY);
    assert_eq!(b.wall_ns_per_op.min, f64::NEG_INFINITY);
    assert!(b.migrations_per_op.is_some_and(f64::is_nan));
    assert!(back.derived[0].value.is_nan());
    assert_eq!(back.results[1], run.results[1]);
}

fn non_finite_float_in_json_column_is_refused_and_nothing_written(b: Backing) {
    let store = &*b.store;
    let mut run = full_run("0000000000fe");
    run.params.min_time_s = f64::NAN;
    assert!(matches!(
        store.save_run(&run),
        Err(StoreError::NotFinite { .. })
    ));
    let mut run = full_run("0000000000fd");
    run.fingerprint.cgroup_cpu_limit = Some(f64::INFINITY);
    assert!(matches!(
        store.begin_run(&run),
        Err(StoreError::NotFinite { .. })
    ));
    assert!(store.list_runs().unwrap().is_empty());
}

fn save_run_is_idempotent(b: Backing) {
    let store = &*b.store;
    let run = full_run("0123456789ab");
    assert!(store.save_run(&run).unwrap());
    let mut other = full_run("0123456789ab");
    other.label = Some("different".to_string());
    assert!(!store.save_run(&other).unwrap());
    assert_eq!(store.load_run(&run.id).unwrap(), run);
    assert_eq!(b.count("SELECT count(*) FROM results"), 2);
}

fn save_runs_is_all_or_nothing_and_skips_present_ids(b: Backing) {
    let store = &*b.store;
    let present = full_run("0123456789ab");
    assert!(store.save_run(&present).unwrap());
    let new = full_run("00000000beef");
    let saved = store
        .save_runs(&[present.clone(), new.clone(), new.clone()])
        .unwrap();
    assert_eq!(saved, [false, true, false]);
    assert_eq!(store.load_run(&new.id).unwrap(), new);
    assert_eq!(store.list_runs().unwrap().len(), 2);

    // A run that cannot be stored undoes the whole batch, the good run before it included.
    let good = full_run("00000000cafe");
    let mut bad = full_run("00000000dead");
    bad.results[0].trials[0].wall_ns = u64::MAX;
    assert!(matches!(
        store.save_runs(&[good.clone(), bad]),
        Err(StoreError::ValueTooLarge { .. })
    ));
    assert!(matches!(
        store.load_run(&good.id),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert_eq!(store.list_runs().unwrap().len(), 2);
}

/// #44: PostgreSQL takes a write's rows many to an INSERT (at most 1,000, and 65,535
/// parameters), results with ids drawn from their sequence: a batch of runs whose trials
/// and results fill several INSERTs, one of them short, reads back as written, each trial
/// with its own result, beside a run stored before.
fn a_batch_of_runs_larger_than_an_insert_round_trips(b: Backing) {
    let store = &*b.store;
    let first = full_run("0000000000f0");
    assert!(store.save_run(&first).unwrap());
    let runs: Vec<Run> = (0..40)
        .map(|i| {
            let mut run = full_run(&format!("{:012x}", 0xba7c000 + i));
            for (k, r) in run.results.iter_mut().enumerate() {
                let t = r.trials[0].clone();
                r.trials = (0..(30 + i + k))
                    .map(|j| Trial {
                        wall_ns: 1_000 + (i * 100 + j) as u64,
                        ..t.clone()
                    })
                    .collect();
            }
            run
        })
        .collect();
    let trials: usize = (runs.iter().flat_map(|r| &r.results))
        .map(|r| r.trials.len())
        .sum();
    assert!(trials > 2_000, "{trials} trials: more than two INSERTs");
    assert!(store.save_runs(&runs).unwrap().iter().all(|&s| s));
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(store.load_runs(&ids).unwrap(), runs);
    assert_eq!(store.load_run(&first.id).unwrap(), first);
}

fn incremental_run_loads_as_assembled(b: Backing) {
    let store = &*b.store;
    let run = full_run("abcdef012345");
    let mut live = started(&run);
    live.warnings.push(run.warnings[0].clone());
    store.begin_run(&live).unwrap();
    // The harness accumulates each result's warnings in run.warnings as it goes.
    store
        .add_result(&run.id, &run.results[0], &run.warnings[1..2])
        .unwrap();
    store
        .add_result(&run.id, &run.results[1], &run.warnings[2..3])
        .unwrap();
    for s in &run.series {
        store.add_series(&run.id, s).unwrap();
    }
    store.finish_run(&run).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), run);
}

fn finish_run_replaces_warnings_and_derived(b: Backing) {
    let store = &*b.store;
    let run = full_run("abcdef012345");
    store.begin_run(&run).unwrap();
    let stored = store.load_run(&run.id).unwrap();
    assert!(!stored.complete, "begin_run stores the run as incomplete");
    assert_eq!(stored.warnings, run.warnings);
    let mut end = run.clone();
    end.warnings = vec![warning(None, "only_this")];
    end.derived.truncate(1);
    store.finish_run(&end).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), end);
}

fn interrupted_run_keeps_finished_results(b: Backing) {
    let store = &*b.store;
    let run = full_run("abcdef012345");
    store.begin_run(&started(&run)).unwrap();
    store
        .add_result(&run.id, &run.results[0], &run.warnings[1..2])
        .unwrap();
    store
        .add_result(&run.id, &run.results[1], &run.warnings[2..3])
        .unwrap();
    // No finish_run: the process was stopped.
    let back = store.load_run(&run.id).unwrap();
    assert!(!back.complete);
    assert_eq!(back.ended_ns, None);
    assert_eq!(back.results, run.results);
    assert_eq!(back.warnings, run.warnings[1..3].to_vec());
    let info = &store.list_runs().unwrap()[0];
    assert!(!info.complete);
    assert_eq!((info.benchmarks, info.warnings), (2, 2));
}

/// A full run begun in `store` now (its results not stored).
fn begun_now(store: &dyn Backend) -> Run {
    let mut run = full_run("abcdef012345");
    run.started_ns = crate::harness::unix_ns();
    store.begin_run(&started(&run)).unwrap();
    run
}

/// How the store's only run stopped.
fn heard(store: &dyn Backend) -> Stopped {
    store.list_runs().unwrap()[0].stopped.clone().unwrap()
}

/// #35 item 3: an incomplete run's last write is its heartbeat; one silent for longer than
/// `ABANDONED_AFTER` is listed as abandoned, with when and where it stopped; an interrupted
/// run (it stored its end) never is.
fn a_killed_runs_heartbeat_says_when_and_where_it_stopped(b: Backing) {
    use crate::model::ABANDONED_AFTER;
    let store = &*b.store;
    let run = begun_now(store);
    let st = heard(store);
    assert_eq!((st.last_heard_ns, st.at.as_deref()), (run.started_ns, None));
    assert!(!st.abandoned, "just begun: measuring");
    store.put_result(&run.id, 0, &run.results[0]).unwrap();
    let st = heard(store);
    assert!(st.last_heard_ns >= run.started_ns);
    let counted = (run.results[0].trials.iter())
        .filter(|t| t.kind == TrialKind::Measured)
        .count();
    let want = format!("{} after {counted} counted trials", run.results[0].id);
    assert_eq!(st.at.as_deref(), Some(want.as_str()));
    assert!(!st.abandoned);
    assert_eq!(
        st.writer_alive,
        Some(true),
        "begun by this process, which runs"
    );
    // #41: silent for two hours, but its writer runs here: measuring, not abandoned.
    let back = 2 * ABANDONED_AFTER.as_nanos() as i64;
    b.count(&format!(
        "UPDATE runs SET heartbeat_ns = heartbeat_ns - {back} RETURNING CAST(1 AS BIGINT)"
    ));
    assert!(!heard(store).abandoned);
    // Its writer dies (the pid is a later process's: another start time): abandoned, still
    // saying where it stopped.
    let mut gone = crate::procfs::ProcessMark::this_process().unwrap();
    gone.start_ticks += 1;
    let gone = serde_json::to_string(&gone).unwrap();
    b.count(&format!(
        "UPDATE runs SET writer_json = '{gone}' RETURNING CAST(1 AS BIGINT)"
    ));
    let st = heard(store);
    assert_eq!(st.writer_alive, Some(false));
    assert!(st.abandoned, "{st:?}");
    assert_eq!(st.at.as_deref(), Some(want.as_str()));
    // A run that stored its end (interrupted by a signal) is not abandoned, however old.
    let mut end = run.clone();
    end.complete = false;
    end.ended_ns = Some(run.started_ns + 1);
    store.finish_run(&end).unwrap();
    assert!(!heard(store).abandoned);
    let complete = Run {
        complete: true,
        ..end
    };
    store.finish_run(&complete).unwrap();
    assert_eq!(store.list_runs().unwrap()[0].stopped, None);
}

/// #41: a run being measured beats every `BEAT_EVERY` from a thread of its own, between its
/// writes (a calibration was silent for as long as it took); a beat leaves what the last
/// write stored as it was, and a run with an end is not beaten.
fn a_run_being_measured_beats_between_its_writes(b: Backing) {
    let store = &*b.store;
    let run = begun_now(store);
    let heart = Heartbeat::start(store.location(), vec![run.id.clone()]);
    std::thread::sleep(BEAT_EVERY + BEAT_EVERY / 2);
    let st = heard(store);
    assert!(st.last_heard_ns > run.started_ns, "no beat: {st:?}");
    assert_eq!(st.at, None, "a beat stores nothing but the time");
    drop(heart);
    let mut end = started(&run);
    end.ended_ns = Some(run.started_ns + 1);
    store.finish_run(&end).unwrap();
    let before = heard(store).last_heard_ns;
    store.beat(&run.id).unwrap();
    assert_eq!(
        heard(store).last_heard_ns,
        before,
        "an ended run was beaten"
    );
}

/// #35 item 4: `sync` completes a run DST holds unfinished with one write, which deletes and
/// stores in one transaction, and leaves a copy that is whole (by now) alone.
fn replace_run_completes_an_unfinished_run_in_one_write(b: Backing) {
    let store = &*b.store;
    let run = full_run("abcdef012345");
    assert!(
        !store.replace_run(&run, &[]).unwrap(),
        "nothing stored to replace"
    );
    assert!(store.list_runs().unwrap().is_empty());
    store.begin_run(&started(&run)).unwrap();
    store
        .add_result(&run.id, &run.results[0], &run.warnings[1..2])
        .unwrap();
    // A copy with no more results and unfinished is no better.
    let mut partial = started(&run);
    partial.results = vec![run.results[0].clone()];
    assert!(!store.replace_run(&partial, &[]).unwrap());
    // One with more results is, unfinished or not; then the complete one.
    partial.results.push(run.results[1].clone());
    assert!(store.replace_run(&partial, &[]).unwrap());
    assert_eq!(store.load_run(&run.id).unwrap().results.len(), 2);
    assert!(store.replace_run(&run, &[]).unwrap());
    assert_eq!(store.load_run(&run.id).unwrap(), run);
    assert!(
        !store.replace_run(&run, &[]).unwrap(),
        "complete: left alone"
    );
    assert_eq!(store.list_runs().unwrap().len(), 1);
}

fn add_result_to_unknown_run_is_no_such_run(b: Backing) {
    let store = &*b.store;
    let run = full_run("abcdef012345");
    let err = store.add_result("ffffffffffff", &run.results[0], &[]);
    assert!(matches!(err, Err(StoreError::NoSuchRun { .. })));
    assert!(matches!(
        store.finish_run(&run),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert_eq!(b.count("SELECT count(*) FROM results"), 0);
}

fn value_too_large_is_refused_and_nothing_written(b: Backing) {
    let store = &*b.store;
    let mut run = full_run("abcdef012345");
    run.results[1].trials[2].usage.nivcsw = i64::MAX as u64 + 1;
    let err = store.save_run(&run).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::ValueTooLarge {
                what: "trial nivcsw"
            }
        ),
        "{err}"
    );
    assert!(!err.is_user_error());
    for table in ["runs", "results", "trials", "warnings", "derived"] {
        assert_eq!(b.count(&format!("SELECT count(*) FROM {table}")), 0);
    }

    // Incrementally: the failing result leaves no partial rows behind.
    let ok = full_run("abcdef012345");
    store.begin_run(&started(&ok)).unwrap();
    store.add_result(&ok.id, &ok.results[0], &[]).unwrap();
    let mut big = ok.results[1].clone();
    big.summary.as_mut().unwrap().worker_maps = u64::MAX;
    assert!(matches!(
        store.add_result(&ok.id, &big, &ok.warnings),
        Err(StoreError::ValueTooLarge { .. })
    ));
    assert_eq!(b.count("SELECT count(*) FROM results"), 1);
    assert_eq!(b.count("SELECT count(*) FROM trials"), 4);
    assert_eq!(b.count("SELECT count(*) FROM warnings"), 0);
}

fn list_runs_is_newest_first_with_counts(b: Backing) {
    let store = &*b.store;
    let mut old = full_run("111111111111");
    old.started_ns = 1;
    old.fingerprint.hostname = None;
    let new = full_run("222222222222");
    store.save_run(&old).unwrap();
    store.save_run(&new).unwrap();
    let list = store.list_runs().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].id, new.id);
    assert_eq!(list[0].label.as_deref(), Some("baseline"));
    assert_eq!(list[0].started_ns, new.started_ns);
    assert_eq!(list[0].ended_ns, new.ended_ns);
    assert!(list[0].complete);
    assert_eq!(list[0].hostname.as_deref(), Some("box"));
    assert_eq!(list[0].kernel_release.as_deref(), Some("6.1.0-18-amd64"));
    assert_eq!((list[0].benchmarks, list[0].warnings), (2, 3));
    assert_eq!(list[1].id, old.id);
    assert_eq!(list[1].hostname, None);
}

fn resolve_finds_runs_by_every_kind_of_spec(b: Backing) {
    let store = &*b.store;
    let make = |id: &str, started_ns: i64, label: Option<&str>| {
        let mut run = full_run(id);
        run.started_ns = started_ns;
        run.label = label.map(str::to_string);
        store.save_run(&run).unwrap();
    };
    make("abcd11111111", 1, Some("before"));
    make("abcd22222222", 2, Some("after"));
    make("ef0123456789", 3, Some("before"));
    make("0a0a0a0a0a0a", 4, Some("abcd"));
    make("bbbb00000000", 0, Some("bbbb"));

    assert_eq!(store.resolve("latest").unwrap(), "0a0a0a0a0a0a");
    assert_eq!(store.resolve("abcd22222222").unwrap(), "abcd22222222");
    assert_eq!(store.resolve("ABCD22222222").unwrap(), "abcd22222222");
    assert_eq!(store.resolve("abcd2").unwrap(), "abcd22222222");
    assert_eq!(store.resolve("ef01").unwrap(), "ef0123456789");
    // The newest run carrying the label.
    assert_eq!(store.resolve("before").unwrap(), "ef0123456789");
    // A prefix shared by several runs that is also a label means the label.
    assert_eq!(store.resolve("abcd").unwrap(), "0a0a0a0a0a0a");
    // A unique prefix wins over a label.
    assert_eq!(store.resolve("bbbb").unwrap(), "bbbb00000000");
    // Too short to be a prefix, and not a label.
    assert!(matches!(
        store.resolve("ef0"),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert!(matches!(
        store.resolve("abcd_%"),
        Err(StoreError::NoSuchRun { .. })
    ));
    match store.resolve("nothing") {
        Err(e @ StoreError::NoSuchRun { .. }) => {
            assert!(e.is_user_error());
            assert!(e.to_string().contains("sysperf runs"), "{e}");
        }
        other => panic!("{other:?}"),
    }

    store.remove_run("0a0a0a0a0a0a").unwrap();
    match store.resolve("abcd") {
        Err(e @ StoreError::AmbiguousRun { .. }) => {
            assert!(e.is_user_error());
            let StoreError::AmbiguousRun { candidates, .. } = &e else {
                unreachable!()
            };
            assert_eq!(candidates, &["abcd22222222", "abcd11111111"]);
            assert!(e.to_string().contains("abcd11111111"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

fn resolve_latest_on_empty_store_is_no_such_run(b: Backing) {
    let store = &*b.store;
    assert!(matches!(
        store.resolve("latest"),
        Err(StoreError::NoSuchRun { spec }) if spec == "latest"
    ));
}

fn a_too_short_id_prefix_says_that_it_needs_four_digits(b: Backing) {
    let store = &*b.store;
    store.save_run(&full_run("c13aaaaaaaaa")).unwrap();
    let e = store.resolve("c13").unwrap_err().to_string();
    assert!(e.contains("an id prefix needs at least 4 digits"), "{e}");
    assert_eq!(store.resolve("c13a").unwrap(), "c13aaaaaaaaa");
    let e = store.resolve("no-such").unwrap_err().to_string();
    assert!(!e.contains("prefix"), "{e}");
}

fn remove_run_cascades_to_every_row(b: Backing) {
    let store = &*b.store;
    let gone = full_run("aaaaaaaaaaaa");
    let kept = full_run("bbbbbbbbbbbb");
    store.save_run(&gone).unwrap();
    store.save_run(&kept).unwrap();
    store.remove_run(&gone.id).unwrap();
    assert_eq!(b.count("SELECT count(*) FROM runs"), 1);
    assert_eq!(b.count("SELECT count(*) FROM results"), 2);
    assert_eq!(b.count("SELECT count(*) FROM trials"), 8);
    assert_eq!(
        b.count("SELECT count(*) FROM trials WHERE result_id NOT IN (SELECT id FROM results)"),
        0
    );
    for table in ["results", "warnings", "derived"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE run_id = 'aaaaaaaaaaaa'");
        assert_eq!(b.count(&sql), 0, "{table}");
    }
    assert_eq!(store.load_run(&kept.id).unwrap(), kept);
    assert!(matches!(
        store.remove_run(&gone.id),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert!(matches!(
        store.load_run(&gone.id),
        Err(StoreError::NoSuchRun { .. })
    ));
}

#[test]
fn text_file_is_not_sqlite_and_stays_unchanged() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("notes.txt");
    let text = b"these are my notes, not a database\n".repeat(100);
    std::fs::write(&path, &text).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotSqlite { .. }), "{err}");
    assert!(err.is_user_error());
    assert!(err.to_string().contains("--db"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), text);

    // Shorter than the header, too.
    std::fs::write(&path, b"hi").unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(StoreError::NotSqlite { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"hi");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no -wal or -shm files were created");
}

#[test]
fn other_applications_database_is_refused_unchanged() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('alice');",
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotSysperf { .. }), "{err}");
    assert!(err.is_user_error());
    assert!(err.to_string().contains("SYSPERF_DB"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Another application's id on an otherwise empty database is refused as well.
    let path = dir.path().join("claimed.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "application_id", 42)
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(StoreError::NotSysperf { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn newer_schema_is_too_new() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sysperf.db");
    drop(Store::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    match &err {
        StoreError::TooNew {
            found, supported, ..
        } => {
            assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_user_error());
    assert!(err.to_string().contains("upgrade sysperf"), "{err}");
}

#[test]
fn new_and_empty_files_are_initialized_and_reopen() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).unwrap();
    let app: i32 = store
        .conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let version: i64 = store
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mode: String = store
        .conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let fk: i64 = store
        .conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(
        (app, version, mode.as_str(), fk),
        (APPLICATION_ID, SCHEMA_VERSION, "wal", 1)
    );
    let run = full_run("0123456789ab");
    store.save_run(&run).unwrap();
    assert_eq!(store.path(), path);
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.load_run(&run.id).unwrap(), run);
}

#[test]
fn unusable_path_is_a_user_error() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    // A path "under" a regular file cannot be created.
    let err = Store::open(&file.join("sysperf.db")).unwrap_err();
    assert!(err.is_user_error(), "{err:?}");
    assert!(err.to_string().contains("--db"), "{err}");
    // A directory is not a database.
    let err = Store::open(dir.path()).unwrap_err();
    assert!(err.is_user_error(), "{err:?}");
}

#[test]
fn corrupt_rows_are_typed_errors() {
    let (_dir, store) = temp_store();
    let run = full_run("0123456789ab");
    store.save_run(&run).unwrap();
    let damage = [
        "UPDATE trials SET kind = 'bogus' WHERE position = 0",
        "UPDATE trials SET wall_ns = -1 WHERE position = 0",
        "UPDATE trials SET cpu_end = 4294967296 WHERE position = 0",
        "UPDATE trials SET iterations = 'many' WHERE position = 0",
        "UPDATE results SET wall_median = NULL",
        "UPDATE results SET has_summary = 2",
        "UPDATE results SET cpus_json = '[1,'",
        "UPDATE runs SET params_json = 'not json'",
        "UPDATE runs SET fingerprint_json = '{\"cores\": -1}'",
        "UPDATE runs SET complete = 'yes'",
        "UPDATE derived SET value = 'abc'",
        "UPDATE warnings SET kind = x'00ff'",
    ];
    for sql in damage {
        store
            .conn
            .execute(sql, [])
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let err = store.load_run(&run.id);
        assert!(matches!(err, Err(StoreError::Corrupt(_))), "{sql}: {err:?}");
        // Listing reads only the runs row, which most damage leaves readable.
        let _ = store.list_runs();
        store.remove_run(&run.id).unwrap();
        store.save_run(&run).unwrap();
    }
    assert_eq!(store.load_run(&run.id).unwrap(), run);
}

#[test]
fn concurrent_writers_both_land_intact() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("shared.db");
    let barrier = std::sync::Barrier::new(2);
    let writer = |t: u64| {
        // Both open the fresh file at the same moment, so initialization races too.
        barrier.wait();
        let store = Store::open(&path).unwrap();
        let mut written = Vec::new();
        for i in 0..20u64 {
            let mut run = full_run(&format!("{t:02x}{i:010x}"));
            run.started_ns = (i * 2 + t) as i64;
            run.label = Some(format!("writer{t}"));
            store.begin_run(&started(&run)).unwrap();
            for (r, w) in run.results.iter().zip(&run.warnings) {
                store
                    .add_result(&run.id, r, std::slice::from_ref(w))
                    .unwrap();
            }
            for s in &run.series {
                store.add_series(&run.id, s).unwrap();
            }
            store.finish_run(&run).unwrap();
            written.push(run);
        }
        written
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| writer(1));
        let b = s.spawn(|| writer(2));
        (a.join().unwrap(), b.join().unwrap())
    });
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list_runs().unwrap().len(), 40);
    for run in a.iter().chain(&b) {
        assert_eq!(&store.load_run(&run.id).unwrap(), run);
    }
}

#[test]
fn default_path_follows_environment_order() {
    let os = |s: &str| Some(OsString::from(s));
    assert_eq!(
        path_from_env(os("/x/my.db"), os("/xdg"), os("/home/u")),
        PathBuf::from("/x/my.db")
    );
    assert_eq!(
        path_from_env(os(""), os("/xdg"), os("/home/u")),
        PathBuf::from("/xdg/sysperf/sysperf.db")
    );
    assert_eq!(
        path_from_env(None, os("relative"), os("/home/u")),
        PathBuf::from("/home/u/.local/share/sysperf/sysperf.db")
    );
    assert_eq!(
        path_from_env(None, None, os("/home/u")),
        PathBuf::from("/home/u/.local/share/sysperf/sysperf.db")
    );
    assert_eq!(
        path_from_env(None, os(""), os("")),
        PathBuf::from("./sysperf.db")
    );
    assert!(!default_path().as_os_str().is_empty());
}

#[test]
fn error_messages_say_what_to_do() {
    let p = PathBuf::from("/tmp/x.db");
    let e = StoreError::NotSysperf { path: p.clone() };
    assert_eq!(
        e.to_string(),
        "'/tmp/x.db' is not a sysperf database (it has other tables); choose another path with --db or SYSPERF_DB"
    );
    let e = StoreError::TooNew {
        path: p,
        found: 9,
        supported: 1,
    };
    assert!(e.to_string().contains("schema 9"), "{e}");
    assert!(!StoreError::Corrupt("x".into()).is_user_error());
    assert!(!StoreError::NotFinite { what: "x" }.is_user_error());
}

fn counters(seed: u64) -> Counters {
    let mut by_source = BTreeMap::new();
    by_source.insert("LOC".to_string(), 250 + seed);
    by_source.insert("36".to_string(), u64::MAX);
    Counters {
        task_clock_ns: Some(1_000_000 + seed),
        context_switches: Some(2 * seed),
        cpu_migrations: Some(0),
        page_faults: Some(u64::MAX),
        cycles: None,
        instructions: Some(7),
        perf_multiplexed: true,
        perf_error: Some("perf_event_open: 'quoted' \"é\"".to_string()),
        interrupts: 300 + seed,
        softirqs: 40,
        system_context_switches: 9,
        processes_created: 1,
        interrupts_on_trial_cpus: None,
        interrupts_by_source: by_source,
        pgfault: 1,
        pgmajfault: 2,
        pgpgin_kib: 3,
        pgpgout_kib: 4,
        pswpin_pages: 5,
        pswpout_pages: 6,
        disk_reads: 7,
        disk_writes: 8,
        disk_read_bytes: 9 * 512,
        disk_write_bytes: 10 * 512,
        net_rx_softirqs: Some(11 + seed),
        net_tx_softirqs: None,
        softirq_time_ns: Some(u64::MAX),
    }
}

fn observed_run(id: &str) -> Run {
    let mut run = full_run(id);
    for (i, r) in run.results.iter_mut().enumerate() {
        for (j, t) in r.trials.iter_mut().enumerate() {
            // One trial left unobserved: counters are optional per trial.
            if j != 1 {
                t.counters = Some(counters((i * 10 + j) as u64));
            }
        }
        if let Some(s) = &mut r.summary {
            s.counters = Some(CounterSummary {
                trials: 3,
                perf_trials: 1,
                task_clock_ns_per_op: Some(0.1 + 0.2),
                context_switches_per_op: Some(2.000_000_000_000_000_4),
                cpu_migrations_per_op: None,
                page_faults_per_op: Some(5e-324),
                cycles_per_op: None,
                instructions_per_op: Some(1.797_693_134_862_315_7e308),
                interrupts_per_trial: 131.5,
                interrupts_per_op: 1e-9,
                softirqs_per_trial: -0.0,
                interrupts_on_trial_cpus_per_trial: Some(3.0),
                disk_ios_per_trial: 0.0,
            });
        }
    }
    run
}

fn stored_profile(bench: &str) -> crate::model::Profile {
    let mut stacks = BTreeMap::new();
    stacks.insert(
        "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_getpid".to_string(),
        1234,
    );
    stacks.insert("[user] sysperf:syscall".to_string(), u64::MAX);
    crate::model::Profile {
        bench: bench.to_string(),
        unit: "call".to_string(),
        placement: "single".to_string(),
        cpus: vec![1, u32::MAX],
        iterations: 1 << 40,
        operations: 1 << 40,
        wall_ns: 1_000_000_007,
        sample_period_ns: 200_033,
        scope: "whole-CPU 'quoted'".to_string(),
        samples: 5000,
        samples_outside_region: 3,
        samples_other: 2,
        lost_samples: 1,
        throttled: 0,
        stacks,
    }
}

fn observed_counters_round_trip_exactly(b: Backing) {
    let store = &*b.store;
    let run = observed_run("0123456789ab");
    assert!(store.save_run(&run).unwrap());
    let back = store.load_run("0123456789ab").unwrap();
    assert_eq!(back, run);
    let s = back.results[0]
        .summary
        .as_ref()
        .unwrap()
        .counters
        .as_ref()
        .unwrap();
    assert_eq!(s.softirqs_per_trial.to_bits(), (-0.0f64).to_bits());
    assert_eq!(back.results[0].trials[1].counters, None);
    // Incremental writes keep them too.
    let inc = observed_run("bbbbbbbbbbbb");
    store.begin_run(&started(&inc)).unwrap();
    for r in &inc.results {
        store.add_result(&inc.id, r, &[]).unwrap();
    }
    for s in &inc.series {
        store.add_series(&inc.id, s).unwrap();
    }
    store.finish_run(&inc).unwrap();
    assert_eq!(store.load_run(&inc.id).unwrap(), inc);
}

fn profiles_round_trip_in_order_and_go_with_their_run(backing: Backing) {
    let store = &*backing.store;
    let run = full_run("aaaaaaaaaaaa");
    store.save_run(&run).unwrap();
    store.save_run(&full_run("cccccccccccc")).unwrap();
    assert!(store.load_profiles(&run.id).unwrap().is_empty());
    let (a, b) = (stored_profile("syscall"), stored_profile("forks0"));
    store.add_profile(&run.id, &a).unwrap();
    store.add_profile(&run.id, &b).unwrap();
    store.add_profile("cccccccccccc", &a).unwrap();
    assert_eq!(store.load_profiles(&run.id).unwrap(), vec![a.clone(), b]);
    assert!(matches!(
        store.add_profile("nosuchrunxxx", &a),
        Err(StoreError::NoSuchRun { .. })
    ));
    store.remove_run(&run.id).unwrap();
    assert_eq!(backing.count("SELECT count(*) FROM profiles"), 1);
    assert_eq!(store.load_profiles("cccccccccccc").unwrap(), vec![a]);
}

/// `import_runs`: runs handed over one at a time (more than PostgreSQL's batch), each stored
/// once (present ids and repeats skipped), profiles after their run; a feed that fails
/// stores nothing, the runs it handed before failing included.
fn import_runs_stores_a_stream_in_one_transaction(backing: Backing) {
    let store = &*backing.store;
    let present = full_run("0123456789ab");
    store.save_run(&present).unwrap();
    let base = full_run("000000000000");
    let runs: Vec<Run> = (1..=150)
        .map(|i| Run {
            id: format!("{i:012x}"),
            ..base.clone()
        })
        .collect();
    let (a, b) = (stored_profile("syscall"), stored_profile("forks0"));
    let mut saved = Vec::new();
    store
        .import_runs(&mut |sink| {
            saved.clear();
            for r in std::iter::once(&present).chain(&runs).chain(&runs[..1]) {
                saved.push(sink.run(r)?);
            }
            sink.profiles(&runs[3].id, &[a.clone(), b.clone()])?;
            sink.profiles(&runs[140].id, std::slice::from_ref(&a))
        })
        .unwrap();
    assert_eq!(saved.len(), 152);
    assert!(!saved[0] && !saved[151] && saved[1..151].iter().all(|&s| s));
    assert_eq!(store.list_runs().unwrap().len(), 151);
    assert_eq!(store.load_run(&runs[100].id).unwrap(), runs[100]);
    assert_eq!(
        store.load_profiles(&runs[3].id).unwrap(),
        vec![a.clone(), b.clone()]
    );
    assert_eq!(store.load_profiles(&runs[140].id).unwrap(), vec![a]);

    let more: Vec<Run> = (200..300)
        .map(|i| Run {
            id: format!("{i:012x}"),
            ..base.clone()
        })
        .collect();
    let e = store
        .import_runs(&mut |sink| {
            for r in &more {
                sink.run(r)?;
            }
            Err(StoreError::Feed("the file changed".into()))
        })
        .unwrap_err();
    assert!(e.to_string().contains("the file changed"), "{e}");
    assert_eq!(store.list_runs().unwrap().len(), 151);
    assert!(matches!(
        store.load_run(&more[0].id),
        Err(StoreError::NoSuchRun { .. })
    ));
}

/// A column as both stores can describe it: its type's class and whether it may be NULL.
type Columns = BTreeMap<(String, String), (&'static str, bool)>;

/// The tables and columns of a new SQLite store, every migration applied, from
/// `pragma table_info`. Float columns are declared without a type (see `migrations`).
fn sqlite_columns() -> Columns {
    let conn = Connection::open_in_memory().unwrap();
    migrations::migrate(&conn, Path::new(":memory:")).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let mut out = Columns::new();
    for table in tables {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT name, type, \"notnull\", pk FROM pragma_table_info('{table}')"
            ))
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (column, ty, not_null, pk) = row.unwrap();
            let class = match ty.to_ascii_uppercase().as_str() {
                "INTEGER" => "integer",
                "TEXT" => "text",
                "" | "REAL" => "float",
                other => {
                    panic!("{table}.{column}: a SQLite type this test does not class: {other}")
                }
            };
            // PostgreSQL makes a key's columns NOT NULL; SQLite only an INTEGER PRIMARY KEY,
            // but no key sysperf writes is NULL, so a key column counts as NOT NULL here.
            out.insert((table.clone(), column), (class, not_null || pk > 0));
        }
    }
    out
}

/// The tables and columns of a new PostgreSQL store (migrated by connecting), from
/// information_schema.columns.
fn pg_columns(url: &str) -> Columns {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let rows = c
        .query(
            "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text
               FROM information_schema.columns WHERE table_schema = current_schema()",
            &[],
        )
        .unwrap();
    rows.iter()
        .map(|r| {
            let (table, column, ty): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            let class = match ty.as_str() {
                "bigint" | "integer" => "integer",
                "text" => "text",
                "double precision" | "real" => "float",
                other => {
                    panic!("{table}.{column}: a PostgreSQL type this test does not class: {other}")
                }
            };
            ((table, column), (class, r.get::<_, String>(3) == "NO"))
        })
        .collect()
}

/// The tables only one store has, each with why; every other table and column must be in
/// both, of the same class and nullability.
const ONE_STORE_ONLY: [(&str, &str); 3] = [
    // The processes writing to an SQLite file, named when a writer waited too long for its one
    // write lock; PostgreSQL locks rows and lists its sessions itself (pg_stat_activity).
    ("writers", "sqlite"),
    // The schema's version: SQLite keeps it in the file's header (PRAGMA user_version).
    ("sysperf_schema", "postgres"),
    // The store's own id, for spool files to find it (#44); an SQLite store is its file.
    ("sysperf_store", "postgres"),
];

/// Where two column lists differ, beyond the tables [`ONE_STORE_ONLY`] names: a column in
/// one only, or of another class or nullability.
fn schema_differences(lite: &Columns, pg: &Columns) -> Vec<String> {
    let only = |store: &str, table: &str| ONE_STORE_ONLY.contains(&(table, store));
    let mut out = Vec::new();
    for ((table, column), l) in lite {
        match pg.get(&(table.clone(), column.clone())) {
            None if !only("sqlite", table) => out.push(format!("{table}.{column}: SQLite only")),
            Some(p) if p != l => out.push(format!(
                "{table}.{column}: SQLite {l:?}, PostgreSQL {p:?} (class, NOT NULL)"
            )),
            _ => {}
        }
    }
    for (table, column) in pg.keys() {
        if !lite.contains_key(&(table.clone(), column.clone())) && !only("postgres", table) {
            out.push(format!("{table}.{column}: PostgreSQL only"));
        }
    }
    out
}

/// The schema is written twice, as SQLite's and PostgreSQL's migrations (#46): both build
/// the same tables with the same columns, of the same class (integer, float, text) and
/// nullability, but for the tables one store has for reasons its comment gives.
#[test]
fn both_stores_build_the_same_tables_and_columns() {
    let lite = sqlite_columns();
    assert!(
        lite.contains_key(&("runs".into(), "writer_json".into())) && lite.len() > 100,
        "the SQLite schema is read: {lite:?}"
    );
    // The comparison itself sees a column that one side lacks or types otherwise.
    let mut planted = lite.clone();
    planted.remove(&("trials".into(), "round".into()));
    planted.insert(("runs".into(), "label".into()), ("integer", false));
    assert_eq!(
        schema_differences(&planted, &lite),
        [
            "runs.label: SQLite (\"integer\", false), PostgreSQL (\"text\", false) (class, NOT NULL)",
            "trials.round: PostgreSQL only"
        ]
    );
    let Some(url) = pg_cluster::fresh_db("schemas_agree") else {
        return;
    };
    drop(PgStore::connect(&url).unwrap());
    let pg = pg_columns(&url);
    for (table, store) in ONE_STORE_ONLY {
        let has = |cols: &Columns| cols.keys().any(|(t, _)| t == table);
        assert!(
            has(if store == "sqlite" { &lite } else { &pg })
                && !has(if store == "sqlite" { &pg } else { &lite }),
            "{table} is allowed in {store} only, and is there only"
        );
    }
    let diffs = schema_differences(&lite, &pg);
    assert!(
        diffs.is_empty(),
        "the stores' schemas differ (store/migrations.rs against store/pg.rs PG_MIGRATIONS):\n{}",
        diffs.join("\n")
    );
}

/// PostgreSQL reads an id prefix through `runs_by_id_prefix` (migration 4), not by scanning
/// the runs, whatever the database's collation; a label that is not hex is never looked up
/// as a prefix, and prefixes still resolve (a label that is also a prefix wins, as on SQLite).
#[test]
fn postgres_reads_an_id_prefix_through_its_index() {
    let Some(b) = Backing::postgres("id_prefix_index") else {
        return;
    };
    let store = &*b.store;
    let mut a = full_run("abcd00000001");
    a.label = Some("abcd".into());
    let c = full_run("abce00000003");
    store
        .save_runs(&[a.clone(), full_run("abcd00000002"), c.clone()])
        .unwrap();
    assert_eq!(store.resolve("ABCE").unwrap(), c.id);
    assert_eq!(store.resolve("abcd").unwrap(), a.id);
    assert!(matches!(
        store.resolve("abcd0000"),
        Err(StoreError::AmbiguousRun { .. })
    ));
    let url = b.url.as_deref().unwrap();
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    // As on a store of 100,000 runs: a plan that can use the index does.
    client.batch_execute("SET enable_seqscan = off").unwrap();
    let plan: Vec<String> = client
        .query(
            &format!(
                "EXPLAIN {}",
                query::prefix(Dialect::Postgres, "runs", "abcd").sql
            ),
            &[&"abcd"],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("runs_by_id_prefix"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
}

/// Loads and writes in turn through one store (PostgreSQL reuses one scratch database for
/// them, emptied after each: a loaded run left in it would be uploaded again by the next write).
fn loads_and_writes_in_turn_on_one_store(backing: Backing) {
    let store = &*backing.store;
    let (a, b, c) = (
        full_run("aaaaaaaaaaaa"),
        full_run("bbbbbbbbbbbb"),
        full_run("cccccccccccc"),
    );
    store.save_run(&a).unwrap();
    assert_eq!(store.load_run(&a.id).unwrap(), a);
    store.save_run(&b).unwrap();
    assert_eq!(store.load_run(&b.id).unwrap(), b);
    assert_eq!(store.load_run(&a.id).unwrap(), a);
    store
        .add_profile(&b.id, &stored_profile("syscall"))
        .unwrap();
    store.save_runs(std::slice::from_ref(&c)).unwrap();
    assert_eq!(store.load_run(&c.id).unwrap(), c);
    assert_eq!(backing.count("SELECT count(*) FROM runs"), 3);
    assert_eq!(backing.count("SELECT count(*) FROM profiles"), 1);
}

/// `load_runs`: the runs asked for, in that order, each as `load_run` gives it (PostgreSQL
/// reads them in one query per table); an id not stored is `NoSuchRun`.
fn load_runs_reads_runs_together_in_the_order_asked(backing: Backing) {
    let store = &*backing.store;
    let mut runs: Vec<Run> = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"]
        .iter()
        .map(|id| full_run(id))
        .collect();
    runs[1].fingerprint.kernel_config_hash = None;
    runs[1].fingerprint.kernel_config = Default::default();
    runs[2].results.pop();
    store.save_runs(&runs).unwrap();
    let got = store
        .load_runs(&["cccccccccccc", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
        .unwrap();
    assert_eq!(got, vec![runs[2].clone(), runs[0].clone(), runs[1].clone()]);
    for r in &runs {
        assert_eq!(&store.load_run(&r.id).unwrap(), r);
    }
    assert!(store.load_runs(&[]).unwrap().is_empty());
    for missing in [&["aaaaaaaaaaaa", "dddddddddddd"][..], &["dddddddddddd"]] {
        assert!(matches!(
            store.load_runs(missing),
            Err(StoreError::NoSuchRun { .. })
        ));
    }
}

fn observation(id: &str, label: Option<&str>, started_ns: i64) -> SystemProfile {
    let mut p = crate::profile::system::Aggregator::new(10).finish();
    p.id = id.into();
    p.label = label.map(str::to_string);
    p.started_ns = started_ns;
    p.wall_ns = 3_000_000_000;
    p.stacks.insert("a;b".into(), 7);
    p.samples = 7;
    p
}

/// Observations of the whole machine are found as runs are, by the same `resolve`: an id in
/// either case, a unique prefix of 4+ hex digits, a label; in their own table.
fn observations_are_stored_listed_found_and_removed(b: Backing) {
    let store = &*b.store;
    let a = observation("aaaa00000001", Some("busy"), 10);
    let o = observation("aaaa00000002", None, 20);
    store.save_observation(&a).unwrap();
    store.save_observation(&o).unwrap();
    store
        .save_observation(&observation("bbbb00000003", Some("bbbb-x"), 5))
        .unwrap();
    let list = store.list_observations().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].id, "aaaa00000002", "newest first");
    assert_eq!(list[1].label.as_deref(), Some("busy"));
    assert_eq!(list[1].wall_ns, 3_000_000_000);
    assert_eq!(store.load_observation("aaaa00000001").unwrap(), a);
    let found = |spec: &str| store.resolve_observation(spec).unwrap();
    assert_eq!(found("AAAA00000002").as_deref(), Some("aaaa00000002"));
    assert_eq!(found("busy").as_deref(), Some("aaaa00000001"));
    assert_eq!(found("BBBB").as_deref(), Some("bbbb00000003"));
    assert_eq!(found("bbbb-x").as_deref(), Some("bbbb00000003"));
    assert!(matches!(
        store.resolve_observation("aaaa"),
        Err(StoreError::AmbiguousRun { candidates, .. })
            if candidates == ["aaaa00000002", "aaaa00000001"]
    ));
    assert_eq!(found("nothing"), None);
    assert_eq!(found("bbbb-"), None, "not hex: no prefix");
    // A run's table is not an observation's.
    assert!(store.list_runs().unwrap().is_empty());
    assert!(matches!(
        store.resolve("aaaa00000001"),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert!(store.remove_observation("aaaa00000001").unwrap());
    assert!(!store.remove_observation("aaaa00000001").unwrap());
    assert_eq!(store.list_observations().unwrap().len(), 2);
    assert!(matches!(
        store.load_observation("aaaa00000001"),
        Err(StoreError::NoSuchRun { .. })
    ));
}

/// A trace (`trace --store`) is an observation of kind "trace": listed and removed as one,
/// found by its benchmark, read back whole, never taken for a system profile.
fn traces_are_stored_found_by_benchmark_and_never_loaded_as_system_profiles(b: Backing) {
    let store = &*b.store;
    let trace = |id: &str, bench: &str, started_ns: i64| crate::model::StoredTrace {
        id: id.into(),
        label: Some(format!("t-{id}")),
        bench: bench.into(),
        started_ns,
        wall_ns: 20_000_000,
        sysperf_version: "0.1.0".into(),
        fingerprint: crate::model::Fingerprint {
            hostname: Some("tracer".into()),
            kernel_release: Some("6.18.0".into()),
            ..Default::default()
        },
        report: serde_json::json!({"bench": bench, "syscalls": {"total": {"per_op": 1.0}}}),
    };
    let (a, b2, c) = (
        trace("cccc00000001", "syscall", 10),
        trace("cccc00000002", "pipeback4", 20),
        trace("cccc00000003", "syscall", 30),
    );
    for t in [&a, &b2, &c] {
        store.save_trace(t).unwrap();
    }
    store
        .save_observation(&observation("aaaa00000001", None, 5))
        .unwrap();
    assert_eq!(
        store.traces(Some("syscall")).unwrap(),
        vec![c.clone(), a.clone()]
    );
    assert_eq!(store.traces(None).unwrap().len(), 3);
    let list = store.list_observations().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[0].kind, "trace");
    assert_eq!(list[0].hostname, c.fingerprint.hostname);
    assert!(matches!(
        store.load_observation("cccc00000001"),
        Err(StoreError::NoSuchRun { .. })
    ));
    assert!(store.load_observation("aaaa00000001").is_ok());
    assert!(store.remove_observation("cccc00000003").unwrap());
    assert_eq!(store.traces(Some("syscall")).unwrap(), vec![a]);
}

/// `import_runs` stores observations of both kinds beside runs, in its one transaction: each
/// once (an id stored before, or earlier in the same import, is skipped), read back as they
/// were handed over and as `show` and `compare` read them; a feed that fails stores none.
fn observations_are_imported_in_the_import_transaction(backing: Backing) {
    use crate::model::Observation;
    let store = &*backing.store;
    let present = observation("aaaa00000001", Some("busy"), 10);
    store.save_observation(&present).unwrap();
    let trace = crate::model::StoredTrace {
        id: "cccc00000001".into(),
        label: Some("t".into()),
        bench: "syscall".into(),
        started_ns: 30,
        wall_ns: 20_000_000,
        sysperf_version: "0.1.0".into(),
        fingerprint: crate::model::Fingerprint {
            hostname: Some("tracer".into()),
            ..Default::default()
        },
        report: serde_json::json!({"bench": "syscall", "per_op": 0.1}),
    };
    let fed = [
        Observation::SystemProfile(Box::new(present.clone())),
        Observation::Trace(Box::new(trace.clone())),
        Observation::SystemProfile(Box::new(observation("aaaa00000002", None, 20))),
        Observation::Trace(Box::new(trace.clone())),
    ];
    let run = full_run("0123456789ab");
    let mut saved = Vec::new();
    store
        .import_runs(&mut |sink| {
            saved.clear();
            saved.push(sink.run(&run)?);
            for o in &fed {
                saved.push(sink.observation(o)?);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(saved, [true, false, true, true, false]);
    assert_eq!(store.list_observations().unwrap().len(), 3);
    assert_eq!(store.traces(None).unwrap(), vec![trace.clone()]);
    assert_eq!(store.load_any_observation("cccc00000001").unwrap(), fed[1]);
    assert_eq!(store.load_any_observation("aaaa00000002").unwrap(), fed[2]);
    assert_eq!(store.load_observation("aaaa00000002").unwrap(), {
        let Observation::SystemProfile(p) = &fed[2] else {
            unreachable!()
        };
        (**p).clone()
    });
    assert!(matches!(
        store.load_any_observation("dddd00000001"),
        Err(StoreError::NoSuchRun { .. })
    ));
    // A feed that fails after handing an observation over stores nothing.
    let mut late = trace.clone();
    late.id = "cccc00000002".into();
    let e = store.import_runs(&mut |sink| {
        sink.observation(&Observation::Trace(Box::new(late.clone())))?;
        Err(StoreError::Feed("the file changed".into()))
    });
    assert!(e.is_err());
    assert_eq!(store.list_observations().unwrap().len(), 3);
    assert_eq!(
        backing.count("SELECT COUNT(*) FROM observations WHERE id = 'cccc00000002'"),
        0
    );
}

/// #41 item 8: a store made in a directory others may enter is its owner's alone, and so are
/// the `-wal` and `-shm` SQLite makes beside it (else another user could hold a read lock on
/// the `-shm` and stall every writer); an existing store keeps the mode it has.
#[test]
fn a_new_store_and_its_files_are_made_0600_and_an_old_one_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("s.db");
    let mode = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::fs::metadata(&p)
            .map(|m| format!("{:o}", m.permissions().mode() & 0o777))
            .unwrap_or_else(|e| format!("{e}"))
    };
    let store = Store::open(&path).unwrap();
    assert!(store.save_run(&full_run("0123456789ab")).unwrap());
    for suffix in ["", "-wal", "-shm"] {
        assert_eq!(mode(suffix), "600", "the store's file s.db{suffix}");
    }
    drop(store);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list_runs().unwrap().len(), 1);
    assert_eq!(mode(""), "640", "an existing store's mode changed");
    assert_eq!(mode("-shm"), "640");
}

/// #44: a SQLite row is read by name from its statement's names read once (`Named`), as
/// rusqlite read it by name: any ASCII case, and a name the answer lacks is the store's
/// corruption naming the table and the column, never a panic nor another column's value.
#[test]
fn sqlite_cells_are_found_by_name_once_per_statement() {
    let conn = Connection::open_in_memory().unwrap();
    let mut stmt = conn.prepare("SELECT 7 AS wall_ns, 'x' AS Kind").unwrap();
    let names = column_names(&stmt);
    assert_eq!(names, ["wall_ns", "Kind"]);
    let mut rows = stmt.query([]).unwrap();
    let row = rows.next().unwrap().unwrap();
    let row = Named { row, names: &names };
    let r = Reader::new(&row, "trials");
    assert_eq!(r.i64("wall_ns").unwrap(), 7);
    assert_eq!(r.i64("WALL_NS").unwrap(), 7);
    assert_eq!(r.text("kind").unwrap(), "x");
    let e = r.i64("iterations").unwrap_err().to_string();
    assert!(
        e.contains("trials.iterations") && e.contains("iterations"),
        "{e}"
    );
    assert!(matches!(r.i64("iterations"), Err(StoreError::Corrupt(_))));
}
