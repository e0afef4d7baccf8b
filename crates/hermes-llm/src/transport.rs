//! HTTP response handling shared by the adapters written after `openai_chat`: an error status
//! becomes a classified [`LlmError`] (body read, `Retry-After` honoured), a JSON 200 body is
//! returned whole, anything else is streamed.

use reqwest::header::CONTENT_TYPE;
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorClass, LlmError};

/// A successful response, either whole JSON text or a body to stream.
pub(crate) enum Body {
    /// `application/json` 200 body (non-streamed answer).
    Json(String),
    /// Any other 200 body (SSE).
    Stream(reqwest::Response),
}

/// Splits a response: non-2xx → `Err` from [`LlmError::from_http`]; JSON → [`Body::Json`];
/// otherwise [`Body::Stream`]. Reading the body stops when `cancel` fires.
pub(crate) async fn split_response(
    response: reqwest::Response,
    cancel: &CancellationToken,
) -> Result<Body, LlmError> {
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.to_ascii_lowercase().contains("json"));
    if status.is_success() && !is_json {
        return Ok(Body::Stream(response));
    }
    let headers = response.headers().clone();
    let text = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(interrupted()),
        t = response.text() => t.map_err(|e| LlmError::from_transport(&e))?,
    };
    if !status.is_success() {
        return Err(LlmError::from_http(status.as_u16(), &headers, &text));
    }
    Ok(Body::Json(text))
}

/// The error returned when the user interrupts before the provider answered.
pub(crate) fn interrupted() -> LlmError {
    LlmError::new(
        ErrorClass::Unknown,
        None,
        "the request was interrupted before the provider answered",
    )
}
