//! `cron/jobs.json` shared with Python Hermes 0.19.0: the committed Python-made fixture
//! (`tests/fixtures/python/jobs.json`, from `scripts/make-python-fixtures.sh`) is read with
//! every field, hermes writes keep every key they do not change, broken files are reported and
//! left alone; and, when `HERMES_PYTHON_HERMES` points at the real Python program, both
//! programs read each other's jobs and update one file at the same time without losses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::Utc;
use hermes_cron::{
    Finish, JobPatch, JobStore, JobStoreError, NewJob, RunLog, RunRecord, Tz, claim_due, finish,
    jobs_table,
};
use hermes_testkit::TempHome;
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/python/jobs.json");

fn home_with_fixture() -> (TempHome, JobStore) {
    let home = TempHome::new().unwrap();
    let dir = home.path().join("cron");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("jobs.json"), FIXTURE).unwrap();
    let store = JobStore::new(home.home());
    (home, store)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn job_by_name<'a>(file: &'a Value, name: &str) -> &'a Value {
    file["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

#[test]
fn python_jobs_are_read_with_all_their_fields() {
    let (_home, store) = home_with_fixture();
    let jobs = store.list().unwrap();
    assert_eq!(jobs.len(), 3);
    let news = jobs.iter().find(|j| j.name == "news").unwrap();
    assert_eq!(news.workdir.as_deref(), Some("/tmp"));
    assert_eq!(news.skills, ["arxiv"]);
    assert_eq!(news.last_status.as_deref(), Some("ok"));
    assert_eq!(news.schedule_label(), "every 120m");
    let disk = jobs.iter().find(|j| j.name == "disk").unwrap();
    assert_eq!(disk.script.as_deref(), Some("disk_check.sh"));
    assert!(disk.no_agent);
    assert_eq!(disk.state.as_deref(), Some("paused"));
    assert!(disk.paused_at.is_some());
    assert_eq!(disk.state(), "paused");
    assert!(!disk.is_runnable());
    let digest = jobs.iter().find(|j| j.name == "digest").unwrap();
    assert_eq!(digest.provider.as_deref(), Some("openrouter"));
    assert_eq!(digest.model.as_deref(), Some("anthropic/claude-sonnet-4"));
    assert_eq!(
        digest.base_url.as_deref(),
        Some("https://openrouter.ai/api/v1")
    );
    assert_eq!(
        digest.enabled_toolsets.as_deref(),
        Some(&["web".to_string(), "file".to_string()][..])
    );
    assert_eq!(digest.context_from.as_deref(), Some(&[news.id.clone()][..]));
    assert_eq!(digest.skills, ["arxiv", "summarize"]);
    assert_eq!(digest.last_status.as_deref(), Some("error"));
    assert_eq!(digest.last_error.as_deref(), Some("model call failed: 500"));
    // hermes' listing shows Python's last run status.
    let table = jobs_table(&jobs, Tz::UTC);
    let line = table.lines().find(|l| l.contains("digest")).unwrap();
    assert!(line.contains("error"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.contains("disk") && l.contains("paused")),
        "{table}"
    );
}

#[test]
fn a_paused_python_job_does_not_fire() {
    let (_home, store) = home_with_fixture();
    // Make every job due; only the paused one must stay out.
    let far = Utc::now() + chrono::Duration::days(400);
    let claims = claim_due(
        &store,
        far,
        Tz::UTC,
        "test",
        chrono::Duration::minutes(5),
        10,
    )
    .unwrap();
    let names: Vec<&str> = claims.iter().map(|c| c.job.name.as_str()).collect();
    assert!(
        names.contains(&"news") && names.contains(&"digest"),
        "{names:?}"
    );
    assert!(!names.contains(&"disk"), "{names:?}");
}

#[test]
fn hermes_writes_keep_every_python_key_and_unknown_fields() {
    let (home, store) = home_with_fixture();
    let path = home.path().join("cron/jobs.json");
    let mut original = read_json(&path);
    // Fields neither program knows yet, per job, in a nested object and at the top level.
    original["jobs"][0]["future_field"] = serde_json::json!({"a": [1, 2]});
    original["jobs"][0]["schedule"]["future_schedule_key"] = serde_json::json!(true);
    original["jobs"][0]["origin"] = serde_json::json!({"platform": "telegram", "chat_id": "42", "chat_name": "ops", "thread_id": null});
    original["top_level_extra"] = serde_json::json!("kept");
    std::fs::write(&path, serde_json::to_string_pretty(&original).unwrap()).unwrap();

    let now = Utc::now();
    store
        .edit(
            "news",
            JobPatch {
                prompt: Some("Summarise the tech news".into()),
                ..JobPatch::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap();
    store
        .pause("digest", Some("on holiday".into()), now)
        .unwrap();
    let after = read_json(&path);
    assert_eq!(after["top_level_extra"], "kept");
    for (before, job) in original["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(after["jobs"].as_array().unwrap())
    {
        for (key, value) in before.as_object().unwrap() {
            let changed = match before["name"].as_str().unwrap() {
                "news" => key == "prompt",
                "digest" => {
                    ["enabled", "state", "paused_at", "paused_reason"].contains(&key.as_str())
                }
                _ => false,
            };
            if !changed {
                assert_eq!(&job[key], value, "job {} key {key}", before["name"]);
            }
        }
    }
    let news = job_by_name(&after, "news");
    assert_eq!(news["prompt"], "Summarise the tech news");
    assert_eq!(news["future_field"]["a"][1], 2);
    assert_eq!(news["schedule"]["future_schedule_key"], true);
    assert_eq!(news["schedule"]["display"], "every 120m");
    assert_eq!(news["origin"]["chat_name"], "ops");
    let digest = job_by_name(&after, "digest");
    assert_eq!(digest["enabled"], false);
    assert_eq!(digest["state"], "paused");
    assert_eq!(digest["paused_reason"], "on holiday");
    assert!(digest["paused_at"].is_string());
    assert_ne!(after["updated_at"], original["updated_at"]);
}

#[test]
fn hermes_made_jobs_carry_the_fields_python_needs() {
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    let now = Utc::now();
    let job = store
        .create(
            NewJob {
                prompt: "check the build".into(),
                schedule: "every 2h".into(),
                skills: vec!["ci".into()],
                ..NewJob::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap();
    let file = read_json(&home.path().join("cron/jobs.json"));
    let j = &file["jobs"][0];
    assert_eq!(j["id"], job.id.as_str());
    assert_eq!(j["schedule"]["kind"], "interval");
    assert_eq!(j["schedule"]["minutes"], 120);
    assert_eq!(j["schedule"]["display"], "every 120m");
    assert_eq!(j["schedule_display"], "every 120m");
    assert_eq!(j["state"], "scheduled");
    assert_eq!(j["skill"], "ci");
    assert_eq!(j["enabled"], true);
    assert_eq!(j["repeat"]["completed"], 0);
    assert_eq!(j["deliver"], "local");
    // Python's datetime.fromisoformat reads these.
    let created = j["created_at"].as_str().unwrap();
    assert!(created.ends_with("+00:00"), "{created}");
    assert!(file["updated_at"].is_string());
}

#[test]
fn a_broken_entry_is_named_and_the_file_is_not_rewritten() {
    let (home, store) = home_with_fixture();
    let path = home.path().join("cron/jobs.json");
    let mut file = read_json(&path);
    file["jobs"][1]["schedule"] = serde_json::json!({"kind": "sometimes"});
    let text = serde_json::to_string_pretty(&file).unwrap();
    std::fs::write(&path, &text).unwrap();
    let id = file["jobs"][1]["id"].as_str().unwrap().to_string();

    let err = store
        .create(
            NewJob {
                prompt: "x".into(),
                schedule: "every 1h".into(),
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap_err();
    assert!(
        matches!(err, JobStoreError::BadEntry { index: 2, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("jobs.json"), "{msg}");
    assert!(msg.contains("job #2") && msg.contains(&id), "{msg}");
    assert!(msg.contains("sometimes"), "{msg}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    std::fs::write(&path, "{\"jobs\": 3}").unwrap();
    let msg = store.list().unwrap_err().to_string();
    assert!(
        msg.contains("jobs.json") && msg.contains("not a list"),
        "{msg}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"jobs\": 3}");
}

// ---------------------------------------------------------------------------------------
// Against the real Python Hermes 0.19.0.

fn python() -> Option<PathBuf> {
    match std::env::var_os("HERMES_PYTHON_HERMES") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!(
                "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh installs the real Python Hermes 0.19.0)"
            );
            None
        }
    }
}

fn py_cmd(py: &Path, home: &Path, bin: &str) -> Command {
    let mut cmd = Command::new(py.join("bin").join(bin));
    cmd.env("HERMES_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("OPENROUTER_API_KEY")
        .current_dir(home);
    cmd
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

/// Python's jobs as its own `cron.jobs.load_jobs` returns them.
fn python_jobs(py: &Path, home: &Path) -> Vec<Value> {
    let out = run_ok(py_cmd(py, home, "python").args([
        "-c",
        "import json; from cron.jobs import load_jobs; print('JOBS=' + json.dumps(load_jobs()))",
    ]));
    let line = out.lines().find_map(|l| l.strip_prefix("JOBS=")).unwrap();
    serde_json::from_str(line).unwrap()
}

#[test]
fn python_made_jobs_survive_hermes_edits_and_python_sees_them() {
    let Some(py) = python() else { return };
    let home = TempHome::new().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join("scripts")).unwrap();
    std::fs::write(h.join("scripts/disk_check.sh"), "echo disk ok\n").unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let wd = std::fs::canonicalize(workdir.path()).unwrap();
    run_ok(py_cmd(&py, h, "hermes").args([
        "cron",
        "create",
        "every 2h",
        "Summarise the news",
        "--name",
        "news",
        "--skill",
        "arxiv",
        "--workdir",
        wd.to_str().unwrap(),
    ]));
    run_ok(py_cmd(&py, h, "hermes").args([
        "cron",
        "create",
        "0 9 * * *",
        "--script",
        "disk_check.sh",
        "--no-agent",
        "--name",
        "disk",
    ]));
    let before = python_jobs(&py, h);

    // hermes lists them, pauses one and edits the other.
    let store = JobStore::new(home.home());
    let jobs = store.list().unwrap();
    assert_eq!(jobs.len(), 2);
    let table = jobs_table(&jobs, Tz::UTC);
    assert!(
        table.contains("news") && table.contains("every 120m"),
        "{table}"
    );
    let now = Utc::now();
    store.pause("disk", None, now).unwrap();
    store
        .edit(
            "news",
            JobPatch {
                prompt: Some("Summarise the science news".into()),
                ..JobPatch::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap();

    let after = python_jobs(&py, h);
    assert_eq!(after.len(), 2);
    for (b, a) in before.iter().zip(&after) {
        for (key, value) in b.as_object().unwrap() {
            let changed = match b["name"].as_str().unwrap() {
                "news" => key == "prompt",
                _ => ["enabled", "state", "paused_at"].contains(&key.as_str()),
            };
            if !changed {
                assert_eq!(&a[key], value, "job {} key {key}", b["name"]);
            }
        }
    }
    let listing = run_ok(py_cmd(&py, h, "hermes").args(["cron", "list", "--all"]));
    assert!(listing.contains("[paused]"), "{listing}");
    assert!(listing.contains("Script:    disk_check.sh"), "{listing}");
    assert!(
        listing.contains(&format!("Workdir:   {}", wd.display())),
        "{listing}"
    );
    assert!(listing.contains("Schedule:  every 120m"), "{listing}");
}

#[test]
fn hermes_made_jobs_are_listed_by_python_with_their_last_run() {
    let Some(py) = python() else { return };
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    let now = Utc::now();
    let job = store
        .create(
            NewJob {
                name: Some("build-watch".into()),
                prompt: "check the build".into(),
                schedule: "0 7 * * *".into(),
                skills: vec!["ci".into()],
                ..NewJob::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap();
    store
        .modify(&job.id, |j| {
            j.last_run_at = Some(now);
            j.last_status = Some("failed".into());
            j.last_error = Some("provider said 500".into());
        })
        .unwrap();
    let listing = run_ok(py_cmd(&py, home.path(), "hermes").args(["cron", "list"]));
    assert!(listing.contains(&job.id), "{listing}");
    assert!(listing.contains("Name:      build-watch"), "{listing}");
    assert!(listing.contains("Schedule:  0 7 * * *"), "{listing}");
    assert!(listing.contains("Skills:    ci"), "{listing}");
    assert!(listing.contains("failed: provider said 500"), "{listing}");

    // Python records a run; hermes shows its status.
    run_ok(py_cmd(&py, home.path(), "python").args([
        "-c",
        &format!(
            "from cron.jobs import mark_job_run; mark_job_run('{}', False, error='py boom')",
            job.id
        ),
    ]));
    let jobs = store.list().unwrap();
    assert_eq!(jobs[0].last_status.as_deref(), Some("error"));
    assert_eq!(jobs[0].last_error.as_deref(), Some("py boom"));
    assert!(jobs_table(&jobs, Tz::UTC).contains("error"));
}

/// Both programs add jobs to one `jobs.json` at the same time; with the shared
/// `cron/.jobs.lock` flock none is lost.
#[test]
fn concurrent_updates_from_both_programs_all_survive() {
    let Some(py) = python() else { return };
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    const N: usize = 40;
    let script = format!(
        "from cron.jobs import create_job\nfor i in range({N}):\n    create_job('py task %d' % i, 'every 1h', name='py-%d' % i)\n"
    );
    let mut child = py_cmd(&py, home.path(), "python")
        .args(["-c", &script])
        .spawn()
        .unwrap();
    for i in 0..N {
        store
            .create(
                NewJob {
                    name: Some(format!("rs-{i}")),
                    prompt: format!("rs task {i}"),
                    schedule: "every 1h".into(),
                    ..NewJob::default()
                },
                Utc::now(),
                Tz::UTC,
            )
            .unwrap();
    }
    assert!(child.wait().unwrap().success());
    let jobs = store.list().unwrap();
    for prefix in ["py", "rs"] {
        for i in 0..N {
            let name = format!("{prefix}-{i}");
            assert!(jobs.iter().any(|j| j.name == name), "{name} was lost");
        }
    }
    assert_eq!(jobs.len(), 2 * N);
    assert_eq!(python_jobs(&py, home.path()).len(), 2 * N);
}

/// A script job made by hermes is run by Python's own scheduler (`cron.scheduler.run_job`):
/// the script is found under `HERMES_HOME/scripts/` and its output is the result.
#[test]
fn python_runs_a_hermes_made_script_job() {
    let Some(py) = python() else { return };
    let home = TempHome::new().unwrap();
    std::fs::create_dir_all(home.path().join("scripts")).unwrap();
    std::fs::write(
        home.path().join("scripts/report.sh"),
        "echo made by hermes, run by python\n",
    )
    .unwrap();
    let store = JobStore::new(home.home());
    let job = store
        .create(
            NewJob {
                schedule: "every 1h".into(),
                script: Some("report.sh".into()),
                no_agent: true,
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    let out = run_ok(py_cmd(&py, home.path(), "python").args([
        "-c",
        &format!(
            "from cron.jobs import get_job\nfrom cron.scheduler import run_job\n\
             ok, doc, final, err = run_job(get_job('{}'))\nprint('OK=%s FINAL=%s ERR=%s' % (ok, final, err))",
            job.id
        ),
    ]));
    assert!(
        out.contains("OK=True FINAL=made by hermes, run by python ERR=None"),
        "{out}"
    );
}

/// A one-shot Python is running (a fresh `run_claim`) is not started by hermes; a stale
/// claim (older than Python's TTL) no longer holds it back.
#[test]
fn a_python_run_claim_keeps_hermes_from_starting_the_job() {
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    let now = Utc::now();
    let job = store
        .create(
            NewJob {
                prompt: "once".into(),
                schedule: (now + chrono::Duration::minutes(1)).to_rfc3339(),
                ..NewJob::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap();
    let due = now + chrono::Duration::minutes(2);
    let claim_at = |t: chrono::DateTime<Utc>| {
        let at = t.to_rfc3339();
        store
            .modify(&job.id, move |j| {
                j.extra.insert(
                    "run_claim".into(),
                    serde_json::json!({"at": at, "by": "py-host"}),
                );
            })
            .unwrap();
    };
    claim_at(due - chrono::Duration::seconds(30));
    let claims = claim_due(&store, due, Tz::UTC, "t", chrono::Duration::minutes(5), 5).unwrap();
    assert!(claims.is_empty(), "started a job Python is running");
    claim_at(due - chrono::Duration::hours(1));
    let claims = claim_due(&store, due, Tz::UTC, "t", chrono::Duration::minutes(5), 5).unwrap();
    assert_eq!(claims.len(), 1, "a stale claim must not wedge the job");
}

/// Runs every due job of `store` once through hermes' claim and finish (a scheduled run,
/// without an agent): what a tick does around the run.
fn run_due_once(store: &JobStore, name: &str) {
    store
        .modify(name, |j| {
            j.next_run_at = Some(Utc::now() - chrono::Duration::minutes(1));
        })
        .unwrap();
    let claims = claim_due(
        store,
        Utc::now(),
        Tz::UTC,
        "test",
        chrono::Duration::minutes(5),
        10,
    )
    .unwrap();
    assert_eq!(claims.len(), 1, "the job was due");
    let ok = Finish {
        status: "ok".into(),
        error: None,
        delivery_error: None,
    };
    finish(store, &claims[0].job.id, &claims[0].run_id, &ok).unwrap();
}

/// A Python job with `--repeat 2` runs twice in hermes and is then removed, as Python's
/// `mark_job_run` removes a job whose limit is reached; Python sees the count in between.
#[test]
fn a_python_job_with_a_repeat_limit_is_removed_after_its_last_run() {
    let Some(py) = python() else { return };
    let home = TempHome::new().unwrap();
    let h = home.path();
    run_ok(py_cmd(&py, h, "hermes").args([
        "cron",
        "create",
        "every 1h",
        "ping the build",
        "--name",
        "twice",
        "--repeat",
        "2",
    ]));
    run_ok(py_cmd(&py, h, "hermes").args([
        "cron",
        "create",
        "every 1h",
        "keep going",
        "--name",
        "forever",
    ]));
    let store = JobStore::new(home.home());
    run_due_once(&store, "twice");
    let jobs = python_jobs(&py, h);
    let twice = jobs.iter().find(|j| j["name"] == "twice").unwrap();
    assert_eq!(twice["repeat"]["times"], 2);
    assert_eq!(twice["repeat"]["completed"], 1);
    let listing = run_ok(py_cmd(&py, h, "hermes").args(["cron", "list"]));
    assert!(listing.contains("Repeat:    1/2"), "{listing}");
    run_due_once(&store, "twice");
    let jobs = python_jobs(&py, h);
    assert!(
        jobs.iter().all(|j| j["name"] != "twice"),
        "the job is gone after its last run: {jobs:?}"
    );
    assert!(jobs.iter().any(|j| j["name"] == "forever"));
    // An unlimited job stays however often it runs.
    run_due_once(&store, "forever");
    run_due_once(&store, "forever");
    assert!(store.get("forever").is_ok());
}

/// Without Python: the limit counts scheduled runs only, and the job goes at the last one.
#[test]
fn a_job_is_removed_when_its_repeat_limit_is_reached() {
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    store
        .create(
            NewJob {
                name: Some("thrice".into()),
                prompt: "p".into(),
                schedule: "every 1h".into(),
                repeat: Some(3),
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    for n in 1..=2 {
        run_due_once(&store, "thrice");
        assert_eq!(store.get("thrice").unwrap().repeat.completed, n);
    }
    run_due_once(&store, "thrice");
    assert!(matches!(
        store.get("thrice"),
        Err(JobStoreError::NotFound(_))
    ));
}

/// hermes keeps the text a user gave it (`schedule_text`); Python keeps that key but does
/// not update it when it edits the schedule, so the listing must follow the schedule, not
/// the stale text (issue 17 switch pass of stop 31).
#[test]
fn a_schedule_python_edited_after_hermes_is_listed_as_python_left_it() {
    let (home, store) = home_with_fixture();
    store
        .edit(
            "news",
            JobPatch {
                schedule: Some("every 45m".into()),
                ..JobPatch::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    let listed = store.list().unwrap();
    let news = listed.iter().find(|j| j.name == "news").unwrap();
    assert_eq!(news.schedule_label(), "every 45m");
    // What Python's `hermes cron edit ID --schedule "every 10m"` writes.
    let path = home.path().join("cron/jobs.json");
    let mut file = read_json(&path);
    for job in file["jobs"].as_array_mut().unwrap() {
        if job["name"] == "news" {
            job["schedule"] =
                serde_json::json!({"kind": "interval", "minutes": 10, "display": "every 10m"});
            job["schedule_display"] = "every 10m".into();
            assert_eq!(job["schedule_text"], "every 45m", "Python keeps the key");
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let listed = store.list().unwrap();
    let news = listed.iter().find(|j| j.name == "news").unwrap();
    assert_eq!(news.schedule_label(), "every 10m");
}

/// A run whose process was killed (kill -9 mid-run) does not hold its job for the lease's
/// hours: a lease of a process of this machine that no longer runs counts as lapsed; a live
/// owner's lease still holds (issue 17 switch pass of stop 31).
#[test]
fn a_lease_of_a_killed_process_does_not_block_the_job() {
    let (_home, store) = home_with_fixture();
    let due = Utc::now();
    store
        .modify("news", |j| {
            j.next_run_at = Some(due - chrono::Duration::minutes(1))
        })
        .unwrap();
    // The fixture's other enabled job has a fixed next run that is in the past by now.
    store
        .modify("digest", |j| {
            j.next_run_at = Some(due + chrono::Duration::days(1))
        })
        .unwrap();
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let lease = chrono::Duration::hours(6);
    let live_owner = format!("{}:pid{}:x", host.trim(), std::process::id());
    let claims = claim_due(&store, due, Tz::UTC, &live_owner, lease, 5).unwrap();
    assert_eq!(claims.len(), 1);
    store
        .modify("news", |j| {
            j.next_run_at = Some(due - chrono::Duration::seconds(1))
        })
        .unwrap();
    assert!(
        claim_due(&store, due, Tz::UTC, "other", lease, 5)
            .unwrap()
            .is_empty(),
        "a live owner's lease holds"
    );
    store
        .modify("news", |j| {
            if let Some(l) = j.lease.as_mut() {
                l.owner = format!("{}:pid{dead}:x", host.trim());
            }
        })
        .unwrap();
    let claims = claim_due(&store, due, Tz::UTC, "other", lease, 5).unwrap();
    assert_eq!(claims.len(), 1, "the dead owner's lease was released");
    let news = store
        .list()
        .unwrap()
        .into_iter()
        .find(|j| j.name == "news")
        .unwrap();
    assert_eq!(news.last_status.as_deref(), Some("interrupted"));
}

/// Each program lists the other's cron runs: hermes writes every run it finishes to Python's
/// execution ledger (`cron/executions.db`), which Python's `hermes cron runs` lists, and reads
/// Python's attempts back into its own list (switch pass of stop 31, F4).
#[test]
fn each_program_lists_the_others_cron_runs() {
    let Some(py) = python() else { return };
    let (home, store) = home_with_fixture();
    let db = std::sync::Arc::new(hermes_store::SessionStore::open(home.home().state_db()).unwrap());
    let log = RunLog::new(store.clone(), db);
    let news = "545f58903856";
    let digest = "1e96ed0ff7f2";
    let run = RunRecord {
        run_id: "a1b2c3d4e5f6".into(),
        job_id: news.into(),
        job_name: "news".into(),
        due_at: None,
        started_at: Utc::now() - chrono::Duration::seconds(60),
        duration_ms: 1_500,
        status: "ok".into(),
        error: None,
        output_path: None,
        deliveries: Vec::new(),
        session_id: None,
    };
    log.record(&run).unwrap();
    let out = run_ok(py_cmd(&py, home.path(), "hermes").args(["cron", "runs"]));
    let line = out
        .lines()
        .find(|l| l.contains(&format!("job={news}")))
        .unwrap_or_else(|| panic!("Python does not list hermes' run: {out}"));
    assert!(
        line.contains("completed") && line.contains("source=hermes"),
        "{line}"
    );

    run_ok(py_cmd(&py, home.path(), "python").args([
        "-c",
        &format!(
            "from cron.executions import create_execution, mark_execution_running, finish_execution\n\
             e = create_execution('{digest}', source='builtin')\n\
             mark_execution_running(e['id'])\n\
             finish_execution(e['id'], success=False, error='provider down')"
        ),
    ]));
    let runs = log.list(None, 10).unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let python_run = &runs[0];
    assert_eq!(python_run.job_id, digest);
    assert_eq!(python_run.job_name, "digest");
    assert_eq!(python_run.status, "failed");
    assert_eq!(python_run.error.as_deref(), Some("provider down"));
    assert_eq!(runs[1].run_id, "a1b2c3d4e5f6");
    let only_news = log.list(Some(news), 10).unwrap();
    assert_eq!(only_news.len(), 1, "{only_news:?}");
    assert_eq!(
        only_news[0].run_id, "a1b2c3d4e5f6",
        "hermes' own row is read from state.db only"
    );
}
