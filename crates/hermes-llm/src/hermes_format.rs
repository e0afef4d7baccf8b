//! Hermes-format tool-call markup: `<tool_call>{"name": …, "arguments": {…}}</tool_call>` in
//! model text (FEATURES §2, §14; case C13).
//!
//! Two users: the OpenAI-compatible adapter only STRIPS this markup from visible text and
//! reports a diagnostic (content-derived calls are never executed there), while the embedded
//! local model, which is prompted to use this format on purpose, PARSES it into tool calls.
//! [`TagFilter`] does the work incrementally (tags may be split across stream deltas);
//! [`parse_tool_calls`] is the one-shot form and gives identical results.

/// Tag families recognised as tool-call markup, as (open, close) pairs.
const TAGS: &[(&str, &str)] = &[
    ("<tool_call>", "</tool_call>"),
    ("<function_call>", "</function_call>"),
];

/// One tool-call block found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    /// Tool name (`""` when the block did not parse).
    pub name: String,
    /// Argument JSON text: the `arguments` (or `parameters`) value; an object is re-serialized
    /// compactly, a string is kept verbatim, a missing value becomes `{}`.
    pub arguments: String,
    /// The block's inner text as the model wrote it (between the tags).
    pub raw: String,
    /// Why the block is not a usable call (bad JSON, no name, tag never closed), if so.
    pub error: Option<String>,
}

impl ParsedCall {
    /// True when the block parsed into a name and arguments.
    pub fn is_valid(&self) -> bool {
        self.error.is_none()
    }

    fn from_block(raw: &str, closed: bool) -> ParsedCall {
        let mut call = ParsedCall {
            name: String::new(),
            arguments: "{}".to_string(),
            raw: raw.to_string(),
            error: None,
        };
        if !closed {
            call.error = Some("tool-call tag was never closed (output cut off?)".to_string());
            return call;
        }
        let value: serde_json::Value = match serde_json::from_str(raw.trim()) {
            Ok(v) => v,
            Err(e) => {
                call.error = Some(format!("tool-call block is not valid JSON: {e}"));
                return call;
            }
        };
        let Some(name) = value.get("name").and_then(|n| n.as_str()) else {
            call.error = Some("tool-call block has no string \"name\"".to_string());
            return call;
        };
        call.name = name.to_string();
        match value.get("arguments").or_else(|| value.get("parameters")) {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::String(s)) => call.arguments = s.clone(),
            Some(other) => call.arguments = other.to_string(),
        }
        call
    }
}

/// Incremental filter that removes tool-call blocks from streamed text.
///
/// Feed deltas to [`TagFilter::push`], which returns the text that is safe to show now (a
/// possible tag prefix such as `<tool_` at the end is held back until the next delta decides);
/// call [`TagFilter::finish`] at the end of the stream to flush held text and close any open
/// block. Completed blocks are collected and returned by [`TagFilter::take_calls`].
#[derive(Debug, Default, Clone)]
pub struct TagFilter {
    pending: String,
    inside: Option<usize>,
    calls: Vec<ParsedCall>,
    seen_markup: bool,
}

impl TagFilter {
    /// A filter with nothing buffered.
    pub fn new() -> TagFilter {
        TagFilter::default()
    }

    /// Adds one delta; returns the visible text that can be emitted now (maybe empty).
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            match self.inside {
                None => {
                    let found = TAGS
                        .iter()
                        .enumerate()
                        .filter_map(|(i, (open, _))| self.pending.find(open).map(|p| (p, i)))
                        .min();
                    if let Some((pos, idx)) = found {
                        out.push_str(&self.pending[..pos]);
                        let rest = self.pending[pos + TAGS[idx].0.len()..].to_string();
                        self.pending = rest;
                        self.inside = Some(idx);
                        self.seen_markup = true;
                        continue;
                    }
                    let keep = held_prefix_len(&self.pending);
                    let cut = self.pending.len() - keep;
                    out.push_str(&self.pending[..cut]);
                    self.pending = self.pending[cut..].to_string();
                    return out;
                }
                Some(idx) => {
                    let close = TAGS[idx].1;
                    let Some(pos) = self.pending.find(close) else {
                        return out;
                    };
                    self.calls
                        .push(ParsedCall::from_block(&self.pending[..pos], true));
                    self.pending = self.pending[pos + close.len()..].to_string();
                    self.inside = None;
                }
            }
        }
    }

    /// Ends the stream: returns held-back visible text; an unclosed block is recorded as an
    /// invalid [`ParsedCall`] and its text is not shown.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        match self.inside.take() {
            None => rest,
            Some(_) => {
                self.calls.push(ParsedCall::from_block(&rest, false));
                String::new()
            }
        }
    }

    /// True once any opening tag was seen (even if the block was invalid).
    pub fn saw_markup(&self) -> bool {
        self.seen_markup
    }

    /// Takes the blocks completed so far, in order.
    pub fn take_calls(&mut self) -> Vec<ParsedCall> {
        std::mem::take(&mut self.calls)
    }
}

/// Length in bytes of the longest suffix of `text` that is a proper prefix of an opening tag.
fn held_prefix_len(text: &str) -> usize {
    let Some(lt) = text.rfind('<') else {
        return 0;
    };
    let tail = &text[lt..];
    if TAGS
        .iter()
        .any(|(open, _)| open.len() > tail.len() && open.starts_with(tail))
    {
        tail.len()
    } else {
        0
    }
}

/// Splits `text` into the visible text (all tool-call blocks removed) and the blocks found,
/// in order. Same result as pushing the text through a [`TagFilter`] in any pieces.
pub fn parse_tool_calls(text: &str) -> (String, Vec<ParsedCall>) {
    let mut filter = TagFilter::new();
    let mut visible = filter.push(text);
    visible.push_str(&filter.finish());
    (visible, filter.take_calls())
}

/// The diagnostic the OpenAI-compatible adapter attaches when tool-call markup arrived in
/// content instead of structured `tool_calls` (case C13).
pub const SERVER_PARSER_DIAGNOSTIC: &str = "The model wrote tool-call markup (<tool_call>…</tool_call>) in its text instead of \
structured tool_calls; it was hidden and NOT executed. The endpoint needs a server-side tool-call \
parser: vLLM `--enable-auto-tool-choice --tool-call-parser hermes`, llama.cpp server `--jinja`, \
or a provider/model that supports native tool calling.";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_strips_hermes_block() {
        let text = "Sure.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>";
        let (visible, calls) = parse_tool_calls(text);
        assert_eq!(visible, "Sure.\n");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].arguments, r#"{"path":"notes.md"}"#);
        assert!(calls[0].is_valid());
    }

    #[test]
    fn split_tags_are_held_back_and_streaming_matches_one_shot() {
        let text = "a <b> c<tool_call>{\"name\":\"x\",\"arguments\":\"{}\"}</tool_call> d <tool";
        let whole = parse_tool_calls(text);
        for step in 1..text.len() {
            let mut f = TagFilter::new();
            let mut vis = String::new();
            let mut i = 0;
            while i < text.len() {
                let mut j = (i + step).min(text.len());
                while !text.is_char_boundary(j) {
                    j += 1;
                }
                let piece = f.push(&text[i..j]);
                assert!(
                    !piece.contains("<tool_call"),
                    "leaked markup at step {step}"
                );
                vis.push_str(&piece);
                i = j;
            }
            vis.push_str(&f.finish());
            assert_eq!((vis, f.take_calls()), whole, "step {step}");
        }
        assert_eq!(whole.0, "a <b> c d <tool");
    }

    #[test]
    fn invalid_and_unclosed_blocks_are_reported() {
        let (visible, calls) =
            parse_tool_calls("x<tool_call>not json</tool_call>y<tool_call>{\"name\"");
        assert_eq!(visible, "xy");
        assert_eq!(calls.len(), 2);
        assert!(
            calls[0]
                .error
                .as_deref()
                .unwrap_or("")
                .contains("not valid JSON")
        );
        assert!(
            calls[1]
                .error
                .as_deref()
                .unwrap_or("")
                .contains("never closed")
        );
    }
}
