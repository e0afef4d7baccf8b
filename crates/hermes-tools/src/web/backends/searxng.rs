//! SearXNG (self-hosted, no key): `GET <web.searxng_url or SEARXNG_URL>/search?q=…&format=json`;
//! results in `results[].{title, url, content}` (SearXNG Search API docs). The instance must
//! list `json` in `search.formats` of its `settings.yml`, else it answers 403.

use super::{array_at, http_client, send_json, str_field, trim_base};
use crate::web::search::{SearchBackend, SearchError, SearchHit};

/// The SearXNG search backend.
#[derive(Debug, Clone)]
pub struct SearxngBackend {
    base_url: String,
    http: reqwest::Client,
}

impl SearxngBackend {
    /// A backend against the instance at `base_url` (a trailing `/search` is accepted).
    pub fn new(base_url: &str) -> SearxngBackend {
        let base = trim_base(base_url);
        let base = base.strip_suffix("/search").unwrap_or(&base).to_string();
        SearxngBackend {
            base_url: base,
            http: http_client(),
        }
    }
}

#[async_trait::async_trait]
impl SearchBackend for SearxngBackend {
    fn name(&self) -> &'static str {
        "searxng"
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/search", self.base_url),
            [("q", query), ("format", "json")],
        )
        .map_err(|e| SearchError::Network {
            backend: "searxng",
            detail: format!("the instance URL `{}` is not valid: {e}", self.base_url),
        })?;
        let req = self.http.get(url);
        let body = match send_json("searxng", "web.searxng_url", req).await {
            Err(SearchError::Unauthorized { status: 403, .. }) => {
                return Err(SearchError::Status {
                    backend: "searxng",
                    status: 403,
                    detail: "the instance refuses JSON; add `json` to search.formats in its settings.yml".to_string(),
                });
            }
            other => other?,
        };
        Ok(array_at("searxng", &body, &["results"])?
            .iter()
            .map(|r| SearchHit {
                title: str_field(r, "title"),
                url: str_field(r, "url"),
                snippet: str_field(r, "content"),
            })
            .filter(|h| !h.url.is_empty())
            .take(limit)
            .collect())
    }
}
