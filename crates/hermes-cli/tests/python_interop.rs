//! End-to-end interop with the real Python Hermes 0.19.0 on one HERMES_HOME (issue 17, "How
//! it is checked"): Python → hermes → Python, hermes → Python → hermes, and both programs
//! running at once. Every session, message, search hit, memory entry, skill, cron job field
//! and pooled key one program writes must survive and be visible to the other.
//!
//! Needs `HERMES_PYTHON_HERMES` (the venv made by `scripts/python-hermes.sh`; `.ci/run` sets
//! it); without it each test prints why and passes without running. Each test collects named
//! checks and prints all of them (`--nocapture`), failing when any failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/python.rs"]
mod python;

use python::{Checks, Prog, Shared};
use serde_json::{Value, json};

/// What one program wrote in [`write_side`]: the things the other must see.
#[derive(Debug, Clone)]
struct Wrote {
    prog: Prog,
    tag: String,
    /// The first one-shot chat's session id.
    session: Option<String>,
    /// Its first user message.
    first_message: String,
    /// A word only that message holds (for full-text search).
    word: String,
    /// A MEMORY.md entry written through the `memory` tool.
    memory: String,
    /// A skill created through the `skill_manage` tool.
    skill: String,
    /// A cron job's name (`cron create`).
    job: String,
    /// A pooled API key and its label (`auth add`).
    key: String,
    label: String,
}

fn skill_md(name: &str, prog: Prog) -> String {
    format!(
        "---\nname: {name}\ndescription: Interop check skill written by {}.\n---\n\n# {name}\n\n\
         1. Say which program wrote this skill.\n",
        prog.name()
    )
}

/// One program writes a session, a memory entry, a skill, a cron job and a key.
async fn write_side(s: &Shared, c: &mut Checks, prog: Prog, tag: &str) -> Wrote {
    let p = prog.name();
    let word = format!("zebra{tag}word");
    let first_message = format!("hello from {p} about {word}");
    let r = s.chat(prog, &first_message, None).await;
    c.ran(&format!("[{tag}] {p}: one-shot chat"), &r);
    c.check(
        &format!("[{tag}] {p}: the one-shot chat answers from the mock"),
        r.stdout.contains(&format!("Noted: {first_message}")),
        || r.brief(),
    );
    let session = r.session_id();
    c.check(
        &format!("[{tag}] {p}: the one-shot chat reports its session id"),
        session.is_some(),
        || r.brief(),
    );

    let memory = format!("interop fact {tag} written by {p}");
    let marker = format!("remember {tag} now");
    let q = format!(
        "{marker}\nCALL memory {}",
        json!({"action": "add", "target": "memory", "content": memory})
    );
    let r = s.chat(prog, &q, None).await;
    c.ran(&format!("[{tag}] {p}: chat calling the memory tool"), &r);
    let results = s.tool_results_for(&marker);
    c.check(
        &format!("[{tag}] {p}: the memory tool reports success"),
        results
            .iter()
            .any(|t| t.contains("\"success\": true") || t.contains("\"success\":true")),
        || format!("tool results: {results:?}\n      {}", r.brief()),
    );

    let skill = format!("interop-skill-{tag}");
    let marker = format!("make skill {tag} now");
    let q = format!(
        "{marker}\nCALL skill_manage {}",
        json!({"action": "create", "name": skill, "content": skill_md(&skill, prog)})
    );
    let r = s.chat(prog, &q, None).await;
    c.ran(
        &format!("[{tag}] {p}: chat calling skill_manage create"),
        &r,
    );
    let files = s.skill_files(&skill);
    c.check(
        &format!("[{tag}] {p}: skill_manage create writes skills/…/{skill}/SKILL.md"),
        files.len() == 1
            && std::fs::read_to_string(&files[0])
                .is_ok_and(|t| t.contains(&skill_md(&skill, prog))),
        || {
            format!(
                "found {files:?}; tool results: {:?}\n      {}",
                s.tool_results_for(&marker),
                r.brief()
            )
        },
    );

    let job = format!("job-{tag}-{}", if prog == Prog::Ours { "rs" } else { "py" });
    let prompt = format!("cron prompt {tag} of {p}");
    let workdir = s.cwd.path().to_string_lossy().into_owned();
    let mut args = vec![
        "cron",
        "create",
        "every 2h",
        prompt.as_str(),
        "--name",
        &job,
    ];
    if prog == Prog::Py {
        // A field hermes must keep and honour (issue 17 §2).
        args.extend(["--workdir", workdir.as_str()]);
    }
    let r = s.run(prog, &args).await;
    c.ran(&format!("[{tag}] {p}: cron create"), &r);
    c.check(
        &format!("[{tag}] {p}: cron create writes the job to cron/jobs.json"),
        s.job_named(&job).is_some(),
        || {
            format!(
                "jobs.json: {}\n      {}",
                s.read("cron/jobs.json"),
                r.brief()
            )
        },
    );

    let key = format!("sk-or-interop-{tag}-{}-0123456789abcdef", prog.name());
    let label = format!("key-{tag}");
    let r = match prog {
        Prog::Ours => {
            s.run(
                prog,
                &[
                    "auth",
                    "add",
                    "openrouter",
                    "--key",
                    &key,
                    "--label",
                    &label,
                ],
            )
            .await
        }
        Prog::Py => {
            s.run(
                prog,
                &[
                    "auth",
                    "add",
                    "openrouter",
                    "--type",
                    "api-key",
                    "--api-key",
                    &key,
                    "--label",
                    &label,
                ],
            )
            .await
        }
    };
    c.ran(&format!("[{tag}] {p}: auth add"), &r);

    Wrote {
        prog,
        tag: tag.to_string(),
        session,
        first_message,
        word,
        memory,
        skill,
        job,
        key,
        label,
    }
}

/// `reader` sees everything `w` wrote; with `continue_it` it also continues `w`'s session with
/// a one-shot turn (returned: the text of that turn, for the read-back).
async fn read_side(
    s: &Shared,
    c: &mut Checks,
    reader: Prog,
    w: &Wrote,
    continue_it: bool,
) -> Option<String> {
    let p = reader.name();
    let t = format!("[{} → {p}]", w.tag);
    let Some(sid) = w.session.clone() else {
        c.check(
            &format!("{t} sessions: {}'s session id is known", w.prog.name()),
            false,
            || "the writer printed no session id (its chat failed above)".into(),
        );
        return None;
    };

    let r = s.run(reader, &["sessions", "list"]).await;
    c.ran(&format!("{t} sessions list"), &r);
    c.check(
        &format!("{t} sessions list shows {}'s session", w.prog.name()),
        r.stdout.contains(&sid),
        || format!("looked for {sid}\n      {}", r.brief()),
    );

    // Full-text search: hermes' CLI and both programs' session_search tool.
    if reader == Prog::Ours {
        let r = s.run(reader, &["sessions", "search", &w.word]).await;
        c.ran(&format!("{t} sessions search"), &r);
        c.check(
            &format!("{t} sessions search finds {}'s message", w.prog.name()),
            r.stdout.contains(&sid),
            || format!("searched {}, looked for {sid}\n      {}", w.word, r.brief()),
        );
        let r = s.run(reader, &["sessions", "show", &sid]).await;
        c.ran(&format!("{t} sessions show"), &r);
        c.check(
            &format!("{t} sessions show has {}'s message", w.prog.name()),
            r.stdout.contains(&w.first_message),
            || r.brief(),
        );
    }
    let marker = format!("search {} by {p}", w.tag);
    let q = format!("{marker}\nCALL session_search {}", json!({"query": w.word}));
    let r = s.chat(reader, &q, None).await;
    c.ran(&format!("{t} chat calling session_search"), &r);
    let results = s.tool_results_for(&marker);
    c.check(
        &format!("{t} session_search tool finds {}'s session", w.prog.name()),
        results.iter().any(|x| x.contains(&sid)),
        || {
            format!(
                "searched {}, looked for {sid}; tool results: {results:?}\n      {}",
                w.word,
                r.brief()
            )
        },
    );
    // A new session's system prompt carries MEMORY.md as it is on disk now.
    let system = s.system_prompt_for(&marker);
    c.check(
        &format!(
            "{t} {}'s memory entry is in the system prompt",
            w.prog.name()
        ),
        system.contains(&w.memory),
        || {
            format!(
                "MEMORY.md: {:?}; system prompt had {} chars",
                s.read("memories/MEMORY.md"),
                system.len()
            )
        },
    );

    let r = match reader {
        Prog::Ours => {
            s.run(reader, &["sessions", "export", &sid, "--format", "json"])
                .await
        }
        Prog::Py => {
            s.run(reader, &["sessions", "export", "-", "--session-id", &sid])
                .await
        }
    };
    c.ran(&format!("{t} sessions export"), &r);
    c.check(
        &format!("{t} the export holds {}'s messages", w.prog.name()),
        r.stdout.contains(&w.first_message)
            && r.stdout.contains(&format!("Noted: {}", w.first_message)),
        || r.brief(),
    );

    if reader == Prog::Ours {
        let r = s.run(reader, &["memory", "show"]).await;
        c.ran(&format!("{t} memory show"), &r);
        c.check(
            &format!("{t} memory show lists {}'s entry", w.prog.name()),
            r.stdout.contains(&w.memory),
            || r.brief(),
        );
    }

    let r = s.run(reader, &["skills", "list"]).await;
    c.ran(&format!("{t} skills list"), &r);
    c.check(
        &format!("{t} skills list shows {}'s skill", w.prog.name()),
        r.stdout.contains(&w.skill),
        || r.brief(),
    );

    let r = s.run(reader, &["cron", "list"]).await;
    c.ran(&format!("{t} cron list"), &r);
    c.check(
        &format!("{t} cron list shows {}'s job", w.prog.name()),
        r.stdout.contains(&w.job),
        || r.brief(),
    );

    let r = s.run(reader, &["auth", "list"]).await;
    c.ran(&format!("{t} auth list"), &r);
    c.check(
        &format!("{t} auth list shows {}'s key", w.prog.name()),
        r.stdout.contains(&w.label),
        || r.brief(),
    );

    if !continue_it {
        return None;
    }
    let turn = format!("continuing {} in {p}", w.tag);
    let r = s.chat(reader, &turn, Some(&sid)).await;
    c.ran(
        &format!("{t} continues {}'s session (-r)", w.prog.name()),
        &r,
    );
    let history = s.history_for(&turn);
    c.check(
        &format!(
            "{t} the continued turn carries {}'s earlier messages",
            w.prog.name()
        ),
        history.contains(&w.first_message),
        || {
            format!(
                "history sent to the model: {history:?}\n      {}",
                r.brief()
            )
        },
    );
    c.check(
        &format!("{t} the continued turn stays in the same session"),
        r.ok() && r.session_id().as_deref() == Some(sid.as_str()),
        || format!("expected {sid}\n      {}", r.brief()),
    );
    Some(turn)
}

/// `w`'s own program, after the other one worked on the home: its session now holds the
/// other's continuation turn, and its things are all still there.
async fn read_back(s: &Shared, c: &mut Checks, w: &Wrote, continued: Option<&str>) {
    let p = w.prog.name();
    let t = format!("[{} back in {p}]", w.tag);
    let Some(sid) = w.session.clone() else {
        return;
    };
    if let Some(turn) = continued {
        let r = match w.prog {
            Prog::Ours => {
                s.run(w.prog, &["sessions", "export", &sid, "--format", "json"])
                    .await
            }
            Prog::Py => {
                s.run(w.prog, &["sessions", "export", "-", "--session-id", &sid])
                    .await
            }
        };
        c.ran(&format!("{t} sessions export of its own session"), &r);
        c.check(
            &format!(
                "{t} its session holds its own and {}'s turns",
                w.prog.other().name()
            ),
            r.stdout.contains(&w.first_message)
                && r.stdout.contains(turn)
                && r.stdout.contains(&format!("Noted: {turn}")),
            || r.brief(),
        );
        let again = format!("back home {} in {p}", w.tag);
        let r = s.chat(w.prog, &again, Some(&sid)).await;
        c.ran(&format!("{t} continues its session again"), &r);
        let history = s.history_for(&again);
        c.check(
            &format!("{t} the next turn carries {}'s turn", w.prog.other().name()),
            history.contains(turn),
            || format!("history: {history:?}\n      {}", r.brief()),
        );
    }
    let r = s.run(w.prog, &["skills", "list"]).await;
    c.check(
        &format!("{t} its skill is still listed"),
        r.stdout.contains(&w.skill),
        || r.brief(),
    );
    let r = s.run(w.prog, &["cron", "list"]).await;
    c.check(
        &format!("{t} its job is still listed"),
        r.stdout.contains(&w.job),
        || r.brief(),
    );
    let r = s.run(w.prog, &["auth", "list"]).await;
    c.check(
        &format!("{t} its key is still listed"),
        r.stdout.contains(&w.label),
        || r.brief(),
    );
    c.check(
        &format!("{t} MEMORY.md still holds its entry"),
        s.read("memories/MEMORY.md").contains(&w.memory),
        || format!("MEMORY.md: {:?}", s.read("memories/MEMORY.md")),
    );
}

/// Every key Python writes for a job that `job` lacks.
fn missing_job_keys(python_job: &Value, job: &Value) -> Vec<String> {
    let has = |k: &str| job.get(k).is_some();
    python_job
        .as_object()
        .map(|o| o.keys().filter(|k| !has(k)).cloned().collect())
        .unwrap_or_default()
}

/// `runner` runs the job `w`'s program made (hermes: `cron run`; Python: `cron run` marks it
/// due, `cron tick` runs it); then `w`'s program shows that run's status.
async fn run_others_job(s: &Shared, c: &mut Checks, runner: Prog, w: &Wrote) {
    let t = format!("[{}'s job run by {}]", w.prog.name(), runner.name());
    let Some(id) = s
        .job_named(&w.job)
        .and_then(|j| j.get("id").and_then(Value::as_str).map(str::to_string))
    else {
        c.check(&format!("{t} the job is in jobs.json"), false, || {
            format!("jobs.json: {}", s.read("cron/jobs.json"))
        });
        return;
    };
    match runner {
        Prog::Ours => {
            let r = s.run(runner, &["cron", "run", &id]).await;
            c.ran(&format!("{t} cron run"), &r);
        }
        Prog::Py => {
            let r = s.run(runner, &["cron", "run", &id]).await;
            c.ran(&format!("{t} cron run"), &r);
            let r = s.run(runner, &["cron", "tick"]).await;
            c.ran(&format!("{t} cron tick"), &r);
        }
    }
    let prompt_seen = !s.requests_for(&format!("cron prompt {}", w.tag)).is_empty();
    c.check(
        &format!("{t} the run sent the job's prompt to the model"),
        prompt_seen,
        || format!("jobs.json: {}", s.read("cron/jobs.json")),
    );
    let job = s.job_named(&w.job).unwrap_or_default();
    c.check(
        &format!("{t} jobs.json records the run: last_status ok, last_run_at set"),
        job.get("last_status").and_then(Value::as_str) == Some("ok")
            && job.get("last_run_at").is_some_and(|v| !v.is_null()),
        || format!("job: {job}"),
    );
    let r = s.run(w.prog, &["cron", "list"]).await;
    let shown = match w.prog {
        // One table row per job: id, state, next run, last status, schedule, name.
        Prog::Ours => r
            .stdout
            .lines()
            .find(|l| l.contains(&w.job))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "ok")),
        // A block per job, starting at its id: "Last run:  <time>  ok".
        Prog::Py => r.stdout.split("\n\n").any(|block| {
            block.contains(&id)
                && block.lines().any(|l| {
                    l.trim_start().starts_with("Last run:") && l.trim_end().ends_with("ok")
                })
        }),
    };
    c.check(
        &format!("{t} {}'s cron list shows the run's status", w.prog.name()),
        shown,
        || r.brief(),
    );
}

/// Checks after both programs wrote: job fields and keys survived the other's writes.
/// `first_job`: `first`'s job as it was right after its own program wrote it.
fn check_files(
    s: &Shared,
    c: &mut Checks,
    first: &Wrote,
    second: &Wrote,
    first_job: Option<Value>,
) {
    let t = format!("[{} then {}]", first.tag, second.tag);
    let now = s.job_named(&first.job);
    c.check(
        &format!(
            "{t} {}'s job is unchanged by {}'s writes to jobs.json",
            first.prog.name(),
            second.prog.name()
        ),
        first_job.is_some() && now == first_job,
        || {
            format!(
                "before: {}\n      after:  {}",
                first_job
                    .as_ref()
                    .map(|j| j.to_string())
                    .unwrap_or_default(),
                now.map(|j| j.to_string()).unwrap_or_default()
            )
        },
    );
    let (py, rs) = if first.prog == Prog::Py {
        (first, second)
    } else {
        (second, first)
    };
    // Python's job as Python wrote it (the first writer's from before the other's writes).
    let py_job = if first.prog == Prog::Py {
        first_job.clone()
    } else {
        s.job_named(&py.job)
    };
    if let (Some(pj), Some(rj)) = (py_job, s.job_named(&rs.job)) {
        let missing = missing_job_keys(&pj, &rj);
        c.check(
            &format!("{t} hermes' job has every field Python writes for a job"),
            missing.is_empty(),
            || format!("missing {missing:?}\n      hermes job: {rj}"),
        );
        // Both programs snapshot what an unpinned job resolves to (Python's drift guard).
        for key in ["provider_snapshot", "model_snapshot"] {
            c.check(
                &format!("{t} hermes' job has Python's {key}"),
                rj.get(key).is_some_and(|v| !v.is_null()) && rj.get(key) == pj.get(key),
                || format!("python: {:?}, hermes: {:?}", pj.get(key), rj.get(key)),
            );
        }
        let now = s.job_named(&py.job).unwrap_or_default();
        c.check(
            &format!("{t} Python's job keeps its workdir"),
            now.get("workdir").and_then(Value::as_str) == Some(&*s.cwd.path().to_string_lossy()),
            || format!("python job now: {now}"),
        );
    } else {
        c.check(&format!("{t} both jobs are in jobs.json"), false, || {
            format!("jobs.json: {}", s.read("cron/jobs.json"))
        });
    }
    let auth = s.read("auth.json");
    for w in [first, second] {
        c.check(
            &format!("{t} auth.json still holds {}'s key", w.prog.name()),
            auth.contains(&w.key),
            || format!("auth.json: {auth}"),
        );
    }
    let memory = s.read("memories/MEMORY.md");
    c.check(
        &format!("{t} MEMORY.md holds both entries in the § format"),
        memory.contains(&first.memory)
            && memory.contains(&second.memory)
            && memory.contains("\n§\n"),
        || format!("MEMORY.md: {memory:?}"),
    );
}

async fn round_trip(test: &str, first: Prog) {
    let Some(s) = Shared::new(test).await else {
        return;
    };
    let mut c = Checks::new(test);
    let second = first.other();
    let a = write_side(&s, &mut c, first, "a1").await;
    let a_job = s.job_named(&a.job);
    let continued = read_side(&s, &mut c, second, &a, true).await;
    let b = write_side(&s, &mut c, second, "b2").await;
    check_files(&s, &mut c, &a, &b, a_job);
    run_others_job(&s, &mut c, second, &a).await;
    read_side(&s, &mut c, first, &b, false).await;
    read_back(&s, &mut c, &a, continued.as_deref()).await;
    c.finish();
}

/// Python makes a home, hermes reads and extends it, Python sees all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_then_hermes_then_python() {
    round_trip("python_then_hermes_then_python", Prog::Py).await;
}

/// hermes makes a home, Python reads and extends it, hermes sees all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_then_python_then_hermes() {
    round_trip("hermes_then_python_then_hermes", Prog::Ours).await;
}

/// Python's provider/model drift guard holds for both programs' jobs: each program's
/// unpinned job is created with the same snapshots; after the default model changes, each
/// program refuses to run the other's job (no model call), naming the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drift_guard_holds_for_both_programs_jobs() {
    let test = "the_drift_guard_holds_for_both_programs_jobs";
    let Some(s) = Shared::new(test).await else {
        return;
    };
    let mut c = Checks::new(test);
    for (prog, name) in [(Prog::Py, "drift-py"), (Prog::Ours, "drift-rs")] {
        let prompt = format!("drift prompt of {name}");
        let r = s
            .run(
                prog,
                &["cron", "create", "every 2h", &prompt, "--name", name],
            )
            .await;
        c.ran(&format!("{}: cron create {name}", prog.name()), &r);
        let job = s.job_named(name).unwrap_or_default();
        c.check(
            &format!("{name}: snapshots of the unpinned job"),
            job.get("provider_snapshot").and_then(Value::as_str) == Some("custom")
                && job.get("model_snapshot").and_then(Value::as_str) == Some("interop-model"),
            || format!("job: {job}"),
        );
    }
    // The user switches the default model.
    let config = s
        .read("config.yaml")
        .replace("default: interop-model", "default: pricier-model");
    std::fs::write(s.root().join("config.yaml"), config).unwrap();
    for (runner, name) in [(Prog::Ours, "drift-py"), (Prog::Py, "drift-rs")] {
        let id = s
            .job_named(name)
            .and_then(|j| j.get("id").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        let r = s.run(runner, &["cron", "run", &id]).await;
        if runner == Prog::Py {
            s.run(runner, &["cron", "tick"]).await;
        }
        let job = s.job_named(name).unwrap_or_default();
        let error = job.get("last_error").and_then(Value::as_str).unwrap_or("");
        c.check(
            &format!("{} refuses {name} after the model changed", runner.name()),
            job.get("last_status")
                .and_then(Value::as_str)
                .is_some_and(|st| st != "ok")
                && error.contains("interop-model")
                && error.contains("pricier-model"),
            || format!("job: {job}\n      {}", r.brief()),
        );
        c.check(
            &format!("{} made no model call for {name}", runner.name()),
            s.requests_for(&format!("drift prompt of {name}"))
                .is_empty(),
            || "the job's prompt reached the model".into(),
        );
    }
    c.finish();
}

/// One program's loop on the shared home: `turns` one-shot turns of one session (the first
/// starts it, the rest resume it), each also adding a memory entry; then two cron jobs.
/// Returns the session id and the memory entries it wrote.
async fn chat_loop(
    s: &Shared,
    c: &mut Checks,
    prog: Prog,
    turns: usize,
) -> (Option<String>, Vec<String>) {
    let p = prog.name();
    let mut sid: Option<String> = None;
    let mut entries = Vec::new();
    for i in 0..turns {
        let entry = format!("concurrent fact {i} of {p}");
        let q = format!(
            "loop turn {i} of {p}\nCALL memory {}",
            json!({"action": "add", "target": "memory", "content": entry})
        );
        let r = s.chat(prog, &q, sid.as_deref()).await;
        c.ran(&format!("[at once] {p}: turn {i}"), &r);
        if sid.is_none() {
            sid = r.session_id();
        }
        entries.push(entry);
    }
    for j in 0..2 {
        let name = format!("at-once-{p}-{j}");
        let r = s
            .run(
                prog,
                &[
                    "cron",
                    "create",
                    "every 3h",
                    &format!("at once job {j} of {p}"),
                    "--name",
                    &name,
                ],
            )
            .await;
        c.ran(&format!("[at once] {p}: cron create {name}"), &r);
    }
    (sid, entries)
}

/// Both programs at once on one home: two chat loops that also write memory, and cron jobs
/// created on each side; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_programs_at_once() {
    const TURNS: usize = 4;
    let test = "both_programs_at_once";
    let Some(s) = Shared::new(test).await else {
        return;
    };
    let mut c_ours = Checks::new(test);
    let mut c_py = Checks::new(test);
    let (ours, py) = tokio::join!(
        chat_loop(&s, &mut c_ours, Prog::Ours, TURNS),
        chat_loop(&s, &mut c_py, Prog::Py, TURNS)
    );
    let mut c = c_ours;
    c.absorb(c_py);

    let memory = s.read("memories/MEMORY.md");
    for e in ours.1.iter().chain(py.1.iter()) {
        c.check(
            &format!("[at once] MEMORY.md holds {e:?}"),
            memory.contains(e.as_str()),
            || format!("MEMORY.md: {memory:?}"),
        );
    }
    let jobs = s.jobs();
    for p in [Prog::Ours, Prog::Py] {
        for j in 0..2 {
            let name = format!("at-once-{}-{j}", p.name());
            c.check(
                &format!("[at once] jobs.json holds {name}"),
                jobs.iter()
                    .any(|x| x.get("name").and_then(Value::as_str) == Some(name.as_str())),
                || format!("jobs.json: {}", s.read("cron/jobs.json")),
            );
        }
    }
    for (loop_prog, (sid, _)) in [(Prog::Ours, &ours), (Prog::Py, &py)] {
        let Some(sid) = sid.clone() else {
            c.check(
                &format!("[at once] {}'s loop has a session", loop_prog.name()),
                false,
                || "no session id printed".into(),
            );
            continue;
        };
        for reader in [Prog::Ours, Prog::Py] {
            let r = match reader {
                Prog::Ours => {
                    s.run(reader, &["sessions", "export", &sid, "--format", "json"])
                        .await
                }
                Prog::Py => {
                    s.run(reader, &["sessions", "export", "-", "--session-id", &sid])
                        .await
                }
            };
            let all = (0..TURNS).all(|i| {
                let turn = format!("loop turn {i} of {}", loop_prog.name());
                r.stdout.contains(&turn) && r.stdout.contains(&format!("Noted: {turn}"))
            });
            c.check(
                &format!(
                    "[at once] {} exports every turn of {}'s loop",
                    reader.name(),
                    loop_prog.name()
                ),
                all,
                || r.brief(),
            );
        }
    }
    for reader in [Prog::Ours, Prog::Py] {
        let r = s.run(reader, &["cron", "list"]).await;
        let all = [Prog::Ours, Prog::Py]
            .iter()
            .all(|p| (0..2).all(|j| r.stdout.contains(&format!("at-once-{}-{j}", p.name()))));
        c.check(
            &format!("[at once] {} lists all four jobs", reader.name()),
            all,
            || r.brief(),
        );
    }
    c.finish();
}
