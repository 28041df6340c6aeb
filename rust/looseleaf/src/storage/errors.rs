//! [`StoreError`]: a store's failure, classified (missing object, denied, throttled, transient)
//! and with every secret scrubbed out of its message.

use std::fmt;
use std::time::Duration;

use object_store::client::{HttpError, HttpErrorKind};

use super::location::without_query;
use super::stores::environment_secrets;
use crate::error::{Error, IoErrorKind};

/// The longest message kept of a store's error.
const MAX_MESSAGE: usize = 500;

/// What kind of failure a store reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The object or bucket does not exist.
    NotFound,
    /// The credentials are missing, wrong, or not allowed to do this.
    PermissionDenied,
    /// A condition of the request failed (HTTP 412: the object is no longer the version the
    /// request was made for).
    Changed,
    /// The store asked the client to slow down (HTTP 429, 503, `SlowDown`).
    Throttled,
    /// The request may succeed if tried again (connection refused or reset, a timeout, HTTP 500,
    /// 502, 504).
    Transient,
    /// Anything else (a bad request, an unexpected answer).
    Other,
}

/// A failure of an object store, as the [`Error::Io`](crate::Error::Io) source of the reads and
/// writes of remote files. Its message is the store's, with the values of secret options
/// removed.
#[derive(Debug, Clone)]
pub struct StoreError {
    kind: StoreErrorKind,
    status: Option<u16>,
    /// Whether the store tried the request again before giving up (its own retries).
    store_retried: bool,
    message: String,
}

impl StoreError {
    /// Classifies `error`, removing from its message each of `secrets`, the environment's
    /// credentials and the query strings of URLs.
    pub(crate) fn new(error: &object_store::Error, secrets: &[String]) -> Self {
        let mut message = redact_queries(&error.to_string());
        for secret in secrets.iter().chain(&environment_secrets()) {
            message = message.replace(secret.as_str(), "<redacted>");
        }
        // One line, of a readable length: stores answer with whole XML documents.
        let mut message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        if message.len() > MAX_MESSAGE {
            let cut = (0..=MAX_MESSAGE).rev().find(|i| message.is_char_boundary(*i)).unwrap_or(0);
            message.truncate(cut);
            message.push_str(" …");
        }
        let status = status_code(&message);
        let kind = match (error, status) {
            _ if local_failure(error) == Some(std::io::ErrorKind::NotFound) => StoreErrorKind::NotFound,
            _ if local_failure(error) == Some(std::io::ErrorKind::PermissionDenied) => StoreErrorKind::PermissionDenied,
            (object_store::Error::NotFound { .. }, _) | (_, Some(404)) => StoreErrorKind::NotFound,
            (object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }, _)
            | (_, Some(401 | 403)) => StoreErrorKind::PermissionDenied,
            (object_store::Error::Precondition { .. }, _) | (_, Some(412)) => StoreErrorKind::Changed,
            (_, Some(429 | 503)) => StoreErrorKind::Throttled,
            _ if message.contains("SlowDown") || message.contains("TooManyRequests") => StoreErrorKind::Throttled,
            (_, Some(500 | 502 | 504)) => StoreErrorKind::Transient,
            _ if transport_failure(error) => StoreErrorKind::Transient,
            _ => StoreErrorKind::Other,
        };
        // object_store names its own retries in the message of the request that failed
        // ("Error performing PUT ... after 3 retries, max_retries: 6, ..."): its retry error
        // type is private.
        let store_retried = error.to_string().contains(" retries, max_retries: ");
        Self { kind, status, store_retried, message }
    }

    /// Whether the store retried the request itself before this failure (none for requests it
    /// deems unsafe to repeat, and for failures after its answer began: a body cut short).
    pub fn store_retried(&self) -> bool {
        self.store_retried
    }

    /// What kind of failure it was.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The HTTP status of the store's answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// This failure as the crate's error about `location`, its kind kept.
    pub(crate) fn at(self, location: impl Into<String>) -> Error {
        let kind = match self.kind {
            StoreErrorKind::NotFound => IoErrorKind::NotFound,
            StoreErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
            StoreErrorKind::Changed => IoErrorKind::Changed,
            _ => IoErrorKind::Other,
        };
        Error::io_of_kind(location, kind, self)
    }

    /// The failure of the last of `attempts` attempts at a request, made over `elapsed`: said in
    /// the message, whose own time is the last attempt's alone (a reader of the error otherwise
    /// takes a quick failure for one that was never retried).
    pub(crate) fn after_attempts(mut self, attempts: u32, elapsed: Duration) -> Self {
        if attempts > 1 {
            self.message.push_str(&format!(" (gave up after {attempts} attempts over {:.1} s)", elapsed.as_secs_f64()));
        }
        self
    }

    /// Whether trying again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, StoreErrorKind::Throttled | StoreErrorKind::Transient)
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// `message` with the query string of every URL in it cut (see [`without_query`]).
fn redact_queries(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("://") {
        // The URL runs from its scheme to the first character no URL holds unescaped.
        let start = rest[..at]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let end =
            rest[at..].find(|c: char| c.is_whitespace() || "\"'<>()[]{}`".contains(c)).map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        out.push_str(&without_query(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The HTTP status `object_store` reports in its message ("... status code: 503 ...").
fn status_code(message: &str) -> Option<u16> {
    let (_, rest) = message.split_once("status code: ")?;
    rest.get(..3)?.parse().ok()
}

/// The kind of the file system's error behind a local store's failure, if there is one.
fn local_failure(error: &object_store::Error) -> Option<std::io::ErrorKind> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = e.source();
    }
    None
}

/// Whether the request failed before an answer came back (connection, timeout, interrupted).
fn transport_failure(error: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(http) = e.downcast_ref::<HttpError>() {
            return matches!(
                http.kind(),
                HttpErrorKind::Connect | HttpErrorKind::Request | HttpErrorKind::Timeout | HttpErrorKind::Interrupted
            );
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(message: &str) -> object_store::Error {
        object_store::Error::Generic { store: "S3", source: message.to_string().into() }
    }

    #[test]
    fn classifies_and_scrubs() {
        let secrets = vec!["s3cr3t-value".to_string()];
        let e = StoreError::new(
            &generic("Server returned non-2xx status code: 503 Service Unavailable: SlowDown"),
            &secrets,
        );
        assert_eq!((e.kind(), e.status()), (StoreErrorKind::Throttled, Some(503)));
        assert!(e.is_retryable());
        let e = StoreError::new(&generic("status code: 403 Forbidden: key s3cr3t-value rejected"), &secrets);
        assert_eq!(e.kind(), StoreErrorKind::PermissionDenied);
        assert!(!e.to_string().contains("s3cr3t") && e.to_string().contains("<redacted>"), "{e}");
        let e = StoreError::new(&generic("status code: 500 Internal Server Error"), &secrets);
        assert_eq!(e.kind(), StoreErrorKind::Transient);
        let e = StoreError::new(&generic("status code: 400 Bad Request"), &secrets);
        assert_eq!(e.kind(), StoreErrorKind::Other);
        assert!(!e.is_retryable());
    }

    #[test]
    fn scrubs_query_strings_of_urls() {
        let e = StoreError::new(
            &generic(
                "error sending request for url (https://acct.blob.core.windows.net/c/x.leaf?sv=2022&sig=s3cr3t): \
                 timed out; see http://host/doc",
            ),
            &[],
        );
        let shown = e.to_string();
        assert!(!shown.contains("s3cr3t") && !shown.contains("sv=2022"), "{shown}");
        assert!(shown.contains("(https://acct.blob.core.windows.net/c/x.leaf?<redacted>): timed out"), "{shown}");
        assert!(shown.ends_with("see http://host/doc"), "{shown}");
    }
}
