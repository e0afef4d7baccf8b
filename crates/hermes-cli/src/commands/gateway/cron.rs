//! Scheduled jobs inside `hermes gateway run` (issue 8): the glue between hermes-cron and
//! hermes-gateway, which are both layer 7 and know nothing of each other.
//!
//! - [`GatewaySender`] implements cron's `PlatformSender` over the gateway's [`Outbox`], so
//!   `origin`, `<platform>` (home channel) and `<platform>:<chat>[:<thread>]` targets reach
//!   the running adapters (the scheduler's `Deliverer` retries with backoff).
//! - [`GatewayCron`] is the gateway's one scheduler task (sharing the `jobs.json` lease with
//!   `hermes cron tick`, case C39) and the `cronjob` tool of its sessions, which records the
//!   session's chat as the job's origin and wakes the scheduler when jobs change.

use std::sync::Arc;

use anyhow::Result;
use hermes_cron::{CronjobTool, Origin, PlatformMessage, PlatformSender, Scheduler};
use hermes_gateway::{ChatTarget, MessageSource, Outbox};
use tokio_util::sync::CancellationToken;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// Cron's platform sender over the gateway's adapters.
pub struct GatewaySender {
    outbox: Outbox,
}

impl GatewaySender {
    /// A sender through `outbox`.
    pub fn new(outbox: Outbox) -> GatewaySender {
        GatewaySender { outbox }
    }
}

#[async_trait::async_trait]
impl PlatformSender for GatewaySender {
    async fn send(&self, message: &PlatformMessage) -> Result<(), String> {
        let chat = message.chat_id.as_ref().map(|chat| ChatTarget {
            chat_id: chat.clone(),
            thread_id: message.thread_id.clone(),
            reply_to: None,
        });
        self.outbox
            .send(&message.platform, chat, &message.text)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The chat a gateway session serves, as a job origin: its platform, chat (a DM without a
/// chat id falls back to the sender's id, as session keys do) and thread.
pub fn origin_of(source: &MessageSource) -> Option<Origin> {
    let chat_id = source.chat_id.clone().or_else(|| source.user_id.clone())?;
    Some(Origin {
        platform: source.platform.clone(),
        chat_id,
        thread_id: source.thread_id.clone(),
        extra: Default::default(),
    })
}

/// The gateway's scheduler and the `cronjob` tool bound to it.
#[derive(Clone)]
pub struct GatewayCron {
    scheduler: Scheduler,
    tool: CronjobTool,
}

impl GatewayCron {
    /// A scheduler whose runs are headless agents (as `hermes cron tick`) and whose platform
    /// targets go through `outbox`.
    pub fn prepare(app: &App, args: &ChatArgs, outbox: Outbox) -> Result<GatewayCron> {
        let tz = hermes_cron::parse_timezone(app.config.timezone.as_deref())?;
        let sender: Arc<dyn PlatformSender> = Arc::new(GatewaySender::new(outbox));
        let scheduler = crate::assembly::cron::scheduler_with(app, args, tz, Some(sender))?;
        let tool = CronjobTool::new(
            crate::assembly::cron::job_store(app),
            Arc::new(hermes_cron::SystemClock),
            tz,
            Some(scheduler.clone()),
            None,
        )
        .allow_private_urls(app.config.web.allow_private_urls);
        Ok(GatewayCron { scheduler, tool })
    }

    /// The `cronjob` tool for a session serving `origin` (`None`: the API server).
    pub fn tool_for(&self, origin: Option<&MessageSource>) -> Arc<dyn hermes_tools::Tool> {
        Arc::new(self.tool.with_origin(origin.and_then(origin_of)))
    }

    /// Runs the scheduler until `cancel` (one task; see `Scheduler::run_forever`).
    pub fn spawn(&self, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        let scheduler = self.scheduler.clone();
        tokio::spawn(async move { scheduler.run_forever(cancel).await })
    }
}
