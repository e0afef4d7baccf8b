//! The 24-hour customer service window (Meta for Developers, "Conversations / customer
//! service windows"): a business may send free-form messages to a user only within 24 hours
//! of that user's last message; outside it only approved template messages go through, and
//! a free-form one fails with error 131047. The time of each user's last message is kept in
//! `HERMES_HOME/gateway/whatsapp_windows.json` ([`StampFile`]), so a restart keeps knowing
//! whose window is open. A user with no record is tried (Meta decides); a window Meta
//! reported closed is recorded as closed until the user writes again.

use crate::platforms::state::StampFile;

/// Length of the window, in seconds.
pub const WINDOW_S: i64 = 24 * 60 * 60;

/// Last inbound times by `wa_id`.
#[derive(Debug, Clone)]
pub(crate) struct Windows {
    stamps: StampFile,
}

/// Why a free-form message cannot go out now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closed {
    /// The user's last message (Unix seconds); `None` when Meta reported the window closed.
    pub(crate) last_inbound: Option<i64>,
}

impl Closed {
    /// The sentence for the log and the error.
    pub(crate) fn describe(&self, user: &str) -> String {
        let when = match self.last_inbound {
            Some(t) => chrono::DateTime::from_timestamp(t, 0)
                .map(|d| {
                    format!(
                        "their last message was at {}",
                        d.format("%Y-%m-%d %H:%M UTC")
                    )
                })
                .unwrap_or_else(|| "their last message is too old".into()),
            None => "Meta reported the window closed (error 131047)".into(),
        };
        format!(
            "the 24-hour customer service window with {user} is closed ({when}); WhatsApp \
             delivers only approved template messages outside it, so the message was not sent \
             — it goes through once {user} writes again"
        )
    }
}

impl Windows {
    /// The windows kept in `stamps`.
    pub(crate) fn new(stamps: StampFile) -> Windows {
        Windows { stamps }
    }

    /// Records a message from `user` sent at `at` (Unix seconds). Never moves backwards.
    pub(crate) async fn opened(&self, user: &str, at: i64) {
        if self.stamps.get(user).is_some_and(|t| t >= at) {
            return;
        }
        if let Err(e) = self.stamps.set(user, Some(at)).await {
            tracing::warn!(platform = super::PLATFORM, error = %e, "could not save the 24-hour window state");
        }
    }

    /// Records Meta's word that `user`'s window is closed.
    pub(crate) async fn closed(&self, user: &str) {
        if let Err(e) = self.stamps.set(user, Some(0)).await {
            tracing::warn!(platform = super::PLATFORM, error = %e, "could not save the 24-hour window state");
        }
    }

    /// `Err` when `user`'s window is known to be closed at `now`.
    pub(crate) fn check(&self, user: &str, now: i64) -> Result<(), Closed> {
        match self.stamps.get(user) {
            Some(0) => Err(Closed { last_inbound: None }),
            Some(t) if now - t >= WINDOW_S => Err(Closed {
                last_inbound: Some(t),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_window_closes_after_24_hours_and_reopens_with_a_message() {
        let w = Windows::new(StampFile::load(None, "test"));
        assert!(w.check("1", 1_000_000).is_ok(), "unknown users are tried");
        w.opened("1", 1_000_000).await;
        assert!(w.check("1", 1_000_000 + WINDOW_S - 1).is_ok());
        let closed = w.check("1", 1_000_000 + WINDOW_S).unwrap_err();
        assert!(
            closed.describe("1").contains("24-hour"),
            "{}",
            closed.describe("1")
        );
        w.opened("1", 999_000).await;
        assert!(
            w.check("1", 1_000_000 + WINDOW_S).is_err(),
            "never backwards"
        );
        w.closed("1").await;
        assert_eq!(w.check("1", 1_000_001), Err(Closed { last_inbound: None }));
        w.opened("1", 1_000_002).await;
        assert!(w.check("1", 1_000_003).is_ok());
    }
}
