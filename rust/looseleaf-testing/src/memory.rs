//! [`MemoryReader`]: a whole file in memory behind the reader's one I/O trait,
//! [`RangeReader`], so that a test or the fuzzer opens bytes it made (or damaged) without a
//! file system or a store.

use std::ops::Range;

use bytes::Bytes;
use futures::future::BoxFuture;
use looseleaf::io::RangeReader;

/// A [`RangeReader`] over bytes in memory, named `location` (which every error it returns, and
/// every error of a read through it, carries).
///
/// A range past the end is an error ([`looseleaf::Error::corrupt`] with the location), never a
/// panic or a short read: the bytes may be a hostile file whose offsets point anywhere. Reads
/// complete at once, in call order; it does not record or delay them (the integration tests
/// wrap it, or a local file, in their `RecordingReader` and `SlowReader` for that), and its
/// I/O options are the trait's default ([`RangeReader::io_defaults`], a local file's).
#[derive(Debug, Clone)]
pub struct MemoryReader {
    data: Bytes,
    location: String,
}

impl MemoryReader {
    /// `data` as a file named `location`.
    pub fn new(data: impl Into<Bytes>, location: impl Into<String>) -> Self {
        Self { data: data.into(), location: location.into() }
    }
}

impl RangeReader for MemoryReader {
    fn location(&self) -> &str {
        &self.location
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        Box::pin(async move {
            let len = self.data.len() as u64;
            if range.start > range.end || range.end > len {
                return Err(looseleaf::Error::corrupt(format!("bytes {range:?} asked of a {len}-byte file"))
                    .with_location(&self.location));
            }
            Ok(self.data.slice(range.start as usize..range.end as usize))
        })
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        Box::pin(async move {
            let size = self.data.len();
            let start = size.saturating_sub(usize::try_from(len).unwrap_or(usize::MAX));
            Ok((self.data.slice(start..), size as u64))
        })
    }
}
