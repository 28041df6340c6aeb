//! Decoding: turning loaded pages into Arrow arrays, batch by batch.
//!
//! Each projected field has a [`FieldDecoder`], fed with scheduled pages by the field's column
//! jobs (see [`crate::scheduler`]). The [`DecodeBatchStream`] asks every field decoder for the
//! next `batch_size` rows; a field decoder waits until the pages holding those rows are loaded
//! and returns a [`DecodeTask`], a plain function doing the CPU work. The stream runs the tasks
//! of consecutive batches in parallel and yields their batches in order. Batch size and page
//! size are independent: a page is decoded in as many pieces as batches need.
//!
//! Nested decoders compose like their schedulers: a struct's waits for its validity and its
//! children together; a list's takes the offsets of its rows from its pages, then asks each
//! page's items decoder for exactly the items those rows hold.

mod fixed_size_list;
mod list;
mod metrics;
mod page_queue;
mod primitive;
mod stream;
mod r#struct;

use arrow_array::ArrayRef;
use futures::future::BoxFuture;

pub use fixed_size_list::FixedSizeListFieldDecoder;
pub use list::{ListFieldDecoder, ListPage, SharedItems};
pub use metrics::{ReadMetrics, ReadTimings};
pub use page_queue::{LoadedPage, PagePiece, PageQueue};
pub use primitive::PrimitiveFieldDecoder;
pub use stream::{BatchDecodeTask, DecodeBatchStream};
pub use r#struct::StructFieldDecoder;

use crate::error::Result;

/// The CPU part of decoding one field of one batch.
pub type DecodeTask = Box<dyn FnOnce() -> Result<ArrayRef> + Send>;

/// Decodes one field, batch after batch.
pub trait FieldDecoder: Send {
    /// Waits until the next `num_rows` rows of the field are loaded, then returns the task that
    /// decodes them.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future may lose rows; the read is then unusable.
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>>;
}
