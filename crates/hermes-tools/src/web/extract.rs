//! The `web_extract` tool (FEATURES §4 `web`): fetch up to [`MAX_URLS`] pages at once and
//! return each one's readable text, in call order, every failure reported in its own entry.

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use super::fetch::{Fetcher, MAX_DOWNLOAD_BYTES};
use super::readable::{BodyKind, Readable, cap_chars, html_to_readable};
use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Most URLs one call may fetch.
pub const MAX_URLS: usize = 5;

/// Model-visible description (`prompts/web_extract_description.md`).
const DESCRIPTION: &str = include_str!("../../prompts/web_extract_description.md");

/// `web_extract(urls: [string])`: fetches the pages concurrently under the address policy of
/// [`super::ssrf`] and returns one entry per URL, in the order given:
///
/// ```text
/// --- [1/2] https://a.example/ ---
/// title: Example
/// <text, at most `char_limit` chars, then a cut marker>
///
/// --- [2/2] https://b.example/ ---
/// error: HTTP 404 Not Found
/// ```
///
/// A `redirected to:` line follows the header when the final URL differs. The result is an
/// error (`is_error`) only when every URL failed.
#[derive(Debug, Clone)]
pub struct WebExtractTool {
    fetcher: Result<Fetcher, String>,
    char_limit: usize,
}

impl WebExtractTool {
    /// A tool that refuses private addresses unless `allow_private_urls`
    /// (`web.allow_private_urls`) and cuts each page at `char_limit` chars
    /// (`web.extract_char_limit`, default 15,000).
    pub fn new(allow_private_urls: bool, char_limit: usize) -> WebExtractTool {
        WebExtractTool {
            fetcher: Fetcher::new(allow_private_urls),
            char_limit,
        }
    }

    async fn one(&self, fetcher: &Fetcher, url: &str) -> Result<String, String> {
        let page = fetcher.fetch(url).await?;
        let mut out = String::new();
        if reqwest::Url::parse(url.trim()).ok().as_ref() != Some(&page.final_url) {
            out.push_str(&format!("redirected to: {}\n", page.final_url));
        }
        let text = match page.kind {
            BodyKind::Html => {
                let body = page.body;
                let readable = convert_on_big_stack(body).await?;
                if let Some(title) = readable.title {
                    out.push_str(&format!("title: {title}\n"));
                }
                readable.text
            }
            BodyKind::Text | BodyKind::Binary(_) => page.body,
        };
        if page.download_cut {
            out.push_str(&format!(
                "note: the download stopped at {} MiB\n",
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            ));
        }
        if text.trim().is_empty() {
            out.push_str("(the page has no readable text)");
        } else {
            out.push('\n');
            out.push_str(&cap_chars(text.trim_end(), self.char_limit));
        }
        Ok(out)
    }
}

/// Stack of the thread that converts one page: the converter recurses once per element level
/// (up to [`crate::web::nesting::MAX_NESTING`] after the nesting guard), far more than a
/// default 2 MiB blocking thread holds in a debug build.
const CONVERTER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// [`html_to_readable`] on a thread of its own with [`CONVERTER_STACK_BYTES`] of stack.
///
/// # Errors
/// The thread could not start or panicked (message for the model).
async fn convert_on_big_stack(body: String) -> Result<Readable, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("web-extract-html".to_string())
        .stack_size(CONVERTER_STACK_BYTES)
        .spawn(move || {
            // Err: the call was cancelled and nobody waits for the text.
            let _ = tx.send(html_to_readable(&body));
        })
        .map_err(|e| format!("the HTML converter could not start: {e}"))?;
    rx.await
        .map_err(|_| "the HTML converter failed on this page".to_string())
}

/// The `urls` argument: an array of strings (a bare string is coerced to a one-element
/// array before the call; see `coerce_args`).
fn urls_arg(args: &Value) -> Result<Vec<String>, String> {
    let Some(items) = args.get("urls").and_then(Value::as_array) else {
        return Err("`urls` must be an array of URL strings".to_string());
    };
    let mut urls = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) if !s.trim().is_empty() => urls.push(s.trim().to_string()),
            _ => return Err(format!("`urls[{i}]` must be a non-empty URL string")),
        }
    }
    if urls.is_empty() {
        return Err("`urls` is empty; give at least one URL".to_string());
    }
    if urls.len() > MAX_URLS {
        return Err(format!(
            "`urls` has {} URLs; at most {MAX_URLS} per call",
            urls.len()
        ));
    }
    Ok(urls)
}

#[async_trait::async_trait]
impl Tool for WebExtractTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_extract".to_string(),
            description: DESCRIPTION.trim().to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "urls": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Full http:// or https:// URLs of the pages to read (1 to 5).",
                        "minItems": 1,
                        "maxItems": MAX_URLS
                    }
                },
                "required": ["urls"]
            }),
        }
    }

    fn toolset(&self) -> &'static str {
        "web"
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let urls = match urls_arg(&args) {
            Ok(u) => u,
            Err(e) => return ToolOutput::error(e),
        };
        let fetcher = match &self.fetcher {
            Ok(f) => f,
            Err(e) => return ToolOutput::error(e.clone()),
        };
        let all = futures::future::join_all(urls.iter().map(|u| self.one(fetcher, u)));
        let results = tokio::select! {
            r = all => r,
            () = ctx.cancel.cancelled() => return ToolOutput::error("cancelled by user"),
        };
        let n = urls.len();
        let failed = results.iter().filter(|r| r.is_err()).count();
        let entries: Vec<String> = urls
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (url, r))| {
                let body = match r {
                    Ok(text) => text,
                    Err(e) => format!("error: {e}"),
                };
                format!("--- [{}/{n}] {url} ---\n{body}", i + 1)
            })
            .collect();
        let text = entries.join("\n\n");
        if failed == n {
            ToolOutput::error(text)
        } else {
            ToolOutput::ok(text)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn urls_argument_is_checked() {
        assert_eq!(
            urls_arg(&json!({"urls": [" https://a.example "]})).unwrap(),
            vec!["https://a.example"]
        );
        assert!(urls_arg(&json!({})).unwrap_err().contains("array"));
        assert!(
            urls_arg(&json!({"urls": []}))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            urls_arg(&json!({"urls": [1]}))
                .unwrap_err()
                .contains("urls[0]")
        );
        let six: Vec<String> = (0..6).map(|i| format!("https://{i}.example")).collect();
        assert!(
            urls_arg(&json!({"urls": six}))
                .unwrap_err()
                .contains("at most 5")
        );
    }
}
