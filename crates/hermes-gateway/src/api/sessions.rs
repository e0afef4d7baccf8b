//! `/api/sessions`: list recent sessions, create one, read one's messages.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hermes_protocol::Role;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::error::ApiFailure;
use crate::api::state::ApiState;
use crate::api::turn::{API_SOURCE, session_key, with_store};
use crate::api::wire::SessionSummary;
use crate::factory::AgentSpec;

/// Default page size of `GET /api/sessions`.
pub const DEFAULT_SESSION_PAGE: usize = 20;
/// Largest page size of `GET /api/sessions`.
pub const MAX_SESSION_PAGE: usize = 200;

#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    limit: Option<usize>,
    offset: Option<usize>,
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `GET /api/sessions?limit&offset`: newest first; `limit` 1–200 (default 20).
pub(crate) async fn list(
    State(state): State<ApiState>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(page)) = page else {
        return ApiFailure::bad_request("`limit` and `offset` must be non-negative whole numbers")
            .into_response();
    };
    let limit = page.limit.unwrap_or(DEFAULT_SESSION_PAGE);
    if limit == 0 || limit > MAX_SESSION_PAGE {
        return ApiFailure::bad_request(format!(
            "`limit` must be between 1 and {MAX_SESSION_PAGE}"
        ))
        .into_response();
    }
    let offset = page.offset.unwrap_or(0);
    // One extra row tells whether another page exists.
    let rows = match with_store(&state, move |s| s.list_sessions(limit + 1, offset)).await {
        Ok(r) => r,
        Err(f) => return f.into_response(),
    };
    let has_more = rows.len() > limit;
    let sessions: Vec<SessionSummary> = rows
        .into_iter()
        .take(limit)
        .map(|r| SessionSummary {
            id: r.id,
            source: r.source,
            title: r.title,
            model: r.model,
            started_at: rfc3339(r.started_at),
            ended_at: r.ended_at.map(rfc3339),
            message_count: r.message_count,
            preview: r.preview,
        })
        .collect();
    Json(json!({
        "object": "list",
        "data": sessions,
        "limit": limit,
        "offset": offset,
        "has_more": has_more,
    }))
    .into_response()
}

#[derive(Debug, Default, Deserialize)]
struct CreateBody {
    #[serde(default)]
    title: Option<String>,
}

/// `POST /api/sessions` with an optional `{"title"}`: starts a session (its system prompt
/// built now) and answers 201 `{"id","title"}`.
pub(crate) async fn create(State(state): State<ApiState>, body: Bytes) -> Response {
    match create_inner(state, body).await {
        Ok(r) => r,
        Err(f) => f.into_response(),
    }
}

async fn create_inner(state: ApiState, body: Bytes) -> Result<Response, ApiFailure> {
    let body: CreateBody = if body.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiFailure::bad_request(format!("body must be empty or {{\"title\": \"…\"}}: {e}"))
        })?
    };
    let title = body
        .title
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let spec = AgentSpec {
        session_key: session_key(&state, None),
        resume: None,
        source: API_SOURCE.to_string(),
        ephemeral_prompt: None,
        approver: state.approver.clone(),
        origin: None,
        model: None,
    };
    let agent = state.inner.factory.build(spec).await.map_err(|e| {
        ApiFailure::server(
            StatusCode::SERVICE_UNAVAILABLE,
            "agent_unavailable",
            format!("The agent could not be started: {e}"),
        )
    })?;
    let id = agent.session_id().to_string();
    drop(agent);
    if let Some(t) = title.clone() {
        let sid = id.clone();
        with_store(&state, move |s| s.set_title(&sid, &t)).await?;
    }
    Ok((StatusCode::CREATED, Json(json!({"id": id, "title": title}))).into_response())
}

/// `GET /api/sessions/{id}/messages`: the active messages in order; 404 for unknown ids.
pub(crate) async fn messages(State(state): State<ApiState>, Path(id): Path<String>) -> Response {
    let lookup = id.clone();
    let loaded = with_store(&state, move |s| {
        if s.get_session(&lookup)?.is_none() {
            return Ok(None);
        }
        s.load_messages(&lookup).map(Some)
    })
    .await;
    let rows = match loaded {
        Ok(Some(rows)) => rows,
        Ok(None) => return ApiFailure::unknown_session(&id).into_response(),
        Err(f) => return f.into_response(),
    };
    let messages: Vec<Value> = rows
        .into_iter()
        .filter(|r| r.message.role != Role::System)
        .map(|r| {
            let m = r.message;
            let mut v = json!({
                "id": r.id,
                "role": m.role.as_str(),
                "content": m.text(),
                "timestamp": rfc3339(r.timestamp),
            });
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                    .collect();
            }
            if let Some(call) = &m.tool_call_id {
                v["tool_call_id"] = json!(call);
            }
            if let Some(name) = &m.tool_name {
                v["tool_name"] = json!(name);
            }
            v
        })
        .collect();
    Json(json!({"session_id": id, "messages": messages})).into_response()
}
