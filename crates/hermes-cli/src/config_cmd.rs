//! `hermes config {show,path,check}`.

use anyhow::Result;
use hermes_protocol::config::Config;

use crate::app::App;
use crate::args::ConfigCmd;

/// Runs a config subcommand; returns the process exit code.
pub fn run(profile: Option<&str>, action: Option<&ConfigCmd>) -> Result<i32> {
    match action.unwrap_or(&ConfigCmd::Show) {
        ConfigCmd::Path => {
            let app = App::load(profile)?;
            println!("{}", app.home.config_file().display());
            Ok(0)
        }
        ConfigCmd::Show => {
            let app = App::load(profile)?;
            app.warn_config();
            print!("{}", app.config.to_yaml());
            Ok(0)
        }
        ConfigCmd::Check => {
            let home = hermes_protocol::HermesHome::resolve(profile)
                .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))?;
            let path = home.config_file();
            if !path.exists() {
                println!("{}: not present (defaults apply)", path.display());
                return Ok(0);
            }
            match Config::load(&path) {
                Ok(loaded) => {
                    for w in &loaded.warnings {
                        println!("warning: {w}");
                    }
                    println!("{}: ok", path.display());
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
