//! What the catalog finds beyond one run: the runs a name stands for (a label names every run
//! that carries it, the one rule `rm`, `show`, `export` and `compare` follow), the
//! observations of the whole machine (`sysperf profile --system`) that a name stands for when
//! it names no run, and a comparison as `compare` (and `ab`) asks for it, of two observations
//! or of runs.

use super::{Catalog, CatalogError};
use crate::compare::{Comparison, Request};
use crate::error::InputError;
use crate::model::{Run, StoredTrace, SystemProfile};
use crate::profile::isolate;
use crate::reference;

/// Shares of two observations that moved less than this (percentage points) are not listed.
pub const OBSERVATION_THRESHOLD_POINTS: f64 = 0.5;

/// What a [`Request`] compared.
#[derive(Debug)]
pub enum Compared {
    /// Two observations of the whole machine, compared as profiles: shares, not measurements
    /// with intervals, so no regression gate judges them.
    Observations {
        comparison: isolate::Comparison,
        before: Box<SystemProfile>,
        after: Box<SystemProfile>,
    },
    /// Two stored traces of one benchmark (`trace --store`), compared per operation.
    Traces {
        before: Box<StoredTrace>,
        after: Box<StoredTrace>,
    },
    /// Runs, in their columns (the first is the baseline).
    Runs {
        runs: Vec<Run>,
        comparison: Comparison,
    },
}

impl Catalog {
    /// The stored runs `spec` names, newest first. A label names every run that carries it (a
    /// group: `run --repeat 3 --label x` makes three, and `compare x` pools them); an id, a
    /// unique id prefix or `latest` names one run. This is what a name means to every command
    /// that acts on stored runs, so `rm x` removes what `compare x` compared.
    pub fn named_runs(&mut self, spec: &str) -> Result<Vec<String>, CatalogError> {
        let store = self.store().map_err(|e| e.looking_for(spec))?;
        let id = store.resolve(spec)?;
        if spec == "latest" {
            return Ok(vec![id]);
        }
        // `resolve` prefers an id or a unique prefix to a label; when it settled on the newest
        // run of the label, the name was the label.
        let labelled = store.labelled(spec)?;
        if labelled.first() == Some(&id) {
            return Ok(labelled);
        }
        Ok(vec![id])
    }

    /// The id of the stored observation `spec` names, when it names no run nor reference run
    /// but one observation. A store that cannot be opened is not this lookup's to report: the
    /// runs' path reports it, with its own advice.
    pub fn find_observation(&mut self, spec: &str) -> Result<Option<String>, CatalogError> {
        if reference::is_name(spec) {
            return Ok(None);
        }
        let Ok(store) = self.store() else {
            return Ok(None);
        };
        if store.resolve(spec).is_ok() {
            return Ok(None);
        }
        Ok(store.resolve_observation(spec)?)
    }

    /// The ids of two observations, when both names are observations.
    pub fn observation_pair(
        &mut self,
        before: &str,
        after: &str,
    ) -> Result<Option<(String, String)>, CatalogError> {
        if reference::is_name(before) || reference::is_name(after) {
            return Ok(None);
        }
        let Some(x) = self.find_observation(before)? else {
            return Ok(None);
        };
        Ok(self.find_observation(after)?.map(|y| (x, y)))
    }

    /// The comparison `req` asks for: two observations compared as profiles when its two runs
    /// name observations, else its runs (named, or chosen by its fleet query) side by side.
    /// Everything comes through this catalog's one connection to the store.
    pub fn compare(&mut self, req: &Request) -> Result<Compared, CatalogError> {
        if let [before, after] = &req.runs[..] {
            if let Some((x, y)) = self.observation_pair(before, after)? {
                let store = self.store()?;
                let traces = store.traces(None)?;
                let trace = |id: &str| traces.iter().find(|t| t.id == id).cloned();
                match (trace(&x), trace(&y)) {
                    (Some(b), Some(a)) if a.bench == b.bench => {
                        return Ok(Compared::Traces {
                            before: Box::new(b),
                            after: Box::new(a),
                        });
                    }
                    (None, None) => {}
                    (b, a) => {
                        let what = |t: &Option<StoredTrace>| {
                            t.as_ref().map_or("a system profile".to_string(), |t| {
                                format!("a trace of {}", t.bench)
                            })
                        };
                        return Err(InputError::InvalidValue {
                            what: "compare",
                            value: format!("{before} {after}"),
                            why: format!(
                                "{before} is {} and {after} is {}: traces compare with traces of the same benchmark, system profiles with system profiles",
                                what(&b),
                                what(&a)
                            ),
                        }
                        .into());
                    }
                }
                let (before, after) = (store.load_observation(&x)?, store.load_observation(&y)?);
                return Ok(Compared::Observations {
                    comparison: isolate::compare(&before, &after, OBSERVATION_THRESHOLD_POINTS),
                    before: Box::new(before),
                    after: Box::new(after),
                });
            }
        }
        // A name that is an observation, beside runs, would otherwise be "no run matches".
        for spec in req.runs.iter().chain(&req.baseline) {
            if self.find_observation(spec)?.is_some() {
                return Err(
                    crate::error::InputError::ObservationNotRun { name: spec.clone() }.into(),
                );
            }
        }
        let sel = crate::fleet::Selection::parse(&req.wheres, req.by.as_deref())?;
        let (runs, comparison) =
            self.fleet_comparison(&req.runs, req.baseline.as_deref(), &sel, req.noise_pct)?;
        Ok(Compared::Runs { runs, comparison })
    }
}
