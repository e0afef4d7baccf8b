//! The `web_search` tool (FEATURES §4 `web`) and the [`SearchBackend`] trait its providers
//! implement (`backends`: Firecrawl, Tavily, Exa, SearXNG). Without a usable backend the tool
//! reports itself unavailable, so it is left out of the schema list and the prompt guidance.

use std::sync::Arc;

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Results returned when the model gives no `limit`.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;
/// Most results one call may ask for.
pub const MAX_SEARCH_LIMIT: usize = 20;
/// Longest snippet kept per result, in chars.
pub const SNIPPET_CHARS: usize = 500;

/// Model-visible description (`prompts/web_search_description.md`).
const DESCRIPTION: &str = include_str!("../../prompts/web_search_description.md");

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// Page title (may be empty when the provider gave none).
    pub title: String,
    /// Page URL.
    pub url: String,
    /// A short excerpt or description (may be empty).
    pub snippet: String,
}

/// Why a search failed; every message names the backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// 401/403: the key is missing, wrong or lacks access.
    #[error("{backend}: the API key was rejected (HTTP {status}); check {key_hint}")]
    Unauthorized {
        /// Backend name (`tavily`, …).
        backend: &'static str,
        /// 401 or 403.
        status: u16,
        /// Where the key comes from, e.g. `TAVILY_API_KEY`.
        key_hint: &'static str,
    },
    /// 429 (and Firecrawl's 402: credits used up).
    #[error("{backend}: rate limited or out of credits (HTTP {status}); try again later{}", retry_after.as_ref().map(|s| format!(" (Retry-After: {s})")).unwrap_or_default())]
    RateLimited {
        /// Backend name.
        backend: &'static str,
        /// 429 or 402.
        status: u16,
        /// The `Retry-After` header, when sent.
        retry_after: Option<String>,
    },
    /// Any other error status (5xx: the provider's fault).
    #[error("{backend}: HTTP {status}{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Status {
        /// Backend name.
        backend: &'static str,
        /// The status code.
        status: u16,
        /// The start of the error body (at most 300 chars).
        detail: String,
    },
    /// A 2xx body that is not the JSON shape the provider documents.
    #[error("{backend}: unexpected response ({detail})")]
    Malformed {
        /// Backend name.
        backend: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// Connect failure, timeout or a broken connection.
    #[error("{backend}: request failed: {detail}")]
    Network {
        /// Backend name.
        backend: &'static str,
        /// The cause.
        detail: String,
    },
}

/// A web search provider.
#[async_trait::async_trait]
pub trait SearchBackend: Send + Sync {
    /// The name used in `web.backend` and in messages (`tavily`, …).
    fn name(&self) -> &'static str;
    /// Searches for `query`, returning at most `limit` hits (1 ≤ `limit` ≤
    /// [`MAX_SEARCH_LIMIT`]) in the provider's order.
    ///
    /// # Errors
    /// [`SearchError`] for an error status, a malformed body or a network failure.
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError>;
}

/// `web_search(query, limit?)`: the hits of the configured [`SearchBackend`] as a numbered
/// list (`1. title` / URL / snippet cut at [`SNIPPET_CHARS`] chars).
#[derive(Clone)]
pub struct WebSearchTool {
    backend: Result<Arc<dyn SearchBackend>, String>,
}

impl std::fmt::Debug for WebSearchTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match &self.backend {
            Ok(b) => b.name().to_string(),
            Err(reason) => format!("unavailable: {reason}"),
        };
        f.debug_struct("WebSearchTool")
            .field("backend", &backend)
            .finish()
    }
}

impl WebSearchTool {
    /// A tool over `backend`; `Err(reason)` makes the tool unavailable with that reason
    /// (shown by `hermes tools list`).
    pub fn new(backend: Result<Arc<dyn SearchBackend>, String>) -> WebSearchTool {
        WebSearchTool { backend }
    }
}

/// `limit` from the arguments: default [`DEFAULT_SEARCH_LIMIT`], clamped to
/// 1..=[`MAX_SEARCH_LIMIT`].
fn limit_arg(args: &Value) -> usize {
    args.get("limit")
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(MAX_SEARCH_LIMIT))
        .unwrap_or(DEFAULT_SEARCH_LIMIT)
        .clamp(1, MAX_SEARCH_LIMIT)
}

/// Renders hits for the model.
pub fn render_hits(backend: &str, query: &str, hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return format!("No results for \"{query}\" ({backend}).");
    }
    let mut out = format!("Results for \"{query}\" ({backend}):\n");
    for (i, hit) in hits.iter().enumerate() {
        let title = if hit.title.trim().is_empty() {
            "(no title)"
        } else {
            hit.title.trim()
        };
        out.push_str(&format!("\n{}. {title}\n   {}\n", i + 1, hit.url.trim()));
        let snippet = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        if !snippet.is_empty() {
            let cut: String = snippet.chars().take(SNIPPET_CHARS).collect();
            let more = if cut.len() < snippet.len() { "…" } else { "" };
            out.push_str(&format!("   {cut}{more}\n"));
        }
    }
    out
}

#[async_trait::async_trait]
impl Tool for WebSearchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_search".to_string(),
            description: DESCRIPTION.trim().to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to search for."},
                    "limit": {
                        "type": "integer",
                        "description": "How many results (default 5, at most 20).",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_LIMIT
                    }
                },
                "required": ["query"]
            }),
        }
    }

    fn toolset(&self) -> &'static str {
        "web"
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }

    fn available(&self) -> Result<(), String> {
        self.backend.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let backend = match &self.backend {
            Ok(b) => b,
            Err(reason) => {
                return ToolOutput::error(format!("web_search is unavailable: {reason}"));
            }
        };
        let query = match args.get("query").and_then(Value::as_str).map(str::trim) {
            Some(q) if !q.is_empty() => q.to_string(),
            _ => return ToolOutput::error("`query` must be a non-empty string"),
        };
        let limit = limit_arg(&args);
        let result = tokio::select! {
            r = backend.search(&query, limit) => r,
            () = ctx.cancel.cancelled() => return ToolOutput::error("cancelled by user"),
        };
        match result {
            Ok(mut hits) => {
                hits.truncate(limit);
                ToolOutput::ok(render_hits(backend.name(), &query, &hits))
            }
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_defaults_and_clamps() {
        assert_eq!(limit_arg(&json!({})), 5);
        assert_eq!(limit_arg(&json!({"limit": 0})), 1);
        assert_eq!(limit_arg(&json!({"limit": 500})), 20);
        assert_eq!(limit_arg(&json!({"limit": 3})), 3);
    }

    #[test]
    fn hits_render_as_a_numbered_list() {
        let hits = vec![
            SearchHit {
                title: "Rust".into(),
                url: "https://rust-lang.org".into(),
                snippet: "A language\n empowering everyone".into(),
            },
            SearchHit {
                title: " ".into(),
                url: "https://x.example".into(),
                snippet: String::new(),
            },
        ];
        assert_eq!(
            render_hits("exa", "rust", &hits),
            "Results for \"rust\" (exa):\n\n1. Rust\n   https://rust-lang.org\n   A language empowering everyone\n\n2. (no title)\n   https://x.example\n"
        );
        assert_eq!(render_hits("exa", "q", &[]), "No results for \"q\" (exa).");
    }
}
