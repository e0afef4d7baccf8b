//! `auth.json` shared with Python Hermes 0.19.0: the committed Python-made fixture
//! (`tests/fixtures/python/auth.json`, from `scripts/make-python-fixtures.sh`) gives hermes its
//! keys; hermes writes keep every entry and key they do not change and put what only hermes
//! keeps in `auth.hermes.json`; malformed files are reported and never rewritten; and, when
//! `HERMES_PYTHON_HERMES` points at the real Python program, keys added by either program are
//! seen by the other and concurrent updates under the shared `auth.lock` all survive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use hermes_llm::auth_file;
use hermes_llm::credentials::{CredentialPool, PoolStrategy};
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_llm::{ClientOptions, credential_pool};
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("fixtures/python/auth.json");

fn fixture_home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    std::fs::write(&path, FIXTURE).unwrap();
    (dir, path)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn labels(pools: &[CredentialPool], provider: &str) -> Vec<String> {
    pools
        .iter()
        .find(|p| p.provider == provider)
        .map(|p| p.credentials.iter().map(|c| c.label.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn python_auth_json_gives_hermes_its_keys() {
    let (_dir, path) = fixture_home();
    let pools = CredentialPool::load(&path).unwrap();
    assert_eq!(labels(&pools, "openrouter"), ["work", "api-key-2"]);
    assert_eq!(labels(&pools, "anthropic"), ["personal"]);
    let or = pools.iter().find(|p| p.provider == "openrouter").unwrap();
    assert_eq!(or.credentials[0].key, "sk-or-test-111122223333");
    assert!(or.credentials[0].id.is_some());
    assert_eq!(auth_file::check(&path).unwrap(), 3);

    // A chat's pool: the runtime key first, then Python's keys.
    let rt = Runtime {
        provider: "openrouter".to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: "http://127.0.0.1:9/v1".to_string(),
        model: "m".to_string(),
        api_key: Some("sk-or-primary-000000000".to_string()),
        context_window: None,
        trace: Vec::new(),
    };
    let opts = ClientOptions {
        auth_file: Some(path.clone()),
        ..ClientOptions::default()
    };
    let pool = credential_pool(&rt, &opts).unwrap();
    let got: Vec<&str> = pool.credentials.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(got, ["primary", "work", "api-key-2"]);
    // Reading never rewrites the file.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), FIXTURE);
}

#[test]
fn hermes_writes_keep_python_entries_and_keys() {
    let (dir, path) = fixture_home();
    let mut doc = read_json(&path);
    doc["providers"] =
        json!({"nous": {"access_token": "oauth-token", "portal_base_url": "https://portal"}});
    doc["active_provider"] = json!("nous");
    doc["suppressed_sources"] = json!({"openrouter": ["env:OPENROUTER_API_KEY"]});
    doc["future_top"] = json!({"x": 1});
    doc["credential_pool"]["openrouter"][0]["last_status"] = json!("exhausted");
    doc["credential_pool"]["openrouter"][0]["future_entry_key"] = json!([1, 2, 3]);
    doc["credential_pool"]["anthropic"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "oauth1", "label": "claude pro", "auth_type": "oauth", "priority": 1,
                     "source": "claude_code", "access_token": "sk-ant-oat-xyz", "refresh_token": "r"}));
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    auth_file::update(&path, |pools| {
        let or = pools
            .iter_mut()
            .find(|p| p.provider == "openrouter")
            .unwrap();
        or.remove("api-key-2");
        or.add("hermes-1", "sk-or-hermes-999900001111");
        or.strategy = PoolStrategy::RoundRobin;
        let an = pools
            .iter_mut()
            .find(|p| p.provider == "anthropic")
            .unwrap();
        an.add("second", "sk-ant-second-5555");
    })
    .unwrap();

    let after = read_json(&path);
    for key in [
        "providers",
        "active_provider",
        "suppressed_sources",
        "future_top",
    ] {
        assert_eq!(after[key], doc[key], "{key}");
    }
    assert_eq!(after["version"], 1);
    assert_ne!(after["updated_at"], doc["updated_at"]);
    let or = after["credential_pool"]["openrouter"].as_array().unwrap();
    assert_eq!(or.len(), 2);
    // The kept entry: every key as it was.
    let work = &doc["credential_pool"]["openrouter"][0];
    for (k, v) in work.as_object().unwrap() {
        assert_eq!(&or[0][k], v, "work.{k}");
    }
    // The new entry: Python's fields, so Python's PooledCredential reads it.
    assert_eq!(or[1]["label"], "hermes-1");
    assert_eq!(or[1]["access_token"], "sk-or-hermes-999900001111");
    assert_eq!(or[1]["auth_type"], "api_key");
    assert_eq!(or[1]["source"], "manual");
    assert_eq!(or[1]["priority"], 1);
    assert_eq!(or[1]["id"].as_str().unwrap().len(), 6);
    // The OAuth entry hermes does not use is still there.
    let an = after["credential_pool"]["anthropic"].as_array().unwrap();
    assert!(
        an.iter()
            .any(|e| e["id"] == "oauth1" && e["refresh_token"] == "r"),
        "{an:?}"
    );
    assert!(an.iter().any(|e| e["label"] == "second"));
    // hermes' own setting lives in its own file, not in auth.json.
    assert!(!after.to_string().contains("round_robin"));
    let side = read_json(&dir.path().join(auth_file::HERMES_SIDE_FILE));
    assert_eq!(side["strategies"]["openrouter"], "round_robin");
    let pools = CredentialPool::load(&path).unwrap();
    let or = pools.iter().find(|p| p.provider == "openrouter").unwrap();
    assert_eq!(or.strategy, PoolStrategy::RoundRobin);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(dir.path().join("auth.lock").exists(), "Python's lock file");
}

#[test]
fn malformed_auth_json_is_named_and_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    for (text, expected) in [
        ("{not json", "not valid JSON"),
        ("\"just a string\"", "expected a JSON object"),
        ("{\"credential_pool\": []}", "`credential_pool` is a list"),
        (
            "{\"credential_pool\": {\"openrouter\": {}}}",
            "`credential_pool.openrouter` is an object",
        ),
        (
            "{\"credential_pool\": {\"openrouter\": [{\"access_token\": 5}]}}",
            "entry #1",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        for err in [
            CredentialPool::load(&path).unwrap_err(),
            auth_file::check(&path).unwrap_err(),
            CredentialPool::save(
                &path,
                &[CredentialPool::new("openrouter", PoolStrategy::FillFirst)],
            )
            .unwrap_err(),
        ] {
            let msg = err.to_string();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(msg.contains(expected), "{text}: {msg}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}

#[test]
fn hermes_old_list_format_is_converted_keeping_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let mut pool = CredentialPool::new("openrouter", PoolStrategy::LeastUsed);
    pool.add("work", "sk-or-old-123412341234");
    pool.add("spare", "sk-or-old-567856785678");
    std::fs::write(&path, serde_json::to_string(&vec![pool]).unwrap()).unwrap();
    let pools = CredentialPool::load(&path).unwrap();
    assert_eq!(labels(&pools, "openrouter"), ["work", "spare"]);
    assert_eq!(pools[0].strategy, PoolStrategy::LeastUsed);
    let doc = read_json(&path);
    assert_eq!(doc["version"], 1);
    let entries = doc["credential_pool"]["openrouter"].as_array().unwrap();
    assert_eq!(entries[0]["access_token"], "sk-or-old-123412341234");
    assert_eq!(entries[1]["label"], "spare");
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

fn py(py: &Path, home: &Path, bin: &str, args: &[&str]) -> String {
    let out = Command::new(py.join("bin").join(bin))
        .args(args)
        .env("HERMES_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(home)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{bin} {args:?}: {text}");
    text
}

#[test]
fn keys_added_by_either_program_are_seen_by_the_other() {
    let Some(pyh) = python() else { return };
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("auth.json");
    py(
        &pyh,
        home.path(),
        "hermes",
        &[
            "auth",
            "add",
            "openrouter",
            "--type",
            "api-key",
            "--api-key",
            "sk-or-python-11112222",
            "--label",
            "py-key",
        ],
    );
    auth_file::update(&path, |pools| {
        let mut p = pools
            .iter()
            .find(|p| p.provider == "openrouter")
            .cloned()
            .unwrap();
        p.add("rs-key", "sk-or-hermes-33334444");
        p.strategy = PoolStrategy::RoundRobin;
        pools.retain(|x| x.provider != "openrouter");
        pools.push(p);
    })
    .unwrap();
    // Python lists both (a read command; it may rewrite the file).
    let listing = py(&pyh, home.path(), "hermes", &["auth", "list"]);
    assert!(
        listing.contains("py-key") && listing.contains("rs-key"),
        "{listing}"
    );
    // hermes still has both keys, and its strategy, afterwards.
    let pools = CredentialPool::load(&path).unwrap();
    assert_eq!(labels(&pools, "openrouter"), ["py-key", "rs-key"]);
    assert_eq!(pools[0].strategy, PoolStrategy::RoundRobin);
    // Python removes the hermes-made key by its label: its format is Python's own.
    py(
        &pyh,
        home.path(),
        "hermes",
        &["auth", "remove", "openrouter", "rs-key"],
    );
    let pools = CredentialPool::load(&path).unwrap();
    assert_eq!(labels(&pools, "openrouter"), ["py-key"]);
}

/// Both programs add keys to one `auth.json` at the same time; with the shared `auth.lock`
/// flock every key survives.
#[test]
fn concurrent_key_additions_from_both_programs_all_survive() {
    let Some(pyh) = python() else { return };
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("auth.json");
    const N: usize = 30;
    let script = format!(
        "from hermes_cli.auth import _auth_store_lock, read_credential_pool, write_credential_pool\n\
         for i in range({N}):\n\
         \x20   with _auth_store_lock():\n\
         \x20       pool = read_credential_pool('openrouter')\n\
         \x20       pool.append({{'id': 'py%04d' % i, 'label': 'py-%d' % i, 'auth_type': 'api_key', 'priority': len(pool), 'source': 'manual', 'access_token': 'sk-or-py-%06d' % i}})\n\
         \x20       write_credential_pool('openrouter', pool)\n"
    );
    let mut child = Command::new(pyh.join("bin/python"))
        .args(["-c", &script])
        .env("HERMES_HOME", home.path())
        .current_dir(home.path())
        .spawn()
        .unwrap();
    for i in 0..N {
        auth_file::update(&path, |pools| {
            if !pools.iter().any(|p| p.provider == "openrouter") {
                pools.push(CredentialPool::new("openrouter", PoolStrategy::FillFirst));
            }
            let p = pools
                .iter_mut()
                .find(|p| p.provider == "openrouter")
                .unwrap();
            p.add(format!("rs-{i}"), format!("sk-or-rs-{i:06}"));
        })
        .unwrap();
    }
    assert!(child.wait().unwrap().success());
    let pools = CredentialPool::load(&path).unwrap();
    let got = labels(&pools, "openrouter");
    for prefix in ["py", "rs"] {
        for i in 0..N {
            let l = format!("{prefix}-{i}");
            assert!(got.contains(&l), "{l} lost: {got:?}");
        }
    }
    assert_eq!(got.len(), 2 * N);
}
