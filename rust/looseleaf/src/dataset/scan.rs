//! A read of a [`Dataset`] (`ReadBuilder<Dataset>`, the description every read shares): one
//! stream across its files, a `take` by dataset row numbers, a count, a plan. Rows are numbered
//! across the files, in order: a row range or selection reads, of each file, the rows it holds.
//!
//! # Files read at once, within one budget
//! A stream reads its files in order and hands their batches out in that order, with up to
//! [`FILES_AHEAD`] files started at once: a file's read schedules and fetches its pages as soon
//! as it starts, so the next files' I/O overlaps the current file's decoding. Every file's read
//! counts its bytes against one [`IoBudget`] (the read's `io_budget`, else one of the read's
//! I/O buffer made for it): the files read ahead share one buffer, they do not get one each.
//!
//! # Partition columns
//! Each file's batches gain its partition values as constant columns. A filter is first folded
//! with each file's partition values (`pruning.rs`): files it rules out are never read, and
//! the rest are read with what is left of it, which names only their own columns.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array, new_null_array};
use arrow_schema::{Field, Schema, SchemaRef};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::reader::{Dataset, DatasetFile};
use crate::error::{Error, Result, bail};
use crate::filter::Predicate;
use crate::filter::partitions::{keeps_all, partition_residual, rules_out};
use crate::io::{IoBudget, IoPlan};
use crate::options::ReadOptions;
use crate::read::{ConsumerTrace, FileReader, FilteredPlan, ReadBuilder, ReadSource, ReadStats, RecordBatchStream};
use crate::selection::RowSelection;
use crate::trace::SpanKind;

/// Files a stream has started reading at once (see the module documentation).
pub const FILES_AHEAD: usize = 4;

/// The plan of a dataset read: each file's, or why it is not read.
#[derive(Debug, Clone)]
pub struct DatasetPlan {
    /// Per file, in order: its location and its plan, `None` if the filter rules it out by its
    /// partition values.
    pub files: Vec<(String, Option<FilePlan>)>,
}

/// The plan of one file's read.
#[derive(Debug, Clone)]
pub enum FilePlan {
    /// An unfiltered read: every request.
    Read(IoPlan),
    /// A filtered read: its stages 1 and 2 (stage 3 depends on what matches).
    Filtered(FilteredPlan),
}

/// Where an output column comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A column of the file's batches, by position.
    File(usize),
    /// A partition column, by position among them.
    Partition(usize),
}

/// What each file is read for.
#[derive(Debug, Clone)]
struct Projection {
    /// The file columns read (`None`: all of them).
    file_columns: Option<Vec<String>>,
    /// The output columns.
    sources: Vec<Source>,
    schema: SchemaRef,
}

/// What a dataset read reads of one file: the file, what is left of the filter for it (`None`:
/// no filter left, every row), and its rows (`None`: all of them; else in the file's numbering).
struct FileTask {
    index: usize,
    residual: Option<Predicate>,
    rows: Option<RowSelection>,
}

impl ReadBuilder<Dataset> {
    fn dataset(&self) -> &Dataset {
        &self.source
    }

    /// The files the read reads, in order: files the filter rules out by their partition values
    /// and files holding none of the rows asked for are left out.
    fn files(&self) -> Result<Vec<FileTask>> {
        let dataset = self.dataset();
        let partitions = dataset.partitioning().fields();
        let selection = match self.rows.is_all() {
            true => None,
            false => Some(self.rows.selection(dataset.num_rows()).map_err(|e| e.with_location(dataset.name()))?),
        };
        let mut out = Vec::new();
        for (index, file) in dataset.files().iter().enumerate() {
            let rows = match &selection {
                None => None,
                Some(selection) => {
                    let span = file.first_row..file.first_row + file.reader.num_rows();
                    let local = selection.within(span);
                    if local.is_empty() {
                        continue;
                    }
                    Some(RowSelection::from_sorted_ranges(local))
                }
            };
            let residual = match &self.filter {
                None => None,
                Some(filter) => {
                    let residual = partition_residual(filter, partitions, &file.partition_values)
                        .map_err(|e| e.with_location(dataset.name()))?;
                    if rules_out(&residual) {
                        continue;
                    }
                    (!keeps_all(&residual)).then_some(residual)
                }
            };
            out.push(FileTask { index, residual, rows });
        }
        Ok(out)
    }

    async fn projection(&self) -> Result<Projection> {
        let dataset = self.dataset();
        let partitions = dataset.partitioning().fields();
        let file_fields = dataset.file_schema().fields();
        let Some(columns) = &self.columns else {
            let sources =
                (0..file_fields.len()).map(Source::File).chain((0..partitions.len()).map(Source::Partition)).collect();
            return Ok(Projection { file_columns: None, sources, schema: dataset.schema().clone() });
        };
        let mut file_columns = Vec::new();
        let mut sources = Vec::new();
        for name in columns {
            match partitions.find(name) {
                Some((index, _)) => sources.push(Source::Partition(index)),
                None => {
                    sources.push(Source::File(file_columns.len()));
                    file_columns.push(name.clone());
                }
            }
        }
        // The file read's own schema (nested paths give the fields they select).
        let file_schema = match dataset.files().first() {
            Some(first) => {
                let read = first.reader.read().with_columns(file_columns.clone());
                read.output_fields().await.map_err(|e| e.with_location(dataset.name()))?.1
            }
            None => Arc::new(
                dataset.file_schema().project(
                    &file_columns
                        .iter()
                        .map(|c| dataset.file_schema().index_of(c))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|_| {
                            Error::invalid_argument(format!("{}: unknown column in {columns:?}", dataset.name()))
                        })?,
                )?,
            ),
        };
        if file_schema.fields().len() != file_columns.len() {
            // Paths into one struct read as one field: partition columns go last.
            let file_count = file_schema.fields().len();
            sources = (0..file_count)
                .map(Source::File)
                .chain(sources.iter().filter(|s| matches!(s, Source::Partition(_))).copied())
                .collect();
        }
        let fields: Vec<Arc<Field>> = sources
            .iter()
            .map(|source| match source {
                Source::File(i) => file_schema.fields()[*i].clone(),
                Source::Partition(i) => partitions[*i].clone(),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, dataset.schema().metadata().clone()));
        Ok(Projection { file_columns: Some(file_columns), sources, schema })
    }

    /// The read of one file: `projection`'s columns (plus, when it reads none of the file's,
    /// the first column the filter reads, dropped from the output), with `residual`, over
    /// `rows` (all if `None`), with the read's options, I/O settings and trace.
    fn file_read(
        &self,
        file: &DatasetFile,
        projection: &Projection,
        residual: Option<&Predicate>,
        rows: Option<&RowSelection>,
    ) -> ReadBuilder<FileReader> {
        let mut read = file.reader.read().with_options(self.options.clone()).with_trace_option(self.trace.clone());
        if let Some(io) = self.io {
            read = read.with_io_options(io);
        }
        let mut columns = projection.file_columns.clone();
        if let (Some(columns), Some(residual)) = (columns.as_mut(), residual)
            && columns.is_empty()
            && let Some(first) = residual.columns().first().and_then(|path| path.first())
        {
            columns.push(first.clone());
        }
        if let Some(columns) = columns {
            read = read.with_columns(columns);
        }
        if let Some(residual) = residual {
            read = read.with_filter(residual.clone());
        }
        if let Some(rows) = rows {
            read = read.with_selection(rows.clone());
        }
        read
    }

    /// The read with its options over the dataset's, and its files sharing one budget: the
    /// read's `io_budget`, else one of the read's I/O buffer made for it.
    fn with_shared_budget(&self) -> (Self, IoBudget) {
        let options = self.options.or(&self.dataset().options().read);
        let budget = options.shared_budget().unwrap_or_else(|| {
            let defaults = self.dataset().files().first().map(|f| f.reader.io_defaults()).unwrap_or_default();
            IoBudget::new(options.io_options(self.io.unwrap_or(defaults)).buffer, None)
        });
        let read = self.clone().with_options(ReadOptions { io_budget: Some(budget.clone()), ..self.options.clone() });
        (read, budget)
    }

    /// Starts the read: the files' batches in order, with their partition columns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown column, rows out of range or a filter that does
    /// not bind; errors of the files' reads (in the stream), each naming its file.
    pub async fn stream(self) -> Result<RecordBatchStream> {
        let projection = Arc::new(self.projection().await?);
        let files = self.files()?;
        let (read, budget) = self.with_shared_budget();
        let options = read.options.or(&read.dataset().options().read);
        let batch_size = options.batch_size.unwrap_or(options.default_batch_size());
        let stats = ReadStats::of_shared(budget);
        let read = Arc::new(read);
        let started = {
            let (stats, projection) = (stats.clone(), projection.clone());
            futures::stream::iter(files).map(move |task| {
                let (read, stats, projection) = (read.clone(), stats.clone(), projection.clone());
                async move { read.file_stream(task, &projection, batch_size, &stats).await }
            })
        };
        let batches = started.buffered(FILES_AHEAD).try_flatten().boxed();
        let mut stream = RecordBatchStream::new(projection.schema.clone(), batches, stats);
        stream.consumer = self.trace.clone().map(ConsumerTrace::new);
        Ok(stream)
    }

    /// One file's batches, with its partition columns.
    async fn file_stream(
        &self,
        task: FileTask,
        projection: &Projection,
        batch_size: NonZeroUsize,
        stats: &ReadStats,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let file = self.dataset().files()[task.index].clone();
        let location = file.reader.location().to_string();
        let mut constants = Constants::new(&file, projection.schema.clone(), projection.sources.clone());
        let reads_file = projection.file_columns.as_ref().is_none_or(|c| !c.is_empty()) || task.residual.is_some();
        if !reads_file {
            // Only partition columns: the rows' count is all there is to read.
            let rows = task.rows.as_ref().map_or(file.reader.num_rows(), RowSelection::num_rows);
            let step = batch_size.get() as u64;
            let batches = (0..rows.div_ceil(step)).map(move |i| {
                let len = (rows - i * step).min(step) as usize;
                constants.batch(None, len)
            });
            return Ok(futures::stream::iter(batches).boxed());
        }
        let read = self.file_read(&file, projection, task.residual.as_ref(), task.rows.as_ref());
        let stream = read.stream_part().await?;
        stats.add(&stream.stats());
        Ok(stream
            .map(move |batch| {
                let batch = batch?;
                let len = batch.num_rows();
                constants.batch(Some(&batch), len).map_err(|e| e.with_location(&location))
            })
            .boxed())
    }

    /// The rows at dataset row numbers `indices` (any order, repeats allowed), in that order;
    /// with a filter, those of them it keeps, still in that order. The read's own rows (a
    /// range or selection) play no part: the indices are the rows.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a row number past the end, an unknown column or a filter
    /// that does not bind; errors of the files' reads, each naming its file.
    pub async fn take(self, indices: &[u64]) -> Result<RecordBatch> {
        let traced = self.trace.clone().map(|trace| {
            let start = trace.now();
            (trace, start)
        });
        let batch = self.take_rows(indices).await?;
        if let Some((trace, start)) = traced {
            let (rows, bytes) = (batch.num_rows() as u64, batch.get_array_memory_size() as u64);
            trace.span(SpanKind::Batch { index: 0, rows, bytes }, start);
        }
        Ok(batch)
    }

    async fn take_rows(self, indices: &[u64]) -> Result<RecordBatch> {
        let dataset = self.dataset().clone();
        let projection = self.projection().await?;
        let types = projection.schema.fields().iter().map(|f| f.data_type());
        crate::encodings::limits::check_result_fits(indices.len() as u64, types, "a take")
            .map_err(|e| e.with_location(dataset.name()))?;
        let filter_projection = match (&self.filter, &self.columns) {
            // Read the filter's columns too, evaluate it on the rows, then project.
            (Some(filter), Some(columns)) => {
                let mut reading = columns.clone();
                for path in filter.columns() {
                    if let Some(name) = path.first().filter(|name| !reading.contains(name)) {
                        reading.push(name.clone());
                    }
                }
                Some(self.clone().with_columns(reading).projection().await?)
            }
            _ => None,
        };
        let reading = filter_projection.as_ref().unwrap_or(&projection);
        // Per file: its rows, and where each goes in the output.
        let mut per_file: HashMap<usize, (Vec<u64>, Vec<u64>)> = HashMap::new();
        for (position, &row) in indices.iter().enumerate() {
            let (file, local) = dataset.locate(row).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "{}: row {row} is out of range (the dataset has {} rows)",
                    dataset.name(),
                    dataset.num_rows()
                ))
            })?;
            let entry = per_file.entry(file).or_default();
            entry.0.push(local);
            entry.1.push(position as u64);
        }
        let mut order: Vec<usize> = per_file.keys().copied().collect();
        order.sort_unstable();
        let (read, _) = self.with_shared_budget();
        let read = Arc::new(read);
        let reading = Arc::new(reading.clone());
        let reads: Vec<_> = order
            .iter()
            .map(|&index| {
                let (read, reading, rows) = (read.clone(), reading.clone(), per_file[&index].0.clone());
                async move {
                    let file = &read.dataset().files()[index];
                    let mut constants = Constants::new(file, reading.schema.clone(), reading.sources.clone());
                    if reading.file_columns.as_ref().is_some_and(|c| c.is_empty()) {
                        return constants.batch(None, rows.len());
                    }
                    let batch = read.file_read(file, &reading, None, None).take_part(&rows).await?;
                    let len = batch.num_rows();
                    constants.batch(Some(&batch), len).map_err(|e| e.with_location(file.reader.location()))
                }
            })
            .collect();
        let reads = futures::stream::iter(reads).buffered(FILES_AHEAD).try_collect::<Vec<RecordBatch>>().await?;
        // Put the rows back in the order asked for.
        let mut positions = vec![0u64; indices.len()];
        let mut row = 0u64;
        for index in &order {
            for &position in &per_file[index].1 {
                positions[position as usize] = row;
                row += 1;
            }
        }
        let all = arrow_select::concat::concat_batches(&reading.schema, &reads)?;
        let mut taken = arrow_select::take::take_record_batch(&all, &UInt64Array::from(positions))?;
        if let Some(filter) = &self.filter {
            let bound = crate::filter::BoundPredicate::bind(filter, taken.schema().fields())
                .map_err(|e| e.with_location(dataset.name()))?;
            let columns: HashMap<usize, &ArrayRef> = taken.columns().iter().enumerate().collect();
            let keep = crate::filter::evaluate::evaluate(&bound, &columns, taken.num_rows())?;
            taken = arrow_select::filter::filter_record_batch(&taken, &arrow_array::BooleanArray::new(keep, None))?;
            let names: Vec<usize> = projection
                .schema
                .fields()
                .iter()
                .map(|f| taken.schema().index_of(f.name()))
                .collect::<std::result::Result<_, _>>()?;
            taken = taken.project(&names)?;
        }
        Ok(taken)
    }

    /// Refuses the read if its whole result cannot fit in the memory the process can still get
    /// (see [`ReadBuilder::<FileReader>::check_result_fits`]); a filtered read is not weighed.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] naming the dataset, the rows and the bytes.
    pub async fn check_result_fits(&self) -> Result<()> {
        if self.filter.is_some() {
            return Ok(());
        }
        let name = self.dataset().name();
        let rows = self.rows.selection(self.dataset().num_rows()).map_err(|e| e.with_location(name))?.num_rows();
        let schema = self.projection().await?.schema;
        let types = schema.fields().iter().map(|f| f.data_type());
        crate::encodings::limits::check_result_fits(rows, types, "a read").map_err(|e| e.with_location(name))
    }

    /// The number of rows the read returns.
    ///
    /// Without a filter, from the files' metadata and the rows asked for alone; with one, files
    /// it rules out by their partition values are not read, and the others read only the
    /// filter's columns.
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn count_rows(self) -> Result<u64> {
        let files = self.files()?;
        let counting = self.clone().with_columns(Vec::new());
        let projection = counting.projection().await?;
        let (counting, projection) = (Arc::new(counting), Arc::new(projection));
        let counts: Vec<_> = files
            .into_iter()
            .map(|task| {
                let (counting, projection) = (counting.clone(), projection.clone());
                async move {
                    let file = &counting.dataset().files()[task.index];
                    let Some(residual) = &task.residual else {
                        return Ok(task.rows.as_ref().map_or(file.reader.num_rows(), RowSelection::num_rows));
                    };
                    let read = counting.file_read(file, &projection, Some(residual), task.rows.as_ref());
                    let mut stream = read.stream_part().await?;
                    let mut rows = 0u64;
                    while let Some(batch) = stream.next().await {
                        rows += batch?.num_rows() as u64;
                    }
                    Ok::<_, Error>(rows)
                }
            })
            .collect();
        let counts = futures::stream::iter(counts).buffered(FILES_AHEAD).try_collect::<Vec<u64>>().await?;
        Ok(counts.into_iter().sum())
    }

    /// The I/O the read would make, per file, without reading any data.
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn plan(self) -> Result<DatasetPlan> {
        let projection = self.projection().await?;
        let mut reading: HashMap<usize, FileTask> = self.files()?.into_iter().map(|t| (t.index, t)).collect();
        let mut files = Vec::with_capacity(self.dataset().files().len());
        for (index, file) in self.dataset().files().iter().enumerate() {
            let location = file.reader.location().to_string();
            let Some(task) = reading.remove(&index) else {
                files.push((location, None));
                continue;
            };
            let read = self.file_read(file, &projection, task.residual.as_ref(), task.rows.as_ref());
            let plan = match task.residual {
                Some(_) => FilePlan::Filtered(read.filter_plan().await?),
                None => FilePlan::Read(read.plan().await?),
            };
            files.push((location, Some(plan)));
        }
        Ok(DatasetPlan { files })
    }
}

impl ReadSource for Dataset {
    fn num_rows(&self) -> u64 {
        Dataset::num_rows(self)
    }

    async fn stream(read: ReadBuilder<Self>) -> Result<RecordBatchStream> {
        read.stream().await
    }

    async fn take(read: ReadBuilder<Self>, indices: Vec<u64>) -> Result<RecordBatch> {
        read.take(&indices).await
    }

    async fn count_rows(read: ReadBuilder<Self>) -> Result<u64> {
        read.count_rows().await
    }

    async fn check_result_fits(read: &ReadBuilder<Self>) -> Result<()> {
        read.check_result_fits().await
    }
}

/// A file's partition values as columns of its batches.
struct Constants {
    values: Vec<ArrayRef>,
    /// Each value repeated for the longest batch so far: batches take slices of it (no copy
    /// per batch; strings would otherwise be copied batch after batch).
    repeated: Vec<ArrayRef>,
    schema: SchemaRef,
    sources: Vec<Source>,
}

impl Constants {
    fn new(file: &DatasetFile, schema: SchemaRef, sources: Vec<Source>) -> Self {
        Self { values: file.partition_values.clone(), repeated: Vec::new(), schema, sources }
    }

    /// The output batch of `len` rows: `batch`'s columns and the partition values.
    fn batch(&mut self, batch: Option<&RecordBatch>, len: usize) -> Result<RecordBatch> {
        if self.repeated.first().is_none_or(|r| r.len() < len) {
            self.repeated = self.values.iter().map(|value| repeat(value, len)).collect::<Result<_>>()?;
        }
        let mut columns = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            columns.push(match source {
                Source::File(i) => match batch.and_then(|b| b.columns().get(*i)) {
                    Some(column) => column.clone(),
                    None => bail!(internal, "a file batch lacks column {i}"),
                },
                Source::Partition(i) => self.repeated[*i].slice(0, len),
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?)
    }
}

/// The one-element array `value` repeated `len` times.
fn repeat(value: &ArrayRef, len: usize) -> Result<ArrayRef> {
    if value.is_null(0) {
        return Ok(new_null_array(value.data_type(), len));
    }
    let zeros = UInt64Array::from(vec![0u64; len]);
    Ok(arrow_select::take::take(value.as_ref(), &zeros, None)?)
}
