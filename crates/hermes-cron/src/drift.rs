//! Python Hermes 0.19.0's provider/model drift guard (`cron/jobs.py`
//! `_compute_provider_model_snapshots`, `cron/scheduler.py` "#44585"), kept the same way by
//! both programs.
//!
//! A job that does not pin its provider (or model) follows the home's default, which may
//! change after the job was made — to a paid provider or model. So when a job is created (or
//! its `provider`, `model`, `base_url` or `no_agent` change), each unpinned axis gets a
//! snapshot of what it resolves to then: `provider_snapshot` (the resolved provider id,
//! lower-case; `custom` for every OpenAI-compatible endpoint, named ones included) and
//! `model_snapshot` (the configured default model). Pinned axes, script-only (`no_agent`)
//! jobs and resolutions that fail get `null`. At run time, an unpinned axis whose snapshot
//! differs (case-insensitively) from what it resolves to now makes the run fail before any
//! model call, with a message saying how to pin the job; an axis without a snapshot (jobs made
//! before 0.19, or by older hermes releases) is never checked.

use std::sync::Arc;

use crate::job::Job;

/// What an unpinned job would run on now: the resolved provider id and the configured
/// default model (`None` where resolution fails or nothing is configured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InferenceDefaults {
    /// Resolved provider id (`openrouter`, `custom`, `custom:<name>`, `local`, …).
    pub provider: Option<String>,
    /// `model.default` of `config.yaml`.
    pub model: Option<String>,
}

/// Resolves [`InferenceDefaults`] for a job's `base_url` (a job with its own endpoint
/// resolves to `custom`), reading the configuration as it is now.
pub type DefaultsResolver = Arc<dyn Fn(Option<&str>) -> InferenceDefaults + Send + Sync>;

/// A provider id as Python's resolution names it: lower-case, and `custom` for a named
/// custom endpoint (`custom:<name>`).
pub fn python_provider_id(provider: &str) -> String {
    let p = provider.trim().to_ascii_lowercase();
    if p.starts_with("custom:") {
        "custom".to_string()
    } else {
        p
    }
}

fn text(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Sets `job`'s snapshots from `resolve` as Python's `create_job` / `update_job` compute them.
pub fn take_snapshots(job: &mut Job, resolve: &DefaultsResolver) {
    if job.no_agent {
        job.provider_snapshot = None;
        job.model_snapshot = None;
        return;
    }
    let now = resolve(text(&job.base_url));
    job.provider_snapshot = if text(&job.provider).is_none() {
        now.provider.as_deref().map(python_provider_id)
    } else {
        None
    };
    job.model_snapshot = if text(&job.model).is_none() {
        now.model.filter(|m| !m.trim().is_empty())
    } else {
        None
    };
}

/// The drift check before a run: `Some(message)` when an unpinned axis with a snapshot
/// resolves to something else now (the run must not call a model), `None` otherwise.
pub fn drifted(job: &Job, now: &InferenceDefaults) -> Option<String> {
    let mut changes = Vec::new();
    if let (Some(snap), None) = (text(&job.provider_snapshot), text(&job.provider))
        && let Some(current) = now.provider.as_deref().map(python_provider_id)
        && !current.is_empty()
        && current != snap.to_ascii_lowercase()
    {
        changes.push(format!(
            "provider '{}' -> '{current}'",
            snap.to_ascii_lowercase()
        ));
    }
    if let (Some(snap), None) = (text(&job.model_snapshot), text(&job.model))
        && let Some(current) = now
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
        && !current.eq_ignore_ascii_case(snap)
    {
        changes.push(format!(
            "model '{}' -> '{}'",
            snap.to_ascii_lowercase(),
            current.to_ascii_lowercase()
        ));
    }
    if changes.is_empty() {
        return None;
    }
    let id = &job.id;
    Some(format!(
        "skipped to prevent unintended spend: the default model settings changed since this job \
         was created ({}), and the job does not pin them. No model was called. To run on the \
         new settings, pin them: `hermes cron edit {id} --provider <provider> --model <model>` \
         (or the cronjob tool's update with provider and model), or pin the original values to \
         keep them",
        changes.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::NewJob;
    use crate::store::JobStore;
    use chrono::Utc;

    fn resolver(provider: &'static str, model: &'static str) -> DefaultsResolver {
        Arc::new(move |base_url: Option<&str>| InferenceDefaults {
            provider: Some(
                if base_url.is_some() {
                    "custom"
                } else {
                    provider
                }
                .to_string(),
            ),
            model: Some(model.to_string()),
        })
    }

    fn job(store: &JobStore, new: NewJob) -> Job {
        store.create(new, Utc::now(), chrono_tz::UTC).unwrap()
    }

    #[test]
    fn snapshots_are_taken_for_unpinned_axes_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_protocol::HermesHome::new(dir.path());
        let store =
            JobStore::new(&home).with_defaults(resolver("custom:mine", "Anthropic/Claude-X"));
        let new = |model: Option<&str>, provider: Option<&str>, no_agent: bool| NewJob {
            prompt: "p".into(),
            schedule: "every 1h".into(),
            model: model.map(String::from),
            provider: provider.map(String::from),
            script: no_agent.then(|| "x.sh".to_string()),
            no_agent,
            ..NewJob::default()
        };
        let j = job(&store, new(None, None, false));
        assert_eq!(j.provider_snapshot.as_deref(), Some("custom"));
        assert_eq!(j.model_snapshot.as_deref(), Some("Anthropic/Claude-X"));
        let j = job(&store, new(Some("m"), None, false));
        assert_eq!(
            (j.provider_snapshot.as_deref(), j.model_snapshot.as_deref()),
            (Some("custom"), None)
        );
        let j = job(&store, new(None, Some("openrouter"), false));
        assert_eq!(
            (j.provider_snapshot.as_deref(), j.model_snapshot.as_deref()),
            (None, Some("Anthropic/Claude-X"))
        );
        let j = job(&store, new(None, None, true));
        assert_eq!((j.provider_snapshot, j.model_snapshot), (None, None));
        // Without a resolver (older callers), no snapshots.
        let plain = JobStore::new(&home);
        let j = job(&plain, new(None, None, false));
        assert_eq!((j.provider_snapshot, j.model_snapshot), (None, None));
    }

    #[test]
    fn pinning_an_axis_later_drops_its_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_protocol::HermesHome::new(dir.path());
        let store = JobStore::new(&home).with_defaults(resolver("openrouter", "m1"));
        let j = job(
            &store,
            NewJob {
                prompt: "p".into(),
                schedule: "every 1h".into(),
                ..NewJob::default()
            },
        );
        let j = store
            .edit(
                &j.id,
                crate::job::JobPatch {
                    model: Some(Some("m2".into())),
                    ..Default::default()
                },
                Utc::now(),
                chrono_tz::UTC,
            )
            .unwrap();
        assert_eq!(j.provider_snapshot.as_deref(), Some("openrouter"));
        assert_eq!(j.model_snapshot, None);
    }

    #[test]
    fn a_changed_default_is_drift_but_case_and_named_endpoints_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_protocol::HermesHome::new(dir.path());
        let store = JobStore::new(&home).with_defaults(resolver("openrouter", "M1"));
        let j = job(
            &store,
            NewJob {
                prompt: "p".into(),
                schedule: "every 1h".into(),
                ..NewJob::default()
            },
        );
        let now = |p: &str, m: &str| InferenceDefaults {
            provider: Some(p.into()),
            model: Some(m.into()),
        };
        assert_eq!(drifted(&j, &now("OpenRouter", "m1")), None);
        let why = drifted(&j, &now("nous", "m1")).unwrap();
        assert!(why.contains("provider 'openrouter' -> 'nous'"), "{why}");
        assert!(why.contains(&format!("hermes cron edit {}", j.id)), "{why}");
        let why = drifted(&j, &now("openrouter", "m2")).unwrap();
        assert!(why.contains("model 'm1' -> 'm2'"), "{why}");
        // Nothing resolves now: fail open, as Python does.
        assert_eq!(drifted(&j, &InferenceDefaults::default()), None);
        // A job without snapshots (older files) is never checked.
        let mut old = j.clone();
        old.provider_snapshot = None;
        old.model_snapshot = None;
        assert_eq!(drifted(&old, &now("nous", "m9")), None);
        assert_eq!(python_provider_id("custom:office"), "custom");
    }
}
