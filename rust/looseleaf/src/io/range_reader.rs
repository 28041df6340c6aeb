//! [`RangeReader`]: byte ranges of one file, the only storage operation the reader needs.

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;

use super::IoOptions;
use crate::error::{Error, Result};

/// Reads byte ranges of one file.
///
/// Implementations must return exactly the bytes asked for, or an error: a short read (a file
/// shorter than its metadata claims) is reported as [`Error::Corrupt`].
pub trait RangeReader: Send + Sync + Debug {
    /// The file's location, for error messages.
    fn location(&self) -> &str;

    /// Reads `range`.
    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>>;

    /// Reads the last `len` bytes (the whole file if it is shorter) and returns them with the
    /// file's size, in one storage call where the store allows it.
    fn get_suffix(&self, len: u64) -> BoxFuture<'_, Result<(Bytes, u64)>>;

    /// The I/O settings that suit this storage when the caller gives none.
    fn io_defaults(&self) -> IoOptions {
        IoOptions::LOCAL
    }

    /// Counters of what the storage made the reader do (retries, throttling, hedges).
    fn stats(&self) -> ReaderStats {
        ReaderStats::default()
    }
}

/// What a [`RangeReader`]'s storage made it do, since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Requests tried again after a retryable failure.
    pub retries: u64,
    /// Answers asking the reader to slow down (HTTP 429, 503, `SlowDown`).
    pub throttled: u64,
    /// Requests issued a second time because the first ran far longer than expected.
    pub hedged: u64,
}

/// Reads up to this size are made on the calling task: from the page cache they take a few
/// microseconds, less than a trip to tokio's blocking pool (which dominated `take` of scattered
/// rows); larger ones go to the blocking pool.
const INLINE_READ: usize = 64 * 1024;

/// A [`RangeReader`] over a local file, kept open, reading with positioned reads on tokio's
/// blocking pool (object_store's local store reopens the file on every call).
#[derive(Debug, Clone)]
pub struct LocalFileReader {
    file: Arc<std::fs::File>,
    size: u64,
    location: String,
}

impl LocalFileReader {
    /// Opens `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let location = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::io(location.clone(), e))?;
        let metadata = file.metadata().map_err(|e| Error::io(location.clone(), e))?;
        if metadata.is_dir() {
            return Err(Error::invalid_argument(format!("{location} is a directory, not a looseleaf file")));
        }
        Ok(Self { file: Arc::new(file), size: metadata.len(), location })
    }

    async fn read_at(&self, range: Range<u64>) -> Result<Bytes> {
        if range.end > self.size {
            return Err(Error::corrupt_at(
                range.start,
                format!(
                    "file is truncated: bytes {}..{} were asked for but the file has {} bytes",
                    range.start, range.end, self.size
                ),
            )
            .with_location(&self.location));
        }
        let file = self.file.clone();
        let location = self.location.clone();
        let len = (range.end - range.start) as usize;
        // Allocated here, on the runtime's workers, not on the blocking pool's threads: the
        // decode tasks that free a read's buffer run on these workers, and the allocator reuses
        // freed memory for the thread that allocated it. Buffers from the blocking pool's many
        // threads were each fresh memory, faulted in page by page (a first-read take of 1,000
        // rows of 300 columns faulted in 26 of the 50 MB it read).
        let buf = Vec::with_capacity(len);
        if len <= INLINE_READ {
            return read_new(&file, buf, len, range.start).map(Bytes::from).map_err(|e| Error::io(location, e));
        }
        tokio::task::spawn_blocking(move || {
            read_new(&file, buf, len, range.start).map(Bytes::from).map_err(|e| Error::io(location, e))
        })
        .await
        .map_err(|e| Error::internal(format!("a read task failed: {e}")))?
    }
}

impl RangeReader for LocalFileReader {
    fn location(&self) -> &str {
        &self.location
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        Box::pin(self.read_at(range))
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, Result<(Bytes, u64)>> {
        Box::pin(async move {
            let start = self.size.saturating_sub(len);
            let bytes = if start == self.size { Bytes::new() } else { self.read_at(start..self.size).await? };
            Ok((bytes, self.size))
        })
    }
}

/// `len` bytes from `offset`, in `buf` (empty, with room for them), read without moving a shared
/// cursor (so concurrent reads need no lock) into memory that is never zeroed first: zeroing
/// doubled the memory traffic of a read served from the page cache.
#[cfg(unix)]
fn read_new(file: &std::fs::File, mut buf: Vec<u8>, len: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    buf.clear();
    buf.reserve_exact(len);
    let mut filled = 0;
    while filled < len {
        let at = offset.checked_add(filled as u64).and_then(|at| libc::off_t::try_from(at).ok()).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "read past the largest file offset")
        })?;
        // SAFETY: the kernel writes at most `len - filled` bytes at `filled`, which lie within
        // the buffer's capacity; the file descriptor is open for as long as `file` is borrowed.
        let read = unsafe { libc::pread(file.as_raw_fd(), buf.as_mut_ptr().add(filled).cast(), len - filled, at) };
        match read {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n if n > 0 => filled += n as usize,
            _ => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
    // SAFETY: the loop above initialised all `len` bytes.
    unsafe { buf.set_len(len) };
    Ok(buf)
}

/// `len` bytes from `offset`, in `buf`.
#[cfg(windows)]
fn read_new(file: &std::fs::File, mut buf: Vec<u8>, len: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    buf.clear();
    buf.resize(len, 0);
    read_exact_at(file, &mut buf, offset)?;
    Ok(buf)
}

/// Fills `buf` from `offset` (Windows' positioned reads move the cursor, which no one else uses).
#[cfg(windows)]
fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}
