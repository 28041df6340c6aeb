//! [`PageQueue`]: the scheduled pages of one column on the decoding side.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Poll;

use crate::encodings::{DataBlock, PageDecoder};
use crate::error::{Result, ensure};
use crate::io::ReservationHolder;
use crate::read::pages::{PageReceiver, ReadContext};

/// What a scheduled page loads into: it must say how many rows it holds.
pub trait LoadedPage: Send + Sync + 'static {
    /// Rows held.
    fn num_rows(&self) -> u64;
}

impl LoadedPage for Box<dyn PageDecoder> {
    fn num_rows(&self) -> u64 {
        PageDecoder::num_rows(self.as_ref())
    }
}

/// Counts a decoder in [`ReadContext::starving`] while it lives.
struct Starving<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Starving<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Starving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A run of rows of one loaded page.
pub struct PagePiece<T = Box<dyn PageDecoder>> {
    /// The loaded page.
    pub page: Arc<T>,
    /// Rows of the page's selection to skip.
    pub skip: u64,
    /// Rows to take.
    pub len: u64,
    /// Keeps the page's reservation of the I/O buffer until the piece is decoded.
    pub holder: ReservationHolder,
}

impl PagePiece {
    /// Decodes the piece.
    pub fn decode(&self) -> Result<DataBlock> {
        self.page.decode(self.skip, self.len)
    }

    /// Decodes the piece with 16-byte integers as 8-byte ones (see [`PageDecoder::decode_64`]).
    pub fn decode_64(&self) -> Result<DataBlock> {
        self.page.decode_64(self.skip, self.len)
    }
}

enum PageState<T> {
    Loading(futures::future::BoxFuture<'static, Result<T>>),
    Loaded(Arc<T>),
    /// Between the two, while its load is awaited.
    Waiting,
}

struct QueuedPage<T> {
    num_rows: u64,
    consumed: u64,
    state: PageState<T>,
    urgency: crate::io::Urgency,
    holder: ReservationHolder,
}

/// Receives the scheduled pages of one column and hands out their rows in order.
///
/// A page's load is awaited only when a batch needs its rows; the page's
/// [`Urgency`](crate::io::Urgency) is set at that moment, so nothing holds its reads back any
/// longer. Its bytes count in the I/O buffer until the page leaves the queue and the last batch
/// cut from it is decoded (each [`PagePiece`] keeps the page's reservation).
pub struct PageQueue<T: LoadedPage = Box<dyn PageDecoder>> {
    receiver: PageReceiver<T>,
    queue: VecDeque<QueuedPage<T>>,
    /// Rows received and not yet handed out.
    queued_rows: u64,
    context: ReadContext,
}

impl<T: LoadedPage> PageQueue<T> {
    /// A queue over the pages arriving on `receiver`.
    pub fn new(receiver: PageReceiver<T>, context: ReadContext) -> Self {
        Self { receiver, queue: VecDeque::new(), queued_rows: 0, context }
    }

    /// Waits until the next `num_rows` rows are loaded and returns them as pieces of pages, in
    /// order.
    ///
    /// # Cancel safety
    /// Not cancel safe: a page whose load was being awaited is lost if the future is dropped.
    pub async fn next_rows(&mut self, num_rows: u64) -> Result<Vec<PagePiece<T>>> {
        while self.queued_rows < num_rows {
            // A page already sent is taken by polling once, never with `try_recv`: tokio's
            // `try_recv` parks the thread while a send is half done, and on a thread running
            // `Runtime::block_on` (a test, the Python bindings) that park swallows a wake-up
            // meant for `block_on`; the read then waited forever for pages that had arrived.
            let page = match std::future::poll_fn(|cx| Poll::Ready(self.receiver.poll_recv(cx))).await {
                Poll::Ready(page) => page,
                Poll::Pending => {
                    // Counted as starving while it waits, so that the scheduling loop does not
                    // wait for room in the I/O queue meanwhile (see `EncodingsIo::wait_for_room`).
                    let _starving = Starving::new(&self.context.starving);
                    self.receiver.recv().await
                }
            };
            match page {
                Some(page) => {
                    self.queued_rows += page.num_rows;
                    self.queue.push_back(QueuedPage {
                        num_rows: page.num_rows,
                        consumed: 0,
                        state: PageState::Loading(page.load),
                        urgency: page.urgency,
                        holder: page.holder,
                    });
                }
                None => return Err(self.context.pages_ended_error("a column")),
            }
        }
        // Await every page the batch needs at once: each is taken out of the I/O budget as
        // soon as it arrives, whatever the order in which they complete.
        let mut rows = 0;
        let mut loads = Vec::new();
        for (index, page) in self.queue.iter_mut().enumerate() {
            if rows >= num_rows {
                break;
            }
            rows += page.num_rows - page.consumed;
            if let PageState::Loading(_) = page.state {
                let PageState::Loading(load) = std::mem::replace(&mut page.state, PageState::Waiting) else { continue };
                page.urgency.set();
                loads.push(async move { load.await.map(|loaded| (index, loaded)) });
            }
        }
        for (index, loaded) in futures::future::try_join_all(loads).await? {
            let page = &mut self.queue[index];
            ensure!(
                loaded.num_rows() == page.num_rows,
                corrupt,
                "a page of {} decoded {} rows where {} were scheduled",
                self.context.location,
                loaded.num_rows(),
                page.num_rows
            );
            page.state = PageState::Loaded(Arc::new(loaded));
        }

        let mut pieces = Vec::new();
        let mut wanted = num_rows;
        while wanted > 0 {
            let Some(page) = self.queue.front_mut() else { break };
            let PageState::Loaded(loaded) = &page.state else {
                return Err(crate::Error::internal("a page was handed out before it was loaded"));
            };
            let len = wanted.min(page.num_rows - page.consumed);
            if len > 0 {
                pieces.push(PagePiece { page: loaded.clone(), skip: page.consumed, len, holder: page.holder.clone() });
            }
            page.consumed += len;
            wanted -= len;
            if page.consumed == page.num_rows {
                self.queue.pop_front();
            }
        }
        self.queued_rows -= num_rows;
        Ok(pieces)
    }
}
