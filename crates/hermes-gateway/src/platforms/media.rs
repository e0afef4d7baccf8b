//! Saving inbound attachments under the gateway's media directory, size-capped
//! (issue 7 §5: inbound media saved under `HERMES_HOME` with size caps).

use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

use crate::delivery::sanitize_file_name;
use crate::platform::{Attachment, AttachmentKind, InboundMessage};

/// Model-visible note for an attachment over the cap (`{name}`, `{size}`, `{max}` in bytes).
const TOO_LARGE: &str = include_str!("../../prompts/attachment_too_large.md");
/// Model-visible note for an attachment whose download failed (`{name}`).
const FAILED: &str = include_str!("../../prompts/attachment_failed.md");

/// Where inbound files go and how large they may be.
#[derive(Debug, Clone)]
pub(crate) struct MediaPolicy {
    /// Directory files are saved in (`<dir>/<platform>/<unique>-<name>`).
    pub(crate) dir: PathBuf,
    /// Largest file kept, in bytes.
    pub(crate) max_bytes: u64,
}

/// An attachment as the platform describes it, before download.
#[derive(Debug, Clone)]
pub(crate) struct RemoteFile {
    /// Prefix that makes the saved name unique (the message id and index).
    pub(crate) unique: String,
    /// The sender's file name.
    pub(crate) file_name: String,
    /// MIME type, if given.
    pub(crate) mime_type: Option<String>,
    /// Size the platform announced, in bytes.
    pub(crate) declared_size: Option<u64>,
}

/// What became of one attachment.
#[derive(Debug)]
pub(crate) enum Saved {
    /// Saved to disk.
    File(Attachment),
    /// Not saved; the note (one line, ends with a newline) goes into the message text.
    Skipped(String),
}

/// Adds a download result to `msg`: a saved file as an attachment, a skipped one as its
/// note on a line of its own in the text.
pub(crate) fn attach(msg: &mut InboundMessage, saved: Saved) {
    match saved {
        Saved::File(a) => msg.attachments.push(a),
        Saved::Skipped(note) => {
            if !msg.text.is_empty() {
                msg.text.push('\n');
            }
            msg.text.push_str(note.trim_end());
        }
    }
}

/// Attachment kind from a MIME type (`image/*`, `audio/*`, `video/*`, else a document).
pub(crate) fn kind_of(mime: Option<&str>) -> AttachmentKind {
    match mime.and_then(|m| m.split('/').next()) {
        Some("image") => AttachmentKind::Image,
        Some("audio") => AttachmentKind::Audio,
        Some("video") => AttachmentKind::Video,
        _ => AttachmentKind::Document,
    }
}

fn too_large(name: &str, size: u64, max: u64) -> Saved {
    Saved::Skipped(
        TOO_LARGE
            .replace("{name}", name)
            .replace("{size}", &size.to_string())
            .replace("{max}", &max.to_string()),
    )
}

fn failed(name: &str) -> Saved {
    Saved::Skipped(FAILED.replace("{name}", name))
}

/// The note for an attachment that could not be fetched at all (`name` is the sender's
/// file name).
#[cfg(any(feature = "matrix", feature = "signal"))]
pub(crate) fn failed_note(name: &str) -> Saved {
    failed(name)
}

/// The note for an attachment of `size` bytes over the cap of `max` bytes.
#[cfg(feature = "signal")]
pub(crate) fn too_large_note(name: &str, size: u64, max: u64) -> Saved {
    too_large(name, size, max)
}

/// Downloads `file` with `request` into `<policy.dir>/<platform>/`, stopping (and removing
/// the partial file) as soon as it exceeds `policy.max_bytes`. Never fails: problems become
/// a [`Saved::Skipped`] note and a warning in the log.
pub(crate) async fn download(
    platform: &str,
    request: reqwest::RequestBuilder,
    file: &RemoteFile,
    policy: &MediaPolicy,
) -> Saved {
    if let Some(size) = file.declared_size
        && size > policy.max_bytes
    {
        return too_large(&file.file_name, size, policy.max_bytes);
    }
    let dir = policy.dir.join(platform);
    let path = dir.join(format!(
        "{}-{}",
        sanitize_file_name(&file.unique),
        sanitize_file_name(&file.file_name)
    ));
    match fetch_to(request, &dir, &path, policy.max_bytes).await {
        Ok(Fetched::Done(size)) => Saved::File(Attachment {
            kind: kind_of(file.mime_type.as_deref()),
            path,
            file_name: Some(file.file_name.clone()),
            mime_type: file.mime_type.clone(),
            size_bytes: size,
        }),
        Ok(Fetched::TooLarge(size)) => too_large(&file.file_name, size, policy.max_bytes),
        Err(e) => {
            tracing::warn!(platform, file = %file.file_name, error = %e, "attachment download failed");
            failed(&file.file_name)
        }
    }
}

enum Fetched {
    Done(u64),
    TooLarge(u64),
}

async fn fetch_to(
    request: reqwest::RequestBuilder,
    dir: &Path,
    path: &Path,
    max: u64,
) -> Result<Fetched, String> {
    let mut resp = request.send().await.map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("HTTP {}", resp.status()));
    }
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Ok(Fetched::TooLarge(len));
    }
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(hermes_protocol::private_fs::PRIVATE_DIR_MODE)
        .create(dir)
        .await
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(hermes_protocol::private_fs::PRIVATE_FILE_MODE)
        .open(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut total = 0u64;
    let result = loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                total += chunk.len() as u64;
                if total > max {
                    break Ok(Fetched::TooLarge(total));
                }
                if let Err(e) = out.write_all(&chunk).await {
                    break Err(format!("{}: {e}", path.display()));
                }
            }
            Ok(None) => {
                break out
                    .flush()
                    .await
                    .map(|()| Fetched::Done(total))
                    .map_err(|e| e.to_string());
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    if !matches!(result, Ok(Fetched::Done(_))) {
        drop(out);
        let _ = tokio::fs::remove_file(path).await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_mime_type() {
        assert_eq!(kind_of(Some("image/png")), AttachmentKind::Image);
        assert_eq!(kind_of(Some("audio/ogg")), AttachmentKind::Audio);
        assert_eq!(kind_of(Some("video/mp4")), AttachmentKind::Video);
        assert_eq!(kind_of(Some("application/pdf")), AttachmentKind::Document);
        assert_eq!(kind_of(None), AttachmentKind::Document);
    }

    #[test]
    fn notes_name_the_file_and_sizes() {
        let Saved::Skipped(note) = too_large("a.bin", 30, 10) else {
            panic!("expected a note");
        };
        assert!(note.contains("a.bin") && note.contains("30") && note.contains("10"));
        assert!(note.ends_with('\n'));
    }
}
