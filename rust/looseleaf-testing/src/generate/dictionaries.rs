//! Dictionary arrays: keys drawn at random into given values ([`dictionary_array`]), and
//! distinct values to build dictionaries from ([`dictionary_values`]).

use std::sync::Arc;

use arrow_array::types::ArrowDictionaryKeyType;
use arrow_array::{ArrayRef, BinaryArray, DictionaryArray, Int64Array, LargeStringArray, PrimitiveArray, StringArray};
use arrow_schema::DataType;
use rand::Rng;
use rand::rngs::StdRng;

/// A dictionary array of `len` keys of type `K` into `values` (each key valid with probability
/// 0.9, pointing anywhere).
pub fn dictionary_array<K: ArrowDictionaryKeyType>(rng: &mut StdRng, len: usize, values: ArrayRef) -> ArrayRef
where
    K::Native: TryFrom<usize>,
    <K::Native as TryFrom<usize>>::Error: std::fmt::Debug,
{
    let size = values.len();
    let keys = PrimitiveArray::<K>::from_iter(
        (0..len).map(|_| rng.random_bool(0.9).then(|| K::Native::try_from(rng.random_range(0..size)).unwrap())),
    );
    Arc::new(DictionaryArray::<K>::try_new(keys, values).unwrap())
}

/// `size` distinct values of `value_type` (`Utf8`, `LargeUtf8`, `Binary` or `Int64`), numbered
/// from `first`: dictionaries numbered apart share no value, numbered across each other share
/// some.
pub fn dictionary_values(value_type: &DataType, first: usize, size: usize) -> ArrayRef {
    let names = (first..first + size).map(|i| format!("value {i:05} {}", "x".repeat(i % 7)));
    match value_type {
        DataType::Utf8 => Arc::new(StringArray::from_iter_values(names)),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter_values(names)),
        DataType::Binary => Arc::new(BinaryArray::from_iter_values(names.map(|n| [n.as_bytes(), &[0xff, 0]].concat()))),
        DataType::Int64 => {
            Arc::new(Int64Array::from_iter_values((first..first + size).map(|i| i as i64 * 1_000_003 - 7)))
        }
        other => panic!("no dictionary values of {other}"),
    }
}
