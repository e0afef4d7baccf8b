//! Opt-out keywords (Twilio, "Twilio support for opt-out keywords (SMS STOP filtering)").
//!
//! Twilio handles them on its side — it answers the sender itself, and after an opt-out it
//! refuses every message to that number with error 21610 until the number opts back in —
//! and still passes the message on to the webhook. A message that is exactly one keyword
//! (case and surrounding blanks ignored; "STOP PLEASE" is no keyword, as on Twilio's side):
//! - `STOP`, `STOPALL`, `UNSUBSCRIBE`, `CANCEL`, `END`, `QUIT` opt the number out;
//! - `START`, `UNSTOP` — and `YES` from a number that is opted out — opt it back in;
//! - `HELP`, `INFO` get Twilio's help text.
//!
//! None of them runs a turn. The opted-out numbers are kept in
//! `HERMES_HOME/gateway/sms_opt_outs.json`, so nothing is sent to them after a restart
//! either; a 21610 answer records the number too. With Advanced Opt-Out (Messaging
//! Services) Twilio names the keyword's kind in `OptOutType`, which is followed instead.

use crate::platforms::state::StampFile;

/// What an inbound message means for opt-out handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    /// The number opts out.
    Stop,
    /// The number opts back in.
    Start,
    /// A request for Twilio's help text.
    Help,
}

const STOP: [&str; 6] = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"];
const START: [&str; 2] = ["START", "UNSTOP"];
const HELP: [&str; 2] = ["HELP", "INFO"];

/// The keyword `body` is, given Twilio's `OptOutType` (when sent) and whether the sender is
/// opted out now.
pub fn classify(body: &str, opt_out_type: Option<&str>, opted_out: bool) -> Option<Keyword> {
    match opt_out_type
        .map(|t| t.trim().to_ascii_uppercase())
        .as_deref()
    {
        Some("STOP") => return Some(Keyword::Stop),
        Some("START") => return Some(Keyword::Start),
        Some("HELP") => return Some(Keyword::Help),
        _ => {}
    }
    let word = body.trim().to_ascii_uppercase();
    if STOP.contains(&word.as_str()) {
        Some(Keyword::Stop)
    } else if START.contains(&word.as_str()) || (opted_out && word == "YES") {
        Some(Keyword::Start)
    } else if HELP.contains(&word.as_str()) {
        Some(Keyword::Help)
    } else {
        None
    }
}

/// The opted-out numbers (E.164 → Unix seconds of the opt-out). Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct OptOuts {
    stamps: StampFile,
}

impl OptOuts {
    /// The set kept in `stamps`.
    pub(crate) fn new(stamps: StampFile) -> OptOuts {
        OptOuts { stamps }
    }

    /// True when `number` is opted out.
    pub(crate) fn contains(&self, number: &str) -> bool {
        self.stamps.get(number).is_some()
    }

    /// Records `number` as opted out (`true`) or back in (`false`); a failed write is
    /// logged (the set in memory has the change).
    pub(crate) async fn set(&self, number: &str, out: bool) {
        let value = out.then(|| chrono::Utc::now().timestamp());
        if out && self.contains(number) {
            return;
        }
        if let Err(e) = self.stamps.set(number, value).await {
            tracing::error!(platform = super::PLATFORM, error = %e, "could not save the SMS opt-out list");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_single_keyword_counts() {
        assert_eq!(classify(" stop ", None, false), Some(Keyword::Stop));
        assert_eq!(classify("Quit", None, false), Some(Keyword::Stop));
        assert_eq!(classify("STOP PLEASE", None, false), None);
        assert_eq!(classify("unstop", None, true), Some(Keyword::Start));
        assert_eq!(classify("help", None, false), Some(Keyword::Help));
        // "yes" is an answer, unless the number is opted out.
        assert_eq!(classify("yes", None, false), None);
        assert_eq!(classify("YES", None, true), Some(Keyword::Start));
        // Advanced Opt-Out names the kind of a custom keyword.
        assert_eq!(classify("arret", Some("STOP"), false), Some(Keyword::Stop));
        assert_eq!(classify("what's up", None, false), None);
    }
}
