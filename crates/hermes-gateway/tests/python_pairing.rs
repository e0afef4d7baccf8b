//! DM pairing shared with the real Python Hermes 0.19.0 (issue 17): both programs pick the
//! same directory, a code issued by one is approved by the other, a user paired in one is
//! paired in the other, rate limits and lockouts count for both, and pairing files of earlier
//! hermes releases are migrated so Python reads them.
//!
//! Needs `HERMES_PYTHON_HERMES` (the venv `scripts/python-hermes.sh` prints; `.ci/run` sets
//! it); without it each test prints why it is skipped and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use hermes_gateway::auth::PairingStore;
use hermes_gateway::auth::pairing::{CodeRequest, PairingError, now_unix};
use serde_json::Value;

fn venv() -> Option<PathBuf> {
    match std::env::var_os("HERMES_PYTHON_HERMES") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            eprintln!(
                "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh installs \
                 Python Hermes 0.19.0 and prints the venv; .ci/run sets it)"
            );
            None
        }
    }
}

/// Runs `code` after `from gateway.pairing import PairingStore; s = PairingStore()` with the
/// venv's Python on `home`; returns its last stdout line as JSON.
fn python(venv: &Path, home: &Path, code: &str) -> Value {
    let script = format!(
        "import json, os\nfrom gateway.pairing import PairingStore\ns = PairingStore()\n{code}"
    );
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(script)
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("TELEGRAM_ALLOWED_USERS")
        .env_remove("DISCORD_ALLOWED_USERS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_code_python_issues_is_approved_by_hermes_and_the_user_is_paired_in_both() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let got = python(
        &venv,
        home.path(),
        "code = s.generate_code('telegram', '555', 'alice')\n\
         print(json.dumps({'code': code, 'dir': str(s._dir)}))",
    );
    let code = got["code"].as_str().unwrap().to_string();
    let store = PairingStore::for_home(home.path());
    assert_eq!(
        Path::new(got["dir"].as_str().unwrap()),
        store.dir(),
        "both programs use the same pairing directory"
    );
    // hermes lists Python's pending code (by its hash prefix) and approves it.
    let overview = store.overview(now_unix()).unwrap();
    assert_eq!(overview.pending.len(), 1);
    assert_eq!(overview.pending[0].1.user_id, "555");
    assert_eq!(overview.pending[0].1.user_name.as_deref(), Some("alice"));
    let user = store
        .approve("telegram", &code.to_lowercase(), now_unix())
        .unwrap();
    assert_eq!(user.user_id, "555");
    assert_eq!(user.user_name.as_deref(), Some("alice"));
    assert!(store.is_approved("telegram", "555").unwrap());
    let seen = python(
        &venv,
        home.path(),
        "print(json.dumps({'approved': s.is_approved('telegram', '555'), \
         'pending': s.list_pending('telegram'), 'users': s.list_approved('telegram')}))",
    );
    assert_eq!(seen["approved"], true, "{seen}");
    assert_eq!(seen["pending"], serde_json::json!([]), "{seen}");
    assert_eq!(seen["users"][0]["user_name"], "alice", "{seen}");
    // Python's rate limit (recorded by Python) holds in hermes too.
    assert_eq!(
        store
            .request_code("telegram", "555", None, now_unix())
            .unwrap(),
        CodeRequest::RateLimited
    );
}

#[test]
fn a_code_hermes_issues_is_approved_by_python_and_revoked_by_hermes() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let store = PairingStore::for_home(home.path());
    let CodeRequest::Issued(code) = store
        .request_code("discord", "777", Some("bob"), now_unix())
        .unwrap()
    else {
        panic!("no code issued")
    };
    let got = python(
        &venv,
        home.path(),
        &format!(
            "listed = s.list_pending('discord')\n\
             limited = s._is_rate_limited('discord', '777')\n\
             r = s.approve_code('discord', '{code}')\n\
             print(json.dumps({{'listed': listed, 'limited': limited, 'result': r, \
             'approved': s.is_approved('discord', '777'), 'dir': str(s._dir)}}))"
        ),
    );
    assert_eq!(Path::new(got["dir"].as_str().unwrap()), store.dir());
    assert_eq!(got["listed"][0]["user_id"], "777", "{got}");
    assert_eq!(got["listed"][0]["user_name"], "bob", "{got}");
    assert_eq!(
        got["limited"], true,
        "Python sees hermes' rate-limit record: {got}"
    );
    assert_eq!(got["result"]["user_id"], "777", "{got}");
    assert_eq!(got["approved"], true, "{got}");
    assert!(store.is_approved("discord", "777").unwrap());
    assert!(store.overview(now_unix()).unwrap().pending.is_empty());
    assert!(store.revoke("discord", "777").unwrap());
    let after = python(
        &venv,
        home.path(),
        "print(json.dumps({'approved': s.is_approved('discord', '777')}))",
    );
    assert_eq!(after["approved"], false);
}

#[test]
fn wrong_codes_lock_both_programs_out() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let store = PairingStore::for_home(home.path());
    // Two wrong codes in Python, three in hermes: five in all.
    python(
        &venv,
        home.path(),
        "s.approve_code('telegram', 'ZZZZZZZZ'); s.approve_code('telegram', 'YYYYYYYY')\n\
         print(json.dumps({}))",
    );
    for _ in 0..3 {
        assert!(matches!(
            store.approve("telegram", "XXXXXXXX", now_unix()),
            Err(PairingError::UnknownCode { .. })
        ));
    }
    let got = python(
        &venv,
        home.path(),
        "print(json.dumps({'locked': s._is_locked_out('telegram'), \
         'code': s.generate_code('telegram', '9', '')}))",
    );
    assert_eq!(got["locked"], true, "{got}");
    assert_eq!(got["code"], Value::Null, "{got}");
    let e = store
        .approve("telegram", "WWWWWWWW", now_unix())
        .unwrap_err();
    assert!(matches!(e, PairingError::LockedOut { .. }), "{e}");
    assert!(e.to_string().contains("_rate_limits.json"), "{e}");
}

#[test]
fn pairing_files_of_earlier_hermes_releases_are_migrated_for_python() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("pairing");
    std::fs::create_dir_all(&dir).unwrap();
    let now = now_unix();
    std::fs::write(
        dir.join("telegram-pending.json"),
        format!(
            r#"[{{"code": "ABCD2345", "user_id": "31", "user_name": "old", "created_at": {now}}}]"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("telegram-approved.json"),
        r#"[{"user_id": "30", "user_name": "paired before", "approved_at": 1700000000}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("_limits.json"),
        format!(
            r#"{{"last_request": {{"telegram:31": {now}}}, "failed": {{}}, "locked_until": {{}}}}"#
        ),
    )
    .unwrap();
    let store = PairingStore::for_home(home.path());
    assert_eq!(store.dir(), dir);
    store.migrate().unwrap();
    let got = python(
        &venv,
        home.path(),
        "print(json.dumps({'dir': str(s._dir), 'paired': s.is_approved('telegram', '30'), \
         'limited': s._is_rate_limited('telegram', '31'), \
         'approved': s.approve_code('telegram', 'ABCD2345')}))",
    );
    assert_eq!(Path::new(got["dir"].as_str().unwrap()), dir);
    assert_eq!(
        got["paired"], true,
        "a user paired by old hermes stays paired: {got}"
    );
    assert_eq!(got["limited"], true, "{got}");
    assert_eq!(
        got["approved"]["user_id"], "31",
        "an old plain-text code is approvable: {got}"
    );
    assert!(store.is_approved("telegram", "31").unwrap());
}
