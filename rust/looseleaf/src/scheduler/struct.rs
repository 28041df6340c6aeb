//! Structs: children shredded into columns of their own, and a validity column when the struct
//! is nullable. A projection of some children reads only their columns.

use std::sync::Arc;

use arrow_schema::FieldRef;
use tokio::sync::mpsc;

use super::column::{PendingPages, ValuesColumnJob};
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::decoder::{PageQueue, StructFieldDecoder};
use crate::error::Result;

/// Schedules a struct's validity column (if any) and its children, over the same rows.
pub struct StructFieldScheduler {
    field: FieldRef,
    validity: Option<Arc<ColumnPages>>,
    children: Vec<Arc<dyn FieldScheduler>>,
}

impl StructFieldScheduler {
    /// The scheduler of `field`, with its validity column and its children's schedulers.
    pub fn new(field: FieldRef, validity: Option<Arc<ColumnPages>>, children: Vec<Arc<dyn FieldScheduler>>) -> Self {
        Self { field, validity, children }
    }
}

impl FieldScheduler for StructFieldScheduler {
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
        let mut children = Vec::with_capacity(self.children.len());
        for child in &self.children {
            let (child_jobs, decoder) = child.start(selection, priority, context)?;
            jobs.extend(child_jobs);
            children.push(decoder);
        }
        let decoder = StructFieldDecoder::new(self.field.clone(), validity, children, context.clone());
        Ok((jobs, Box::new(decoder)))
    }
}
