//! The `web` toolset (FEATURES §4; issue 4 item 8): `web_extract` ([`WebExtractTool`]: fetch
//! pages, return readable text, 15,000-char cap per page) and `web_search`
//! ([`WebSearchTool`] over a [`SearchBackend`]: Firecrawl, Tavily, Exa or SearXNG). Both are
//! `Safe` for the parallel planner (read-only, no paths).
//!
//! Settings come from `config.yaml` `web:` ([`hermes_protocol::config::WebConfig`]) and the
//! environment or `.env` (Hermes' names: `FIRECRAWL_API_KEY`, `FIRECRAWL_API_URL`,
//! `TAVILY_API_KEY`, `EXA_API_KEY`, `SEARXNG_URL`); [`WebSettings::resolve`] turns them into
//! tools. Without a usable search backend `web_search` is unavailable (left out of the schema
//! list and the prompt guidance, its reason shown by `hermes tools list`); `web_extract`
//! needs nothing.
//!
//! Owns the fetch policy too ([`ssrf`]): http/https only, and loopback, private, link-local,
//! unique-local and metadata addresses refused unless `web.allow_private_urls: true`.

pub mod backends;
mod extract;
mod fetch;
pub mod nesting;
pub mod readable;
mod search;
pub mod ssrf;

use std::collections::BTreeMap;
use std::sync::Arc;

use hermes_protocol::config::{SearchBackendKind, WebConfig, WebConfigError};

pub use backends::{ExaBackend, FirecrawlBackend, SearxngBackend, TavilyBackend};
pub use extract::{MAX_URLS, WebExtractTool};
pub(crate) use fetch::init_tls;
pub use fetch::{CONNECT_TIMEOUT, MAX_DOWNLOAD_BYTES, MAX_REDIRECTS, REQUEST_TIMEOUT};
pub use readable::{Readable, cap_chars, html_to_readable};
pub use search::{
    DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SNIPPET_CHARS, SearchBackend, SearchError, SearchHit,
    WebSearchTool, render_hits,
};

use crate::tool::Tool;

/// The name of the base toolset of both tools.
pub const WEB_TOOLSET: &str = "web";

/// The `web` settings of one process, resolved from config and environment.
#[derive(Clone)]
pub struct WebSettings {
    /// `web.allow_private_urls`.
    pub allow_private_urls: bool,
    /// Per-page cap of `web_extract`, in chars.
    pub extract_char_limit: usize,
    /// The search backend, or why there is none (the reason `web_search` is hidden).
    pub search: Result<Arc<dyn SearchBackend>, String>,
}

impl std::fmt::Debug for WebSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSettings")
            .field("allow_private_urls", &self.allow_private_urls)
            .field("extract_char_limit", &self.extract_char_limit)
            .field(
                "search",
                &self
                    .search
                    .as_ref()
                    .map(|b| b.name())
                    .map_err(String::as_str),
            )
            .finish()
    }
}

/// A non-blank value of `name` in `env`.
fn env_value(env: &BTreeMap<String, String>, name: &str) -> Option<String> {
    env.get(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The search backend of `kind`, or why it cannot be used (its key is missing).
fn backend_of(
    kind: SearchBackendKind,
    config: &WebConfig,
    env: &BTreeMap<String, String>,
) -> Result<Arc<dyn SearchBackend>, String> {
    let missing = |what: &str| {
        format!(
            "web.backend is {} but {what} is not set (environment or HERMES_HOME/.env)",
            kind.as_str()
        )
    };
    match kind {
        SearchBackendKind::Firecrawl => {
            let key = env_value(env, "FIRECRAWL_API_KEY");
            let url = env_value(env, "FIRECRAWL_API_URL");
            if key.is_none() && url.is_none() {
                return Err(missing("FIRECRAWL_API_KEY (or FIRECRAWL_API_URL)"));
            }
            let base = url.unwrap_or_else(|| backends::FIRECRAWL_BASE_URL.to_string());
            Ok(Arc::new(FirecrawlBackend::new(key, &base)))
        }
        SearchBackendKind::Tavily => match env_value(env, "TAVILY_API_KEY") {
            Some(key) => Ok(Arc::new(TavilyBackend::new(key, backends::TAVILY_BASE_URL))),
            None => Err(missing("TAVILY_API_KEY")),
        },
        SearchBackendKind::Exa => match env_value(env, "EXA_API_KEY") {
            Some(key) => Ok(Arc::new(ExaBackend::new(key, backends::EXA_BASE_URL))),
            None => Err(missing("EXA_API_KEY")),
        },
        SearchBackendKind::Searxng => {
            let url = config
                .searxng_url
                .as_deref()
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
                .or_else(|| env_value(env, "SEARXNG_URL"));
            match url {
                Some(url) => Ok(Arc::new(SearxngBackend::new(&url))),
                None => Err(missing("web.searxng_url (or SEARXNG_URL)")),
            }
        }
    }
}

impl WebSettings {
    /// Resolves `config` (`web:`) with `env` (the environment merged over `.env`).
    ///
    /// The search backend is `web.search_backend`, else `web.backend`; when neither is set,
    /// the first of Firecrawl (`FIRECRAWL_API_KEY` or `FIRECRAWL_API_URL`), Tavily
    /// (`TAVILY_API_KEY`), Exa (`EXA_API_KEY`) and SearXNG (`web.searxng_url` or
    /// `SEARXNG_URL`) whose settings are present. A chosen backend without its key, or no
    /// backend at all, leaves [`WebSettings::search`] as `Err(reason)`.
    ///
    /// # Errors
    /// [`WebConfigError`] naming the `web.*` key whose value is invalid.
    pub fn resolve(
        config: &WebConfig,
        env: &BTreeMap<String, String>,
    ) -> Result<WebSettings, WebConfigError> {
        config.validate()?;
        let search = match config.chosen_backend()? {
            Some(kind) => backend_of(kind, config, env),
            None => [
                SearchBackendKind::Firecrawl,
                SearchBackendKind::Tavily,
                SearchBackendKind::Exa,
                SearchBackendKind::Searxng,
            ]
            .into_iter()
            .find_map(|kind| backend_of(kind, config, env).ok())
            .ok_or_else(|| {
                "no search backend configured: set web.backend (firecrawl, tavily, exa or \
                 searxng) and its key (FIRECRAWL_API_KEY, TAVILY_API_KEY, EXA_API_KEY) or \
                 web.searxng_url"
                    .to_string()
            }),
        };
        Ok(WebSettings {
            allow_private_urls: config.allow_private_urls,
            extract_char_limit: config.extract_char_limit()?,
            search,
        })
    }

    /// `web_extract` then `web_search` (unavailable when [`WebSettings::search`] is `Err`).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(WebExtractTool::new(
                self.allow_private_urls,
                self.extract_char_limit,
            )),
            Arc::new(WebSearchTool::new(self.search.clone())),
        ]
    }
}

/// The web tools for `config` and `env` ([`WebSettings::resolve`], then
/// [`WebSettings::tools`]).
///
/// # Errors
/// [`WebConfigError`] naming the invalid `web.*` key.
pub fn tools(
    config: &WebConfig,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Arc<dyn Tool>>, WebConfigError> {
    Ok(WebSettings::resolve(config, env)?.tools())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn backend_name(s: &WebSettings) -> Result<&'static str, String> {
        s.search.as_ref().map(|b| b.name()).map_err(Clone::clone)
    }

    #[test]
    fn backend_is_chosen_by_config_then_detected_from_keys() {
        let none = WebSettings::resolve(&WebConfig::default(), &env(&[])).unwrap();
        let reason = backend_name(&none).unwrap_err();
        assert!(reason.contains("no search backend configured"), "{reason}");
        assert_eq!(none.extract_char_limit, 15_000);
        assert!(!none.allow_private_urls);

        let detected =
            WebSettings::resolve(&WebConfig::default(), &env(&[("EXA_API_KEY", "k")])).unwrap();
        assert_eq!(backend_name(&detected), Ok("exa"));
        let both = env(&[("EXA_API_KEY", "k"), ("TAVILY_API_KEY", "t")]);
        let first = WebSettings::resolve(&WebConfig::default(), &both).unwrap();
        assert_eq!(backend_name(&first), Ok("tavily"));

        let chosen = WebConfig {
            backend: Some("exa".into()),
            ..WebConfig::default()
        };
        assert_eq!(
            backend_name(&WebSettings::resolve(&chosen, &both).unwrap()),
            Ok("exa")
        );
        let searx = WebConfig {
            backend: Some("searxng".into()),
            ..WebConfig::default()
        };
        let s = WebSettings::resolve(&searx, &env(&[("SEARXNG_URL", "http://127.0.0.1:1")]));
        assert_eq!(backend_name(&s.unwrap()), Ok("searxng"));
        let fc = env(&[("FIRECRAWL_API_URL", "http://127.0.0.1:3002")]);
        let f = WebSettings::resolve(&WebConfig::default(), &fc).unwrap();
        assert_eq!(backend_name(&f), Ok("firecrawl"));
    }

    #[test]
    fn chosen_backend_without_its_key_says_which_key() {
        let cfg = WebConfig {
            backend: Some("tavily".into()),
            ..WebConfig::default()
        };
        let s = WebSettings::resolve(&cfg, &env(&[("EXA_API_KEY", "k"), ("TAVILY_API_KEY", " ")]))
            .unwrap();
        let reason = backend_name(&s).unwrap_err();
        assert!(
            reason.contains("web.backend is tavily but TAVILY_API_KEY is not set"),
            "{reason}"
        );
        let tools = s.tools();
        assert_eq!(tools.len(), 2);
        assert!(tools[0].available().is_ok());
        assert_eq!(tools[1].available(), Err(reason));
    }

    #[test]
    fn invalid_values_are_errors_naming_the_key() {
        let cfg = WebConfig {
            backend: Some("google".into()),
            ..WebConfig::default()
        };
        let e = tools(&cfg, &env(&[])).err().unwrap();
        assert_eq!(e.key, "web.backend");
    }
}
