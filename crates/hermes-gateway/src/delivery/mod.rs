//! Reply delivery (FEATURES §1 Gateway; issue 7 part 5): splitting replies into
//! platform-sized chunks formatted for the platform's markup ([`render_chunks`]),
//! streaming a reply by editing one message ([`StreamingReply`]), tool progress lines
//! ([`ToolProgressMode`]), the typing indicator, outbound files from `MEDIA:<path>` tags ([`extract_media`]) and
//! saving inbound files ([`save_inbound`]).

mod chunk;
mod markdown;
mod media;
mod render;
mod stream;

pub use chunk::{MIN_MESSAGE_LEN, render_chunks};
pub use media::{
    MediaPolicy, MediaTags, SaveError, extract_media, media_tags, sanitize_file_name, save_inbound,
};
pub use stream::{
    DeliveryOptions, DeliveryReport, MIN_EDIT_INTERVAL, RESTART_NOTICE, StreamingReply,
    TYPING_INTERVAL, ToolProgressMode,
};
