//! Approval of dangerous commands in the REPL (FEATURES §4): the user is asked. One-shot mode
//! uses `hermes_tools::FixedApprover(Approval::Deny)` (`--yolo` is honored by the tools).

use hermes_tools::{Approval, ApprovalRequest, Approver};
use tokio::sync::{mpsc, oneshot};

/// A pending question for the REPL: the request and where to send the answer.
pub type ApprovalQuestion = (ApprovalRequest, oneshot::Sender<Approval>);

/// Forwards each request to the REPL, which asks the user; denies when the REPL is gone.
pub struct ReplApprover {
    tx: mpsc::UnboundedSender<ApprovalQuestion>,
}

impl ReplApprover {
    /// An approver and the receiving end the REPL reads questions from.
    pub fn new() -> (ReplApprover, mpsc::UnboundedReceiver<ApprovalQuestion>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ReplApprover { tx }, rx)
    }
}

#[async_trait::async_trait]
impl Approver for ReplApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let (tx, rx) = oneshot::channel();
        if self.tx.send((request.clone(), tx)).is_err() {
            return Approval::Deny;
        }
        rx.await.unwrap_or(Approval::Deny)
    }
}

/// Maps the user's typed answer: `y`/`yes` once, `a`/`always` for the session, else deny.
pub fn parse_answer(answer: &str) -> Approval {
    match answer.trim().to_lowercase().as_str() {
        "y" | "yes" | "o" | "once" => Approval::Once,
        "a" | "always" | "s" | "session" => Approval::Session,
        _ => Approval::Deny,
    }
}
