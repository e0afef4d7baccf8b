//! The stdio transport of `hermes acp`: newline-delimited JSON-RPC messages on the process's
//! stdin and stdout (ACP's stdio transport), handed to the SDK as lines
//! ([`agent_client_protocol::Lines`]).
//!
//! Ours rather than the SDK's `Stdio` for two reasons: it runs on tokio's stdio (no extra
//! thread pool), and every incoming line is capped at [`MAX_LINE_BYTES`]: a longer one is
//! passed over without being held in memory and answered with a JSON-RPC `-32600` error
//! (the request's id when its start names one, else `null`); the connection goes on. An
//! over-long *response* (the client's answer to one of hermes' requests) fails that request
//! instead, so whatever waits on it ends. Outgoing
//! lines go through one writer task, so the SDK's messages and these errors never interleave.

use std::io;

use futures::{Sink, Stream};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Largest incoming message, in bytes (embedded resources travel inside one `session/prompt`
/// line, so this bounds an attachment too).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The two halves for [`agent_client_protocol::Lines::new`], and the writer task: await it
/// after the connection ends so every queued line reaches stdout.
pub struct StdioLines<O, I> {
    /// Outgoing lines (without the newline).
    pub outgoing: O,
    /// Incoming lines.
    pub incoming: I,
    /// Ends once every sender is dropped and the queue is written.
    pub writer: JoinHandle<()>,
}

/// The transport on this process's stdin and stdout.
pub fn stdio() -> StdioLines<
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
> {
    lines(tokio::io::stdin(), tokio::io::stdout())
}

/// The transport on any reader and writer (tests use pipes).
pub fn lines<R, W>(
    input: R,
    output: W,
) -> StdioLines<
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::channel::<String>(256);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = out_rx.recv().await {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
                tracing::info!("acp: stdout closed; the client is gone");
                break;
            }
        }
    });
    let (in_tx, in_rx) = mpsc::channel::<io::Result<String>>(64);
    let errors = out_tx.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::with_capacity(64 * 1024, input);
        loop {
            match read_capped_line(&mut reader, MAX_LINE_BYTES).await {
                Ok(None) => break,
                Ok(Some(Line::Whole(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    if text.trim().is_empty() {
                        continue;
                    }
                    if in_tx.send(Ok(text)).await.is_err() {
                        break;
                    }
                }
                Ok(Some(Line::TooLong { head })) => {
                    tracing::warn!(
                        limit = MAX_LINE_BYTES,
                        "acp: an incoming message over the size limit was refused"
                    );
                    if is_response(&head) {
                        // The client's answer to one of hermes' requests (a giant
                        // `fs/read_text_file`): that request fails, so the tool call waiting
                        // on it ends instead of waiting forever.
                        let failed = json!({
                            "jsonrpc": "2.0",
                            "id": request_id(&head),
                            "error": {
                                "code": -32600,
                                "message": format!(
                                    "the answer is too large: over {MAX_LINE_BYTES} bytes"
                                ),
                            },
                        });
                        if in_tx.send(Ok(failed.to_string())).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    let reply = json!({
                        "jsonrpc": "2.0",
                        "id": request_id(&head),
                        "error": {
                            "code": -32600,
                            "message": format!(
                                "message too large: over {MAX_LINE_BYTES} bytes (attachments \
                                 travel inside the message; send a resource link instead)"
                            ),
                        },
                    });
                    if errors.send(reply.to_string()).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = in_tx.send(Err(e)).await;
                    break;
                }
            }
        }
    });
    let outgoing = futures::sink::unfold(out_tx, |tx, line: String| async move {
        tx.send(line)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout writer ended"))?;
        Ok::<_, io::Error>(tx)
    });
    let incoming = futures::stream::unfold(in_rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    StdioLines {
        outgoing,
        incoming,
        writer,
    }
}

/// One line read by [`read_capped_line`].
enum Line {
    /// The line, without its newline.
    Whole(Vec<u8>),
    /// Over the cap: its first bytes (to find the request id); the rest was passed over.
    TooLong { head: Vec<u8> },
}

/// Bytes of an over-long line kept to look for its `"id"`.
const HEAD_BYTES: usize = 4096;

/// Reads up to the next `\n`, holding at most `cap` bytes; `None` at the end of input.
async fn read_capped_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !seen_any {
                return Ok(None);
            }
            break;
        }
        seen_any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > cap {
                too_long = true;
                let keep = HEAD_BYTES.saturating_sub(line.len()).min(chunk.len());
                line.extend_from_slice(&chunk[..keep]);
                line.truncate(HEAD_BYTES);
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            break;
        }
    }
    if line.last() == Some(&b'\r') && !too_long {
        line.pop();
    }
    Ok(Some(if too_long {
        Line::TooLong { head: line }
    } else {
        Line::Whole(line)
    }))
}

/// Whether the message whose line starts with `head` is a response (a `"result"` or an
/// `"error"` member before any `"method"`), not a request or notification.
fn is_response(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let at = |key: &str| text.find(key).unwrap_or(usize::MAX);
    let answer = at("\"result\"").min(at("\"error\""));
    answer != usize::MAX && answer < at("\"method\"")
}

/// The `"id"` of a request whose line starts with `head`, when it comes before the payload
/// (as every client writes it): a number or a string; else `null`.
fn request_id(head: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(head);
    let Some(at) = text.find("\"id\"") else {
        return serde_json::Value::Null;
    };
    let rest = text[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return serde_json::Value::Null;
    };
    let rest = rest.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        return match s.find('"') {
            Some(end) => serde_json::Value::String(s[..end].to_string()),
            None => serde_json::Value::Null,
        };
    }
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits
        .parse::<i64>()
        .map(serde_json::Value::from)
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn lines_over_the_cap_are_passed_over_whole() {
        let long = format!("{{\"id\":7,\"x\":\"{}\"}}", "a".repeat(100));
        let input = format!("short\n{long}\nnext\r\nlast");
        let mut reader = BufReader::with_capacity(8, input.as_bytes());
        let mut got = Vec::new();
        while let Some(line) = read_capped_line(&mut reader, 50).await.unwrap() {
            got.push(match line {
                Line::Whole(b) => String::from_utf8(b).unwrap(),
                Line::TooLong { head } => format!("too long, id {}", request_id(&head)),
            });
        }
        assert_eq!(got, vec!["short", "too long, id 7", "next", "last"]);
    }

    #[test]
    fn request_ids_are_found_at_the_start() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id": "a-1","#),
            json!("a-1")
        );
        assert_eq!(request_id(br#"{"id":-3,"#), json!(-3));
        assert_eq!(request_id(br#"{"method":"x","params":{"#), json!(null));
    }

    #[test]
    fn responses_are_told_from_requests() {
        assert!(is_response(
            br#"{"jsonrpc":"2.0","id":"a","result":{"content":"#
        ));
        assert!(is_response(br#"{"id":3,"error":{"code":1,"#));
        assert!(!is_response(
            br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","#
        ));
        assert!(!is_response(
            br#"{"id":1,"method":"session/prompt","params":{"result":"#
        ));
    }
}
