//! The decoder of flat fields.

use arrow_schema::DataType;
use futures::future::BoxFuture;

use super::{DecodeTask, FieldDecoder, PageQueue};
use crate::encodings::DataBlock;
use crate::encodings::logical::block_to_array;
use crate::encodings::logical::dictionary::concat_dictionaries;
use crate::error::Result;
use crate::read::pages::ReadContext;

/// Decodes a flat field from the pages of its one column.
pub struct PrimitiveFieldDecoder {
    data_type: DataType,
    pages: PageQueue,
    location: std::sync::Arc<str>,
}

impl PrimitiveFieldDecoder {
    /// A decoder of `data_type` values from `pages`.
    pub fn new(data_type: DataType, pages: PageQueue, context: &ReadContext) -> Self {
        Self { data_type, pages, location: context.location.clone() }
    }
}

impl FieldDecoder for PrimitiveFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let pieces = self.pages.next_rows(num_rows).await?;
            let data_type = self.data_type.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                let decode = || {
                    if let (DataType::Dictionary(..), true) = (&data_type, pieces.len() > 1) {
                        // Pieces of pages with their own dictionaries: an array each, merged by
                        // Arrow (which combines the dictionaries) rather than re-encoded here.
                        let arrays = pieces
                            .iter()
                            .map(|p| block_to_array(p.decode()?, &data_type))
                            .collect::<Result<Vec<_>>>()?;
                        return concat_dictionaries(&arrays, &data_type);
                    }
                    let blocks = pieces.iter().map(|p| p.decode()).collect::<Result<Vec<_>>>()?;
                    let block = if blocks.is_empty() {
                        DataBlock::AllNull { num_values: 0 }
                    } else {
                        DataBlock::concat(blocks)?
                    };
                    block_to_array(block, &data_type)
                };
                decode().map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}
