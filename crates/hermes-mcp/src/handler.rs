//! The client side of one connection: what hermes declares in `initialize` and how it answers
//! the server's requests — `roots/list` (the folders configured in
//! `mcp_servers.<name>.roots`, declared as a capability only when there are some),
//! `sampling/createMessage` (the session's model behind the caps of [`crate::sampling`]),
//! `elicitation/create` (the front end's [`crate::elicitation::Elicitor`]; declined when there
//! is none) — and the `notifications/tools/list_changed` hook (case C32).

use std::path::PathBuf;
use std::sync::Arc;

#[allow(deprecated)]
use rmcp::model::{ClientConfig, ListRootsResult, Root};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::elicitation::{ElicitationAnswer, Elicitor, request_from_params, result_json};
use crate::sampling::SamplingGate;
use crate::server::PROTOCOL_VERSION;

/// The SDK-facing handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    /// The configured server name (shown with elicitation questions).
    pub server: String,
    /// Answer to `roots/list`: the configured roots (empty: none offered, and the `roots`
    /// capability is not declared).
    pub roots: Vec<PathBuf>,
    /// Pinged on `notifications/tools/list_changed`.
    pub tools_changed: mpsc::UnboundedSender<()>,
    /// `Some` when this server may sample the session's model.
    pub sampler: Option<Arc<SamplingGate>>,
    /// Who answers elicitation; `None` declines every request.
    pub elicitor: Option<Arc<dyn Elicitor>>,
}

#[allow(deprecated)] // roots are still what the reference servers ask for (2025-11-25)
impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = serde_json::to_value(ClientConfig::default()).unwrap_or(Value::Null);
        // The newest released spec (the SDK defaults to a draft that servers and the
        // conformance suite reject).
        info["protocolVersion"] = json!(PROTOCOL_VERSION);
        // Elicitation is always declared: headless sessions answer `decline`, which tells
        // the server plainly that nobody will fill the form.
        info["capabilities"] = json!({"elicitation": {}});
        if !self.roots.is_empty() {
            info["capabilities"]["roots"] = json!({"listChanged": false});
        }
        if self.sampler.is_some() {
            info["capabilities"]["sampling"] = json!({});
        }
        info["clientInfo"] = json!({"name": "hermes", "version": env!("CARGO_PKG_VERSION")});
        serde_json::from_value(info).unwrap_or_default()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        // A server that asks without the capability gets an empty list: nothing is offered
        // implicitly.
        let roots = self
            .roots
            .iter()
            .map(|path| {
                let uri = url::Url::from_file_path(path)
                    .map(String::from)
                    .unwrap_or_else(|()| format!("file://{}", path.display()));
                let mut root = Root::new(uri);
                root.name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                root
            })
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let Some(gate) = &self.sampler else {
            return Err(ErrorData::invalid_request(
                "sampling is turned off for this server (mcp_servers.<name>.sampling)",
                None,
            ));
        };
        let request = serde_json::to_value(&params)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let answer = gate
            .sample(request)
            .await
            .map_err(|e| ErrorData::invalid_request(e, None))?;
        serde_json::from_value(answer).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        let answer = match &self.elicitor {
            None => ElicitationAnswer::Decline,
            Some(elicitor) => {
                let params = serde_json::to_value(&request)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                elicitor
                    .elicit(request_from_params(&self.server, &params))
                    .await
            }
        };
        serde_json::from_value(result_json(&answer))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }
}
