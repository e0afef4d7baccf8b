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
            print!("{}", redacted(&app.config).to_yaml());
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

/// A copy of `config` whose API keys are masked (`sk-pro...7890`), for display.
fn redacted(config: &Config) -> Config {
    let mut shown = config.clone();
    let mask = |key: &mut Option<String>| {
        if let Some(k) = key.as_mut() {
            *k = hermes_llm::mask_secret(k);
        }
    };
    let mask_all = |keys: &mut Vec<String>| {
        for k in keys.iter_mut() {
            *k = hermes_llm::mask_secret(k);
        }
    };
    if let hermes_protocol::config::ModelSetting::Table(model) = &mut shown.model {
        mask(&mut model.api_key);
        mask_all(&mut model.api_keys);
    }
    for fallback in &mut shown.fallback_providers {
        mask(&mut fallback.api_key);
        mask_all(&mut fallback.api_keys);
    }
    shown
}
