//! The terminal's width as it changes (issue 20 item 3): a task waits for `SIGWINCH` and
//! stores the new width; the renderer reads it before each event and wraps from the next
//! block on (the block being drawn keeps its width: what is on the screen is not redrawn).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The latest terminal width in columns, shared between the signal task and renderers.
#[derive(Debug, Clone)]
pub struct WidthWatch(Arc<AtomicUsize>);

impl WidthWatch {
    /// A watch holding `width` until a resize changes it (nothing listens for signals).
    pub fn fixed(width: usize) -> WidthWatch {
        WidthWatch(Arc::new(AtomicUsize::new(width)))
    }

    /// A watch starting at the current terminal width, updated on every `SIGWINCH` by a
    /// task of the running tokio runtime. Without a runtime (or on a platform without the
    /// signal) it stays at the width it started with.
    pub fn on_signal() -> WidthWatch {
        let watch = WidthWatch::fixed(super::terminal_width());
        #[cfg(unix)]
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            use tokio::signal::unix::{SignalKind, signal};
            let w = watch.clone();
            rt.spawn(async move {
                let Ok(mut winch) = signal(SignalKind::window_change()) else {
                    return;
                };
                while winch.recv().await.is_some() {
                    w.set(super::terminal_width());
                }
            });
        }
        watch
    }

    /// The width now.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Records a new width.
    pub fn set(&self, width: usize) {
        self.0.store(width, Ordering::Relaxed);
    }
}
