//! The one place the runner hands reply text to a platform: the Markdown is split and
//! formatted for the platform by [`crate::delivery::render_chunks`] and sent chunk by chunk.

use crate::error::PlatformError;
use crate::platform::{ChatTarget, PlatformAdapter};

/// Sends `markdown` to `target` as one or more formatted messages.
pub async fn deliver(
    adapter: &dyn PlatformAdapter,
    target: &ChatTarget,
    markdown: &str,
) -> Result<(), PlatformError> {
    for chunk in crate::delivery::render_chunks(markdown, &adapter.limits()) {
        adapter.send(target, &chunk).await?;
    }
    Ok(())
}
