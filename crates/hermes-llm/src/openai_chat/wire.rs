//! The Chat Completions request body written straight to bytes (issue 6: building a
//! `serde_json::Value` tree of the whole history and serializing it again cost more than the
//! rest of the request). The bytes are exactly those of `serde_json::to_vec(&build_body(..))`:
//! the same members with the same values, and the keys of every object in the sorted order a
//! `Value` map writes them in (serde_json without `preserve_order`) — the structs below list
//! their fields alphabetically for that reason, and a test compares both forms byte for byte.
//!
//! Endpoints that want cache markers (`ChatWireOptions::cache`) take the `Value` path of
//! [`super::build_body`], which places the markers on the tree.

use hermes_protocol::{ContentPart, Message, Role, ToolCall, ToolSpec};
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use super::build_body;
use super::capabilities::ChatWireOptions;
use crate::client::{ChatRequest, ToolChoice};

/// The JSON body for `POST {base_url}/chat/completions` as bytes, equal to
/// `serde_json::to_vec(&build_body(request, default_model, opts))`.
///
/// Errors: serializing a tool's parameter schema fails (a non-string map key cannot occur in
/// a `serde_json::Value`, so in practice never).
pub fn body_bytes(
    request: &ChatRequest,
    default_model: &str,
    opts: &ChatWireOptions,
) -> Result<Vec<u8>, serde_json::Error> {
    if opts.cache.is_some() {
        return serde_json::to_vec(&build_body(request, default_model, opts));
    }
    let model = if request.model.is_empty() {
        default_model
    } else {
        request.model.as_str()
    };
    let has_tools = !request.tools.is_empty();
    let body = Body {
        max_tokens: request.max_tokens,
        messages: Messages {
            system: &request.system,
            history: &request.messages,
            echo_reasoning: opts.echo_reasoning,
        },
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        // `json!(f32)` widens to f64 before writing; so does this.
        temperature: request.temperature.map(f64::from),
        tool_choice: (has_tools && request.tool_choice == ToolChoice::None).then_some("none"),
        tools: has_tools.then_some(Tools(&request.tools)),
    };
    let mut out = Vec::with_capacity(4096);
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    messages: Messages<'a>,
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt (when not empty), then the history.
struct Messages<'a> {
    system: &'a str,
    history: &'a [Message],
    echo_reasoning: bool,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let system = !self.system.is_empty();
        let mut seq = serializer.serialize_seq(Some(self.history.len() + usize::from(system)))?;
        if system {
            seq.serialize_element(&Plain {
                content: Content::Text(self.system),
                role: "system",
            })?;
        }
        for m in self.history {
            match m.role {
                Role::Assistant => seq.serialize_element(&Assistant {
                    content: Content::Owned(m.text()),
                    reasoning_content: m
                        .reasoning
                        .as_ref()
                        .filter(|r| self.echo_reasoning && !r.text.is_empty())
                        .map(|r| r.text.as_str()),
                    role: "assistant",
                    tool_calls: (!m.tool_calls.is_empty()).then_some(Calls(&m.tool_calls)),
                })?,
                Role::Tool => seq.serialize_element(&ToolResult {
                    content: Content::Owned(m.text()),
                    role: "tool",
                    tool_call_id: m.tool_call_id.as_deref().unwrap_or(""),
                })?,
                Role::User | Role::System => {
                    let has_image = m
                        .content
                        .iter()
                        .any(|p| matches!(p, ContentPart::Image { .. }));
                    let content = if has_image {
                        Content::Parts(&m.content)
                    } else {
                        Content::Owned(m.text())
                    };
                    seq.serialize_element(&Plain {
                        content,
                        role: m.role.as_str(),
                    })?
                }
            }
        }
        seq.end()
    }
}

/// A message's `content`: a string, or the part array of a message with images.
enum Content<'a> {
    Text(&'a str),
    Owned(String),
    Parts(&'a [ContentPart]),
}

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Owned(text) => serializer.serialize_str(text),
            Content::Parts(parts) => {
                let mut seq = serializer.serialize_seq(None)?;
                for part in parts.iter() {
                    match part {
                        ContentPart::Text { text } if text.is_empty() => {}
                        ContentPart::Text { text } => seq.serialize_element(&TextPart {
                            text,
                            r#type: "text",
                        })?,
                        ContentPart::Image { url } => seq.serialize_element(&ImagePart {
                            image_url: ImageUrl { url },
                            r#type: "image_url",
                        })?,
                    }
                }
                seq.end()
            }
        }
    }
}

#[derive(Serialize)]
struct TextPart<'a> {
    text: &'a str,
    r#type: &'static str,
}

#[derive(Serialize)]
struct ImagePart<'a> {
    image_url: ImageUrl<'a>,
    r#type: &'static str,
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct Plain<'a> {
    content: Content<'a>,
    role: &'a str,
}

#[derive(Serialize)]
struct Assistant<'a> {
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Calls<'a>>,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    content: Content<'a>,
    role: &'static str,
    tool_call_id: &'a str,
}

struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|c| Call {
            function: CallFunction {
                arguments: &c.arguments,
                name: &c.name,
            },
            id: &c.id,
            r#type: "function",
        }))
    }
}

#[derive(Serialize)]
struct Call<'a> {
    function: CallFunction<'a>,
    id: &'a str,
    r#type: &'static str,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    arguments: &'a str,
    name: &'a str,
}

struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| ToolWire {
            function: ToolFunction {
                description: &t.description,
                name: &t.name,
                parameters: &t.parameters,
            },
            r#type: "function",
        }))
    }
}

#[derive(Serialize)]
struct ToolWire<'a> {
    function: ToolFunction<'a>,
    r#type: &'static str,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a serde_json::Value,
}
