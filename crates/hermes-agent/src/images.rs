//! Image files attached to a user turn (issue 26 item 2): `hermes chat --image PATH`, photos
//! from chat platforms. When the session's model takes images
//! ([`crate::AgentOptions::send_images`], decided by the front end through hermes-llm's
//! `vision::sends_images`), each file becomes an image part (`data:<type>;base64,…`) of the
//! next user message, which every provider adapter sends in its own image form (OpenAI
//! `image_url`, Anthropic `image` blocks, Responses `input_image`). Otherwise nothing is
//! attached and the front end's note naming the saved file is all the model gets.
//!
//! Checked here: the file is a PNG, JPEG, GIF or WebP by its first bytes (the types every
//! provider accepts), and at most [`MAX_IMAGE_BYTES`] (Anthropic's per-image limit; Python
//! Hermes shrinks images above it, hermes refuses them with a reason).

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hermes_protocol::ContentPart;

use crate::Agent;

/// Largest image sent, in bytes (5 MiB).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Why an image file was not attached.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Larger than [`MAX_IMAGE_BYTES`].
    #[error("{} is larger than {} MiB; not sent as an image", path.display(), MAX_IMAGE_BYTES / (1024 * 1024))]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// Not a PNG, JPEG, GIF or WebP file.
    #[error("{} is not a PNG, JPEG, GIF or WebP image; not sent as an image", path.display())]
    NotAnImage {
        /// The file.
        path: PathBuf,
    },
}

/// The MIME type of an image by its first bytes, for the types providers accept.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Reads `path` as a `data:` URL (see the module documentation for the checks).
///
/// Errors: [`ImageError`] when the file cannot be read, is too large or is not an image.
pub fn image_data_url(path: &Path) -> Result<String, ImageError> {
    let read = |source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let Some(mime) = image_type(&bytes) else {
        return Err(ImageError::NotAnImage {
            path: path.to_path_buf(),
        });
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(format!("data:{mime};base64,{data}"))
}

impl Agent {
    /// Attaches the image files `paths` to the next user message, as image parts, when this
    /// session sends images ([`crate::AgentOptions::send_images`]); otherwise attaches
    /// nothing. Returns one line per file not attached and why. The caller names the files
    /// in the message text either way, so the model can still reach them with its tools.
    pub fn attach_images(&mut self, paths: &[PathBuf]) -> Vec<String> {
        if !self.opts.send_images {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for path in paths {
            match image_data_url(path) {
                Ok(url) => self.pending_images.push(ContentPart::Image { url }),
                Err(e) => problems.push(e.to_string()),
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_first_bytes_and_capped() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"%PDF-1.7"), None);

        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("a.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\nxyz").unwrap();
        let url = image_data_url(&png).unwrap();
        assert!(url.starts_with("data:image/png;base64,"), "{url}");
        let pdf = dir.path().join("a.pdf");
        std::fs::write(&pdf, b"%PDF-1.7").unwrap();
        assert!(matches!(
            image_data_url(&pdf),
            Err(ImageError::NotAnImage { .. })
        ));
        let big = dir.path().join("big.png");
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        std::fs::write(&big, bytes).unwrap();
        assert!(matches!(
            image_data_url(&big),
            Err(ImageError::TooLarge { .. })
        ));
        assert!(matches!(
            image_data_url(&dir.path().join("missing.png")),
            Err(ImageError::Read { .. })
        ));
    }
}
