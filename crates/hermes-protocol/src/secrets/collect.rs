//! Where the secrets of a home are found ([`SecretRedactor::load`]) and which config fields
//! are secret ([`mask_secret_fields`], for `hermes config show`). One rule for both: a field
//! is secret when its name looks like a key, token, secret or password ([`is_secret_name`]),
//! or when it is a value of an MCP server's `headers` or `env` map.

use std::collections::BTreeMap;
use std::path::Path;

use super::SecretRedactor;
use crate::HermesHome;
use crate::config::parse_env_file;

/// True when a variable or field named `name` holds a secret: its name contains `key`
/// (as a word: `api_key`, `OPENAI_API_KEY`, `access_key`, `keys`), `token`, `secret`,
/// `password`/`passwd`/`passphrase`, `credential`, `authorization` or `cookie`, or the words
/// `pass` or `pat` (`DB_PASS`, `GH_PAT`), or it is a webhook URL (`SLACK_WEBHOOK_URL`)
/// (case-insensitive). Names that point at a secret instead of holding one (`…_env`,
/// `…_file`, `…_path`, `…_url`, `…_strategy`, `max_tokens`…) are not secret.
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // A webhook URL is itself the credential (Slack, Discord): whoever has it may post.
    if lower.contains("webhook_url") || lower.ends_with("webhook") {
        return true;
    }
    for suffix in [
        "_env",
        "_file",
        "_path",
        "_url",
        "_strategy",
        "_mode",
        "_type",
        "_dir",
    ] {
        if lower.ends_with(suffix) {
            return false;
        }
    }
    if lower.contains("max_token") || lower.ends_with("tokens") {
        // `max_tokens`, `reasoning_tokens`: budgets, not credentials.
        return false;
    }
    const WORDS: [&str; 12] = [
        "token",
        "jwt",
        "dsn",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "credential",
        "authorization",
        "cookie",
        "apikey",
        "private_key",
    ];
    if WORDS.iter().any(|w| lower.contains(w)) {
        return true;
    }
    // `key` as a word of a snake/kebab/camel name: `api_key`, `KEY`, `keys`, `x-api-key`;
    // `pass`, `pwd` and `pat` (a personal access token) as words: `DB_PASS`, `MYSQL_PWD`,
    // `GH_PAT` (the shell's own `PWD`, the working directory, is not one); `auth` as a word:
    // `NPM_CONFIG__AUTH`, `DOCKER_AUTH_CONFIG`.
    // (A key named just `auth` is a mode, as in an MCP server's `auth: oauth`.)
    if matches!(lower.as_str(), "pwd" | "oldpwd" | "auth") {
        return false;
    }
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| matches!(w, "key" | "keys" | "pass" | "pwd" | "pat" | "auth"))
}

/// A config/JSON tree reduced to what the walk needs.
enum Node {
    Str(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
    Other,
}

impl From<&yaml_serde::Value> for Node {
    fn from(v: &yaml_serde::Value) -> Node {
        match v {
            yaml_serde::Value::String(s) => Node::Str(s.clone()),
            yaml_serde::Value::Sequence(items) => {
                Node::List(items.iter().map(Node::from).collect())
            }
            yaml_serde::Value::Mapping(map) => Node::Map(
                map.iter()
                    .map(|(k, v)| (yaml_key(k), Node::from(v)))
                    .collect(),
            ),
            yaml_serde::Value::Tagged(t) => Node::from(&t.value),
            _ => Node::Other,
        }
    }
}

impl From<&serde_json::Value> for Node {
    fn from(v: &serde_json::Value) -> Node {
        match v {
            serde_json::Value::String(s) => Node::Str(s.clone()),
            serde_json::Value::Array(items) => Node::List(items.iter().map(Node::from).collect()),
            serde_json::Value::Object(map) => Node::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::from(v)))
                    .collect(),
            ),
            _ => Node::Other,
        }
    }
}

fn yaml_key(k: &yaml_serde::Value) -> String {
    match k {
        yaml_serde::Value::String(s) => s.clone(),
        yaml_serde::Value::Number(n) => n.to_string(),
        yaml_serde::Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// How the walk treats the strings below the current node.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    /// Only fields with secret names.
    Names,
    /// Every string (below a secret-named field).
    All,
    /// Every string that could be a credential (values of `headers` / `env` maps).
    Loose,
}

/// A value of a `headers`/`env` map that is plainly not a credential: a path, a plain
/// lowercase word (`production`), a `${VAR}` reference (the variable is collected itself).
pub(super) fn plainly_not_secret(value: &str) -> bool {
    let v = value.trim();
    v.starts_with('/')
        || v.starts_with('~')
        || v.starts_with("./")
        || (v.starts_with("${") && v.ends_with('}') && !v[2..].contains("${"))
        || v.chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c == '_')
}

/// The credentials inside a URL whatever its field's name: the password of
/// `scheme://user:pass@host` and the values of secret-named query parameters
/// (`?access_token=…`, `&api_key=…`), labelled under `path` (the attack pass of issue 18:
/// `model.base_url`, `web.searxng_url` and MCP server URLs carried them unmasked).
fn url_credentials(value: &str, path: &str, out: &mut Vec<(String, String)>) {
    if let Some(password) = url_password(value) {
        out.push((format!("{path}.password"), password.to_string()));
    }
    if !value.contains("://") {
        return;
    }
    let query = value.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let query = query.split('#').next().unwrap_or_default();
    for pair in query.split('&') {
        if let Some((name, v)) = pair.split_once('=')
            && is_secret_name(name)
            && !v.is_empty()
        {
            out.push((format!("{path}.{name}"), v.to_string()));
        }
    }
}

/// The values an argument list passes after a secret-named flag (`--token X`,
/// `--api-key=X`), as MCP servers' `args` do.
fn flag_values(items: &[Node], path: &str, out: &mut Vec<(String, String)>) {
    let mut after_flag: Option<String> = None;
    for item in items {
        let Node::Str(s) = item else {
            after_flag = None;
            continue;
        };
        if let Some(flag) = after_flag.take() {
            out.push((format!("{path}.{flag}"), s.clone()));
            continue;
        }
        let Some(flag) = s.strip_prefix("--").or_else(|| s.strip_prefix('-')) else {
            continue;
        };
        match flag.split_once('=') {
            Some((name, v)) if is_secret_name(name) && !v.is_empty() => {
                out.push((format!("{path}.{name}"), v.to_string()));
            }
            None if is_secret_name(flag) => after_flag = Some(flag.to_string()),
            _ => {}
        }
    }
}

fn walk(node: &Node, path: &str, scope: Scope, out: &mut Vec<(String, String)>) {
    match node {
        Node::Str(s) => match scope {
            Scope::All => out.push((path.to_string(), s.clone())),
            Scope::Loose if !plainly_not_secret(s) => out.push((path.to_string(), s.clone())),
            _ => url_credentials(s, path, out),
        },
        Node::List(items) => {
            if path.ends_with("args") {
                flag_values(items, path, out);
            }
            for (i, item) in items.iter().enumerate() {
                let child = if path.is_empty() {
                    i.to_string()
                } else {
                    format!("{path}.{i}")
                };
                walk(item, &child, scope, out);
            }
        }
        Node::Map(entries) => {
            for (k, v) in entries {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let scope = if scope == Scope::All || is_secret_name(k) {
                    Scope::All
                } else if k == "headers" || k == "env" || scope == Scope::Loose {
                    Scope::Loose
                } else {
                    Scope::Names
                };
                walk(v, &child, scope, out);
            }
        }
        Node::Other => {}
    }
}

/// Expands `${NAME}` references with `vars` (`.env` first, then the process environment),
/// as `mcp_servers` values are expanded when a server starts.
pub(super) fn expand(value: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match vars.get(name) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&std::env::var(name).unwrap_or_default()),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

impl SecretRedactor {
    /// Collects every secret of `home` ([`collect_secrets`]) into a redactor. Files that
    /// are missing or do not parse contribute nothing (their problems are reported by the
    /// commands that read them); this never fails.
    pub fn load(home: &HermesHome) -> SecretRedactor {
        SecretRedactor::new(collect_secrets(home))
    }
}

/// The `(label, value)` pairs of every secret hermes knows in `home`:
/// - `.env` entries with secret names ([`is_secret_name`]), and entries whose value is a URL
///   with credentials (`scheme://user:pass@host`, whatever the name), labelled by the name;
/// - process environment variables with secret names (provider keys exported in the
///   shell), labelled by the name;
/// - `config.yaml`: every string under a secret-named field anywhere (`model.api_key`,
///   `delegation.api_key`, `custom_providers.N.api_key`, `gateway.platforms.telegram.token`,
///   `fallback_providers.N.api_keys.M`) and the values of every `headers` and `env` map
///   (`mcp_servers.NAME.headers.Authorization`), with `${VAR}` references expanded;
/// - `auth.json`: every string under a secret-named field (keys, access and refresh
///   tokens), labelled `auth.json.<path>`;
/// - `mcp-tokens/*.json` (MCP OAuth tokens and client secrets), labelled
///   `mcp-tokens/<file>.<path>`;
/// - the `.env`, `auth.json` and `mcp-tokens/` secrets of every other home the session can
///   see ([`HermesHome::related_homes`]: sibling profiles, the base home of a profile, the
///   default `~/.hermes`), labelled `profiles/<name>/…` or `<folder>/…`.
pub fn collect_secrets(home: &HermesHome) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let env_vars = std::fs::read_to_string(home.env_file())
        .map(|t| parse_env_file(&t))
        .unwrap_or_default();
    collect_env(&env_vars, "", &mut out);
    let process_env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    collect_env(&process_env, "", &mut out);
    collect_config(home, &env_vars, "", &mut out);
    super::tool_files::collect_tool_files(home, &env_vars, &process_env, &mut out);
    collect_json(&home.auth_file(), "auth.json", &mut out);
    collect_token_dir(&home.root().join("mcp-tokens"), "mcp-tokens", &mut out);
    let user_home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    for other in home.related_homes(user_home.as_deref()).iter().skip(1) {
        collect_other_home(other, &mut out);
    }
    out
}

/// The secrets of `home`'s `config.yaml` (see [`collect_secrets`]), `${VAR}` references
/// expanded with `env_vars`, labelled `<prefix><path>`.
fn collect_config(
    home: &HermesHome,
    env_vars: &BTreeMap<String, String>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) {
    let Ok(text) = std::fs::read_to_string(home.config_file()) else {
        return;
    };
    let Ok(value) = yaml_serde::from_str::<yaml_serde::Value>(&text) else {
        return;
    };
    let mut found = Vec::new();
    walk(&Node::from(&value), "", Scope::Names, &mut found);
    for (label, v) in found {
        let v = expand(&v, env_vars);
        // A reference expanded into a URL or argument list may carry credentials itself.
        url_credentials(&v, &format!("{prefix}{label}"), out);
        out.push((format!("{prefix}{label}"), v));
    }
}

/// Whether environment variable `name=value` holds a secret: a secret name
/// ([`is_secret_name`]) or a URL with a password whatever its name (`DATABASE_URL`).
pub fn is_secret_variable(name: &str, value: &str) -> bool {
    is_secret_name(name) || url_password(value).is_some()
}

/// The secret entries of a parsed `.env`: secret-named variables, and any value carrying
/// URL credentials (`scheme://user:pass@host`) whatever its name, labelled `<prefix><name>`.
fn collect_env(vars: &BTreeMap<String, String>, prefix: &str, out: &mut Vec<(String, String)>) {
    for (k, v) in vars {
        if is_secret_name(k) {
            out.push((format!("{prefix}{k}"), v.clone()));
        } else if let Some(password) = url_password(v) {
            out.push((format!("{prefix}{k}"), v.clone()));
            out.push((format!("{prefix}{k}.password"), password.to_string()));
        }
    }
}

/// The password of a URL with credentials (`scheme://user:pass@host/…`), if `value` is one.
fn url_password(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, host) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty() && !host.is_empty()).then_some(password)
}

/// The `.env`, `auth.json` and `mcp-tokens/` secrets of another home the session can see
/// (a sibling profile, the base or default home; [`HermesHome::related_homes`]), labelled
/// `profiles/<name>/…` or `<folder name>/…`.
fn collect_other_home(root: &Path, out: &mut Vec<(String, String)>) {
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_profiles = root
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "profiles");
    let prefix = if in_profiles {
        format!("profiles/{name}/")
    } else {
        format!("{name}/")
    };
    let other = HermesHome::new(root);
    let env_vars = std::fs::read_to_string(other.env_file())
        .map(|t| parse_env_file(&t))
        .unwrap_or_default();
    collect_env(&env_vars, &prefix, out);
    collect_config(&other, &env_vars, &format!("{prefix}config.yaml."), out);
    collect_json(&other.auth_file(), &format!("{prefix}auth.json"), out);
    collect_token_dir(
        &root.join("mcp-tokens"),
        &format!("{prefix}mcp-tokens"),
        out,
    );
}

fn collect_token_dir(dir: &Path, label: &str, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    for path in files {
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            collect_json(&path, &format!("{label}/{name}"), out);
        }
    }
}

fn collect_json(path: &Path, label: &str, out: &mut Vec<(String, String)>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return;
    };
    let mut found = Vec::new();
    walk(&Node::from(&value), "", Scope::Names, &mut found);
    out.extend(found.into_iter().map(|(l, v)| (format!("{label}.{l}"), v)));
}

/// Replaces, in a config tree, every value [`collect_secrets`] would treat as a secret with
/// `mask(value)` — for `hermes config show`. Strings under secret-named fields and the values
/// of `headers` / `env` maps are masked (a `${VAR}` reference is left as written: it names
/// the secret, it is not one).
pub fn mask_secret_fields(value: &mut yaml_serde::Value, mask: &dyn Fn(&str) -> String) {
    mask_walk(value, Scope::Names, mask);
}

fn mask_walk(value: &mut yaml_serde::Value, scope: Scope, mask: &dyn Fn(&str) -> String) {
    match value {
        yaml_serde::Value::String(s) => {
            let reference = s.starts_with("${") && s.ends_with('}');
            if scope != Scope::Names && !reference {
                *s = mask(s);
            }
        }
        yaml_serde::Value::Sequence(items) => {
            for item in items {
                mask_walk(item, scope, mask);
            }
        }
        yaml_serde::Value::Mapping(map) => {
            for (k, v) in map.iter_mut() {
                let k = yaml_key(k);
                let scope = if scope != Scope::Names
                    || is_secret_name(&k)
                    || k == "headers"
                    || k == "env"
                {
                    Scope::All
                } else {
                    Scope::Names
                };
                mask_walk(v, scope, mask);
            }
        }
        yaml_serde::Value::Tagged(t) => mask_walk(&mut t.value, scope, mask),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "OPENAI_API_KEY",
            "api_key",
            "api_keys",
            "TELEGRAM_BOT_TOKEN",
            "access_token",
            "refresh_token",
            "client_secret",
            "WEBHOOK_SECRET",
            "password",
            "Authorization",
            "x-api-key",
            "key",
            "agent_key",
            "apiKey",
            "dsn",
            "HERMES_SESSIONDB_DSN",
            // Names the attack pass of stop 31 found passed to commands unmasked.
            "DB_PASS",
            "GH_PAT",
            "SLACK_WEBHOOK_URL",
            "discord_webhook",
            // And the second pass's: CI and registry credentials.
            "CI_JOB_JWT",
            "MYSQL_PWD",
            "NPM_CONFIG__AUTH",
            "DOCKER_AUTH_CONFIG",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "max_tokens",
            "api_key_env",
            "PATH",
            "bypass",
            "webhook_port",
            "provider",
            "base_url",
            "keyboard",
            "monkey",
            "credential_strategy",
            "reasoning_tokens",
            "HOME",
            "PWD",
            "OLDPWD",
            "GIT_AUTHOR_NAME",
            "auth_type",
            "OAUTH_CALLBACK_PORT",
            "auth",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn urls_with_passwords() {
        for (v, password) in [
            ("postgres://app:s3cret@db.internal:5432/app", "s3cret"),
            ("redis://:hunter2@cache:6379/0", "hunter2"),
            ("https://user:ghp_abc@github.com/org/repo.git", "ghp_abc"),
        ] {
            assert_eq!(url_password(v), Some(password), "{v}");
        }
        for v in [
            "postgres://db.internal/app",
            "https://example.com/a:b@c",
            "postgres://user@host/db",
            "mailto:someone@example.com",
            "not a url",
            "https://user:@host/",
        ] {
            assert_eq!(url_password(v), None, "{v}");
        }
    }

    /// Credentials that are not under a secret-named field (the attack pass of issue 18):
    /// URL passwords, secret-named query parameters, `--token X` in MCP args, and the
    /// config.yaml keys of the other homes the session can see.
    #[test]
    fn credentials_inside_urls_args_and_other_homes_configs_are_collected() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path().join("hh"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(
            home.env_file(),
            "MCP_TOKEN=tok-verysecret-0123456789abcdef\n",
        )
        .unwrap();
        std::fs::write(
            home.config_file(),
            "model:\n  provider: custom\n  base_url: http://bob:basecanary0015pw@127.0.0.1:9/v1\n\
             web:\n  searxng_url: http://u:searxcanary0019pw@127.0.0.1:9/\n\
             mcp_servers:\n  argsrv:\n    command: python3\n    args: [srv.py, --token, argcanary0020token, --api-key=argcanary0023eq, --plain, visible-value]\n\
               urlsrv:\n    url: \"http://127.0.0.1:9/mcp?access_token=urlcanary0021token&page=2\"\n\
               envtok:\n    url: \"http://127.0.0.1:9/mcp?token=${MCP_TOKEN}\"\n",
        )
        .unwrap();
        let side = home.root().join("profiles/side");
        std::fs::create_dir_all(&side).unwrap();
        std::fs::write(
            side.join("config.yaml"),
            "model:\n  api_key: sk-test-canarySIDECFG0043\n",
        )
        .unwrap();
        let found = collect_secrets(&home);
        let values: Vec<&str> = found.iter().map(|(_, v)| v.as_str()).collect();
        for secret in [
            "basecanary0015pw",
            "searxcanary0019pw",
            "argcanary0020token",
            "argcanary0023eq",
            "urlcanary0021token",
            "tok-verysecret-0123456789abcdef",
            "sk-test-canarySIDECFG0043",
        ] {
            assert!(
                values.contains(&secret),
                "{secret} not collected: {found:?}"
            );
        }
        assert!(!values.contains(&"visible-value"), "{found:?}");
        assert!(!values.contains(&"2"), "{found:?}");
        assert!(
            found.iter().all(|(l, _)| !l.contains("canary")),
            "labels never hold values: {found:?}"
        );
    }

    #[test]
    fn every_kind_of_home_secret_is_collected() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path());
        std::fs::write(
            home.env_file(),
            "OPENROUTER_API_KEY=sk-or-env-secret-1\nHERMES_MODEL=some/model-name\nGH=ghp_referenced_secret_9\n",
        )
        .unwrap();
        std::fs::write(
            home.config_file(),
            "model:\n  provider: custom\n  api_key: sk-model-secret-2\n  max_tokens: 123456789\n\
             delegation:\n  api_key: sk-delegate-secret-3\n\
             custom_providers:\n  - name: mine\n    base_url: http://127.0.0.1:1/v1\n    api_key: sk-custom-secret-4\n\
             mcp_servers:\n  gh:\n    url: http://127.0.0.1:2/mcp\n    headers:\n      Authorization: Bearer ${GH}\n  fs:\n    command: npx\n    env:\n      NODE_ENV: production\n      ROOT: /srv/data\n      UPSTREAM: plainvalue-5-xyz\n",
        )
        .unwrap();
        std::fs::write(
            home.auth_file(),
            r#"{"providers":{"nous":{"access_token":"nous-access-secret-6","label":"main"}},"pools":[{"provider":"openai","keys":["sk-pool-secret-7"]}]}"#,
        )
        .unwrap();
        std::fs::create_dir_all(home.root().join("mcp-tokens")).unwrap();
        std::fs::write(
            home.root().join("mcp-tokens/gh.json"),
            r#"{"access_token":"oauth-access-secret-8","token_type":"Bearer","expires_in":3600}"#,
        )
        .unwrap();
        let found = collect_secrets(&home);
        let get = |label: &str| {
            found
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("OPENROUTER_API_KEY"), Some("sk-or-env-secret-1"));
        assert_eq!(get("HERMES_MODEL"), None);
        assert_eq!(get("model.api_key"), Some("sk-model-secret-2"));
        assert_eq!(get("delegation.api_key"), Some("sk-delegate-secret-3"));
        assert_eq!(
            get("custom_providers.0.api_key"),
            Some("sk-custom-secret-4")
        );
        assert_eq!(
            get("mcp_servers.gh.headers.Authorization"),
            Some("Bearer ghp_referenced_secret_9")
        );
        assert_eq!(get("mcp_servers.fs.env.UPSTREAM"), Some("plainvalue-5-xyz"));
        assert_eq!(get("mcp_servers.fs.env.NODE_ENV"), None);
        assert_eq!(get("mcp_servers.fs.env.ROOT"), None);
        assert_eq!(
            get("auth.json.providers.nous.access_token"),
            Some("nous-access-secret-6")
        );
        assert_eq!(get("auth.json.pools.0.keys.0"), Some("sk-pool-secret-7"));
        assert_eq!(
            get("mcp-tokens/gh.json.access_token"),
            Some("oauth-access-secret-8")
        );
        let r = SecretRedactor::new(found);
        let text =
            "sk-or-env-secret-1 ghp_referenced_secret_9 oauth-access-secret-8 some/model-name";
        assert_eq!(
            r.redact(text),
            "[REDACTED:OPENROUTER_API_KEY] [REDACTED:mcp_servers.gh.headers.Authorization] \
             [REDACTED:mcp-tokens/gh.json.access_token] some/model-name"
        );
    }

    #[test]
    fn other_profiles_and_url_credentials_are_collected() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let home = HermesHome::new(base.join("profiles/a"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(
            home.env_file(),
            "DATABASE=postgres://app:pg-pass-secret-1@db.local/app\nSITE=https://example.org/x\n",
        )
        .unwrap();
        std::fs::create_dir_all(base.join("profiles/w/mcp-tokens")).unwrap();
        std::fs::write(
            base.join("profiles/w/.env"),
            "OPENAI_API_KEY=sk-sibling-secret-2\n",
        )
        .unwrap();
        std::fs::write(
            base.join("profiles/w/auth.json"),
            r#"{"providers":{"nous":{"access_token":"sibling-access-secret-3"}}}"#,
        )
        .unwrap();
        std::fs::write(
            base.join("profiles/w/mcp-tokens/gh.json"),
            r#"{"access_token":"sibling-oauth-secret-4"}"#,
        )
        .unwrap();
        std::fs::write(base.join(".env"), "ANTHROPIC_API_KEY=sk-base-secret-5\n").unwrap();
        let found = collect_secrets(&home);
        let values: Vec<&str> = found.iter().map(|(_, v)| v.as_str()).collect();
        for secret in [
            "postgres://app:pg-pass-secret-1@db.local/app",
            "pg-pass-secret-1",
            "sk-sibling-secret-2",
            "sibling-access-secret-3",
            "sibling-oauth-secret-4",
            "sk-base-secret-5",
        ] {
            assert!(values.contains(&secret), "{secret} missing from {found:?}");
        }
        assert!(!values.contains(&"https://example.org/x"), "{found:?}");
        let r = SecretRedactor::new(found);
        assert_eq!(
            r.redact("sk-sibling-secret-2"),
            "[REDACTED:profiles/w/OPENAI_API_KEY]"
        );
    }

    #[test]
    fn masking_covers_the_same_fields() {
        let mut v: yaml_serde::Value = yaml_serde::from_str(
            "model:\n  api_key: sk-a\n  provider: openai\ndelegation:\n  api_key: sk-b\n\
             mcp_servers:\n  x:\n    headers: {Authorization: Bearer sk-c}\n    env: {TOKEN: '${T}', OTHER: plain}\n",
        )
        .unwrap();
        mask_secret_fields(&mut v, &|_| "***".to_string());
        let text = yaml_serde::to_string(&v).unwrap();
        for secret in ["sk-a", "sk-b", "sk-c", "plain"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("openai") && text.contains("${T}"), "{text}");
    }
}
