//! General-purpose compression of whole pages (opt-in: [`crate::WriterOptions::compression`]).
//!
//! Every buffer of a compressed page is stored as one LZ4 block or Zstandard frame, with its
//! decompressed size in the page metadata. Reading any row of such a page reads and decompresses
//! all its buffers: [`CompressedPageScheduler`] submits them as one request, decompresses them
//! into memory, and runs the page's encoding tree against those bytes. This trades random
//! access for size; the lightweight encodings keep it, which is why they are the default.

use std::ops::Range;
use std::sync::Arc;

use arrow_buffer::Buffer;
use bytes::Bytes;
use futures::future::BoxFuture;

use super::physical::{PageContext, page_scheduler};
use super::{PageLoad, PageScheduler, limits};
use crate::error::{Error, Result, bail, ensure};
use crate::format::HEADER_LEN;
use crate::format::proto::{BufferLocation, Compression, PageMetadata};
use crate::io::{EncodingsIo, IndirectHint, IoFuture, IoRequest, PageIo, Priority};

/// Compresses `buffers` with `codec` (at `level` for Zstandard). Returns `None` when that does
/// not make the page smaller, which then stays uncompressed.
///
/// # Errors
/// [`Error::Internal`] if the compressor fails.
pub fn compress_buffers(buffers: &[Buffer], codec: Compression, level: i32) -> Result<Option<Vec<Buffer>>> {
    let mut out = Vec::with_capacity(buffers.len());
    for buffer in buffers {
        let compressed = match codec {
            Compression::None => return Ok(None),
            Compression::Lz4 => lz4_flex::block::compress(buffer.as_slice()),
            Compression::Zstd => zstd::bulk::compress(buffer.as_slice(), level)
                .map_err(|e| Error::internal(format!("zstd compression failed: {e}")))?,
        };
        out.push(Buffer::from_vec(compressed));
    }
    let before: usize = buffers.iter().map(|b| b.len()).sum();
    let after: usize = out.iter().map(|b| b.len()).sum();
    Ok((after < before).then_some(out))
}

/// The largest decompressed size a buffer of `size` compressed bytes can have, so that a
/// damaged size is refused before anything is allocated for it. These are the formats' own
/// limits, which real data may reach (a page of zeros): an LZ4 byte yields at most 255 bytes
/// (a match length byte), a Zstandard block of 128 KiB takes at least 4 bytes (a run-length
/// block). Zstandard frames are decompressed as a stream, so that memory follows the bytes
/// actually produced rather than the size claimed.
fn max_decompressed(codec: Compression, size: u64) -> u64 {
    match codec {
        Compression::None => size,
        Compression::Lz4 => size.saturating_mul(255).saturating_add(1 << 10),
        Compression::Zstd => size.saturating_mul(32 * 1024).saturating_add(1 << 20),
    }
}

/// Decompresses a Zstandard frame of `expected` bytes, growing the output as it is produced
/// (one byte more than expected is asked for, to tell a longer frame).
fn zstd_decompress(bytes: &[u8], expected: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let corrupt = |e: std::io::Error| Error::corrupt(format!("a zstd page does not decompress: {e}"));
    let decoder = zstd::stream::read::Decoder::with_buffer(bytes).map_err(corrupt)?;
    let mut out = Vec::with_capacity(expected.min(bytes.len().saturating_mul(8)));
    decoder.take(expected as u64 + 1).read_to_end(&mut out).map_err(corrupt)?;
    Ok(out)
}

/// Reads a compressed page whole, then schedules its rows from memory.
///
/// Everything the metadata says is checked before a byte is decompressed: the buffers lie in
/// the data region and do not overlap (so the bytes decompressed are bounded by the bytes in
/// the file, times the codec's own ratio limit), each claims no more than its codec can produce
/// from its size, and the page's encoding tree is valid against the claimed decompressed sizes.
#[derive(Debug)]
pub struct CompressedPageScheduler {
    page: PageMetadata,
    codec: Compression,
    /// The page's encoding tree over its decompressed buffers, laid out one after the other
    /// from a virtual offset of `HEADER_LEN`.
    inner: Arc<dyn PageScheduler>,
}

impl CompressedPageScheduler {
    /// The scheduler of a compressed `page`.
    pub fn try_new(page: &PageMetadata, data_end: u64) -> Result<Self> {
        let codec = Compression::try_from(page.compression)
            .map_err(|_| Error::unsupported(format!("page compression codec {}", page.compression)))?;
        let context = PageContext { buffers: &page.buffers, num_rows: page.num_rows, data_end };
        let mut stored: Vec<Range<u64>> = Vec::with_capacity(page.buffers.len());
        let mut virtual_buffers = Vec::with_capacity(page.buffers.len());
        let mut virtual_end = HEADER_LEN;
        for (index, buffer) in page.buffers.iter().enumerate() {
            context.buffer(index as u32, None, "compressed")?;
            ensure!(
                buffer.uncompressed_size <= max_decompressed(codec, buffer.size),
                corrupt,
                "compressed buffer of {} bytes claims {} bytes decompressed",
                buffer.size,
                buffer.uncompressed_size
            );
            stored.push(buffer.offset..buffer.offset + buffer.size);
            virtual_buffers.push(BufferLocation {
                offset: virtual_end,
                size: buffer.uncompressed_size,
                uncompressed_size: 0,
                // The stored bytes were checked when read; decompressed ones have no checksum.
                crc32: None,
            });
            virtual_end = virtual_end
                .checked_add(buffer.uncompressed_size)
                .ok_or_else(|| Error::corrupt("a compressed page's decompressed size overflows"))?;
        }
        stored.sort_by_key(|r| (r.start, r.end));
        ensure!(
            stored.windows(2).all(|pair| pair[0].end <= pair[1].start),
            corrupt,
            "the buffers of a compressed page overlap"
        );
        let decompressed = PageContext { buffers: &virtual_buffers, num_rows: page.num_rows, data_end: virtual_end };
        let inner = Arc::from(page_scheduler(page.encoding.as_ref(), &decompressed)?);
        Ok(Self { page: page.clone(), codec, inner })
    }
}

impl PageScheduler for CompressedPageScheduler {
    fn num_rows(&self) -> u64 {
        self.page.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let loaded = io.submit(self.page.buffers.iter().map(|b| b.offset..b.offset + b.size).collect());
        let (page, codec, ranges, inner) = (self.page.clone(), self.codec, ranges.to_vec(), self.inner.clone());
        let holder = io.holder().clone();
        Box::pin(async move {
            let compressed = loaded.await?;
            let total: u64 = page.buffers.iter().map(|b| b.uncompressed_size).sum();
            let mut blob = limits::try_vec::<u8>(
                usize::try_from(total).map_err(|_| Error::corrupt("a compressed page is too large"))?,
                "a decompressed page",
            )?;
            for (stored, bytes) in page.buffers.iter().zip(&compressed) {
                let expected = stored.uncompressed_size as usize;
                let plain = match codec {
                    Compression::None => bytes.to_vec(),
                    Compression::Lz4 => lz4_flex::block::decompress(bytes, expected)
                        .map_err(|e| Error::corrupt(format!("an LZ4 page does not decompress: {e}")))?,
                    Compression::Zstd => zstd_decompress(bytes, expected)?,
                };
                ensure!(
                    plain.len() == expected,
                    corrupt,
                    "a page decompresses to {} bytes, not {expected}",
                    plain.len()
                );
                blob.extend_from_slice(&plain);
            }
            let blob = Bytes::from(blob);
            // The decompressed page counts in the I/O buffer for as long as the page is used,
            // on top of its compressed bytes (kept alive with it).
            holder.grow(blob.len() as u64);
            let memory: Arc<dyn EncodingsIo> = Arc::new(MemoryIo { blob });
            let page_io = PageIo::new(memory, Priority(0), 0);
            let load = inner.schedule_ranges(&ranges, &page_io);
            page_io.finish();
            load.await
        })
    }
}

/// Serves reads from decompressed bytes at once (offsets are virtual, from `HEADER_LEN`).
struct MemoryIo {
    blob: Bytes,
}

impl EncodingsIo for MemoryIo {
    fn submit(&self, request: IoRequest) -> IoFuture {
        let result = request
            .ranges
            .iter()
            .map(|r| {
                let (start, end) =
                    (r.start.saturating_sub(HEADER_LEN) as usize, r.end.saturating_sub(HEADER_LEN) as usize);
                if r.start < HEADER_LEN || start > end || end > self.blob.len() {
                    bail!(corrupt, "a read of bytes {r:?} past a decompressed page");
                }
                Ok(self.blob.slice(start..end))
            })
            .collect::<Result<Vec<_>>>()
            .and_then(|buffers| match &request.checks {
                Some(checks) => checks.verify(&request.ranges, &buffers).map(|()| buffers),
                None => Ok(buffers),
            });
        Box::pin(futures::future::ready(result))
    }

    fn spawn_indirect(&self, _hint: IndirectHint, step: BoxFuture<'static, ()>) {
        tokio::spawn(step);
    }
}
