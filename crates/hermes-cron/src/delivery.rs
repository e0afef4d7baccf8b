//! Delivery of a run's output (FEATURES §1 Cron): `local` (the Markdown file under
//! `cron/output/<job>/`), `origin` (the chat the job was created from), `<platform>` (its home
//! channel), `<platform>:<chat>[:<thread>]` ([`hermes_protocol::ChatAddress`]: Matrix ids and email
//! addresses keep their `:`/`@`), and webhook URLs; comma-combined. Platform targets
//! go through a [`PlatformSender`] supplied by the gateway; without one they are recorded as
//! not deliverable. Webhooks are retried with exponential backoff.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::job::Origin;

/// One delivery target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// Only the Markdown file under `cron/output/`.
    Local,
    /// The chat the job was created from.
    Origin,
    /// A platform's configured home channel.
    Home {
        /// Platform name.
        platform: String,
    },
    /// A specific chat (and thread).
    Chat {
        /// Platform name.
        platform: String,
        /// Chat id.
        chat_id: String,
        /// Thread id.
        thread_id: Option<String>,
    },
    /// An HTTP(S) URL that receives a JSON POST.
    Webhook {
        /// The URL.
        url: String,
    },
}

/// A delivery target that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot read delivery target `{0}`: use local, origin, <platform>, <platform>:<chat>[:<thread>] or an http(s) URL"
)]
pub struct BadTarget(pub String);

impl Target {
    /// Parses one target (see the module docs).
    pub fn parse(text: &str) -> Result<Target, BadTarget> {
        let t = text.trim();
        let bad = || BadTarget(t.to_string());
        if t.starts_with("http://") || t.starts_with("https://") {
            return Ok(Target::Webhook { url: t.to_string() });
        }
        if t.contains("://") {
            return Err(bad());
        }
        match t {
            "local" => return Ok(Target::Local),
            "origin" => return Ok(Target::Origin),
            _ => {}
        }
        match t.split_once(':') {
            None if hermes_protocol::target::is_platform_name(t) => Ok(Target::Home {
                platform: t.to_ascii_lowercase(),
            }),
            None => Err(bad()),
            Some((platform, rest)) => {
                let a = hermes_protocol::ChatAddress::on(platform, rest).map_err(|_| bad())?;
                Ok(Target::Chat {
                    platform: a.platform,
                    chat_id: a.chat_id,
                    thread_id: a.thread_id,
                })
            }
        }
    }

    /// Parses a comma-separated list; empty items are ignored, an empty list means `local`.
    pub fn parse_list(text: &str) -> Result<Vec<Target>, BadTarget> {
        let targets: Vec<Target> = text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Target::parse)
            .collect::<Result<_, _>>()?;
        Ok(if targets.is_empty() {
            vec![Target::Local]
        } else {
            targets
        })
    }
}

/// The outcome of delivering to one target (stored with the run in `state.db`).
pub type DeliveryResult = hermes_store::CronDelivery;

/// A message for a platform chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformMessage {
    /// Platform name.
    pub platform: String,
    /// Chat id (`None`: the platform's home channel).
    pub chat_id: Option<String>,
    /// Thread id.
    pub thread_id: Option<String>,
    /// Markdown text.
    pub text: String,
}

/// Sends to messaging platforms; implemented by the gateway.
#[async_trait::async_trait]
pub trait PlatformSender: Send + Sync {
    /// Sends `message`; `Err` carries a reason shown in `hermes cron status`.
    async fn send(&self, message: &PlatformMessage) -> Result<(), String>;
}

/// What one run delivers.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// Job id.
    pub job_id: &'a str,
    /// Job name.
    pub job_name: &'a str,
    /// Run id.
    pub run_id: &'a str,
    /// Run status word.
    pub status: &'a str,
    /// The text to deliver.
    pub text: &'a str,
    /// The saved Markdown file (relative to `HERMES_HOME`), for `local`.
    pub output_path: Option<&'a str>,
    /// The job's chat of origin, for `origin`.
    pub origin: Option<&'a Origin>,
}

/// Delivers run output to targets.
#[derive(Clone)]
pub struct Deliverer {
    http: Option<reqwest::Client>,
    platforms: Option<Arc<dyn PlatformSender>>,
    /// Attempts per webhook/platform target (default 3).
    pub attempts: u32,
    /// First retry delay (default 2 s; doubled per attempt up to 30 s, plus jitter).
    pub retry_base: Duration,
}

/// Reason recorded for platform targets while no gateway is attached.
pub const NO_GATEWAY: &str = "not deliverable: gateway not running/configured";

impl Deliverer {
    /// A deliverer with a webhook client and, when the gateway runs, its platform sender.
    pub fn new(platforms: Option<Arc<dyn PlatformSender>>) -> Deliverer {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .ok();
        Deliverer {
            http,
            platforms,
            attempts: 3,
            retry_base: Duration::from_secs(2),
        }
    }

    /// Delivers `out` to each of `targets`, in order; never fails as a whole.
    pub async fn deliver(&self, targets: &[Target], out: &Outgoing<'_>) -> Vec<DeliveryResult> {
        let mut results = Vec::new();
        for target in targets {
            let (name, res) = self.deliver_one(target, out).await;
            results.push(match res {
                Ok(detail) => DeliveryResult {
                    target: name,
                    ok: true,
                    detail,
                },
                Err(detail) => DeliveryResult {
                    target: name,
                    ok: false,
                    detail,
                },
            });
        }
        results
    }

    async fn deliver_one(
        &self,
        target: &Target,
        out: &Outgoing<'_>,
    ) -> (String, Result<String, String>) {
        match target {
            Target::Local => (
                "local".into(),
                match out.output_path {
                    Some(p) => Ok(format!("saved to {p}")),
                    None => Err("the output file could not be written".into()),
                },
            ),
            Target::Webhook { url } => (url.clone(), self.webhook(url, out).await),
            Target::Origin => {
                let res = match out.origin {
                    None => Err("no chat of origin recorded for this job".to_string()),
                    Some(o) => {
                        self.platform(PlatformMessage {
                            platform: o.platform.clone(),
                            chat_id: Some(o.chat_id.clone()),
                            thread_id: o.thread_id.clone(),
                            text: out.text.to_string(),
                        })
                        .await
                    }
                };
                ("origin".into(), res)
            }
            Target::Home { platform } => (
                platform.clone(),
                self.platform(PlatformMessage {
                    platform: platform.clone(),
                    chat_id: None,
                    thread_id: None,
                    text: out.text.to_string(),
                })
                .await,
            ),
            Target::Chat {
                platform,
                chat_id,
                thread_id,
            } => {
                let mut name = format!("{platform}:{chat_id}");
                if let Some(t) = thread_id {
                    name.push_str(&format!(":{t}"));
                }
                let msg = PlatformMessage {
                    platform: platform.clone(),
                    chat_id: Some(chat_id.clone()),
                    thread_id: thread_id.clone(),
                    text: out.text.to_string(),
                };
                (name, self.platform(msg).await)
            }
        }
    }

    async fn platform(&self, msg: PlatformMessage) -> Result<String, String> {
        let Some(sender) = &self.platforms else {
            return Err(NO_GATEWAY.to_string());
        };
        let mut last = String::new();
        for attempt in 1..=self.attempts.max(1) {
            match sender.send(&msg).await {
                Ok(()) => return Ok(format!("sent (attempt {attempt})")),
                Err(e) => last = e,
            }
            self.pause(attempt).await;
        }
        Err(format!("{last} (after {} attempts)", self.attempts.max(1)))
    }

    async fn webhook(&self, url: &str, out: &Outgoing<'_>) -> Result<String, String> {
        let Some(http) = &self.http else {
            return Err("no HTTP client available".into());
        };
        let body = serde_json::json!({
            "job_id": out.job_id,
            "job_name": out.job_name,
            "run_id": out.run_id,
            "status": out.status,
            "text": out.text,
        });
        let mut last = String::new();
        for attempt in 1..=self.attempts.max(1) {
            match http.post(url).json(&body).send().await {
                Ok(r) if r.status().is_success() => {
                    return Ok(format!("HTTP {} (attempt {attempt})", r.status().as_u16()));
                }
                Ok(r) => last = format!("HTTP {}", r.status().as_u16()),
                Err(e) => last = hermes_llm::redact_secrets(&e.to_string()),
            }
            self.pause(attempt).await;
        }
        Err(format!("{last} after {} attempts", self.attempts.max(1)))
    }

    async fn pause(&self, attempt: u32) {
        if attempt < self.attempts {
            let d = hermes_llm::backoff_delay(attempt, self.retry_base, Duration::from_secs(30));
            tokio::time::sleep(d).await;
        }
    }
}
