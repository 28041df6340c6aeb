//! The decoder of structs.

use std::sync::Arc;

use arrow_array::{ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, FieldRef};
use futures::future::BoxFuture;

use super::{DecodeTask, FieldDecoder, PagePiece, PageQueue};
use crate::encodings::DataBlock;
use crate::error::{Result, bail};
use crate::scheduler::ReadContext;

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
        context: ReadContext,
    ) -> Self {
        Self { field, validity, children, location: context.location }
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

impl FieldDecoder for StructFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let validity = async {
                match &mut self.validity {
                    Some(queue) => queue.next_rows(num_rows).await.map(Some),
                    None => Ok(None),
                }
            };
            let children = futures::future::try_join_all(self.children.iter_mut().map(|c| c.next_batch(num_rows)));
            let (validity, children) = futures::try_join!(validity, children)?;
            let field = self.field.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                let decode = || -> Result<ArrayRef> {
                    let nulls = match validity {
                        Some(pieces) => validity_from_pieces(&pieces)?,
                        None => None,
                    };
                    let DataType::Struct(fields) = field.data_type() else {
                        bail!(internal, "struct decoder of a {} field", field.data_type())
                    };
                    let arrays = children.into_iter().map(|task| task()).collect::<Result<Vec<_>>>()?;
                    let array = StructArray::try_new_with_length(fields.clone(), arrays, nulls, num_rows as usize)?;
                    Ok(Arc::new(array))
                };
                decode().map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}
