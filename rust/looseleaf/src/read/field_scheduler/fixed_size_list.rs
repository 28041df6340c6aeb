//! Fixed-size lists of types other than fixed-width values: a validity column when the list is
//! nullable, and the item field over `rows × dimension` items. The items of rows `a..b` are
//! items `a × dimension .. b × dimension`, known without reading anything: no indirect I/O.
//! (Fixed-size lists of fixed-width values are one column of values: see
//! [`PrimitiveFieldScheduler`](super::PrimitiveFieldScheduler).)

use std::sync::Arc;

use arrow_schema::FieldRef;

use super::column::validity_job;
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::error::Result;
use crate::read::pages::FieldPages;

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
        let (validity_job, validity) = validity_job(self.validity.as_ref(), selection, priority, context);
        let mut jobs: Vec<_> = validity_job.into_iter().collect();
        let dimension = self.dimension;
        let items = Arc::new(selection.scaled(dimension));
        let item_priority = Arc::new(RowPriority::Fixed { dimension, parent: priority.clone() });
        let (item_jobs, items) = self.items.start(&items, &item_priority, context)?;
        jobs.extend(item_jobs);
        let pages =
            FieldPages::FixedSizeList { field: self.field.clone(), validity, items: Box::new(items), dimension };
        Ok((jobs, pages))
    }
}
