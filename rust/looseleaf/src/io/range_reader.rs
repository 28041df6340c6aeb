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

    /// A reader of the same file for *sparse* reads, which use a few rows of each page they
    /// read (a take), if this storage reads them better another way; `None` reads them here.
    /// It is asked for once per read, and lives as long as the read and its batches.
    ///
    /// [`LocalFileReader`] maps each large read of a scan on its own; for a sparse read it maps
    /// the whole file once and serves the read's large cached ranges from that mapping (see
    /// `MappedSparseReader`).
    fn sparse_reader(&self) -> Option<Arc<dyn RangeReader>> {
        None
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

/// Reads up to this size are first tried on the calling task, from the page cache only: there
/// they take a few microseconds, less than a trip to tokio's blocking pool (which dominated
/// `take` of scattered rows). What the page cache does not hold (a cold read) goes to the
/// blocking pool, so that a worker never waits on the disk and cold reads run as many at once
/// as the I/O depth allows; larger reads always go there.
///
/// A cold read pays for the failed attempt, and is the better for it: skipping the attempt once
/// a take had met an uncached page made cold 1,000-row takes 1.17x (embeddings) and 1.18x
/// (lineitem) slower, with the same bytes read from the disk. The kernel most likely starts
/// reading the missing pages before `RWF_NOWAIT` gives up, so the disk is at work before the
/// blocking pool picks the read up.
const INLINE_READ: usize = 64 * 1024;

/// Reads of at least this size from a local file map the range instead of copying it (see
/// [`LocalFileReader::with_memory_map`]). Below it, mapping and unmapping (a TLB shootdown on
/// every thread of the process) cost more than the copy: mapping reads of 16 KiB and up made a
/// first-read take of 1,000 lineitem rows 1.24x slower, of 64 KiB and up the 300-column take
/// 1.11x slower.
const MAP_READ: usize = 256 * 1024;

/// About the most bytes of large reads (over [`INLINE_READ`]) a [`LocalFileReader`] has in
/// flight at once; at least one read always is. Small reads are not counted: they wait on the
/// disk's latency, and as many as the I/O depth allows should be in flight (a cold take).
///
/// Why: the scheduler issues reads in priority order, but a disk serves what it is given in
/// its own order (an elevator sorts by offset). With 8 reads of 7 MB in flight, a cold scan of
/// the embeddings set waited 100 ms or more for the pages of its first batch, which the disk
/// served among the last, while later pages filled the I/O buffer. With this bound its first
/// batch came after 17–55 ms instead of 118–142 ms. The whole scan took as long (the disk's
/// throughput bounds it), and reads of cached pages were as fast (paired fresh-process scans of
/// every benchmark set, 0.97–1.03).
const DISK_BYTES_IN_FLIGHT: usize = 16 * 1024 * 1024;

/// The unit of [`LocalFileReader`]'s count of bytes in flight.
const DISK_UNIT: usize = 1024;

/// A [`RangeReader`] over a local file, kept open, reading with positioned reads on tokio's
/// blocking pool (object_store's local store reopens the file on every call), or, for large
/// reads on Linux where mapping is safe, by mapping the range.
///
/// # One version
/// The file's size and modification time when it was opened are its version: every read that
/// copies checks them after its bytes are in (one `fstat`), and a file truncated, rewritten in
/// place or appended to since is an error naming it ("changed since it was opened",
/// [`IoErrorKind::Changed`](crate::error::IoErrorKind)), never bytes of two versions. A file
/// replaced by a rename (how looseleaf and most writers replace files) is not a change: the
/// reader keeps the file it opened.
#[derive(Debug, Clone)]
pub struct LocalFileReader {
    file: Arc<std::fs::File>,
    size: u64,
    /// The modification time when opened (see *One version*).
    modified: Option<std::time::SystemTime>,
    location: String,
    memory_map: bool,
    /// Units of [`DISK_UNIT`] bytes: [`DISK_BYTES_IN_FLIGHT`] less the large reads in flight.
    /// Shared by the clones (the sparse reader's copying one). Tokio's semaphore is fair: reads
    /// acquire in the order they were issued, which is the scheduler's priority order.
    disk: Arc<tokio::sync::Semaphore>,
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
        let disk = Arc::new(tokio::sync::Semaphore::new(disk_units(DISK_BYTES_IN_FLIGHT)));
        let memory_map = cfg!(target_os = "linux") && on_read_only_file_system(&file);
        let modified = metadata.modified().ok();
        Ok(Self { file: Arc::new(file), size: metadata.len(), modified, location, memory_map, disk })
    }

    /// The error of a file that is no longer the version opened, if it is not (see *One
    /// version*): called after a copying read, whose bytes may then be of another version.
    fn check_unchanged(
        file: &std::fs::File,
        size: u64,
        modified: Option<std::time::SystemTime>,
        location: &str,
    ) -> Result<()> {
        let now = file.metadata().map_err(|e| Error::io(location.to_owned(), e))?;
        if now.len() == size && now.modified().ok() == modified {
            return Ok(());
        }
        let why = std::io::Error::other(format!(
            "the file changed since it was opened ({} bytes then, {} now, or modified since): another process \
             truncated or rewrote it in place",
            size,
            now.len()
        ));
        Err(Error::io_of_kind(location.to_owned(), crate::error::IoErrorKind::Changed, why))
    }

    /// Whether reads of 256 KiB or more map the file's pages (Linux only) rather than copy them
    /// into fresh memory; sparse reads (takes) then also read their large cached ranges from one
    /// mapping of the whole file (see [`RangeReader::sparse_reader`]). By default only files on
    /// a read-only file system are mapped: nothing can truncate or rewrite them.
    ///
    /// A read buffer is memory the process has not touched before, faulted in 4 KiB at a time
    /// and then written by the copy; a mapping of pages the page cache holds is filled in one
    /// `madvise(MADV_POPULATE_READ)` and copies nothing. In fresh processes this made the
    /// two-column projections of lineitem and embeddings 0.71x as long and full scans
    /// 0.71-0.96x; processes that had read before were unchanged (their buffers are reused).
    ///
    /// The cost: batches decoded from a mapping may share its pages, and if another process
    /// truncates the file while a read runs or while such a batch lives, touching the lost
    /// pages raises `SIGBUS` and ends the process, as with any memory-mapped reader (pyarrow's
    /// `memory_map`, polars, safetensors). A file already shorter than its metadata when read
    /// is reported as an error either way. Hence the default; turn mapping on (storage option
    /// `memory_map` `true`) for files nothing rewrites in place while they are read (a dataset
    /// only ever replaced by renames), for the speed of a process's first reads.
    pub fn with_memory_map(mut self, memory_map: bool) -> Self {
        self.memory_map = memory_map && cfg!(target_os = "linux");
        self
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
        // Held until the read is done (the semaphore is never closed).
        let _in_flight = match len > INLINE_READ {
            true => self.disk.acquire_many(disk_units(len.min(DISK_BYTES_IN_FLIGHT)) as u32).await.ok(),
            false => None,
        };
        #[cfg(target_os = "linux")]
        if self.memory_map && len >= MAP_READ {
            // Mapping (and populating, which may wait for the disk) runs on the blocking pool.
            let result = tokio::task::spawn_blocking(move || {
                let mapped = map_range(&file, range.clone());
                mapped.or_else(|_| read_rest(&file, Vec::with_capacity(len), len, range.start).map(Bytes::from))
            });
            return result
                .await
                .map_err(|e| Error::internal(format!("a read task failed: {e}")))?
                .map_err(|e| Error::io(location, e));
        }
        // Allocated here, on the runtime's workers, not on the blocking pool's threads: the
        // decode tasks that free a read's buffer run on these workers, and the allocator reuses
        // freed memory for the thread that allocated it. Buffers from the blocking pool's many
        // threads were each fresh memory, faulted in page by page (a first-read take of 1,000
        // rows of 300 columns faulted in 26 of the 50 MB it read).
        let mut buf = Vec::with_capacity(len);
        let (size, modified) = (self.size, self.modified);
        if len <= INLINE_READ && read_cached(&file, &mut buf, len, range.start) == len {
            Self::check_unchanged(&file, size, modified, &location)?;
            return Ok(Bytes::from(buf));
        }
        tokio::task::spawn_blocking(move || {
            let read = read_rest(&file, buf, len, range.start).map(Bytes::from);
            // A short read may be a truncation since the file was opened: say so.
            Self::check_unchanged(&file, size, modified, &location)?;
            read.map_err(|e| Error::io(location, e))
        })
        .await
        .map_err(|e| Error::internal(format!("a read task failed: {e}")))?
    }
}

impl RangeReader for LocalFileReader {
    fn location(&self) -> &str {
        &self.location
    }

    fn sparse_reader(&self) -> Option<Arc<dyn RangeReader>> {
        if !self.memory_map {
            return None;
        }
        let copying = self.clone().with_memory_map(false);
        #[cfg(target_os = "linux")]
        if let Some(mapped) = MappedSparseReader::new(copying.clone()) {
            return Some(Arc::new(mapped));
        }
        Some(Arc::new(copying))
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

/// Whether `file` lies on a file system mounted read-only, where mapping it is safe (nothing can
/// truncate or rewrite it while it is mapped).
#[cfg(unix)]
fn on_read_only_file_system(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `fstatvfs` fills the struct it is given on success and nothing else.
    let done = unsafe { libc::fstatvfs(file.as_raw_fd(), stat.as_mut_ptr()) };
    // SAFETY: initialised by the successful call.
    done == 0 && unsafe { stat.assume_init() }.f_flag & libc::ST_RDONLY != 0
}

#[cfg(not(unix))]
fn on_read_only_file_system(_file: &std::fs::File) -> bool {
    false
}

/// `len` bytes in units of [`DISK_UNIT`], rounded up.
fn disk_units(len: usize) -> usize {
    len.div_ceil(DISK_UNIT)
}

/// `range` of `file`, mapped read-only and its pages populated from the page cache (read from
/// the disk first if they are not there, in readahead-sized requests).
///
/// Fails if the kernel cannot map the file or populate the mapping: `MADV_POPULATE_READ` came
/// with Linux 5.14; a process holds at most `vm.max_map_count` mappings (65,530 by default), and
/// batches that share a mapping's pages keep it; populating fails where touching a page would
/// raise `SIGBUS` (a file shorter than `range`). The caller then reads with `pread`, which
/// reports what is wrong, if anything.
#[cfg(target_os = "linux")]
fn map_range(file: &std::fs::File, range: Range<u64>) -> std::io::Result<Bytes> {
    let len = usize::try_from(range.end - range.start)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a read larger than memory"))?;
    // SAFETY: the mapping is read-only and owned by the returned bytes; what it shows changes only
    // if the file is modified, and a truncation is the documented hazard of
    // `LocalFileReader::with_memory_map` (populating first turns one that already happened into
    // an error, not a signal).
    let map = unsafe { memmap2::MmapOptions::new().offset(range.start).len(len).map(file)? };
    // Starts reading the whole range from the disk at once if it is not cached; populating alone
    // would fault it in readahead window by window.
    map.advise(memmap2::Advice::WillNeed)?;
    map.advise(memmap2::Advice::PopulateRead)?;
    Ok(Bytes::from_owner(map))
}

/// Reads of at least this size that a [`MappedSparseReader`] serves from its mapping; smaller
/// ones it copies. Mapping a few pages for a small read costs more than copying them: populating
/// maps the pages around each one too, and unmapping takes them all down again. Serving the
/// 5 KB reads of a 1,000-row embeddings take from the mapping made a warm process's take 1.9x
/// slower.
#[cfg(target_os = "linux")]
const SPARSE_MAP_READ: u64 = 16 * 1024;

/// About the most bytes a [`MappedSparseReader`] serves from its mapping (reads in flight
/// together may pass it by a few reads); it copies the rest. Copies are freed batch by batch,
/// but pages served from the mapping stay in the process's resident memory until the read ends:
/// a take reads far less than this (60 MB for 1,000 rows of the 300-column table), but a sparse
/// row range or filtered read of a large file may stream far more. As much as a local read's
/// default I/O buffer.
#[cfg(target_os = "linux")]
const SPARSE_MAP_LIMIT: u64 = IoOptions::LOCAL.buffer.get();

/// The reader of a sparse read (a take) of a local file: one read-only mapping of the whole
/// file, made when the read starts and unmapped when the read and the last batch sharing its
/// pages are gone. A read of [`SPARSE_MAP_READ`] bytes or more whose pages the page cache holds
/// is a slice of the mapping, its page tables filled in one call (`MADV_POPULATE_READ`): no
/// buffer, no copy. Any other read copies, as [`LocalFileReader`] without mapping does.
///
/// Why a mapping of the whole file: a first read has no freed buffers to reuse, so a copy first
/// faults in new memory page by page, and one mapping per read (as large reads of scans use)
/// would unmap, with a TLB shootdown on every thread, once per page read. Paired against
/// copying, 1,000-row takes in fresh processes: nested 0.66–0.72, 300 columns 0.82–0.92,
/// lineitem 0.95–0.99; in a process that has read before (the file opened again for each take),
/// 0.91–1.02.
///
/// Invariants: at most about [`SPARSE_MAP_LIMIT`] bytes are served from the mapping; once a
/// read has met pages the page cache does not hold, every later read of this reader copies.
/// The kernel reads ahead for positioned reads, not for what a mapping shows; reading some
/// ranges through the mapping and some with `pread` left the readahead too little to go on, and
/// cold takes were 1.16–1.29x slower than copying alone.
///
/// The hazard of [`LocalFileReader::with_memory_map`] applies (a file truncated while batches
/// share its pages raises `SIGBUS`); a file already short when read is an error, not a signal:
/// reads past its recorded size are refused, and populating fails where touching would fault.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct MappedSparseReader {
    /// The whole file.
    map: Bytes,
    /// Whether a read met pages the page cache does not hold.
    cold: std::sync::atomic::AtomicBool,
    /// Bytes served from the mapping so far.
    mapped: std::sync::atomic::AtomicU64,
    /// Reads what the mapping does not serve.
    copying: LocalFileReader,
}

#[cfg(target_os = "linux")]
impl MappedSparseReader {
    /// A reader mapping the whole of `copying`'s file, if the kernel maps it.
    fn new(copying: LocalFileReader) -> Option<Self> {
        let len = usize::try_from(copying.size).ok().filter(|&len| len > 0)?;
        // SAFETY: as in `map_range`: read-only, owned by the returned bytes; truncation is the
        // documented hazard.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(&*copying.file) }.ok()?;
        // A page evicted between the residency check and populating is read alone, not with
        // the pages around it.
        map.advise(memmap2::Advice::Random).ok()?;
        Some(Self { map: Bytes::from_owner(map), cold: Default::default(), mapped: Default::default(), copying })
    }

    async fn read_at(&self, range: Range<u64>) -> Result<Bytes> {
        use std::sync::atomic::Ordering::Relaxed;
        let size = range.end.saturating_sub(range.start);
        if range.end > self.copying.size
            || size < SPARSE_MAP_READ
            || self.cold.load(Relaxed)
            || self.mapped.load(Relaxed) + size > SPARSE_MAP_LIMIT
        {
            return self.copying.read_at(range).await;
        }
        let (start, end) = (range.start as usize, range.end as usize);
        let page = page_size();
        let base = self.map.as_ptr() as usize;
        // The pages holding the range (the mapping starts on a page boundary).
        let first = (base + start) / page * page;
        let len = (base + end).div_ceil(page) * page - first;
        if cached(first, len, page) && populate(first, len) {
            self.mapped.fetch_add(size, Relaxed);
            return Ok(self.map.slice(start..end));
        }
        self.cold.store(true, Relaxed);
        self.copying.read_at(range).await
    }
}

#[cfg(target_os = "linux")]
impl RangeReader for MappedSparseReader {
    fn location(&self) -> &str {
        &self.copying.location
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        Box::pin(self.read_at(range))
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, Result<(Bytes, u64)>> {
        self.copying.get_suffix(len)
    }
}

#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: `sysconf` reads a constant of the system.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// Whether the page cache holds every page of the `len` bytes mapped at `start` (both multiples
/// of `page`). A page the kernel is still reading counts as held; a populate then waits for it.
#[cfg(target_os = "linux")]
fn cached(start: usize, len: usize, page: usize) -> bool {
    let mut pages = vec![0u8; len / page];
    // SAFETY: `start..start + len` lies within a live mapping, page aligned; `pages` has a byte
    // for each page.
    let done = unsafe { libc::mincore(start as *mut libc::c_void, len, pages.as_mut_ptr()) };
    done == 0 && pages.iter().all(|state| state & 1 == 1)
}

/// Fills the page tables of the `len` bytes mapped at `start` from the page cache; `false` where
/// touching them would fault (a file cut short) or the kernel cannot (before Linux 5.14).
#[cfg(target_os = "linux")]
fn populate(start: usize, len: usize) -> bool {
    // SAFETY: populating only reads pages of a live read-only mapping.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_READ) == 0 }
}

/// `len` bytes from `offset`, in `buf` (holding the first of them already, if any), read without
/// moving a shared cursor (so concurrent reads need no lock) into memory that is never zeroed
/// first: zeroing doubled the memory traffic of a read served from the page cache.
#[cfg(unix)]
fn read_rest(file: &std::fs::File, mut buf: Vec<u8>, len: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut filled = buf.len();
    buf.reserve_exact(len.saturating_sub(filled));
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

/// `len` bytes from `offset`, in `buf` (its first bytes, if any, already read from there).
#[cfg(windows)]
fn read_rest(file: &std::fs::File, mut buf: Vec<u8>, len: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    let filled = buf.len().min(len);
    buf.resize(len, 0);
    read_exact_at(file, &mut buf[filled..], offset + filled as u64)?;
    Ok(buf)
}

/// Reads into `buf` (empty, with room for `len` bytes) what the page cache holds of the `len`
/// bytes from `offset`, without waiting for the disk (`preadv2` with `RWF_NOWAIT`), and returns
/// how many bytes it read: all of them, some (the rest are not cached), or none. Any error
/// (an uncached first page, a kernel or file system without `RWF_NOWAIT`) reads nothing: the
/// blocking read that follows reports errors that matter.
#[cfg(target_os = "linux")]
fn read_cached(file: &std::fs::File, buf: &mut Vec<u8>, len: usize, offset: u64) -> usize {
    use std::os::fd::AsRawFd;
    let mut filled = 0;
    while filled < len {
        let Some(at) = offset.checked_add(filled as u64).and_then(|at| libc::off_t::try_from(at).ok()) else {
            break;
        };
        let iov = libc::iovec {
            // SAFETY: `filled < len <= capacity`, so the pointer stays within the allocation.
            iov_base: unsafe { buf.as_mut_ptr().add(filled) }.cast(),
            iov_len: len - filled,
        };
        // SAFETY: the kernel writes at most `iov_len` bytes at `iov_base`, within the buffer's
        // capacity; the file descriptor is open for as long as `file` is borrowed.
        let read = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
        if read <= 0 {
            if read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        filled += read as usize;
    }
    // SAFETY: the loop above initialised the first `filled` bytes.
    unsafe { buf.set_len(filled) };
    filled
}

/// Elsewhere small reads are made on the calling task as they are, cached or not.
#[cfg(all(unix, not(target_os = "linux")))]
fn read_cached(file: &std::fs::File, buf: &mut Vec<u8>, len: usize, offset: u64) -> usize {
    match read_rest(file, std::mem::take(buf), len, offset) {
        Ok(read) => {
            *buf = read;
            buf.len()
        }
        Err(_) => 0,
    }
}

/// Windows reads everything on the blocking pool.
#[cfg(windows)]
fn read_cached(_file: &std::fs::File, _buf: &mut Vec<u8>, _len: usize, _offset: u64) -> usize {
    0
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary file of `len` bytes whose byte `i` is `i * 7 mod 251`.
    fn file_of(len: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        (file, data)
    }

    #[test]
    fn a_read_begun_from_the_cache_is_completed() {
        let (file, data) = file_of(100_000);
        let handle = std::fs::File::open(file.path()).unwrap();
        for (offset, len, already) in [(0, 10, 0), (5, 60_000, 4_096), (99_000, 1_000, 999), (7, 0, 0)] {
            let mut buf = Vec::with_capacity(len);
            buf.extend_from_slice(&data[offset..offset + already]);
            let read = read_rest(&handle, buf, len, offset as u64).unwrap();
            assert_eq!(read, &data[offset..offset + len], "{offset} {len} {already}");
        }
        // Past the end: an error, not a short buffer.
        assert!(read_rest(&handle, Vec::new(), 10, 99_995).is_err());
    }

    #[test]
    fn cached_reads_return_what_they_read() {
        let (file, data) = file_of(200_000);
        let handle = std::fs::File::open(file.path()).unwrap();
        for (offset, len) in [(0, 1), (10, 64 * 1024), (199_990, 10), (150_000, 60_000)] {
            let mut buf = Vec::with_capacity(len);
            let read = read_cached(&handle, &mut buf, len, offset as u64);
            // Whatever the page cache held (on Linux, everything just written, unless memory
            // is short), never more than asked for and never beyond the file.
            assert!(read <= len && read == buf.len(), "{offset} {len}: {read}");
            assert_eq!(buf, &data[offset..offset + read], "{offset} {len}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn small_and_large_reads_return_the_file_bytes_cached_or_not() {
        let (file, data) = file_of(3 << 20);
        for memory_map in [true, false] {
            let reader = LocalFileReader::open(file.path()).unwrap().with_memory_map(memory_map);
            reads_return_the_file_bytes(&reader, file.path(), &data).await;
        }
    }

    /// Large reads together past the bytes allowed in flight, one of them larger than all of
    /// it, wait their turn and each returns its bytes; every unit is given back once they are
    /// done (a unit kept would hold back every later read).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_reads_past_the_bytes_in_flight_all_complete() {
        let len = DISK_BYTES_IN_FLIGHT + (4 << 20);
        let (file, data) = file_of(len);
        for memory_map in [true, false] {
            let reader = LocalFileReader::open(file.path()).unwrap().with_memory_map(memory_map);
            let mut ranges: Vec<Range<u64>> = (0..6u64).map(|i| (i * (3 << 20))..((i + 1) * (3 << 20))).collect();
            ranges.push(1000..len as u64);
            ranges.push(5..INLINE_READ as u64 + 6);
            let reads = ranges.iter().map(|range| reader.get_range(range.clone()));
            for (range, bytes) in ranges.iter().zip(futures::future::join_all(reads).await) {
                assert_eq!(&bytes.unwrap()[..], &data[range.start as usize..range.end as usize]);
            }
            assert_eq!(reader.disk.available_permits(), disk_units(DISK_BYTES_IN_FLIGHT));
        }
    }

    /// Drops `path` from the page cache where the system allows it (not on tmpfs, say).
    fn evict(path: &std::path::Path) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let handle = std::fs::File::open(path).unwrap();
            handle.sync_all().unwrap();
            // SAFETY: a valid descriptor; the advice changes no memory of this process.
            unsafe { libc::posix_fadvise(handle.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = path;
    }

    async fn reads_return_the_file_bytes(reader: &dyn RangeReader, path: &std::path::Path, data: &[u8]) {
        for evicted in [false, true] {
            if evicted {
                // Small reads then take the path of a cold read (the blocking pool).
                evict(path);
            }
            // Small, inline and blocking reads; large ones (mapped where mapping is on), at
            // offsets on and off page boundaries, up to the file's last byte.
            for range in [0..100, 4_000..70_000, 1_000_000..3_000_000, 4_096..(3 << 20), (3 << 20) - 5..3 << 20] {
                let bytes = reader.get_range(range.clone()).await.unwrap();
                assert_eq!(&bytes[..], &data[range.start as usize..range.end as usize], "{range:?}, evicted {evicted}");
            }
        }
        let error = reader.get_range(0..(3 << 20) + 1).await.unwrap_err();
        assert!(matches!(error, Error::Corrupt { .. }), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sparse_reads_return_the_file_bytes_cached_or_not() {
        let (file, data) = file_of(3 << 20);
        let mapping = LocalFileReader::open(file.path()).unwrap().with_memory_map(true);
        let copying = mapping.clone().with_memory_map(false);
        assert!(LocalFileReader::open(file.path()).unwrap().sparse_reader().is_none(), "maps by default");
        assert!(copying.sparse_reader().is_none(), "a copying reader serves sparse reads itself");
        // Only where reads are mapped at all.
        assert_eq!(mapping.sparse_reader().is_some(), cfg!(target_os = "linux"));
        if let Some(sparse) = mapping.sparse_reader() {
            assert_eq!(sparse.location(), mapping.location());
            reads_return_the_file_bytes(&*sparse, file.path(), &data).await;
        }
    }

    /// Whether `bytes` are a slice of `reader`'s mapping rather than a copy.
    #[cfg(target_os = "linux")]
    fn in_mapping(reader: &MappedSparseReader, bytes: &Bytes) -> bool {
        reader.map.as_ptr_range().contains(&bytes.as_ptr())
    }

    /// Once about `SPARSE_MAP_LIMIT` bytes were served from the mapping, reads are copies.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sparse_reads_map_no_more_than_the_limit() {
        let (file, data) = file_of(4 << 20);
        let copying = LocalFileReader::open(file.path()).unwrap().with_memory_map(false);
        let _ = copying.get_range(0..(4 << 20)).await.unwrap();
        let reader = MappedSparseReader::new(copying).unwrap();
        reader.mapped.store(SPARSE_MAP_LIMIT - (1 << 20), std::sync::atomic::Ordering::Relaxed);
        let within = reader.get_range(0..1 << 20).await.unwrap();
        assert!(in_mapping(&reader, &within), "up to the limit, from the mapping");
        let past = reader.get_range(1 << 20..(1 << 20) + SPARSE_MAP_READ).await.unwrap();
        assert_eq!(&past[..], &data[1 << 20..(1 << 20) + SPARSE_MAP_READ as usize]);
        assert!(!in_mapping(&reader, &past), "past the limit, copied");
    }

    /// Cached reads of 16 KiB and up are slices of the mapping; smaller ones, and every read after
    /// one met pages the page cache did not hold, are copies.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sparse_reads_map_large_cached_ranges_until_one_is_not_cached() {
        let (file, data) = file_of(4 << 20);
        let large = 100_000..(1 << 20);
        let small = 7..(SPARSE_MAP_READ - 1 + 7);
        let copying = LocalFileReader::open(file.path()).unwrap().with_memory_map(false);
        let _ = copying.get_range(0..(4 << 20)).await.unwrap();
        let warm = MappedSparseReader::new(copying.clone()).unwrap();
        let bytes = warm.get_range(large.clone()).await.unwrap();
        assert_eq!(&bytes[..], &data[100_000..1 << 20]);
        assert!(in_mapping(&warm, &bytes), "a cached large read is a slice of the mapping");
        let bytes = warm.get_range(small.clone()).await.unwrap();
        assert_eq!(&bytes[..], &data[small.start as usize..small.end as usize]);
        assert!(!in_mapping(&warm, &bytes), "a small read is copied");

        evict(file.path());
        let cold = MappedSparseReader::new(copying).unwrap();
        let page = page_size();
        let first = cold.map.as_ptr() as usize + (2 << 20);
        if cached(first, 1 << 20, page) {
            return; // the system keeps the file cached (tmpfs): nothing cold to test
        }
        let bytes = cold.get_range(2 << 20..3 << 20).await.unwrap();
        assert_eq!(&bytes[..], &data[2 << 20..3 << 20]);
        assert!(!in_mapping(&cold, &bytes), "an uncached read is copied");
        // Cached now (that read filled the page cache), and still copied.
        let bytes = cold.get_range(large.clone()).await.unwrap();
        assert_eq!(&bytes[..], &data[100_000..1 << 20]);
        assert!(!in_mapping(&cold, &bytes), "reads after a cold one are copied");
    }

    /// A file cut short after it was opened: a read of the lost bytes is an error, mapped or
    /// not (populating the mapping fails where touching it would raise `SIGBUS`); a copying
    /// reader's every later read is one too (the file is no longer the version opened), while
    /// a mapped range still there reads as before.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_of_a_file_truncated_since_it_was_opened_is_an_error() {
        for memory_map in [true, false] {
            let (file, data) = file_of(2 << 20);
            let reader = LocalFileReader::open(file.path()).unwrap().with_memory_map(memory_map);
            file.as_file().set_len(1 << 20).unwrap();
            let error = reader.get_range(512 << 10..(2 << 20) - 1).await.unwrap_err();
            assert!(matches!(error, Error::Io { .. }), "memory_map {memory_map}: {error}");
            assert!(error.to_string().contains(&file.path().display().to_string()), "{error}");
            let still_there = reader.get_range(0..(1 << 20)).await;
            match memory_map && cfg!(target_os = "linux") {
                true => assert_eq!(&still_there.unwrap()[..], &data[..1 << 20]),
                false => {
                    let error = still_there.unwrap_err();
                    assert_eq!(error.kind(), crate::error::ErrorKind::Changed, "{error}");
                }
            }
        }
    }

    /// A file rewritten in place (same size, new bytes) after it was opened: a copying read is
    /// an error, never the new bytes at the old offsets.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_of_a_file_rewritten_since_it_was_opened_is_an_error() {
        use std::io::{Seek, Write};
        let (file, data) = file_of(1 << 20);
        let reader = LocalFileReader::open(file.path()).unwrap();
        assert_eq!(&reader.get_range(0..4096).await.unwrap()[..], &data[..4096]);
        let mut handle = file.as_file();
        handle.seek(std::io::SeekFrom::Start(0)).unwrap();
        handle.write_all(&vec![0xAB; 4096]).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1);
        handle.set_modified(later).unwrap();
        for range in [0..4096, 100_000..900_000] {
            let error = reader.get_range(range.clone()).await.unwrap_err();
            assert_eq!(error.kind(), crate::error::ErrorKind::Changed, "{range:?}: {error}");
        }
    }

    /// The same through the reader of sparse reads, whose mapping was made before the cut.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sparse_read_of_a_file_truncated_since_it_was_opened_is_an_error() {
        let (file, data) = file_of(2 << 20);
        let reader = LocalFileReader::open(file.path()).unwrap().with_memory_map(true);
        let _ = reader.get_range(0..2 << 20).await.unwrap();
        let Some(sparse) = reader.sparse_reader() else { return };
        file.as_file().set_len(1 << 20).unwrap();
        for range in [512 << 10..(2 << 20) - 1, (1 << 20) + 10..(1 << 20) + 100] {
            let error = sparse.get_range(range.clone()).await.unwrap_err();
            assert!(matches!(error, Error::Io { .. }), "{range:?}: {error}");
        }
        // What is still there: as before from the mapping, or the change reported by a copy.
        match sparse.get_range(0..(1 << 20)).await {
            Ok(bytes) => assert_eq!(&bytes[..], &data[..1 << 20]),
            Err(error) => assert_eq!(error.kind(), crate::error::ErrorKind::Changed, "{error}"),
        }
    }
}
