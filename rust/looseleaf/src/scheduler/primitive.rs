//! The field scheduler of flat fields: one column, one job, one decoder.

use std::sync::Arc;

use arrow_schema::FieldRef;
use tokio::sync::mpsc;

use super::column::TopLevelColumnJob;
use super::{ColumnPages, FieldScheduler, ReadContext, RowSelection, StartedField};
use crate::decoder::PrimitiveFieldDecoder;
use crate::error::Result;

/// Schedules a flat field stored in one top-level column.
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
    fn start(&self, selection: &Arc<RowSelection>, context: &ReadContext) -> Result<StartedField> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let job = TopLevelColumnJob::new(self.column.clone(), selection, sender);
        let decoder = PrimitiveFieldDecoder::new(self.field.data_type().clone(), receiver, context.clone());
        Ok((vec![Box::new(job)], Box::new(decoder)))
    }
}
