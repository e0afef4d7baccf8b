//! The `clarify` tool's questions in the terminal (issue 4 item 8). In the REPL a question
//! travels like a dangerous-command approval: [`ReplClarifier`] sends it to the REPL loop,
//! which asks between streamed events with [`ask_on_terminal`]. `chat -q` on a terminal asks
//! directly ([`TerminalClarifier`]); without a terminal the tool stays headless and tells
//! the model to proceed on its own judgement.

use std::io::{BufRead, Write};

use hermes_tools::{Clarifier, ClarifyRequest};
use tokio::sync::{mpsc, oneshot};

/// A pending question for the REPL and where its answer goes (`None`: no answer).
pub type ClarifyQuestion = (ClarifyRequest, oneshot::Sender<Option<String>>);

/// Forwards each question to the REPL loop; no answer when the REPL is gone.
pub struct ReplClarifier {
    tx: mpsc::UnboundedSender<ClarifyQuestion>,
}

impl ReplClarifier {
    /// A clarifier and the receiving end the REPL reads questions from.
    pub fn new() -> (ReplClarifier, mpsc::UnboundedReceiver<ClarifyQuestion>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ReplClarifier { tx }, rx)
    }
}

#[async_trait::async_trait]
impl Clarifier for ReplClarifier {
    async fn ask(&self, request: &ClarifyRequest) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        self.tx.send((request.clone(), tx)).ok()?;
        rx.await.ok().flatten()
    }
}

/// Asks on the process's own terminal (stderr, stdin), one question at a time; for `chat -q`
/// run on a terminal.
pub struct TerminalClarifier {
    lock: tokio::sync::Mutex<()>,
}

impl TerminalClarifier {
    /// One clarifier.
    pub fn new() -> TerminalClarifier {
        TerminalClarifier {
            lock: tokio::sync::Mutex::new(()),
        }
    }
}

#[async_trait::async_trait]
impl Clarifier for TerminalClarifier {
    async fn ask(&self, request: &ClarifyRequest) -> Option<String> {
        let _one_at_a_time = self.lock.lock().await;
        ask_on_terminal(request).0
    }
}

/// Asks `request` on stderr/stdin (blocking this worker thread while the user types): the
/// answer, and whether Ctrl-C was pressed instead (then there is none, and the caller stops
/// the turn).
pub fn ask_on_terminal(request: &ClarifyRequest) -> (Option<String>, bool) {
    let mut input = crate::repl::typeahead::TerminalAnswers::default();
    let answer = ask(request, &mut input, &mut std::io::stderr());
    if input.interrupted() {
        eprintln!();
        return (None, true);
    }
    (answer, false)
}

/// Shows the question (and numbered choices) on `out` and reads one line from `input`.
/// A number `1`..=n picks that choice; other text is the answer as typed; an empty line or
/// closed input is no answer (`None`).
pub fn ask(
    request: &ClarifyRequest,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Option<String> {
    // The model wrote these: control characters are shown, not obeyed, so a question cannot
    // move the cursor, retitle the window (OSC) or redraw what the user answers to.
    use crate::render::style::visible_controls;
    let _ = writeln!(out, "\n? {}", visible_controls(&request.question, "  "));
    for (i, choice) in request.choices.iter().enumerate() {
        let _ = writeln!(out, "  {}. {}", i + 1, visible_controls(choice, "     "));
    }
    let hint = if request.choices.is_empty() {
        "answer (empty to skip): ".to_string()
    } else {
        format!(
            "answer: a number 1-{} or your own words (empty to skip): ",
            request.choices.len()
        )
    };
    let _ = write!(out, "{hint}");
    let _ = out.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => return None,
        Ok(_) => {}
    }
    let answer = line.trim();
    if answer.is_empty() {
        return None;
    }
    if let Ok(n) = answer.parse::<usize>()
        && (1..=request.choices.len()).contains(&n)
    {
        return Some(request.choices[n - 1].clone());
    }
    Some(answer.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn req(choices: &[&str]) -> ClarifyRequest {
        ClarifyRequest {
            question: "Which database?".to_string(),
            choices: choices.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn run(request: &ClarifyRequest, typed: &str) -> (Option<String>, String) {
        let mut out = Vec::new();
        let answer = ask(request, &mut typed.as_bytes(), &mut out);
        (answer, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_number_picks_a_choice_and_text_is_kept() {
        let r = req(&["SQLite", "Postgres"]);
        let (a, shown) = run(&r, "2\n");
        assert_eq!(a.as_deref(), Some("Postgres"));
        assert!(shown.contains("? Which database?"));
        assert!(shown.contains("  1. SQLite\n  2. Postgres"));
        assert_eq!(
            run(&r, "whatever is simplest\n").0.as_deref(),
            Some("whatever is simplest")
        );
        assert_eq!(
            run(&r, "7\n").0.as_deref(),
            Some("7"),
            "out of range: free text"
        );
    }

    #[test]
    fn escape_sequences_from_the_model_are_shown_not_obeyed() {
        let r = ClarifyRequest {
            question: "Proceed?\x1b]0;pwned\x07\r\x1b[2KAll good".to_string(),
            choices: vec!["yes\x1b[1A".to_string()],
        };
        let (_, shown) = run(&r, "1\n");
        assert!(
            !shown.contains('\x1b') && !shown.contains('\r'),
            "{shown:?}"
        );
        assert!(
            shown.contains("? Proceed?^[]0;pwned^G^M^[[2KAll good"),
            "{shown:?}"
        );
        assert!(shown.contains("  1. yes^[[1A"), "{shown:?}");
    }

    #[test]
    fn empty_or_closed_input_is_no_answer() {
        assert_eq!(run(&req(&[]), "\n").0, None);
        assert_eq!(run(&req(&[]), "").0, None);
    }

    #[tokio::test]
    async fn repl_clarifier_round_trip_and_gone_repl() {
        let (c, mut rx) = ReplClarifier::new();
        let asker = tokio::spawn(async move { c.ask(&req(&["a"])).await });
        let (q, answer) = rx.recv().await.unwrap();
        assert_eq!(q.choices, vec!["a"]);
        answer.send(Some("a".to_string())).unwrap();
        assert_eq!(asker.await.unwrap().as_deref(), Some("a"));

        let (c, rx) = ReplClarifier::new();
        drop(rx);
        assert_eq!(c.ask(&req(&[])).await, None);
    }
}
