//! Idle memory release (issue 7 "Memory": a gateway idle with no live agents stays small).
//!
//! A gateway spends most of its months of uptime waiting for the next message. Once nothing
//! has happened for `gateway.idle_release_after` seconds, [`release_when_idle`] hands memory
//! back to the operating system, once per idle period: the session store drops its page
//! cache ([`SessionStore::release_memory`]) and the process-level [`MemoryRelease`] the
//! front end installed runs (the `hermes` binary trims the allocator and pages out the
//! executable's code). The next message brings back what it needs.
//!
//! What counts as activity is told through an [`Activity`] handle: every inbound chat message
//! ([`Activity::touch`]) and every piece of running work (a session worker, an API server
//! turn: [`Activity::busy`]). Idle time counts from the end of the last work, so nothing is
//! released while a chat or API turn runs. Scheduled cron runs are not counted: a release
//! during one only makes its code fault back in.

use std::sync::Arc;
use std::time::Duration;

use hermes_store::SessionStore;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Gives process memory back to the operating system. The gateway calls it from a blocking
/// thread, once per idle period ([`release_when_idle`]).
pub trait MemoryRelease: Send + Sync {
    /// Releases what it can. Failures are the implementation's to log; the gateway goes on.
    fn release(&self);
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// When the last activity happened (a touch, or the end of the last busy guard).
    last: Instant,
    /// Busy guards alive.
    busy: usize,
    /// Bumped by every activity: an idle period is released at most once.
    seq: u64,
}

/// The gateway's activity as seen by the idle release: cheap to clone, shared by the chat
/// runner and the API server of one process.
#[derive(Debug, Clone)]
pub struct Activity {
    state: Arc<watch::Sender<State>>,
}

impl Default for Activity {
    fn default() -> Activity {
        Activity::new()
    }
}

impl Activity {
    /// A handle whose idle time starts now.
    pub fn new() -> Activity {
        let (tx, _rx) = watch::channel(State {
            last: Instant::now(),
            busy: 0,
            seq: 0,
        });
        Activity {
            state: Arc::new(tx),
        }
    }

    /// Something happened now (an inbound message): the idle time starts again.
    pub fn touch(&self) {
        self.state.send_modify(|s| {
            s.last = Instant::now();
            s.seq += 1;
        });
    }

    /// Work is running until the returned guard drops; the idle time starts when the last
    /// guard drops.
    pub fn busy(&self) -> BusyGuard {
        self.state.send_modify(|s| {
            s.busy += 1;
            s.last = Instant::now();
            s.seq += 1;
        });
        BusyGuard {
            activity: self.clone(),
        }
    }

    /// Running work: the busy guards alive.
    pub fn busy_count(&self) -> usize {
        self.state.borrow().busy
    }
}

/// Running work ([`Activity::busy`]); dropping it ends the work.
#[derive(Debug)]
pub struct BusyGuard {
    activity: Activity,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.activity.state.send_modify(|s| {
            s.busy = s.busy.saturating_sub(1);
            s.last = Instant::now();
            s.seq += 1;
        });
    }
}

/// Waits for idle periods of `after` and releases memory once in each, until `cancel`:
/// `store`'s page cache first, then `process` (when given). A period begins when the last
/// busy guard drops or the last touch happens, and ends with the next activity.
pub async fn release_when_idle(
    activity: Activity,
    after: Duration,
    store: Arc<SessionStore>,
    process: Option<Arc<dyn MemoryRelease>>,
    cancel: CancellationToken,
) {
    let mut rx = activity.state.subscribe();
    // The `seq` of the idle period already released, if any.
    let mut released: Option<u64> = None;
    loop {
        let state = *rx.borrow_and_update();
        let due = (state.busy == 0 && released != Some(state.seq)).then(|| state.last + after);
        let timer = async {
            match due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            changed = rx.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = timer => {
                released = Some(state.seq);
                let store = store.clone();
                let process = process.clone();
                let done = tokio::task::spawn_blocking(move || {
                    if let Err(e) = store.release_memory() {
                        tracing::warn!(error = %e, "idle: the session store kept its cache");
                    }
                    if let Some(p) = process {
                        p.release();
                    }
                })
                .await;
                if let Err(e) = done {
                    tracing::warn!(error = %e, "idle memory release failed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl MemoryRelease for Count {
        fn release(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Setup {
        activity: Activity,
        count: Arc<Count>,
        cancel: CancellationToken,
        task: tokio::task::JoinHandle<()>,
    }

    fn start(after: Duration) -> Setup {
        let activity = Activity::new();
        let count = Arc::new(Count::default());
        let cancel = CancellationToken::new();
        let store = Arc::new(SessionStore::open_in_memory().unwrap());
        let process: Arc<dyn MemoryRelease> = count.clone();
        let task = tokio::spawn(release_when_idle(
            activity.clone(),
            after,
            store,
            Some(process),
            cancel.clone(),
        ));
        Setup {
            activity,
            count,
            cancel,
            task,
        }
    }

    impl Setup {
        fn releases(&self) -> usize {
            self.count.0.load(Ordering::SeqCst)
        }

        /// Lets paused time run `secs` seconds and the blocking release finish.
        async fn wait(&self, secs: u64) {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            for _ in 0..50 {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }

        async fn stop(self) {
            self.cancel.cancel();
            self.task.await.unwrap();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_released_once_per_idle_period() {
        let s = start(Duration::from_secs(60));
        s.wait(30).await;
        assert_eq!(s.releases(), 0, "30 s idle is not yet 60 s");
        s.wait(40).await;
        assert_eq!(s.releases(), 1);
        s.wait(600).await;
        assert_eq!(
            s.releases(),
            1,
            "one release per idle period, not one per minute"
        );
        s.activity.touch();
        s.wait(59).await;
        assert_eq!(s.releases(), 1, "a message starts the idle time again");
        s.wait(5).await;
        assert_eq!(s.releases(), 2);
        s.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_released_while_work_runs() {
        let s = start(Duration::from_secs(60));
        let turn = s.activity.busy();
        assert_eq!(s.activity.busy_count(), 1);
        s.wait(600).await;
        assert_eq!(s.releases(), 0, "a ten-minute turn is not idleness");
        drop(turn);
        assert_eq!(s.activity.busy_count(), 0);
        s.wait(30).await;
        assert_eq!(s.releases(), 0, "idle time counts from the end of the work");
        s.wait(40).await;
        assert_eq!(s.releases(), 1);
        s.stop().await;
    }
}
