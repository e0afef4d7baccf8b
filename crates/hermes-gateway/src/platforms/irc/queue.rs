//! The outbound line queue shared by [`super::IrcAdapter::send`] and the live connection.
//!
//! A reply's lines are queued together (so replies to different chats never interleave
//! inside one another) and leave the queue only after the connection has written them: a
//! line waiting for a flood-control token, or queued while the connection is down, is kept
//! and sent after the reconnect. The sender learns when its last line went out, or takes its
//! unsent lines back when it stops waiting (nothing is then sent later, so a retry by the
//! caller cannot double a reply).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::{Notify, oneshot};

struct Line {
    id: u64,
    text: String,
}

#[derive(Default)]
struct Inner {
    lines: VecDeque<Line>,
    /// Per reply: lines still queued, and who waits for the last one.
    waiting: HashMap<u64, (usize, oneshot::Sender<()>)>,
    next_id: u64,
}

/// FIFO of protocol lines (without CR LF) waiting to be written.
#[derive(Default)]
pub struct LineQueue {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl LineQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the queue half-updated in a way that
        // matters more than losing the gateway; keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `lines` as one reply; the receiver fires when the last one was written.
    /// Returns the reply's id (for [`LineQueue::withdraw`]).
    pub fn push(&self, lines: Vec<String>) -> (u64, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        if lines.is_empty() {
            let _ = tx.send(());
            return (id, rx);
        }
        inner.waiting.insert(id, (lines.len(), tx));
        inner
            .lines
            .extend(lines.into_iter().map(|text| Line { id, text }));
        drop(inner);
        self.notify.notify_one();
        (id, rx)
    }

    /// The next line to write, left in the queue until [`LineQueue::written`].
    pub fn front(&self) -> Option<String> {
        self.lock().lines.front().map(|l| l.text.clone())
    }

    /// Removes the front line after it was written; completes its reply when it was the last.
    pub fn written(&self) {
        let mut inner = self.lock();
        let Some(line) = inner.lines.pop_front() else {
            return;
        };
        let done = match inner.waiting.get_mut(&line.id) {
            Some((left, _)) => {
                *left -= 1;
                *left == 0
            }
            None => false,
        };
        if done && let Some((_, tx)) = inner.waiting.remove(&line.id) {
            let _ = tx.send(());
        }
    }

    /// Takes back the unsent lines of reply `id`; returns how many there were.
    pub fn withdraw(&self, id: u64) -> usize {
        let mut inner = self.lock();
        let before = inner.lines.len();
        inner.lines.retain(|l| l.id != id);
        inner.waiting.remove(&id);
        before - inner.lines.len()
    }

    /// Lines waiting.
    pub fn len(&self) -> usize {
        self.lock().lines.len()
    }

    /// True when no line is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().lines.is_empty()
    }

    /// Waits until a line is queued (returns at once when one is). Cancel-safe.
    pub async fn wait_nonempty(&self) {
        loop {
            if !self.is_empty() {
                return;
            }
            self.notify.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replies_complete_after_their_last_line_and_can_be_withdrawn() {
        let q = LineQueue::default();
        let (_a, mut rx_a) = q.push(vec!["a1".into(), "a2".into()]);
        let (b, mut rx_b) = q.push(vec!["b1".into()]);
        assert_eq!(q.front().as_deref(), Some("a1"));
        q.written();
        assert!(rx_a.try_recv().is_err(), "one line of two written");
        assert_eq!(q.front().as_deref(), Some("a2"));
        q.written();
        assert!(rx_a.try_recv().is_ok());
        assert_eq!(q.withdraw(b), 1);
        assert!(q.front().is_none());
        assert!(
            rx_b.try_recv().is_err(),
            "a withdrawn reply never completes"
        );
        let (_c, mut rx_c) = q.push(Vec::new());
        assert!(
            rx_c.try_recv().is_ok(),
            "an empty reply is complete at once"
        );
        tokio::time::timeout(std::time::Duration::from_millis(20), q.wait_nonempty())
            .await
            .expect_err("nothing queued");
        q.push(vec!["x".into()]);
        q.wait_nonempty().await;
        assert_eq!(q.len(), 1);
    }
}
