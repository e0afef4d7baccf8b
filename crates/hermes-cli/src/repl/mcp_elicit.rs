//! MCP elicitation in the terminal (FEATURES §11; MCP 2025-11-25 "Client Features →
//! Elicitation"): a server's question is put to the user. In the REPL it travels like a
//! dangerous-command approval — [`ReplElicitor`] sends it to the REPL loop, which asks with
//! [`ask`] between streamed events; `chat -q` on a terminal asks directly
//! ([`TerminalElicitor`]). Without a terminal (and in cron and the gateway) no elicitor is
//! given and hermes-mcp declines.

use std::io::{BufRead, Write};

use hermes_mcp::elicitation::{
    ElicitationAnswer, ElicitationRequest, Elicitor, Field, FieldKind, fields, parse_value,
};
use serde_json::Map;
use tokio::sync::{mpsc, oneshot};

/// A pending question for the REPL and where its answer goes.
pub type ElicitQuestion = (ElicitationRequest, oneshot::Sender<ElicitationAnswer>);

/// Forwards each request to the REPL loop; cancels when the REPL is gone.
pub struct ReplElicitor {
    tx: mpsc::UnboundedSender<ElicitQuestion>,
}

impl ReplElicitor {
    /// An elicitor and the receiving end the REPL reads questions from.
    pub fn new() -> (ReplElicitor, mpsc::UnboundedReceiver<ElicitQuestion>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ReplElicitor { tx }, rx)
    }
}

#[async_trait::async_trait]
impl Elicitor for ReplElicitor {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let (tx, rx) = oneshot::channel();
        if self.tx.send((request, tx)).is_err() {
            return ElicitationAnswer::Cancel;
        }
        rx.await.unwrap_or(ElicitationAnswer::Cancel)
    }
}

/// Asks on the process's own terminal (stderr, stdin); for `chat -q` run on a terminal.
pub struct TerminalElicitor {
    lock: tokio::sync::Mutex<()>,
}

impl TerminalElicitor {
    /// One elicitor; questions are asked one at a time.
    pub fn new() -> TerminalElicitor {
        TerminalElicitor {
            lock: tokio::sync::Mutex::new(()),
        }
    }
}

#[async_trait::async_trait]
impl Elicitor for TerminalElicitor {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let _one_at_a_time = self.lock.lock().await;
        ask_on_terminal(&request).0
    }
}

/// Asks `request` on stderr/stdin (blocking this worker thread while the user types): the
/// answer, and whether Ctrl-C was pressed (then the answer is [`ElicitationAnswer::Cancel`]
/// and the caller stops the turn).
pub fn ask_on_terminal(request: &ElicitationRequest) -> (ElicitationAnswer, bool) {
    let mut input = crate::repl::typeahead::TerminalAnswers::default();
    let answer = ask(request, &mut input, &mut std::io::stderr());
    if input.interrupted() {
        eprintln!();
        return (ElicitationAnswer::Cancel, true);
    }
    (answer, false)
}

/// How many times a field is asked again after an answer that does not fit.
const TRIES: usize = 3;

fn read_line(input: &mut dyn BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
    }
}

fn hint(field: &Field) -> String {
    let kind = match &field.kind {
        FieldKind::Text => String::new(),
        FieldKind::Integer => " (whole number)".to_string(),
        FieldKind::Number => " (number)".to_string(),
        FieldKind::Boolean => " (yes/no)".to_string(),
        FieldKind::Choice(options) => {
            let listed: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}={o}", i + 1))
                .collect();
            format!(" ({})", listed.join(", "))
        }
    };
    let default = match &field.default {
        Some(serde_json::Value::String(s)) => format!(" [{s}]"),
        Some(v) => format!(" [{v}]"),
        None if field.required => " (required)".to_string(),
        None => " (Enter skips)".to_string(),
    };
    format!("{kind}{default}")
}

/// Puts `request` to the user through `input`/`out` and returns the answer: first whether
/// to answer at all (`y` answers, `n` declines, `c` or end of input cancels), then each
/// field (Enter keeps the default or skips an optional field; a value that does not fit is
/// asked again, at most three times, then the request is cancelled).
pub fn ask(
    request: &ElicitationRequest,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> ElicitationAnswer {
    let _ = writeln!(
        out,
        "\n? MCP server `{}` asks: {}",
        request.server, request.message
    );
    if let Some(url) = &request.url {
        let _ = writeln!(out, "    open: {url}");
        let _ = write!(out, "done? [y]es / [n]o, decline / [c]ancel: ");
    } else {
        let _ = write!(out, "answer? [y]es / [n]o, decline / [c]ancel: ");
    }
    let _ = out.flush();
    match read_line(input).map(|l| l.trim().to_lowercase()) {
        Some(a) if a == "y" || a == "yes" => {}
        Some(a) if a == "n" || a == "no" => return ElicitationAnswer::Decline,
        _ => return ElicitationAnswer::Cancel,
    }
    let mut content = Map::new();
    if request.url.is_some() {
        return ElicitationAnswer::Accept(content);
    }
    for field in fields(&request.schema) {
        let mut value = None;
        for _ in 0..TRIES {
            let about = if field.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", field.description)
            };
            let _ = write!(out, "  {}{about}{}: ", field.label, hint(&field));
            let _ = out.flush();
            let Some(line) = read_line(input) else {
                return ElicitationAnswer::Cancel;
            };
            if line.trim().is_empty() {
                match (&field.default, field.required) {
                    (Some(d), _) => {
                        value = Some(Some(d.clone()));
                        break;
                    }
                    (None, false) => {
                        value = Some(None);
                        break;
                    }
                    (None, true) => {
                        let _ = writeln!(out, "    {} is required", field.label);
                        continue;
                    }
                }
            }
            match parse_value(&field, &line) {
                Ok(v) => {
                    value = Some(Some(v));
                    break;
                }
                Err(e) => {
                    let _ = writeln!(out, "    {e}");
                }
            }
        }
        match value {
            Some(Some(v)) => {
                content.insert(field.name.clone(), v);
            }
            Some(None) => {}
            None => {
                let _ = writeln!(out, "    no usable answer; the request is cancelled");
                return ElicitationAnswer::Cancel;
            }
        }
    }
    ElicitationAnswer::Accept(content)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ElicitationRequest {
        ElicitationRequest {
            server: "crm".into(),
            message: "Who should get the invoice?".into(),
            schema: json!({"type": "object", "properties": {
                "name": {"type": "string", "title": "Name"},
                "copies": {"type": "integer", "default": 1},
                "urgent": {"type": "boolean"},
                "channel": {"type": "string", "enum": ["email", "post"]}
            }, "required": ["name"]}),
            url: None,
        }
    }

    fn run(typed: &str) -> (ElicitationAnswer, String) {
        let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
        let mut out = Vec::new();
        let answer = ask(&request(), &mut input, &mut out);
        (answer, String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_user_fills_the_form() {
        // Fields: name (required) first, then channel, copies, urgent by name.
        let (answer, shown) = run("y\n\nAda\n2\n\nmaybe\nyes\n");
        let ElicitationAnswer::Accept(content) = answer else {
            panic!("{answer:?}")
        };
        assert_eq!(
            serde_json::Value::Object(content),
            json!({"name": "Ada", "channel": "post", "copies": 1, "urgent": true})
        );
        assert!(
            shown.contains("MCP server `crm` asks: Who should get the invoice?"),
            "{shown}"
        );
        assert!(shown.contains("Name is required"), "{shown}");
        assert!(shown.contains("channel (1=email, 2=post)"), "{shown}");
        assert!(shown.contains("copies (whole number) [1]"), "{shown}");
        assert!(shown.contains("answer yes or no"), "{shown}");
    }

    #[test]
    fn no_declines_and_end_of_input_cancels() {
        assert_eq!(run("n\n").0, ElicitationAnswer::Decline);
        assert_eq!(run("").0, ElicitationAnswer::Cancel);
        assert_eq!(run("y\nAda\n").0, ElicitationAnswer::Cancel);
        assert_eq!(run("y\n\n\n\n").0, ElicitationAnswer::Cancel);
    }
}
