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
    for (level, line) in serving_notes(&app.env) {
        report.add(level, line);
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

/// What a configured email, WhatsApp or SMS adapter still lacks (email: whose
/// Authentication-Results to believe); WhatsApp and SMS, to receive: WhatsApp refuses every
/// webhook POST without `WHATSAPP_CLOUD_APP_SECRET` and Meta's handshake fails without
/// `WHATSAPP_CLOUD_VERIFY_TOKEN` (sending works either way); SMS is not received without
/// `SMS_WEBHOOK_URL`, the URL Twilio signs, unless signatures are turned off.
fn serving_notes(env: &std::collections::BTreeMap<String, String>) -> Vec<(Level, String)> {
    let set = |v: &str| env.get(v).is_some_and(|x| !x.trim().is_empty());
    let mut out = Vec::new();
    if set("WHATSAPP_CLOUD_PHONE_NUMBER_ID") && set("WHATSAPP_CLOUD_ACCESS_TOKEN") {
        if !set("WHATSAPP_CLOUD_APP_SECRET") {
            out.push((
                Level::Warn,
                "platform whatsapp_cloud: WHATSAPP_CLOUD_APP_SECRET not set: incoming messages are refused (their signatures cannot be checked); sending works".to_string(),
            ));
        }
        if !set("WHATSAPP_CLOUD_VERIFY_TOKEN") {
            out.push((
                Level::Warn,
                "platform whatsapp_cloud: WHATSAPP_CLOUD_VERIFY_TOKEN not set: Meta's webhook verification will fail".to_string(),
            ));
        }
    }
    // The topmost Authentication-Results is the receiving server's only when that server
    // adds one; naming its authserv-id makes a header written by the sender count for nothing.
    let trusts_from = env
        .get("EMAIL_TRUST_FROM_HEADER")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if set("EMAIL_ADDRESS") && set("EMAIL_IMAP_HOST") && !set("EMAIL_AUTHSERV_ID") && !trusts_from {
        out.push((
            Level::Warn,
            "platform email: EMAIL_AUTHSERV_ID not set: senders are trusted by the topmost Authentication-Results header; if your mail server adds none, a sender can forge it — set EMAIL_AUTHSERV_ID to your server's authserv-id (README \"Email\")".to_string(),
        ));
    }
    let insecure = env
        .get("SMS_INSECURE_NO_SIGNATURE")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if set("TWILIO_ACCOUNT_SID") && set("TWILIO_AUTH_TOKEN") && !set("SMS_WEBHOOK_URL") && !insecure
    {
        out.push((
            Level::Warn,
            "platform sms: SMS_WEBHOOK_URL not set: `gateway run` does not receive SMS without the public URL Twilio signs (README \"SMS (Twilio)\"); sending works".to_string(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whatsapp_and_sms_say_what_they_lack_to_receive() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert!(serving_notes(&env(&[])).is_empty());
        let mail = [
            ("EMAIL_ADDRESS", "bot@x.org"),
            ("EMAIL_IMAP_HOST", "imap.x.org"),
        ];
        let email = serving_notes(&env(&mail));
        assert!(email[0].1.contains("EMAIL_AUTHSERV_ID"), "{email:?}");
        let named = [mail[0], mail[1], ("EMAIL_AUTHSERV_ID", "mx.x.org")];
        assert!(serving_notes(&env(&named)).is_empty());
        let wa = serving_notes(&env(&[
            ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "1"),
            ("WHATSAPP_CLOUD_ACCESS_TOKEN", "t"),
        ]));
        assert_eq!(wa.len(), 2, "{wa:?}");
        assert!(wa[0].1.contains("WHATSAPP_CLOUD_APP_SECRET"));
        let sms = serving_notes(&env(&[
            ("TWILIO_ACCOUNT_SID", "AC"),
            ("TWILIO_AUTH_TOKEN", "t"),
        ]));
        assert!(matches!(sms[0].0, Level::Warn) && sms[0].1.contains("SMS_WEBHOOK_URL"));
        let fine = serving_notes(&env(&[
            ("TWILIO_ACCOUNT_SID", "AC"),
            ("TWILIO_AUTH_TOKEN", "t"),
            ("SMS_WEBHOOK_URL", "https://x/webhooks/twilio"),
        ]));
        assert!(fine.is_empty());
    }
}
