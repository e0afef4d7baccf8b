//! `hermes config {show,get,set,unset,edit,path,env-path,check}` (names and behaviour as in
//! Python Hermes 0.19.0): `set`/`unset` change one dotted key of `config.yaml` and keep every
//! comment and line around it (`crate::config_edit::path`); a key written in capitals
//! (`OPENROUTER_API_KEY`) is a `.env` variable instead. Values are read as YAML (`50`,
//! `true`, `[a, b]`), except where the setting takes text. A key hermes does not know is
//! saved anyway, with a warning naming the nearest known key.

use anyhow::{Context, Result};
use clap::Subcommand;
use hermes_protocol::config::Config;

use crate::assembly::app::App;

/// `hermes config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// The effective configuration as YAML.
    Show,
    /// One setting's effective value (`model.default`, `agent.max_turns`, `OPENROUTER_API_KEY`).
    Get {
        /// Dotted key, or a .env variable in capitals.
        key: String,
    },
    /// Set one setting in config.yaml (comments kept), or a .env variable (`NAME value`).
    Set {
        /// Dotted key (`agent.max_turns`), or a .env variable in capitals.
        key: String,
        /// The value: YAML (`50`, `true`, `[file, web]`) or text.
        value: String,
        /// Do not warn about a key hermes does not know.
        #[arg(long)]
        force: bool,
    },
    /// Remove one setting from config.yaml (comments kept), or a .env variable.
    Unset {
        /// Dotted key, or a .env variable in capitals.
        key: String,
    },
    /// Open config.yaml in $VISUAL/$EDITOR, then check it.
    Edit,
    /// The path of config.yaml.
    Path,
    /// The path of .env.
    EnvPath,
    /// Validate config.yaml; non-zero exit when broken.
    Check,
    /// A Python Hermes `config` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a config subcommand; returns the process exit code.
pub fn run(profile: Option<&str>, action: Option<&ConfigCmd>) -> Result<i32> {
    match action.unwrap_or(&ConfigCmd::Show) {
        ConfigCmd::Get { key } => get(profile, key),
        ConfigCmd::Set { key, value, force } => set(profile, key, value, *force),
        ConfigCmd::Unset { key } => unset(profile, key),
        ConfigCmd::Edit => edit(profile),
        ConfigCmd::EnvPath => {
            let home = hermes_protocol::HermesHome::resolve(profile)
                .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))?;
            outln!("{}", home.env_file().display());
            Ok(0)
        }
        ConfigCmd::Other(words) => Ok(crate::commands::redirect::answer::<ConfigCmd>(
            &["config"],
            words,
        )),
        ConfigCmd::Path => {
            let app = App::load(profile)?;
            outln!("{}", app.home.config_file().display());
            Ok(0)
        }
        ConfigCmd::Show => {
            let app = App::load(profile)?;
            app.warn_config();
            outln!("{}", redacted_yaml(&app.config).trim_end());
            Ok(0)
        }
        ConfigCmd::Check => {
            let home = hermes_protocol::HermesHome::resolve(profile)
                .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))?;
            let path = home.config_file();
            if !path.exists() {
                outln!("{}: not present (defaults apply)", path.display());
                return Ok(0);
            }
            match Config::load(&path) {
                Ok(loaded) => {
                    for w in &loaded.warnings {
                        outln!("warning: {w}{}", crate::assembly::app::near_miss_hint(w));
                    }
                    for line in loaded.ignored_python.lines() {
                        outln!("not used by hermes: {line}");
                    }
                    if let Err(w) = loaded.config.compression.threshold_ratio() {
                        outln!("warning: {w}");
                    }
                    if let Err(e) = loaded.config.web.validate() {
                        errln!("error: {}: {e}", path.display());
                        return Ok(1);
                    }
                    outln!("{}: ok", path.display());
                    Ok(0)
                }
                Err(e) => {
                    errln!("error: {e}");
                    Ok(1)
                }
            }
        }
    }
}

/// `config` as YAML with every secret field masked (`sk-pro...7890`, or `***` when short):
/// every field whose name looks like a key, token, secret or password (`model.api_key`,
/// `api_keys`, `delegation.api_key`, platform tokens) and every MCP `headers`/`env` value
/// ([`hermes_protocol::secrets::mask_secret_fields`], the rule the redactor uses).
pub(crate) fn redacted_yaml(config: &Config) -> String {
    match yaml_serde::to_value(config) {
        Ok(mut tree) => {
            hermes_protocol::secrets::mask_secret_fields(&mut tree, &|v| {
                hermes_llm::mask_secret(v)
            });
            drop_nulls(&mut tree);
            yaml_serde::to_string(&tree).unwrap_or_default()
        }
        // Never print the unmasked tree.
        Err(e) => format!("# config could not be shown: {e}\n"),
    }
}

/// Removes the keys whose value is unset (`null`), at every depth: `config show` lists what
/// is set and the defaults that have a value, not 55 lines of `null` (the user pass of
/// issue 20).
fn drop_nulls(value: &mut yaml_serde::Value) {
    match value {
        yaml_serde::Value::Mapping(map) => {
            map.retain(|_, v| !v.is_null());
            for (_, v) in map.iter_mut() {
                drop_nulls(v);
            }
        }
        yaml_serde::Value::Sequence(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Whether `key` names a `.env` variable (`OPENROUTER_API_KEY`) rather than a config key.
fn is_env_key(key: &str) -> bool {
    key.chars().any(|c| c.is_ascii_uppercase())
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The dotted key split into its parts; an empty part is an error.
fn parts(key: &str) -> Result<Vec<&str>> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        anyhow::bail!("`{key}` is not a dotted key (like `agent.max_turns`)");
    }
    Ok(parts)
}

/// `value` masked when the key names a secret (`api_key`, `token`, …).
fn shown(key: &str, value: &str) -> String {
    let leaf = key.rsplit('.').next().unwrap_or(key);
    if hermes_protocol::secrets::is_secret_name(leaf) && !value.is_empty() {
        hermes_llm::mask_secret(value)
    } else {
        value.to_string()
    }
}

fn home(profile: Option<&str>) -> Result<hermes_protocol::HermesHome> {
    hermes_protocol::HermesHome::resolve(profile)
        .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))
}

/// `hermes config get KEY`.
fn get(profile: Option<&str>, key: &str) -> Result<i32> {
    let app = App::load(profile)?;
    if is_env_key(key) {
        return Ok(match app.env.get(key) {
            Some(v) => {
                outln!("{}", hermes_llm::mask_secret(v));
                0
            }
            None => {
                errln!(
                    "{key} is not set (neither in the environment nor in {})",
                    app.home.env_file().display()
                );
                1
            }
        });
    }
    let path = parts(key)?;
    let mut tree = yaml_serde::to_value(&app.config).context("reading the settings")?;
    hermes_protocol::secrets::mask_secret_fields(&mut tree, &|v| hermes_llm::mask_secret(v));
    let tree: serde_json::Value = serde_json::to_value(&tree).context("reading the settings")?;
    match crate::config_edit::path::get_path(&tree, &path) {
        None | Some(serde_json::Value::Null) => {
            errln!("{key} is not set");
            Ok(1)
        }
        Some(serde_json::Value::String(s)) => {
            outln!("{s}");
            Ok(0)
        }
        Some(v @ (serde_json::Value::Bool(_) | serde_json::Value::Number(_))) => {
            outln!("{v}");
            Ok(0)
        }
        Some(v) => {
            print!("{}", yaml_serde::to_string(v).unwrap_or_default());
            Ok(0)
        }
    }
}

/// The value to write for `raw`: YAML when the config accepts it there, else the text.
/// Returns the value and the new file, or the reason neither fits.
fn coerce(
    text: &str,
    path: &[&str],
    raw: &str,
    file: &std::path::Path,
) -> Result<(serde_json::Value, String, Vec<String>)> {
    let as_yaml: Option<serde_json::Value> = yaml_serde::from_str(raw).ok();
    let mut candidates = Vec::new();
    if let Some(v) = as_yaml.filter(|v| !v.is_null() || raw.trim() == "null") {
        candidates.push(v);
    }
    candidates.push(serde_json::Value::String(raw.to_string()));
    let mut last_error = None;
    for value in candidates {
        let new = match crate::config_edit::path::set_path(text, path, &value) {
            Ok(t) => t,
            Err(crate::config_edit::EditError::Layout) => anyhow::bail!(
                "cannot change `{}` line by line in {} (it is written in a form this editor does not rewrite); `hermes config edit` opens the file",
                path.join("."),
                file.display()
            ),
            Err(e) => anyhow::bail!("{}: {e}", file.display()),
        };
        match Config::parse(&new, file) {
            Ok(loaded) => return Ok((value, new, loaded.warnings)),
            Err(e) => last_error = Some(e),
        }
    }
    match last_error {
        Some(e) => anyhow::bail!("`{raw}` does not fit `{}`: {e}", path.join(".")),
        None => anyhow::bail!("`{raw}` does not fit `{}`", path.join(".")),
    }
}

/// `hermes config set KEY VALUE`.
fn set(profile: Option<&str>, key: &str, value: &str, force: bool) -> Result<i32> {
    let home = home(profile)?;
    if is_env_key(key) {
        let file = home.env_file();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let new = dotenv_set(&text, key, Some(value));
        hermes_protocol::private_fs::create_dir_all(home.root())?;
        hermes_protocol::private_fs::write_atomic(&file, new)
            .with_context(|| format!("writing {}", file.display()))?;
        outln!("set {key} in {}", file.display());
        return Ok(0);
    }
    let path = parts(key)?;
    let file = home.config_file();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    // A broken file is not made worse.
    let before = Config::parse(&text, &file)?.warnings;
    let (written, new, warnings) = coerce(&text, &path, value, &file)?;
    hermes_protocol::private_fs::create_dir_all(home.root())?;
    hermes_protocol::private_fs::write_atomic(&file, &new)
        .with_context(|| format!("writing {}", file.display()))?;
    let shown_value = match &written {
        serde_json::Value::String(s) => shown(key, s),
        other => other.to_string(),
    };
    outln!("set {key} = {shown_value} in {}", file.display());
    // A Python Hermes setting hermes keeps but does not apply is written (Python reads it)
    // with one line saying so, rather than as if it changed what hermes does.
    if let Some((_, hermes_protocol::config::python_keys::KeyStatus::Ignored(instead))) =
        hermes_protocol::config::python_keys::classify_python_key(key)
    {
        errln!("note: hermes does not use {key} (Python Hermes does): {instead}");
    }
    if !force {
        for w in warnings.iter().filter(|w| !before.contains(w)) {
            errln!("warning: {w}{}", crate::assembly::app::near_miss_hint(w));
        }
    }
    Ok(0)
}

/// `hermes config unset KEY`.
fn unset(profile: Option<&str>, key: &str) -> Result<i32> {
    let home = home(profile)?;
    if is_env_key(key) {
        let file = home.env_file();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let new = dotenv_set(&text, key, None);
        if new == text {
            errln!("{key} is not set in {}", file.display());
            return Ok(1);
        }
        hermes_protocol::private_fs::write_atomic(&file, new)
            .with_context(|| format!("writing {}", file.display()))?;
        outln!("removed {key} from {}", file.display());
        return Ok(0);
    }
    let path = parts(key)?;
    let file = home.config_file();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    match crate::config_edit::path::unset_path(&text, &path) {
        Ok(Some(new)) => {
            hermes_protocol::private_fs::write_atomic(&file, new)
                .with_context(|| format!("writing {}", file.display()))?;
            outln!("removed {key} from {}", file.display());
            Ok(0)
        }
        Ok(None) => {
            errln!("{key} is not set in {}", file.display());
            Ok(1)
        }
        Err(crate::config_edit::EditError::Layout) => anyhow::bail!(
            "cannot remove `{key}` line by line in {}; `hermes config edit` opens the file",
            file.display()
        ),
        Err(e) => anyhow::bail!("{}: {e}", file.display()),
    }
}

/// `hermes config edit`: the editor on config.yaml, then the same check as `config check`.
fn edit(profile: Option<&str>) -> Result<i32> {
    let home = home(profile)?;
    let file = home.config_file();
    if !file.exists() {
        hermes_protocol::private_fs::create_dir_all(home.root())?;
        hermes_protocol::private_fs::write(&file, "# hermes settings (see the README)\n")
            .with_context(|| format!("creating {}", file.display()))?;
    }
    crate::views::editor::open_editor(&file)?;
    run(profile, Some(&ConfigCmd::Check))
}

/// `.env` text with `key` set to `value` (replacing its line, or appended), or its lines
/// removed when `value` is `None`. Other lines, comments and order stay.
pub(crate) fn dotenv_set(text: &str, key: &str, value: Option<&str>) -> String {
    let is_key = |line: &str| {
        let t = line.trim_start();
        let t = t.strip_prefix("export ").unwrap_or(t).trim_start();
        t.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let quoted = value.map(|v| {
        if v.chars()
            .any(|c| c.is_whitespace() || "#\"'\\$".contains(c))
        {
            format!("'{}'", v.replace('\'', "'\\''"))
        } else {
            v.to_string()
        }
    });
    let mut out = Vec::new();
    let mut done = false;
    for line in text.lines() {
        if is_key(line) {
            if let (Some(q), false) = (&quoted, done) {
                out.push(format!("{key}={q}"));
                done = true;
            }
            continue;
        }
        out.push(line.to_string());
    }
    if let (Some(q), false) = (&quoted, done) {
        out.push(format!("{key}={q}"));
    }
    let mut joined = out.join("\n");
    if !joined.is_empty() {
        joined.push('\n');
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `config show` lists set values only: no `null` line (55 of 106 lines were).
    #[test]
    fn shown_config_has_no_null_lines() {
        let shown = redacted_yaml(&Config::default());
        assert!(!shown.contains("null"), "{shown}");
        assert!(
            shown.contains("max_turns"),
            "defaults with a value stay: {shown}"
        );
    }

    #[test]
    fn env_lines_are_replaced_added_and_removed_in_place() {
        let text = "# keys\nexport OPENROUTER_API_KEY=old\nOTHER=1\n";
        assert_eq!(
            dotenv_set(text, "OPENROUTER_API_KEY", Some("sk-new")),
            "# keys\nOPENROUTER_API_KEY=sk-new\nOTHER=1\n"
        );
        assert_eq!(
            dotenv_set(text, "NEW_KEY", Some("a b")),
            "# keys\nexport OPENROUTER_API_KEY=old\nOTHER=1\nNEW_KEY='a b'\n"
        );
        assert_eq!(
            dotenv_set(text, "OTHER", None),
            "# keys\nexport OPENROUTER_API_KEY=old\n"
        );
        assert!(is_env_key("OPENROUTER_API_KEY"));
        assert!(!is_env_key("agent.max_turns"));
        assert!(!is_env_key("model"));
    }
}
