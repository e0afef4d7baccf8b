//! Every line hermes writes to the terminal passes through [`mask`]: command output
//! (`outln!`), warnings and errors (`errln!`), the stderr log layer and the MCP start-up
//! lines. The home's secrets are known once logging is set up ([`set_redactor`], in `main`).

use std::sync::{Arc, OnceLock};

use hermes_protocol::SecretRedactor;

/// The home's secrets, known once logging is set up (`main`).
static REDACTOR: OnceLock<Arc<SecretRedactor>> = OnceLock::new();

/// Sets the redactor every line written to the terminal goes through (once per process).
pub fn set_redactor(redactor: Arc<SecretRedactor>) {
    let _ = REDACTOR.set(redactor);
}

/// `text` as it may reach the terminal: every secret value of the home replaced by its
/// marker, and secret-looking assignments and tokens masked (`hermes_llm::redact_secrets`:
/// `api_key=…` in a URL, `Bearer …`), as in the log files. Command output, warnings and
/// error lines all pass through here, so a key in a server URL or an error message is not
/// shown (the user pass of issue 20).
pub fn mask(text: &str) -> String {
    let known = match REDACTOR.get() {
        Some(r) => r.redact(text),
        None => std::borrow::Cow::Borrowed(text),
    };
    hermes_llm::redact_secrets(&known)
}
