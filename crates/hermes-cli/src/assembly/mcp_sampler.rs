//! Serves MCP `sampling/createMessage` requests with the session's own model (FEATURES §11;
//! MCP 2025-11-25 "Client Features → Sampling"). hermes-mcp applies the caps (`maxTokens`,
//! requests per minute) and the per-server switch before a request gets here; this adapter
//! turns the request into one tool-less model call and the answer into a `CreateMessageResult`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use hermes_llm::{ChatRequest, ModelClient, StreamEvent, ToolChoice};
use hermes_protocol::{FinishReason, Message};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Longest a sampling call may take before the server gets an error (wall time).
pub const SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);

/// The session's model as an MCP sampler.
pub struct ModelSampler {
    client: Arc<dyn ModelClient>,
}

impl ModelSampler {
    /// A sampler over the session's model client.
    pub fn new(client: Arc<dyn ModelClient>) -> ModelSampler {
        ModelSampler { client }
    }
}

/// The text of one MCP content block (or an array of them); non-text blocks become a short
/// placeholder so the model knows something was there.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .map(content_text)
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(_) => match content.get("type").and_then(Value::as_str) {
            Some("text") => content
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Some(other) => format!("[{other} content omitted]"),
            None => String::new(),
        },
        _ => String::new(),
    }
}

/// The model call for a (capped) `sampling/createMessage` params object.
///
/// # Errors
/// `messages` missing or empty, or a role other than `user`/`assistant`.
pub fn chat_request(model: &str, params: &Value) -> Result<ChatRequest, String> {
    let list = params
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or("sampling request without messages")?;
    let mut messages = Vec::with_capacity(list.len());
    for m in list {
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        match m.get("role").and_then(Value::as_str) {
            Some("user") => messages.push(Message::user(text)),
            Some("assistant") => messages.push(Message::assistant(text)),
            other => return Err(format!("sampling message with role {other:?}")),
        }
    }
    Ok(ChatRequest {
        model: model.to_string(),
        system: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        messages,
        tools: Vec::new(),
        tool_choice: ToolChoice::None,
        max_tokens: params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        temperature: params
            .get("temperature")
            .and_then(Value::as_f64)
            .map(|t| t as f32),
        cancel: CancellationToken::new(),
    })
}

#[async_trait::async_trait]
impl hermes_mcp::sampling::Sampler for ModelSampler {
    async fn sample(&self, request: Value) -> Result<Value, String> {
        let call = chat_request(self.client.model(), &request)?;
        let cancel = call.cancel.clone();
        let answer = tokio::time::timeout(SAMPLING_TIMEOUT, async {
            let mut stream = self
                .client
                .stream(&call)
                .await
                .map_err(|e| format!("the model call failed: {e}"))?;
            while let Some(event) = stream.next().await {
                if let StreamEvent::Completed(message) =
                    event.map_err(|e| format!("the model call failed: {e}"))?
                {
                    return Ok(message);
                }
            }
            Err("the model's answer ended early".to_string())
        })
        .await;
        let message = match answer {
            Ok(r) => r?,
            Err(_) => {
                cancel.cancel();
                return Err(format!(
                    "the model did not answer within {} s",
                    SAMPLING_TIMEOUT.as_secs()
                ));
            }
        };
        let stop = match message.finish_reason {
            Some(FinishReason::Length) => "maxTokens",
            _ => "endTurn",
        };
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": message.text},
            "model": self.client.model(),
            "stopReason": stop,
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn request_maps_messages_system_and_caps() {
        let r = chat_request(
            "m",
            &json!({"messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "text", "text": "yo"}, {"type": "image", "data": "..."}]}
            ], "systemPrompt": "be brief", "maxTokens": 64, "temperature": 0.5}),
        )
        .unwrap();
        assert_eq!(r.system, "be brief");
        assert_eq!(r.max_tokens, Some(64));
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0].text(), "hi");
        assert_eq!(r.messages[1].text(), "yo\n[image content omitted]");
        assert!(r.tools.is_empty());
        assert!(chat_request("m", &json!({"messages": []})).is_err());
        assert!(
            chat_request(
                "m",
                &json!({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]})
            )
            .is_err()
        );
    }
}
