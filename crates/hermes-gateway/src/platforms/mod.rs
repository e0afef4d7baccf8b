//! Platform adapters, one module per platform, each behind its cargo feature
//! (FEATURES §1 Gateway). Adapters speak their platform's wire protocol and report stable
//! user ids; they never authorize, route or chunk.

#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "telegram",
    feature = "webhook",
    feature = "irc",
    feature = "email",
    feature = "matrix",
    feature = "signal",
    feature = "mattermost",
    feature = "homeassistant"
))]
pub(crate) mod backoff;
#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "telegram",
    feature = "matrix",
    feature = "whatsapp",
    feature = "sms",
    feature = "signal",
    feature = "mattermost"
))]
pub(crate) mod http;
#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "matrix",
    feature = "whatsapp",
    feature = "signal",
    feature = "mattermost"
))]
pub(crate) mod media;
#[cfg(any(
    feature = "slack",
    feature = "telegram",
    feature = "webhook",
    feature = "whatsapp",
    feature = "sms"
))]
pub(crate) mod push;
#[cfg(any(feature = "whatsapp", feature = "sms"))]
pub(crate) mod state;

#[cfg(feature = "discord")]
pub mod discord;
#[cfg(feature = "email")]
pub mod email;
#[cfg(feature = "homeassistant")]
pub mod homeassistant;
#[cfg(feature = "irc")]
pub mod irc;
#[cfg(feature = "matrix")]
pub mod matrix;
#[cfg(feature = "mattermost")]
pub mod mattermost;
#[cfg(feature = "signal")]
pub mod signal;
#[cfg(feature = "slack")]
pub mod slack;
#[cfg(feature = "sms")]
pub mod sms;
#[cfg(feature = "telegram")]
pub mod telegram;
#[cfg(feature = "webhook")]
pub mod webhook;
#[cfg(feature = "whatsapp")]
pub mod whatsapp;

#[cfg(all(
    test,
    feature = "discord",
    feature = "slack",
    feature = "telegram",
    feature = "webhook"
))]
mod tests {
    #[test]
    fn settings_debug_hides_every_secret_and_shows_the_rest() {
        let shown = [
            format!(
                "{:?}",
                super::discord::DiscordSettings::new("SECRET-discord", "/m")
            ),
            format!(
                "{:?}",
                super::slack::SlackSettings::new("SECRET-xoxb", "SECRET-xapp", "/m")
            ),
            format!(
                "{:?}",
                super::telegram::TelegramSettings::new("123:SECRET-tg", "/m")
            ),
            format!("{:?}", super::webhook::WebhookSettings::new("SECRET-hook")),
        ];
        for text in &shown {
            assert!(!text.contains("SECRET"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
        assert!(shown[0].starts_with("DiscordSettings { token: <redacted>, api_base_url: "));
        assert!(shown[1].contains("app_token: <redacted>"), "{}", shown[1]);
        assert!(shown[2].contains("poll_timeout: 30s"), "{}", shown[2]);
        assert!(shown[3].contains("path: \"/webhook\""), "{}", shown[3]);
    }
}
