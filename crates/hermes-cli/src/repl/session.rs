//! What the REPL knows about its running session (model, store, home, learning, model
//! switching, Tab completion sources), built from the [`AgentKit`] the session was assembled
//! from.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;
use hermes_store::SessionStore;

use crate::assembly::AgentKit;
use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// What the REPL shows about the running session.
pub struct SessionInfo {
    /// Model name.
    pub model: String,
    /// Provider id.
    pub provider: String,
    /// REPL input history file.
    pub history_file: PathBuf,
    /// The store (for `/usage`, `/sessions`).
    pub store: Arc<SessionStore>,
    /// The hermes home (for `/cron`, and `/prompt`'s file under `cache/editor/`).
    pub home: hermes_protocol::HermesHome,
    /// `config.yaml` `timezone` (for `/cron`).
    pub timezone: Option<String>,
    /// Memory and skills for `/memory`, `/skills`, `/<skill>` and `-s`.
    pub learning: LearningInfo,
    /// `/model`: the runtime in use and how to resolve another.
    pub models: crate::assembly::model_switch::ModelSwitcher,
    /// `config.yaml` `display:` (skin, tool progress, reasoning, status line).
    pub display: hermes_protocol::config::DisplayConfig,
    /// The model's context window in tokens, when known (for the status line).
    pub context_window: Option<u64>,
    /// What Tab completion offers (commands, skills, model names, paths).
    pub completion: crate::repl::complete::Sources,
    /// `config.yaml` as loaded (for `/platforms`, `/config`).
    pub config: hermes_protocol::config::Config,
    /// The environment with `.env` merged (for `/platforms`; never shown).
    env: std::collections::BTreeMap<String, String>,
    /// The profile in use (`-p`).
    pub profile: Option<String>,
    /// Enabled toolsets and the tools the session was given (for `/toolsets`).
    toolsets: Vec<String>,
    tool_names: Vec<String>,
}

impl SessionInfo {
    /// The facts of a session assembled as `kit` from `app` and the flags `args`.
    pub fn new(app: &App, args: &ChatArgs, kit: &AgentKit) -> SessionInfo {
        SessionInfo {
            model: kit.client.model().to_string(),
            provider: kit.client.provider().to_string(),
            history_file: app.home.history_file(),
            store: kit.store.clone(),
            home: app.home.clone(),
            timezone: app.config.timezone.clone(),
            learning: LearningInfo::new(app, args),
            models: crate::assembly::model_switch::ModelSwitcher::new(app, kit.runtime.clone()),
            display: app.config.display.clone(),
            context_window: kit.client.context_window(),
            completion: completion_sources(app, kit),
            config: app.config.clone(),
            env: app.env.clone(),
            profile: app.profile.clone(),
            toolsets: kit.toolsets.clone(),
            tool_names: kit.tools.iter().map(|t| t.spec().name.clone()).collect(),
        }
    }

    /// `/insights [days]`: usage of the sessions of the last `days` days.
    pub fn insights(&self, days: u32) -> String {
        match crate::views::insights::gather(&self.store, days, None) {
            Ok(report) => report.text(),
            Err(e) => format!("could not read the session store: {e:#}"),
        }
    }

    /// `/platforms`: the gateway's platforms and their setup.
    pub fn platforms(&self) -> String {
        match crate::views::platforms::status_text(
            &self.home,
            &self.config,
            &self.env,
            self.profile.as_deref(),
            &self.store,
        ) {
            Ok((text, warnings)) => {
                let mut out: Vec<String> =
                    warnings.iter().map(|w| format!("warning: {w}")).collect();
                out.push(text);
                out.push(
                    "Run it with `hermes gateway run` (or `hermes gateway install` for a service)."
                        .into(),
                );
                out.join("\n")
            }
            Err(e) => format!("gateway settings: {e:#}"),
        }
    }

    /// `/toolsets`: the enabled toolsets and the tools this session has.
    pub fn toolsets_text(&self) -> String {
        format!(
            "Enabled toolsets: {}\nTools of this session ({}): {}\n`hermes tools list` shows every tool and why one is off.",
            self.toolsets.join(", "),
            self.tool_names.len(),
            self.tool_names.join(", ")
        )
    }

    /// `/config`: where the settings are and the main ones in force.
    pub fn config_text(&self) -> String {
        let mut lines = vec![
            format!("config.yaml: {}", self.home.config_file().display()),
            format!(".env:        {}", self.home.env_file().display()),
            format!("model:       {} on {}", self.model, self.provider),
            format!("toolsets:    {}", self.toolsets.join(", ")),
            format!(
                "skin:        {}",
                self.display.skin.as_deref().unwrap_or("default")
            ),
        ];
        lines.push(
            "`hermes config show` prints every setting; `hermes config set KEY VALUE` changes one."
                .into(),
        );
        lines.join("\n")
    }

    /// `/usage`: token totals of a session as stored.
    pub fn usage_now(&self, session_id: &str) -> String {
        crate::views::sessions::usage_text(&self.store, session_id)
    }

    /// `/model [WORDS]`: without words prints the model in use; with words switches the
    /// agent behind `handle` to the resolved model for the following turns, or prints why not.
    pub async fn model_command(&mut self, words: &str, handle: &hermes_agent::AgentHandle) {
        if words.trim().is_empty() {
            println!("{}", self.models.describe());
            return;
        }
        match self.models.switch(words).await {
            Ok((client, note)) => {
                if let Some(note) = note {
                    println!("{note}");
                }
                self.model = client.model().to_string();
                self.provider = client.provider().to_string();
                self.context_window = client.context_window();
                handle.set_client(client);
                println!(
                    "switched to {} for the next turns of this session",
                    self.models.describe()
                );
            }
            Err(e) => errln!("/model: {e:#}"),
        }
    }

    /// `/cron`: the scheduled jobs.
    pub fn cron_jobs(&self) -> String {
        crate::views::cron::jobs_text(&self.home, self.timezone.as_deref())
    }

    /// `/sessions`: the ten newest sessions.
    pub fn recent_sessions(&self) -> String {
        crate::views::sessions::recent_sessions_text(&self.store, 10, None)
            .unwrap_or_else(|e| format!("could not list sessions: {e}"))
    }
}

/// Tab completion sources of a REPL session: the slash commands, the skills folder, the
/// model names this session knows, and the provider to ask for more when it lists models on
/// the OpenAI-compatible `/models` route.
fn completion_sources(app: &App, kit: &AgentKit) -> crate::repl::complete::Sources {
    let rt = &kit.runtime;
    let mut models = vec![kit.client.model().to_string()];
    models.extend(app.config.model.to_config().default);
    models.extend(
        app.config
            .fallback_providers
            .iter()
            .filter_map(|f| f.default.clone()),
    );
    let lists = crate::assembly::model_switch::lists_models(rt.api_mode);
    crate::repl::complete::Sources {
        commands: crate::repl::slash::command_names(),
        skills_dir: Some(app.home.skills_dir()),
        models,
        list_models_from: lists.then(|| (rt.base_url.clone(), rt.api_key.clone())),
        cwd: kit.opts.cwd.clone(),
    }
}

/// What the REPL needs for `/memory`, `/skills`, `/<skill-name>` and `-s` preloading.
#[derive(Debug, Clone)]
pub struct LearningInfo {
    home: HermesHome,
    memory: MemoryConfig,
    preload_skills: Vec<String>,
    /// `skills.disabled` for the CLI.
    disabled: std::collections::BTreeSet<String>,
}

impl LearningInfo {
    /// From the loaded home and config, with the `-s/--skills` list of `args`.
    pub fn new(app: &App, args: &ChatArgs) -> LearningInfo {
        LearningInfo {
            home: app.home.clone(),
            memory: app.config.memory.clone(),
            preload_skills: args.skills.clone().unwrap_or_default(),
            disabled: app
                .config
                .skills
                .disabled_for(Some(crate::assembly::runtime::SKILLS_PLATFORM)),
        }
    }

    /// `/memory`: [`memory_report`] of the files as they are now.
    pub fn memory_text(&self) -> String {
        crate::views::memory::memory_report(&self.home, &self.memory)
    }

    /// `/skills`: the installed skills.
    pub fn skills_text(&self) -> String {
        crate::views::skills::list_text(&self.home.skills_dir(), &self.disabled)
    }

    /// `/<name> [instruction]`: the user message loading skill `name`, or `None` when no
    /// installed skill has that name (then it is an unknown command).
    pub fn skill_message(&self, name: &str, instruction: &str) -> Option<Result<String, String>> {
        let catalog = hermes_context::skills::SkillCatalog::load_cached(&self.home.skills_dir());
        catalog.find(name)?;
        if self.disabled.contains(name) {
            return Some(Err(format!(
                "skill `{name}` is disabled (skills.disabled in config.yaml)"
            )));
        }
        Some(hermes_context::skill_invocation_message(
            &self.home,
            name,
            instruction,
        ))
    }

    /// The text to send for a plain message: the first one carries the `-s` skills
    /// ([`crate::views::skills::preload_message`]), later ones are unchanged.
    ///
    /// # Errors
    /// An unknown `-s` skill (reported once; the list is then dropped).
    pub fn first_message(&mut self, text: &str) -> Result<String> {
        let skills = std::mem::take(&mut self.preload_skills);
        crate::views::skills::preload_message(&self.home, &skills, text, &self.disabled)
    }
}
