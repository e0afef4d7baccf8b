//! `hermes doctor`'s messaging platforms (issue 22 item 9): each platform with credentials
//! in `.env`, who may talk to it, half-set credentials, and whether its adapter can be set
//! up from those settings (the same construction `gateway run` and `hermes send` use, without
//! connecting).

use hermes_gateway::config::GatewayConfig;
use hermes_gateway::status::PLATFORM_CREDENTIALS;

use super::{Level, Report};
use crate::assembly::app::App;

/// Adds one line per platform with any credential set, one per gateway config warning, and
/// a broken line when an adapter cannot be set up.
pub(crate) async fn check_platforms(app: &App, profile: Option<&str>, report: &mut Report) {
    let config = match GatewayConfig::from_config(&app.config, &app.env, profile) {
        Ok((config, warnings)) => {
            for w in warnings {
                report.add(Level::Warn, format!("gateway settings: {w}"));
            }
            config
        }
        Err(e) => {
            report.add(Level::Broken, format!("gateway settings: {e}"));
            return;
        }
    };
    let mut configured = 0;
    for (name, vars) in PLATFORM_CREDENTIALS {
        if *name == "api_server" {
            continue;
        }
        let missing = hermes_gateway::status::missing_credentials(&app.env, vars);
        if missing.len() == vars.len() {
            continue;
        }
        configured += 1;
        if !missing.is_empty() {
            report.add(
                Level::Warn,
                format!(
                    "platform {name}: {} not set (the gateway may not serve it)",
                    missing.join(", ").replace('|', " or ")
                ),
            );
            continue;
        }
        let access = config.access(name);
        let who = if access.allow_all {
            "everyone may talk to the agent".to_string()
        } else if !access.allowed_users.is_empty() {
            format!("{} allowed user(s)", access.allowed_users.len())
        } else {
            "strangers get a pairing code".to_string()
        };
        report.add(Level::Ok, format!("platform {name}: configured; {who}"));
    }
    if configured == 0 {
        report.add(
            Level::Ok,
            "messaging platforms: none configured (README \"The messaging gateway\")",
        );
        return;
    }
    if let Err(e) = crate::commands::gateway::send_adapters(app).await {
        report.add(Level::Broken, format!("{e:#}"));
    }
}
