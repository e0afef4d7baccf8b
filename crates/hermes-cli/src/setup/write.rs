//! Writing the wizard's answers: the API key into `HERMES_HOME/.env` (mode 0600, other lines
//! kept) and the `model:`, `toolsets:` and `mcp_servers:` settings into `config.yaml`: only
//! those settings' lines change when the file's layout allows it (comments and order kept);
//! otherwise the file is rewritten from its parsed settings, after saving the previous one
//! as `config.yaml.bak`, because comments do not survive that.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// What setup writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// `model.provider` (canonical id or alias as given).
    pub provider: String,
    /// `model.default`, when one was picked.
    pub model: Option<String>,
    /// `model.base_url` (custom servers).
    pub base_url: Option<String>,
    /// `model.api_key` (custom servers only; hosted keys go to `.env`).
    pub config_api_key: Option<String>,
    /// `(VARIABLE, key)` written to `.env`.
    pub env_key: Option<(String, String)>,
    /// `toolsets:`.
    pub toolsets: Vec<String>,
    /// One `mcp_servers:` entry: name and its settings (`url`, or `command` and `args`).
    pub mcp: Option<(String, Value)>,
}

/// An `mcp_servers` entry from what the user typed: an `http(s)://` URL, or a command line
/// (split like a shell would, quotes respected). Errors on an empty or unbalanced command.
pub fn mcp_entry(target: &str) -> Result<Value> {
    let target = target.trim();
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok(json!({ "url": target }));
    }
    let Some(words) = shlex::split(target) else {
        bail!("MCP server command `{target}` has unbalanced quotes");
    };
    let Some((command, args)) = words.split_first() else {
        bail!("an MCP server needs a URL or a command");
    };
    Ok(json!({ "command": command, "args": args }))
}

/// Sets `name=value` in the `.env` file at `path`: an existing line for `name` (also with
/// `export `) is replaced, everything else is kept; the file is written to a temporary
/// file created with mode 0600 and renamed over the old one, so the key is never readable
/// by others, not even for a moment.
pub fn set_env_var(path: &Path, name: &str, value: &str) -> Result<()> {
    if value.contains('\n') || value.contains('\r') {
        bail!("the value for {name} contains a line break");
    }
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let value = dotenv_value(value);
    let value = value.as_str();
    let mut lines = Vec::new();
    let mut replaced = false;
    for line in old.lines() {
        let bare = line.trim_start();
        let bare = bare.strip_prefix("export ").unwrap_or(bare);
        let is_it = bare.split_once('=').is_some_and(|(k, _)| k.trim() == name);
        if is_it {
            if !replaced {
                lines.push(format!("{name}={value}"));
                replaced = true;
            }
        } else {
            lines.push(line.to_string());
        }
    }
    if !replaced {
        lines.push(format!("{name}={value}"));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    write_private(path, &text)
}

/// Removes every line setting `name` (also with `export `) from the `.env` file at `path`,
/// keeping everything else (Python's `remove_env_value`). A missing file is left missing.
pub fn remove_env_var(path: &Path, name: &str) -> Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let kept: Vec<&str> = old
        .lines()
        .filter(|line| {
            let bare = line.trim_start();
            let bare = bare.strip_prefix("export ").unwrap_or(bare);
            bare.split_once('=').is_none_or(|(k, _)| k.trim() != name)
        })
        .collect();
    let mut text = kept.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    write_private(path, &text)
}

/// `value` as written after `NAME=`: bare when python-dotenv reads it back unchanged (letters,
/// digits and `_-.:/+=@,`), else in double quotes with `\\` and `\"` escaped, which
/// python-dotenv (and hermes' reader) decode to the same text.
fn dotenv_value(value: &str) -> String {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.:/+=@,".contains(c));
    if plain {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// Writes `text` to `path` through a temporary file with mode 0600 and a rename.
fn write_private(path: &Path, text: &str) -> Result<()> {
    // 0600 from creation (folders 0700), written beside and renamed over `path`.
    hermes_protocol::private_fs::write_atomic(path, text)
        .with_context(|| format!("writing {}", path.display()))
}

/// The `model:` keys setup decides: each is set from the plan or removed (a hosted provider
/// has no `base_url`, …). Every other `model:` key (`context_length`, `api_mode`,
/// `max_tokens`, …) is kept as it is.
const PLAN_MODEL_KEYS: [&str; 4] = ["provider", "default", "base_url", "api_key"];

/// Applies `plan` to `config.yaml` at `path`: the [`PLAN_MODEL_KEYS`] of `model:` are set or
/// removed, `toolsets:` set, the MCP entry added or replaced under `mcp_servers:`; every
/// other setting, `model:`'s other keys included, is kept.
/// Errors when the existing file is not valid YAML or not a mapping (nothing is written).
pub fn apply_config(path: &Path, plan: &Plan) -> Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: Value = match old.as_deref().map(str::trim) {
        None | Some("") => json!({}),
        Some(text) => yaml_serde::from_str(text).with_context(|| {
            format!(
                "{} is not valid YAML; fix it (`hermes config check` shows where) or move it \
                 away, then run setup again",
                path.display()
            )
        })?,
    };
    let Some(root) = doc.as_object_mut() else {
        bail!("{} is not a mapping of settings", path.display());
    };
    let old_model_keys: Vec<String> = root
        .get("model")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    // A bare `model: name` becomes a table; a table keeps the keys setup does not decide.
    let mut model = root
        .get("model")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(Map::new);
    model.retain(|k, _| !PLAN_MODEL_KEYS.contains(&k.as_str()));
    model.insert("provider".into(), plan.provider.clone().into());
    if let Some(m) = &plan.model {
        model.insert("default".into(), m.clone().into());
    }
    if let Some(u) = &plan.base_url {
        model.insert("base_url".into(), u.clone().into());
    }
    if let Some(k) = &plan.config_api_key {
        model.insert("api_key".into(), k.clone().into());
    }
    root.insert("model".into(), Value::Object(model));
    if !plan.toolsets.is_empty() {
        root.insert("toolsets".into(), json!(plan.toolsets));
    }
    if let Some((name, entry)) = &plan.mcp {
        let servers = root.entry("mcp_servers").or_insert_with(|| json!({}));
        if servers.is_null() {
            *servers = json!({});
        }
        let Some(servers) = servers.as_object_mut() else {
            bail!("`mcp_servers` in {} is not a mapping", path.display());
        };
        servers.insert(name.clone(), entry.clone());
    }
    let in_place = old
        .as_deref()
        .and_then(|text| edit_in_place(text, &old_model_keys, plan).ok())
        .filter(|edited| yaml_serde::from_str::<Value>(edited).ok().as_ref() == Some(&doc));
    let text = match in_place {
        Some(edited) => edited,
        None => {
            if let Some(old) = &old {
                let backup = path.with_extension("yaml.bak");
                hermes_protocol::private_fs::write(&backup, old)
                    .with_context(|| format!("writing {}", backup.display()))?;
            }
            yaml_serde::to_string(&doc).context("serializing config.yaml")?
        }
    };
    // Always owner-only: config.yaml may hold keys, MCP headers and tokens.
    write_private(path, &text)
}

/// `plan` applied to `text` line by line (see [`crate::config_edit::keys`] and
/// [`crate::config_edit`]); `old_model_keys` are the keys of the old `model:` table, of which
/// the [`PLAN_MODEL_KEYS`] the plan does not set are removed.
fn edit_in_place(
    text: &str,
    old_model_keys: &[String],
    plan: &Plan,
) -> Result<String, crate::config_edit::EditError> {
    let mut set: Vec<(&str, &str)> = vec![("provider", &plan.provider)];
    for (key, value) in [
        ("default", &plan.model),
        ("base_url", &plan.base_url),
        ("api_key", &plan.config_api_key),
    ] {
        if let Some(v) = value {
            set.push((key, v));
        }
    }
    let remove: Vec<&str> = old_model_keys
        .iter()
        .map(String::as_str)
        .filter(|k| PLAN_MODEL_KEYS.contains(k) && !set.iter().any(|(s, _)| s == k))
        .collect();
    let mut out = crate::config_edit::keys::edit_section(text, "model", &set, &remove)?;
    if !plan.toolsets.is_empty() {
        out = crate::config_edit::keys::set_list(&out, "toolsets", &plan.toolsets)?;
    }
    if let Some((name, entry)) = &plan.mcp {
        out = crate::config_edit::set_server(&out, name, entry)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn env_key_replaces_its_line_keeps_the_others_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join(".env");
        std::fs::write(&env, "# keys\nexport OPENAI_API_KEY=old\nOTHER=1\n").unwrap();
        set_env_var(&env, "OPENAI_API_KEY", "sk-new").unwrap();
        set_env_var(&env, "XAI_API_KEY", "xai-1").unwrap();
        let text = std::fs::read_to_string(&env).unwrap();
        assert_eq!(
            text,
            "# keys\nOPENAI_API_KEY=sk-new\nOTHER=1\nXAI_API_KEY=xai-1\n"
        );
        #[cfg(unix)]
        assert_eq!(mode(&env), 0o600);
        assert!(set_env_var(&env, "A", "x\ny").is_err());
        // Values python-dotenv would cut or change are quoted so they read back unchanged.
        for tricky in [
            "a #b",
            "sp ace",
            "q\"uote",
            "back\\slash",
            "'single'",
            "tab\tx",
        ] {
            set_env_var(&env, "TRICKY", tricky).unwrap();
            let text = std::fs::read_to_string(&env).unwrap();
            let parsed = hermes_protocol::dotenv::parse_dotenv(&text, &|_| None);
            assert!(parsed.warnings.is_empty(), "{tricky}: {text}");
            assert_eq!(parsed.to_map()["TRICKY"], tricky, "{text}");
        }
    }

    #[test]
    fn config_keeps_comments_and_other_settings_or_backs_up_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            "# mine\nmodel: old-model\nagent:\n  max_turns: 7\nmcp_servers:\n  a:\n    url: http://a\n",
        )
        .unwrap();
        let plan = Plan {
            provider: "openrouter".into(),
            model: Some("x/y".into()),
            toolsets: vec!["hermes-cli".into()],
            mcp: Some(("fs".into(), mcp_entry("npx -y \"server fs\" /tmp").unwrap())),
            ..Plan::default()
        };
        apply_config(&path, &plan).unwrap();
        let loaded = hermes_protocol::config::Config::load(&path).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let model = loaded.config.model.to_config();
        assert_eq!(model.provider.as_deref(), Some("openrouter"));
        assert_eq!(model.default.as_deref(), Some("x/y"));
        assert_eq!(loaded.config.agent.max_turns, 7);
        assert_eq!(loaded.config.toolsets, vec!["hermes-cli".to_string()]);
        let servers = serde_json::to_value(loaded.config.mcp_servers.unwrap()).unwrap();
        assert_eq!(servers["a"]["url"], "http://a");
        assert_eq!(servers["fs"]["command"], "npx");
        assert_eq!(servers["fs"]["args"], json!(["-y", "server fs", "/tmp"]));
        // Edited line by line: the comment stays and no backup is needed.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nmodel:\n"), "{text}");
        assert!(!dir.path().join("config.yaml.bak").exists());

        // A layout the line editor does not change (a flow mapping of servers): the file is
        // rewritten from its settings, the old one saved first.
        std::fs::write(
            &path,
            "# mine\nmodel: old-model\nmcp_servers: {a: {url: http://a}}\n",
        )
        .unwrap();
        apply_config(&path, &plan).unwrap();
        let loaded = hermes_protocol::config::Config::load(&path).unwrap();
        assert_eq!(loaded.config.toolsets, vec!["hermes-cli".to_string()]);
        let servers = serde_json::to_value(loaded.config.mcp_servers.unwrap()).unwrap();
        assert_eq!(servers["a"]["url"], "http://a");
        assert_eq!(servers["fs"]["command"], "npx");
        let backup = std::fs::read_to_string(dir.path().join("config.yaml.bak")).unwrap();
        assert!(backup.starts_with("# mine"));
    }

    #[test]
    fn a_broken_config_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "model: [unclosed\n").unwrap();
        let err = apply_config(&path, &Plan::default()).unwrap_err();
        assert!(format!("{err:#}").contains("not valid YAML"), "{err:#}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "model: [unclosed\n"
        );
    }

    #[test]
    fn mcp_targets() {
        assert_eq!(
            mcp_entry(" https://x/mcp ").unwrap(),
            json!({"url": "https://x/mcp"})
        );
        assert!(mcp_entry("").is_err());
        assert!(mcp_entry("npx 'unclosed").is_err());
    }
}
