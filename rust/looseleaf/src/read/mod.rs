//! Reading: a [`FileReader`] opens a file, a [`ReadBuilder`] describes a read, and three loops
//! carry it out.
//!
//! ```text
//!  ReadBuilder::stream (read_builder.rs: the description; file_read.rs: the wiring)
//!    │ FieldScheduler::start per field ──▶ ColumnJobs            FieldPages ──▶ field_decoder
//!    ▼                                                                              │
//!  scheduling loop ──IoRequest (priority = top-level row)──▶ IoScheduler ──▶ storage
//!  (scheduling_loop.rs)                                      (io/scheduler.rs)      │
//!    │ ScheduledPage per page, through pages.rs (the seam)                          ▼
//!    └──────────────────────────────────────────────────────▶ DecodeBatchStream ──▶ RecordBatch
//!                                                            (decode_stream.rs)
//! ```
//!
//! - [`field_scheduler`]: one [`FieldScheduler`](field_scheduler::FieldScheduler) per field
//!   type, planning pages from metadata alone (the page schedulers of `encodings` plan the byte
//!   ranges of each page).
//! - [`scheduling_loop`]: loop 1, the column jobs' pages in top-level row order, never waiting.
//! - [`IoScheduler`](crate::io::IoScheduler): loop 2, reads by priority, bounded depth, the I/O
//!   buffer.
//! - [`decode_stream`]: loop 3, batches decoded in parallel, handed out in order.
//! - [`field_decoder`]: one decoder per field type, fed by its [`FieldPages`](pages::FieldPages).
//! - [`pages`]: what travels between the scheduling side and the decoding side.
//!
//! `docs/architecture.md` follows one page through all of them.

pub mod batch_plan;
pub mod decode_stream;
pub mod field_decoder;
pub mod field_scheduler;
mod file_read;
mod file_reader;
mod filtered_read;
pub mod metrics;
mod page_statistics;
pub mod pages;
mod projection;
mod read_builder;
mod record_batch_stream;
pub mod scheduling_loop;
mod summary;
mod take;
mod zone_maps;

pub use file_reader::FileReader;
pub use filtered_read::{FilterCounts, FilterStats, FilteredPlan};
pub use page_statistics::ColumnBounds;
pub use read_builder::{ReadBuilder, ReadSource};
pub(crate) use record_batch_stream::ConsumerTrace;
pub use record_batch_stream::{ReadStats, RecordBatchStream};

pub use summary::{ColumnSummary, FileMetadata, PageSummary};
