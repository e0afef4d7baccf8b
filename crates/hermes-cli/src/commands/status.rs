//! `hermes status [--deep]` (issue 20; Python Hermes' `hermes status`): every component at
//! a glance — the home and its files, the model in use and the provider keys present (names
//! only), the session store, MCP servers, skills and memory, the gateway's platforms and its
//! service, cron jobs, the logs. Nothing is changed and, without `--deep`, nothing is
//! connected to; `--deep` also starts the MCP servers to count their tools. `hermes doctor`
//! is the command that judges and repairs.

use anyhow::Result;
use clap::Args;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// Flags of `hermes status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Also start the MCP servers to see whether they answer and what tools they give.
    #[arg(long)]
    pub deep: bool,
    /// Print the running gateway's `/_status` document as JSON (or, with no gateway
    /// answering, the version, cron and store parts this command can read itself).
    #[arg(long)]
    pub json: bool,
    /// Accepted for Python Hermes' `--all` (everything is always shown).
    #[arg(long, hide = true)]
    pub all: bool,
}

/// Provider key variables looked for in the environment and `.env` (names only are shown).
const KEY_VARS: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "NOUS_API_KEY",
    "DEEPSEEK_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "XAI_API_KEY",
    "FIRECRAWL_API_KEY",
    "TAVILY_API_KEY",
    "EXA_API_KEY",
];

/// One `name  value` row.
fn row(out: &mut Vec<String>, name: &str, value: impl AsRef<str>) {
    out.push(format!("  {name:<14} {}", value.as_ref()));
}

/// Runs `hermes status`; returns the exit code (0; broken parts are shown, not fatal).
pub async fn run(profile: Option<&str>, chat: &ChatArgs, args: &StatusArgs) -> Result<i32> {
    if args.json {
        let app = App::load(profile)?;
        let doc = crate::commands::gateway::observe::status_document(&app, profile).await;
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    let home = hermes_protocol::HermesHome::resolve(profile)
        .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))?;
    let mut out = vec![format!("hermes {}", env!("CARGO_PKG_VERSION"))];
    out.push(String::new());
    out.push("Home".into());
    row(&mut out, "HERMES_HOME", home.root().display().to_string());
    let config_state = match hermes_protocol::config::Config::load(&home.config_file()) {
        Ok(_) if !home.config_file().exists() => "absent (defaults apply)".to_string(),
        Ok(l) if l.warnings.is_empty() => "ok".to_string(),
        Ok(l) => format!(
            "ok, {} warning(s) (`hermes config check`)",
            l.warnings.len()
        ),
        Err(e) => format!("BROKEN: {e}"),
    };
    row(&mut out, "config.yaml", config_state);
    let env_state = match std::fs::read_to_string(home.env_file()) {
        Ok(text) => format!(
            "{} variable(s)",
            hermes_protocol::config::parse_env_file(&text).len()
        ),
        Err(_) => "absent".to_string(),
    };
    row(&mut out, ".env", env_state);
    let soul = match crate::views::personality::current(&home) {
        Some("none") => "the default identity".to_string(),
        Some(p) => format!("personality `{p}`"),
        None if home.soul_file().exists() => "your own text".to_string(),
        None => "not written yet (the default identity)".to_string(),
    };
    row(&mut out, "SOUL.md", soul);

    let app = match App::load(profile) {
        Ok(app) => app,
        Err(e) => {
            out.push(String::new());
            out.push(format!("The rest needs config.yaml: {e:#}"));
            outln!("{}", out.join("\n"));
            return Ok(0);
        }
    };

    out.push(String::new());
    out.push("Model".into());
    match crate::assembly::runtime::resolve_runtime(&app, chat) {
        Ok(rt) => {
            row(&mut out, "model", &rt.model);
            row(
                &mut out,
                "provider",
                format!("{} ({:?})", rt.provider, rt.api_mode),
            );
            if !rt.base_url.is_empty() {
                row(&mut out, "base_url", &rt.base_url);
            }
        }
        Err(e) => {
            let text = format!("{e:#}");
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .split(". ")
                .next()
                .unwrap_or("");
            row(
                &mut out,
                "model",
                format!("not resolved: {first} (`hermes setup`)"),
            );
        }
    }
    if !app.config.fallback_providers.is_empty() {
        row(
            &mut out,
            "fallbacks",
            app.config
                .fallback_providers
                .iter()
                .map(|f| {
                    format!(
                        "{}/{}",
                        f.provider.as_deref().unwrap_or("?"),
                        f.default.as_deref().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let keys: Vec<&str> = KEY_VARS
        .iter()
        .copied()
        .filter(|k| app.env.get(*k).is_some_and(|v| !v.trim().is_empty()))
        .collect();
    row(
        &mut out,
        "keys set",
        if keys.is_empty() {
            "none".to_string()
        } else {
            keys.join(", ")
        },
    );
    row(
        &mut out,
        "local model",
        match crate::assembly::runtime::local_model_path(&app) {
            Some(p) => p.display().to_string(),
            None => "not installed (`hermes model pull`)".to_string(),
        },
    );

    out.push(String::new());
    out.push("Sessions".into());
    let store = if app.home.state_db().exists() {
        Some(app.open_store())
    } else {
        row(
            &mut out,
            "state.db",
            "not created yet (the first session creates it)",
        );
        None
    };
    match store {
        None => {}
        Some(Ok(store)) => match store.stats() {
            Ok(s) => {
                row(
                    &mut out,
                    "state.db",
                    app.home.state_db().display().to_string(),
                );
                row(
                    &mut out,
                    "sessions",
                    format!(
                        "{} ({} messages, {:.1} MB)",
                        s.sessions,
                        s.messages,
                        s.db_bytes as f64 / 1e6
                    ),
                );
                if let Ok(Some(last)) = store.latest_session(None) {
                    row(
                        &mut out,
                        "latest",
                        format!(
                            "{} {} ({})",
                            last.id,
                            crate::views::sessions::shown_title(&last),
                            last.source
                        ),
                    );
                }
            }
            Err(e) => row(&mut out, "state.db", format!("unreadable: {e}")),
        },
        Some(Err(e)) => row(&mut out, "state.db", format!("cannot open: {e:#}")),
    }

    out.push(String::new());
    out.push("Tools".into());
    let (toolsets, source) = crate::assembly::tools::enabled_toolsets(&app, chat);
    row(
        &mut out,
        "toolsets",
        format!(
            "{} ({source})",
            if toolsets.is_empty() {
                "none".to_string()
            } else {
                toolsets.join(", ")
            }
        ),
    );
    if !app.config.agent.disabled_toolsets.is_empty() {
        row(
            &mut out,
            "disabled",
            app.config.agent.disabled_toolsets.join(", "),
        );
    }
    let specs = crate::assembly::mcp::configured(&app);
    if specs.is_empty() {
        row(&mut out, "MCP servers", "none (`hermes mcp add`)");
    } else if args.deep {
        let cwd = std::env::current_dir().unwrap_or_else(|_| app.home.root().to_path_buf());
        match crate::assembly::mcp::start_for_session(&app, &cwd, &[], Default::default()).await {
            Some(manager) => {
                for r in manager.reports() {
                    let state = match &r.state {
                        hermes_mcp::server::ServerState::Ready => format!(
                            "ready, {} tools",
                            crate::assembly::mcp::exposed_tool_count(&manager, &r.name)
                        ),
                        hermes_mcp::server::ServerState::Failed(e) => {
                            format!("failed: {}", crate::assembly::mcp::friendly_reason(e))
                        }
                        other => format!("{other:?}").to_lowercase(),
                    };
                    row(&mut out, &format!("MCP {}", r.name), state);
                }
                manager.shutdown().await;
            }
            None => row(
                &mut out,
                "MCP servers",
                "every configured server is disabled",
            ),
        }
    } else {
        let names: Vec<String> = specs
            .iter()
            .map(|s| {
                if s.enabled {
                    s.name.clone()
                } else {
                    format!("{} (disabled)", s.name)
                }
            })
            .collect();
        row(
            &mut out,
            "MCP servers",
            format!("{} (`hermes status --deep` connects)", names.join(", ")),
        );
    }
    let skills = hermes_context::skills::SkillCatalog::load(&app.home.skills_dir());
    row(
        &mut out,
        "skills",
        format!(
            "{} installed{}",
            skills.skills.len(),
            if skills.errors.is_empty() {
                String::new()
            } else {
                format!(", {} broken (`hermes skills list`)", skills.errors.len())
            }
        ),
    );

    out.push(String::new());
    out.push("Gateway".into());
    // Each platform needs every group, and of a group any one variable (Slack: the bot
    // token and either the Socket Mode token or the Events API signing secret).
    let set = |v: &str| app.env.get(v).is_some_and(|x| !x.trim().is_empty());
    let platforms: Vec<&str> = [
        ("telegram", &[&["TELEGRAM_BOT_TOKEN"][..]][..]),
        ("discord", &[&["DISCORD_BOT_TOKEN"][..]][..]),
        (
            "slack",
            &[
                &["SLACK_BOT_TOKEN"][..],
                &["SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"][..],
            ][..],
        ),
        ("webhook", &[&["WEBHOOK_SECRET"][..]][..]),
        ("irc", &[&["IRC_SERVER"][..], &["IRC_CHANNEL"][..]][..]),
        (
            "matrix",
            &[
                &["MATRIX_HOMESERVER"][..],
                &["MATRIX_ACCESS_TOKEN", "MATRIX_PASSWORD"][..],
            ][..],
        ),
        (
            "email",
            &[
                &["EMAIL_ADDRESS"][..],
                &["EMAIL_PASSWORD"][..],
                &["EMAIL_IMAP_HOST"][..],
                &["EMAIL_SMTP_HOST"][..],
            ][..],
        ),
        (
            "whatsapp_cloud",
            &[
                &["WHATSAPP_CLOUD_PHONE_NUMBER_ID"][..],
                &["WHATSAPP_CLOUD_ACCESS_TOKEN"][..],
            ][..],
        ),
        (
            "sms",
            &[
                &["TWILIO_ACCOUNT_SID"][..],
                &["TWILIO_AUTH_TOKEN"][..],
                &["TWILIO_PHONE_NUMBER"][..],
            ][..],
        ),
        (
            "signal",
            &[&["SIGNAL_HTTP_URL"][..], &["SIGNAL_ACCOUNT"][..]][..],
        ),
        (
            "mattermost",
            &[&["MATTERMOST_URL"][..], &["MATTERMOST_TOKEN"][..]][..],
        ),
        ("homeassistant", &[&["HASS_TOKEN"][..]][..]),
    ]
    .iter()
    .filter(|(_, groups)| groups.iter().all(|g| g.iter().any(|v| set(v))))
    .map(|(p, _)| *p)
    .collect();
    let api = app
        .env
        .get("API_SERVER_ENABLED")
        .is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "1" | "true" | "yes"));
    let mut served: Vec<String> = platforms.iter().map(|p| p.to_string()).collect();
    if api {
        served.push("api_server".into());
    }
    row(
        &mut out,
        "platforms",
        if served.is_empty() {
            "none set up (`hermes gateway status` shows what each needs)".to_string()
        } else {
            served.join(", ")
        },
    );
    row(
        &mut out,
        "service",
        crate::commands::gateway::service::status_line(profile).trim_start_matches("service: "),
    );

    out.push(String::new());
    out.push("Cron".into());
    out.push(
        crate::views::cron::jobs_text(&app.home, app.config.timezone.as_deref())
            .lines()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    );

    out.push(String::new());
    row(&mut out, "logs", app.home.logs_dir().display().to_string());
    outln!("{}", out.join("\n"));
    Ok(0)
}
