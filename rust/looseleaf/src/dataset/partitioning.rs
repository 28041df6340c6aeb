//! Hive-style partitioning: `key=value/` directories between a dataset's root and its files,
//! read as columns and written from them.
//!
//! The conventions are those `pyarrow.dataset` (`partitioning="hive"`) and Spark share:
//! - a file's partition values come from the `key=value` directories of its path relative to
//!   the dataset's root, in order; values are percent-decoded (`%2F` is `/`), and
//!   `__HIVE_DEFAULT_PARTITION__` is null;
//! - partition columns come after the files' columns, in directory order;
//! - discovered types: `int32` when every value of a key is a 32-bit integer, else `int64` when
//!   every value is a 64-bit integer, else `string` (both pyarrow and Spark infer `int32` for
//!   small integers; Spark would also guess dates and doubles, pyarrow does not: strings here).
//!   A schema given by the caller replaces discovery.
//!
//! Writing is the reverse: [`HivePartitioning::directory`] is the relative directory of a row's
//! values, percent-encoded as pyarrow encodes them.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int8Array, Int16Array, Int32Array, Int64Array, LargeStringArray, StringArray,
    UInt8Array, UInt16Array, UInt32Array, UInt64Array, new_null_array,
};
use arrow_schema::{DataType, Field, Fields};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::error::{Error, Result, bail};
use crate::storage::Location;

/// The directory name of a null partition value (Hive's, Spark's and pyarrow's).
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// Characters percent-encoded in a partition directory's key and value: all but RFC 3986's
/// unreserved ones, as pyarrow's `segment_encoding="uri"` (its default) writes them. Spark
/// escapes fewer characters (not spaces), and reads these back the same way.
const ESCAPED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The partition columns of a dataset (none for a dataset without partition directories).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HivePartitioning {
    fields: Fields,
}

/// One file's `key=value` directories, decoded (`None` for a null value).
type RawValues = Vec<(String, Option<String>)>;

impl HivePartitioning {
    /// Partitioning by `fields`, in order (types: integers, strings and booleans).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a field of another type.
    pub fn try_new(fields: Fields) -> Result<Self> {
        for field in &fields {
            if !is_partition_type(field.data_type()) {
                bail!(
                    unsupported,
                    "partition column {:?}: type {} is not supported (integers, strings and booleans are)",
                    field.name(),
                    field.data_type()
                );
            }
        }
        Ok(Self { fields })
    }

    /// The partitioning the files' paths (relative to the dataset's root) show, with types
    /// discovered from their values (see the module documentation).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming two files whose directories name different keys (or
    /// the same keys in another order).
    pub fn discover<'a>(relative_paths: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut keys: Option<(Vec<String>, &str)> = None;
        let mut values: Vec<Vec<Option<String>>> = Vec::new();
        for path in relative_paths {
            let raw = raw_values(path)?;
            let names: Vec<String> = raw.iter().map(|(k, _)| k.clone()).collect();
            match &keys {
                None => {
                    values = vec![Vec::new(); names.len()];
                    keys = Some((names, path));
                }
                Some((first, first_path)) if *first != names => bail!(
                    invalid,
                    "partition directories differ: {first_path:?} has keys {first:?}, {path:?} has {names:?}"
                ),
                Some(_) => {}
            }
            for (slot, (_, value)) in values.iter_mut().zip(raw) {
                slot.push(value);
            }
        }
        let Some((names, _)) = keys else { return Ok(Self::default()) };
        let fields = names
            .into_iter()
            .zip(&values)
            .map(|(name, values)| Field::new(name, discovered_type(values), true))
            .collect::<Fields>();
        Ok(Self { fields })
    }

    /// The partition columns, in order.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// Whether there are no partition columns.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The partition values of the file at `relative_path`, one one-element array per column.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if its directories do not name the partition columns in
    /// order, or a value does not parse as its column's type.
    pub fn values(&self, relative_path: &str) -> Result<Vec<ArrayRef>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let raw = raw_values(relative_path)?;
        let names: Vec<&str> = raw.iter().map(|(k, _)| k.as_str()).collect();
        let expected: Vec<&str> = self.fields.iter().map(|f| f.name().as_str()).collect();
        if names != expected {
            bail!(invalid, "{relative_path:?}: partition directories {names:?}, expected {expected:?}");
        }
        self.fields
            .iter()
            .zip(raw)
            .map(|(field, (_, value))| {
                parse_value(field.data_type(), value.as_deref()).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "{relative_path:?}: partition value {value:?} of {:?} is not a {}",
                        field.name(),
                        field.data_type()
                    ))
                })
            })
            .collect()
    }

    /// The partition values of the file at `location`, read from the directories directly
    /// above it (as many as there are partition columns), as stored (escapes decoded once):
    /// for a reader handed a file of a partitioned dataset without its root.
    ///
    /// # Errors
    /// As [`values`](Self::values).
    pub fn values_of_file(&self, location: &Location) -> Result<Vec<ArrayRef>> {
        let path = match location {
            Location::Local(path) => path.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"),
            Location::Memory(path) | Location::Remote { path, .. } => path.as_ref().to_owned(),
        };
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let tail = &segments[segments.len().saturating_sub(self.fields.len() + 1)..];
        self.values(&tail.join("/")).map_err(|e| e.with_location(&location.to_string()))
    }

    /// The rows of a batch grouped by directory, in the order directories first appear:
    /// `columns` are its partition columns (one array per partition column, in order), of
    /// `num_rows` rows.
    ///
    /// # Errors
    /// As [`directory`](Self::directory).
    pub fn group_rows(&self, columns: &[ArrayRef], num_rows: usize) -> Result<Vec<(String, Vec<u32>)>> {
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        let mut group_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for row in 0..num_rows {
            let directory = self.directory(columns, row)?;
            let group = *group_of.entry(directory.clone()).or_insert_with(|| {
                groups.push((directory, Vec::new()));
                groups.len() - 1
            });
            groups[group].1.push(row as u32);
        }
        Ok(groups)
    }

    /// The relative directory (`k1=v1/k2=v2`) of the row `row` of the partition columns
    /// `columns` (one array per partition column, in order).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a column of a type partitions cannot hold.
    pub fn directory(&self, columns: &[ArrayRef], row: usize) -> Result<String> {
        let mut out = String::new();
        for (field, column) in self.fields.iter().zip(columns) {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&utf8_percent_encode(field.name(), ESCAPED).to_string());
            out.push('=');
            match value_text(column, row)? {
                None => out.push_str(NULL_PARTITION),
                Some(text) if text.is_empty() => out.push_str(NULL_PARTITION),
                Some(text) => out.push_str(&utf8_percent_encode(&text, ESCAPED).to_string()),
            }
        }
        Ok(out)
    }
}

/// Whether partition directories can hold values of `data_type`.
pub fn is_partition_type(data_type: &DataType) -> bool {
    data_type.is_integer() || matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Boolean)
}

/// The `key=value` directories of `relative_path` (its last segment is the file), decoded.
fn raw_values(relative_path: &str) -> Result<RawValues> {
    let segments: Vec<&str> = relative_path.split('/').filter(|s| !s.is_empty()).collect();
    let directories = &segments[..segments.len().saturating_sub(1)];
    let mut out = Vec::new();
    for segment in directories {
        let Some((key, value)) = segment.split_once('=') else { continue };
        let decode = |text: &str| {
            percent_decode_str(text).decode_utf8().map(|t| t.into_owned()).map_err(|_| {
                Error::invalid_argument(format!("{relative_path:?}: directory {segment:?} is not UTF-8 once decoded"))
            })
        };
        let key = decode(key)?;
        if key.is_empty() {
            bail!(invalid, "{relative_path:?}: directory {segment:?} has no partition key");
        }
        let value = if value == NULL_PARTITION { None } else { Some(decode(value)?) };
        out.push((key, value));
    }
    Ok(out)
}

fn discovered_type(values: &[Option<String>]) -> DataType {
    let present = || values.iter().flatten();
    if present().all(|v| v.parse::<i32>().is_ok()) && present().next().is_some() {
        DataType::Int32
    } else if present().all(|v| v.parse::<i64>().is_ok()) && present().next().is_some() {
        DataType::Int64
    } else {
        DataType::Utf8
    }
}

/// `text` as a one-element array of `data_type` (null for `None`); `None` if it does not parse.
fn parse_value(data_type: &DataType, text: Option<&str>) -> Option<ArrayRef> {
    let Some(text) = text else { return Some(new_null_array(data_type, 1)) };
    Some(match data_type {
        DataType::Int8 => Arc::new(Int8Array::from(vec![text.parse::<i8>().ok()?])),
        DataType::Int16 => Arc::new(Int16Array::from(vec![text.parse::<i16>().ok()?])),
        DataType::Int32 => Arc::new(Int32Array::from(vec![text.parse::<i32>().ok()?])),
        DataType::Int64 => Arc::new(Int64Array::from(vec![text.parse::<i64>().ok()?])),
        DataType::UInt8 => Arc::new(UInt8Array::from(vec![text.parse::<u8>().ok()?])),
        DataType::UInt16 => Arc::new(UInt16Array::from(vec![text.parse::<u16>().ok()?])),
        DataType::UInt32 => Arc::new(UInt32Array::from(vec![text.parse::<u32>().ok()?])),
        DataType::UInt64 => Arc::new(UInt64Array::from(vec![text.parse::<u64>().ok()?])),
        DataType::Utf8 => Arc::new(StringArray::from(vec![text])),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(vec![text])),
        DataType::Boolean => Arc::new(BooleanArray::from(vec![text.parse::<bool>().ok()?])),
        _ => return None,
    })
}

/// Row `row` of `column` as a directory would hold it (`None` for null).
fn value_text(column: &ArrayRef, row: usize) -> Result<Option<String>> {
    if column.is_null(row) {
        return Ok(None);
    }
    macro_rules! int {
        ($t:ty) => {
            column.as_primitive::<$t>().value(row).to_string()
        };
    }
    Ok(Some(match column.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Utf8 => column.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => column.as_string::<i64>().value(row).to_string(),
        DataType::Boolean => column.as_boolean().value(row).to_string(),
        other => bail!(unsupported, "a partition column of type {other} (integers, strings and booleans are)"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_a_file_come_from_the_directories_above_it() {
        let fields = Fields::from(vec![Field::new("k", DataType::Utf8, true), Field::new("n", DataType::Int32, true)]);
        let partitioning = HivePartitioning::try_new(fields).unwrap();
        for text in ["/data/ds/k=a%2Fb/n=7/part-0.leaf", "s3://bucket/ds/k=a%252Fb/n=7/part-0.leaf"] {
            let values = partitioning.values_of_file(&Location::parse(text).unwrap()).unwrap();
            assert_eq!(values[0].as_string::<i32>().value(0), "a/b", "{text}");
            assert_eq!(values[1].as_primitive::<Int32Type>().value(0), 7, "{text}");
        }
        let e = partitioning.values_of_file(&Location::parse("/data/part-0.leaf").unwrap()).unwrap_err();
        assert!(e.to_string().contains("/data/part-0.leaf"), "{e}");
    }

    #[test]
    fn discovers_keys_types_and_nulls() {
        let paths = ["year=2024/city=a%2Fb/part-0.leaf", "year=2025/city=__HIVE_DEFAULT_PARTITION__/part-1.leaf"];
        let partitioning = HivePartitioning::discover(paths).unwrap();
        let types: Vec<_> = partitioning.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
        assert_eq!(types, vec![("year".into(), DataType::Int32), ("city".into(), DataType::Utf8)]);
        let values = partitioning.values(paths[0]).unwrap();
        assert_eq!(values[1].as_string::<i32>().value(0), "a/b");
        assert!(partitioning.values(paths[1]).unwrap()[1].is_null(0));
    }

    #[test]
    fn widens_to_int64_then_string() {
        let int64 = HivePartitioning::discover(["k=1/f.leaf", "k=9999999999/f.leaf"]).unwrap();
        assert_eq!(int64.fields()[0].data_type(), &DataType::Int64);
        let strings = HivePartitioning::discover(["k=1/f.leaf", "k=x/f.leaf"]).unwrap();
        assert_eq!(strings.fields()[0].data_type(), &DataType::Utf8);
        let only_nulls = HivePartitioning::discover(["k=__HIVE_DEFAULT_PARTITION__/f.leaf"]).unwrap();
        assert_eq!(only_nulls.fields()[0].data_type(), &DataType::Utf8);
    }

    #[test]
    fn refuses_directories_that_disagree() {
        let error = HivePartitioning::discover(["a=1/f.leaf", "b=1/g.leaf"]).unwrap_err().to_string();
        assert!(error.contains("\"b=1/g.leaf\""), "{error}");
        assert!(HivePartitioning::discover(["f.leaf", "a=1/g.leaf"]).is_err());
    }

    #[test]
    fn directories_round_trip() {
        let partitioning = HivePartitioning::discover(["k=x/s=1/f.leaf"]).unwrap();
        let partitioning = HivePartitioning::try_new(
            vec![Field::new("k", DataType::Utf8, true), partitioning.fields()[1].as_ref().clone()].into(),
        )
        .unwrap();
        let keys: ArrayRef = Arc::new(StringArray::from(vec![Some("a/b=c%"), None, Some("")]));
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(-3), Some(4), None]));
        let columns = [keys, ints];
        let directory = partitioning.directory(&columns, 0).unwrap();
        assert_eq!(directory, "k=a%2Fb%3Dc%25/s=-3");
        let values = partitioning.values(&format!("{directory}/f.leaf")).unwrap();
        assert_eq!(values[0].as_string::<i32>().value(0), "a/b=c%");
        assert_eq!(values[1].as_primitive::<Int32Type>().value(0), -3);
        assert_eq!(partitioning.directory(&columns, 1).unwrap(), "k=__HIVE_DEFAULT_PARTITION__/s=4");
        // Spark and pyarrow write an empty string as null: a directory cannot be named `k=`.
        assert_eq!(
            partitioning.directory(&columns, 2).unwrap(),
            "k=__HIVE_DEFAULT_PARTITION__/s=__HIVE_DEFAULT_PARTITION__"
        );
    }
}
