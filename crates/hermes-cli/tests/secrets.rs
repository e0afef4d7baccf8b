//! The secrets test of issue 18 ("How it is checked"): fake keys of every kind are planted
//! in a temporary HERMES_HOME (`.env`, `auth.json`, `config.yaml` keys, MCP headers and env,
//! an MCP OAuth token), and a copy of them in a workspace file; the mock model reads that
//! file with `read_file` and `cat`, and `HERMES_HOME/.env` itself. Then every channel is
//! searched for each planted value: the requests the model received, `--json` stdout,
//! stderr (logs at debug level), every file hermes wrote under HERMES_HOME (state.db and its
//! WAL included) and in the workspace, `sessions show`/`export` and `config show`. None may
//! hold a value, and the markers must be where the values were (so the test fails without
//! redaction). Modes: every file hermes created is 0600 and every folder 0700, `doctor`
//! reports the loose ones the test planted and `doctor --fix` repairs them; `hermes auth
//! add` and `hermes import` write private files too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

/// `(where it is planted, value)`; every value is long enough to be redacted.
const SECRETS: &[(&str, &str)] = &[
    (".env OPENAI_API_KEY", "sk-e2e-env-openai-0123456789"),
    (
        ".env TELEGRAM_BOT_TOKEN",
        "123456789:AAE2eTelegramBotTokenXyz",
    ),
    (".env API_SERVER_KEY", "e2e-api-server-key-55555"),
    ("config model.api_key", "sk-e2e-config-model-key-777"),
    ("config delegation.api_key", "sk-e2e-config-delegate-888"),
    (
        "config custom_providers.0.api_key",
        "sk-e2e-custom-provider-999",
    ),
    ("config gateway token", "e2e-gateway-slack-token-4242"),
    ("config mcp headers", "e2e-mcp-header-bearer-1111"),
    ("config mcp env", "e2e-mcp-env-secret-2222"),
    ("auth.json key", "sk-e2e-auth-pool-key-3333"),
    ("mcp-tokens access_token", "e2e-oauth-access-token-4444"),
];

fn value(label: &str) -> &'static str {
    SECRETS
        .iter()
        .find(|(l, _)| *l == label)
        .map(|(_, v)| *v)
        .unwrap()
}

async fn planted_env() -> Env {
    let extra = format!(
        "  api_key: {model}\n\
         delegation:\n  provider: openrouter\n  api_key: {delegate}\n\
         custom_providers:\n  - name: mine\n    base_url: http://127.0.0.1:9/v1\n    api_key: {custom}\n\
         gateway:\n  platforms:\n    slack:\n      enabled: false\n      bot_token: {slack}\n\
         mcp_servers:\n  remote:\n    url: http://127.0.0.1:9/mcp\n    enabled: false\n    headers:\n      Authorization: Bearer {header}\n  local:\n    command: /bin/false\n    enabled: false\n    env:\n      UPSTREAM_CREDENTIAL_VALUE: {mcp_env}\n",
        model = value("config model.api_key"),
        delegate = value("config delegation.api_key"),
        custom = value("config custom_providers.0.api_key"),
        slack = value("config gateway token"),
        header = value("config mcp headers"),
        mcp_env = value("config mcp env"),
    );
    let env = Env::with_config(&extra).await;
    let home = env.home.home();
    std::fs::write(
        home.env_file(),
        format!(
            "OPENAI_API_KEY={}\nTELEGRAM_BOT_TOKEN={}\nAPI_SERVER_KEY={}\n",
            value(".env OPENAI_API_KEY"),
            value(".env TELEGRAM_BOT_TOKEN"),
            value(".env API_SERVER_KEY"),
        ),
    )
    .unwrap();
    std::fs::write(
        home.auth_file(),
        format!(
            r#"{{"version":1,"providers":{{}},"credential_pool":{{"openrouter":[{{"id":"a1","label":"k1","auth_type":"api_key","priority":0,"source":"manual","access_token":"{}"}}]}}}}"#,
            value("auth.json key")
        ),
    )
    .unwrap();
    std::fs::create_dir_all(home.root().join("mcp-tokens")).unwrap();
    std::fs::write(
        home.root().join("mcp-tokens/remote.json"),
        format!(
            r#"{{"access_token":"{}","token_type":"Bearer"}}"#,
            value("mcp-tokens access_token")
        ),
    )
    .unwrap();
    // The sandbox may refuse reads of .env; a copy in the workspace is read regardless.
    let notes: String = SECRETS.iter().map(|(l, v)| format!("{l}: {v}\n")).collect();
    std::fs::write(env.cwd.path().join("notes.txt"), notes).unwrap();
    env
}

/// Files the test itself planted (their content is the secrets, by design).
fn planted(env: &Env) -> Vec<PathBuf> {
    let home = env.home.home();
    vec![
        home.env_file(),
        home.auth_file(),
        home.config_file(),
        home.root().join("mcp-tokens"),
        home.root().join("mcp-tokens/remote.json"),
        env.cwd.path().join("notes.txt"),
    ]
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        out.push(p.clone());
        if p.is_dir() && !p.is_symlink() {
            walk(&p, out);
        }
    }
}

fn assert_no_secret(channel: &str, text: &str) {
    for (label, v) in SECRETS {
        assert!(
            !text.contains(v),
            "{label} ({v}) leaked into {channel}:\n{text}"
        );
    }
}

#[tokio::test]
async fn planted_secrets_never_leave() {
    let env = planted_env().await;
    let env_path = env.home.home().env_file().display().to_string();
    let read_env = serde_json::json!({ "path": env_path }).to_string();
    let cat_env = serde_json::json!({ "command": format!("cat '{env_path}'") }).to_string();
    env.mock.push(MockResponse::tool_calls(&[
        ("call_1", "read_file", r#"{"path":"notes.txt"}"#),
        ("call_2", "terminal", r#"{"command":"cat notes.txt"}"#),
        ("call_3", "read_file", &read_env),
        ("call_4", "terminal", &cat_env),
    ]));
    env.mock.push(MockResponse::text("I read your notes."));
    let out = env
        .run_env(
            &["chat", "-q", "read my notes", "--json", "--yolo"],
            &[("HERMES_LOG", "debug".to_string())],
        )
        .await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));

    // The model: tool results carry markers, never values.
    let requests = env.mock.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    let tool_texts: Vec<String> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(tool_texts.len(), 4, "{tool_texts:?}");
    for text in &tool_texts[..2] {
        for marker in [
            "[REDACTED:OPENAI_API_KEY]",
            "[REDACTED:TELEGRAM_BOT_TOKEN]",
            "[REDACTED:model.api_key]",
            "[REDACTED:delegation.api_key]",
            "[REDACTED:custom_providers.0.api_key]",
            "[REDACTED:gateway.platforms.slack.bot_token]",
            "[REDACTED:mcp_servers.remote.headers.Authorization]",
            "[REDACTED:mcp_servers.local.env.UPSTREAM_CREDENTIAL_VALUE]",
            "[REDACTED:auth.json.credential_pool.openrouter.0.access_token]",
            "[REDACTED:mcp-tokens/remote.json.access_token]",
        ] {
            assert!(text.contains(marker), "{marker} missing from {text}");
        }
    }
    assert_no_secret(
        "the model requests",
        &serde_json::to_string(&requests).unwrap(),
    );
    assert_no_secret("--json stdout", &stdout(&out));
    assert!(stdout(&out).contains("[REDACTED:"), "{}", stdout(&out));
    assert_no_secret("stderr (logs)", &stderr(&out));

    // Every file hermes wrote: the store (with its WAL), caches, logs, the workspace.
    let session = env.run_ok(&["sessions", "list"]).await;
    let id = stdout(&session)
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    for args in [
        vec!["sessions", "show", id.as_str()],
        vec!["sessions", "export", id.as_str(), "--format", "json"],
        vec!["sessions", "export", id.as_str(), "--format", "markdown"],
    ] {
        let shown = env.run_ok(&args).await;
        assert_no_secret(&format!("`hermes {}`", args.join(" ")), &stdout(&shown));
    }
    let export_file = env.home.home().sessions_dir().join("export.json");
    env.run_ok(&[
        "sessions",
        "export",
        &id,
        "--format",
        "json",
        "-o",
        export_file.to_str().unwrap(),
    ])
    .await;
    assert!(export_file.is_file());
    let skip = planted(&env);
    let mut files = Vec::new();
    walk(env.home.path(), &mut files);
    walk(env.cwd.path(), &mut files);
    let mut searched = 0;
    for f in &files {
        if skip.contains(f) || !f.is_file() {
            continue;
        }
        let bytes = std::fs::read(f).unwrap();
        assert_no_secret(&f.display().to_string(), &String::from_utf8_lossy(&bytes));
        searched += 1;
    }
    let db = env.home.home().state_db();
    let db_text = String::from_utf8_lossy(&std::fs::read(&db).unwrap()).into_owned()
        + &String::from_utf8_lossy(
            &std::fs::read(db.with_file_name("state.db-wal")).unwrap_or_default(),
        );
    assert!(
        db_text.contains("[REDACTED:OPENAI_API_KEY]"),
        "the store holds the marker"
    );
    assert!(searched >= 2, "searched {searched} files: {files:?}");

    // `config show` masks every secret field.
    let shown = env.run_ok(&["config", "show"]).await;
    assert_no_secret("`hermes config show`", &stdout(&shown));
    assert!(stdout(&shown).contains("mcp_servers"), "{}", stdout(&shown));

    // Modes: what hermes created is owner-only, including what `hermes auth add` (its
    // lock file) and `hermes import` (every restored file) write.
    env.run_ok(&[
        "auth",
        "add",
        "openrouter",
        "--key",
        "sk-e2e-auth-added-key-6666",
    ])
    .await;
    let backups = tempfile::tempdir().unwrap();
    let zip = backups.path().join("home.zip");
    env.run_ok(&["backup", "-o", zip.to_str().unwrap()]).await;
    env.run_ok(&["import", zip.to_str().unwrap(), "--force"])
        .await;
    // Into a new home too: there every restored file is created by the import.
    let fresh = hermes_testkit::TempHome::new().unwrap();
    let imported = common::hermes(
        fresh.path(),
        env.cwd.path(),
        &["import", zip.to_str().unwrap()],
    )
    .await;
    assert!(imported.status.success(), "{}", stderr(&imported));
    let mut files = Vec::new();
    walk(env.home.path(), &mut files);
    let before_fresh = files.len();
    walk(fresh.path(), &mut files);
    assert!(
        files.len() > before_fresh + 1,
        "the import restored nothing: {files:?}"
    );
    assert!(
        files.iter().any(|f| f.ends_with("auth.lock")),
        "no auth.lock: {files:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in &files {
            if skip.contains(f) || f.starts_with(env.cwd.path()) || f.is_symlink() {
                continue;
            }
            let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
            let want = if f.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "{} has mode {mode:o}", f.display());
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn doctor_reports_loose_modes_and_fix_repairs_them() {
    use std::os::unix::fs::PermissionsExt;
    let env = planted_env().await;
    let loose = env.home.home().memories_dir();
    std::fs::create_dir_all(&loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o755)).unwrap();
    let report = env.run(&["doctor"]).await;
    let text = stdout(&report) + &stderr(&report);
    assert!(
        text.contains("can be read by other users") && text.contains(".env (644)"),
        "{text}"
    );
    env.run(&["doctor", "--fix"]).await;
    let mut files = vec![env.home.path().to_path_buf()];
    walk(env.home.path(), &mut files);
    for f in &files {
        if f.is_symlink() {
            continue;
        }
        let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} still {mode:o}", f.display());
    }
    let again = env.run(&["doctor"]).await;
    assert!(
        stdout(&again).contains("every file and folder under HERMES_HOME is private"),
        "{}",
        stdout(&again)
    );
}

/// What commands print is masked like the logs (the user pass of issue 20): a key hermes
/// knows and a key written into an MCP server's URL, in `mcp list`, the start-up warning of
/// `chat -q` and `doctor`'s report.
#[tokio::test]
async fn terminal_lines_hold_no_secret() {
    let literal = "sk-or-v1-abcdef0123456789abcdef";
    let known = "tok-verysecret-0123456789abcdef";
    let extra = format!(
        "mcp_servers:\n  leak:\n    url: \"http://127.0.0.1:9/mcp?api_key={literal}\"\n  envtok:\n    url: \"http://127.0.0.1:9/mcp?token=${{MCP_TOKEN}}\"\n"
    );
    let env = Env::with_config(&extra).await;
    std::fs::write(env.home.home().env_file(), format!("MCP_TOKEN={known}\n")).unwrap();
    env.mock.push(MockResponse::text("hi"));
    for args in [
        &["mcp", "list"][..],
        &["chat", "-q", "hello"][..],
        &["doctor"][..],
    ] {
        let out = env.run(args).await;
        let text = format!("{}\n{}", stdout(&out), stderr(&out));
        for secret in [literal, known, &literal[..20], &known[..20]] {
            assert!(!text.contains(secret), "{args:?} shows {secret}:\n{text}");
        }
    }
    let listed = stdout(&env.run_ok(&["mcp", "list"]).await);
    assert!(listed.contains("leak"), "{listed}");
}
