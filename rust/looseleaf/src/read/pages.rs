//! The seam between the scheduling loop and the decode loop: what travels from one to the other.
//!
//! The scheduling side ([`field_scheduler`](super::field_scheduler)) plans pages and sends each
//! one, as a [`ScheduledPage`] whose load has not been awaited yet, down a channel per column.
//! The decoding side ([`field_decoder`](super::field_decoder)) receives them and awaits a
//! page's load only when a batch needs its rows. Neither side knows the other's types: a started
//! field hands over [`FieldPages`], the receiving ends of its channels arranged as the field is,
//! and the decoding side builds its decoders from them. The items of lists go the same way,
//! inside each [`ListPage`].
//!
//! [`ReadContext`] is what both sides of one read share: the file's name for errors, the first
//! scheduling error, and the read's timings.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_schema::{DataType, FieldRef};
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::metrics::ReadMetrics;
use crate::encodings::PageDecoder;
use crate::error::{Error, Result};
use crate::io::{PageIo, ReservationHolder, Urgency};
use crate::trace::Trace;

/// What every scheduler and decoder of one read shares.
#[derive(Debug, Clone)]
pub struct ReadContext {
    /// The file, for error messages.
    pub location: Arc<str>,
    /// Where the first error of the scheduling loop is kept, for decoders whose pages stopped
    /// arriving because of it.
    pub scheduling_error: Arc<OnceLock<Error>>,
    /// Timings of the read's loops.
    pub metrics: Arc<ReadMetrics>,
    /// Whether page buffers read whole are verified against their checksums.
    pub verify_checksums: bool,
    /// How many decoders wait for a page the scheduling loop has not sent yet: while one
    /// does, the loop does not wait for room in the I/O queue.
    pub starving: Arc<AtomicUsize>,
    /// Where the read's loops record their events, if it is traced (see [`Trace`]).
    pub trace: Option<Trace>,
    /// The bytes of a page above which a column of values loads it a part at a time, where
    /// its encoding allows (`None`: pages are loaded whole). See `field_scheduler::column`.
    pub page_part_bytes: Option<u64>,
}

impl ReadContext {
    /// A context for reading `location`.
    pub fn new(location: impl Into<Arc<str>>, verify_checksums: bool) -> Self {
        Self {
            location: location.into(),
            scheduling_error: Arc::new(OnceLock::new()),
            metrics: Arc::default(),
            verify_checksums,
            starving: Arc::default(),
            trace: None,
            page_part_bytes: None,
        }
    }

    /// The error to report when a decoder's pages stop before the rows it was promised.
    pub fn pages_ended_error(&self, what: &str) -> Error {
        match self.scheduling_error.get() {
            Some(e) => e.clone(),
            None => Error::internal(format!("{what} of {} ended before the rows it was asked for", self.location)),
        }
    }
}

/// A scheduled page on its way to a decoder: `T` is what the page's load resolves to (a
/// [`PageDecoder`], or a [`ListPage`] for pages of lists).
pub struct ScheduledPage<T = Box<dyn PageDecoder>> {
    /// Number of selected rows in the page.
    pub num_rows: u64,
    /// The future of the loaded page. Not polled until a batch needs the page's rows.
    pub load: BoxFuture<'static, Result<T>>,
    /// Set by the decoder when it waits for the page.
    pub urgency: Urgency,
    /// The page's reservation of the I/O buffer: the decoder keeps it, and so does each piece
    /// of the page a batch decodes, so that it ends when the page is no longer used.
    pub holder: ReservationHolder,
}

impl<T> ScheduledPage<T> {
    /// Submits the page's reads (everything its page scheduler asked of `io`) and returns the
    /// page, loaded by `load`, for its decoder.
    pub fn submit(num_rows: u64, load: BoxFuture<'static, Result<T>>, io: PageIo) -> Self {
        let urgency = io.urgency().clone();
        let holder = io.holder().clone();
        io.finish();
        Self { num_rows, load, urgency, holder }
    }
}

/// The sending end of a column's pages (unbounded: the scheduling loop never waits; the I/O
/// buffer, not the channel, bounds the bytes held).
pub type PageSender<T = Box<dyn PageDecoder>> = mpsc::UnboundedSender<ScheduledPage<T>>;

/// The receiving end of a column's pages.
pub type PageReceiver<T = Box<dyn PageDecoder>> = mpsc::UnboundedReceiver<ScheduledPage<T>>;

/// A channel for the pages of one column.
pub fn page_channel<T>() -> (PageSender<T>, PageReceiver<T>) {
    mpsc::unbounded_channel()
}

/// The pages a started field will deliver, arranged as the field is: what the decoding side
/// builds the field's decoder from.
pub enum FieldPages {
    /// A field stored in one column of values.
    Values {
        /// The type the values are decoded to.
        data_type: DataType,
        /// The column's pages.
        pages: PageReceiver,
    },
    /// A struct: its validity column (if it has one) and its children.
    Struct {
        /// The struct field (narrowed to the children read).
        field: FieldRef,
        /// The validity column's pages.
        validity: Option<PageReceiver>,
        /// The children, in the field's order.
        children: Vec<FieldPages>,
    },
    /// A list, large list or map: pages of offsets, each with its items.
    List {
        /// The list type.
        data_type: DataType,
        /// The offsets column's pages.
        pages: PageReceiver<ListPage>,
    },
    /// A fixed-size list stored as a validity column and an item field.
    FixedSizeList {
        /// The list field.
        field: FieldRef,
        /// The validity column's pages.
        validity: Option<PageReceiver>,
        /// The items, `dimension` per row.
        items: Box<FieldPages>,
        /// Items per row.
        dimension: u64,
    },
}

/// A loaded page of lists: the offsets (and validity) of its selected lists, and the items
/// they hold. The items are exactly those of the selected lists of this page, or of a run of
/// consecutive whole pages that share one [`ListItems`] (each page taking its own items in
/// turn, as pages are decoded in order).
pub struct ListPage {
    /// The offsets and validity of the page's selected lists.
    pub offsets: Box<dyn PageDecoder>,
    /// The items of the page (or of its run of pages).
    pub items: Arc<ListItems>,
}

/// The items of one or more consecutive pages of lists, handed over once.
pub struct ListItems(Mutex<Option<FieldPages>>);

impl ListItems {
    /// Items that will arrive as `pages`.
    pub fn new(pages: FieldPages) -> Arc<Self> {
        Arc::new(Self(Mutex::new(Some(pages))))
    }

    /// Takes the items' pages, for the decoder of the first page that uses them.
    ///
    /// # Errors
    /// [`Error::Internal`] if they were taken already.
    pub fn take(&self) -> Result<FieldPages> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| Error::internal("the items of a page of lists were taken twice"))
    }
}
