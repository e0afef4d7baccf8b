//! Steering a running turn (gateway `display.busy_input_mode: steer`, FEATURES §1 Gateway):
//! messages pushed while a turn runs are handed to the model after the turn's next tool batch,
//! as one user message.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A queue shared between a front end (which pushes) and the agent (which drains it after
/// each tool batch). Cloning shares the queue.
#[derive(Debug, Clone, Default)]
pub struct SteerQueue(Arc<Mutex<VecDeque<String>>>);

impl SteerQueue {
    /// An empty queue.
    pub fn new() -> SteerQueue {
        SteerQueue::default()
    }

    /// Adds a message for the running turn.
    pub fn push(&self, text: impl Into<String>) {
        if let Ok(mut q) = self.0.lock() {
            q.push_back(text.into());
        }
    }

    /// Takes every queued message, oldest first.
    pub fn drain(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut q| q.drain(..).collect())
            .unwrap_or_default()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.0.lock().map(|q| q.is_empty()).unwrap_or(true)
    }
}
