//! Firecrawl: `POST <FIRECRAWL_API_URL or https://api.firecrawl.dev>/v2/search` with
//! `Authorization: Bearer <FIRECRAWL_API_KEY>` (optional for a self-hosted instance) and
//! `{"query", "limit"}`; results in `data.web[].{title, url, description}` (Firecrawl v2
//! search reference; the v1 shape, `data[]`, is read too).

use serde_json::{Value, json};

use super::{array_at, http_client, send_json, str_field, trim_base};
use crate::web::search::{SearchBackend, SearchError, SearchHit};

/// Firecrawl's cloud API base URL.
pub const FIRECRAWL_BASE_URL: &str = "https://api.firecrawl.dev";

/// The Firecrawl search backend.
#[derive(Clone)]
pub struct FirecrawlBackend {
    api_key: Option<String>,
    base_url: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for FirecrawlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirecrawlBackend")
            .field("base_url", &self.base_url)
            .field("has_key", &self.api_key.is_some())
            .finish_non_exhaustive()
    }
}

impl FirecrawlBackend {
    /// A backend against `base_url` (normally [`FIRECRAWL_BASE_URL`]; a self-hosted instance
    /// from `FIRECRAWL_API_URL`), sending `api_key` as a bearer token when given.
    pub fn new(api_key: Option<String>, base_url: &str) -> FirecrawlBackend {
        FirecrawlBackend {
            api_key,
            base_url: trim_base(base_url),
            http: http_client(),
        }
    }
}

#[async_trait::async_trait]
impl SearchBackend for FirecrawlBackend {
    fn name(&self) -> &'static str {
        "firecrawl"
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        let mut req = self
            .http
            .post(format!("{}/v2/search", self.base_url))
            .json(&json!({"query": query, "limit": limit}));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let body = send_json("firecrawl", "FIRECRAWL_API_KEY", req).await?;
        if body.get("success") == Some(&Value::Bool(false)) {
            return Err(SearchError::Malformed {
                backend: "firecrawl",
                detail: format!("success: false ({})", str_field(&body, "error")),
            });
        }
        let items = match body.get("data") {
            Some(Value::Array(_)) => array_at("firecrawl", &body, &["data"])?,
            _ => array_at("firecrawl", &body, &["data", "web"])?,
        };
        Ok(items
            .iter()
            .map(|r| SearchHit {
                title: str_field(r, "title"),
                url: str_field(r, "url"),
                snippet: str_field(r, "description"),
            })
            .filter(|h| !h.url.is_empty())
            .collect())
    }
}
