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

use arrow_buffer::MutableBuffer;

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
/// [`Error::Internal`] naming `what` if the memory cannot be allocated.
pub fn try_buffer(bytes: usize, what: &str) -> Result<MutableBuffer> {
    Ok(MutableBuffer::from(try_vec::<u8>(bytes, what)?))
}

/// An empty vector with room for `len` values, or an error if the allocation fails.
///
/// # Errors
/// [`Error::Internal`] naming `what` if the memory cannot be allocated.
pub fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(len).map_err(|e| {
        Error::internal(format!("{what}: cannot allocate {len} values of {} bytes: {e}", size_of::<T>()))
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
    fn whole_loads_are_bounded_by_stored_bytes() {
        assert!(check_whole_load(1, 0, "a constant").is_ok());
        assert!(check_whole_load(2, 0, "a constant").is_err());
        assert!(check_whole_load(81, 10, "runs").is_ok());
        assert!(check_whole_load(82, 10, "runs").is_err());
    }
}
