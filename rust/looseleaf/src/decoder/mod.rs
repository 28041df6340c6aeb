//! Decoding: turning loaded pages into Arrow arrays, batch by batch.
//!
//! Each projected field has a [`FieldDecoder`], fed with scheduled pages by the field's column
//! jobs (see [`crate::scheduler`]). The [`DecodeBatchStream`] asks every field decoder for the
//! next `batch_size` rows; a field decoder waits until the pages holding those rows are loaded
//! and returns a [`DecodeTask`], a plain function doing the CPU work. The stream runs the tasks
//! of consecutive batches in parallel and yields their batches in order. Batch size and page
//! size are independent: a page is decoded in as many pieces as batches need.

mod page_queue;
mod primitive;
mod stream;

use arrow_array::ArrayRef;
use futures::future::BoxFuture;

pub use page_queue::{PagePiece, PageQueue};
pub use primitive::PrimitiveFieldDecoder;
pub use stream::{BatchDecodeTask, DecodeBatchStream};

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
