//! Tavily: `POST https://api.tavily.com/search` with `Authorization: Bearer <TAVILY_API_KEY>`
//! and `{"query", "max_results", "search_depth": "basic"}`; results in
//! `results[].{title, url, content}` (Tavily Search API reference).

use serde_json::json;

use super::{array_at, http_client, send_json, str_field, trim_base};
use crate::web::search::{SearchBackend, SearchError, SearchHit};

/// Tavily's API base URL.
pub const TAVILY_BASE_URL: &str = "https://api.tavily.com";

/// The Tavily search backend.
#[derive(Clone)]
pub struct TavilyBackend {
    api_key: String,
    base_url: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for TavilyBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavilyBackend")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl TavilyBackend {
    /// A backend with `api_key` against `base_url` (normally [`TAVILY_BASE_URL`]).
    pub fn new(api_key: impl Into<String>, base_url: &str) -> TavilyBackend {
        TavilyBackend {
            api_key: api_key.into(),
            base_url: trim_base(base_url),
            http: http_client(),
        }
    }
}

#[async_trait::async_trait]
impl SearchBackend for TavilyBackend {
    fn name(&self) -> &'static str {
        "tavily"
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        let req = self
            .http
            .post(format!("{}/search", self.base_url))
            .bearer_auth(&self.api_key)
            .json(&json!({"query": query, "max_results": limit, "search_depth": "basic"}));
        let body = send_json("tavily", "TAVILY_API_KEY", req).await?;
        Ok(array_at("tavily", &body, &["results"])?
            .iter()
            .map(|r| SearchHit {
                title: str_field(r, "title"),
                url: str_field(r, "url"),
                snippet: str_field(r, "content"),
            })
            .filter(|h| !h.url.is_empty())
            .collect())
    }
}
