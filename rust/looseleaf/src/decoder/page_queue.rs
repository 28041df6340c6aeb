//! [`PageQueue`]: the scheduled pages of one column on the decoding side.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::encodings::{DataBlock, PageDecoder, PageLoad};
use crate::error::{Result, ensure};
use crate::scheduler::{ReadContext, ScheduledPage};

/// A run of rows of one loaded page.
#[derive(Clone)]
pub struct PagePiece {
    /// The page's decoder.
    pub decoder: Arc<dyn PageDecoder>,
    /// Rows of the page's selection to skip.
    pub skip: u64,
    /// Rows to decode.
    pub len: u64,
}

impl PagePiece {
    /// Decodes the piece.
    pub fn decode(&self) -> Result<DataBlock> {
        self.decoder.decode(self.skip, self.len)
    }
}

enum PageState {
    Loading(PageLoad),
    Loaded(Arc<dyn PageDecoder>),
    /// Between the two, while its load is awaited.
    Waiting,
}

struct QueuedPage {
    num_rows: u64,
    consumed: u64,
    state: PageState,
}

/// Receives the scheduled pages of one column and hands out their rows in order.
///
/// A page's load is awaited only when a batch needs its rows, so its bytes stay in the I/O
/// budget (and count for backpressure) until then.
pub struct PageQueue {
    receiver: mpsc::UnboundedReceiver<ScheduledPage>,
    queue: VecDeque<QueuedPage>,
    /// Rows received and not yet handed out.
    queued_rows: u64,
    context: ReadContext,
}

impl PageQueue {
    /// A queue over the pages arriving on `receiver`.
    pub fn new(receiver: mpsc::UnboundedReceiver<ScheduledPage>, context: ReadContext) -> Self {
        Self { receiver, queue: VecDeque::new(), queued_rows: 0, context }
    }

    /// Waits until the next `num_rows` rows are loaded and returns them as pieces of pages, in
    /// order.
    ///
    /// # Cancel safety
    /// Not cancel safe: a page whose load was being awaited is lost if the future is dropped.
    pub async fn next_rows(&mut self, num_rows: u64) -> Result<Vec<PagePiece>> {
        while self.queued_rows < num_rows {
            match self.receiver.recv().await {
                Some(page) => {
                    self.queued_rows += page.num_rows;
                    self.queue.push_back(QueuedPage {
                        num_rows: page.num_rows,
                        consumed: 0,
                        state: PageState::Loading(page.load),
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
                loads.push(async move { load.await.map(|decoder| (index, decoder)) });
            }
        }
        for (index, decoder) in futures::future::try_join_all(loads).await? {
            let page = &mut self.queue[index];
            ensure!(
                decoder.num_rows() == page.num_rows,
                corrupt,
                "a page of {} decoded {} rows where {} were scheduled",
                self.context.location,
                decoder.num_rows(),
                page.num_rows
            );
            page.state = PageState::Loaded(Arc::from(decoder));
        }

        let mut pieces = Vec::new();
        let mut wanted = num_rows;
        while wanted > 0 {
            let Some(page) = self.queue.front_mut() else { break };
            let PageState::Loaded(decoder) = &page.state else {
                return Err(crate::Error::Internal("a page was handed out before it was loaded".into()));
            };
            let len = wanted.min(page.num_rows - page.consumed);
            if len > 0 {
                pieces.push(PagePiece { decoder: decoder.clone(), skip: page.consumed, len });
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
