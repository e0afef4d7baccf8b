//! Secret redaction for logs, traces and error messages (ARCHITECTURE §5: the runtime is
//! logged with the key redacted; examples in `vectors/numeric_policies.json` `redaction`).

use std::sync::LazyLock;

use regex::Regex;

/// `NAME=value` / `NAME: value` where NAME looks like a secret holder (…KEY, …TOKEN, …SECRET,
/// PASSWORD, …). The value is replaced entirely by `***`.
static ASSIGNMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b([A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|ACCESS_KEY)[A-Z0-9_]*)(\s*[=:]\s*)["']?([^\s"',;&]+)"#,
    )
    .ok()
});

/// Bearer credentials in an `Authorization` header text.
static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})").ok());

/// Well-known token shapes: OpenAI/Anthropic/OpenRouter `sk-…`, GitHub `ghp_…`/`github_pat_…`,
/// AWS `AKIA…`, Slack `xox?-…`, Google `AIza…`, Hugging Face `hf_…`, Nous/Groq style `gsk_…`.
static TOKEN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|AKIA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{20,}|hf_[A-Za-z0-9]{16,}|gsk_[A-Za-z0-9]{16,})",
    )
    .ok()
});

/// Masks one secret value: the first 6 and last 4 chars joined by `...` when it is at least 18
/// chars long (enough left hidden), else `***`.
pub fn mask_secret(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 18 {
        return "***".to_string();
    }
    let head: String = chars[..6].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

/// Redacts secrets in free text: `NAME=value` assignments of secret-looking names become
/// `NAME=***`; bare tokens with a known prefix become `first6...last4` (see [`mask_secret`]);
/// `Bearer <token>` keeps only the masked token. Text without secrets is returned unchanged.
pub fn redact_secrets(text: &str) -> String {
    let mut out = text.to_string();
    if let Some(re) = ASSIGNMENT.as_ref() {
        out = re.replace_all(&out, "${1}${2}***").into_owned();
    }
    if let Some(re) = BEARER.as_ref() {
        out = re
            .replace_all(&out, |c: &regex::Captures<'_>| {
                format!("{}{}", &c[1], mask_secret(&c[2]))
            })
            .into_owned();
    }
    if let Some(re) = TOKEN.as_ref() {
        out = re
            .replace_all(&out, |c: &regex::Captures<'_>| mask_secret(&c[0]))
            .into_owned();
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_fully_hidden() {
        assert_eq!(mask_secret("abc"), "***");
        assert_eq!(
            redact_secrets("Authorization: Bearer sk-or-v1-0123456789abcdef"),
            "Authorization: Bearer sk-or-...cdef"
        );
    }
}
