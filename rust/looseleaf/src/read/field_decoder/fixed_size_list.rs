//! The decoder of fixed-size lists stored as a validity column and an item field.

use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeListArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, FieldRef};
use futures::future::BoxFuture;

use super::r#struct::{implied_nulls, next_validity, validity_from_pieces};
use super::{DecodeTask, FieldDecoder, PageQueue};
use crate::error::{Result, bail};
use crate::read::pages::ReadContext;

/// Decodes a fixed-size list from its validity column (if any) and its items' decoder.
pub struct FixedSizeListFieldDecoder {
    field: FieldRef,
    validity: Option<PageQueue>,
    items: Box<dyn FieldDecoder>,
    dimension: u64,
    location: Arc<str>,
}

impl FixedSizeListFieldDecoder {
    /// A decoder of `field` (a fixed-size list of `dimension` items).
    pub fn new(
        field: FieldRef,
        validity: Option<PageQueue>,
        items: Box<dyn FieldDecoder>,
        dimension: u64,
        context: &ReadContext,
    ) -> Self {
        Self { field, validity, items, dimension, location: context.location.clone() }
    }
}

/// The nulls of a fixed-size list stored without a validity column (see [`implied_nulls`]): a
/// row is null where one of its items is, if they are not nullable.
fn implied_row_nulls(item: &FieldRef, values: &ArrayRef, size: i32, num_rows: usize) -> Option<NullBuffer> {
    let d = usize::try_from(size).ok().filter(|d| *d > 0)?;
    let item_nulls = implied_nulls([(item, values)])?;
    // Values of another length are reported by Arrow when the array is built.
    if Some(item_nulls.len()) != num_rows.checked_mul(d) {
        return None;
    }
    let valid: BooleanBuffer =
        (0..num_rows).map(|row| (row * d..(row + 1) * d).all(|i| item_nulls.is_valid(i))).collect();
    Some(NullBuffer::new(valid))
}

impl FieldDecoder for FixedSizeListFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let validity = next_validity(self.validity.as_mut(), num_rows);
            let items = self.items.next_batch(num_rows * self.dimension);
            let (validity, items) = futures::try_join!(validity, items)?;
            let field = self.field.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                let decode = || -> Result<ArrayRef> {
                    let DataType::FixedSizeList(item, size) = field.data_type() else {
                        bail!(internal, "fixed-size list decoder of a {} field", field.data_type())
                    };
                    let values = items()?;
                    let nulls = match validity {
                        Some(pieces) => validity_from_pieces(&pieces)?,
                        None => implied_row_nulls(item, &values, *size, num_rows as usize),
                    };
                    let array =
                        FixedSizeListArray::try_new_with_length(item.clone(), *size, values, nulls, num_rows as usize)?;
                    Ok(Arc::new(array))
                };
                decode().map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}
