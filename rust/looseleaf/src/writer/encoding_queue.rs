//! [`EncodingQueue`]: pages encoded on the writer's threads while it goes on, handed back in
//! the order they were queued.
//!
//! Encoding a page is most of a write's work, and pages fill at different times: a batch of
//! TPC-H lineitem fills a page of its comments every other batch and one of its dates every
//! eighth. Encoding the pages each batch fills and waiting for them before the next batch kept
//! one core idle whenever a single column filled a page. Queued instead, pages of many columns
//! and many batches are encoded at once while the writer cuts the next batch and writes the
//! pages already encoded.
//!
//! The pages are encoded on [`EncodingThreads`], one per core for the whole process, waiting
//! on a channel of pages: a thread that finishes a page takes the next one queued at once.
//! (Handing each page to tokio's blocking pool under a permit per core left a thread idle for
//! every page until the writer woke to hand over the next: a write of 300 small columns took
//! 1.3 times as long.) Writers share the threads: a partitioned dataset write keeps up to 64
//! files open, and threads of their own would be 64 per core.
//!
//! Invariants:
//! - Pages come back in the order they were queued, so each column's pages are written in row
//!   order, and the file does not depend on which thread finished first.
//! - The rows of the queued pages, encoded or not, hold at most `max_bytes` (estimated encoded
//!   size), or one page when a single page is larger: [`EncodingQueue::next_page`] hands back
//!   the oldest page, waiting for it, before more would not fit.
//! - A page whose encoding panicked comes back as an error; the thread goes on.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use tokio::sync::oneshot;

use super::column::{ColumnEncoder, EncodedPage, PageRows};
use crate::error::{Error, Result};

/// Work for an encoding thread: encode a page and send it back.
type Task = Box<dyn FnOnce() + Send>;

/// Pages being encoded, or encoded and not yet written, oldest first.
pub struct EncodingQueue {
    jobs: VecDeque<Job>,
    /// Estimated encoded bytes of the rows of `jobs`.
    bytes: u64,
    max_bytes: u64,
    encoders: Encoders,
}

/// Where an [`EncodingQueue`]'s pages are encoded.
enum Encoders {
    /// The process's shared threads, not asked for until the first page (a writer that writes
    /// nothing starts none).
    Pending,
    Threads(EncodingThreads),
    /// No thread could be started: pages are encoded as they are queued.
    Inline,
}

/// A queued page: its column, the size of its rows and where its encoding arrives.
struct Job {
    column: usize,
    bytes: u64,
    page: oneshot::Receiver<Result<EncodedPage>>,
}

impl EncodingQueue {
    /// A queue encoding on the process's shared [`EncodingThreads`] and holding up to
    /// `max_bytes` of rows.
    pub fn new(max_bytes: u64) -> Self {
        Self { jobs: VecDeque::new(), bytes: 0, max_bytes, encoders: Encoders::Pending }
    }

    /// A queue encoding on `threads`.
    #[cfg(test)]
    fn on(threads: EncodingThreads, max_bytes: u64) -> Self {
        Self { jobs: VecDeque::new(), bytes: 0, max_bytes, encoders: Encoders::Threads(threads) }
    }

    /// The oldest page and its column, if it is encoded already or if `incoming` more bytes
    /// would not fit (then once it is encoded); `None` otherwise, or when nothing is queued.
    ///
    /// # Errors
    /// As [`EncodingQueue::oldest_page`].
    pub async fn next_page(&mut self, incoming: u64) -> Option<Result<(usize, EncodedPage)>> {
        let encoded = !self.jobs.front()?.page.is_empty();
        let fits = self.bytes.checked_add(incoming).is_some_and(|bytes| bytes <= self.max_bytes);
        if encoded || !fits { self.oldest_page().await } else { None }
    }

    /// The oldest page and its column, once it is encoded; `None` when nothing is queued.
    ///
    /// # Errors
    /// The page's encoding error, or [`Error::Internal`] if its encoding panicked.
    pub async fn oldest_page(&mut self) -> Option<Result<(usize, EncodedPage)>> {
        let job = self.jobs.pop_front()?;
        self.bytes -= job.bytes;
        let page = job.page.await.unwrap_or_else(|_| Err(Error::internal("an encoding thread stopped")));
        Some(page.map(|page| (job.column, page)))
    }

    /// Queues the rows of a page of `column` to be encoded by `encoder`.
    ///
    /// Callers make room first ([`EncodingQueue::next_page`] with `rows.bytes`).
    pub fn push(&mut self, column: usize, encoder: &Arc<ColumnEncoder>, rows: PageRows) {
        let (sender, page) = oneshot::channel();
        let encoder = Arc::clone(encoder);
        self.bytes += rows.bytes;
        self.jobs.push_back(Job { column, bytes: rows.bytes, page });
        let task: Task = Box::new(move || {
            let page = catch_unwind(AssertUnwindSafe(|| encoder.encode(rows)))
                .unwrap_or_else(|_| Err(Error::internal(format!("encoding a page of column {column} panicked"))));
            // The queue may have been dropped meanwhile (the write failed): nobody waits.
            let _ = sender.send(page);
        });
        if matches!(self.encoders, Encoders::Pending) {
            self.encoders = EncodingThreads::shared().map_or(Encoders::Inline, Encoders::Threads);
        }
        match &self.encoders {
            Encoders::Threads(threads) => threads.run(task),
            Encoders::Pending | Encoders::Inline => task(),
        }
    }
}

/// Threads encoding pages, taken from a channel in the order they were sent; they end when
/// the last handle is dropped.
#[derive(Clone)]
pub struct EncodingThreads {
    tasks: mpsc::Sender<Task>,
}

/// The process's [`EncodingThreads`], with the id of the process that started them: a forked
/// child (Spark forks its Python workers) inherits the channel but none of the threads, and
/// starts its own.
static SHARED: Mutex<Option<(u32, EncodingThreads)>> = Mutex::new(None);

impl EncodingThreads {
    /// The process's threads, one per core, started the first time; `None` if no thread could
    /// be started.
    pub fn shared() -> Option<Self> {
        let pid = std::process::id();
        let mut slot = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((owner, threads)) = slot.as_ref()
            && *owner == pid
        {
            return Some(threads.clone());
        }
        let threads = Self::start(super::encoding_threads())?;
        if let Some(inherited) = slot.replace((pid, threads.clone())) {
            // The parent's channel: no thread of this process reads it, and its receiver's
            // lock may have been held when the process forked. Left alone, not dropped.
            std::mem::forget(inherited);
        }
        Some(threads)
    }

    /// Starts `count` threads (at least one); `None` if none could be started.
    pub fn start(count: usize) -> Option<Self> {
        let (sender, receiver) = mpsc::channel::<Task>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut running = 0;
        for _ in 0..count.max(1) {
            let receiver = Arc::clone(&receiver);
            let thread = std::thread::Builder::new().name("looseleaf-encode".into()).spawn(move || {
                loop {
                    // The lock is held while waiting, never while encoding: one idle thread
                    // waits on the channel, the others on the lock.
                    let task = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    match task {
                        Ok(task) => task(),
                        Err(mpsc::RecvError) => return,
                    }
                }
            });
            running += usize::from(thread.is_ok());
        }
        (running > 0).then_some(Self { tasks: sender })
    }

    /// Runs `task` on one of the threads, or here if they are gone.
    fn run(&self, task: Task) {
        if let Err(mpsc::SendError(task)) = self.tasks.send(task) {
            task();
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::DataType;

    use super::*;
    use crate::encodings::policy::EncodingPolicy;
    use crate::writer::WriterOptions;
    use crate::writer::column::ColumnWriter;
    use crate::writer::shred::ColumnKind;

    fn encoder(data_type: DataType) -> Arc<ColumnEncoder> {
        let writer =
            ColumnWriter::new(ColumnKind::Values, data_type, EncodingPolicy::default(), &WriterOptions::default());
        Arc::clone(writer.encoder())
    }

    fn rows(array: ArrayRef) -> PageRows {
        PageRows { bytes: array.get_buffer_memory_size() as u64, arrays: vec![array] }
    }

    /// Pages of uneven cost (large string pages, which train FSST, between tiny integer pages)
    /// come back in the order they were queued, each with its rows, whatever the threads and
    /// the bound (taken back as the writer does: those encoded, or the oldest when full).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_come_back_in_queue_order() {
        let (ints, strings) = (encoder(DataType::Int64), encoder(DataType::Utf8));
        for (threads, max_bytes) in [(1, u64::MAX), (2, 1 << 20), (4, 1)] {
            let mut queue = EncodingQueue::on(EncodingThreads::start(threads).unwrap(), max_bytes);
            let (mut expected, mut got) = (Vec::new(), Vec::new());
            for i in 0..40usize {
                let (column, encoder, array): (usize, _, ArrayRef) = if i % 3 == 0 {
                    let values: Vec<String> =
                        (0..20_000 + i).map(|v| format!("value {} of page {i}", v * 7919 % 1000)).collect();
                    (1, &strings, Arc::new(StringArray::from(values)))
                } else {
                    (0, &ints, Arc::new(Int64Array::from_iter_values(0..i as i64 + 1)))
                };
                expected.push((column, array.len() as u64));
                let rows = rows(array);
                while let Some(page) = queue.next_page(rows.bytes).await {
                    let (column, page) = page.unwrap();
                    got.push((column, page.num_rows));
                }
                assert!(queue.bytes + rows.bytes <= max_bytes || queue.jobs.is_empty(), "over the bound");
                queue.push(column, encoder, rows);
            }
            while let Some(page) = queue.oldest_page().await {
                let (column, page) = page.unwrap();
                got.push((column, page.num_rows));
            }
            assert_eq!(got, expected, "{threads} threads, at most {max_bytes} bytes");
        }
    }

    /// A page that fails to encode comes back as its error, in its place; the pages around it
    /// are not lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_page_comes_back_as_its_error_in_its_place() {
        let ints = encoder(DataType::Int64);
        let mut queue = EncodingQueue::new(u64::MAX);
        queue.push(0, &ints, rows(Arc::new(Int64Array::from(vec![1, 2]))));
        // Strings given to an integer column's encoder: refused.
        queue.push(1, &ints, rows(Arc::new(StringArray::from(vec!["a"]))));
        queue.push(2, &ints, rows(Arc::new(Int64Array::from(vec![3]))));
        assert_eq!(queue.oldest_page().await.unwrap().unwrap().0, 0);
        let error = queue.oldest_page().await.unwrap().err().unwrap();
        assert!(error.to_string().contains("different type"), "{error}");
        assert_eq!(queue.oldest_page().await.unwrap().unwrap().0, 2);
        assert!(queue.oldest_page().await.is_none());
    }

    /// Writers (here, 64 handles, as a partitioned write keeps 64 files open) share one set of
    /// threads, one per core, and their pages run on those threads, not on the caller's.
    #[test]
    fn writers_share_one_thread_per_core() {
        let seen = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let (done, finished) = mpsc::channel();
        for _ in 0..64 {
            let threads = EncodingThreads::shared().unwrap();
            let (seen, done) = (Arc::clone(&seen), done.clone());
            threads.run(Box::new(move || {
                std::thread::sleep(std::time::Duration::from_millis(1));
                seen.lock().unwrap().insert(std::thread::current().id());
                done.send(()).unwrap();
            }));
        }
        (0..64).for_each(|_| finished.recv().unwrap());
        let seen = seen.lock().unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(!seen.is_empty() && seen.len() <= cores, "{} threads for {cores} cores", seen.len());
        assert!(!seen.contains(&std::thread::current().id()));
    }

    /// The queue hands back the oldest page before more rows would exceed its bound, and keeps
    /// pages still being encoded while they fit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_oldest_page_comes_back_before_the_bound_is_passed() {
        let strings = encoder(DataType::Utf8);
        let values: Vec<String> = (0..200_000).map(|v| format!("slow page value {v}")).collect();
        let mut queue = EncodingQueue::on(EncodingThreads::start(1).unwrap(), 100);
        queue.push(0, &strings, PageRows { arrays: vec![Arc::new(StringArray::from(values))], bytes: 60 });
        // 40 more bytes fit: nothing is handed back unless the page is already encoded.
        if let Some(page) = queue.next_page(40).await {
            assert_eq!(page.unwrap().1.num_rows, 200_000);
            return;
        }
        // 41 would not: the page comes back, encoded, whatever it takes.
        let (column, page) = queue.next_page(41).await.unwrap().unwrap();
        assert_eq!((column, page.num_rows), (0, 200_000));
        assert!(queue.oldest_page().await.is_none());
    }
}
