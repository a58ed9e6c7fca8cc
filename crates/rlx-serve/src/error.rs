//! [`ApiError`]: every refusal and failure the server answers, as an HTTP status and an
//! OpenAI-shaped body `{"error": {"message", "type", "param", "code"}}`.
//!
//! The message says what was wrong with numbers and what to do; `param` names the request
//! field when one is to blame. A 429 carries `Retry-After`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's error type: `invalid_request_error`, `authentication_error`,
    /// `rate_limit_error`, `server_error`, `unavailable_error`.
    pub kind: &'static str,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// A short machine-readable code (`context_length_exceeded`, `invalid_api_key`, …).
    pub code: Option<&'static str>,
}

/// The JSON body of an error.
#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

/// Seconds a client refused for a full queue is told to wait (`Retry-After`).
pub const RETRY_AFTER_SECS: u32 = 1;

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), kind, param: None, code: None }
    }

    /// 400: the request is malformed or asks for what the server cannot give.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 400 naming the field at fault.
    pub fn bad_param(param: &str, message: impl Into<String>) -> ApiError {
        ApiError { param: Some(param.to_string()), ..ApiError::bad_request(message) }
    }

    /// 400: the prompt, or the prompt with `max_tokens`, does not fit the context.
    pub fn context(param: &str, message: impl Into<String>) -> ApiError {
        ApiError { code: Some("context_length_exceeded"), ..ApiError::bad_param(param, message) }
    }

    /// 401: the API key is missing or wrong.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError {
            code: Some("invalid_api_key"),
            ..ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
        }
    }

    /// 404: no such route or no such model on this server.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
    }

    /// 413: the body is larger than the limit.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the request body is larger than the server's limit of {limit} bytes; send less"),
        )
    }

    /// 408: the body did not arrive within the read timeout.
    pub fn body_timeout(secs: f64) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            format!("the request body did not arrive within {secs:.1} s"),
        )
    }

    /// 429 with `Retry-After`: every slot and queue place is taken.
    pub fn queue_full(what: &str, capacity: usize) -> ApiError {
        ApiError {
            code: Some("queue_full"),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!(
                    "the {what} queue is full ({capacity} requests running or waiting); retry after \
                     {RETRY_AFTER_SECS} s (the server's limits are --max-streams and --queue)"
                ),
            )
        }
    }

    /// 503: the model is still loading, or the server is shutting down.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable_error", message)
    }

    /// 500: the model failed on this request (an error, or a NaN in its output).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// The body as JSON text (also what an SSE stream sends when it fails midway).
    pub fn body_json(&self) -> String {
        let body = Body {
            error: Inner {
                message: &self.message,
                kind: self.kind,
                param: self.param.as_deref(),
                code: self.code,
            },
        };
        serde_json::to_string(&body).unwrap_or_else(|_| String::from("{\"error\":{}}"))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            self.body_json(),
        )
            .into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_openai_shaped() {
        let e = ApiError::context("max_tokens", "too many");
        let v: serde_json::Value = serde_json::from_str(&e.body_json()).unwrap_or_default();
        assert_eq!(v["error"]["message"], "too many");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["param"], "max_tokens");
        assert_eq!(v["error"]["code"], "context_length_exceeded");
    }
}
