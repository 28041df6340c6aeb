//! The field scheduler of fields stored in one column of values: flat types and fixed-size
//! lists of fixed-width values.

use std::sync::Arc;

use arrow_schema::FieldRef;

use super::column::{PendingPages, ValuesColumnJob};
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::error::Result;
use crate::read::pages::{FieldPages, page_channel};

/// Schedules a field stored in one column of values.
pub struct PrimitiveFieldScheduler {
    field: FieldRef,
    column: Arc<ColumnPages>,
}

impl PrimitiveFieldScheduler {
    /// The scheduler of `field`, stored in `column`.
    pub fn new(field: FieldRef, column: Arc<ColumnPages>) -> Self {
        Self { field, column }
    }
}

impl FieldScheduler for PrimitiveFieldScheduler {
    fn start(
        &self,
        selection: &Arc<RowSelection>,
        priority: &Arc<RowPriority>,
        context: &ReadContext,
    ) -> Result<StartedField> {
        let (sender, receiver) = page_channel();
        let pages = PendingPages::new(self.column.clone(), selection, priority.clone(), context).in_parts(context);
        let job = ValuesColumnJob::new(pages, sender);
        Ok((vec![Box::new(job)], FieldPages::Values { data_type: self.field.data_type().clone(), pages: receiver }))
    }
}
