//! Fixed-size lists of types other than fixed-width values: a validity column when the list is
//! nullable, and the item field over `rows × dimension` items. The items of rows `a..b` are
//! items `a × dimension .. b × dimension`, known without reading anything: no indirect I/O.
//! (Fixed-size lists of fixed-width values are one column of values: see
//! [`PrimitiveFieldScheduler`](super::PrimitiveFieldScheduler).)

use std::sync::Arc;

use arrow_schema::FieldRef;
use tokio::sync::mpsc;

use super::column::{PendingPages, ValuesColumnJob};
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::decoder::{FixedSizeListFieldDecoder, PageQueue};
use crate::error::Result;

/// Schedules a fixed-size list's validity (if any) and its items.
pub struct FixedSizeListFieldScheduler {
    field: FieldRef,
    validity: Option<Arc<ColumnPages>>,
    items: Arc<dyn FieldScheduler>,
    dimension: u64,
}

impl FixedSizeListFieldScheduler {
    /// The scheduler of `field`, with its validity column and its items' scheduler.
    pub fn new(
        field: FieldRef,
        validity: Option<Arc<ColumnPages>>,
        items: Arc<dyn FieldScheduler>,
        dimension: u64,
    ) -> Self {
        Self { field, validity, items, dimension }
    }
}

impl FieldScheduler for FixedSizeListFieldScheduler {
    fn start(
        &self,
        selection: &Arc<RowSelection>,
        priority: &Arc<RowPriority>,
        context: &ReadContext,
    ) -> Result<StartedField> {
        let mut jobs: Vec<Box<dyn super::ColumnJob>> = Vec::new();
        let validity = match &self.validity {
            Some(column) => {
                let (sender, receiver) = mpsc::unbounded_channel();
                let pages = PendingPages::new(column.clone(), selection, priority.clone());
                jobs.push(Box::new(ValuesColumnJob::new(pages, sender)));
                Some(PageQueue::new(receiver, context.clone()))
            }
            None => None,
        };
        let d = self.dimension;
        let items = Arc::new(selection.scaled(d));
        let item_priority = Arc::new(RowPriority::Fixed { dimension: d, parent: priority.clone() });
        let (item_jobs, items_decoder) = self.items.start(&items, &item_priority, context)?;
        jobs.extend(item_jobs);
        let decoder = FixedSizeListFieldDecoder::new(self.field.clone(), validity, items_decoder, d, context.clone());
        Ok((jobs, Box::new(decoder)))
    }
}
