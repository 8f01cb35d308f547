//! Tests of the store as its history grows (#21 item 7) and of its fleet queries (item 4):
//! lookups that read an index rather than every run, the file giving removed runs' space
//! back, the query conditions, and the error of a writer that waited too long for the lock.

use super::*;
use crate::model::Run;
use tempfile::TempDir;

fn store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    (dir, store)
}

/// The fixture run as run `n` of a fleet: its own id, host, kernel, CPU, label and start.
fn fleet_run(n: u64, host: &str, kernel: &str, cpu: &str, started_ns: i64) -> Run {
    let mut r = super::tests::full_run(&format!("{n:012x}"));
    r.label = Some(format!("l{}", n % 3));
    r.fingerprint.hostname = Some(host.into());
    r.fingerprint.kernel_release = Some(kernel.into());
    r.fingerprint.cpu_model = Some(cpu.into());
    r.started_ns = started_ns;
    r.complete = true;
    r
}

/// How SQLite answers `q`, its parameters bound.
fn plan(store: &Store, q: &query::Query) -> String {
    let mut stmt = store
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", q.sql))
        .unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(&q.params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap();
    rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
}

#[test]
fn an_id_prefix_and_a_machines_history_are_read_through_indexes_not_by_scanning() {
    let (_d, store) = store();
    for table in ["runs", "observations"] {
        let prefix = plan(&store, &query::prefix(Dialect::Sqlite, table, "abcd"));
        assert!(prefix.contains("USING INDEX"), "{prefix}");
        assert!(!prefix.contains(&format!("SCAN {table}")), "{prefix}");
    }
    let machine = plan(
        &store,
        &query::machine(Dialect::Sqlite, Some("h"), Some("k"), 30).unwrap(),
    );
    assert!(machine.contains("runs_by_machine"), "{machine}");
}

#[test]
fn prefixes_still_resolve_and_a_label_is_not_taken_for_one() {
    let (_d, store) = store();
    let mut a = fleet_run(0xabcd_0000_0001, "h", "6.1", "c", 1);
    a.label = Some("abcd".into());
    let b = fleet_run(0xabcd_0000_0002, "h", "6.1", "c", 2);
    let c = fleet_run(0xabce_0000_0003, "h", "6.1", "c", 3);
    store.save_runs(&[a.clone(), b.clone(), c.clone()]).unwrap();
    assert_eq!(store.resolve("ABCE").unwrap(), c.id);
    assert_eq!(store.resolve("abcd00000002").unwrap(), b.id);
    // Two ids start with abcd, and it is a label: the label wins, as before.
    assert_eq!(store.resolve("abcd").unwrap(), a.id);
    assert!(matches!(
        store.resolve("abcd0000"),
        Err(StoreError::AmbiguousRun { .. })
    ));
    assert!(matches!(
        store.resolve("zzzz"),
        Err(StoreError::NoSuchRun { .. })
    ));
}

#[test]
fn queries_filter_by_every_key_like_the_selection_and_limit_newest_first() {
    let (_d, store) = store();
    let day = 86_400_000_000_000i64;
    let runs = [
        fleet_run(1, "a", "6.1.0-18-amd64", "AMD EPYC 7B13", 20_000 * day),
        fleet_run(2, "b", "6.12.9", "Intel Xeon", 20_001 * day),
        fleet_run(3, "a", "6.120", "AMD EPYC 9654", 20_002 * day),
        fleet_run(4, "c", "6.12", "Intel Xeon", 20_002 * day + 5),
    ];
    store.save_runs(&runs).unwrap();
    let ids = |conds: Vec<Cond>| {
        let q = RunQuery {
            conds,
            ..RunQuery::default()
        };
        let got: Vec<String> = store
            .query_runs(&q)
            .unwrap()
            .into_iter()
            .map(|i| i.id[11..].to_string())
            .collect();
        got.join("")
    };
    let s = |v: &str| v.to_string();
    assert_eq!(ids(vec![Cond::Kernel(s("6.12"))]), "42");
    assert_eq!(ids(vec![Cond::Kernel(s("6.1"))]), "1");
    assert_eq!(ids(vec![Cond::Host(s("a"))]), "31");
    assert_eq!(ids(vec![Cond::Host(s("a")), Cond::Host(s("b"))]), "321");
    assert_eq!(ids(vec![Cond::Host(s("a")), Cond::Kernel(s("6.120"))]), "3");
    assert_eq!(ids(vec![Cond::Cpu(s("epyc"))]), "31");
    assert_eq!(ids(vec![Cond::Started(20_002 * day, 20_003 * day)]), "43");
    assert_eq!(ids(vec![Cond::Label(s("l1"))]), "41");
    let q = RunQuery {
        limit: Some(2),
        ..RunQuery::default()
    };
    let newest: Vec<String> = store
        .query_runs(&q)
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(newest, [runs[3].id.clone(), runs[2].id.clone()]);
    assert_eq!(store.count_runs(&q).unwrap(), 4);
    let since = RunQuery {
        since_ns: Some(20_001 * day),
        ..RunQuery::default()
    };
    assert_eq!(store.count_runs(&since).unwrap(), 3);
    assert_eq!(
        store.query_runs(&RunQuery::default()).unwrap()[0]
            .cpu_model
            .as_deref(),
        Some("Intel Xeon")
    );
}

fn file_size(store: &Store) -> u64 {
    store
        .conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    std::fs::metadata(store.path()).unwrap().len()
}

fn many(store: &Store, n: u64) -> Vec<String> {
    let runs: Vec<Run> = (0..n)
        .map(|i| fleet_run(i + 1, "h", "6.1", "c", i as i64))
        .collect();
    store.save_runs(&runs).unwrap();
    runs.into_iter().map(|r| r.id).collect()
}

#[test]
fn removing_runs_shrinks_a_new_store() {
    let (_d, store) = store();
    let ids = many(&store, 40);
    let full = file_size(&store);
    for id in &ids[..30] {
        store.remove_run(id).unwrap();
    }
    let after = file_size(&store);
    assert!(after < full, "{full} -> {after}");
    let free: i64 = store
        .conn
        .pragma_query_value(None, "freelist_count", |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0, "pages of removed runs left in the file");
}

#[test]
fn gc_converts_an_old_store_once_and_it_shrinks() {
    let (_d, store) = store();
    // A store made before incremental auto-vacuum: removed runs leave free pages behind.
    store
        .conn
        .execute_batch("PRAGMA auto_vacuum = NONE; VACUUM;")
        .unwrap();
    let ids = many(&store, 40);
    for id in &ids[..30] {
        store.remove_run(id).unwrap();
    }
    let before = file_size(&store);
    let r = store.gc().unwrap();
    assert!(r.converted);
    assert_eq!(r.bytes_before, before);
    assert!(r.bytes_after < before * 2 / 3, "{r:?}");
    assert!(!store.gc().unwrap().converted);
    assert_eq!(store.load_run(&ids[35]).unwrap().id, ids[35]);
}

#[test]
fn a_writer_that_waits_too_long_says_once_that_the_store_is_locked_and_by_whom() {
    let (dir, holder) = store();
    let id = many(&holder, 1).remove(0);
    // pid 1 is alive on every host: it stands for another sysperf importing.
    holder
        .conn
        .execute(
            "INSERT INTO writers (host, pid, work, started_ns) VALUES (?1, 1, 'sysperf import', ?2)",
            params![this_host(), now_ns()],
        )
        .unwrap();
    holder.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let waiter = Store::open(&dir.path().join("s.db")).unwrap();
    waiter.conn.busy_timeout(Duration::from_millis(50)).unwrap();
    let e = waiter.remove_run(&id).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, StoreError::Locked { .. }), "{text}");
    assert!(text.contains("sysperf import (pid 1 on host"), "{text}");
    assert_eq!(text.matches("locked").count(), 1, "{text}");
    assert!(text.contains("try again"), "{text}");
    holder.conn.execute_batch("ROLLBACK").unwrap();
    // Nobody announced: the message says another program holds it.
    holder
        .conn
        .execute_batch("DELETE FROM writers; BEGIN IMMEDIATE")
        .unwrap();
    let text = waiter.remove_run(&id).unwrap_err().to_string();
    assert!(text.contains("another program"), "{text}");
    holder.conn.execute_batch("ROLLBACK").unwrap();
    waiter.remove_run(&id).unwrap();
}

#[test]
fn announcing_records_the_work_until_the_store_is_dropped() {
    let (dir, a) = store();
    a.announce("sysperf run").unwrap();
    let n = |s: &Store| -> i64 {
        s.conn
            .query_row("SELECT count(*) FROM writers", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(n(&a), 1);
    // Its own row is not named to itself.
    assert!(a.writers().unwrap().is_empty());
    drop(a);
    let b = Store::open(&dir.path().join("s.db")).unwrap();
    assert_eq!(n(&b), 0);
}
