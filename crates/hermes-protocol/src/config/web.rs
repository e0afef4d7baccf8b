//! `web:` section of `config.yaml` (FEATURES §4 `web` toolset; key names as in the Python
//! system: `web.backend`, `web.search_backend`, `web.extract_char_limit`; `web.searxng_url`
//! and `web.allow_private_urls` are ours).
//!
//! Values are kept as written and checked by [`WebConfig::validate`], so a bad value is
//! reported naming its key (``web.backend: `bing` is not one of …``) instead of failing the
//! whole file with a serde message.

use serde::{Deserialize, Serialize};

/// Default cap of the text `web_extract` returns per page, in chars (FEATURES §4).
pub const DEFAULT_EXTRACT_CHAR_LIMIT: usize = 15_000;

/// The search backends this build can talk to, as written in `web.backend`.
pub const SEARCH_BACKENDS: &[&str] = &["firecrawl", "tavily", "exa", "searxng"];

/// A search backend named in `web.backend` / `web.search_backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchBackendKind {
    /// Firecrawl (`FIRECRAWL_API_KEY`; `FIRECRAWL_API_URL` for a self-hosted instance).
    Firecrawl,
    /// Tavily (`TAVILY_API_KEY`).
    Tavily,
    /// Exa (`EXA_API_KEY`).
    Exa,
    /// A self-hosted SearXNG instance (`web.searxng_url` or `SEARXNG_URL`; no key).
    Searxng,
}

impl SearchBackendKind {
    /// The name as written in `config.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchBackendKind::Firecrawl => "firecrawl",
            SearchBackendKind::Tavily => "tavily",
            SearchBackendKind::Exa => "exa",
            SearchBackendKind::Searxng => "searxng",
        }
    }

    /// Parses a backend name (case-insensitive, surrounding blanks ignored).
    pub fn parse(name: &str) -> Option<SearchBackendKind> {
        match name.trim().to_ascii_lowercase().as_str() {
            "firecrawl" => Some(SearchBackendKind::Firecrawl),
            "tavily" => Some(SearchBackendKind::Tavily),
            "exa" => Some(SearchBackendKind::Exa),
            "searxng" => Some(SearchBackendKind::Searxng),
            _ => None,
        }
    }
}

/// `web:` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebConfig {
    /// `web.backend`: the search backend (`firecrawl`, `tavily`, `exa`, `searxng`). Unset:
    /// the first backend whose credentials are present, in that order.
    pub backend: Option<String>,
    /// `web.search_backend`: overrides `web.backend` for `web_search` (Python key name).
    pub search_backend: Option<String>,
    /// `web.searxng_url`: base URL of a SearXNG instance (e.g. `http://127.0.0.1:8888`);
    /// the `SEARXNG_URL` environment variable is used when this is unset.
    pub searxng_url: Option<String>,
    /// `web.allow_private_urls`: let `web_extract` fetch loopback, private, link-local,
    /// unique-local and cloud-metadata addresses (default false: refused).
    pub allow_private_urls: bool,
    /// `web.extract_char_limit`: the per-page cap of `web_extract`, in chars (default
    /// [`DEFAULT_EXTRACT_CHAR_LIMIT`]; at least 1,000).
    pub extract_char_limit: Option<usize>,
}

/// A bad value in the `web:` section; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct WebConfigError {
    /// The key, e.g. `web.backend`.
    pub key: &'static str,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl WebConfig {
    /// The search backend the user chose: `web.search_backend`, else `web.backend`; `None`
    /// when neither is set (or both are blank).
    ///
    /// # Errors
    /// [`WebConfigError`] naming the key whose value is not one of [`SEARCH_BACKENDS`].
    pub fn chosen_backend(&self) -> Result<Option<SearchBackendKind>, WebConfigError> {
        for (key, value) in [
            ("web.search_backend", &self.search_backend),
            ("web.backend", &self.backend),
        ] {
            let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) else {
                continue;
            };
            return match SearchBackendKind::parse(v) {
                Some(kind) => Ok(Some(kind)),
                None => Err(WebConfigError {
                    key,
                    message: format!(
                        "`{v}` is not a search backend this build knows; use one of {}",
                        SEARCH_BACKENDS.join(", ")
                    ),
                }),
            };
        }
        Ok(None)
    }

    /// The per-page cap of `web_extract` in chars.
    ///
    /// # Errors
    /// [`WebConfigError`] for `web.extract_char_limit` below 1,000.
    pub fn extract_char_limit(&self) -> Result<usize, WebConfigError> {
        match self.extract_char_limit {
            None => Ok(DEFAULT_EXTRACT_CHAR_LIMIT),
            Some(n) if n >= 1_000 => Ok(n),
            Some(n) => Err(WebConfigError {
                key: "web.extract_char_limit",
                message: format!("{n} is too small; use at least 1000 (chars)"),
            }),
        }
    }

    /// Checks every key of the section: backend names, the char limit and the SearXNG URL
    /// (must start with `http://` or `https://`).
    ///
    /// # Errors
    /// The first [`WebConfigError`] found.
    pub fn validate(&self) -> Result<(), WebConfigError> {
        self.chosen_backend()?;
        self.extract_char_limit()?;
        if let Some(url) = self.searxng_url.as_deref().map(str::trim)
            && !url.is_empty()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(WebConfigError {
                key: "web.searxng_url",
                message: format!("`{url}` must be an http:// or https:// URL"),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn web_section_reads_and_validates() {
        let c = Config::parse(
            "web:\n  backend: Tavily\n  allow_private_urls: true\n  searxng_url: http://127.0.0.1:8888\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let web = &c.config.web;
        assert!(web.allow_private_urls);
        assert_eq!(web.chosen_backend(), Ok(Some(SearchBackendKind::Tavily)));
        assert_eq!(web.extract_char_limit(), Ok(15_000));
        assert!(web.validate().is_ok());
        assert!(!Config::default().web.allow_private_urls);
        assert_eq!(Config::default().web.chosen_backend(), Ok(None));
    }

    #[test]
    fn search_backend_wins_over_backend() {
        let web = WebConfig {
            backend: Some("exa".into()),
            search_backend: Some("searxng".into()),
            ..WebConfig::default()
        };
        assert_eq!(web.chosen_backend(), Ok(Some(SearchBackendKind::Searxng)));
    }

    #[test]
    fn bad_values_name_their_key() {
        let web = WebConfig {
            backend: Some("bing".into()),
            ..WebConfig::default()
        };
        let e = web.validate().unwrap_err();
        assert_eq!(e.key, "web.backend");
        assert!(e.to_string().starts_with("web.backend: `bing`"), "{e}");
        assert!(
            e.to_string().contains("firecrawl, tavily, exa, searxng"),
            "{e}"
        );
        let web = WebConfig {
            extract_char_limit: Some(10),
            ..WebConfig::default()
        };
        assert_eq!(web.validate().unwrap_err().key, "web.extract_char_limit");
        let web = WebConfig {
            searxng_url: Some("127.0.0.1:8888".into()),
            ..WebConfig::default()
        };
        assert_eq!(web.validate().unwrap_err().key, "web.searxng_url");
        let c = Config::parse("web:\n  backendd: exa\n", Path::new("c.yaml")).unwrap();
        assert!(c.warnings[0].contains("web.backendd"), "{:?}", c.warnings);
        let c = Config::parse(
            "web:\n  allow_private_urls: sometimes\n",
            Path::new("c.yaml"),
        );
        assert!(c.unwrap_err().to_string().contains("line 2"));
    }
}
