//! The decoder of flat fields.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType;
use futures::future::BoxFuture;

use super::page_queue::PagePiece;
use super::{DecodeTask, FieldDecoder, PageQueue};
use crate::encodings::logical::block_to_array;
use crate::encodings::logical::dictionary::concat_dictionaries;
use crate::encodings::{DataBlock, limits};
use crate::error::{Error, Result, ensure};
use crate::filter::range_test::RangeTest;
use crate::read::pages::ReadContext;

/// Decodes a flat field from the pages of its one column.
pub struct PrimitiveFieldDecoder {
    data_type: DataType,
    pages: PageQueue,
    location: Arc<str>,
    test: Option<RangeTest>,
}

impl PrimitiveFieldDecoder {
    /// A decoder of `data_type` values from `pages`.
    pub fn new(data_type: DataType, pages: PageQueue, context: &ReadContext) -> Self {
        Self { data_type, pages, location: context.location.clone(), test: None }
    }

    /// The decoder returning, instead of the values, `test`'s result on them: a boolean array,
    /// null where the value is null. Run on the stored pages where their encodings can
    /// ([`PageDecoder::test_range`](crate::encodings::PageDecoder::test_range)), on the decoded
    /// values otherwise. For a filtered read's filter columns that nothing else reads.
    pub fn with_range_test(self, test: RangeTest) -> Self {
        Self { test: Some(test), ..self }
    }
}

impl FieldDecoder for PrimitiveFieldDecoder {
    fn next_batch(&mut self, num_rows: u64) -> BoxFuture<'_, Result<DecodeTask>> {
        Box::pin(async move {
            let pieces = self.pages.next_rows(num_rows).await?;
            let data_type = self.data_type.clone();
            let location = self.location.clone();
            let test = self.test;
            let task: DecodeTask = Box::new(move || {
                let decode = || {
                    if let Some(test) = test {
                        return test_pieces(&pieces, &data_type, &test);
                    }
                    if let (DataType::Dictionary(..), true) = (&data_type, pieces.len() > 1) {
                        // Pieces of pages with their own dictionaries: an array each, merged by
                        // Arrow (which combines the dictionaries) rather than re-encoded here.
                        let arrays = pieces
                            .iter()
                            .map(|p| block_to_array(p.decode()?, &data_type))
                            .collect::<Result<Vec<_>>>()?;
                        return concat_dictionaries(&arrays, &data_type);
                    }
                    // Decimals of up to 18 digits asked for at their native width.
                    let narrow = matches!(data_type, DataType::Decimal64(..));
                    if !narrow && let Some(block) = decode_into_one_buffer(&pieces)? {
                        return block_to_array(block, &data_type);
                    }
                    let blocks = pieces
                        .iter()
                        .map(|p| if narrow { p.decode_64() } else { p.decode() })
                        .collect::<Result<Vec<_>>>()?;
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

    fn next_selected(&mut self, num_rows: u64, selected: BooleanBuffer) -> BoxFuture<'_, Result<DecodeTask>> {
        if self.test.is_some() {
            // A tested column's booleans are filtered like any array.
            let filtered = super::filter_task(self.next_batch(num_rows), selected);
            return Box::pin(filtered);
        }
        Box::pin(async move {
            let pieces = self.pages.next_rows(num_rows).await?;
            let data_type = self.data_type.clone();
            let location = self.location.clone();
            let task: DecodeTask = Box::new(move || {
                decode_selected(&pieces, &data_type, &selected).map_err(|e| e.with_location(&location))
            });
            Ok(task)
        })
    }
}

/// The rows of `pieces` where `selected` (a bit per row of the pieces, in order) is set:
/// decoded alone where a page's encoding can, decoded and filtered otherwise.
fn decode_selected(pieces: &[PagePiece], data_type: &DataType, selected: &BooleanBuffer) -> Result<ArrayRef> {
    let narrow = matches!(data_type, DataType::Decimal64(..));
    let dictionary = matches!(data_type, DataType::Dictionary(..));
    let total = pieces.iter().map(|p| p.len).sum::<u64>();
    ensure!(selected.len() as u64 == total, internal, "{} selection bits for a batch of {total} rows", selected.len());
    let mut arrays = Vec::with_capacity(pieces.len());
    let mut at = 0usize;
    for piece in pieces {
        let bits = selected.slice(at, piece.len as usize);
        at += piece.len as usize;
        // A dictionary-typed column's pages return keys and values, which stay together.
        let block = match (dictionary, narrow) {
            (true, _) => None,
            (false, true) => piece.page.decode_selected_64(piece.skip, piece.len, &bits)?,
            (false, false) => piece.page.decode_selected(piece.skip, piece.len, &bits)?,
        };
        arrays.push(match block {
            Some(block) => block_to_array(block, data_type)?,
            None => {
                let all = block_to_array(if narrow { piece.decode_64()? } else { piece.decode()? }, data_type)?;
                arrow_select::filter::filter(&all, &BooleanArray::new(bits, None))?
            }
        });
    }
    match arrays.as_slice() {
        [] => Ok(arrow_array::new_empty_array(data_type)),
        [one] => Ok(one.clone()),
        _ if dictionary => concat_dictionaries(&arrays, data_type),
        many => Ok(arrow_select::concat::concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?),
    }
}

/// `test` on the rows of `pieces`, one page at a time: on the stored form where the page's
/// encoding can, on its decoded values otherwise.
fn test_pieces(pieces: &[PagePiece], data_type: &DataType, test: &RangeTest) -> Result<ArrayRef> {
    let narrow = matches!(data_type, DataType::Decimal64(..));
    let tested = pieces
        .iter()
        .map(|p| match p.page.test_range(p.skip, p.len, test)? {
            Some(bits) => Ok(bits),
            None => test.on_array(&block_to_array(if narrow { p.decode_64()? } else { p.decode()? }, data_type)?),
        })
        .collect::<Result<Vec<BooleanArray>>>()?;
    Ok(match tested.as_slice() {
        [] => arrow_array::new_empty_array(&DataType::Boolean),
        [one] => Arc::new(one.clone()),
        many => arrow_select::concat::concat(&many.iter().map(|a| a as &dyn Array).collect::<Vec<_>>())?,
    })
}

/// The rows of `pieces` (of several pages) decoded straight into one buffer, if every piece's
/// decoder writes the same fixed layout ([`PageDecoder::fixed_layout`]); `None` otherwise (one
/// piece, or pages of other layouts), for the caller to decode piece by piece and join.
///
/// The join is a copy of the whole batch into new memory: a 1,000-row take of the embeddings
/// set spans 37 pages of vectors, and joining them was a fifth of the page faults of a
/// process's first take.
fn decode_into_one_buffer(pieces: &[PagePiece]) -> Result<Option<DataBlock>> {
    let [first, rest @ ..] = pieces else { return Ok(None) };
    if rest.is_empty() {
        return Ok(None);
    }
    let Some(layout) = first.page.fixed_layout() else { return Ok(None) };
    if rest.iter().any(|p| p.page.fixed_layout() != Some(layout)) {
        return Ok(None);
    }
    let row_bytes = layout.row_bytes().ok_or_else(|| Error::corrupt("fixed-size rows wider than memory"))?;
    let num_rows = pieces.iter().try_fold(0u64, |total, p| total.checked_add(p.len));
    let num_rows = num_rows.ok_or_else(|| Error::corrupt("more rows in a batch than fit a count"))?;
    let len = limits::block_bytes(num_rows, row_bytes, "fixed-width values")?;
    let mut out = limits::try_buffer(len, "fixed-width values")?;
    // SAFETY: not zeroed first: the pieces' `decode_into` write every byte (each its
    // `len * row_bytes`, one after the other, `num_rows * row_bytes` in all) before anything
    // reads them, and the values are plain integers or floats, valid for any bytes.
    unsafe { out.set_len(len) };
    let mut at = 0;
    for piece in pieces {
        let bytes = (piece.len * row_bytes) as usize;
        piece.page.decode_into(piece.skip, piece.len, &mut out.as_slice_mut()[at..at + bytes])?;
        at += bytes;
    }
    Ok(Some(layout.block(out.into(), num_rows)))
}
