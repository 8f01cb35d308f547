//! Observations of the whole machine (`sysperf profile --system`), stored beside the runs in
//! their own table (migration 10): saved whole as JSON, listed newest first, found by id, a
//! unique id prefix of 4+ digits, or label (the newest carrying it).

use super::{int, to_json, Reader, Result, Store, StoreError, MIN_PREFIX};
use crate::model::{ObservationInfo, SystemProfile};
use rusqlite::{params, OptionalExtension};

/// The kind of a system profile in the `kind` column.
pub(crate) const SYSTEM_PROFILE: &str = "system-profile";

impl Store {
    /// Stores a system profile under `p.id` (the caller makes the id, as for runs).
    pub fn save_observation(&self, p: &SystemProfile) -> Result<()> {
        let tx = self.write_tx()?;
        tx.execute(
            "INSERT INTO observations (id, kind, label, started_ns, wall_ns, hostname,
                 kernel_release, sysperf_version, observation_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                p.id,
                SYSTEM_PROFILE,
                p.label,
                p.started_ns,
                int(p.wall_ns, "an observation's duration")?,
                p.hostname,
                p.kernel_release,
                p.sysperf_version,
                to_json(p, "a system profile")?,
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every stored observation, newest first.
    pub fn list_observations(&self) -> Result<Vec<ObservationInfo>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, kind, label, started_ns, wall_ns, hostname, kernel_release
             FROM observations ORDER BY started_ns DESC, seq DESC",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let r = Reader::new(row, "observations");
            out.push(ObservationInfo {
                id: r.text("id")?,
                kind: r.text("kind")?,
                label: r.opt_text("label")?,
                started_ns: r.i64("started_ns")?,
                wall_ns: r.u64("wall_ns")?,
                hostname: r.opt_text("hostname")?,
                kernel_release: r.opt_text("kernel_release")?,
            });
        }
        Ok(out)
    }

    /// The observation `spec` names (an id, a unique id prefix of 4+ digits, a label), or
    /// None when it names none (it may name a run).
    pub fn resolve_observation(&self, spec: &str) -> Result<Option<String>> {
        let id = spec.to_ascii_lowercase();
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM observations WHERE id = ?1", [&id], |r| {
                r.get(0)
            })
            .optional()?;
        if exact.is_some() {
            return Ok(exact);
        }
        let mut prefixed = Vec::new();
        if id.chars().count() >= MIN_PREFIX {
            let mut stmt = self.conn.prepare(
                "SELECT id FROM observations WHERE substr(id, 1, length(?1)) = ?1
                 ORDER BY started_ns DESC, seq DESC",
            )?;
            let mut rows = stmt.query([&id])?;
            while let Some(row) = rows.next()? {
                prefixed.push(Reader::new(row, "observations").text("id")?);
            }
        }
        if prefixed.len() == 1 {
            return Ok(prefixed.pop());
        }
        let labelled: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM observations WHERE label = ?1
                 ORDER BY started_ns DESC, seq DESC LIMIT 1",
                [spec],
                |r| r.get(0),
            )
            .optional()?;
        if labelled.is_some() {
            return Ok(labelled);
        }
        if prefixed.len() > 1 {
            return Err(StoreError::AmbiguousRun {
                spec: spec.to_string(),
                candidates: prefixed,
            });
        }
        Ok(None)
    }

    /// The stored observation `id`.
    pub fn load_observation(&self, id: &str) -> Result<SystemProfile> {
        let mut stmt = self
            .conn
            .prepare("SELECT observation_json FROM observations WHERE id = ?1")?;
        let mut rows = stmt.query([id])?;
        match rows.next()? {
            Some(row) => Reader::new(row, "observations").json("observation_json"),
            None => Err(StoreError::NoSuchRun {
                spec: id.to_string(),
            }),
        }
    }

    /// Every stored benchmark profile (`sysperf run --profile`), newest run first.
    pub fn benchmark_profiles(&self) -> Result<Vec<crate::model::Profile>> {
        let mut stmt = self.conn.prepare(
            "SELECT p.profile_json FROM profiles p JOIN runs r ON r.id = p.run_id
             ORDER BY r.started_ns DESC, r.seq DESC, p.position",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(Reader::new(row, "profiles").json("profile_json")?);
        }
        Ok(out)
    }

    /// Deletes an observation; false when there was none with that id.
    pub fn remove_observation(&self, id: &str) -> Result<bool> {
        let tx = self.write_tx()?;
        let n = tx.execute("DELETE FROM observations WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::system::Aggregator;
    use crate::store::Store;

    fn observation(id: &str, label: Option<&str>, started_ns: i64) -> super::SystemProfile {
        let mut p = Aggregator::new(10).finish();
        p.id = id.into();
        p.label = label.map(str::to_string);
        p.started_ns = started_ns;
        p.wall_ns = 3_000_000_000;
        p.stacks.insert("a;b".into(), 7);
        p.samples = 7;
        p
    }

    #[test]
    fn observations_are_stored_listed_found_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let a = observation("aaaa00000001", Some("busy"), 10);
        let b = observation("aaaa00000002", None, 20);
        store.save_observation(&a).unwrap();
        store.save_observation(&b).unwrap();
        let list = store.list_observations().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].id, "aaaa00000002", "newest first");
        assert_eq!(list[1].label.as_deref(), Some("busy"));
        assert_eq!(store.load_observation("aaaa00000001").unwrap(), a);
        assert_eq!(
            store
                .resolve_observation("AAAA00000002")
                .unwrap()
                .as_deref(),
            Some("aaaa00000002")
        );
        assert_eq!(
            store.resolve_observation("busy").unwrap().as_deref(),
            Some("aaaa00000001")
        );
        assert!(store.resolve_observation("aaaa").is_err(), "ambiguous");
        assert_eq!(store.resolve_observation("nothing").unwrap(), None);
        // A run's table is not an observation's.
        assert!(store.list_runs().unwrap().is_empty());
        assert!(store.remove_observation("aaaa00000001").unwrap());
        assert!(!store.remove_observation("aaaa00000001").unwrap());
        assert_eq!(store.list_observations().unwrap().len(), 1);
    }
}
