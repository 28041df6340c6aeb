//! [`ZoneMapBuilder`]: the statistics of a column per zone of rows, while it is written.
//!
//! A zone is a fixed number of rows ([`WriterOptions::zone_map_rows`](super::WriterOptions)),
//! whatever the page size: a page of 8 MiB holds millions of dates, whose bounds rarely
//! exclude anything, while a zone of 8,192 rows is narrow enough to skip. Only flat top-level
//! columns get one (a nested column's values are not rows); each zone's statistics are those
//! of a page ([`page_statistics`]), so readers treat both alike.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};

use crate::encodings::logical::array_to_block;
use crate::encodings::statistics::ValueKind;
use crate::encodings::statistics::page_statistics;
use crate::error::{Error, Result};
use crate::format::proto::{PageStatistics, ZoneMap};

/// Collects the zones of one column as its arrays arrive.
pub struct ZoneMapBuilder {
    rows_per_zone: usize,
    kind: ValueKind,
    /// Rows received since the last complete zone (fewer than `rows_per_zone`), as slices of
    /// the arrays received: at most one zone of rows is held.
    pending: Vec<ArrayRef>,
    pending_rows: usize,
    zones: Vec<PageStatistics>,
}

impl ZoneMapBuilder {
    /// A builder of zones of `rows_per_zone` rows (at least 1) of values of `kind`.
    pub fn new(rows_per_zone: u64, kind: ValueKind) -> Self {
        Self {
            rows_per_zone: usize::try_from(rows_per_zone).unwrap_or(usize::MAX).max(1),
            kind,
            pending: Vec::new(),
            pending_rows: 0,
            zones: Vec::new(),
        }
    }

    /// Adds the next rows of the column.
    pub fn append(&mut self, array: &ArrayRef) -> Result<()> {
        let mut offset = 0;
        while offset < array.len() {
            let take = (self.rows_per_zone - self.pending_rows).min(array.len() - offset);
            self.pending.push(values_of(array.slice(offset, take))?);
            self.pending_rows += take;
            offset += take;
            if self.pending_rows == self.rows_per_zone {
                self.close_zone()?;
            }
        }
        Ok(())
    }

    fn close_zone(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        let zone = match pending.as_slice() {
            [] => return Ok(()),
            [one] => one.clone(),
            many => {
                let refs: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs).map_err(Error::from)?
            }
        };
        self.zones.push(page_statistics(&array_to_block(zone.as_ref())?, self.kind));
        Ok(())
    }

    /// The zone map of every row received (the last zone possibly short).
    pub fn finish(mut self) -> Result<ZoneMap> {
        self.close_zone()?;
        Ok(ZoneMap { zones: self.zones })
    }
}

/// A dictionary array's values for its rows (zones of arrays with different dictionaries are
/// concatenated, which could overflow the keys; the bounds are then of the values used);
/// other arrays as they are.
fn values_of(array: ArrayRef) -> Result<ArrayRef> {
    match array.as_any_dictionary_opt() {
        Some(dictionary) => Ok(arrow_select::take::take(dictionary.values().as_ref(), dictionary.keys(), None)?),
        None => Ok(array),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int32Array;

    use super::*;
    use crate::encodings::statistics::{StatValue, decode_bound};

    #[test]
    fn zones_cut_at_fixed_rows_across_arrays() {
        let mut builder = ZoneMapBuilder::new(4, ValueKind::Integer { signed: true });
        let first: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None, Some(1)]));
        let second: ArrayRef = Arc::new(Int32Array::from(vec![Some(9), Some(7), Some(8), Some(2), None, Some(3)]));
        builder.append(&first).unwrap();
        builder.append(&second).unwrap();
        let zones = builder.finish().unwrap().zones;
        let bounds = |z: &PageStatistics| {
            let int = |b: &Option<Vec<u8>>| match b
                .as_deref()
                .and_then(|b| decode_bound(b, &arrow_schema::DataType::Int32))
            {
                Some(StatValue::Int(v)) => Some(v),
                _ => None,
            };
            (z.null_count, int(&z.min), int(&z.max))
        };
        // Rows: [5, null, 1, 9] [7, 8, 2, null] [3]
        assert_eq!(
            zones.iter().map(bounds).collect::<Vec<_>>(),
            vec![(1, Some(1), Some(9)), (1, Some(2), Some(8)), (0, Some(3), Some(3))]
        );
    }
}
