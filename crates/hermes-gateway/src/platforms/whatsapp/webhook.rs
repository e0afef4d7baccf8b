//! The webhook endpoint of the WhatsApp adapter: Meta's subscription handshake (`GET`) and
//! its signed notifications (`POST`), see the module docs of [`super`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use super::graph::{Graph, OUTSIDE_WINDOW};
use super::inbound::{self, SIGNATURE_HEADER};
use super::window::{self, Windows};
use super::{PLATFORM, lock};
use crate::platform::InboundMessage;
use crate::platforms::media::{self, MediaPolicy, RemoteFile};
use crate::platforms::push::{json_error, unavailable};

/// What the webhook handlers share.
#[derive(Clone)]
pub(super) struct ServerState {
    pub(super) app_secret: Arc<str>,
    pub(super) verify_token: Arc<str>,
    pub(super) phone_number_id: Arc<str>,
    pub(super) inbound: mpsc::Sender<InboundMessage>,
    pub(super) graph: Graph,
    pub(super) policy: MediaPolicy,
    pub(super) windows: Windows,
    pub(super) latest: Arc<Mutex<lru::LruCache<String, String>>>,
    pub(super) seen: Arc<Mutex<lru::LruCache<String, ()>>>,
}

/// The subscription handshake (Meta "Getting started with webhooks: verification requests").
pub(super) async fn handshake(
    State(st): State<ServerState>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    if st.verify_token.is_empty() {
        tracing::warn!(
            platform = PLATFORM,
            "verification request refused: WHATSAPP_CLOUD_VERIFY_TOKEN is not set"
        );
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "verify token not configured",
        )
            .into_response();
    }
    if q.get("hub.mode").map(String::as_str) != Some("subscribe") {
        return (StatusCode::BAD_REQUEST, "hub.mode must be subscribe").into_response();
    }
    let given = q
        .get("hub.verify_token")
        .map(String::as_bytes)
        .unwrap_or_default();
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        given,
        st.verify_token.as_bytes(),
    )) {
        tracing::warn!(
            platform = PLATFORM,
            "verification request with a wrong hub.verify_token refused"
        );
        return (StatusCode::FORBIDDEN, "verify token mismatch").into_response();
    }
    match q.get("hub.challenge").filter(|c| !c.is_empty()) {
        Some(challenge) => {
            tracing::info!(platform = PLATFORM, "webhook subscription verified");
            ([("content-type", "text/plain")], challenge.clone()).into_response()
        }
        None => (StatusCode::BAD_REQUEST, "missing hub.challenge").into_response(),
    }
}

/// A notification POST (see the module docs of [`super`]).
pub(super) async fn receive(
    State(st): State<ServerState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let signature = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok());
    if !inbound::verify(&st.app_secret, &body, signature) {
        tracing::warn!(
            platform = PLATFORM,
            bytes = body.len(),
            "refused a webhook POST: missing or invalid {SIGNATURE_HEADER}"
        );
        return json_error(
            StatusCode::UNAUTHORIZED,
            &format!("missing or invalid {SIGNATURE_HEADER}"),
        );
    }
    let notification = match inbound::parse(&body, &st.phone_number_id) {
        Ok(n) => n,
        Err(why) => {
            tracing::warn!(platform = PLATFORM, "refused a webhook POST: {why}");
            return json_error(StatusCode::BAD_REQUEST, &why);
        }
    };
    for why in &notification.skipped {
        tracing::info!(platform = PLATFORM, "skipped part of a notification: {why}");
    }
    for f in &notification.failed {
        if f.code == Some(OUTSIDE_WINDOW) {
            st.windows.closed(&f.recipient).await;
            let detail = window::Closed { last_inbound: None }.describe(&f.recipient);
            tracing::error!(platform = PLATFORM, chat = %f.recipient, "a sent message was not delivered: {detail}");
        } else {
            tracing::warn!(platform = PLATFORM, chat = %f.recipient, code = ?f.code, "a sent message was not delivered: {}", f.detail);
        }
    }
    let now = chrono::Utc::now().timestamp();
    for parsed in notification.messages {
        let mut msg = parsed.message;
        let (Some(wamid), Some(from)) = (msg.message_id.clone(), msg.source.user_id.clone()) else {
            continue;
        };
        if lock(&st.seen).put(wamid.clone(), ()).is_some() {
            tracing::info!(platform = PLATFORM, "dropped a redelivered message");
            continue;
        }
        if let Some(m) = &parsed.media {
            let saved = match st.graph.media_info(&m.id).await {
                Ok((url, mime, size)) => {
                    let file = RemoteFile {
                        unique: wamid.clone(),
                        file_name: m.file_name.clone(),
                        mime_type: mime.or_else(|| m.mime_type.clone()),
                        declared_size: size,
                    };
                    media::download(PLATFORM, st.graph.authorized_get(&url), &file, &st.policy)
                        .await
                }
                Err(f) => {
                    tracing::warn!(platform = PLATFORM, error = %f.error, "media info failed");
                    media::Saved::Skipped(format!(
                        "[attachment {} could not be downloaded]\n",
                        m.file_name
                    ))
                }
            };
            media::attach(&mut msg, saved);
        }
        st.windows
            .opened(&from, parsed.timestamp.map_or(now, |t| t.min(now)))
            .await;
        lock(&st.latest).put(from, wamid.clone());
        if st.inbound.send(msg).await.is_err() {
            // Not handed over: Meta's redelivery must be accepted.
            lock(&st.seen).pop(&wamid);
            return unavailable();
        }
    }
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({ "ok": true })),
    )
        .into_response()
}
