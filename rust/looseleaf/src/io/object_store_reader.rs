//! [`ObjectStoreReader`]: byte ranges of one object of an [`ObjectStore`], with bounded retries,
//! one hedged re-issue of a straggler, and a count of the store's throttling answers.
//!
//! # Retries
//! A read that fails with a retryable error ([`StoreError::is_retryable`]: throttling, a
//! connection failure, a timeout, HTTP 500/502/504) is tried again after an exponential backoff
//! with jitter, at most [`MAX_RETRIES`] times; other failures (missing object, denied) fail at
//! once. A store built for reading does not retry by itself (see `storage`), so that this reader
//! sees every throttling answer and the I/O scheduler can lower its depth.
//!
//! # One version
//! The object's version is pinned by the first answer (the suffix read that opens a file): its
//! ETag, and its version id where the store versions objects. Every later request, retry and
//! hedge asks for that version (`If-Match`, and the version id): an object overwritten since
//! is an error naming it ("changed since it was opened", [`IoErrorKind::Changed`]), or, where
//! the store keeps versions, still the version opened; never bytes of two versions in one read.
//!
//! # Hedging
//! On object stores a few percent of requests take far longer than their peers. The reader
//! keeps a running estimate of a request's time (a fixed cost plus a cost per byte, from the
//! requests completed so far); a request still running after [`HEDGE_FACTOR`] times its
//! estimate is issued a second time, once, and whichever answer comes first is used. Hedges are
//! limited to one in [`HEDGE_EVERY`] requests, so a slow store is not made slower.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::{BoxFuture, Either};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::IoOptions;
use super::range_reader::{RangeReader, ReaderStats};
use crate::error::{Error, IoErrorKind, Result};
use crate::storage::{StoreError, StoreErrorKind};

/// Attempts after the first for a retryable failure.
pub const MAX_RETRIES: u32 = 6;
/// Backoff before the first retry (doubling after each, up to [`MAX_BACKOFF`]).
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest backoff between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// A request is re-issued once it has run this many times its estimated time.
pub const HEDGE_FACTOR: f64 = 4.0;
/// At most one hedge per this many requests.
pub const HEDGE_EVERY: u64 = 20;
/// No hedge before this long, whatever the estimate (a local emulator answers in microseconds).
const MIN_HEDGE_DELAY: Duration = Duration::from_millis(50);
/// Requests observed before hedging starts (the estimate needs a few).
const HEDGE_WARMUP: u64 = 8;

/// A [`RangeReader`] over an object in an [`ObjectStore`].
#[derive(Clone)]
pub struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    location: String,
    io_defaults: IoOptions,
    /// Values scrubbed out of the store's error messages.
    secrets: Arc<[String]>,
    state: Arc<ReaderState>,
}

/// The version of the object a reader reads (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Version {
    e_tag: Option<String>,
    version: Option<String>,
}

#[derive(Default)]
struct ReaderState {
    /// Set by the first answer, never changed after.
    pinned: std::sync::OnceLock<Version>,
    requests: AtomicU64,
    retries: AtomicU64,
    throttled: AtomicU64,
    hedges: AtomicU64,
    /// Guarded: the running estimate of a request's time.
    estimate: Mutex<LatencyModel>,
}

impl fmt::Debug for ObjectStoreReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStoreReader").field("location", &self.location).finish_non_exhaustive()
    }
}

impl ObjectStoreReader {
    /// Reads `path` from `store`; `location` names the file in error messages.
    ///
    /// Reads default to [`IoOptions::OBJECT_STORE`]; stores with local latency (memory, local
    /// files) should say so with [`ObjectStoreReader::with_io_defaults`].
    pub fn new(store: Arc<dyn ObjectStore>, path: Path, location: impl Into<String>) -> Self {
        Self {
            store,
            path,
            location: location.into(),
            io_defaults: IoOptions::OBJECT_STORE,
            secrets: Arc::new([]),
            state: Arc::default(),
        }
    }

    /// Sets the I/O settings used when a read gives none.
    pub fn with_io_defaults(self, io_defaults: IoOptions) -> Self {
        Self { io_defaults, ..self }
    }

    /// Values that must never appear in an error message (the store's credentials).
    pub fn with_secrets(self, secrets: Vec<String>) -> Self {
        Self { secrets: secrets.into(), ..self }
    }

    fn store_error(&self, e: &object_store::Error) -> StoreError {
        StoreError::new(e, &self.secrets)
    }

    /// The options of a request for `range` of the pinned version (any version before one is).
    fn get_options(&self, range: GetRange) -> GetOptions {
        let mut options = GetOptions::new().with_range(Some(range));
        if let Some(pinned) = self.state.pinned.get() {
            options.if_match = pinned.e_tag.clone();
            options.version = pinned.version.clone();
        }
        options
    }

    /// Pins the version an answer came from, or checks it against the one pinned.
    fn pin(&self, meta: &object_store::ObjectMeta) -> Result<()> {
        let seen = Version { e_tag: meta.e_tag.clone(), version: meta.version.clone() };
        let pinned = self.state.pinned.get_or_init(|| seen.clone());
        // A store that answered without an ETag cannot be held to one.
        if pinned.e_tag.is_some() && seen.e_tag.is_some() && pinned.e_tag != seen.e_tag {
            return Err(self.changed());
        }
        Ok(())
    }

    /// The error of an object no longer the version opened.
    fn changed(&self) -> Error {
        let why = std::io::Error::other("the object changed since it was opened (overwritten or deleted)");
        Error::io_of_kind(self.location.clone(), IoErrorKind::Changed, why)
    }

    /// Runs `attempt` until it succeeds, fails for good, or [`MAX_RETRIES`] retries are spent.
    async fn with_retries<T, F>(&self, mut attempt: impl FnMut() -> F) -> Result<T>
    where
        F: Future<Output = std::result::Result<T, object_store::Error>>,
    {
        let mut retries = 0;
        let started = tokio::time::Instant::now();
        loop {
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(e) => self.store_error(&e),
            };
            if error.kind() == StoreErrorKind::Throttled {
                self.state.throttled.fetch_add(1, Ordering::Relaxed);
            }
            if error.kind() == StoreErrorKind::Changed {
                return Err(self.changed());
            }
            if !error.is_retryable() || retries >= MAX_RETRIES {
                return Err(error.after_attempts(retries + 1, started.elapsed()).at(self.location.clone()));
            }
            retries += 1;
            self.state.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(backoff(retries)).await;
        }
    }

    /// One attempt at reading `range`, hedged once if it runs far longer than its estimate.
    async fn fetch(&self, range: Range<u64>) -> std::result::Result<Bytes, object_store::Error> {
        let started = Instant::now();
        let bytes = range.end - range.start;
        let request = self.state.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let hedge_after = {
            let model = self.state.estimate.lock().unwrap_or_else(|p| p.into_inner());
            model.hedge_delay(bytes)
        };
        let primary = self.get_pinned(range.clone());
        let result = match hedge_after {
            Some(delay) if request > HEDGE_WARMUP => {
                let primary = Box::pin(primary);
                match futures::future::select(primary, Box::pin(tokio::time::sleep(delay))).await {
                    Either::Left((result, _)) => result,
                    Either::Right(((), primary)) if self.may_hedge(request) => {
                        self.state.hedges.fetch_add(1, Ordering::Relaxed);
                        let hedge = Box::pin(self.get_pinned(range.clone()));
                        match futures::future::select(primary, hedge).await {
                            Either::Left((result, _)) | Either::Right((result, _)) => result,
                        }
                    }
                    Either::Right(((), primary)) => primary.await,
                }
            }
            _ => primary.await,
        };
        if result.is_ok() {
            let mut model = self.state.estimate.lock().unwrap_or_else(|p| p.into_inner());
            model.observe(bytes, started.elapsed());
        }
        result
    }

    /// One request for `range` of the pinned version.
    async fn get_pinned(&self, range: Range<u64>) -> std::result::Result<Bytes, object_store::Error> {
        let result = self.store.get_opts(&self.path, self.get_options(GetRange::Bounded(range))).await?;
        // An answer of another version than pinned (a store that ignores If-Match) is a
        // precondition failure as well.
        if self.pin(&result.meta).is_err() {
            return Err(object_store::Error::Precondition {
                path: self.path.to_string(),
                source: "the object's ETag changed since it was opened".into(),
            });
        }
        result.bytes().await
    }

    /// Whether one more hedge keeps them within one in [`HEDGE_EVERY`] requests.
    fn may_hedge(&self, requests: u64) -> bool {
        self.state.hedges.load(Ordering::Relaxed) < requests / HEDGE_EVERY
    }
}

/// The backoff before retry `n` (from 1): doubling from [`FIRST_BACKOFF`], capped, with ±50%
/// jitter so that many readers throttled at once do not come back at once.
fn backoff(n: u32) -> Duration {
    let base = FIRST_BACKOFF.saturating_mul(1 << n.saturating_sub(1).min(16)).min(MAX_BACKOFF);
    let jitter = 0.5 + rand_fraction();
    base.mul_f64(jitter)
}

/// A number in `0..1`, different from call to call (jitter needs no quality).
fn rand_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(Instant::now().elapsed().as_nanos() as u64);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// A request's expected time: a fixed cost plus a cost per byte, each a moving average over the
/// requests seen (small ones inform the fixed cost, large ones the cost per byte).
#[derive(Debug, Default)]
struct LatencyModel {
    /// Seconds of a small request.
    fixed: Option<f64>,
    /// Seconds per byte beyond the fixed cost.
    per_byte: Option<f64>,
}

impl LatencyModel {
    /// Requests up to this size estimate the fixed cost.
    const SMALL: u64 = 256 * 1024;
    /// Weight of a new observation.
    const ALPHA: f64 = 0.2;

    fn observe(&mut self, bytes: u64, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let blend = |old: Option<f64>, new: f64| Some(old.map_or(new, |o| o + Self::ALPHA * (new - o)));
        if bytes <= Self::SMALL {
            self.fixed = blend(self.fixed, seconds);
        } else {
            let fixed = self.fixed.unwrap_or(0.0).min(seconds);
            self.per_byte = blend(self.per_byte, (seconds - fixed) / bytes as f64);
        }
    }

    fn expected(&self, bytes: u64) -> Option<f64> {
        let fixed = self.fixed?;
        Some(fixed + self.per_byte.unwrap_or(0.0) * bytes as f64)
    }

    /// How long a request of `bytes` may run before it is hedged.
    fn hedge_delay(&self, bytes: u64) -> Option<Duration> {
        let expected = self.expected(bytes)?;
        Some(Duration::from_secs_f64(expected * HEDGE_FACTOR).max(MIN_HEDGE_DELAY))
    }
}

impl RangeReader for ObjectStoreReader {
    fn location(&self) -> &str {
        &self.location
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        Box::pin(async move {
            let wanted = range.end - range.start;
            let bytes = self.with_retries(|| self.fetch(range.clone())).await?;
            if bytes.len() as u64 != wanted {
                return Err(Error::corrupt_at(
                    range.start,
                    format!(
                        "file is truncated: bytes {}..{} were asked for and {} came back",
                        range.start,
                        range.end,
                        bytes.len()
                    ),
                )
                .with_location(&self.location));
            }
            Ok(bytes)
        })
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, Result<(Bytes, u64)>> {
        Box::pin(async move {
            let (meta, bytes) = self
                .with_retries(|| async {
                    let result = self.store.get_opts(&self.path, self.get_options(GetRange::Suffix(len))).await?;
                    let meta = result.meta.clone();
                    Ok((meta, result.bytes().await?))
                })
                .await?;
            self.pin(&meta)?;
            Ok((bytes, meta.size))
        })
    }

    fn io_defaults(&self) -> IoOptions {
        self.io_defaults
    }

    fn stats(&self) -> ReaderStats {
        ReaderStats {
            retries: self.state.retries.load(Ordering::Relaxed),
            throttled: self.state.throttled.load(Ordering::Relaxed),
            hedged: self.state.hedges.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_bounds() {
        for n in 1..=MAX_RETRIES {
            let b = backoff(n);
            let base = FIRST_BACKOFF.saturating_mul(1 << (n - 1)).min(MAX_BACKOFF);
            assert!(b >= base.mul_f64(0.5) && b <= base.mul_f64(1.5), "{n}: {b:?}");
        }
    }

    #[test]
    fn latency_model_learns_fixed_and_per_byte_costs() {
        let mut model = LatencyModel::default();
        assert_eq!(model.hedge_delay(1), None);
        for _ in 0..50 {
            model.observe(1024, Duration::from_millis(20));
            model.observe(8 << 20, Duration::from_millis(120));
        }
        let small = model.expected(1024).unwrap();
        let large = model.expected(8 << 20).unwrap();
        assert!((small - 0.020).abs() < 0.002, "{small}");
        assert!((large - 0.120).abs() < 0.01, "{large}");
        assert_eq!(model.hedge_delay(1024), Some(Duration::from_secs_f64(small * HEDGE_FACTOR)));
    }
}
