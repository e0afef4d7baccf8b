//! Maps MCP wire shapes to what the model sees: tool input schemas normalized for providers,
//! and `tools/call` results (text, images, audio, resource links, embedded resources,
//! structured content, `isError`) turned into one text tool result (MCP spec 2025-11-25,
//! "Tools → Tool Result"). Works on the JSON form so it follows the wire, not SDK structs.

use serde_json::{Map, Value, json};

/// Makes a server's `inputSchema` acceptable to providers: an object schema with
/// `"type": "object"` and a `properties` object, without `$schema` (some providers reject it),
/// and with `required` kept only when it is an array of strings.
pub fn normalize_schema(schema: &Value) -> Value {
    let mut obj = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    obj.remove("$schema");
    obj.insert("type".into(), json!("object"));
    if !obj.get("properties").is_some_and(Value::is_object) {
        obj.insert("properties".into(), json!({}));
    }
    let required_ok = obj
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(Value::is_string));
    if !required_ok {
        obj.remove("required");
    }
    Value::Object(obj)
}

/// A tool result for the model: the text and whether the server flagged it as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedResult {
    /// Text for the model.
    pub text: String,
    /// `isError: true` in the result.
    pub is_error: bool,
}

fn base64_len(data: &str) -> usize {
    // Decoded size of standard base64 without decoding: 3 bytes per 4 characters, minus padding.
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

/// One content block as text. Unknown block types are kept as their JSON.
fn block_text(block: &Value) -> String {
    let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "text" => s("text").to_string(),
        "image" | "audio" => format!(
            "[{} {}: {} bytes, not shown]",
            s("type"),
            s("mimeType"),
            base64_len(s("data"))
        ),
        "resource_link" => {
            let mut t = format!("[resource link] {} <{}>", s("name"), s("uri"));
            if !s("mimeType").is_empty() {
                t.push_str(&format!(" ({})", s("mimeType")));
            }
            if !s("description").is_empty() {
                t.push_str(&format!(": {}", s("description")));
            }
            t
        }
        "resource" => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let rs = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            if let Some(text) = r.get("text").and_then(Value::as_str) {
                format!("[resource <{}>]\n{text}", rs("uri"))
            } else {
                format!(
                    "[resource <{}> {}: {} bytes, not shown]",
                    rs("uri"),
                    rs("mimeType"),
                    base64_len(&rs("blob"))
                )
            }
        }
        _ => block.to_string(),
    }
}

/// `value` with binary payloads replaced by their size, as in the content blocks: a `blob`
/// string anywhere, and a `data` string that is base64 of 12 or more bytes. A server that
/// mirrors a resource in `structuredContent` would otherwise hand the model the file the
/// content block withheld, encoded where the secret redactor cannot see it (the attack pass
/// of issue 18: `read_media_file .env` of the filesystem server).
fn without_binary(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let binary = v.as_str().filter(|s| {
                        k == "blob" || (k == "data" && s.len() >= 16 && looks_like_base64(s))
                    });
                    let v = match binary {
                        Some(s) => json!(format!("[{} bytes, not shown]", base64_len(s))),
                        None => without_binary(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_binary).collect()),
        other => other.clone(),
    }
}

fn looks_like_base64(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

/// Maps a `tools/call` result (its JSON form) to text: content blocks in order, separated by
/// blank lines; `structuredContent` is added as JSON when no block carries text (servers
/// SHOULD mirror it in a text block, which is then not repeated); an empty result says so.
pub fn map_call_result(result: &Value) -> MappedResult {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let blocks: Vec<&Value> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks.iter().map(|b| block_text(b)).collect();
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if let Some(sc) = result.get("structuredContent")
        && !has_text
    {
        parts.push(format!("structured content: {}", without_binary(sc)));
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n\n")
    };
    MappedResult { text, is_error }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The filesystem server's `read_media_file` mirrors the file in `structuredContent`:
    /// its bytes stay withheld there too (the attack pass of issue 18).
    #[test]
    fn binary_in_structured_content_is_not_shown() {
        let blob = "T1BFTkFJX0FQSV9LRVk9c2stdGVzdC1jYW5hcnlFTlYwMDAxYWJjZGVmCg==";
        let result = json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///h/.env", "mimeType": "application/octet-stream", "blob": blob}}
        ], "structuredContent": {"content": [
            {"resource": {"uri": "file:///h/.env", "blob": blob}},
            {"type": "image", "data": blob, "mimeType": "image/png"}
        ], "data": {"rows": 2}, "note": "short data kept", "id": "abc"}});
        let mapped = map_call_result(&result);
        assert!(!mapped.text.contains(blob), "{}", mapped.text);
        assert!(
            mapped.text.contains("43 bytes, not shown"),
            "{}",
            mapped.text
        );
        assert!(mapped.text.contains(r#""rows":2"#), "{}", mapped.text);
    }

    #[test]
    fn schema_normalized() {
        let s = normalize_schema(
            &json!({"$schema":"x","properties":{"a":{"type":"string"}},"required":"a"}),
        );
        assert_eq!(
            s,
            json!({"type":"object","properties":{"a":{"type":"string"}}})
        );
        assert_eq!(
            normalize_schema(&json!(null)),
            json!({"type":"object","properties":{}})
        );
    }

    #[test]
    fn every_content_type_maps() {
        let r = json!({"content":[
            {"type":"text","text":"hello","annotations":{"audience":["user"]}},
            {"type":"image","data":"AAAA","mimeType":"image/png"},
            {"type":"resource_link","uri":"demo://a","name":"a","mimeType":"text/plain","description":"d"},
            {"type":"resource","resource":{"uri":"demo://b","text":"body"}},
            {"type":"resource","resource":{"uri":"demo://c","blob":"AAAAAA==","mimeType":"application/octet-stream"}}
        ],"isError":true});
        let m = map_call_result(&r);
        assert!(m.is_error);
        assert_eq!(
            m.text,
            "hello\n\n[image image/png: 3 bytes, not shown]\n\n[resource link] a <demo://a> (text/plain): d\n\n[resource <demo://b>]\nbody\n\n[resource <demo://c> application/octet-stream: 4 bytes, not shown]"
        );
        let sc = map_call_result(&json!({"content":[],"structuredContent":{"t":1}}));
        assert_eq!(sc.text, "structured content: {\"t\":1}");
        assert!(!sc.is_error);
        assert_eq!(
            map_call_result(&json!({})).text,
            "(the tool returned no content)"
        );
    }
}
