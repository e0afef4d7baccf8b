//! The gateway's typed settings, read from `config.yaml` (top-level gateway keys, the
//! `display:` and `gateway:` sections) and the environment (allowlists, allow-all switches).
//! Unknown keys in `gateway:` are warned about; a bad value is an error naming the key.

use std::collections::BTreeMap;
use std::time::Duration;

use hermes_protocol::config::Config;
use yaml_serde::Value;

use crate::keys::KeyOptions;

/// `display.busy_input_mode`: what a message does when its session's turn is running
/// (FEATURES §1 Gateway).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BusyInputMode {
    /// Cancel the running turn, then run the new message (default).
    #[default]
    Interrupt,
    /// Keep every message, in order, and run each after the current turn (case C35).
    Queue,
    /// Hand the message to the running turn after its next tool call.
    Steer,
}

impl BusyInputMode {
    /// The config value: `interrupt`, `queue`, `steer`.
    pub fn as_str(self) -> &'static str {
        match self {
            BusyInputMode::Interrupt => "interrupt",
            BusyInputMode::Queue => "queue",
            BusyInputMode::Steer => "steer",
        }
    }
}

/// `display.tool_progress`: which tool lines are shown in chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolProgress {
    /// No tool lines.
    Off,
    /// A line when the tool differs from the previous one.
    New,
    /// A line for every tool call (default).
    #[default]
    All,
    /// Every call with its argument preview and result.
    Verbose,
}

/// `unauthorized_dm_behavior`: what an unknown user's DM gets when the platform has no
/// allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnauthorizedDm {
    /// A one-time pairing code the owner approves (default).
    #[default]
    Pair,
    /// Nothing.
    Ignore,
}

/// `session_reset.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResetMode {
    /// Sessions never reset by themselves (default).
    #[default]
    None,
    /// A new session after `idle_minutes` without messages.
    Idle,
    /// A new session on the first message after `at_hour` each day.
    Daily,
    /// Whichever of idle and daily comes first.
    Both,
}

/// `session_reset:` — when a chat's session is replaced by a fresh one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetPolicy {
    /// The mode.
    pub mode: ResetMode,
    /// Idle time in minutes before an idle reset (default 1440).
    pub idle_minutes: u64,
    /// Local hour 0–23 of the daily reset (default 4).
    pub at_hour: u32,
}

impl Default for ResetPolicy {
    fn default() -> Self {
        ResetPolicy {
            mode: ResetMode::None,
            idle_minutes: 1440,
            at_hour: 4,
        }
    }
}

/// Who may talk to the agent on one platform.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlatformAccess {
    /// `<PLATFORM>_ALLOWED_USERS`: stable user ids (comma-separated in the env var). Never
    /// display names (case C36).
    pub allowed_users: Vec<String>,
    /// `<PLATFORM>_ALLOW_ALL_USERS`: everyone may talk to the agent.
    pub allow_all: bool,
}

/// Everything the gateway core reads from configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// Session key shape (profile, per-user sessions in groups and threads).
    pub keys: KeyOptions,
    /// `unauthorized_dm_behavior`.
    pub unauthorized_dm: UnauthorizedDm,
    /// `display.busy_input_mode`.
    pub busy_input_mode: BusyInputMode,
    /// `display.tool_progress`.
    pub tool_progress: ToolProgress,
    /// `session_reset`.
    pub reset: ResetPolicy,
    /// `gateway.max_concurrent_sessions`: turns running at once; others wait (default 8).
    pub max_concurrent_sessions: usize,
    /// `gateway.agent_cache_size`: idle agents kept in memory (default 32); evicted ones
    /// reload from the store.
    pub agent_cache_size: usize,
    /// `gateway.streaming`: stream replies by editing one message (default false).
    pub streaming: bool,
    /// `gateway.approval_timeout`: seconds a dangerous command waits for `/approve`
    /// before it is denied (default 300).
    pub approval_timeout: Duration,
    /// `gateway.idle_release_after`: seconds without messages or running work after which
    /// the gateway gives memory back to the operating system, once per idle period
    /// ([`crate::idle`]); `0` turns it off (`None`). Default 60.
    pub idle_release_after: Option<Duration>,
    /// `GATEWAY_ALLOW_ALL_USERS`: every platform allows everyone.
    pub allow_all_users: bool,
    /// Per-platform access from the environment, keyed by lower-case platform name.
    pub access: BTreeMap<String, PlatformAccess>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            keys: KeyOptions::default(),
            unauthorized_dm: UnauthorizedDm::Pair,
            busy_input_mode: BusyInputMode::Interrupt,
            tool_progress: ToolProgress::All,
            reset: ResetPolicy::default(),
            max_concurrent_sessions: 8,
            agent_cache_size: 32,
            streaming: false,
            approval_timeout: Duration::from_secs(300),
            idle_release_after: Some(Duration::from_secs(60)),
            allow_all_users: false,
            access: BTreeMap::new(),
        }
    }
}

/// A configuration value the gateway cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {message}")]
pub struct GatewayConfigError {
    /// The key as written (`display.busy_input_mode`, `TELEGRAM_ALLOW_ALL_USERS`, …).
    pub key: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

fn bad(key: &str, message: impl Into<String>) -> GatewayConfigError {
    GatewayConfigError {
        key: key.to_string(),
        message: message.into(),
    }
}

const GATEWAY_KEYS: &[&str] = &[
    "max_concurrent_sessions",
    "agent_cache_size",
    "streaming",
    "approval_timeout",
    "idle_release_after",
];

impl GatewayConfig {
    /// Reads the gateway settings. `profile` is the `-p` name (`main` when `None`); `env`
    /// is the process environment merged over `.env`. Returns the config and warnings
    /// (unknown keys in `gateway:` / `session_reset:`).
    ///
    /// Errors: a value of the wrong type or outside its choices, naming the key.
    pub fn from_config(
        config: &Config,
        env: &BTreeMap<String, String>,
        profile: Option<&str>,
    ) -> Result<(GatewayConfig, Vec<String>), GatewayConfigError> {
        let mut out = GatewayConfig::default();
        let mut warnings = Vec::new();
        out.keys.profile = profile.unwrap_or("main").to_string();
        if let Some(v) = &config.group_sessions_per_user {
            out.keys.group_sessions_per_user = yaml_bool("group_sessions_per_user", v)?;
        }
        if let Some(v) = &config.thread_sessions_per_user {
            out.keys.thread_sessions_per_user = yaml_bool("thread_sessions_per_user", v)?;
        }
        if let Some(v) = &config.unauthorized_dm_behavior {
            out.unauthorized_dm = match yaml_str("unauthorized_dm_behavior", v)? {
                "pair" => UnauthorizedDm::Pair,
                "ignore" => UnauthorizedDm::Ignore,
                other => return Err(choice("unauthorized_dm_behavior", other, "pair, ignore")),
            };
        }
        if let Some(mode) = &config.display.busy_input_mode {
            out.busy_input_mode = match mode.as_str() {
                "interrupt" => BusyInputMode::Interrupt,
                "queue" => BusyInputMode::Queue,
                "steer" => BusyInputMode::Steer,
                other => {
                    return Err(choice(
                        "display.busy_input_mode",
                        other,
                        "interrupt, queue, steer",
                    ));
                }
            };
        }
        if let Some(p) = &config.display.tool_progress {
            out.tool_progress = match p.as_str() {
                "off" | "false" => ToolProgress::Off,
                "new" => ToolProgress::New,
                "all" | "true" => ToolProgress::All,
                "verbose" => ToolProgress::Verbose,
                other => {
                    return Err(choice(
                        "display.tool_progress",
                        other,
                        "off, new, all, verbose",
                    ));
                }
            };
        }
        if let Some(v) = &config.session_reset {
            out.reset = reset_policy(v, &mut warnings)?;
        }
        if let Some(v) = &config.gateway {
            read_gateway_section(v, &mut out, &mut warnings)?;
        }
        read_env(env, &mut out)?;
        Ok((out, warnings))
    }

    /// Access rules of `platform` (deny-all when nothing is configured).
    pub fn access(&self, platform: &str) -> PlatformAccess {
        let mut access = self
            .access
            .get(&platform.to_ascii_lowercase())
            .cloned()
            .unwrap_or_default();
        access.allow_all |= self.allow_all_users;
        access
    }
}

fn choice(key: &str, got: &str, accepted: &str) -> GatewayConfigError {
    bad(key, format!("`{got}` is not one of: {accepted}"))
}

fn yaml_bool(key: &str, v: &Value) -> Result<bool, GatewayConfigError> {
    v.as_bool()
        .ok_or_else(|| bad(key, "expected true or false"))
}

fn yaml_str<'a>(key: &str, v: &'a Value) -> Result<&'a str, GatewayConfigError> {
    v.as_str().ok_or_else(|| bad(key, "expected a string"))
}

fn yaml_uint(key: &str, v: &Value, min: u64, max: u64) -> Result<u64, GatewayConfigError> {
    match v.as_u64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(bad(
            key,
            format!("expected a whole number from {min} to {max}"),
        )),
    }
}

fn mapping<'a>(key: &str, v: &'a Value) -> Result<Vec<(&'a str, &'a Value)>, GatewayConfigError> {
    let map = v
        .as_mapping()
        .ok_or_else(|| bad(key, "expected a section (key: value lines)"))?;
    map.iter()
        .map(|(k, v)| {
            k.as_str()
                .map(|k| (k, v))
                .ok_or_else(|| bad(key, "keys must be strings"))
        })
        .collect()
}

fn reset_policy(v: &Value, warnings: &mut Vec<String>) -> Result<ResetPolicy, GatewayConfigError> {
    let mut policy = ResetPolicy::default();
    for (k, val) in mapping("session_reset", v)? {
        match k {
            "mode" => {
                policy.mode = match yaml_str("session_reset.mode", val)? {
                    "none" => ResetMode::None,
                    "idle" => ResetMode::Idle,
                    "daily" => ResetMode::Daily,
                    "both" => ResetMode::Both,
                    other => {
                        return Err(choice(
                            "session_reset.mode",
                            other,
                            "none, idle, daily, both",
                        ));
                    }
                }
            }
            "idle_minutes" => {
                policy.idle_minutes = yaml_uint("session_reset.idle_minutes", val, 1, 525_600)?;
            }
            "at_hour" => {
                policy.at_hour = yaml_uint("session_reset.at_hour", val, 0, 23)? as u32;
            }
            other => warnings.push(format!("unknown key `session_reset.{other}` (ignored)")),
        }
    }
    Ok(policy)
}

fn read_gateway_section(
    v: &Value,
    out: &mut GatewayConfig,
    warnings: &mut Vec<String>,
) -> Result<(), GatewayConfigError> {
    if v.is_null() {
        return Ok(());
    }
    for (k, val) in mapping("gateway", v)? {
        let key = format!("gateway.{k}");
        match k {
            "max_concurrent_sessions" => {
                out.max_concurrent_sessions = yaml_uint(&key, val, 1, 10_000)? as usize;
            }
            "agent_cache_size" => {
                out.agent_cache_size = yaml_uint(&key, val, 1, 100_000)? as usize;
            }
            "streaming" => out.streaming = yaml_bool(&key, val)?,
            "approval_timeout" => {
                out.approval_timeout = Duration::from_secs(yaml_uint(&key, val, 1, 86_400)?);
            }
            "idle_release_after" => {
                let secs = yaml_uint(&key, val, 0, 86_400 * 30)?;
                out.idle_release_after = (secs > 0).then(|| Duration::from_secs(secs));
            }
            // A key of Python Hermes' `gateway:` section is already reported, once, among
            // the Python settings hermes does not use (`hermes config check` names it).
            _ if hermes_protocol::config::python_keys::is_python_key(&key) => {}
            other => {
                warnings.push(format!(
                    "unknown key `gateway.{other}` (ignored; known: {})",
                    GATEWAY_KEYS.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// `true/1/yes/on` and `false/0/no/off/""`, case-insensitive.
fn env_bool(key: &str, value: &str) -> Result<bool, GatewayConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        other => Err(bad(key, format!("`{other}` is not true/false (or 1/0)"))),
    }
}

fn read_env(
    env: &BTreeMap<String, String>,
    out: &mut GatewayConfig,
) -> Result<(), GatewayConfigError> {
    for (k, v) in env {
        if k == "GATEWAY_ALLOW_ALL_USERS" {
            out.allow_all_users = env_bool(k, v)?;
        } else if let Some(p) = k.strip_suffix("_ALLOW_ALL_USERS") {
            out.access
                .entry(p.to_ascii_lowercase())
                .or_default()
                .allow_all = env_bool(k, v)?;
        } else if let Some(p) = k.strip_suffix("_ALLOWED_USERS") {
            out.access
                .entry(p.to_ascii_lowercase())
                .or_default()
                .allowed_users = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|u| allowlist_entry(p, u))
                .collect();
        }
    }
    Ok(())
}

/// One allowlist entry of platform `p` (the variable's prefix) in the form its adapter
/// reports user ids: IRC nicks and account names folded (they are case-insensitive);
/// WhatsApp Cloud ids as bare digits (`+49 170 123`, `49170123@s.whatsapp.net` →
/// `49170123`, as Python Hermes' whatsapp_cloud adapter normalises them); SMS numbers
/// without the spaces, dashes, dots and parentheses people write them with (`+1 (555)
/// 010-0000` → `+15550100000`, Twilio's E.164 `From`).
fn allowlist_entry(p: &str, u: &str) -> String {
    if p.eq_ignore_ascii_case("IRC") {
        irc_casefold(u)
    } else if p.eq_ignore_ascii_case("WHATSAPP_CLOUD") {
        let bare = u.split('@').next().unwrap_or(u);
        let digits: String = bare.chars().filter(char::is_ascii_digit).collect();
        if digits.is_empty() {
            u.to_string()
        } else {
            digits
        }
    } else if p.eq_ignore_ascii_case("EMAIL") {
        // Addresses are compared lower-cased, as Python Hermes does; the email adapter reports
        // senders lower-cased.
        u.to_ascii_lowercase()
    } else if p.eq_ignore_ascii_case("SMS") {
        u.chars()
            .filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')'))
            .collect()
    } else {
        u.to_string()
    }
}

/// Folds an IRC nickname or channel name with RFC 1459 case mapping (§2.2: `{}|^` are the
/// lower-case forms of `[]\~`), the default `CASEMAPPING` of IRC servers.
pub fn irc_casefold(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '[' => '{',
            ']' => '}',
            '\\' => '|',
            '~' => '^',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(
        yaml: &str,
        env: &[(&str, &str)],
    ) -> Result<(GatewayConfig, Vec<String>), GatewayConfigError> {
        let config = Config::parse(yaml, Path::new("config.yaml"))
            .unwrap()
            .config;
        let env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GatewayConfig::from_config(&config, &env, None)
    }

    #[test]
    fn defaults_deny_everyone_and_interrupt() {
        let (c, w) = parse("", &[]).unwrap();
        assert!(w.is_empty());
        assert_eq!(c.busy_input_mode, BusyInputMode::Interrupt);
        assert_eq!(c.reset.mode, ResetMode::None);
        assert_eq!(c.access("telegram"), PlatformAccess::default());
        assert!(c.keys.group_sessions_per_user);
        assert!(!c.keys.thread_sessions_per_user);
        assert_eq!(c.idle_release_after, Some(Duration::from_secs(60)));
        let (c, _) = parse("gateway:\n  idle_release_after: 0\n", &[]).unwrap();
        assert_eq!(c.idle_release_after, None, "0 turns the idle release off");
    }

    #[test]
    fn reads_every_key_and_env_allowlists() {
        let yaml = "group_sessions_per_user: false\nthread_sessions_per_user: true\n\
            unauthorized_dm_behavior: ignore\ndisplay:\n  busy_input_mode: queue\n  tool_progress: new\n\
            session_reset:\n  mode: both\n  idle_minutes: 30\n  at_hour: 5\n\
            gateway:\n  max_concurrent_sessions: 2\n  agent_cache_size: 4\n  streaming: true\n  approval_timeout: 60\n  idle_release_after: 300\n";
        let (c, w) = parse(
            yaml,
            &[
                ("TELEGRAM_ALLOWED_USERS", " 12, 34 ,"),
                ("DISCORD_ALLOW_ALL_USERS", "yes"),
            ],
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert!(!c.keys.group_sessions_per_user);
        assert!(c.keys.thread_sessions_per_user);
        assert_eq!(c.unauthorized_dm, UnauthorizedDm::Ignore);
        assert_eq!(c.busy_input_mode, BusyInputMode::Queue);
        assert_eq!(c.tool_progress, ToolProgress::New);
        assert_eq!(
            c.reset,
            ResetPolicy {
                mode: ResetMode::Both,
                idle_minutes: 30,
                at_hour: 5
            }
        );
        assert_eq!(c.max_concurrent_sessions, 2);
        assert_eq!(c.agent_cache_size, 4);
        assert!(c.streaming);
        assert_eq!(c.approval_timeout, Duration::from_secs(60));
        assert_eq!(c.idle_release_after, Some(Duration::from_secs(300)));
        assert_eq!(c.access("telegram").allowed_users, vec!["12", "34"]);
        let (irc, _) = parse("", &[("IRC_ALLOWED_USERS", "Alice,Bob[x]")]).unwrap();
        assert_eq!(irc.access("irc").allowed_users, vec!["alice", "bob{x}"]);
        let (email, _) =
            parse("", &[("EMAIL_ALLOWED_USERS", "Alice@Example.COM, b@x.org")]).unwrap();
        assert_eq!(
            email.access("email").allowed_users,
            vec!["alice@example.com", "b@x.org"]
        );
        let (phones, _) = parse(
            "",
            &[
                (
                    "WHATSAPP_CLOUD_ALLOWED_USERS",
                    "+49 170 123, 4915@s.whatsapp.net,*",
                ),
                ("SMS_ALLOWED_USERS", "+1 (555) 010-0000,+15550100001"),
            ],
        )
        .unwrap();
        assert_eq!(
            phones.access("whatsapp_cloud").allowed_users,
            vec!["49170123", "4915", "*"]
        );
        assert_eq!(
            phones.access("sms").allowed_users,
            vec!["+15550100000", "+15550100001"]
        );
        assert!(c.access("discord").allow_all);
        assert!(!c.access("slack").allow_all);
    }

    #[test]
    fn gateway_allow_all_applies_to_every_platform() {
        let (c, _) = parse("", &[("GATEWAY_ALLOW_ALL_USERS", "true")]).unwrap();
        assert!(c.access("slack").allow_all);
    }

    #[test]
    fn bad_values_name_the_key_and_unknown_keys_warn() {
        let e = parse("display:\n  busy_input_mode: later\n", &[]).unwrap_err();
        assert_eq!(e.key, "display.busy_input_mode");
        assert!(e.to_string().contains("later"), "{e}");
        let e = parse("session_reset:\n  at_hour: 25\n", &[]).unwrap_err();
        assert_eq!(e.key, "session_reset.at_hour");
        let e = parse("gateway:\n  streaming: maybe\n", &[]).unwrap_err();
        assert_eq!(e.key, "gateway.streaming");
        let e = parse("", &[("SLACK_ALLOW_ALL_USERS", "sure")]).unwrap_err();
        assert_eq!(e.key, "SLACK_ALLOW_ALL_USERS");
        let (_, w) = parse("gateway:\n  max_sessions: 3\n", &[]).unwrap();
        assert!(w[0].contains("gateway.max_sessions"), "{w:?}");
        // Python's own `gateway:` keys are reported with the other Python settings, not here.
        let (_, w) = parse(
            "gateway:\n  strict: false\n  restart_loop_guard:\n    max_restarts: 3\n",
            &[],
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
    }
}
