//! `read_file(path, offset?, limit?)`: paged reading with line numbers and binary detection.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use super::{opt_u64, req_str};
use crate::tool::{Access, Parallelism, Tool, ToolContext, ToolOutput};

/// Lines returned when `limit` is not given.
pub const DEFAULT_READ_LIMIT: u64 = 500;
/// Largest `limit` honoured.
pub const MAX_READ_LIMIT: u64 = 2_000;
/// Bytes sniffed for binary detection.
pub const SNIFF_BYTES: usize = 4_096;
/// Characters of one line shown before it is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Bytes read past the requested page only to count the file's lines; a longer rest is
/// reported as "more than N lines" rather than read to its end (a multi-gigabyte log).
pub const MAX_COUNT_BYTES: u64 = 64 * 1024 * 1024;

/// `read_file`: returns lines `offset..offset+limit` (1-based) of a text file.
///
/// Output format: one line per file line, `<n>|<text>`, the number right-aligned to the
/// width of the largest number on the page (e.g. `  9|foo`, ` 10|bar`). When more lines
/// follow, a final note says `[showing lines A-B of N; call read_file with offset=B+1 to
/// read more]`. Lines longer than [`MAX_LINE_CHARS`] characters are cut with a marker.
/// Errors (as results): missing file, a directory, anything but a regular file (a FIFO, a
/// socket or a device: reading one may block for ever or never end), a binary file,
/// offset past the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFileTool;

/// True when `prefix` (the first bytes of a file) looks binary: it contains a NUL byte, or,
/// after cutting back to the last complete UTF-8 character, it is not valid UTF-8 and more
/// than 30 % of its bytes are control or non-ASCII bytes. A file whose sniff window ends in
/// the middle of a multi-byte character is therefore not binary.
pub fn is_binary_prefix(prefix: &[u8]) -> bool {
    if prefix.contains(&0) {
        return true;
    }
    match std::str::from_utf8(prefix) {
        Ok(_) => false,
        // Only an incomplete character at the end: valid text cut at a bad boundary.
        Err(e) if e.error_len().is_none() => false,
        Err(_) => {
            let odd = prefix
                .iter()
                .filter(|&&b| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c)) || b >= 0x80)
                .count();
            odd * 10 > prefix.len() * 3
        }
    }
}

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file with line numbers (`N|text`). Pages with `offset` (1-based first \
                 line) and `limit` (lines, default {DEFAULT_READ_LIMIT}, max {MAX_READ_LIMIT}). \
                 Binary files are refused."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based (default 1)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines (default 500)."}
                },
                "required": ["path"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        super::TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::PathScoped {
            arg: "path",
            access: Access::Read,
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let path = match req_str(&args, "path") {
            Ok(p) => ctx.resolve_path(p),
            Err(e) => return ToolOutput::error(e),
        };
        let offset = match opt_u64(&args, "offset") {
            Ok(o) => o.unwrap_or(1).max(1),
            Err(e) => return ToolOutput::error(e),
        };
        let limit = match opt_u64(&args, "limit") {
            Ok(l) => l.unwrap_or(DEFAULT_READ_LIMIT).clamp(1, MAX_READ_LIMIT),
            Err(e) => return ToolOutput::error(e),
        };
        let shown = args
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let job = move |policy: &crate::sandbox::SandboxPolicy| {
            let path = policy.check_read(&path)?;
            read_page(&path, &shown, offset, limit)
        };
        match crate::sandbox::confined(ctx.policy(), job).await {
            Ok(text) => ToolOutput::ok(text),
            Err(e) => ToolOutput::error(e),
        }
    }
}

fn read_page(path: &Path, shown: &str, offset: u64, limit: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("file not found: {shown}"),
        _ => format!("cannot read {shown}: {e}"),
    })?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file; use search_files with target=\"files\" to list it"
        ));
    }
    let not_regular = || {
        format!(
            "{shown} is not a regular file (a pipe, socket or device); read_file reads files \
             only"
        )
    };
    if !meta.is_file() {
        return Err(not_regular());
    }
    // Opened without blocking (a FIFO swapped in after the check above would block the
    // open), then checked again on the open file itself.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("cannot open {shown}: {e}"))?
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    page_of(file, meta.len(), shown, offset, limit)
}

/// The page `offset..offset+limit` (1-based lines) of a text that is not on this machine's
/// disk (an editor's buffer, read through ACP's `fs/read_text_file`), formatted exactly as
/// [`ReadFileTool`] formats a file's: `N|text` lines, long lines cut, the "showing lines"
/// footer; binary-looking text is refused the same way.
///
/// # Errors
/// The text looks binary, or `offset` is past its end (the message names `shown`).
pub fn page_of_text(text: &str, shown: &str, offset: u64, limit: u64) -> Result<String, String> {
    page_of(
        std::io::Cursor::new(text.as_bytes()),
        text.len() as u64,
        shown,
        offset.max(1),
        limit.clamp(1, MAX_READ_LIMIT),
    )
}

/// [`read_page`] on any reader of `len` bytes.
fn page_of(
    mut source: impl Read,
    len: u64,
    shown: &str,
    offset: u64,
    limit: u64,
) -> Result<String, String> {
    let mut sniff = Vec::with_capacity(SNIFF_BYTES);
    (&mut source)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if is_binary_prefix(&sniff) {
        return Err(format!(
            "{shown} looks like a binary file ({len} bytes); read_file only shows text"
        ));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(sniff).chain(source));
    let last = offset + limit - 1;
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut total: u64 = 0;
    let mut buf = Vec::new();
    let mut past_page: u64 = 0;
    let mut counted_all = true;
    loop {
        buf.clear();
        let (n, whole) = read_line_capped(&mut reader, &mut buf)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if n == 0 {
            break;
        }
        if !whole {
            // One line of more than MAX_COUNT_BYTES: show what was kept of it, stop there.
            counted_all = false;
        }
        if total >= last {
            past_page += n;
            if past_page > MAX_COUNT_BYTES {
                counted_all = false;
                break;
            }
        }
        total += 1;
        if total >= offset && total <= last {
            while matches!(buf.last(), Some(b'\n' | b'\r')) {
                buf.pop();
            }
            let text = String::from_utf8_lossy(&buf);
            let text = if text.chars().count() > MAX_LINE_CHARS {
                let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
                format!("{cut}… [line cut at {MAX_LINE_CHARS} chars]")
            } else {
                text.into_owned()
            };
            lines.push((total, text));
        }
        if !whole {
            break;
        }
    }
    if total == 0 {
        return Ok(format!("({shown} is empty)"));
    }
    if lines.is_empty() {
        return Err(format!(
            "offset {offset} is past the end of {shown}, which has {total} lines"
        ));
    }
    let width = lines.last().map_or(1, |(n, _)| n.to_string().len());
    let mut out = String::new();
    for (n, text) in &lines {
        out.push_str(&format!("{n:>width$}|{text}\n"));
    }
    let end = lines.last().map_or(offset, |(n, _)| *n);
    if !counted_all {
        out.push_str(&format!(
            "[showing lines {offset}-{end} of more than {total}; call read_file with offset={} to read more]\n",
            end + 1
        ));
    } else if end < total {
        out.push_str(&format!(
            "[showing lines {offset}-{end} of {total}; call read_file with offset={} to read more]\n",
            end + 1
        ));
    }
    Ok(out)
}

/// Bytes of one line kept in memory: enough for [`MAX_LINE_CHARS`] characters of any width
/// (UTF-8 has at most 4 bytes a character) and a line ending.
const LINE_KEEP_BYTES: usize = MAX_LINE_CHARS * 4 + 2;

/// Reads one line (through `\n` or the end of input) from `reader`, keeping at most
/// [`LINE_KEEP_BYTES`] of it in `buf` and passing over the rest, so a line of gigabytes (a
/// minified bundle, a sparse file) costs no more memory than a short one. Stops inside a
/// line after [`MAX_COUNT_BYTES`].
///
/// Returns the bytes consumed (0 at the end of input) and whether the line was read to its
/// end.
fn read_line_capped(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(u64, bool)> {
    let mut consumed: u64 = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((consumed, true));
        }
        let (take, ended) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = LINE_KEEP_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        consumed += take as u64;
        if ended {
            return Ok((consumed, true));
        }
        if consumed > MAX_COUNT_BYTES {
            return Ok((consumed, false));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn sniff_cut_mid_character_is_text() {
        let mut bytes = "a".repeat(4095).into_bytes();
        bytes.extend_from_slice(&"é".as_bytes()[..1]);
        assert!(!is_binary_prefix(&bytes));
        assert!(is_binary_prefix(b"abc\0def"));
        assert!(is_binary_prefix(&[0xff, 0xfe, 0x80, 0x81, 0x90, 0x41]));
    }

    #[test]
    fn a_long_line_is_passed_over_not_kept() {
        let long = 3 * 1024 * 1024;
        let mut text = vec![b'x'; long];
        text.extend_from_slice(b"\nshort\nlast");
        // A small buffer, so the line spans many fills.
        let mut reader = BufReader::with_capacity(4096, std::io::Cursor::new(text));
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf).unwrap(),
            (long as u64 + 1, true)
        );
        assert_eq!(buf.len(), LINE_KEEP_BYTES);
        buf.clear();
        assert_eq!(read_line_capped(&mut reader, &mut buf).unwrap(), (6, true));
        assert_eq!(buf, b"short\n");
        buf.clear();
        assert_eq!(read_line_capped(&mut reader, &mut buf).unwrap(), (4, true));
        assert_eq!(buf, b"last");
        buf.clear();
        assert_eq!(read_line_capped(&mut reader, &mut buf).unwrap(), (0, true));
    }

    #[test]
    fn a_line_past_the_scan_limit_stops_the_read() {
        let mut reader = BufReader::new(std::io::repeat(b'y'));
        let mut buf = Vec::new();
        let (n, whole) = read_line_capped(&mut reader, &mut buf).unwrap();
        assert!(!whole);
        assert!(n > MAX_COUNT_BYTES);
        assert_eq!(buf.len(), LINE_KEEP_BYTES);
    }
}
