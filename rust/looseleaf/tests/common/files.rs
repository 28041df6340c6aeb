//! Test files on disk: writing tables with the writer ([`write_file`] and its variants), waiting
//! for a directory to settle, and evicting a file from the page cache for cold reads.

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use looseleaf::{FileWriter, FinishedFile, WriterOptions};

/// Writes `batches` to `path` with the given page size.
pub async fn write_file(path: &Path, schema: &SchemaRef, batches: &[RecordBatch], page_size: u64) -> FinishedFile {
    write_file_with(path, schema, batches, WriterOptions::default().with_page_size(page_size)).await
}

/// Writes `batches` with plain values only, for tests that reason about the byte layout.
pub async fn write_file_plain(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    page_size: u64,
) -> FinishedFile {
    let options = WriterOptions::default()
        .with_page_size(page_size)
        .with_default_encoding_policy(looseleaf::EncodingPolicy::plain_only());
    write_file_with(path, schema, batches, options).await
}

/// Writes `batches` with `options`.
pub async fn write_file_with(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) -> FinishedFile {
    let mut writer = FileWriter::create_path(path, schema.clone(), options).await.unwrap();
    for batch in batches {
        writer.write(batch).await.unwrap();
    }
    writer.finish().await.unwrap()
}

/// Names of the entries of `dir`, waiting up to five seconds for them to become `expected`
/// (the local store deletes an abandoned upload's staging file on a background thread).
pub async fn wait_for_entries(dir: &Path, expected: &[&str]) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        if names == expected || tokio::time::Instant::now() > deadline {
            return names;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Drops `path` from the page cache where the system allows it (not on tmpfs, say), so that
/// the next read of it is cold.
pub fn evict_from_page_cache(path: &std::path::Path) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: a valid descriptor; the advice changes no memory of this process.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}
