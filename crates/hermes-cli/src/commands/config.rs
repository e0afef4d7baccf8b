//! `hermes config {show,path,check}`.

use anyhow::Result;
use clap::Subcommand;
use hermes_protocol::config::Config;

use crate::assembly::app::App;

/// `hermes config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// The effective configuration as YAML.
    Show,
    /// The path of config.yaml.
    Path,
    /// Validate config.yaml; non-zero exit when broken.
    Check,
}

/// Runs a config subcommand; returns the process exit code.
pub fn run(profile: Option<&str>, action: Option<&ConfigCmd>) -> Result<i32> {
    match action.unwrap_or(&ConfigCmd::Show) {
        ConfigCmd::Path => {
            let app = App::load(profile)?;
            outln!("{}", app.home.config_file().display());
            Ok(0)
        }
        ConfigCmd::Show => {
            let app = App::load(profile)?;
            app.warn_config();
            print!("{}", redacted_yaml(&app.config));
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
                        outln!("warning: {w}");
                    }
                    for line in loaded.ignored_python.lines() {
                        outln!("not used by hermes: {line}");
                    }
                    if let Err(w) = loaded.config.compression.threshold_ratio() {
                        outln!("warning: {w}");
                    }
                    if let Err(e) = loaded.config.web.validate() {
                        eprintln!("error: {}: {e}", path.display());
                        return Ok(1);
                    }
                    outln!("{}: ok", path.display());
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("error: {e}");
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
            yaml_serde::to_string(&tree).unwrap_or_default()
        }
        // Never print the unmasked tree.
        Err(e) => format!("# config could not be shown: {e}\n"),
    }
}
