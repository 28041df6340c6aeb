//! Range readers that wrap another to watch or slow a read: [`RecordingReader`] logs every
//! request (the I/O pattern tests compare the log with the plan), [`SlowReader`] adds latency
//! (so that the order of requests does not depend on the machine's speed); and
//! [`subtract_reads`], to compare a log with a plan.
//!
//! The in-memory reader they often wrap is `looseleaf_testing::MemoryReader`, shared with the
//! fuzzer.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use looseleaf::IoOptions;
use looseleaf::io::{LocalFileReader, RangeReader};

/// A [`RangeReader`] that logs every `get_range` call, in the order they were made, before
/// passing it on.
#[derive(Debug)]
pub struct RecordingReader {
    inner: Arc<dyn RangeReader>,
    log: Mutex<Vec<Range<u64>>>,
}

impl RecordingReader {
    pub fn new(inner: Arc<dyn RangeReader>) -> Arc<Self> {
        Arc::new(Self { inner, log: Mutex::new(Vec::new()) })
    }

    /// Wraps a local file.
    pub fn open_path(path: &Path) -> Arc<Self> {
        Self::new(Arc::new(LocalFileReader::open(path).unwrap()))
    }

    /// The reads so far, in call order.
    pub fn reads(&self) -> Vec<Range<u64>> {
        self.log.lock().unwrap().clone()
    }

    /// Forgets the reads so far.
    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

impl RangeReader for RecordingReader {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        self.log.lock().unwrap().push(range.clone());
        self.inner.get_range(range)
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        self.inner.get_suffix(len)
    }

    fn io_defaults(&self) -> IoOptions {
        self.inner.io_defaults()
    }
}

/// A [`RangeReader`] whose reads each take `delay` (a storage with latency), so that the order
/// in which a read's requests are issued does not depend on how fast the machine is.
#[derive(Debug)]
pub struct SlowReader {
    inner: Arc<dyn RangeReader>,
    delay: std::time::Duration,
}

impl SlowReader {
    pub fn new(inner: Arc<dyn RangeReader>, delay: std::time::Duration) -> Arc<Self> {
        Arc::new(Self { inner, delay })
    }
}

impl RangeReader for SlowReader {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.get_range(range).await
        })
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        self.inner.get_suffix(len)
    }

    fn io_defaults(&self) -> IoOptions {
        self.inner.io_defaults()
    }
}

/// Removes each of `planned` from `recorded` (a multiset difference) and returns what is left;
/// panics if a planned read was not made.
pub fn subtract_reads(recorded: &[Range<u64>], planned: &[Range<u64>], what: &str) -> Vec<Range<u64>> {
    let mut counts: HashMap<(u64, u64), i64> = HashMap::new();
    for r in recorded {
        *counts.entry((r.start, r.end)).or_default() += 1;
    }
    for r in planned {
        let count = counts.entry((r.start, r.end)).or_default();
        *count -= 1;
        assert!(*count >= 0, "{what}: the plan has read {r:?}, which the read did not make (or made fewer times)");
    }
    let mut left = Vec::new();
    for r in recorded {
        let count = counts.get_mut(&(r.start, r.end)).unwrap();
        if *count > 0 {
            *count -= 1;
            left.push(r.clone());
        }
    }
    left
}
