//! Extractors of the web edge: the JSON body with the API's error shape, and who is
//! asking (`Principal`, `Session`: see `auth`).

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::Json;

use crate::error::AppError;

/// JSON body extractor whose failures use the API's error shape.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(AppError::bad_request(
                "unsupported_media_type",
                "send the body as application/json",
            )),
            Err(JsonRejection::JsonSyntaxError(e)) => {
                Err(AppError::bad_request("invalid_json", e.body_text()))
            }
            Err(JsonRejection::JsonDataError(e)) => {
                Err(AppError::bad_request("invalid_body", e.body_text()))
            }
            Err(e) => Err(AppError::bad_request("invalid_body", e.body_text())),
        }
    }
}
