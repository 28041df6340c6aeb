//! Field schedulers: working out, from metadata alone, which pages of which columns a read of a
//! field needs, in top-level row order.
//!
//! Each projected field has a [`FieldScheduler`], built by [`field_scheduler`] from the field's
//! column tree and its columns' metadata. Starting a read, it returns the
//! [`ColumnJob`]s that walk its columns' pages (the scheduling
//! loop runs them) and the [`FieldPages`] those pages will arrive on (the decoding side builds the
//! field's decoder from them). Each request carries the lowest top-level row it serves as its
//! priority ([`RowPriority`] maps rows of nested columns to top-level rows).
//!
//! Nested fields compose: a struct's scheduler starts its children's; a list's job schedules its
//! offsets pages and, for each, the items they point at — at once from the page metadata when
//! the whole page is read, or through *indirect I/O* (a task that decodes the offsets and then
//! schedules the items) when only some of its lists are (see [`list`]).

mod column;
mod fixed_size_list;
pub mod list;
mod primitive;
mod priority;
mod r#struct;

use std::collections::HashMap;
use std::sync::Arc;

pub use column::{ColumnPages, MIN_PAGE_PART_BYTES, PART_ROWS, PendingPages, ValuesColumnJob, validity_job};
pub use fixed_size_list::FixedSizeListFieldScheduler;
pub use list::ListFieldScheduler;
pub use primitive::PrimitiveFieldScheduler;
pub use priority::RowPriority;
pub use r#struct::StructFieldScheduler;

use super::pages::{FieldPages, ReadContext};
use super::scheduling_loop::ColumnJob;
use crate::error::{Error, Result, ensure};
use crate::format::schema::{FieldColumns, Layout};
use crate::selection::RowSelection;

/// A started field: the jobs that schedule its pages and the pages they will send.
pub type StartedField = (Vec<Box<dyn ColumnJob>>, FieldPages);

/// Plans one output field: which pages of which columns, in what order.
pub trait FieldScheduler: Send + Sync {
    /// Starts reading the rows of `selection` (top-level rows, or items of the parent list,
    /// mapped to top-level rows by `priority`): returns the jobs that schedule this field's
    /// pages and the pages they will send.
    fn start(
        &self,
        selection: &Arc<RowSelection>,
        priority: &Arc<RowPriority>,
        context: &ReadContext,
    ) -> Result<StartedField>;
}

/// Builds the scheduler of the field of `tree`, which holds `num_rows` rows (top-level rows,
/// or items of its parent), from the metadata of its columns (which must all be in `columns`).
///
/// # Errors
/// [`Error::Corrupt`] if a column's row count does not match what its parent says.
pub fn field_scheduler(
    tree: &FieldColumns,
    columns: &HashMap<u32, Arc<ColumnPages>>,
    num_rows: u64,
) -> Result<Arc<dyn FieldScheduler>> {
    let field = &tree.field;
    let column = |c: Option<u32>| -> Result<Option<Arc<ColumnPages>>> {
        let Some(c) = c else { return Ok(None) };
        let pages = columns.get(&c).ok_or_else(|| Error::internal(format!("column {c} was not loaded")))?;
        ensure!(
            pages.num_rows() == num_rows,
            corrupt,
            "column {c} (field {:?}) holds {} rows where {num_rows} were expected",
            field.name(),
            pages.num_rows()
        );
        Ok(Some(pages.clone()))
    };
    let own = column(tree.column)?;
    let missing = || Error::internal(format!("field {:?} has no column", field.name()));
    Ok(match Layout::of(field.data_type())? {
        Layout::Leaf => Arc::new(PrimitiveFieldScheduler::new(field.clone(), own.ok_or_else(missing)?)),
        Layout::Struct => {
            let children =
                tree.children.iter().map(|child| field_scheduler(child, columns, num_rows)).collect::<Result<_>>()?;
            Arc::new(StructFieldScheduler::new(field.clone(), own, children))
        }
        Layout::List => {
            let offsets = own.ok_or_else(missing)?;
            let [item] = tree.children.as_slice() else { return Err(missing()) };
            let items = field_scheduler(item, columns, offsets.num_items())?;
            let item_bytes = item.columns().iter().filter_map(|c| columns.get(c)).map(|c| c.num_bytes()).sum();
            Arc::new(ListFieldScheduler::new(field.clone(), offsets, items, item_bytes))
        }
        Layout::FixedSizeList => {
            let [item] = tree.children.as_slice() else { return Err(missing()) };
            let dimension = match field.data_type() {
                arrow_schema::DataType::FixedSizeList(_, n) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            let num_items = num_rows
                .checked_mul(dimension)
                .ok_or_else(|| Error::corrupt(format!("field {:?} holds too many items", field.name())))?;
            let items = field_scheduler(item, columns, num_items)?;
            Arc::new(FixedSizeListFieldScheduler::new(field.clone(), own, items, dimension))
        }
    })
}
