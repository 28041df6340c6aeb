//! [`retrying`]: a request to a store tried again after failures that may pass, for the requests
//! the stores do not retry themselves: listings (the read store does not retry), and requests
//! whose answer was lost (a connection reset, a body cut short), which `object_store` does not
//! repeat when it deems them unsafe to (`POST`s: deletions of several objects, the start of a
//! multipart upload).

use std::time::Duration;

use super::StoreError;

/// Attempts after the first.
const RETRIES: u32 = 5;
/// The wait before the first of them, doubled before each next (about 3 s in all).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// What [`retrying`] tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Any failure that may pass: for stores that do not retry by themselves.
    Retryable,
    /// Only requests whose answer was lost (no HTTP status: a connection reset, a timeout, a
    /// body cut short) and that the store did not retry itself: requests it deems unsafe to
    /// repeat, and answers whose body failed after their status. The answers they got (500,
    /// 503), and what they retried already, are not tried again: a store that stalls for good
    /// then costs its own retries' timeouts, not those times six.
    LostAnswers,
}

/// `attempt`'s outcome, tried again after a backoff while it fails as `retry` says, at most
/// [`RETRIES`] times; its error scrubbed of `secrets`.
pub(crate) async fn retrying<T, F>(
    secrets: &[String],
    retry: Retry,
    mut attempt: impl FnMut() -> F,
) -> std::result::Result<T, StoreError>
where
    F: Future<Output = object_store::Result<T>>,
{
    let mut retries = 0;
    let started = tokio::time::Instant::now();
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) => StoreError::new(&e, secrets),
        };
        let again =
            error.is_retryable() && (retry == Retry::Retryable || (error.status().is_none() && !error.store_retried()));
        if !again || retries >= RETRIES {
            return Err(error.after_attempts(retries + 1, started.elapsed()));
        }
        tokio::time::sleep(FIRST_BACKOFF.saturating_mul(1 << retries)).await;
        retries += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each attempt's error, then success.
    async fn attempts(retry: Retry, errors: Vec<object_store::Error>) -> (u32, std::result::Result<(), StoreError>) {
        let errors = std::sync::Mutex::new(errors.into_iter());
        let calls = std::sync::atomic::AtomicU32::new(0);
        let outcome = retrying(&[], retry, || {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let next = errors.lock().unwrap().next();
            async move { next.map_or(Ok(()), Err) }
        })
        .await;
        (calls.into_inner(), outcome)
    }

    fn answered(status: &str) -> object_store::Error {
        object_store::Error::Generic { store: "S3", source: format!("status code: {status}").into() }
    }

    fn lost() -> object_store::Error {
        use object_store::client::{HttpError, HttpErrorKind};
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(HttpErrorKind::Interrupted, reset)),
        }
    }

    #[tokio::test]
    async fn listings_retry_what_may_pass_deletions_only_lost_answers() {
        let (calls, outcome) = attempts(Retry::Retryable, vec![answered("503 Slow Down"), lost()]).await;
        assert!(outcome.is_ok() && calls == 3, "{calls} {outcome:?}");
        let (calls, outcome) = attempts(Retry::LostAnswers, vec![lost(), lost()]).await;
        assert!(outcome.is_ok() && calls == 3, "{calls} {outcome:?}");
        // The store retried the 503 already; a 403 never passes.
        // A lost answer the store retried already (its retries named in the message).
        let retried = {
            use object_store::client::{HttpError, HttpErrorKind};
            let timeout = std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "Error performing POST http://h/b/k in 6s, after 6 retries, max_retries: 6, retry_timeout: 60s",
            );
            object_store::Error::Generic {
                store: "S3",
                source: Box::new(HttpError::new(HttpErrorKind::Timeout, timeout)),
            }
        };
        assert!(StoreError::new(&retried, &[]).is_retryable());
        let (calls, outcome) = attempts(Retry::LostAnswers, vec![retried]).await;
        assert!(outcome.is_err() && calls == 1, "the store retried it already: {calls} {outcome:?}");
        let (calls, outcome) = attempts(Retry::LostAnswers, vec![answered("503 Slow Down")]).await;
        assert!(outcome.is_err() && calls == 1, "{calls} {outcome:?}");
        let (calls, outcome) = attempts(Retry::Retryable, vec![answered("403 Forbidden")]).await;
        assert!(outcome.is_err() && calls == 1, "{calls} {outcome:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_after_retries_says_how_many_attempts_it_took() {
        let throttled = (0..=RETRIES).map(|_| answered("503 Slow Down")).collect();
        let (calls, outcome) = attempts(Retry::Retryable, throttled).await;
        let message = outcome.unwrap_err().to_string();
        assert_eq!(calls, RETRIES + 1);
        assert!(message.ends_with(&format!("(gave up after {calls} attempts over 3.1 s)")), "{message}");
        // One attempt: nothing to add.
        let (_, outcome) = attempts(Retry::Retryable, vec![answered("403 Forbidden")]).await;
        assert!(!outcome.unwrap_err().to_string().contains("attempts"));
    }
}
