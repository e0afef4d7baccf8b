//! Authorization (FEATURES §1 Gateway): deny by default. A message reaches an agent only when
//! its sender's stable user id is allowed — by `<PLATFORM>_ALLOW_ALL_USERS` /
//! `GATEWAY_ALLOW_ALL_USERS`, by the platform allowlist, or by an approved pairing. Display
//! names are never compared (case C36).

pub mod pairing;
mod pairing_files;

use crate::config::{GatewayConfig, UnauthorizedDm};
use crate::platform::{ChatType, MessageSource};

pub use pairing::{CodeRequest, PairingError, PairingStore};

const PAIRING_REPLY: &str = include_str!("../../prompts/pairing_reply.md");
const PAIRING_BUSY: &str = include_str!("../../prompts/pairing_busy.md");

/// What to do with an inbound message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The sender may talk to the agent.
    Allow,
    /// Drop it without a reply (strangers in groups, strangers where an allowlist exists,
    /// `unauthorized_dm_behavior: ignore`, rate-limited pairing requests).
    Ignore,
    /// Drop it and send this text (a pairing code, or "try again later" when no code can be
    /// issued now) to the sender's DM.
    Reply(String),
}

/// Decides who may reach an agent.
#[derive(Debug, Clone)]
pub struct Authorizer {
    config: GatewayConfig,
    pairing: PairingStore,
}

impl Authorizer {
    /// An authorizer over the access rules of `config` and the pairing files of `pairing`.
    pub fn new(config: GatewayConfig, pairing: PairingStore) -> Authorizer {
        Authorizer { config, pairing }
    }

    /// The pairing store.
    pub fn pairing(&self) -> &PairingStore {
        &self.pairing
    }

    /// Whether `src`'s sender is allowed, without side effects.
    pub fn is_allowed(&self, src: &MessageSource) -> bool {
        let Some(user) = src.user_id.as_deref().filter(|u| !u.is_empty()) else {
            return false;
        };
        // Home Assistant's state changes are system-generated (its adapter is their only
        // source, over a websocket authenticated with HASS_TOKEN): let through as Python
        // Hermes does (gateway/authz_mixin.py).
        #[cfg(feature = "homeassistant")]
        if src.platform == crate::platforms::homeassistant::PLATFORM
            && user == crate::platforms::homeassistant::SYSTEM_USER
        {
            return true;
        }
        let access = self.config.access(&src.platform);
        if access.allow_all || access.allowed_users.iter().any(|a| a == user) {
            return true;
        }
        match self.pairing.is_approved(&src.platform, user) {
            Ok(approved) => approved,
            Err(e) => {
                tracing::warn!(error = %e, "pairing state unreadable; treating sender as unknown");
                false
            }
        }
    }

    /// Decides for one message at unix time `now`; may issue a pairing code (a write to the
    /// pairing files).
    pub fn decide(&self, src: &MessageSource, now: u64) -> Decision {
        if self.is_allowed(src) {
            return Decision::Allow;
        }
        let access = self.config.access(&src.platform);
        let Some(user) = src.user_id.as_deref().filter(|u| !u.is_empty()) else {
            return Decision::Ignore;
        };
        if src.chat_type != ChatType::Dm
            || !access.allowed_users.is_empty()
            || self.config.unauthorized_dm == UnauthorizedDm::Ignore
        {
            tracing::info!(platform = %src.platform, user, "message from an unauthorized user ignored");
            return Decision::Ignore;
        }
        match self
            .pairing
            .request_code(&src.platform, user, src.user_name.as_deref(), now)
        {
            Ok(CodeRequest::Issued(code)) => Decision::Reply(
                PAIRING_REPLY
                    .trim()
                    .replace("{code}", &code)
                    .replace("{platform}", &src.platform),
            ),
            Ok(CodeRequest::RateLimited) => {
                tracing::info!(platform = %src.platform, user, "pairing request rate-limited");
                Decision::Ignore
            }
            Ok(other) => {
                // As Python's gateway: told once to try later (the refusal counts toward the
                // user's rate limit, so the next messages get no answer).
                tracing::info!(platform = %src.platform, user, ?other, "no pairing code issued");
                Decision::Reply(PAIRING_BUSY.trim().to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not issue a pairing code");
                Decision::Ignore
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PlatformAccess;

    fn src(platform: &str, chat_type: ChatType, user: &str, name: &str) -> MessageSource {
        MessageSource {
            platform: platform.into(),
            chat_type,
            chat_id: Some("c".into()),
            thread_id: None,
            user_id: Some(user.into()),
            user_name: Some(name.into()),
        }
    }

    fn authorizer(access: &[(&str, PlatformAccess)]) -> (tempfile::TempDir, Authorizer) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = GatewayConfig::default();
        for (p, a) in access {
            config.access.insert(p.to_string(), a.clone());
        }
        let a = Authorizer::new(config, PairingStore::new(dir.path().join("pairing")));
        (dir, a)
    }

    #[test]
    fn display_names_never_match_the_allowlist() {
        let (_d, a) = authorizer(&[(
            "simplex",
            PlatformAccess {
                allowed_users: vec!["12".into()],
                allow_all: false,
            },
        )]);
        assert_eq!(
            a.decide(&src("simplex", ChatType::Dm, "12", "alice"), 0),
            Decision::Allow
        );
        let impostor = src("simplex", ChatType::Dm, "77", "alice");
        assert_eq!(a.decide(&impostor, 0), Decision::Ignore);
        let named_like_id = src("simplex", ChatType::Dm, "77", "12");
        assert_eq!(a.decide(&named_like_id, 0), Decision::Ignore);
    }

    #[test]
    fn strangers_in_groups_are_ignored_and_dms_get_a_code() {
        let (_d, a) = authorizer(&[]);
        assert_eq!(
            a.decide(&src("telegram", ChatType::Group, "5", "x"), 0),
            Decision::Ignore
        );
        let Decision::Reply(text) = a.decide(&src("telegram", ChatType::Dm, "5", "x"), 0) else {
            panic!("expected a pairing reply");
        };
        let code = text
            .split_whitespace()
            .find(|w| w.len() == 8 && w.bytes().all(|b| pairing::CODE_ALPHABET.contains(&b)))
            .unwrap()
            .to_string();
        assert!(text.contains("hermes pairing approve telegram"), "{text}");
        a.pairing().approve("telegram", &code, 1).unwrap();
        assert_eq!(
            a.decide(&src("telegram", ChatType::Group, "5", "x"), 2),
            Decision::Allow
        );
    }

    #[test]
    fn allow_all_and_missing_user_ids() {
        let (_d, a) = authorizer(&[(
            "discord",
            PlatformAccess {
                allowed_users: vec![],
                allow_all: true,
            },
        )]);
        assert_eq!(
            a.decide(&src("discord", ChatType::Group, "1", "x"), 0),
            Decision::Allow
        );
        let mut anon = src("discord", ChatType::Dm, "1", "x");
        anon.user_id = None;
        assert_eq!(a.decide(&anon, 0), Decision::Ignore);
    }
}
