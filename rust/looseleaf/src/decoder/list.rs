//! The decoder of lists, large lists and maps.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use futures::future::BoxFuture;
use futures::lock::Mutex;
use tokio::sync::mpsc;

use super::page_queue::LoadedPage;
use super::{DecodeTask, FieldDecoder, PageQueue};
use crate::encodings::PageDecoder;
use crate::encodings::logical::list::{list_array, offsets_from_block};
use crate::error::{Result, ensure};
use crate::scheduler::{ReadContext, ScheduledPage};

/// The decoder of the items of one or more consecutive pages of lists, shared by those pages.
pub type SharedItems = Arc<Mutex<Box<dyn FieldDecoder>>>;

/// A loaded page of lists: the offsets (and validity) of its selected lists, and the decoder
/// their items come from — holding exactly the items of the selected lists of this page, or of
/// a run of consecutive whole pages that share it (each taking its own items in turn, as pages
/// are decoded in order).
pub struct ListPage {
    offsets: Box<dyn PageDecoder>,
    /// Taken by one batch at a time, in row order.
    items: SharedItems,
}

impl ListPage {
    /// A page of lists from its offsets and its items' decoder.
    pub fn new(offsets: Box<dyn PageDecoder>, items: SharedItems) -> Self {
        Self { offsets, items }
    }
}

impl LoadedPage for ListPage {
    fn num_rows(&self) -> u64 {
        self.offsets.num_rows()
    }
}

/// Decodes a list field from its pages of offsets and their items.
pub struct ListFieldDecoder {
    data_type: DataType,
    pages: PageQueue<ListPage>,
    location: Arc<str>,
}

impl ListFieldDecoder {
    /// A decoder of `data_type` lists from the pages arriving on `receiver`.
    pub fn new(
        data_type: DataType,
        receiver: mpsc::UnboundedReceiver<ScheduledPage<ListPage>>,
        context: ReadContext,
    ) -> Self {
        let location = context.location.clone();
        Self { data_type, pages: PageQueue::new(receiver, context), location }
    }
}

impl FieldDecoder for ListFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let pieces = self.pages.next_rows(num_rows).await?;
            let mut parts = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let (offsets, nulls) = offsets_from_block(piece.page.offsets.decode(piece.skip, piece.len)?)?;
                let first = offsets.first().copied().unwrap_or(0);
                let count = offsets.last().copied().unwrap_or(0) - first;
                // The items of this run of lists: the next `count` of the page's items.
                let items = piece.page.items.lock().await.next_batch(count).await?;
                let rebased: Vec<u64> = offsets.iter().map(|o| o - first).collect();
                parts.push((rebased, nulls, items));
            }
            let data_type = self.data_type.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                let decode = || -> Result<ArrayRef> {
                    let arrays = parts
                        .into_iter()
                        .map(|(offsets, nulls, items)| list_array(&data_type, offsets, nulls, items()?))
                        .collect::<Result<Vec<_>>>()?;
                    concat(arrays, &data_type)
                };
                decode().map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}

/// Concatenates the arrays of one batch's pieces (none for an empty batch).
pub(crate) fn concat(arrays: Vec<ArrayRef>, data_type: &DataType) -> Result<ArrayRef> {
    match arrays.len() {
        0 => Ok(arrow_array::new_empty_array(data_type)),
        1 => Ok(arrays.into_iter().next().unwrap_or_else(|| arrow_array::new_empty_array(data_type))),
        _ => {
            let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(|a| a.as_ref()).collect();
            let out = arrow_select::concat::concat(&refs)?;
            ensure!(out.data_type() == data_type, internal, "pieces of a batch decoded to different types");
            Ok(out)
        }
    }
}
