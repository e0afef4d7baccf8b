//! `hermes setup` (FEATURES §1, issue 9 item 1): the first-run wizard. It asks for a
//! provider (the embedded local model is the offline choice), the provider's API key
//! (written to `HERMES_HOME/.env` with mode 0600), a model (from the provider's
//! `GET /models` when it answers), the default toolsets and an optional first MCP server,
//! then writes `config.yaml`. `--non-interactive` takes every answer from flags instead.
//! `hermes` started with nothing configured offers the wizard ([`offer_if_unconfigured`]).

mod ask;
mod providers;
pub(crate) mod write;

use std::io::IsTerminal;

use anyhow::{Context, Result, bail};
use clap::Args;
use hermes_llm::ResolveError;
use hermes_llm::runtime::{CanonicalProvider, canonical_provider};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use ask::Prompter;
use write::{Plan, mcp_entry};

/// The URL offered for a custom server (a llama.cpp server's default).
const CUSTOM_DEFAULT_URL: &str = "http://127.0.0.1:8080/v1";

/// How many listed models the wizard shows.
const MODELS_SHOWN: usize = 15;

/// Flags of `hermes setup`.
#[derive(Debug, Clone, Args, Default)]
pub struct SetupArgs {
    /// Provider, model and base URL to configure.
    #[command(flatten)]
    pub model: crate::assembly::args::ModelFlags,
    /// Toolsets to enable, comma-separated (default: hermes-cli).
    #[arg(short = 't', long, value_delimiter = ',')]
    pub toolsets: Option<Vec<String>>,
    /// Ask nothing: take the answers from flags (`--provider` is then required).
    #[arg(long)]
    pub non_interactive: bool,
    /// API key of the chosen provider (hosted providers: written to HERMES_HOME/.env;
    /// custom servers: `model.api_key`). Also read from HERMES_SETUP_API_KEY.
    #[arg(long, env = "HERMES_SETUP_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Name of an MCP server to add (with --mcp).
    #[arg(long, requires = "mcp")]
    pub mcp_name: Option<String>,
    /// The MCP server's URL (`https://…`) or command line (`npx -y some-server`).
    #[arg(long, requires = "mcp_name")]
    pub mcp: Option<String>,
    /// Download the default local model (98 MB) when `local` is chosen and it is missing.
    #[arg(long)]
    pub pull: bool,
}

impl SetupArgs {
    /// The conversation flags `chat` with this command's provider, model, base URL and
    /// toolsets on top (they may also be given before `setup`).
    pub fn over(&self, chat: &ChatArgs) -> ChatArgs {
        let mut out = self.model.over(chat);
        if self.toolsets.is_some() {
            out.toolsets = self.toolsets.clone();
        }
        out
    }
}

/// Runs `hermes setup`; returns the exit code.
pub async fn run(profile: Option<&str>, chat: &ChatArgs, args: &SetupArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let (plan, pull) = if args.non_interactive {
        (plan_from_flags(&app, chat, args)?, args.pull)
    } else {
        let stdin = std::io::stdin();
        let tty = stdin.is_terminal();
        let mut p = Prompter::new(Box::new(stdin.lock()), Box::new(std::io::stdout()), tty);
        interview(&app, chat, args, &mut p).await?
    };
    apply(&app, &plan, pull, false).await?;
    Ok(0)
}

/// Before the REPL starts: when no provider is configured at all, offers the wizard on the
/// terminal and returns the reloaded settings; `None` when the user declines (the reason and
/// how to configure are printed). Settings that resolve are returned unchanged.
pub async fn offer_if_unconfigured(
    app: App,
    profile: Option<&str>,
    chat: &ChatArgs,
) -> Result<Option<App>> {
    match crate::assembly::runtime::resolve_runtime(&app, chat) {
        Err(e) if is_nothing_configured(&e) => {}
        _ => return Ok(Some(app)),
    }
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    let mut p = Prompter::new(Box::new(stdin.lock()), Box::new(std::io::stdout()), tty);
    p.say("No model provider is configured yet.");
    if !p.confirm("Run the setup wizard now?", true)? {
        // One sentence per line (issue 20 item 10: the two used to run together).
        errln!(
            "Setup skipped. Run `hermes setup` when you are ready, or configure a provider yourself:"
        );
        errln!("{}", configure_options());
        return Ok(None);
    }
    let (plan, pull) = interview(&app, chat, &SetupArgs::default(), &mut p).await?;
    drop(p);
    apply(&app, &plan, pull, true).await?;
    App::load(profile).map(Some)
}

/// True when the settings load but name no provider at all (no flag, config, key or local
/// model): the case where setup is the next step.
pub fn nothing_configured(profile: Option<&str>, chat: &ChatArgs) -> bool {
    App::load(profile).is_ok_and(|app| {
        crate::assembly::runtime::resolve_runtime(&app, chat)
            .is_err_and(|e| is_nothing_configured(&e))
    })
}

fn is_nothing_configured(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<ResolveError>(),
        Some(ResolveError::NothingConfigured)
    )
}

/// The ways to configure a provider, from the nothing-configured message (its lines after
/// the first).
fn configure_options() -> String {
    let text = ResolveError::NothingConfigured.to_string();
    text.split_once('\n')
        .map(|(_, rest)| rest.to_string())
        .unwrap_or(text)
}

/// Turns the nothing-configured error into one that starts with `hermes setup` and lists
/// the other ways; other errors pass through.
pub fn with_setup_hint(e: anyhow::Error) -> anyhow::Error {
    if is_nothing_configured(&e) {
        anyhow::anyhow!(
            "no model provider is configured. Run `hermes setup` to configure hermes in a few questions, or configure one of:\n{}",
            configure_options()
        )
    } else {
        e
    }
}

/// The plan from flags alone (`--non-interactive`).
fn plan_from_flags(app: &App, chat: &ChatArgs, args: &SetupArgs) -> Result<Plan> {
    let Some(provider) = chat.provider.as_deref() else {
        bail!(
            "--non-interactive needs --provider (local, {}, or custom with --base-url)",
            providers::HOSTED.join(", ")
        );
    };
    let mut plan = Plan {
        model: chat.model.clone(),
        toolsets: checked_toolsets(app, chat.toolsets.clone().unwrap_or_default())?,
        ..Plan::default()
    };
    match canonical_provider(provider) {
        None => bail!("{}", ResolveError::UnknownProvider(provider.to_string())),
        Some(CanonicalProvider::Local) => plan.provider = "local".to_string(),
        Some(CanonicalProvider::Custom { default_base_url }) => {
            plan.provider = "custom".to_string();
            plan.base_url = Some(
                chat.base_url
                    .clone()
                    .or(default_base_url.map(str::to_string))
                    .context(
                        "provider `custom` needs --base-url (e.g. http://127.0.0.1:8080/v1)",
                    )?,
            );
            plan.config_api_key = args.api_key.clone().filter(|k| !k.trim().is_empty());
        }
        Some(CanonicalProvider::Hosted(_)) => {
            let facts = providers::hosted(provider)?;
            plan.provider = facts.id.clone();
            match args
                .api_key
                .as_deref()
                .map(str::trim)
                .filter(|k| !k.is_empty())
            {
                Some(key) => plan.env_key = Some((facts.env_var.clone(), key.to_string())),
                None if app
                    .env
                    .get(&facts.env_var)
                    .is_some_and(|k| !k.trim().is_empty()) => {}
                None => bail!(
                    "provider `{}` needs an API key: pass --api-key (or HERMES_SETUP_API_KEY), \
                     or set {} first",
                    facts.id,
                    facts.env_var
                ),
            }
        }
    }
    if let (Some(name), Some(target)) = (&args.mcp_name, &args.mcp) {
        plan.mcp = Some((name.clone(), mcp_entry(target)?));
    }
    Ok(plan)
}

/// Toolset names checked against the registry; an unknown one is an error naming the known.
fn checked_toolsets(app: &App, toolsets: Vec<String>) -> Result<Vec<String>> {
    let known = known_toolsets(app);
    for t in &toolsets {
        if !known.contains(t) {
            bail!(
                "unknown toolset `{t}`; known toolsets: {}",
                known.join(", ")
            );
        }
    }
    Ok(toolsets)
}

/// Every toolset a session can have; with the store, so that `session_search` is among
/// them (issue 20 item 10).
fn known_toolsets(app: &App) -> Vec<String> {
    crate::assembly::tools::build_registry(app, &ChatArgs::default(), app.open_store().ok())
        .map(|r| r.toolset_names())
        .unwrap_or_else(|_| vec![hermes_tools::DEFAULT_TOOLSET.to_string()])
}

/// The interactive wizard; returns the plan and whether to download the local model.
async fn interview(
    app: &App,
    chat: &ChatArgs,
    args: &SetupArgs,
    p: &mut Prompter<'_>,
) -> Result<(Plan, bool)> {
    p.say(&format!(
        "hermes setup — settings go to {}, API keys to {}",
        app.home.config_file().display(),
        app.home.env_file().display()
    ));
    let (mut plan, pull) = choose_model(app, chat, args, p).await?;
    let known = known_toolsets(app);
    let current_toolsets = if app.config.toolsets.is_empty() {
        hermes_tools::DEFAULT_TOOLSET.to_string()
    } else {
        app.config.toolsets.join(",")
    };
    p.say(&format!("Toolsets: {}", known.join(", ")));
    plan.toolsets = loop {
        let answer = p.text(
            "Toolsets to enable, comma-separated",
            Some(&current_toolsets),
        )?;
        let picked: Vec<String> = answer
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        match picked.iter().find(|t| !known.contains(t)) {
            Some(bad) => p.say(&format!("  unknown toolset `{bad}`")),
            None if picked.is_empty() => p.say("  name at least one toolset"),
            None => break picked,
        }
    };

    if p.confirm("Add an MCP server now?", false)? {
        let name = p.text("Server name", None)?;
        loop {
            let target = p.text("Its URL (https://…) or command line", None)?;
            match mcp_entry(&target) {
                Ok(entry) => {
                    plan.mcp = Some((name, entry));
                    break;
                }
                Err(e) => p.say(&format!("  {e}")),
            }
        }
    }
    Ok((plan, pull))
}

/// `hermes model` on a terminal (issue 20; Python Hermes' picker): the provider, its key
/// when it needs one, then a model from the provider's `/models` list (or typed); written
/// to `config.yaml` (and the key to `.env`) as setup writes them. Returns the exit code.
pub async fn model_picker(profile: Option<&str>, chat: &ChatArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    let mut p = Prompter::new(Box::new(stdin.lock()), Box::new(std::io::stdout()), tty);
    let current = app.config.model.to_config();
    p.say(&format!(
        "Model in use: {} on {}. Pick another (Ctrl-C leaves it as it is):",
        current.default.as_deref().unwrap_or("(none)"),
        current.provider.as_deref().unwrap_or("(no provider)")
    ));
    let (plan, pull) = choose_model(&app, chat, &SetupArgs::default(), &mut p).await?;
    if let Some((var, key)) = &plan.env_key {
        write::set_env_var(&app.home.env_file(), var, key)?;
        println!(
            "saved {var} in {} (mode 600)",
            app.home.env_file().display()
        );
    }
    write::apply_config(&app.home.config_file(), &plan)?;
    println!(
        "model: {} on {} (in {})",
        plan.model.as_deref().unwrap_or("the provider's default"),
        plan.provider,
        app.home.config_file().display()
    );
    if plan.provider == "local" && crate::assembly::runtime::local_model_path(&app).is_none() {
        if pull {
            let path = crate::assembly::runtime::pull_model(&app, None).await?;
            outln!("{}", path.display());
        } else {
            println!("the local model is not installed yet: run `hermes model pull` (98 MB)");
        }
    }
    Ok(0)
}

/// The provider, key and model questions shared by the wizard and `hermes model`.
async fn choose_model(
    app: &App,
    chat: &ChatArgs,
    args: &SetupArgs,
    p: &mut Prompter<'_>,
) -> Result<(Plan, bool)> {
    let current = app.config.model.to_config();
    if let Some(provider) = &current.provider {
        p.say(&format!(
            "config.yaml already chooses provider {provider}{}; your answers replace that.",
            current
                .default
                .as_deref()
                .map(|m| format!(" (model {m})"))
                .unwrap_or_default()
        ));
    }
    let has_key = |var: &str| app.env.get(var).is_some_and(|k| !k.trim().is_empty());
    let local_installed = crate::assembly::runtime::local_model_path(app).is_some();
    let mut ids = vec!["local".to_string()];
    let mut labels = vec![format!(
        "local — the embedded model, works offline on this CPU ({})",
        if local_installed {
            "installed"
        } else {
            "98 MB download"
        }
    )];
    let mut default = None;
    for id in providers::HOSTED {
        let facts = providers::hosted(id)?;
        let found = has_key(&facts.env_var);
        if found && default.is_none() {
            default = Some(ids.len());
        }
        labels.push(format!(
            "{id} — key in {}{}",
            facts.env_var,
            if found { " (found)" } else { "" }
        ));
        ids.push(id.to_string());
    }
    ids.push("custom".to_string());
    labels.push(
        "custom — an OpenAI-compatible server you run (llama.cpp, vLLM, Ollama, LM Studio)"
            .to_string(),
    );
    // The provider named by the flag, else the one in use, is offered first (the user pass
    // of issue 20: a key in `.env` for another provider took precedence).
    let configured = app.config.model.to_config().provider;
    if let Some(flag) = chat
        .provider
        .as_deref()
        .or(configured.as_deref())
        .and_then(canonical_provider)
    {
        default = match flag {
            CanonicalProvider::Local => Some(0),
            CanonicalProvider::Hosted(id) => ids.iter().position(|i| i == id),
            CanonicalProvider::Custom { .. } => Some(ids.len() - 1),
        };
    }
    let choice = p.choose("Which model provider?", &labels, default.unwrap_or(0))?;
    let provider = ids[choice].clone();

    let mut plan = Plan {
        provider: provider.clone(),
        ..Plan::default()
    };
    let mut pull = false;
    match provider.as_str() {
        "local" => {
            if !local_installed {
                pull = p.confirm("Download the default local model now (98 MB)?", true)?;
            }
        }
        "custom" => {
            // What a custom server is configured with now is offered first: its URL, key and
            // model (the user pass of issue 20: Enter here pointed hermes at the example
            // URL, or deleted the key).
            let configured = app.config.model.to_config();
            let custom_now = configured
                .provider
                .as_deref()
                .and_then(hermes_llm::model_choice::provider_id)
                .is_none_or(|p| p == "custom");
            let configured_url = configured
                .base_url
                .clone()
                .filter(|u| custom_now && !u.trim().is_empty());
            let url = p.text(
                "Base URL of the server",
                Some(
                    chat.base_url
                        .as_deref()
                        .or(configured_url.as_deref())
                        .unwrap_or(CUSTOM_DEFAULT_URL),
                ),
            )?;
            let current = configured
                .api_key
                .clone()
                .filter(|k| !k.trim().is_empty())
                .filter(|_| custom_now);
            let question = if current.is_some() {
                "API key (Enter keeps the configured one; typing is hidden): "
            } else {
                "API key (leave empty when the server needs none; typing is hidden): "
            };
            let key = p.secret(question)?;
            let key = if key.is_empty() { current } else { Some(key) };
            let model_now = configured
                .default
                .clone()
                .filter(|m| custom_now && !m.trim().is_empty());
            let model = pick_model(
                p,
                &url,
                key.as_deref(),
                model_now.as_deref().unwrap_or("default"),
                true,
            )
            .await?;
            plan.base_url = Some(url);
            plan.config_api_key = key;
            plan.model = Some(model);
        }
        id => {
            let facts = providers::hosted(id)?;
            let key = if has_key(&facts.env_var)
                && p.confirm(
                    &format!("Use the key already set in {}?", facts.env_var),
                    true,
                )? {
                app.env.get(&facts.env_var).cloned()
            } else {
                let key = ask_key(p, &facts.env_var, args.api_key.as_deref())?;
                plan.env_key = Some((facts.env_var.clone(), key.clone()));
                Some(key)
            };
            let model = pick_model(
                p,
                &facts.base_url,
                key.as_deref(),
                &facts.default_model,
                crate::assembly::model_switch::lists_models(facts.api_mode),
            )
            .await?;
            plan.model = Some(model);
        }
    }
    Ok((plan, pull))
}

/// Asks for a key until one is typed (a `--api-key` flag answers it).
fn ask_key(p: &mut Prompter<'_>, env_var: &str, given: Option<&str>) -> Result<String> {
    if let Some(k) = given.map(str::trim).filter(|k| !k.is_empty()) {
        return Ok(k.to_string());
    }
    for _ in 0..3 {
        let key = p.secret(&format!("{env_var} (typing is hidden): "))?;
        if !key.is_empty() {
            return Ok(key);
        }
        p.say("  the provider needs a key; paste it here");
    }
    bail!("no API key given for {env_var}")
}

/// Offers the models the provider lists (when `list` and it answers), else asks for a name.
/// A number picks from the list; anything else is taken as the model name.
async fn pick_model(
    p: &mut Prompter<'_>,
    base_url: &str,
    key: Option<&str>,
    default: &str,
    list: bool,
) -> Result<String> {
    let mut default = default.to_string();
    let mut shown: Vec<String> = Vec::new();
    if list {
        p.say(&format!("Asking {base_url}/models for the model list…"));
        match crate::assembly::model_switch::list_models(
            base_url,
            key,
            crate::assembly::model_switch::MODEL_LIST_WAIT,
        )
        .await
        {
            Ok(models) if !models.is_empty() => {
                if !models.contains(&default) {
                    default = models[0].clone();
                }
                shown.push(default.clone());
                shown.extend(
                    models
                        .into_iter()
                        .filter(|m| *m != default)
                        .take(MODELS_SHOWN - 1),
                );
                for (i, m) in shown.iter().enumerate() {
                    p.say(&format!("  {:>3}) {m}", i + 1));
                }
            }
            Ok(_) => p.say("  the provider listed no models"),
            Err(e) => p.say(&format!(
                "  could not get the list ({}); type a model name",
                hermes_llm::redact_secrets(&e.to_string())
            )),
        }
    }
    let answer = p.text("Model (number or name)", Some(&default))?;
    Ok(match answer.parse::<usize>() {
        Ok(n) if (1..=shown.len()).contains(&n) => shown[n - 1].clone(),
        _ => answer,
    })
}

/// Writes the plan, downloads the local model when asked, and says what was done;
/// `chat_next` when the REPL starts right after (first run).
async fn apply(app: &App, plan: &Plan, pull: bool, chat_next: bool) -> Result<()> {
    if let Some((var, key)) = &plan.env_key {
        write::set_env_var(&app.home.env_file(), var, key)?;
        println!(
            "saved {var} in {} (mode 600)",
            app.home.env_file().display()
        );
    }
    write::apply_config(&app.home.config_file(), plan)?;
    println!(
        "wrote {}: provider {}{}",
        app.home.config_file().display(),
        plan.provider,
        plan.model
            .as_deref()
            .map(|m| format!(", model {m}"))
            .unwrap_or_default()
    );
    if plan.provider == "local" && crate::assembly::runtime::local_model_path(app).is_none() {
        if pull {
            let path = crate::assembly::runtime::pull_model(app, None).await?;
            outln!("{}", path.display());
        } else {
            println!("the local model is not installed yet: run `hermes model pull` (98 MB)");
        }
    }
    if let Some((name, _)) = &plan.mcp {
        println!("added MCP server `{name}`; `hermes mcp test {name}` checks it");
    }
    if chat_next {
        println!("Done. Starting the chat; `hermes doctor` checks the setup later.");
    } else {
        println!("Done. Run `hermes` to start chatting; `hermes doctor` checks the setup.");
    }
    Ok(())
}
