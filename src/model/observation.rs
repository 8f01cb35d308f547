//! A stored observation as it moves between stores (`sysperf export`, `sysperf import`): a
//! trace of one benchmark (`trace ID --store`) or a kernel profile of the whole machine
//! (`profile --system`), tagged with its kind. It is the record the store keeps (its
//! `observation_json`), not how either is made or shown.

use super::{StoredTrace, SystemProfile, TRACE_KIND};
use serde::{Deserialize, Serialize};

/// The `kind` of a system profile among the observations.
pub const SYSTEM_PROFILE_KIND: &str = "system-profile";

/// One stored observation of either kind (boxed: the two differ much in size). In JSON, `{"kind": KIND, "observation": {...}}`,
/// the observation in the serde form the store keeps (docs/export-format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "observation")]
pub enum Observation {
    /// `kind` is [`TRACE_KIND`].
    #[serde(rename = "trace")]
    Trace(Box<StoredTrace>),
    /// `kind` is [`SYSTEM_PROFILE_KIND`].
    #[serde(rename = "system-profile")]
    SystemProfile(Box<SystemProfile>),
}

impl Observation {
    pub fn id(&self) -> &str {
        match self {
            Observation::Trace(t) => &t.id,
            Observation::SystemProfile(p) => &p.id,
        }
    }

    pub fn label(&self) -> Option<&str> {
        match self {
            Observation::Trace(t) => t.label.as_deref(),
            Observation::SystemProfile(p) => p.label.as_deref(),
        }
    }

    /// The store's `kind` column: [`TRACE_KIND`] or [`SYSTEM_PROFILE_KIND`].
    pub fn kind(&self) -> &'static str {
        match self {
            Observation::Trace(_) => TRACE_KIND,
            Observation::SystemProfile(_) => SYSTEM_PROFILE_KIND,
        }
    }

    /// The kind in words, for a person: "trace", "system profile".
    pub fn kind_words(&self) -> &'static str {
        match self {
            Observation::Trace(_) => "trace",
            Observation::SystemProfile(_) => "system profile",
        }
    }
}
