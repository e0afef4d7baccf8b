//! Test support (cargo feature `testing`, for dev-dependencies only): an in-process fake
//! platform that records what the gateway sends and forwards what a test injects, and
//! builders of inbound messages. Shared by this crate's tests and by `hermes-cli`'s gateway
//! tests so that every test drives the gateway through the same [`PlatformAdapter`] fake.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    ChatTarget, ChatType, InboundMessage, LengthUnit, Markup, MessageSource, PlatformAdapter,
    PlatformError, PlatformLimits, SentMessage,
};

/// A platform that records what the gateway sends and forwards what the test injects (through
/// the sender [`FakeAdapter::new`] returns). Every call succeeds; message ids count from 1.
pub struct FakeAdapter {
    /// The platform name the adapter reports.
    pub name: String,
    /// The limits it reports (default: 4096 UTF-16 code units, plain text, edits supported).
    pub limits: PlatformLimits,
    inbound: Mutex<Option<mpsc::Receiver<InboundMessage>>>,
    /// Texts sent, with their target, in order.
    pub sent: Mutex<Vec<(ChatTarget, String)>>,
    /// Edits as `(message id, new text)`, in order.
    pub edits: Mutex<Vec<(String, String)>>,
    /// Files sent, in order.
    pub files: Mutex<Vec<PathBuf>>,
    /// Typing indicators sent.
    pub typing: AtomicU64,
    next_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FakeAdapter {
    /// A fake named `name` with the default limits, and the sender that injects inbound
    /// messages (the adapter's `run` ends when every sender is dropped).
    pub fn new(name: &str) -> (Arc<FakeAdapter>, mpsc::Sender<InboundMessage>) {
        FakeAdapter::with_limits(
            name,
            PlatformLimits {
                max_message_len: 4096,
                length_unit: LengthUnit::Utf16,
                markup: Markup::Plain,
                supports_edit: true,
            },
        )
    }

    /// [`FakeAdapter::new`] reporting `limits`.
    pub fn with_limits(
        name: &str,
        limits: PlatformLimits,
    ) -> (Arc<FakeAdapter>, mpsc::Sender<InboundMessage>) {
        let (tx, rx) = mpsc::channel(64);
        let adapter = FakeAdapter {
            name: name.to_string(),
            limits,
            inbound: Mutex::new(Some(rx)),
            sent: Mutex::new(Vec::new()),
            edits: Mutex::new(Vec::new()),
            files: Mutex::new(Vec::new()),
            typing: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
        };
        (Arc::new(adapter), tx)
    }

    /// Every text sent so far, in order.
    pub fn texts(&self) -> Vec<String> {
        lock(&self.sent).iter().map(|(_, t)| t.clone()).collect()
    }

    /// The texts sent to chat `chat`, in order.
    pub fn texts_to(&self, chat: &str) -> Vec<String> {
        lock(&self.sent)
            .iter()
            .filter(|(t, _)| t.chat_id == chat)
            .map(|(_, t)| t.clone())
            .collect()
    }

    fn next_message(&self) -> SentMessage {
        SentMessage {
            message_id: self.next_id.fetch_add(1, Ordering::SeqCst).to_string(),
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for FakeAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn limits(&self) -> PlatformLimits {
        self.limits
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let Some(mut rx) = lock(&self.inbound).take() else {
            return Ok(());
        };
        loop {
            tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                m = rx.recv() => match m {
                    Some(m) => { let _ = inbound.send(m).await; }
                    None => return Ok(()),
                },
            }
        }
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        lock(&self.sent).push((target.clone(), text.to_string()));
        Ok(self.next_message())
    }

    async fn edit(
        &self,
        _target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        lock(&self.edits).push((message.message_id.clone(), text.to_string()));
        Ok(())
    }

    async fn send_file(
        &self,
        _target: &ChatTarget,
        path: &Path,
        _caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        lock(&self.files).push(path.to_path_buf());
        Ok(self.next_message())
    }

    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        self.typing.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The sequence number of the next [`message`].
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An inbound text from `user` (display name `name-<user>`) in chat `chat` of `platform`,
/// with message id `m-<text>-<n>` (unique: the gateway drops a repeated id).
pub fn message(
    platform: &str,
    chat_type: ChatType,
    chat: &str,
    user: &str,
    text: &str,
) -> InboundMessage {
    InboundMessage {
        source: MessageSource {
            platform: platform.into(),
            chat_type,
            chat_id: Some(chat.into()),
            thread_id: None,
            user_id: Some(user.into()),
            user_name: Some(format!("name-{user}")),
        },
        // Unique per message, as platforms give them (the gateway drops a repeated id).
        message_id: Some(format!(
            "m-{text}-{}",
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        )),
        text: text.into(),
        reply_to: None,
        reply_to_text: None,
        attachments: vec![],
    }
}
