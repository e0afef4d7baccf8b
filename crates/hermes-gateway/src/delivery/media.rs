//! Files in and out: `MEDIA:<path>` tags in replies ([`extract_media`]) and saving inbound
//! attachments ([`save_inbound`]) (issue 7 part 5).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;

/// Longest sanitized file name kept by [`save_inbound`], in chars.
const MAX_NAME_CHARS: usize = 80;

/// Which files `MEDIA:<path>` tags may send: regular files inside one of `allowed`, inside
/// none of `denied`, not named like key material
/// ([`hermes_tools::safety::is_key_material_name`]) and not a hard link to a denied file.
/// The tag is written by the model, so anything it read (a web page, a chat message) can
/// ask for a file: the attack pass of issue 18 had `.env` and `auth.json` uploaded to a chat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaPolicy {
    /// Folders files may come from.
    pub allowed: Vec<PathBuf>,
    /// Files and folders inside those that never leave.
    pub denied: Vec<PathBuf>,
}

impl MediaPolicy {
    /// Files under `home`, except its secrets (`.env*`, `auth.json*`, `mcp-tokens/`, of every
    /// related home: [`hermes_tools::sandbox::secret_paths`]) and its control and state files
    /// ([`hermes_tools::sandbox::HERMES_CONTROL_PATHS`]: `config.yaml`, `state.db`,
    /// `memories/`, `logs/`, `cron/`, `pairing/`, …, which hold other chats and the user's
    /// settings). What is left is what tools and platforms put there: caches, downloads and
    /// inbound attachments.
    pub fn for_home(home: &hermes_protocol::HermesHome) -> MediaPolicy {
        let user_home = std::env::var_os("HOME").map(PathBuf::from);
        let mut denied = hermes_tools::sandbox::secret_paths(home, user_home.as_deref());
        denied.extend(
            hermes_tools::sandbox::HERMES_CONTROL_PATHS
                .iter()
                .map(|p| home.root().join(p)),
        );
        MediaPolicy {
            allowed: vec![home.root().to_path_buf()],
            denied,
        }
    }

    /// Only `dirs`, nothing inside them denied (tests and embedders).
    pub fn dirs(dirs: Vec<PathBuf>) -> MediaPolicy {
        MediaPolicy {
            allowed: dirs,
            denied: Vec::new(),
        }
    }
}

/// Pulls `MEDIA:<path>` tags out of a reply.
///
/// A tag is `MEDIA:` followed by a path up to the next whitespace (or a quoted path:
/// `MEDIA:"/a b.png"`); trailing punctuation is not part of the path. A file is sent when
/// its canonical path (symlinks followed; relative paths are tried against each allowed
/// directory in order) passes `policy` ([`MediaPolicy`]). Allowed files are returned in
/// order of appearance and their tags removed; a refused tag is replaced by a short note
/// saying which file was not sent and why; `MEDIA:http(s)://…` is replaced by the bare URL.
/// Lines left empty by a removed tag are dropped.
pub fn extract_media(text: &str, policy: &MediaPolicy) -> (String, Vec<PathBuf>) {
    let tags = media_tags(text, policy);
    (tags.text, tags.files)
}

/// What [`media_tags`] found in a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaTags {
    /// The text without the sent tags (refused ones replaced by a note).
    pub text: String,
    /// The files to send, in order of appearance.
    pub files: Vec<PathBuf>,
    /// The refused tags: the path as written and why it was refused.
    pub refused: Vec<(String, &'static str)>,
}

/// [`extract_media`], also telling which tags were refused and why (for callers that stop
/// rather than send a note, such as `hermes send`).
pub fn media_tags(text: &str, policy: &MediaPolicy) -> MediaTags {
    const TAG: &str = "MEDIA:";
    if !text.contains(TAG) {
        return MediaTags {
            text: text.to_string(),
            ..MediaTags::default()
        };
    }
    let roots: Vec<PathBuf> = policy
        .allowed
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let denied: Vec<PathBuf> = policy
        .denied
        .iter()
        .flat_map(|d| [Some(d.clone()), d.canonicalize().ok()])
        .flatten()
        .collect();
    let mut files = Vec::new();
    let mut refused = Vec::new();
    let mut out_lines = Vec::new();
    for line in text.split('\n') {
        if !line.contains(TAG) {
            out_lines.push(line.to_string());
            continue;
        }
        let mut out = String::new();
        let mut rest = line;
        while let Some(pos) = rest.find(TAG) {
            out.push_str(&rest[..pos]);
            let after = rest[pos + TAG.len()..].trim_start();
            let (raw, remaining) = take_path(after);
            rest = remaining;
            if raw.is_empty() {
                out.push_str(TAG);
                continue;
            }
            if raw.starts_with("http://") || raw.starts_with("https://") {
                out.push_str(raw);
                continue;
            }
            match resolve(raw, &roots, &denied) {
                Ok(path) => files.push(path),
                Err(reason) => {
                    out.push_str(&format!("[file not sent: {raw} ({reason})]"));
                    refused.push((raw.to_string(), reason));
                }
            }
        }
        out.push_str(rest);
        let trimmed = out.trim_end();
        let bare = trimmed.trim().trim_matches('`').trim();
        if bare.is_empty() && !line.trim().is_empty() {
            continue;
        }
        out_lines.push(trimmed.to_string());
    }
    MediaTags {
        text: out_lines.join("\n").trim_end().to_string(),
        files,
        refused,
    }
}

/// Splits `s` into the path of a tag and the text after it.
fn take_path(s: &str) -> (&str, &str) {
    for quote in ['"', '\'', '`'] {
        if let Some(body) = s.strip_prefix(quote)
            && let Some(end) = body.find(quote)
        {
            return (&body[..end], &body[end + 1..]);
        }
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let path = s[..end].trim_end_matches([
        '.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '"', '\'', '`',
    ]);
    (path, &s[path.len()..])
}

fn resolve(raw: &str, roots: &[PathBuf], denied: &[PathBuf]) -> Result<PathBuf, &'static str> {
    let candidate = Path::new(raw);
    let canonical = if candidate.is_absolute() {
        candidate.canonicalize().ok()
    } else {
        roots
            .iter()
            .find_map(|r| r.join(candidate).canonicalize().ok())
    };
    let Some(path) = canonical else {
        return Err("no such file");
    };
    if !roots.iter().any(|r| path.starts_with(r)) {
        return Err("outside the allowed directories");
    }
    let Ok(meta) = std::fs::metadata(&path) else {
        return Err("no such file");
    };
    if !meta.is_file() {
        return Err("not a regular file");
    }
    if denied.iter().any(|d| path.starts_with(d))
        || hermes_tools::safety::is_key_material_name(&path)
        || hermes_tools::safety::is_same_file_as_any(&meta, denied)
    {
        return Err("it holds secrets or settings, which are never sent");
    }
    Ok(path)
}

/// Why [`save_inbound`] did not save a file.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The file is larger than the cap.
    #[error("file of {size} bytes is over the {max} byte limit")]
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// The cap in bytes.
        max: u64,
    },
    /// Creating the directory or writing the file failed.
    #[error("cannot save {}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A file name safe to join to a directory: ASCII letters, digits, `.`, `-`, `_` kept,
/// everything else `_`, no leading dots, at most 80 chars, `file` when nothing is left.
pub fn sanitize_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    let cut: String = cleaned
        .chars()
        .rev()
        .take(MAX_NAME_CHARS)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if cut.trim_matches(['_', '.']).is_empty() {
        "file".to_string()
    } else {
        cut
    }
}

/// Saves an inbound attachment as `media_dir/<unique>-<sanitized name>` with mode 0600
/// (the directory is created with 0700 when missing) and returns the path. Never
/// overwrites: the unique prefix is a millisecond timestamp plus a counter, retried on a
/// clash.
///
/// # Errors
/// [`SaveError::TooLarge`] when `bytes` is longer than `max_bytes` (nothing is written);
/// [`SaveError::Io`] when the directory or the file cannot be written.
pub async fn save_inbound(
    media_dir: &Path,
    name: &str,
    bytes: &[u8],
    max_bytes: u64,
) -> Result<PathBuf, SaveError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let size = bytes.len() as u64;
    if size > max_bytes {
        return Err(SaveError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SaveError::Io { path, source }
    };
    let mut builder = tokio::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    builder.create(media_dir).await.map_err(io(media_dir))?;
    let clean = sanitize_file_name(name);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = media_dir.join(format!("{millis}-{n}-{clean}"));
        let opened = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .await;
        let mut file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&path)(e)),
        };
        file.write_all(bytes).await.map_err(io(&path))?;
        file.flush().await.map_err(io(&path))?;
        return Ok(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize_file_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_file_name(".hidden file.txt"), "hidden_file.txt");
        assert_eq!(sanitize_file_name("..."), "file");
        assert_eq!(sanitize_file_name("фото.jpg"), "____.jpg");
        assert_eq!(sanitize_file_name(&"a".repeat(200)).len(), 80);
    }
}
