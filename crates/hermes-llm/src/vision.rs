//! Whether the model of a session is sent the pixels of the images a user attaches (issue 26
//! item 2), following Python Hermes 0.19.0's `agent/image_routing.py`:
//! `agent.image_input_mode` is `auto` (default), `native` (always send images) or `text`
//! (never: the model gets a note naming the saved file); in `auto`, images are sent when the
//! model takes them — `model.supports_vision` when set
//! ([`hermes_protocol::config::ModelConfig::supports_vision`]), else the model families
//! known to read images.
//!
//! Python Hermes looks the capability up on models.dev; hermes has no network lookup and
//! knows these families instead (their vendors document image input): OpenAI `gpt-4o`,
//! `gpt-4.1`, `gpt-5`, `o3`, `o4`; Anthropic Claude 3 and later; Google Gemini and Gemma 3;
//! xAI Grok 4 and `grok-*-vision`; Mistral Pixtral; Meta Llama 4; Qwen `-vl` models; LLaVA; any
//! name with `vision`. An unknown model gets text. The embedded local model never gets images.

use crate::runtime::ApiMode;

/// `agent.image_input_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageInputMode {
    /// Images when the model takes them (the default).
    #[default]
    Auto,
    /// Always images.
    Native,
    /// Never images: a note naming the saved file.
    Text,
}

impl ImageInputMode {
    /// Reads the setting (case and surrounding space ignored; unset is `auto`).
    ///
    /// Errors: a value other than `auto`, `native` or `text`, named in the message.
    pub fn parse(value: Option<&str>) -> Result<ImageInputMode, String> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("" | "auto") => Ok(ImageInputMode::Auto),
            Some("native") => Ok(ImageInputMode::Native),
            Some("text") => Ok(ImageInputMode::Text),
            Some(other) => Err(format!(
                "agent.image_input_mode `{other}` is not one of auto, native, text; using auto"
            )),
        }
    }
}

/// Whether `model` is of a family known to read images (see the module documentation).
pub fn known_to_take_images(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    const FAMILIES: &[&str] = &[
        "gpt-4o",
        "gpt-4.1",
        "gpt-5",
        "chatgpt-4o",
        "claude-3",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "claude-4",
        "gemini",
        "gemma-3",
        "gemma3",
        "grok-4",
        "pixtral",
        "llama-4",
        "llava",
        "vision",
        "-vl",
    ];
    let reasoning = ["o3", "o4"]
        .iter()
        .any(|p| m == *p || m.starts_with(&format!("{p}-")));
    reasoning || FAMILIES.iter().any(|f| m.contains(f))
}

/// Whether a session on `model` through `api_mode` is sent image parts: `mode`, then
/// `supports_vision` (`model.supports_vision`), then [`known_to_take_images`]; never for
/// [`ApiMode::Local`].
pub fn sends_images(
    mode: ImageInputMode,
    supports_vision: Option<bool>,
    api_mode: ApiMode,
    model: &str,
) -> bool {
    if api_mode == ApiMode::Local {
        return false;
    }
    match mode {
        ImageInputMode::Native => true,
        ImageInputMode::Text => false,
        ImageInputMode::Auto => supports_vision.unwrap_or_else(|| known_to_take_images(model)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_flags_read_like_python() {
        assert_eq!(ImageInputMode::parse(None), Ok(ImageInputMode::Auto));
        assert_eq!(
            ImageInputMode::parse(Some(" Native ")),
            Ok(ImageInputMode::Native)
        );
        assert!(
            ImageInputMode::parse(Some("pixels"))
                .unwrap_err()
                .contains("pixels")
        );
    }

    #[test]
    fn the_decision_follows_mode_then_override_then_family() {
        let chat = ApiMode::ChatCompletions;
        for model in [
            "gpt-4o-mini",
            "anthropic/claude-sonnet-4.5",
            "google/gemini-2.5-flash",
            "o3",
            "qwen2.5-vl-72b",
        ] {
            assert!(known_to_take_images(model), "{model}");
        }
        for model in [
            "gpt-3.5-turbo",
            "deepseek-chat",
            "o1-mini",
            "mock-model",
            "llama-3.1-8b",
        ] {
            assert!(!known_to_take_images(model), "{model}");
        }
        assert!(sends_images(ImageInputMode::Auto, None, chat, "gpt-4o"));
        assert!(!sends_images(
            ImageInputMode::Auto,
            None,
            chat,
            "mock-model"
        ));
        assert!(sends_images(
            ImageInputMode::Auto,
            Some(true),
            chat,
            "mock-model"
        ));
        assert!(!sends_images(
            ImageInputMode::Auto,
            Some(false),
            chat,
            "gpt-4o"
        ));
        assert!(sends_images(ImageInputMode::Native, Some(false), chat, "x"));
        assert!(!sends_images(
            ImageInputMode::Text,
            Some(true),
            chat,
            "gpt-4o"
        ));
        assert!(!sends_images(
            ImageInputMode::Native,
            Some(true),
            ApiMode::Local,
            "x"
        ));
    }
}
