//! [`ReadBuilder`]: the one description of a read — which columns, which rows, which filter, how
//! (options), traced or not — for a file (`ReadBuilder<FileReader>`) and for a dataset
//! (`ReadBuilder<Dataset>`) alike, as arrow-rs's `ArrowReaderBuilder<T>` describes its sync and
//! async reads with one builder.
//!
//! Front ends (Python, the JVM, the command line) only translate what their users give into
//! this description; nothing is checked until the read starts. What a read then does is its
//! source's: a file read wires its three loops (`file_read.rs`, `take.rs`, `filtered_read.rs`),
//! a dataset read runs file reads (`dataset/scan.rs`). Every source has the same terminal
//! methods: `stream`, `take`, `count_rows` and `plan`.

use std::future::Future;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::BooleanBuffer;

use super::file_reader::FileReader;
use super::metrics::ReadMetrics;
use super::record_batch_stream::RecordBatchStream;
use crate::error::Result;
use crate::filter::Predicate;
use crate::filter::range_test::RangeTest;
use crate::io::{IoBudget, IoOptions, IoScheduler};
use crate::options::{OptionValue, ReadOptions};
use crate::selection::RowSelection;
use crate::trace::Trace;

/// Which rows a read wants, as given (checked against the source when the read starts).
#[derive(Debug, Clone, Default)]
pub(crate) enum Rows {
    #[default]
    All,
    Range(Range<u64>),
    Indices(Vec<u64>),
    Selection(RowSelection),
}

impl Rows {
    /// The rows as a selection of a source of `num_rows` rows.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the first row out of range.
    pub(crate) fn selection(&self, num_rows: u64) -> Result<RowSelection> {
        match self {
            Self::All => Ok(RowSelection::all(num_rows)),
            Self::Range(range) => RowSelection::try_range(range.clone(), num_rows),
            Self::Indices(indices) => RowSelection::try_from_indices(indices, num_rows),
            Self::Selection(selection) => {
                selection.check_bounds(num_rows)?;
                Ok(selection.clone())
            }
        }
    }

    /// Whether every row is wanted.
    pub(crate) fn is_all(&self) -> bool {
        matches!(self, Self::All)
    }
}

/// What a read can be made of: a file ([`FileReader`]) or a dataset
/// ([`Dataset`](crate::dataset::Dataset)). The terminal methods every source has, so that a
/// front end serves both with one code path; each forwards to the source's own method of the
/// same name on [`ReadBuilder`].
pub trait ReadSource: Clone + Send + Sync + Sized + 'static {
    /// Rows in the source.
    fn num_rows(&self) -> u64;

    /// The read's batches (see `ReadBuilder::stream`).
    fn stream(read: ReadBuilder<Self>) -> impl Future<Output = Result<RecordBatchStream>> + Send;

    /// The rows at `indices`, in that order (see `ReadBuilder::take`).
    fn take(read: ReadBuilder<Self>, indices: Vec<u64>) -> impl Future<Output = Result<RecordBatch>> + Send;

    /// The rows the read returns (see `ReadBuilder::count_rows`).
    fn count_rows(read: ReadBuilder<Self>) -> impl Future<Output = Result<u64>> + Send;

    /// Refuses a read whose whole result cannot fit in memory (see
    /// `ReadBuilder::check_result_fits`).
    fn check_result_fits(read: &ReadBuilder<Self>) -> impl Future<Output = Result<()>> + Send;
}

/// Describes a read of a file ([`FileReader::read`]) or of a dataset
/// ([`Dataset::read`](crate::dataset::Dataset::read)).
///
/// What is read: [`with_columns`](Self::with_columns), the rows
/// ([`with_row_range`](Self::with_row_range), [`with_indices`](Self::with_indices),
/// [`with_selection`](Self::with_selection); rows of a dataset are numbered across its files,
/// in order) and a [`with_filter`](Self::with_filter). How: [`ReadOptions`] (over the source's
/// own), or a whole [`IoOptions`] with [`with_io_options`](Self::with_io_options); traced or not
/// ([`with_trace`](Self::with_trace)). Nothing is checked until the read starts; every error
/// names the file (or the dataset).
#[derive(Clone)]
pub struct ReadBuilder<S = FileReader> {
    pub(crate) source: S,
    pub(crate) columns: Option<Vec<String>>,
    pub(crate) rows: Rows,
    pub(crate) options: ReadOptions,
    /// Replaces the storage's I/O settings (coalescing included) when set.
    pub(crate) io: Option<IoOptions>,
    /// Only the rows where this is true are returned.
    pub(crate) filter: Option<Predicate>,
    /// Where the read records its events, if it is traced.
    pub(crate) trace: Option<Trace>,
    /// The I/O scheduler a file read goes through when it is a part of a larger one (a filtered
    /// read's stages share one, and so its counters and buffer); a read of its own otherwise.
    /// Set only inside the crate, on file reads.
    pub(crate) io_scheduler: Option<IoScheduler>,
    /// The timings the read adds to: a filtered read's stages share its own (so that a filtered
    /// read reports its decoding time); a read's own otherwise. Set only inside the crate.
    pub(crate) metrics: Option<Arc<ReadMetrics>>,
    /// Top-level columns whose decimals of up to 18 digits are returned as `Decimal64`, never
    /// widened: a filtered read's filter columns, which its stages compare and filter so (and
    /// widen only where the read returns them). Set only inside the crate.
    pub(crate) decimal64: Vec<String>,
    /// Top-level columns returned as the result of a range test on their values (a boolean
    /// array, null where the value is null) instead of the values: a filtered read's filter
    /// columns that only a range test reads. Set only inside the crate.
    pub(crate) range_tests: Vec<(String, RangeTest)>,
    /// One bit per row of the read's selection: only the rows where it is set are decoded and
    /// returned (a filtered read's other columns, where its filter passed). Scans only. Set
    /// only inside the crate.
    pub(crate) selected_rows: Option<BooleanBuffer>,
}

impl<S> ReadBuilder<S> {
    /// A read of every row and column of `source`, with its default options.
    pub(crate) fn new(source: S) -> Self {
        Self {
            source,
            columns: None,
            rows: Rows::All,
            options: ReadOptions::default(),
            io: None,
            filter: None,
            trace: None,
            io_scheduler: None,
            metrics: None,
            decimal64: Vec::new(),
            range_tests: Vec::new(),
            selected_rows: None,
        }
    }

    /// What is read.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Reads only these columns, in this order: top-level names, or dotted paths into structs
    /// and list items (see `docs/format.md`, projections); a dataset's partition columns too.
    pub fn with_columns(self, columns: Vec<String>) -> Self {
        Self { columns: Some(columns), ..self }
    }

    /// Reads only the rows of `range` (an error at the start of the read if `range.start >
    /// range.end` or the range runs past the last row).
    pub fn with_row_range(self, range: Range<u64>) -> Self {
        Self { rows: Rows::Range(range), ..self }
    }

    /// Reads only the rows at `indices` (any order, repeats allowed), in ascending order, once
    /// each. `take` returns them in the order given.
    pub fn with_indices(self, indices: Vec<u64>) -> Self {
        Self { rows: Rows::Indices(indices), ..self }
    }

    /// Reads only the rows of `selection`.
    pub fn with_selection(self, selection: RowSelection) -> Self {
        Self { rows: Rows::Selection(selection), ..self }
    }

    /// Sets the options of this read (unset ones fall back on the source's).
    pub fn with_options(self, options: ReadOptions) -> Self {
        Self { options, ..self }
    }

    /// Sets the option called `name` (see [`ReadOptions::set`]), as front ends receive options.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the option.
    pub fn with_option(mut self, name: &str, value: OptionValue) -> Result<Self> {
        self.options.set(name, value)?;
        Ok(self)
    }

    /// Rows per output batch; see [`ReadOptions::batch_size`].
    pub fn with_batch_size(mut self, rows: NonZeroUsize) -> Self {
        self.options.batch_size = Some(rows);
        self
    }

    /// Returns these top-level columns (of flat types) as `DictionaryArray`s: dictionary-encoded
    /// pages keep their dictionary without materialising the values, other pages are
    /// dictionary-encoded as they are read. The keys are the narrowest of `Int8`, `Int16` and
    /// `Int32` that can index both the largest dictionary among the column's pages and a whole
    /// batch of distinct values, so they are known before the read. Columns written from
    /// dictionary arrays are returned as dictionaries anyway, with the keys they were written with.
    pub fn with_dictionary_columns(mut self, columns: Vec<String>) -> Self {
        self.options.dictionary_columns = Some(columns);
        self
    }

    /// Returns strings and binaries as `Utf8View`/`BinaryView`; see [`ReadOptions::string_view`].
    pub fn with_string_view(mut self, views: bool) -> Self {
        self.options.string_view = Some(views);
        self
    }

    /// Decode threads the read keeps busy (one batch more than this is decoded at once);
    /// default: the number of CPUs.
    pub fn with_decode_parallelism(mut self, parallelism: NonZeroUsize) -> Self {
        self.options.decode_parallelism = Some(parallelism);
        self
    }

    /// Replaces the storage's I/O settings (depth, buffer and coalescing) for this read; the
    /// options' `io_depth` and `io_buffer` still apply on top.
    pub fn with_io_options(self, io: IoOptions) -> Self {
        Self { io: Some(io), ..self }
    }

    /// Shares `budget` (bytes and reads in flight) with the other reads given it, on top of
    /// this read's own buffer and depth; see [`ReadOptions::io_budget`].
    pub fn with_io_budget(mut self, budget: IoBudget) -> Self {
        self.options.io_budget = Some(budget);
        self
    }

    /// Returns only the rows where `predicate` is true (see [`Predicate`]): rows are ruled out
    /// by zone statistics, then by the filter columns, before the other columns are read (see
    /// `read/filtered_read.rs`); a dataset's files are first ruled out by their partition
    /// values. With `take`, the rows at the indices that match.
    pub fn with_filter(self, predicate: Predicate) -> Self {
        Self { filter: Some(predicate), ..self }
    }

    /// Records the read in `trace`: its I/O requests and reads, its scheduling loop, its decode
    /// tasks and the batches it hands out (see [`Trace`]). Every kind of read is traced: scans,
    /// ranges, selections, `take` and filtered reads (all their stages, in one trace), of files
    /// and of datasets (every file's loops, in one trace). A read without a trace pays one
    /// `Option` check per event it would have recorded.
    pub fn with_trace(self, trace: Trace) -> Self {
        Self { trace: Some(trace), ..self }
    }

    /// Sets (or, with `None`, removes) the read's trace.
    pub(crate) fn with_trace_option(self, trace: Option<Trace>) -> Self {
        Self { trace, ..self }
    }

    /// The read's trace, if it is traced.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    /// Whether the read has a filter.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    /// The read's filter, if it has one.
    pub fn filter(&self) -> Option<&Predicate> {
        self.filter.as_ref()
    }

    /// The columns the read names (`None`: all of them).
    pub fn columns(&self) -> Option<&[String]> {
        self.columns.as_deref()
    }

    /// Reads through `io` instead of an I/O scheduler of its own.
    pub(crate) fn with_io_scheduler(self, io: IoScheduler) -> Self {
        Self { io_scheduler: Some(io), ..self }
    }

    /// Adds the read's timings to `metrics` (see the field `metrics`).
    pub(crate) fn with_metrics(self, metrics: Arc<ReadMetrics>) -> Self {
        Self { metrics: Some(metrics), ..self }
    }

    /// Returns the decimals of up to 18 digits of `columns` as `Decimal64` (see
    /// [`Self::decimal64`]).
    pub(crate) fn with_decimal64(self, columns: Vec<String>) -> Self {
        Self { decimal64: columns, ..self }
    }

    /// Returns each column of `tests` as its test's result (see [`Self::range_tests`]).
    pub(crate) fn with_range_tests(self, range_tests: Vec<(String, RangeTest)>) -> Self {
        Self { range_tests, ..self }
    }

    /// Decodes and returns only the rows of the selection where `selected` is set (see
    /// [`Self::selected_rows`]).
    pub(crate) fn with_selected_rows(self, selected: BooleanBuffer) -> Self {
        Self { selected_rows: Some(selected), ..self }
    }

    /// The range test a column is returned as, if any.
    pub(crate) fn range_test(&self, column: &str) -> Option<RangeTest> {
        self.range_tests.iter().find(|(name, _)| name == column).map(|(_, test)| *test)
    }

    /// The I/O settings the read was given in place of the storage's, if any.
    pub(crate) fn explicit_io_options(&self) -> Option<IoOptions> {
        self.io
    }
}
