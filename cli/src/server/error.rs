//! The HTTP error type: a status code and a JSON body `{"error": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use quire::Error;

/// An error answered as JSON with the status that fits it.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Invalid(_) | Error::Template(_) => StatusCode::BAD_REQUEST,
            Error::Pdf { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Error::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::ModelMissing { .. } | Error::ModelFormat { .. } | Error::Device(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            // The model server behind this one failed.
            Error::Server { .. } => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

/// Result for handlers.
pub type ApiResult<T> = std::result::Result<T, ApiError>;
