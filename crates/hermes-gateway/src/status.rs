//! `hermes gateway status` and the home channel set by `/sethome`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use hermes_protocol::HermesHome;
use serde::{Deserialize, Serialize};

use crate::auth::pairing::{PairingOverview, PairingStore, now_unix};
use crate::config::GatewayConfig;
use crate::platform::ChatTarget;
use crate::replica::{LEADER_PREFIX, REPLICA_PREFIX};
use hermes_store::Lease;

/// The platforms the gateway knows, with the env vars that must be set for each (`A|B`: one
/// of them; Matrix takes an access token or a password). The API
/// server counts as configured when `API_SERVER_ENABLED` is true (1/true/yes/on); its key is
/// optional on loopback and shown in the access column.
pub const PLATFORM_CREDENTIALS: &[(&str, &[&str])] = &[
    ("telegram", &["TELEGRAM_BOT_TOKEN"]),
    ("discord", &["DISCORD_BOT_TOKEN"]),
    ("slack", &["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"]),
    ("webhook", &["WEBHOOK_SECRET"]),
    ("irc", &["IRC_SERVER", "IRC_CHANNEL"]),
    (
        "email",
        &[
            "EMAIL_ADDRESS",
            "EMAIL_PASSWORD",
            "EMAIL_IMAP_HOST",
            "EMAIL_SMTP_HOST",
        ],
    ),
    (
        "matrix",
        &["MATRIX_HOMESERVER", "MATRIX_ACCESS_TOKEN|MATRIX_PASSWORD"],
    ),
    (
        "whatsapp_cloud",
        &[
            "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
            "WHATSAPP_CLOUD_ACCESS_TOKEN",
        ],
    ),
    (
        "sms",
        &[
            "TWILIO_ACCOUNT_SID",
            "TWILIO_AUTH_TOKEN",
            "TWILIO_PHONE_NUMBER",
        ],
    ),
    ("signal", &["SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT"]),
    ("mattermost", &["MATTERMOST_URL", "MATTERMOST_TOKEN"]),
    ("homeassistant", &["HASS_TOKEN"]),
    ("api_server", &["API_SERVER_ENABLED"]),
];

/// The entries of `vars` (a [`PLATFORM_CREDENTIALS`] list; `A|B`: one of them) that have no
/// non-empty value in `env`.
pub fn missing_credentials<'a>(env: &BTreeMap<String, String>, vars: &[&'a str]) -> Vec<&'a str> {
    let set = |v: &str| env.get(v).is_some_and(|x| !x.trim().is_empty());
    vars.iter()
        .copied()
        .filter(|spec| !spec.split('|').any(set))
        .collect()
}

/// One platform's line in the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformStatus {
    /// Platform name.
    pub name: String,
    /// Every credential env var is set (non-empty).
    pub credentials: bool,
    /// Ids on the allowlist.
    pub allowlisted: usize,
    /// Everyone is allowed (for the API server: a Bearer key is set).
    pub allow_all: bool,
    /// Users approved by pairing.
    pub paired: usize,
    /// Codes waiting for approval.
    pub pending_codes: usize,
}

/// What `hermes gateway status` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayStatus {
    /// One entry per known platform.
    pub platforms: Vec<PlatformStatus>,
    /// Conversations with a stored session (distinct session keys in `state.db`).
    pub routed_sessions: u64,
    /// Whether `gateway run` runs its cron scheduler (`cron.enabled`, default true; the
    /// front end reads it, [`GatewayStatus::collect`] starts from true).
    pub cron_scheduler: bool,
    /// Replica leases in the session store (`replica:<id>`, [`crate::replica`]); empty
    /// when none was read.
    pub replicas: Vec<Lease>,
    /// Leader leases of single-connection platforms (`leader:<platform>`).
    pub leaders: Vec<Lease>,
    /// Unix seconds the leases were read at (to tell live from expired ones).
    pub leases_read_at: f64,
}

impl GatewayStatus {
    /// Collects the status from the config, the environment, the pairing files and the
    /// routed-session count.
    pub fn collect(
        config: &GatewayConfig,
        env: &BTreeMap<String, String>,
        pairing: &PairingOverview,
        routed_sessions: u64,
    ) -> GatewayStatus {
        let platforms = PLATFORM_CREDENTIALS
            .iter()
            .map(|(name, vars)| {
                let access = config.access(name);
                let set = |v: &str| env.get(v).is_some_and(|x| !x.trim().is_empty());
                let (credentials, allow_all) = if *name == "api_server" {
                    let enabled = env.get("API_SERVER_ENABLED").is_some_and(|v| {
                        matches!(
                            v.trim().to_ascii_lowercase().as_str(),
                            "1" | "true" | "yes" | "on"
                        )
                    });
                    (enabled, set("API_SERVER_KEY"))
                } else {
                    (missing_credentials(env, vars).is_empty(), access.allow_all)
                };
                PlatformStatus {
                    name: name.to_string(),
                    credentials,
                    allowlisted: access.allowed_users.len(),
                    allow_all,
                    paired: pairing.approved.iter().filter(|(p, _)| p == name).count(),
                    pending_codes: pairing.pending.iter().filter(|(p, _)| p == name).count(),
                }
            })
            .collect();
        GatewayStatus {
            platforms,
            routed_sessions,
            cron_scheduler: true,
            replicas: Vec::new(),
            leaders: Vec::new(),
            leases_read_at: 0.0,
        }
    }
}

impl fmt::Display for GatewayStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<14} {:<11} {:<16} {:>6} {:>7}",
            "platform", "credentials", "access", "paired", "pending"
        )?;
        for p in &self.platforms {
            let access = if p.name == "api_server" {
                if p.allow_all {
                    "bearer key".to_string()
                } else {
                    "no key".to_string()
                }
            } else if p.allow_all {
                "everyone".to_string()
            } else if p.allowlisted > 0 {
                format!("allowlist ({})", p.allowlisted)
            } else {
                "pairing".to_string()
            };
            writeln!(
                f,
                "{:<14} {:<11} {:<16} {:>6} {:>7}",
                p.name,
                if p.credentials { "yes" } else { "no" },
                access,
                p.paired,
                p.pending_codes
            )?;
        }
        writeln!(f, "routed sessions: {}", self.routed_sessions)?;
        if self.cron_scheduler {
            write!(f, "cron scheduler: on")?;
        } else {
            write!(f, "cron scheduler: off (cron.enabled: false)")?;
        }
        let now = self.leases_read_at;
        let live: Vec<&Lease> = self
            .replicas
            .iter()
            .filter(|l| l.expires_at > now)
            .collect();
        if !self.replicas.is_empty() {
            write!(f, "\nreplicas: {} running", live.len())?;
        }
        for l in &self.replicas {
            let id = l
                .session_id
                .strip_prefix(REPLICA_PREFIX)
                .unwrap_or(&l.session_id);
            if l.expires_at > now {
                write!(
                    f,
                    "\n  replica {id}: lease for {:.0} s more",
                    l.expires_at - now
                )?;
            } else {
                write!(
                    f,
                    "\n  replica {id}: stopped (lease expired {:.0} s ago)",
                    now - l.expires_at
                )?;
            }
        }
        for l in &self.leaders {
            let platform = l
                .session_id
                .strip_prefix(LEADER_PREFIX)
                .unwrap_or(&l.session_id);
            let state = if l.expires_at > now { "" } else { " (expired)" };
            write!(f, "\nleader of {platform}: {}{state}", l.holder)?;
        }
        Ok(())
    }
}

/// The pairing overview of `home` on `store` now (for the status).
pub fn pairing_overview(
    home: &HermesHome,
    store: &hermes_store::SessionStore,
) -> Result<PairingOverview, crate::auth::PairingError> {
    PairingStore::for_store(home.root(), store).overview(now_unix())
}

/// A platform's home channel (where cron deliveries go), set by `/sethome`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomeChannel {
    /// Chat id.
    pub chat_id: String,
    /// Thread id, if any.
    pub thread_id: Option<String>,
}

/// `HERMES_HOME/gateway/home_channels.json`.
pub fn home_channels_file(home: &HermesHome) -> PathBuf {
    home.root().join("gateway").join("home_channels.json")
}

/// The home channels by platform (empty when none was set).
pub fn home_channels(home: &HermesHome) -> BTreeMap<String, HomeChannel> {
    std::fs::read_to_string(home_channels_file(home))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Records `target` as `platform`'s home channel (atomic replace).
pub fn set_home_channel(
    home: &HermesHome,
    platform: &str,
    target: &ChatTarget,
) -> std::io::Result<()> {
    let path = home_channels_file(home);
    let mut all = home_channels(home);
    all.insert(platform.to_string(), home_channel_of(target));
    let text = serde_json::to_string_pretty(&all).map_err(std::io::Error::other)?;
    hermes_protocol::private_fs::write_atomic(&path, text)
}

fn home_channel_of(target: &ChatTarget) -> HomeChannel {
    HomeChannel {
        chat_id: target.chat_id.clone(),
        thread_id: target.thread_id.clone(),
    }
}

/// The shared document holding the home channels of gateway replicas on PostgreSQL.
pub const HOME_CHANNELS_DOCUMENT: (&str, &str) = ("gateway", "home_channels");

/// Where the `/sethome` choices of a gateway live: the home's
/// `gateway/home_channels.json`, or — for replicas on PostgreSQL, so a `/sethome` made
/// through one replica is every replica's — a shared document of the store
/// ([`HOME_CHANNELS_DOCUMENT`], started from the home's file).
#[derive(Clone)]
pub struct HomeChannels {
    home: HermesHome,
    shared: Option<hermes_store::SessionStore>,
}

impl HomeChannels {
    /// The home channels of `home` on `store`: shared in it when it is PostgreSQL
    /// ([`HomeChannels::in_store`]), else the home's file.
    pub fn for_store(home: &HermesHome, store: &hermes_store::SessionStore) -> HomeChannels {
        if store.provider() == hermes_store::Provider::Postgresql {
            HomeChannels::in_store(home, store.clone())
        } else {
            HomeChannels::in_file(home)
        }
    }

    /// The home channels of `home` as a shared document of `store` (started from the home's
    /// file, which is left as it is).
    pub fn in_store(home: &HermesHome, store: hermes_store::SessionStore) -> HomeChannels {
        HomeChannels {
            home: home.clone(),
            shared: Some(store),
        }
    }

    /// The home channels of `home`'s file only.
    pub fn in_file(home: &HermesHome) -> HomeChannels {
        HomeChannels {
            home: home.clone(),
            shared: None,
        }
    }

    /// The home channels by platform (empty when none was set; a damaged entry reads as
    /// none, so the `<PLATFORM>_HOME_CHANNEL` setting applies).
    pub fn all(&self) -> BTreeMap<String, HomeChannel> {
        let Some(store) = &self.shared else {
            return home_channels(&self.home);
        };
        let (scope, name) = HOME_CHANNELS_DOCUMENT;
        match store.document(scope, name) {
            Ok(doc) => self.parse(doc.as_ref().map(|d| d.body.as_str())),
            Err(e) => {
                tracing::warn!(error = %e, "home channels unreadable in the store");
                BTreeMap::new()
            }
        }
    }

    /// The home channels in the shared document's text, or the home's file while there is
    /// no document.
    fn parse(&self, body: Option<&str>) -> BTreeMap<String, HomeChannel> {
        match body {
            Some(body) => serde_json::from_str(body).unwrap_or_default(),
            None => home_channels(&self.home),
        }
    }

    /// Records `target` as `platform`'s home channel.
    ///
    /// # Errors
    /// The file or the store could not be written.
    pub fn set(&self, platform: &str, target: &ChatTarget) -> std::io::Result<()> {
        let Some(store) = &self.shared else {
            return set_home_channel(&self.home, platform, target);
        };
        let (scope, name) = HOME_CHANNELS_DOCUMENT;
        store
            .update_document(scope, name, |current| {
                let mut all = self.parse(current);
                all.insert(platform.to_string(), home_channel_of(target));
                let body = serde_json::to_string(&all).map_err(|source| {
                    hermes_store::StoreError::Json {
                        what: "home channels",
                        source,
                    }
                })?;
                Ok::<_, hermes_store::StoreError>(((), Some(body)))
            })
            .map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PlatformAccess;

    #[test]
    fn status_table() {
        let mut config = GatewayConfig::default();
        config.access.insert(
            "telegram".into(),
            PlatformAccess {
                allowed_users: vec!["1".into(), "2".into()],
                allow_all: false,
            },
        );
        config.access.insert(
            "discord".into(),
            PlatformAccess {
                allowed_users: vec![],
                allow_all: true,
            },
        );
        let env: BTreeMap<String, String> = [("TELEGRAM_BOT_TOKEN", "x"), ("SLACK_BOT_TOKEN", "y")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let pairing = PairingOverview {
            pending: vec![(
                "slack".into(),
                crate::auth::pairing::PendingCode {
                    entry_id: "0011223344556677".into(),
                    shown: "a1b2c3d4".into(),
                    user_id: "U1".into(),
                    user_name: None,
                    created_at: 0,
                },
            )],
            approved: vec![],
        };
        let mut status = GatewayStatus::collect(&config, &env, &pairing, 7);
        assert!(status.platforms[0].credentials);
        assert!(!status.platforms[2].credentials, "slack needs both tokens");
        insta::assert_snapshot!(status.to_string());
        status.cron_scheduler = false;
        assert!(
            status
                .to_string()
                .ends_with("\ncron scheduler: off (cron.enabled: false)")
        );
    }

    #[test]
    fn home_channel_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path());
        let target = ChatTarget {
            chat_id: "42".into(),
            thread_id: None,
            reply_to: Some("9".into()),
        };
        set_home_channel(&home, "telegram", &target).unwrap();
        assert_eq!(home_channels(&home)["telegram"].chat_id, "42");

        // Replicas on one store: a `/sethome` through one handle is every handle's, started
        // from the home's file, which stays as it was.
        let db = dir.path().join("shared.db");
        let a = HomeChannels::in_store(&home, hermes_store::SessionStore::open(&db).unwrap());
        let b = HomeChannels::in_store(&home, hermes_store::SessionStore::open(&db).unwrap());
        assert_eq!(b.all()["telegram"].chat_id, "42", "from the file");
        let elsewhere = ChatTarget {
            chat_id: "77".into(),
            thread_id: Some("9".into()),
            reply_to: None,
        };
        a.set("discord", &elsewhere).unwrap();
        let seen = b.all();
        assert_eq!(seen["discord"].chat_id, "77");
        assert_eq!(seen["telegram"].chat_id, "42");
        assert!(
            !home_channels(&home).contains_key("discord"),
            "the file is not written"
        );
    }

    #[test]
    fn replicas_and_leaders_are_listed_with_their_leases() {
        let lease = |name: &str, holder: &str, expires_at: f64| Lease {
            session_id: name.into(),
            holder: holder.into(),
            token: 1,
            expires_at,
        };
        let mut status = GatewayStatus::collect(
            &GatewayConfig::default(),
            &BTreeMap::new(),
            &PairingOverview::default(),
            0,
        );
        assert!(
            !status.to_string().contains("replica"),
            "no replica lines without leases"
        );
        status.leases_read_at = 1000.0;
        status.replicas = vec![
            lease("replica:a:1:aa", "a:1:aa", 1012.0),
            lease("replica:b:2:bb", "b:2:bb", 990.0),
        ];
        status.leaders = vec![lease("leader:telegram", "a:1:aa", 1010.0)];
        let text = status.to_string();
        for line in [
            "\nreplicas: 1 running",
            "\n  replica a:1:aa: lease for 12 s more",
            "\n  replica b:2:bb: stopped (lease expired 10 s ago)",
            "\nleader of telegram: a:1:aa",
        ] {
            assert!(text.contains(line), "{line:?} missing in:\n{text}");
        }
    }
}
