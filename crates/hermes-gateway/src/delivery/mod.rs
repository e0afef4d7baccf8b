//! Reply delivery (FEATURES §1 Gateway; issue 7 part 5): splitting replies into
//! platform-sized chunks formatted for the platform's markup ([`render_chunks`]),
//! streaming a reply by editing one message ([`StreamingReply`]), tool progress lines
//! ([`ToolProgressMode`]), outbound files from `MEDIA:<path>` tags ([`extract_media`]) and
//! saving inbound files ([`save_inbound`]).

mod chunk;
mod markdown;
mod render;

pub use chunk::{MIN_MESSAGE_LEN, render_chunks};
