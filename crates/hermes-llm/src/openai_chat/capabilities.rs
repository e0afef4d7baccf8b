//! Per-endpoint wire capabilities of the Chat Completions adapter, decided from the base URL
//! and the model name (ARCHITECTURE §1: provider quirks stay inside hermes-llm).
//!
//! - **Reasoning echo** (FEATURES §2 "reasoning content is stored and replayed where the
//!   provider requires it"): DeepSeek's reasoner models and Moonshot's Kimi thinking models
//!   want the `reasoning_content` of earlier assistant turns sent back on those messages (in
//!   tool-calling turns they reject or degrade without it). Echoed for: any model named
//!   `deepseek-reasoner`; models whose name contains `reasoner` on `api.deepseek.com`; every
//!   model on `api.moonshot.ai` / `api.moonshot.cn`; Kimi thinking models (`kimi-…thinking…`)
//!   on any host. Everyone else never receives the field.
//! - **Prompt caching through OpenRouter** (FEATURES §5 `system_and_3`): Claude models reached
//!   through `openrouter.ai` accept Anthropic `cache_control` markers on content parts.

use crate::anthropic::CacheTtl;

/// The lowercase host of a base URL (`""` when there is none).
fn host(base_url: &str) -> String {
    let url = base_url.trim().to_ascii_lowercase();
    let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    after_scheme
        .split(['/', ':', '?'])
        .next()
        .unwrap_or("")
        .to_string()
}

/// The model name lowercased, without a vendor prefix such as `deepseek/` or `moonshotai/`.
fn bare_model(model: &str) -> String {
    let m = model.trim().to_ascii_lowercase();
    match m.rsplit_once('/') {
        Some((_, name)) => name.to_string(),
        None => m,
    }
}

/// True when assistant messages sent to this endpoint must carry their stored reasoning as
/// `reasoning_content` (rules in the module doc).
pub fn requires_reasoning_echo(base_url: &str, model: &str) -> bool {
    let host = host(base_url);
    let name = bare_model(model);
    if name == "deepseek-reasoner" {
        return true;
    }
    if host == "api.deepseek.com" && name.contains("reasoner") {
        return true;
    }
    if host == "api.moonshot.ai" || host == "api.moonshot.cn" {
        return true;
    }
    name.starts_with("kimi") && name.contains("thinking")
}

/// True when the endpoint is OpenRouter (provider id `openrouter`, or host `openrouter.ai`)
/// and the model a Claude model, so `cache_control` markers are understood.
pub fn supports_cache_control(provider_id: &str, base_url: &str, model: &str) -> bool {
    let host = host(base_url);
    let openrouter =
        provider_id == "openrouter" || host == "openrouter.ai" || host.ends_with(".openrouter.ai");
    openrouter && model.to_ascii_lowercase().contains("claude")
}

/// Wire options of the Chat Completions body builder that depend on the endpoint and model,
/// not on the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChatWireOptions {
    /// Send stored reasoning back as `reasoning_content` on assistant messages.
    pub echo_reasoning: bool,
    /// `system_and_3` prompt caching with this TTL (`cache_control` on content parts);
    /// `None` = no markers.
    pub cache: Option<CacheTtl>,
}

impl ChatWireOptions {
    /// The options this provider, endpoint and model need: [`requires_reasoning_echo`], and
    /// caching with `ttl` when [`supports_cache_control`].
    pub fn detect(
        provider_id: &str,
        base_url: &str,
        model: &str,
        ttl: CacheTtl,
    ) -> ChatWireOptions {
        ChatWireOptions {
            echo_reasoning: requires_reasoning_echo(base_url, model),
            cache: supports_cache_control(provider_id, base_url, model).then_some(ttl),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_echo_endpoints() {
        assert!(requires_reasoning_echo(
            "https://api.deepseek.com/v1",
            "deepseek-reasoner"
        ));
        assert!(requires_reasoning_echo(
            "http://127.0.0.1:9/v1",
            "deepseek/deepseek-reasoner"
        ));
        assert!(requires_reasoning_echo(
            "https://api.moonshot.ai/v1",
            "kimi-k2-0905-preview"
        ));
        assert!(requires_reasoning_echo(
            "https://openrouter.ai/api/v1",
            "moonshotai/kimi-k2-thinking"
        ));
        assert!(!requires_reasoning_echo(
            "https://api.deepseek.com/v1",
            "deepseek-chat"
        ));
        assert!(!requires_reasoning_echo(
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4"
        ));
        assert!(!requires_reasoning_echo(
            "http://127.0.0.1:8080/v1",
            "qwen3-8b"
        ));
    }

    #[test]
    fn cache_control_only_for_claude_on_openrouter() {
        assert!(supports_cache_control(
            "custom",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4"
        ));
        assert!(supports_cache_control(
            "openrouter",
            "http://127.0.0.1:9/v1",
            "anthropic/claude-sonnet-4"
        ));
        assert!(!supports_cache_control(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "openai/gpt-4.1"
        ));
        assert!(!supports_cache_control(
            "openai",
            "https://api.openai.com/v1",
            "claude-sonnet-4"
        ));
        let opts = ChatWireOptions::detect(
            "custom",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-opus-4.1",
            CacheTtl::OneHour,
        );
        assert_eq!(opts.cache, Some(CacheTtl::OneHour));
        assert!(!opts.echo_reasoning);
    }
}
