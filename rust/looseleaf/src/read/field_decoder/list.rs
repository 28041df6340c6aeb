//! The decoder of lists, large lists and maps.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use futures::future::BoxFuture;

use super::page_queue::LoadedPage;
use super::{DecodeTask, FieldDecoder, PageQueue, field_decoder};
use crate::encodings::logical::list::{list_array, offsets_from_block};
use crate::error::{Result, ensure};
use crate::read::pages::{ListItems, ListPage, ReadContext};

impl LoadedPage for ListPage {
    fn num_rows(&self) -> u64 {
        self.offsets.num_rows()
    }
}

/// Decodes a list field from its pages of offsets and their items.
pub struct ListFieldDecoder {
    data_type: DataType,
    pages: PageQueue<ListPage>,
    /// The decoder of the items being read, and the pages' [`ListItems`] it was built from.
    /// Pages that share their items (a run of whole pages) are consecutive, so one decoder at a
    /// time serves them all; the next page with other items replaces it.
    items: Option<(Arc<ListItems>, Box<dyn FieldDecoder>)>,
    context: ReadContext,
}

impl ListFieldDecoder {
    /// A decoder of `data_type` lists from `pages`.
    pub fn new(data_type: DataType, pages: PageQueue<ListPage>, context: &ReadContext) -> Self {
        Self { data_type, pages, items: None, context: context.clone() }
    }

    /// The decoder of `items`, built on first use.
    fn items_decoder(&mut self, items: &Arc<ListItems>) -> Result<&mut Box<dyn FieldDecoder>> {
        let current = self.items.as_ref().is_some_and(|(source, _)| Arc::ptr_eq(source, items));
        if !current {
            let decoder = field_decoder(items.take()?, &self.context);
            self.items = Some((items.clone(), decoder));
        }
        match &mut self.items {
            Some((_, decoder)) => Ok(decoder),
            None => Err(crate::Error::internal("a list decoder lost its items")),
        }
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
                let items = self.items_decoder(&piece.page.items)?.next_batch(count).await?;
                let rebased: Vec<u64> = offsets.iter().map(|o| o - first).collect();
                parts.push((rebased, nulls, items));
            }
            let data_type = self.data_type.clone();
            let location = self.context.location.clone();
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
fn concat(arrays: Vec<ArrayRef>, data_type: &DataType) -> Result<ArrayRef> {
    if arrays.len() <= 1 {
        return Ok(arrays.into_iter().next().unwrap_or_else(|| arrow_array::new_empty_array(data_type)));
    }
    let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(|a| a.as_ref()).collect();
    let out = arrow_select::concat::concat(&refs)?;
    ensure!(out.data_type() == data_type, internal, "pieces of a batch decoded to different types");
    Ok(out)
}
