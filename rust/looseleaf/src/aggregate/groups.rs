//! [`Groups`]: the group of each row, from the values of up to [`MAX_GROUP_COLUMNS`] grouping
//! columns, and the grouping values of each group.
//!
//! Each grouping column numbers its distinct values (null included) as it meets them; a group
//! is a tuple of those numbers. A dictionary-encoded column numbers its dictionary once a batch
//! and its rows through their keys, so a grouping by a low-cardinality string costs an index a
//! row, not a hash of the string.

use std::collections::HashMap;

use ahash::RandomState;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, new_null_array};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;
use arrow_select::interleave::interleave;

use super::expression::Numbers;
use crate::error::{Error, Result};

/// The most grouping columns (the numbers of a group's values are packed in 128 bits).
pub const MAX_GROUP_COLUMNS: usize = 4;

/// Whether rows can be grouped by a column of this type.
pub fn groupable(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(_, values) => groupable(values) && !matches!(**values, DataType::Dictionary(_, _)),
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => true,
        _ => false,
    }
}

/// The groups met so far and the grouping values of each.
pub struct Groups {
    columns: Vec<KeyColumn>,
    index: HashMap<u128, u32, RandomState>,
    /// Each group's value numbers, a `u32` a column.
    keys: Vec<u128>,
}

impl Groups {
    /// Groups by columns of these (value) types; none: one group of every row.
    pub fn new(types: &[DataType]) -> Self {
        Self {
            columns: types.iter().map(|t| KeyColumn::new(t.clone())).collect(),
            index: HashMap::default(),
            keys: Vec::new(),
        }
    }

    /// The number of groups met.
    pub fn count(&self) -> usize {
        self.keys.len()
    }

    /// The group of each row of a batch whose grouping columns are `arrays` (in order).
    ///
    /// # Errors
    /// A column of a type not [`groupable`], or more than `u32::MAX` groups.
    pub fn assign(&mut self, arrays: &[ArrayRef], rows: usize) -> Result<Vec<u32>> {
        let mut packed = vec![0u128; rows];
        for (i, (column, array)) in self.columns.iter_mut().zip(arrays).enumerate() {
            let ids = column.ids(array)?;
            for (key, id) in packed.iter_mut().zip(ids) {
                *key |= u128::from(id) << (32 * i);
            }
        }
        let mut groups = Vec::with_capacity(rows);
        let mut last: Option<(u128, u32)> = None;
        for key in packed {
            // Runs of one group (sorted or clustered data) skip the hash.
            if let Some((k, g)) = last
                && k == key
            {
                groups.push(g);
                continue;
            }
            let next = u32::try_from(self.keys.len()).map_err(|_| Error::unsupported("aggregate: too many groups"))?;
            let group = *self.index.entry(key).or_insert_with(|| {
                self.keys.push(key);
                next
            });
            last = Some((key, group));
            groups.push(group);
        }
        Ok(groups)
    }

    /// Makes sure there is a group when there are no grouping columns (an aggregate of no rows
    /// is still one row).
    pub fn ensure_one_without_columns(&mut self) {
        if self.columns.is_empty() && self.keys.is_empty() {
            self.index.insert(0, 0);
            self.keys.push(0);
        }
    }

    /// The grouping values of `groups` (group numbers, repeats allowed), a column each.
    ///
    /// # Errors
    /// An internal error if the arrays cannot be interleaved.
    pub fn values(&self, groups: &[u32]) -> Result<Vec<ArrayRef>> {
        self.columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let ids: Vec<u32> = groups.iter().map(|g| (self.keys[*g as usize] >> (32 * i)) as u32).collect();
                column.values(&ids)
            })
            .collect()
    }
}

/// The distinct values of one grouping column, numbered in the order met.
struct KeyColumn {
    data_type: DataType,
    /// Arrays holding the first row of each distinct value; the first is one null.
    sources: Vec<ArrayRef>,
    /// For each value number, its (source, row).
    first: Vec<(usize, usize)>,
    numbers: HashMap<i128, u32, RandomState>,
    bytes: HashMap<Vec<u8>, u32, RandomState>,
    null: Option<u32>,
}

impl KeyColumn {
    fn new(data_type: DataType) -> Self {
        Self {
            sources: vec![new_null_array(&data_type, 1)],
            data_type,
            first: Vec::new(),
            numbers: HashMap::default(),
            bytes: HashMap::default(),
            null: None,
        }
    }

    fn next_id(&self) -> Result<u32> {
        u32::try_from(self.first.len()).map_err(|_| Error::unsupported("aggregate: too many distinct values"))
    }

    fn null_id(&mut self) -> Result<u32> {
        if let Some(id) = self.null {
            return Ok(id);
        }
        let id = self.next_id()?;
        self.first.push((0, 0));
        self.null = Some(id);
        Ok(id)
    }

    /// The number of each row's value, numbering the values not met before.
    fn ids(&mut self, array: &ArrayRef) -> Result<Vec<u32>> {
        if let DataType::Dictionary(key_type, _) = array.data_type() {
            let (keys, values): (Vec<Option<usize>>, ArrayRef) = match key_type.as_ref() {
                DataType::Int8 => dictionary_keys::<Int8Type>(array),
                DataType::Int16 => dictionary_keys::<Int16Type>(array),
                DataType::Int32 => dictionary_keys::<Int32Type>(array),
                DataType::Int64 => dictionary_keys::<Int64Type>(array),
                DataType::UInt8 => dictionary_keys::<UInt8Type>(array),
                DataType::UInt16 => dictionary_keys::<UInt16Type>(array),
                DataType::UInt32 => dictionary_keys::<UInt32Type>(array),
                DataType::UInt64 => dictionary_keys::<UInt64Type>(array),
                other => return Err(Error::unsupported(format!("aggregate: dictionary keys of type {other}"))),
            };
            let value_ids = self.ids(&values)?;
            let mut null = None;
            return keys
                .into_iter()
                .map(|key| match key.and_then(|k| value_ids.get(k).copied()) {
                    Some(id) => Ok(id),
                    None => match null {
                        Some(id) => Ok(id),
                        None => {
                            let id = self.null_id()?;
                            null = Some(id);
                            Ok(id)
                        }
                    },
                })
                .collect();
        }
        let source = self.sources.len();
        let mut used = false;
        let mut ids = Vec::with_capacity(array.len());
        let nulls = array.logical_nulls();
        let is_null = |row: usize| nulls.as_ref().is_some_and(|n| n.is_null(row));
        match array.data_type() {
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView => {
                let bytes = |row: usize| -> &[u8] {
                    match array.data_type() {
                        DataType::Utf8 => array.as_string::<i32>().value(row).as_bytes(),
                        DataType::LargeUtf8 => array.as_string::<i64>().value(row).as_bytes(),
                        DataType::Utf8View => array.as_string_view().value(row).as_bytes(),
                        DataType::Binary => array.as_binary::<i32>().value(row),
                        DataType::LargeBinary => array.as_binary::<i64>().value(row),
                        _ => array.as_binary_view().value(row),
                    }
                };
                for row in 0..array.len() {
                    if is_null(row) {
                        ids.push(self.null_id()?);
                        continue;
                    }
                    let value = bytes(row);
                    if let Some(id) = self.bytes.get(value) {
                        ids.push(*id);
                        continue;
                    }
                    let id = self.next_id()?;
                    self.bytes.insert(value.to_vec(), id);
                    self.first.push((source, row));
                    used = true;
                    ids.push(id);
                }
            }
            DataType::Boolean => {
                let values = array.as_boolean();
                for row in 0..array.len() {
                    if is_null(row) {
                        ids.push(self.null_id()?);
                        continue;
                    }
                    let value = i128::from(values.value(row));
                    ids.push(self.number_id(value, source, row, &mut used)?);
                }
            }
            _ => {
                let numbers = Numbers::of(array)?;
                for (row, value) in numbers.values.iter().enumerate() {
                    if is_null(row) {
                        ids.push(self.null_id()?);
                        continue;
                    }
                    ids.push(self.number_id(*value, source, row, &mut used)?);
                }
            }
        }
        if used {
            self.sources.push(array.clone());
        }
        Ok(ids)
    }

    fn number_id(&mut self, value: i128, source: usize, row: usize, used: &mut bool) -> Result<u32> {
        if let Some(id) = self.numbers.get(&value) {
            return Ok(*id);
        }
        let id = self.next_id()?;
        self.numbers.insert(value, id);
        self.first.push((source, row));
        *used = true;
        Ok(id)
    }

    /// The values numbered `ids`, as one array of the column's value type.
    fn values(&self, ids: &[u32]) -> Result<ArrayRef> {
        if ids.is_empty() {
            return Ok(arrow_array::new_empty_array(&self.data_type));
        }
        let sources: Vec<&dyn Array> = self.sources.iter().map(|a| a.as_ref()).collect();
        let indices: Vec<(usize, usize)> = ids.iter().map(|id| self.first[*id as usize]).collect();
        interleave(&sources, &indices).map_err(|e| Error::internal(format!("aggregate: grouping values: {e}")))
    }
}

fn dictionary_keys<K: arrow_array::types::ArrowDictionaryKeyType>(array: &ArrayRef) -> (Vec<Option<usize>>, ArrayRef) {
    let dictionary = array.as_dictionary::<K>();
    let keys = dictionary.keys().iter().map(|k| k.map(|k| k.as_usize())).collect();
    (keys, dictionary.values().clone())
}
