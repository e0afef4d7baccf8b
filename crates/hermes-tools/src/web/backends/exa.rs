//! Exa: `POST https://api.exa.ai/search` with `x-api-key: <EXA_API_KEY>` and
//! `{"query", "numResults", "type": "auto", "contents": {"highlights": true}}`; results in
//! `results[].{title, url, highlights[], text, summary}` (Exa API reference, /search).

use serde_json::{Value, json};

use super::{array_at, http_client, send_json, str_field, trim_base};
use crate::web::search::{SearchBackend, SearchError, SearchHit};

/// Exa's API base URL.
pub const EXA_BASE_URL: &str = "https://api.exa.ai";

/// The Exa search backend.
#[derive(Clone)]
pub struct ExaBackend {
    api_key: String,
    base_url: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for ExaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExaBackend")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl ExaBackend {
    /// A backend with `api_key` against `base_url` (normally [`EXA_BASE_URL`]).
    pub fn new(api_key: impl Into<String>, base_url: &str) -> ExaBackend {
        ExaBackend {
            api_key: api_key.into(),
            base_url: trim_base(base_url),
            http: http_client(),
        }
    }
}

/// The snippet of one Exa result: its highlights joined with ` … `, else its text, else its
/// summary.
fn snippet(r: &Value) -> String {
    let highlights: Vec<&str> = r
        .get("highlights")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !highlights.is_empty() {
        return highlights.join(" … ");
    }
    let text = str_field(r, "text");
    if !text.trim().is_empty() {
        return text;
    }
    str_field(r, "summary")
}

#[async_trait::async_trait]
impl SearchBackend for ExaBackend {
    fn name(&self) -> &'static str {
        "exa"
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        let req = self
            .http
            .post(format!("{}/search", self.base_url))
            .header("x-api-key", &self.api_key)
            .json(&json!({
                "query": query,
                "numResults": limit,
                "type": "auto",
                "contents": {"highlights": true}
            }));
        let body = send_json("exa", "EXA_API_KEY", req).await?;
        Ok(array_at("exa", &body, &["results"])?
            .iter()
            .map(|r| SearchHit {
                title: str_field(r, "title"),
                url: str_field(r, "url"),
                snippet: snippet(r),
            })
            .filter(|h| !h.url.is_empty())
            .collect())
    }
}
