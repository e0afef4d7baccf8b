//! The platform adapters `gateway run`, `hermes send`, cron and `mcp serve` send through,
//! built from `.env` and the environment, each behind its cargo feature.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use hermes_gateway::PlatformAdapter;
use hermes_gateway::config::GatewayConfig;

use crate::assembly::app::App;

/// A non-empty value of `name` from the environment or `.env`.
pub(super) fn credential(app: &App, name: &str) -> Option<String> {
    app.env
        .get(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Replaces `base` by the value of `var` when set: every platform's API can be pointed at a
/// self-hosted server, a proxy or a test double (`TELEGRAM_API_BASE_URL`, …).
#[allow(dead_code)]
pub(super) fn api_base(app: &App, var: &str, base: &mut String) {
    if let Some(url) = credential(app, var) {
        *base = url.trim_end_matches('/').to_string();
    }
}

/// The adapters whose credentials are set, each behind its cargo feature: Telegram
/// (`TELEGRAM_BOT_TOKEN`; webhook mode with `TELEGRAM_WEBHOOK_URL`,
/// `TELEGRAM_WEBHOOK_SECRET`, `TELEGRAM_WEBHOOK_PORT` as in Python Hermes and
/// `TELEGRAM_WEBHOOK_HOST`, default `0.0.0.0`), Discord (`DISCORD_BOT_TOKEN`), IRC
/// (`IRC_SERVER` + `IRC_CHANNEL`, see [`hermes_gateway::IrcSettings::from_env`]), Matrix
/// (`MATRIX_HOMESERVER` + `MATRIX_ACCESS_TOKEN` or `MATRIX_PASSWORD`, see
/// [`hermes_gateway::MatrixSettings::from_env`]; its sync token in
/// `HERMES_HOME/gateway/matrix_state.json`), email
/// (`EMAIL_ADDRESS`, `EMAIL_PASSWORD`, `EMAIL_IMAP_HOST`, `EMAIL_SMTP_HOST`, see
/// [`hermes_gateway::EmailSettings::from_env`]; its UID cursor and threads in
/// `HERMES_HOME/gateway/email_state.json`), Slack (see
/// [`slack_adapter`]), WhatsApp (`WHATSAPP_CLOUD_PHONE_NUMBER_ID` +
/// `WHATSAPP_CLOUD_ACCESS_TOKEN`, see [`hermes_gateway::WhatsAppSettings::from_env`]), SMS
/// (`TWILIO_ACCOUNT_SID` + `TWILIO_AUTH_TOKEN`, see [`hermes_gateway::SmsSettings::from_env`]),
/// Signal (`SIGNAL_HTTP_URL` + `SIGNAL_ACCOUNT`, see
/// [`hermes_gateway::SignalSettings::from_env`]), Mattermost (`MATTERMOST_URL` +
/// `MATTERMOST_TOKEN`, see [`hermes_gateway::MattermostSettings::from_env`]), Home Assistant
/// (`HASS_TOKEN`, `HASS_URL`; filters from config.yaml, see
/// [`hermes_gateway::HomeAssistantSettings::apply_config`]),
/// webhook (`WEBHOOK_SECRET`, see [`webhook_settings`]). Inbound files are saved under
/// `HERMES_HOME/cache/media/<platform>/`. With `listen` false the adapters are for sending
/// only: no push listener is bound (Telegram and Slack as in polling / Socket Mode, the
/// webhook adapter on a loopback port of its own), so a running gateway keeps its ports.
pub(super) async fn build_adapters(
    app: &App,
    listen: bool,
) -> Result<Vec<Arc<dyn PlatformAdapter>>> {
    #[allow(unused_variables)]
    let media = app.home.cache_dir().join("media");
    #[allow(unused_mut)]
    let mut out: Vec<Arc<dyn PlatformAdapter>> = Vec::new();
    #[cfg(feature = "telegram")]
    if let Some(token) = credential(app, "TELEGRAM_BOT_TOKEN") {
        use hermes_gateway::platforms::telegram::{
            TelegramAdapter, TelegramSettings, TelegramWebhook, webhook::DEFAULT_WEBHOOK_PORT,
        };
        let mut settings = TelegramSettings::new(token, media.join("telegram"));
        settings.offset_file = Some(app.home.root().join("gateway").join("telegram_offset"));
        api_base(app, "TELEGRAM_API_BASE_URL", &mut settings.api_base_url);
        if let Some(url) = credential(app, "TELEGRAM_WEBHOOK_URL").filter(|_| listen) {
            let secret = credential(app, "TELEGRAM_WEBHOOK_SECRET").unwrap_or_default();
            let mut hook = TelegramWebhook::new(url, secret);
            hook.bind = listen_addr(
                app,
                "TELEGRAM_WEBHOOK_HOST",
                "TELEGRAM_WEBHOOK_PORT",
                ([0, 0, 0, 0], DEFAULT_WEBHOOK_PORT).into(),
            )?;
            settings.webhook = Some(hook);
        }
        let adapter =
            TelegramAdapter::new(settings).map_err(|e| anyhow!("cannot set up Telegram: {e}"))?;
        if let Some(addr) = adapter.webhook_addr() {
            errln!("Telegram webhook listening on http://{addr}");
        }
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "discord")]
    if let Some(token) = credential(app, "DISCORD_BOT_TOKEN") {
        let mut settings = hermes_gateway::DiscordSettings::new(token, media.join("discord"));
        api_base(app, "DISCORD_API_BASE_URL", &mut settings.api_base_url);
        let adapter = hermes_gateway::DiscordAdapter::new(settings)
            .map_err(|e| anyhow!("cannot set up Discord: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "irc")]
    if let Some(settings) = hermes_gateway::IrcSettings::from_env(&app.env)
        .map_err(|e| anyhow!("cannot set up IRC: {e}"))?
    {
        // Sending only (no gateway connection to share): one short connection per message.
        let adapter = if listen {
            hermes_gateway::IrcAdapter::new(settings)
        } else {
            hermes_gateway::IrcAdapter::send_only(settings)
        }
        .map_err(|e| anyhow!("cannot set up IRC: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "matrix")]
    if let Some(mut settings) =
        hermes_gateway::MatrixSettings::from_env(&app.env, &media.join("matrix"))
            .map_err(|e| anyhow!("cannot set up Matrix: {e}"))?
    {
        settings.state_file = Some(app.home.root().join("gateway").join("matrix_state.json"));
        // `unauthorized_dm_behavior: ignore`: strangers' direct invites are not accepted
        // either (there is no pairing code to give them).
        let ignore_strangers =
            GatewayConfig::from_config(&app.config, &app.env, None).is_ok_and(|(c, _)| {
                c.unauthorized_dm == hermes_gateway::config::UnauthorizedDm::Ignore
            });
        if ignore_strangers {
            settings.pair_strangers = false;
        }
        let adapter = hermes_gateway::MatrixAdapter::new(settings)
            .map_err(|e| anyhow!("cannot set up Matrix: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "email")]
    if let Some(mut settings) =
        hermes_gateway::EmailSettings::from_env(&app.env, media.join("email"))
            .map_err(|e| anyhow!("cannot set up email: {e}"))?
    {
        settings.state_file = Some(app.home.root().join("gateway").join("email_state.json"));
        // Sending only: SMTP, and the mailbox state is left to the gateway that reads it.
        let adapter = if listen {
            hermes_gateway::EmailAdapter::new(settings)
        } else {
            hermes_gateway::EmailAdapter::send_only(settings)
        }
        .map_err(|e| anyhow!("cannot set up email: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "signal")]
    if let Some(settings) =
        hermes_gateway::SignalSettings::from_env(&app.env, &media.join("signal"))
            .map_err(|e| anyhow!("cannot set up Signal: {e}"))?
    {
        let adapter = hermes_gateway::SignalAdapter::new(settings)
            .map_err(|e| anyhow!("cannot set up Signal: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "mattermost")]
    if let Some(settings) =
        hermes_gateway::MattermostSettings::from_env(&app.env, &media.join("mattermost"))
            .map_err(|e| anyhow!("cannot set up Mattermost: {e}"))?
    {
        let adapter = hermes_gateway::MattermostAdapter::new(settings)
            .map_err(|e| anyhow!("cannot set up Mattermost: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "homeassistant")]
    if let Some(mut settings) = hermes_gateway::HomeAssistantSettings::from_env(&app.env)
        .map_err(|e| anyhow!("cannot set up Home Assistant: {e}"))?
    {
        // The filters are config.yaml's `platforms.homeassistant.extra` (Python Hermes').
        let path = app.home.config_file();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let doc: yaml_serde::Value = yaml_serde::from_str(&text)
                .map_err(|e| anyhow!("cannot set up Home Assistant: {}: {e}", path.display()))?;
            settings
                .apply_config(&doc)
                .map_err(|e| anyhow!("cannot set up Home Assistant: {e}"))?;
        }
        let adapter = hermes_gateway::HomeAssistantAdapter::new(settings)
            .map_err(|e| anyhow!("cannot set up Home Assistant: {e}"))?;
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "slack")]
    if let Some(adapter) = slack_adapter(app, media.join("slack"), listen)? {
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "whatsapp")]
    if let Some(mut settings) = hermes_gateway::WhatsAppSettings::from_env(
        &app.env,
        media.clone(),
        Some(&app.home.root().join("gateway")),
    )
    .map_err(|e| anyhow!("cannot set up WhatsApp: {e}"))?
    {
        api_base(
            app,
            "WHATSAPP_CLOUD_API_BASE_URL",
            &mut settings.api_base_url,
        );
        let path = settings.path.clone();
        let adapter = if listen {
            hermes_gateway::WhatsAppAdapter::bind(settings)
        } else {
            hermes_gateway::WhatsAppAdapter::send_only(settings)
        }
        .map_err(|e| anyhow!("cannot set up WhatsApp: {e}"))?;
        if let Some(addr) = adapter.webhook_addr() {
            errln!("WhatsApp webhook listening on http://{addr}{path}");
        }
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "sms")]
    if let Some(mut settings) =
        hermes_gateway::SmsSettings::from_env(&app.env, Some(&app.home.root().join("gateway")))
            .map_err(|e| anyhow!("cannot set up SMS: {e}"))?
    {
        api_base(app, "TWILIO_API_BASE_URL", &mut settings.api_base_url);
        // As Python Hermes: without the URL Twilio signs, SMS is not served and the other
        // platforms still are (sending keeps working).
        let unsigned = settings.webhook_url.is_none() && !settings.insecure_no_signature;
        let adapter = if listen && unsigned {
            errln!(
                "warning: SMS is not served: SMS_WEBHOOK_URL (the public URL entered at Twilio, e.g. https://example.com/webhooks/twilio) is not set"
            );
            hermes_gateway::SmsAdapter::send_only(settings)
        } else if listen {
            hermes_gateway::SmsAdapter::bind(settings)
        } else {
            hermes_gateway::SmsAdapter::send_only(settings)
        }
        .map_err(|e| anyhow!("cannot set up SMS: {e}"))?;
        if let Some(addr) = adapter.webhook_addr() {
            errln!("SMS (Twilio) webhook listening on http://{addr}/webhooks/twilio");
        }
        out.push(Arc::new(adapter));
    }
    #[cfg(feature = "webhook")]
    if let Some(secret) = credential(app, "WEBHOOK_SECRET") {
        let mut settings = webhook_settings(app, secret)?;
        if !listen {
            settings.bind = ([127, 0, 0, 1], 0).into();
        }
        let path = settings.path.clone();
        let adapter = hermes_gateway::platforms::webhook::WebhookAdapter::bind(settings)
            .await
            .map_err(|e| anyhow!("cannot set up the webhook adapter: {e}"))?;
        if listen {
            errln!("webhook listening on http://{}{path}", adapter.local_addr());
        }
        out.push(Arc::new(adapter));
    }
    Ok(out)
}

/// The webhook adapter's settings: `WEBHOOK_SECRET`, `WEBHOOK_HOST` (default `127.0.0.1`),
/// `WEBHOOK_PORT` (default 8644), `WEBHOOK_PATH` (default `/webhook`) and
/// `WEBHOOK_CALLBACK_URL` (where replies are POSTed; unset = inbound only) and
/// `WEBHOOK_ALLOWED_HOSTS` (comma-separated `Host` names served besides the bound address).
///
/// Errors: a host that is not an IP address or a port outside 1–65535, naming the variable.
#[cfg(feature = "webhook")]
pub(super) fn webhook_settings(
    app: &App,
    secret: String,
) -> Result<hermes_gateway::platforms::webhook::WebhookSettings> {
    let mut s = hermes_gateway::platforms::webhook::WebhookSettings::new(secret);
    s.bind = listen_addr(app, "WEBHOOK_HOST", "WEBHOOK_PORT", s.bind)?;
    if let Some(v) = credential(app, "WEBHOOK_PATH") {
        s.path = v;
    }
    s.callback_url = credential(app, "WEBHOOK_CALLBACK_URL");
    s.allowed_hosts = host_list(app, "WEBHOOK_ALLOWED_HOSTS");
    Ok(s)
}

/// The Slack adapter when `SLACK_BOT_TOKEN` is set: the Events API over HTTP when
/// `SLACK_SIGNING_SECRET` is set (`SLACK_EVENTS_HOST`, default `127.0.0.1`;
/// `SLACK_EVENTS_PORT`, default 3000; `SLACK_EVENTS_PATH`, default `/slack/events`;
/// `SLACK_EVENTS_ALLOWED_HOSTS`), else Socket Mode with `SLACK_APP_TOKEN`. Errors: one of
/// the two tokens without the other, bad listener settings, a port that cannot be bound.
/// With `listen` false (sending only) no Events API listener is bound.
#[cfg(feature = "slack")]
pub(super) fn slack_adapter(
    app: &App,
    media: std::path::PathBuf,
    listen: bool,
) -> Result<Option<hermes_gateway::SlackAdapter>> {
    use hermes_gateway::platforms::slack::SlackEvents;
    let bot = credential(app, "SLACK_BOT_TOKEN");
    let app_token = credential(app, "SLACK_APP_TOKEN");
    let signing = credential(app, "SLACK_SIGNING_SECRET");
    let bot = match (bot, &app_token, &signing) {
        (Some(bot), _, _) => bot,
        (None, None, None) => return Ok(None),
        (None, _, _) => {
            return Err(anyhow!(
                "cannot set up Slack: SLACK_APP_TOKEN or SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN (xoxb-) is not"
            ));
        }
    };
    let mut settings =
        hermes_gateway::SlackSettings::new(bot, app_token.clone().unwrap_or_default(), media);
    api_base(app, "SLACK_API_BASE_URL", &mut settings.api_base_url);
    if let Some(secret) = signing.filter(|_| listen) {
        let mut events = SlackEvents::new(secret);
        events.bind = listen_addr(app, "SLACK_EVENTS_HOST", "SLACK_EVENTS_PORT", events.bind)?;
        if let Some(path) = credential(app, "SLACK_EVENTS_PATH") {
            events.path = path;
        }
        events.allowed_hosts = host_list(app, "SLACK_EVENTS_ALLOWED_HOSTS");
        settings.events = Some(events);
    } else if app_token.is_none() && listen {
        return Err(anyhow!(
            "cannot set up Slack: SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (xapp-, Socket Mode) nor SLACK_SIGNING_SECRET (Events API) is"
        ));
    }
    let adapter = hermes_gateway::SlackAdapter::new(settings)
        .map_err(|e| anyhow!("cannot set up Slack: {e}"))?;
    if let Some(addr) = adapter.events_addr() {
        errln!("Slack Events API listening on http://{addr}");
    }
    Ok(Some(adapter))
}

/// The listen address from `host_var` (an IP address or `localhost`) and `port_var` (1–65535),
/// each defaulting to `default`'s part. Errors name the variable and the value.
#[cfg(any(feature = "webhook", feature = "slack", feature = "telegram"))]
pub(super) fn listen_addr(
    app: &App,
    host_var: &str,
    port_var: &str,
    default: std::net::SocketAddr,
) -> Result<std::net::SocketAddr> {
    let mut host = default.ip();
    let mut port = default.port();
    if let Some(v) = credential(app, host_var) {
        host = if v.eq_ignore_ascii_case("localhost") {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            v.trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| anyhow!("{host_var}: `{v}` is not an IP address"))?
        };
    }
    if let Some(v) = credential(app, port_var) {
        port =
            v.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
                anyhow!("{port_var}: `{v}` is not a port number between 1 and 65535")
            })?;
    }
    Ok(std::net::SocketAddr::new(host, port))
}

/// A comma-separated list of `Host` names from `var` (empty when unset).
#[cfg(any(feature = "webhook", feature = "slack"))]
pub(super) fn host_list(app: &App, var: &str) -> Vec<String> {
    credential(app, var)
        .map(|v| {
            v.split(',')
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .collect()
        })
        .unwrap_or_default()
}
