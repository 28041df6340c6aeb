//! The decoder of structs.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, FieldRef};
use futures::future::BoxFuture;

use super::{DecodeTask, FieldDecoder, PagePiece, PageQueue};
use crate::encodings::DataBlock;
use crate::error::{Result, bail};
use crate::read::pages::ReadContext;

/// Decodes a struct from its validity column (if any) and its children's decoders.
pub struct StructFieldDecoder {
    field: FieldRef,
    validity: Option<PageQueue>,
    children: Vec<Box<dyn FieldDecoder>>,
    location: Arc<str>,
}

impl StructFieldDecoder {
    /// A decoder of `field` (a struct).
    pub fn new(
        field: FieldRef,
        validity: Option<PageQueue>,
        children: Vec<Box<dyn FieldDecoder>>,
        context: &ReadContext,
    ) -> Self {
        Self { field, validity, children, location: context.location.clone() }
    }
}

/// The next `num_rows` rows of a validity column, if the field has one.
pub(crate) async fn next_validity(queue: Option<&mut PageQueue>, num_rows: u64) -> Result<Option<Vec<PagePiece>>> {
    match queue {
        Some(queue) => queue.next_rows(num_rows).await.map(Some),
        None => Ok(None),
    }
}

/// The validity held by pieces of a boolean validity column.
pub(crate) fn validity_from_pieces(pieces: &[PagePiece]) -> Result<Option<NullBuffer>> {
    let blocks = pieces.iter().map(|p| p.decode()).collect::<Result<Vec<_>>>()?;
    if blocks.is_empty() {
        return Ok(None);
    }
    match DataBlock::concat(blocks)? {
        DataBlock::Boolean(bits) => Ok(Some(NullBuffer::new(bits))),
        _ => bail!(corrupt, "a page of a validity column does not decode to bits"),
    }
}

/// The nulls of a nested field stored without a validity column (a struct or fixed-size list
/// that is not nullable), from its `(field, array)` children.
///
/// Arrow lets a non-nullable field hold nulls where its parent is null, and the file does not
/// keep them. But its non-nullable children may only be null where it was, and the file keeps
/// theirs: the field is given a null wherever such a child has one. That is where it was null
/// (so the array is equal to the written one wherever the parent is valid) and what Arrow needs
/// to accept the children.
pub(crate) fn implied_nulls<'a>(
    children: impl IntoIterator<Item = (&'a FieldRef, &'a ArrayRef)>,
) -> Option<NullBuffer> {
    children
        .into_iter()
        .filter(|(field, _)| !field.is_nullable())
        .filter_map(|(_, array)| array.logical_nulls())
        .fold(None, |acc: Option<NullBuffer>, nulls| NullBuffer::union(acc.as_ref(), Some(&nulls)))
        .filter(|nulls| nulls.null_count() > 0)
}

impl FieldDecoder for StructFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let validity = next_validity(self.validity.as_mut(), num_rows);
            let children = futures::future::try_join_all(self.children.iter_mut().map(|c| c.next_batch(num_rows)));
            let (validity, children) = futures::try_join!(validity, children)?;
            let field = self.field.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                let decode = || -> Result<ArrayRef> {
                    let DataType::Struct(fields) = field.data_type() else {
                        bail!(internal, "struct decoder of a {} field", field.data_type())
                    };
                    let arrays = children.into_iter().map(|task| task()).collect::<Result<Vec<_>>>()?;
                    let nulls = match validity {
                        Some(pieces) => validity_from_pieces(&pieces)?,
                        None => implied_nulls(fields.iter().zip(&arrays)),
                    };
                    let array = StructArray::try_new_with_length(fields.clone(), arrays, nulls, num_rows as usize)?;
                    Ok(Arc::new(array))
                };
                decode().map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}
