//! [`ConfirmedUpload`]: a multipart upload whose completion, when it fails, is settled with the
//! store instead of reported blindly.
//!
//! A `CompleteMultipartUpload` whose answer is lost (the connection reset or cut in the middle
//! of it, a stall past the client's timeout) may have completed the object all the same.
//! `object_store`'s `WriteMultipart::finish` then aborts the upload, and on S3 the abort of an
//! upload already completed fails with `NoSuchUpload`: the writer reported that 404, a "not
//! found" about the very file it had just written, although the file was there, whole.
//!
//! So when a completion fails, this upload aborts itself at once (trying the abort again if it
//! fails for a reason that may pass). If the store still had the upload, the completion did not
//! happen: its error is reported, and nothing is left. If the store no longer knows the upload,
//! the object at the path is looked at: of the size written, it is the upload, completed, and
//! the write succeeds; otherwise the completion's error is reported, never the abort's 404.
//!
//! An abort that finds the upload gone (`NoSuchUpload`: an earlier attempt whose answer was
//! lost and which the store retried, or the settling above) has done its work: it succeeds.
//!
//! What it does not do: tell its own completion from someone else's abort of the same upload
//! (a lifecycle rule) when an object of exactly the size written was already at the path.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, PutResult, UploadPart};

use crate::storage::StoreError;

/// A [`MultipartUpload`] that settles a failed completion (see the module documentation).
#[derive(Debug)]
pub(super) struct ConfirmedUpload {
    inner: Box<dyn MultipartUpload>,
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// Bytes of the parts put so far: the object's size once completed.
    bytes: u64,
    /// Whether the upload is known to be gone (aborted while settling a failed completion), so
    /// that a later abort has nothing to do.
    gone: bool,
}

/// Requests of the settling (the abort, the look at the object) tried again after the first,
/// each, when they fail for a reason that may pass (throttling, a connection lost): enough to
/// outlast a few seconds of throttling on top of the store's own retries.
const SETTLE_RETRIES: u32 = 6;
/// The wait before the first of them, doubled before each next up to [`SETTLE_MAX_BACKOFF`].
const SETTLE_BACKOFF: Duration = Duration::from_millis(100);
const SETTLE_MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Whether `error` may pass if the request is tried again.
fn may_pass(error: &object_store::Error) -> bool {
    StoreError::new(error, &[]).is_retryable()
}

/// Waits before the try after `retries` retries.
async fn back_off(retries: u32) {
    tokio::time::sleep(SETTLE_BACKOFF.saturating_mul(1 << retries.min(16)).min(SETTLE_MAX_BACKOFF)).await;
}

impl ConfirmedUpload {
    /// `inner`, the upload of `path` in `store`.
    pub(super) fn new(inner: Box<dyn MultipartUpload>, store: Arc<dyn ObjectStore>, path: Path) -> Self {
        Self { inner, store, path, bytes: 0, gone: false }
    }

    /// The outcome of a completion that failed with `failure`.
    async fn settle(&mut self, failure: object_store::Error) -> object_store::Result<PutResult> {
        let mut retries = 0;
        loop {
            match self.inner.abort().await {
                Ok(()) => {
                    self.gone = true;
                    return Err(failure);
                }
                Err(object_store::Error::NotFound { .. }) => {
                    self.gone = true;
                    return completed_object(self.store.as_ref(), &self.path, self.bytes, failure).await;
                }
                // An abort whose answer was lost too (the store does not retry it: a `DELETE`
                // is not idempotent to it).
                Err(e) if retries < SETTLE_RETRIES && may_pass(&e) => {
                    back_off(retries).await;
                    retries += 1;
                }
                // The upload's fate is unknown: the caller's own abort tries again.
                Err(_) => return Err(failure),
            }
        }
    }
}

/// The result of the upload of `bytes` to `path` that `store` no longer knows: the object at
/// the path if it is of that size (the upload, completed), otherwise `failure`.
async fn completed_object(
    store: &dyn ObjectStore,
    path: &Path,
    bytes: u64,
    failure: object_store::Error,
) -> object_store::Result<PutResult> {
    let mut retries = 0;
    loop {
        match store.head(path).await {
            Ok(meta) if meta.size == bytes => {
                return Ok(PutResult { e_tag: meta.e_tag, version: meta.version, extensions: Default::default() });
            }
            Err(e) if retries < SETTLE_RETRIES && may_pass(&e) => {
                back_off(retries).await;
                retries += 1;
            }
            _ => return Err(failure),
        }
    }
}

impl MultipartUpload for ConfirmedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.bytes += data.content_length() as u64;
        self.inner.put_part(data)
    }

    fn complete<'life0, 'async_trait>(&'life0 mut self) -> BoxFuture<'async_trait, object_store::Result<PutResult>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            match self.inner.complete().await {
                Ok(done) => Ok(done),
                Err(failure) => self.settle(failure).await,
            }
        })
    }

    fn abort<'life0, 'async_trait>(&'life0 mut self) -> BoxFuture<'async_trait, object_store::Result<()>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            if self.gone {
                return Ok(());
            }
            match self.inner.abort().await {
                // Gone: aborted by an earlier attempt whose answer was lost (the store retries
                // an abort), or since a completion failed, whose error is the one to report,
                // not a "not found" about the file being written.
                Err(object_store::Error::NotFound { .. }) => Ok(()),
                other => other,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;
    use object_store::{PutMultipartOptions, WriteMultipart};

    use super::*;

    /// What S3 does when the answer to a completion is lost on the way back: the object is
    /// completed, the client gets an error, and the upload is gone (an abort is `NoSuchUpload`).
    /// With `completes: false`, the completion fails before the store does anything.
    /// The first `lost_aborts` aborts fail as if their answer was lost too.
    #[derive(Debug)]
    struct LostAnswer {
        inner: Box<dyn MultipartUpload>,
        completes: bool,
        completed: bool,
        lost_aborts: u32,
    }

    impl MultipartUpload for LostAnswer {
        fn put_part(&mut self, data: PutPayload) -> UploadPart {
            self.inner.put_part(data)
        }

        fn complete<'life0, 'async_trait>(&'life0 mut self) -> BoxFuture<'async_trait, object_store::Result<PutResult>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async move {
                if self.completes {
                    self.inner.complete().await?;
                    self.completed = true;
                }
                Err(object_store::Error::Generic { store: "test", source: "connection reset by peer".into() })
            })
        }

        fn abort<'life0, 'async_trait>(&'life0 mut self) -> BoxFuture<'async_trait, object_store::Result<()>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async move {
                if self.lost_aborts > 0 {
                    self.lost_aborts -= 1;
                    let lost = "Server returned non-2xx status code: 503 Service Unavailable: SlowDown";
                    return Err(object_store::Error::Generic { store: "test", source: lost.into() });
                }
                if self.completed {
                    return Err(object_store::Error::NotFound { path: "x".into(), source: "NoSuchUpload".into() });
                }
                self.inner.abort().await
            })
        }
    }

    async fn write(
        completes: bool,
        lost_aborts: u32,
        path: &str,
    ) -> (Arc<dyn ObjectStore>, object_store::Result<PutResult>) {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from(path);
        let inner = store.put_multipart_opts(&path, PutMultipartOptions::default()).await.unwrap();
        let lossy = LostAnswer { inner, completes, completed: false, lost_aborts };
        let upload = ConfirmedUpload::new(Box::new(lossy), store.clone(), path);
        let mut writer = WriteMultipart::new_with_chunk_size(Box::new(upload), 10);
        writer.write(b"twenty-five bytes of data");
        (store, writer.finish().await)
    }

    #[tokio::test(start_paused = true)]
    async fn a_completion_whose_answer_was_lost_succeeds() {
        // The aborts that find it out may lose their answers too, fewer times than retried.
        for lost_aborts in [0, SETTLE_RETRIES] {
            let (store, result) = write(true, lost_aborts, "done.leaf").await;
            assert!(result.is_ok(), "{lost_aborts}: {result:?}");
            let bytes = store.get(&Path::from("done.leaf")).await.unwrap().bytes().await.unwrap();
            assert_eq!(&bytes[..], b"twenty-five bytes of data");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_completion_that_failed_reports_its_own_error_not_the_abort_s() {
        // Also when every abort of the settling loses its answer and the caller's own abort
        // finds the upload gone.
        for (completes, lost_aborts) in [(false, 0), (true, SETTLE_RETRIES + 1)] {
            let (store, result) = write(completes, lost_aborts, "failed.leaf").await;
            let error = result.unwrap_err();
            assert!(!matches!(error, object_store::Error::NotFound { .. }), "{error}");
            assert!(error.to_string().contains("connection reset"), "{error}");
            if !completes {
                assert!(store.head(&Path::from("failed.leaf")).await.is_err(), "nothing at the path");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_abort_that_finds_the_upload_gone_has_done_its_work() {
        // As when the store retried an abort whose first answer was lost: NoSuchUpload.
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("gone.leaf");
        let inner = store.put_multipart_opts(&path, PutMultipartOptions::default()).await.unwrap();
        let gone = LostAnswer { inner, completes: true, completed: true, lost_aborts: 0 };
        let mut upload = ConfirmedUpload::new(Box::new(gone), store, path);
        upload.abort().await.unwrap();
    }
}
