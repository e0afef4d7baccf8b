//! Streaming by edits, tool progress lines, typing, MEDIA tags and inbound saving, against a
//! recording fake adapter in tokio paused time (issue 7 part 5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mdv2.rs"]
mod mdv2;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_gateway::delivery::{MIN_EDIT_INTERVAL, SaveError};
use hermes_gateway::{
    ChatTarget, DeliveryOptions, DeliveryReport, InboundMessage, LengthUnit, Markup,
    PlatformAdapter, PlatformError, PlatformLimits, SentMessage, StreamingReply, ToolProgressMode,
    render_chunks, save_inbound,
};
use hermes_protocol::{AgentEvent, TurnOutcome, Usage};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Send(String),
    Edit(String, String),
    File(PathBuf),
    Typing,
}

struct Fake {
    limits: PlatformLimits,
    reject_escapes: bool,
    calls: Mutex<Vec<(Instant, Call)>>,
}

impl Fake {
    fn new(limits: PlatformLimits) -> Arc<Fake> {
        Arc::new(Fake {
            limits,
            reject_escapes: false,
            calls: Mutex::new(Vec::new()),
        })
    }
    fn calls(&self) -> Vec<(Instant, Call)> {
        self.calls.lock().unwrap().clone()
    }
    fn texts(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .map(|(_, c)| c)
            .filter(|c| !matches!(c, Call::Typing))
            .collect()
    }
    fn record(&self, c: Call) {
        self.calls.lock().unwrap().push((Instant::now(), c));
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for Fake {
    fn name(&self) -> &str {
        "fake"
    }
    fn limits(&self) -> PlatformLimits {
        self.limits
    }
    async fn run(
        &self,
        _inbound: mpsc::Sender<InboundMessage>,
        _cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        Ok(())
    }
    async fn send(&self, _t: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        if self.reject_escapes && text.contains('\\') {
            return Err(PlatformError::Rejected {
                platform: "fake".into(),
                detail: "Can't parse entities".into(),
            });
        }
        assert!(
            text.encode_utf16().count() <= self.limits.max_message_len,
            "over the limit: {text}"
        );
        self.record(Call::Send(text.to_string()));
        let n = self.calls.lock().unwrap().len();
        Ok(SentMessage {
            message_id: format!("m{n}"),
        })
    }
    async fn edit(
        &self,
        _t: &ChatTarget,
        m: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        assert!(text.encode_utf16().count() <= self.limits.max_message_len);
        self.record(Call::Edit(m.message_id.clone(), text.to_string()));
        Ok(())
    }
    async fn send_file(
        &self,
        _t: &ChatTarget,
        path: &Path,
        _caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.record(Call::File(path.to_path_buf()));
        Ok(SentMessage {
            message_id: "f".into(),
        })
    }
    async fn typing(&self, _t: &ChatTarget) -> Result<(), PlatformError> {
        self.record(Call::Typing);
        Ok(())
    }
}

fn telegram(max: usize, edit: bool) -> PlatformLimits {
    PlatformLimits {
        max_message_len: max,
        length_unit: LengthUnit::Utf16,
        markup: Markup::TelegramMarkdownV2,
        supports_edit: edit,
    }
}

fn target() -> ChatTarget {
    ChatTarget {
        chat_id: "42".into(),
        thread_id: None,
        reply_to: None,
    }
}

fn finished(text: &str) -> AgentEvent {
    AgentEvent::TurnFinished {
        outcome: TurnOutcome::Completed,
        final_text: text.into(),
        usage: Usage::default(),
    }
}

fn delta(text: &str) -> AgentEvent {
    AgentEvent::TextDelta { text: text.into() }
}

fn tool(name: &str, preview: &str) -> AgentEvent {
    AgentEvent::ToolStarted {
        call_id: format!("c-{name}"),
        name: name.into(),
        args_preview: preview.into(),
        arguments: String::new(),
    }
}

/// Runs a delivery; `script` feeds events with pauses (paused time auto-advances).
async fn deliver(
    fake: &Arc<Fake>,
    opts: DeliveryOptions,
    script: Vec<(Duration, AgentEvent)>,
) -> DeliveryReport {
    let (tx, rx) = mpsc::unbounded_channel();
    let reply = StreamingReply::new(fake.clone(), target(), opts);
    let task = tokio::spawn(reply.run(rx));
    for (pause, event) in script {
        tokio::time::sleep(pause).await;
        tx.send(event).unwrap();
    }
    drop(tx);
    tokio::time::timeout(Duration::from_secs(600), task)
        .await
        .expect("delivery hung")
        .unwrap()
}

fn streaming() -> DeliveryOptions {
    DeliveryOptions {
        streaming: true,
        typing_interval: None,
        ..DeliveryOptions::default()
    }
}

#[tokio::test(start_paused = true)]
async fn streamed_text_is_sent_once_then_edited_at_most_every_interval() {
    let fake = Fake::new(telegram(4096, true));
    let mut script = vec![(Duration::ZERO, delta("Hello"))];
    let mut full = "Hello".to_string();
    for i in 0..30 {
        let piece = format!(" word{i}.");
        full.push_str(&piece);
        script.push((Duration::from_millis(100), delta(&piece)));
    }
    script.push((Duration::from_millis(50), finished(&full)));
    let report = deliver(&fake, streaming(), script).await;

    let calls: Vec<(Instant, Call)> = fake.calls();
    assert!(matches!(&calls[0].1, Call::Send(t) if t == "Hello"));
    assert_eq!(
        calls
            .iter()
            .filter(|(_, c)| matches!(c, Call::Send(_)))
            .count(),
        1
    );
    let edits = calls.len() - 1;
    assert!(
        edits >= 3,
        "streaming should have edited a few times: {calls:?}"
    );
    for pair in calls.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= MIN_EDIT_INTERVAL,
            "two updates {:?} apart",
            pair[1].0 - pair[0].0
        );
    }
    let last = match &calls.last().unwrap().1 {
        Call::Edit(_, t) => t.clone(),
        other => panic!("last call {other:?}"),
    };
    assert_eq!(last, render_chunks(&full, &telegram(4096, true))[0]);
    assert_eq!(report.sent, 1);
    assert_eq!(report.edits, edits);
    assert_eq!(report.outcome, Some(TurnOutcome::Completed));
}

#[tokio::test(start_paused = true)]
async fn overflow_finishes_the_message_and_continues_in_a_new_one() {
    let fake = Fake::new(telegram(300, true));
    let mut script = Vec::new();
    let mut full = String::new();
    for i in 0..40 {
        let line = format!("line {i} has a few words in it.\n");
        full.push_str(&line);
        script.push((Duration::from_millis(300), delta(&line)));
    }
    script.push((Duration::ZERO, finished(&full)));
    deliver(&fake, streaming(), script).await;

    // The final text of every message, in order.
    let mut finals: Vec<(String, String)> = Vec::new();
    for call in fake.texts() {
        match call {
            Call::Send(t) => finals.push((format!("m{}", finals.len()), t)),
            Call::Edit(_, t) => {
                if let Some(last) = finals.last_mut() {
                    last.1 = t;
                }
            }
            _ => {}
        }
    }
    assert!(finals.len() >= 4, "{finals:#?}");
    let mut plain = String::new();
    for (_, text) in &finals {
        let report = mdv2::check(text);
        assert!(report.is_valid(), "{report:?}: {text}");
        plain.push_str(&report.plain);
        plain.push('\n');
    }
    let mut at = 0;
    for i in 0..40 {
        let needle = format!("line {i} has a few words in it.");
        let found = plain[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("{needle} missing"));
        at += found + needle.len();
    }
}

#[tokio::test(start_paused = true)]
async fn without_streaming_only_the_final_chunks_are_sent() {
    let fake = Fake::new(telegram(4096, true));
    let text = "**Done.** See `out.txt`.";
    let opts = DeliveryOptions {
        typing_interval: None,
        ..DeliveryOptions::default()
    };
    deliver(
        &fake,
        opts,
        vec![
            (Duration::ZERO, delta("**Done.**")),
            (Duration::from_secs(1), delta(" See `out.txt`.")),
            (Duration::ZERO, finished(text)),
        ],
    )
    .await;
    assert_eq!(
        fake.texts(),
        vec![Call::Send("*Done\\.* See `out.txt`\\.".into())]
    );
}

async fn progress_lines(mode: ToolProgressMode, edit: bool) -> Vec<Call> {
    let fake = Fake::new(telegram(4096, edit));
    let opts = DeliveryOptions {
        tool_progress: mode,
        typing_interval: None,
        ..DeliveryOptions::default()
    };
    deliver(
        &fake,
        opts,
        vec![
            (Duration::ZERO, tool("read_file", "notes.txt")),
            (Duration::from_secs(1), tool("read_file", "todo.md")),
            (Duration::from_secs(1), tool("terminal", "ls -la")),
            (Duration::from_secs(1), finished("ok")),
        ],
    )
    .await;
    fake.texts()
}

#[tokio::test(start_paused = true)]
async fn tool_progress_follows_the_display_mode() {
    let send = |s: &str| Call::Send(s.to_string());
    assert_eq!(
        progress_lines(ToolProgressMode::Off, false).await,
        vec![send("ok")]
    );
    assert_eq!(
        progress_lines(ToolProgressMode::New, false).await,
        vec![send("⚙ read\\_file"), send("⚙ terminal"), send("ok")]
    );
    assert_eq!(
        progress_lines(ToolProgressMode::All, false).await,
        vec![
            send("⚙ read\\_file"),
            send("⚙ read\\_file"),
            send("⚙ terminal"),
            send("ok")
        ]
    );
    assert_eq!(
        progress_lines(ToolProgressMode::Verbose, false).await,
        vec![
            send("⚙ read\\_file: notes\\.txt"),
            send("⚙ read\\_file: todo\\.md"),
            send("⚙ terminal: ls \\-la"),
            send("ok")
        ]
    );
    // With edits, the lines gather in one progress message.
    let calls = progress_lines(ToolProgressMode::New, true).await;
    assert_eq!(calls.len(), 3);
    assert!(matches!(&calls[1], Call::Edit(_, t) if t == "⚙ read\\_file\n⚙ terminal"));
    assert_eq!(
        ToolProgressMode::parse("verbose"),
        Ok(ToolProgressMode::Verbose)
    );
    assert!(
        ToolProgressMode::parse("loud")
            .unwrap_err()
            .contains("loud")
    );
}

#[tokio::test(start_paused = true)]
async fn typing_is_refreshed_while_the_turn_runs() {
    let fake = Fake::new(telegram(4096, true));
    let opts = DeliveryOptions::default();
    deliver(
        &fake,
        opts,
        vec![(Duration::from_secs(10), finished("done"))],
    )
    .await;
    let typing: Vec<Instant> = fake
        .calls()
        .into_iter()
        .filter(|(_, c)| *c == Call::Typing)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(typing.len(), 3, "at 0 s, 4 s and 8 s");
    assert_eq!(typing[1] - typing[0], Duration::from_secs(4));
}

#[tokio::test]
async fn media_tags_send_allowed_files_and_refuse_others() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let chart = home.path().join("chart.png");
    std::fs::write(&chart, b"png").unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, b"s").unwrap();
    std::os::unix::fs::symlink(&secret, home.path().join("link.txt")).unwrap();

    let text = format!(
        "Here is the chart:\nMEDIA:{}\nAnd MEDIA:link.txt and MEDIA:{}.",
        chart.display(),
        secret.display()
    );
    let dirs = hermes_gateway::MediaPolicy::dirs(vec![home.path().to_path_buf()]);
    let (clean, files) = hermes_gateway::extract_media(&text, &dirs);
    assert_eq!(files, vec![chart.canonicalize().unwrap()]);
    assert!(!clean.contains("MEDIA:"));
    assert!(clean.starts_with("Here is the chart:\nAnd [file not sent: link.txt (outside"));
    assert!(clean.contains(&format!("[file not sent: {} (outside", secret.display())));

    let fake = Fake::new(telegram(4096, true));
    let opts = DeliveryOptions {
        typing_interval: None,
        media: dirs,
        ..DeliveryOptions::default()
    };
    let report = deliver(&fake, opts, vec![(Duration::ZERO, finished(&text))]).await;
    let calls = fake.texts();
    assert_eq!(calls.len(), 2);
    assert!(matches!(&calls[0], Call::Send(t) if !t.contains("MEDIA")));
    assert_eq!(calls[1], Call::File(chart.canonicalize().unwrap()));
    assert_eq!(report.files.len(), 1);
}

#[tokio::test]
async fn rejected_markup_falls_back_to_plain_text_and_says_so() {
    let fake = Arc::new(Fake {
        limits: telegram(4096, false),
        reject_escapes: true,
        calls: Mutex::new(Vec::new()),
    });
    let opts = DeliveryOptions {
        typing_interval: None,
        ..DeliveryOptions::default()
    };
    let report = deliver(&fake, opts, vec![(Duration::ZERO, finished("Done. 1+1=2"))]).await;
    assert!(report.plain_fallback);
    assert_eq!(report.errors.len(), 1);
    assert_eq!(fake.texts(), vec![Call::Send("Done. 1+1=2".into())]);
}

#[tokio::test]
async fn inbound_files_are_saved_private_unique_and_capped() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let media = dir.path().join("media").join("telegram");
    let a = save_inbound(&media, "../x/photo 1.jpg", b"abc", 10)
        .await
        .unwrap();
    let b = save_inbound(&media, "../x/photo 1.jpg", b"def", 10)
        .await
        .unwrap();
    assert_ne!(a, b);
    assert!(a.starts_with(&media));
    assert!(
        a.file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-photo_1.jpg")
    );
    assert_eq!(std::fs::read(&a).unwrap(), b"abc");
    let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let err = save_inbound(&media, "big.bin", &[0u8; 11], 10)
        .await
        .unwrap_err();
    assert!(matches!(err, SaveError::TooLarge { size: 11, max: 10 }));
    assert_eq!(std::fs::read_dir(&media).unwrap().count(), 2);
}

fn restarted() -> AgentEvent {
    AgentEvent::StreamRestarted {
        attempt: 2,
        reason: "the model stream ended before the response was complete".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_restarted_stream_replaces_the_partial_message_instead_of_repeating_it() {
    let fake = Fake::new(telegram(4096, true));
    let second = Duration::from_secs(1);
    let script = vec![
        (Duration::ZERO, delta("Step one")),
        (second, delta(" is to")),
        (second, restarted()),
        (second, delta("Step one is to measure")),
        (second, delta(" twice")),
        (second, finished("Step one is to measure twice")),
    ];
    let report = deliver(&fake, streaming(), script).await;
    assert_eq!(report.outcome, Some(TurnOutcome::Completed));
    let calls = fake.texts();
    let notice = hermes_gateway::delivery::RESTART_NOTICE;
    assert_eq!(
        calls,
        vec![
            Call::Send("Step one".into()),
            Call::Edit("m1".into(), "Step one is to".into()),
            Call::Edit("m1".into(), notice.into()),
            Call::Edit("m1".into(), "Step one is to measure".into()),
            Call::Edit("m1".into(), "Step one is to measure twice".into()),
        ],
        "one message, never the answer twice"
    );
    assert_eq!(report.sent, 1);
}

#[tokio::test(start_paused = true)]
async fn a_restart_after_an_overflow_reuses_the_first_message_and_marks_the_rest() {
    let fake = Fake::new(telegram(300, true));
    let long = "word ".repeat(80);
    let script = vec![
        (Duration::ZERO, delta(&long)),
        (Duration::from_secs(1), restarted()),
        (Duration::from_secs(1), delta("short answer")),
        (Duration::from_secs(1), finished("short answer")),
    ];
    let report = deliver(&fake, streaming(), script).await;
    let notice = hermes_gateway::delivery::RESTART_NOTICE;
    let calls = fake.texts();
    // The fake names a sent message after the number of calls recorded so far.
    let ids: Vec<String> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, Call::Send(_)))
        .map(|(i, _)| format!("m{}", i + 1))
        .collect();
    assert_eq!(
        ids.len(),
        2,
        "the cut attempt filled two messages: {calls:?}"
    );
    // The first message ends up holding the retried answer, the second only the notice.
    let last_text = |id: &str| {
        calls
            .iter()
            .rev()
            .find_map(|c| match c {
                Call::Edit(m, t) if m == id => Some(t.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(last_text(&ids[0]), "short answer", "{calls:?}");
    assert_eq!(last_text(&ids[1]), notice, "{calls:?}");
    assert_eq!(report.sent, 2, "no new message for the retry");
}

#[tokio::test(start_paused = true)]
async fn a_restart_whose_retry_fails_leaves_the_notice_and_the_error_not_the_partial() {
    let fake = Fake::new(telegram(4096, true));
    let script = vec![
        (Duration::ZERO, delta("Half an ans")),
        (Duration::from_secs(1), restarted()),
        (
            Duration::from_secs(1),
            AgentEvent::TurnFinished {
                outcome: TurnOutcome::Failed,
                final_text: "The model call failed: network error".into(),
                usage: Usage::default(),
            },
        ),
    ];
    deliver(&fake, streaming(), script).await;
    let calls = fake.texts();
    let notice = hermes_gateway::delivery::RESTART_NOTICE;
    assert_eq!(calls[0], Call::Send("Half an ans".into()));
    assert_eq!(calls[1], Call::Edit("m1".into(), notice.into()));
    assert!(
        matches!(&calls[2], Call::Send(t) if t.contains("model call failed")),
        "{calls:?}"
    );
    assert_eq!(calls.len(), 3, "{calls:?}");
}

/// A reply naming HERMES_HOME's secrets, settings and state (the attack pass of issue 18 had
/// a prompt-injected model upload `.env` and `auth.json` to a chat): none is sent, whether
/// named directly, through a symlink, a hard link or a key-like name; a cache file is.
#[tokio::test]
async fn media_tags_never_send_secrets_settings_or_state() {
    let dir = tempfile::tempdir().unwrap();
    let home = hermes_protocol::HermesHome::new(dir.path().to_path_buf());
    let root = home.root().to_path_buf();
    for (name, body) in [
        (".env", "OPENAI_API_KEY=sk-canary-env-0001"),
        (".env.bak", "OPENAI_API_KEY=sk-canary-env-0002"),
        ("auth.json", "{\"k\":\"sk-canary-auth-0003\"}"),
        ("config.yaml", "model: {api_key: sk-canary-cfg-0004}"),
        ("state.db", "sqlite"),
    ] {
        std::fs::write(root.join(name), body).unwrap();
    }
    for sub in ["mcp-tokens", "memories", "logs", "cache", "cron"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("mcp-tokens/docs.json"), "tok").unwrap();
    std::fs::write(root.join("memories/MEMORY.md"), "private").unwrap();
    std::fs::write(root.join("logs/agent.log"), "log").unwrap();
    std::fs::write(root.join("cron/jobs.json"), "[]").unwrap();
    std::fs::write(root.join("cache/server.key"), "key").unwrap();
    std::fs::write(root.join("cache/chart.png"), "png").unwrap();
    std::os::unix::fs::symlink(root.join(".env"), root.join("cache/notes.txt")).unwrap();
    std::fs::hard_link(root.join("auth.json"), root.join("cache/data.json")).unwrap();

    let policy = hermes_gateway::MediaPolicy::for_home(&home);
    let asked = [
        ".env",
        ".env.bak",
        "auth.json",
        "config.yaml",
        "state.db",
        "mcp-tokens/docs.json",
        "memories/MEMORY.md",
        "logs/agent.log",
        "cron/jobs.json",
        "cache/server.key",
        "cache/notes.txt",
        "cache/data.json",
    ];
    for name in asked {
        for form in [name.to_string(), root.join(name).display().to_string()] {
            let (clean, files) =
                hermes_gateway::extract_media(&format!("here: MEDIA:{form}"), &policy);
            assert!(files.is_empty(), "{form} was sent");
            assert!(clean.contains("[file not sent:"), "{form}: {clean}");
        }
    }
    let (_, files) = hermes_gateway::extract_media("MEDIA:cache/chart.png", &policy);
    assert_eq!(
        files,
        vec![root.join("cache/chart.png").canonicalize().unwrap()]
    );
}
