//! The parts of the Telegram Bot API's objects the adapter reads
//! (<https://core.telegram.org/bots/api#available-types>). Unknown fields are ignored, so new
//! Bot API versions do not break parsing.

use serde::Deserialize;

/// The envelope of every Bot API answer: `{ok, result}` or `{ok: false, error_code,
/// description, parameters}`.
#[derive(Debug, Deserialize)]
pub struct ApiResponse<T> {
    /// Whether the call succeeded.
    pub ok: bool,
    /// The result when `ok`.
    pub result: Option<T>,
    /// HTTP-like error code when not `ok` (400, 401, 403, 404, 409, 429, 5xx).
    pub error_code: Option<u16>,
    /// Human-readable error.
    pub description: Option<String>,
    /// Extra data for some errors (flood control's `retry_after`).
    pub parameters: Option<ResponseParameters>,
}

/// `ResponseParameters`: why a request failed and what to do.
#[derive(Debug, Deserialize)]
pub struct ResponseParameters {
    /// Seconds to wait before repeating the request (429 flood control).
    pub retry_after: Option<u64>,
    /// The group was upgraded to a supergroup with this id.
    pub migrate_to_chat_id: Option<i64>,
}

/// `User` (the bot itself from getMe, or a message's sender).
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    /// Stable numeric id.
    pub id: i64,
    /// First name (display only).
    #[serde(default)]
    pub first_name: String,
    /// Last name (display only).
    pub last_name: Option<String>,
    /// `@username` without the `@` (display only: users can change it).
    pub username: Option<String>,
}

/// `Chat`.
#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    /// Chat id (negative for groups and channels).
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// One size of a photo (`PhotoSize`).
#[derive(Debug, Clone, Deserialize)]
pub struct PhotoSize {
    /// Id for getFile.
    pub file_id: String,
    /// Id stable across bots, used for the saved file's name.
    pub file_unique_id: String,
    /// Width in pixels.
    #[serde(default)]
    pub width: u32,
    /// Height in pixels.
    #[serde(default)]
    pub height: u32,
    /// Size in bytes, when known.
    pub file_size: Option<u64>,
}

/// A document, voice note, audio or video: the fields they share.
#[derive(Debug, Clone, Deserialize)]
pub struct FileObject {
    /// Id for getFile.
    pub file_id: String,
    /// Id stable across bots.
    pub file_unique_id: String,
    /// Name the sender gave (documents, audio, video).
    pub file_name: Option<String>,
    /// MIME type the sender's client reported.
    pub mime_type: Option<String>,
    /// Size in bytes, when known.
    pub file_size: Option<u64>,
}

/// `Message` (also channel posts).
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    /// Id inside the chat.
    pub message_id: i64,
    /// Topic / thread id (supergroups).
    pub message_thread_id: Option<i64>,
    /// True when the message was sent in a forum topic.
    #[serde(default)]
    pub is_topic_message: bool,
    /// Sender; absent for channel posts.
    pub from: Option<User>,
    /// The chat.
    pub chat: Chat,
    /// Text of a text message.
    pub text: Option<String>,
    /// Caption of a media message.
    pub caption: Option<String>,
    /// The message this one replies to.
    pub reply_to_message: Option<Box<Message>>,
    /// A photo in several sizes, smallest first.
    pub photo: Option<Vec<PhotoSize>>,
    /// A general file.
    pub document: Option<FileObject>,
    /// A voice note.
    pub voice: Option<FileObject>,
    /// An audio file.
    pub audio: Option<FileObject>,
    /// A video.
    pub video: Option<FileObject>,
}

/// `Update`: one event from getUpdates.
#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    /// Increasing id; the next getUpdates `offset` is the last handled id + 1.
    pub update_id: i64,
    /// A new message.
    pub message: Option<Message>,
    /// A new channel post.
    pub channel_post: Option<Message>,
}

/// `File` from getFile.
#[derive(Debug, Clone, Deserialize)]
pub struct File {
    /// Size in bytes, when known.
    pub file_size: Option<u64>,
    /// Path to download from `<api>/file/bot<token>/<file_path>`; absent when the file is
    /// over the Bot API's download limit.
    pub file_path: Option<String>,
}

/// The part of a sent `Message` we keep.
#[derive(Debug, Clone, Deserialize)]
pub struct SentMessage {
    /// Id of the sent message.
    pub message_id: i64,
}
