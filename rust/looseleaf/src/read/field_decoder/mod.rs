//! Field decoders: turning loaded pages into the Arrow arrays of one field, batch by batch.
//!
//! Each projected field has a [`FieldDecoder`], built by [`field_decoder`] from the
//! [`FieldPages`] its scheduler started. The [`DecodeBatchStream`](super::decode_stream) asks
//! every field decoder for the next `batch_size` rows; a field decoder waits until the pages
//! holding those rows are loaded and returns a [`DecodeTask`], a plain function doing the CPU
//! work. Batch size and page size are independent: a page is decoded in as many pieces as
//! batches need.
//!
//! Nested decoders compose like their schedulers: a struct's waits for its validity and its
//! children together; a list's takes the offsets of its rows from its pages, then asks the
//! decoder of those pages' items for exactly the items those rows hold.

mod fixed_size_list;
mod list;
mod page_queue;
mod primitive;
mod r#struct;

use arrow_array::{ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use futures::future::BoxFuture;

pub use fixed_size_list::FixedSizeListFieldDecoder;
pub use list::ListFieldDecoder;
pub use page_queue::{LoadedPage, PagePiece, PageQueue};
pub use primitive::PrimitiveFieldDecoder;
pub use r#struct::StructFieldDecoder;

use super::pages::{FieldPages, ReadContext};
use crate::error::{Error, Result};
use crate::filter::range_test::RangeTest;

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

    /// As [`next_batch`](Self::next_batch), the task decoding only the rows where `selected`
    /// (`num_rows` bits) is set. The default decodes every row and filters the array; a
    /// decoder whose pages can decode selected rows alone
    /// ([`PageDecoder::decode_selected`](crate::encodings::PageDecoder::decode_selected))
    /// does so.
    ///
    /// # Cancel safety
    /// As [`next_batch`](Self::next_batch).
    fn next_selected(&mut self, num_rows: u64, selected: BooleanBuffer) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(filter_task(self.next_batch(num_rows), selected))
    }
}

/// The task `wait` gives, its array filtered by `selected`.
async fn filter_task(wait: BoxFuture<'_, Result<DecodeTask>>, selected: BooleanBuffer) -> Result<DecodeTask> {
    let task = wait.await?;
    Ok(Box::new(move || {
        let array = task()?;
        Ok(arrow_select::filter::filter(&array, &BooleanArray::new(selected, None))?)
    }))
}

/// The decoder of a field whose pages arrive as `pages`.
pub fn field_decoder(pages: FieldPages, context: &ReadContext) -> Box<dyn FieldDecoder> {
    let queue = |receiver| PageQueue::new(receiver, context.clone());
    match pages {
        FieldPages::Values { data_type, pages } => {
            Box::new(PrimitiveFieldDecoder::new(data_type, queue(pages), context))
        }
        FieldPages::Struct { field, validity, children } => {
            let children = children.into_iter().map(|child| field_decoder(child, context)).collect();
            Box::new(StructFieldDecoder::new(field, validity.map(queue), children, context))
        }
        FieldPages::List { data_type, pages } => {
            Box::new(ListFieldDecoder::new(data_type, PageQueue::new(pages, context.clone()), context))
        }
        FieldPages::FixedSizeList { field, validity, items, dimension } => {
            let items = field_decoder(*items, context);
            Box::new(FixedSizeListFieldDecoder::new(field, validity.map(queue), items, dimension, context))
        }
    }
}

/// The decoder of a flat field whose pages arrive as `pages`, returning `test`'s result on its
/// values rather than the values (see [`PrimitiveFieldDecoder::with_range_test`]).
///
/// # Errors
/// [`Error::Internal`] for a nested field.
pub fn tested_field_decoder(
    pages: FieldPages,
    test: RangeTest,
    context: &ReadContext,
) -> Result<Box<dyn FieldDecoder>> {
    match pages {
        FieldPages::Values { data_type, pages } => Ok(Box::new(
            PrimitiveFieldDecoder::new(data_type, PageQueue::new(pages, context.clone()), context)
                .with_range_test(test),
        )),
        _ => Err(Error::internal("a range test of a nested field")),
    }
}
