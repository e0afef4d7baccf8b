//! Dangerous-command approval in chat (issue 7 part 6): the question goes to the chat, the
//! user answers `/approve` or `/deny`; no answer within the timeout denies.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_tools::{Approval, ApprovalRequest, Approver};
use tokio::sync::oneshot;

use crate::platform::{ChatTarget, PlatformAdapter};

/// Where a session's approval question goes and where its answer comes from. Shared by the
/// session's [`ChatApprover`] and the command handler.
#[derive(Default)]
pub struct ApprovalSlot {
    pending: Mutex<Option<oneshot::Sender<Approval>>>,
    target: Mutex<Option<ChatTarget>>,
}

impl ApprovalSlot {
    /// Sets the chat the next question goes to (the chat of the running turn).
    pub fn set_target(&self, target: Option<ChatTarget>) {
        if let Ok(mut t) = self.target.lock() {
            *t = target;
        }
    }

    /// Answers the waiting question; false when none waits.
    pub fn answer(&self, approval: Approval) -> bool {
        let sender = self.pending.lock().ok().and_then(|mut p| p.take());
        match sender {
            Some(tx) => tx.send(approval).is_ok(),
            None => false,
        }
    }

    fn target(&self) -> Option<ChatTarget> {
        self.target.lock().ok().and_then(|t| t.clone())
    }
}

/// The [`Approver`] of one gateway session.
pub struct ChatApprover {
    slot: Arc<ApprovalSlot>,
    adapter: Arc<dyn PlatformAdapter>,
    timeout: Duration,
}

impl ChatApprover {
    /// Asks in the chat of `slot` through `adapter`; denies after `timeout`.
    pub fn new(
        slot: Arc<ApprovalSlot>,
        adapter: Arc<dyn PlatformAdapter>,
        timeout: Duration,
    ) -> ChatApprover {
        ChatApprover {
            slot,
            adapter,
            timeout,
        }
    }
}

#[async_trait::async_trait]
impl Approver for ChatApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let Some(target) = self.slot.target() else {
            return Approval::Deny;
        };
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.slot.pending.lock() {
            *p = Some(tx);
        }
        let question = format!(
            "⚠️ The agent wants to run a dangerous command ({}):\n\n```\n{}\n```\n\nReply /approve to run it, /approve session to stop asking for this kind, or /deny. No answer in {} s denies it.",
            request.reason,
            request.command,
            self.timeout.as_secs()
        );
        if let Err(e) =
            crate::runner::deliver::deliver(self.adapter.as_ref(), &target, &question).await
        {
            tracing::warn!(error = %e, "could not ask for approval; denying");
            self.slot.answer(Approval::Deny);
            return Approval::Deny;
        }
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => answer,
            _ => {
                if let Ok(mut p) = self.slot.pending.lock() {
                    p.take();
                }
                let note = "No answer in time: the command was denied.";
                let _ = crate::runner::deliver::deliver(self.adapter.as_ref(), &target, note).await;
                Approval::Deny
            }
        }
    }
}
