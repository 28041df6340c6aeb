//! What the metadata of a page may make a reader allocate.
//!
//! A file's metadata claims counts (rows, runs, dictionary values, list dimensions) that some
//! encodings do not back with bytes: a constant page, bit-packing of width 0 or an all-null
//! page store nothing per value, so a few hundred bytes of metadata can claim 2^40 values. The
//! reader therefore never allocates in proportion to a claim alone:
//!
//! - **Per decode call**, the memory a decoder allocates follows the rows the reader asked for
//!   (a batch), never the page's claimed size, and a block is at most [`MAX_BLOCK_BYTES`]
//!   ([`block_bytes`]); the allocation itself is fallible ([`try_buffer`], [`try_vec`]), so a
//!   failure is an error, not an abort.
//! - **Children decoded whole when a page loads** (the runs of a run-length page, a
//!   dictionary) hold at most [`MAX_VALUES_PER_STORED_BYTE`] values per byte their encoding
//!   stores, plus one ([`check_whole_load`]): a bitmap, the densest layout the writer produces,
//!   stores 8 values per byte, and the single value of a constant child is allowed.
//! - Sizes computed from claims use checked arithmetic: an overflow is a corrupt file.
//! - **Whole results** (a `take`, a table collected from a read): a file may legitimately hold
//!   2^40 rows of one constant in a few hundred bytes. Before such a result is built, the least
//!   memory its rows need in Arrow ([`min_bytes_per_value`] of each column) is compared with
//!   what the process can still get ([`available_memory`]): a result that cannot fit is
//!   refused with [`Error::OutOfMemory`] saying how much it needed, before anything is
//!   allocated; a stream of it proceeds in bounded memory.

use arrow_buffer::MutableBuffer;
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// The largest block one decode call produces: 4 GiB. A batch of a valid file reaches it only
/// with very wide values (8,192 rows of 512 KiB each); a smaller batch size reads those.
pub const MAX_BLOCK_BYTES: u64 = 4 << 30;

/// Values per stored byte a child decoded whole at page load may hold (a bitmap's density).
pub const MAX_VALUES_PER_STORED_BYTE: u64 = 8;

/// The size in bytes of `num_values` values of `bytes_per_value` bytes, checked against
/// [`MAX_BLOCK_BYTES`].
///
/// # Errors
/// [`Error::Corrupt`] if the product overflows or exceeds the cap.
pub fn block_bytes(num_values: u64, bytes_per_value: u64, what: &str) -> Result<usize> {
    num_values
        .checked_mul(bytes_per_value)
        .filter(|bytes| *bytes <= MAX_BLOCK_BYTES)
        .and_then(|bytes| usize::try_from(bytes).ok())
        .ok_or_else(|| {
            Error::corrupt(format!(
                "{what}: {num_values} values of {bytes_per_value} bytes make a block larger than the {} GiB one \
                 decode may allocate (read fewer rows at a time: a smaller batch size)",
                MAX_BLOCK_BYTES >> 30
            ))
        })
}

/// An empty buffer with room for `bytes`, or an error if the allocation fails.
///
/// # Errors
/// [`Error::OutOfMemory`] naming `what` if the memory cannot be allocated.
pub fn try_buffer(bytes: usize, what: &str) -> Result<MutableBuffer> {
    Ok(MutableBuffer::from(try_vec::<u8>(bytes, what)?))
}

/// An empty vector with room for `len` values, or an error if the allocation fails.
///
/// # Errors
/// [`Error::OutOfMemory`] naming `what` if the memory cannot be allocated.
pub fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(len).map_err(|e| {
        Error::out_of_memory(format!("{what}: cannot allocate {len} values of {} bytes: {e}", size_of::<T>()))
    })?;
    Ok(vec)
}

/// Checks that a child decoded whole at page load claims no more values than its stored bytes
/// can hold (see the module documentation).
///
/// # Errors
/// [`Error::Corrupt`] naming `what` otherwise.
pub fn check_whole_load(num_values: u64, stored_bytes: u64, what: &str) -> Result<()> {
    let most = stored_bytes.saturating_mul(MAX_VALUES_PER_STORED_BYTE).saturating_add(1);
    if num_values <= most {
        return Ok(());
    }
    Err(Error::corrupt(format!(
        "{what} of {num_values} values is stored in {stored_bytes} bytes (at most {most} values fit)"
    )))
}

/// The least memory one value of `data_type` takes in an Arrow array (validity bitmaps left out;
/// variable-length values counted by their offsets or views only): what no encoding can shrink
/// once decoded. Saturating: a type that cannot be held at all (a fixed-size list of 2^31
/// values of 8 bytes) gives a size larger than any memory.
pub fn min_bytes_per_value(data_type: &DataType) -> u64 {
    match data_type {
        DataType::Null | DataType::Boolean => 0,
        DataType::Utf8 | DataType::Binary | DataType::List(_) | DataType::Map(..) => 4,
        DataType::LargeUtf8 | DataType::LargeBinary | DataType::LargeList(_) => 8,
        DataType::Utf8View | DataType::BinaryView | DataType::ListView(_) | DataType::LargeListView(_) => 16,
        DataType::FixedSizeList(item, size) => {
            (*size).max(0) as u64 * min_bytes_per_value(item.data_type()).max(u64::from(item.data_type().is_null()))
        }
        DataType::FixedSizeBinary(size) => (*size).max(0) as u64,
        DataType::Struct(fields) => {
            fields.iter().map(|f| min_bytes_per_value(f.data_type())).fold(0, u64::saturating_add)
        }
        DataType::Dictionary(key, _) => min_bytes_per_value(key),
        DataType::RunEndEncoded(..) | DataType::Union(..) => 0,
        other => other.primitive_width().map_or(0, |w| w as u64),
    }
}

/// Bytes of memory this process can still get, as far as it can tell: the least of the
/// system's available memory (`MemAvailable`), the room left under the address-space limit
/// (`RLIMIT_AS`, less what is mapped already) and under the cgroup's limit. `None` where none
/// can be read.
pub fn available_memory() -> Option<u64> {
    [system_available(), address_space_left(), cgroup_left()].into_iter().flatten().min()
}

/// `MemAvailable` of `/proc/meminfo`.
fn system_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Room left under `RLIMIT_AS`: its soft limit less the address space mapped now.
#[cfg(unix)]
fn address_space_left() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `getrlimit` writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: `sysconf` only reads a constant of the system.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    Some(limit.rlim_cur.saturating_sub(pages.saturating_mul(page)))
}

#[cfg(not(unix))]
fn address_space_left() -> Option<u64> {
    None
}

/// Room left under the memory limit of this process's cgroup (v2).
fn cgroup_left() -> Option<u64> {
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    let limit: u64 = limit.trim().parse().ok()?;
    let current: u64 = std::fs::read_to_string("/sys/fs/cgroup/memory.current").ok()?.trim().parse().ok()?;
    Some(limit.saturating_sub(current))
}

/// Checks that a result of `rows` rows of the columns `types` can fit in the memory the process
/// can still get (see the module documentation); `what` names the read in the error.
///
/// # Errors
/// [`Error::OutOfMemory`] stating the rows and the bytes they would need at least.
pub fn check_result_fits<'a>(rows: u64, types: impl IntoIterator<Item = &'a DataType>, what: &str) -> Result<()> {
    let per_row = types.into_iter().map(min_bytes_per_value).fold(0u64, u64::saturating_add);
    let needed = rows.saturating_mul(per_row);
    let Some(available) = available_memory() else { return Ok(()) };
    if needed <= available {
        return Ok(());
    }
    Err(Error::out_of_memory(format!(
        "{what} of {rows} rows would need at least {needed} bytes ({} per row), more than the {available} bytes \
         this process can still get: read it as a stream of batches (read_all), or fewer rows or columns at a time",
        per_row
    )))
}

/// The bytes of an Arrow array of `len` nulls of `data_type`, checked against
/// [`MAX_BLOCK_BYTES`]: Arrow allocates its buffers zeroed, a fixed-size list's items included.
///
/// # Errors
/// [`Error::OutOfMemory`] if they exceed the cap (a fixed-size list of 2^31 items a value).
pub fn check_null_array(data_type: &DataType, len: u64) -> Result<()> {
    let bytes = len.saturating_mul(min_bytes_per_value(data_type).max(1));
    if bytes <= MAX_BLOCK_BYTES {
        return Ok(());
    }
    Err(Error::out_of_memory(format!(
        "{len} null values of {data_type} would take {bytes} bytes in Arrow, more than the {} GiB one decode may \
         allocate",
        MAX_BLOCK_BYTES >> 30
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_bytes_refuses_overflows_and_blocks_over_the_cap() {
        assert_eq!(block_bytes(1000, 8, "x").unwrap(), 8000);
        assert!(block_bytes(u64::MAX, 2, "x").is_err());
        assert!(block_bytes(MAX_BLOCK_BYTES + 1, 1, "x").is_err());
        assert!(block_bytes(MAX_BLOCK_BYTES, 1, "x").is_ok());
    }

    #[test]
    fn allocation_failures_are_errors() {
        assert!(try_vec::<u64>(usize::MAX / 4, "huge").is_err());
        assert!(try_buffer(16, "small").unwrap().capacity() >= 16);
    }

    #[test]
    fn results_are_weighed_before_they_are_built() {
        use arrow_schema::Field;
        use std::sync::Arc;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        assert_eq!(min_bytes_per_value(&DataType::FixedSizeList(item.clone(), 768)), 3072);
        assert_eq!(min_bytes_per_value(&DataType::Utf8), 4);
        assert_eq!(min_bytes_per_value(&DataType::Decimal128(15, 2)), 16);
        let huge = DataType::FixedSizeList(item, i32::MAX);
        assert!(check_null_array(&huge, 1).is_err());
        assert!(check_null_array(&DataType::Int64, 1000).is_ok());
        assert!(check_result_fits(1 << 40, [&DataType::Int64], "a take").is_err_and(|e| {
            let text = e.to_string();
            text.contains("a take of 1099511627776 rows") && text.contains("8 per row")
        }));
        assert!(check_result_fits(1000, [&DataType::Int64], "a take").is_ok());
    }

    #[test]
    fn whole_loads_are_bounded_by_stored_bytes() {
        assert!(check_whole_load(1, 0, "a constant").is_ok());
        assert!(check_whole_load(2, 0, "a constant").is_err());
        assert!(check_whole_load(81, 10, "runs").is_ok());
        assert!(check_whole_load(82, 10, "runs").is_err());
    }
}
