//! looseleaf: a columnar file format without row groups, and a reader that separates
//! scheduling from decoding.
//!
//! A file holds one or more *columns* per field; each column is a sequence of *pages* sized in
//! bytes (8 MiB by default), independent of the other columns' pages. A footer at the end holds
//! the schema, and a fixed-width column table points at each column's page metadata, so a
//! reader decodes the metadata of the columns it reads and no others. The byte layout is in
//! [`format`](mod@format) and `docs/format.md`.
//!
//! Reading runs three loops (see [`read`] and `docs/architecture.md`):
//!
//! ```text
//!  scheduling loop ──requests (priority = top-level row)──▶ IoScheduler ──reads──▶ storage
//!   (FieldScheduler → ColumnJob → PageScheduler)              │ depth, I/O buffer, bypass
//!        │ scheduled pages                                     ▼
//!        └────────────────────────────────────────────▶ DecodeBatchStream ──▶ RecordBatch
//!                                                        (decode tasks in parallel, in order)
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`format`](mod@format) | the bytes on disk: tail, footer, column table, protobuf messages, schema ↔ columns |
//! | [`encodings`] | page layouts: physical encodings by algorithm, logical ones by Arrow type, page schedulers and decoders |
//! | [`io`] | the one I/O interface schedulers see, the [`IoScheduler`](io::IoScheduler), plans, storage |
//! | [`read`] | opening files, reads, the scheduling loop, field schedulers and decoders, the decode loop |
//! | `writer` | [`FileWriter`]: shredding, encoding choice, pages, the footer |
//! | `options` | [`ReadOptions`], [`ByteCount`], the defaults |
//! | [`storage`] | [`Location`]: paths and URLs to stores, [`StorageOptions`], store errors |
//!
//! # Writing and reading
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch, StringArray};
//! # use arrow_schema::{DataType, Field, Schema};
//! # use futures::TryStreamExt;
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> looseleaf::Result<()> {
//! use looseleaf::{FileReader, FileWriter, WriterOptions};
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("id", DataType::Int64, false),
//!     Field::new("name", DataType::Utf8, true),
//! ]));
//! let batch = RecordBatch::try_new(
//!     schema.clone(),
//!     vec![
//!         Arc::new(Int64Array::from(vec![1, 2, 3])),
//!         Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
//!     ],
//! )?;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("example.leaf");
//!
//! let mut writer = FileWriter::create_path(&path, schema, WriterOptions::default()).await?;
//! writer.write(&batch).await?;
//! writer.finish().await?;
//!
//! let reader = FileReader::open_path(&path).await?;
//! let batches: Vec<RecordBatch> = reader.read().with_row_range(1..3).stream().await?.try_collect().await?;
//! assert_eq!(batches[0], batch.slice(1, 2));
//! let taken = reader.take(&[2, 0, 2], Some(&["name".to_string()])).await?;
//! assert_eq!(taken.num_rows(), 3);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod aggregate;
pub mod dataset;
pub mod encodings;
mod error;
pub mod filter;
pub mod format;
pub mod io;
mod options;
pub mod read;
pub mod selection;
pub mod spark_form;
pub mod storage;
pub mod trace;
mod units;
mod writer;

pub use encodings::policy::{ColumnPolicies, EncodingKind, EncodingPolicy};
pub use encodings::statistics::StatValue;
pub use error::{Error, ErrorKind, IoErrorKind, Result, SourceError};
pub use format::proto::Compression;
pub use io::{IoBudget, IoOptions, IoPlan, IoStats};
pub use options::{
    DEFAULT_BATCH_BYTES, DEFAULT_BATCH_MAX_BYTES, DEFAULT_BATCH_SIZE, DEFAULT_DICTIONARY_BATCH_SIZE, OptionValue,
    READ_OPTION_NAMES, ReadOptions, read_option_name,
};
pub use read::metrics::ReadTimings;
pub use read::{
    ColumnBounds, ColumnSummary, FileMetadata, FileReader, PageSummary, ReadBuilder, ReadSource, ReadStats,
    RecordBatchStream,
};
pub use selection::RowSelection;
pub use storage::{Location, StorageOptions};
pub use trace::Trace;
pub use units::ByteCount;
pub use writer::{DEFAULT_PAGE_SIZE, FileWriter, FinishedFile, WriterOptions};
