//! [`BufferChecks`]: the checksums of one page's stored buffers, verified as they are read.
//!
//! Format 2.0 stores a CRC-32 of every page buffer as written (compressed bytes for a
//! compressed page). A checksum covers a buffer whole, so it is verified whenever a request
//! returns a buffer whole — every buffer of a page read in full (scans, and every read of a
//! compressed page), and any buffer a partial read happens to fetch whole. A read of part of a
//! buffer (a `take` of a few values of a plain page, say) cannot verify it; the format's
//! structural checks still apply there. Verification runs when a request completes, in the
//! task awaiting the page, never in the scheduling loop.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::proto::PageMetadata;

/// The checksums of one page's buffers, and what to name in an error.
#[derive(Debug)]
pub struct BufferChecks {
    /// The column, as its dotted path, with its number.
    column: Arc<str>,
    /// The page's index in its column.
    page: usize,
    /// `(index, stored range, CRC-32)` of the page's buffers that have a checksum.
    buffers: Vec<(usize, Range<u64>, u32)>,
}

impl BufferChecks {
    /// The checks of page `page` of `column`, or `None` if none of its buffers has a checksum
    /// (files written before format 2.0, or without checksums).
    pub fn of_page(column: &Arc<str>, page: usize, metadata: &PageMetadata) -> Option<Arc<Self>> {
        let buffers: Vec<_> = metadata
            .buffers
            .iter()
            .enumerate()
            .filter_map(|(index, b)| b.crc32.map(|crc| (index, b.offset..b.offset.saturating_add(b.size), crc)))
            .collect();
        (!buffers.is_empty()).then(|| Arc::new(Self { column: column.clone(), page, buffers }))
    }

    /// Verifies every buffer of the page that `bytes` (read for `ranges`, in order) holds whole.
    ///
    /// # Errors
    /// [`Error::Corrupt`] at the buffer's offset, naming the column, page and buffer, for the
    /// first buffer whose bytes do not match their checksum.
    pub fn verify(&self, ranges: &[Range<u64>], bytes: &[Bytes]) -> Result<()> {
        for (range, bytes) in ranges.iter().zip(bytes) {
            // A page has a handful of buffers: a scan beats a map.
            let Some((index, _, crc)) = self.buffers.iter().find(|(_, stored, _)| stored == range) else { continue };
            let actual = crc32fast::hash(bytes);
            if actual != *crc {
                return Err(Error::corrupt_at(
                    range.start,
                    format!(
                        "checksum mismatch in page {} of column {}, buffer {index} ({} bytes at offset {}): \
                         the page's data is damaged (CRC-32 {actual:#010x}, stored {crc:#010x})",
                        self.page,
                        self.column,
                        range.end - range.start,
                        range.start
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::proto::BufferLocation;

    fn page(data: &[&[u8]], offset: u64) -> PageMetadata {
        let mut position = offset;
        let buffers = data
            .iter()
            .map(|bytes| {
                let location = BufferLocation {
                    offset: position,
                    size: bytes.len() as u64,
                    uncompressed_size: 0,
                    crc32: Some(crc32fast::hash(bytes)),
                };
                position += 64;
                location
            })
            .collect();
        PageMetadata { buffers, ..Default::default() }
    }

    #[test]
    fn whole_buffers_are_verified_and_parts_are_not() {
        let column: Arc<str> = "3 (a.b)".into();
        let metadata = page(&[b"validity", b"values of the page"], 64);
        let checks = BufferChecks::of_page(&column, 7, &metadata).unwrap();
        let ranges = [64..72, 128..146];
        let good = [Bytes::from_static(b"validity"), Bytes::from_static(b"values of the page")];
        checks.verify(&ranges, &good).unwrap();

        let damaged = [good[0].clone(), Bytes::from_static(b"values of the pagE")];
        let error = checks.verify(&ranges, &damaged).unwrap_err().to_string();
        assert!(error.contains("page 7 of column 3 (a.b), buffer 1"), "{error}");
        assert!(matches!(checks.verify(&ranges, &damaged), Err(Error::Corrupt { offset: Some(128), .. })));

        // Part of a buffer cannot be verified, so it is let through.
        checks.verify(&[130..134], &[Bytes::from_static(b"XXXX")]).unwrap();
    }

    #[test]
    fn pages_without_checksums_have_no_checks() {
        let mut metadata = page(&[b"abc"], 64);
        metadata.buffers[0].crc32 = None;
        assert!(BufferChecks::of_page(&"0 (x)".into(), 0, &metadata).is_none());
    }
}
