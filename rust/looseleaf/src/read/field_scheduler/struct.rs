//! Structs: children shredded into columns of their own, and a validity column when the struct
//! is nullable. A projection of some children reads only their columns.

use std::sync::Arc;

use arrow_schema::FieldRef;

use super::column::validity_job;
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::error::Result;
use crate::read::pages::FieldPages;

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
        let (validity_job, validity) = validity_job(self.validity.as_ref(), selection, priority, context);
        let mut jobs: Vec<_> = validity_job.into_iter().collect();
        let mut children = Vec::with_capacity(self.children.len());
        for child in &self.children {
            let (child_jobs, pages) = child.start(selection, priority, context)?;
            jobs.extend(child_jobs);
            children.push(pages);
        }
        Ok((jobs, FieldPages::Struct { field: self.field.clone(), validity, children }))
    }
}
