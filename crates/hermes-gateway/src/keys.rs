//! Session keys: which conversation a platform message belongs to (FEATURES §1 Gateway,
//! `../shared/vectors/session_keys.json`).

use crate::platform::{ChatType, MessageSource};

/// The settings that shape a session key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyOptions {
    /// Profile namespace (`main` unless `-p/--profile NAME`).
    pub profile: String,
    /// `group_sessions_per_user` (default true): in groups and channels each user gets their
    /// own session.
    pub group_sessions_per_user: bool,
    /// `thread_sessions_per_user` (default false): inside a thread, each user still gets
    /// their own session (otherwise a thread is one shared session).
    pub thread_sessions_per_user: bool,
}

impl Default for KeyOptions {
    fn default() -> Self {
        KeyOptions {
            profile: "main".to_string(),
            group_sessions_per_user: true,
            thread_sessions_per_user: false,
        }
    }
}

/// The session key of a message:
/// `agent:<profile>:<platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>]`.
///
/// Rules (FEATURES §1 Gateway): a DM never appends the user; a DM without a chat id falls
/// back to the user id, then to the bare `…:dm`. In groups and channels the user id is
/// appended when `group_sessions_per_user` is set and either there is no thread or
/// `thread_sessions_per_user` is set.
pub fn session_key(src: &MessageSource, opts: &KeyOptions) -> String {
    let mut key = format!(
        "agent:{}:{}:{}",
        opts.profile,
        src.platform,
        src.chat_type.as_str()
    );
    let mut push = |part: &str| {
        key.push(':');
        key.push_str(part);
    };
    match src.chat_type {
        ChatType::Dm => {
            if let Some(chat) = src.chat_id.as_deref().or(src.user_id.as_deref()) {
                push(chat);
            }
            if let Some(thread) = &src.thread_id {
                push(thread);
            }
        }
        ChatType::Group | ChatType::Channel => {
            if let Some(chat) = &src.chat_id {
                push(chat);
            }
            if let Some(thread) = &src.thread_id {
                push(thread);
            }
            let per_user = opts.group_sessions_per_user
                && (src.thread_id.is_none() || opts.thread_sessions_per_user);
            if per_user && let Some(user) = &src.user_id {
                push(user);
            }
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(chat_type: ChatType, chat: Option<&str>, user: Option<&str>) -> MessageSource {
        MessageSource {
            platform: "telegram".into(),
            chat_type,
            chat_id: chat.map(String::from),
            thread_id: None,
            user_id: user.map(String::from),
            user_name: None,
        }
    }

    #[test]
    fn dm_without_chat_id_falls_back_to_the_user_id() {
        let k = session_key(&src(ChatType::Dm, None, Some("u7")), &KeyOptions::default());
        assert_eq!(k, "agent:main:telegram:dm:u7");
    }

    #[test]
    fn thread_sessions_per_user_appends_the_user_inside_threads() {
        let mut s = src(ChatType::Group, Some("g"), Some("u"));
        s.thread_id = Some("t".into());
        let opts = KeyOptions {
            thread_sessions_per_user: true,
            ..KeyOptions::default()
        };
        assert_eq!(session_key(&s, &opts), "agent:main:telegram:group:g:t:u");
    }
}
