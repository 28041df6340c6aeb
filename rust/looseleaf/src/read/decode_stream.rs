//! The decode loop: [`DecodeBatchStream`] waits for the rows of each step of the read's
//! [`BatchPlan`], then hands out the task that decodes it; [`DecodeBatchStream::into_stream`]
//! runs those tasks in parallel and yields the batches in row order.
//!
//! # Invariants
//! - Batches come out in row order whatever the decode parallelism (`buffered`, not
//!   `buffer_unordered`). One step more than the decode parallelism is decoded at once
//!   ([`steps_in_flight`]): in-order output frees a slot only when the oldest step is consumed,
//!   so with exactly one step per thread a thread that finished early idled until then.
//! - All fields of a step wait together, so every page the step needs is taken out of the I/O
//!   buffer as soon as it is loaded: what makes the I/O scheduler's priority bypass sufficient.
//! - A step's pages fit in its share of the I/O buffer unless one row's pages do not (see
//!   [`BatchPlan`]); the steps of one output batch are put back together, so batches keep the
//!   size asked for whatever the steps.
//! - Batch size is unrelated to page size: a page is decoded in as many pieces as steps need.
//! - The last steps of a read (fewer left than decode threads: all of a `take`) start decoding
//!   each field as soon as its pages are loaded, on the runtime, while the step still waits for
//!   its other fields: decoding overlaps the rest of the I/O and reads a page while it is still
//!   in the CPU's cache. Earlier steps keep the threads busy without it.
//! - With a [`Trace`] ([`DecodeBatchStream::with_trace`]), each wait for a step's pages and each
//!   decode task is recorded; without one, no clock is read for it.

use std::num::NonZeroUsize;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, SchemaRef};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::task::JoinHandle;

use std::time::Instant;

use super::batch_plan::BatchPlan;
use super::field_decoder::{DecodeTask, FieldDecoder};
use super::metrics::ReadMetrics;
use crate::encodings::logical::dictionary::concat_dictionaries;
use crate::error::{Error, Result};
use crate::trace::{SpanKind, Trace};

/// The decode loop: waits for the rows of each step, then hands out the task that decodes it.
///
/// [`DecodeBatchStream::into_stream`] runs the tasks of up to [`steps_in_flight`] consecutive
/// steps at once on the runtime and yields their batches in row order.
pub struct DecodeBatchStream {
    schema: SchemaRef,
    fields: Vec<Box<dyn FieldDecoder>>,
    plan: BatchPlan,
    failed: bool,
    metrics: Arc<ReadMetrics>,
    /// Where waits and decode tasks are recorded, if the read is traced.
    trace: Option<Trace>,
    /// Steps handed out so far.
    steps: u64,
    /// Where fields of the last steps start decoding as soon as they are loaded, and the decode
    /// parallelism that makes a step one of the last (see the module documentation).
    eager: Option<(tokio::runtime::Handle, NonZeroUsize)>,
    /// If set, one bit per row of the plan: only the rows where it is set are decoded and
    /// returned (see [`DecodeBatchStream::with_selected`]).
    selected: Option<BooleanBuffer>,
    /// Rows of the plan handed out so far.
    rows_done: u64,
}

impl DecodeBatchStream {
    /// A stream of the rows of `plan`'s steps, of `schema`, from one decoder per field of
    /// `schema`.
    pub fn new(
        schema: SchemaRef,
        fields: Vec<Box<dyn FieldDecoder>>,
        plan: BatchPlan,
        metrics: Arc<ReadMetrics>,
    ) -> Self {
        Self {
            schema,
            fields,
            plan,
            failed: false,
            metrics,
            trace: None,
            steps: 0,
            eager: None,
            selected: None,
            rows_done: 0,
        }
    }

    /// Decodes and returns only the rows where `selected` (one bit per row of the plan, checked
    /// as the steps go) is set, if given: each step's batch holds its selected rows, and a
    /// field whose pages can decode selected rows alone decodes only those
    /// ([`FieldDecoder::next_selected`]). How a filtered read decodes its other columns only
    /// where the filter passed.
    pub fn with_selected(self, selected: Option<BooleanBuffer>) -> Self {
        Self { selected, ..self }
    }

    /// Records each wait for a step's pages and each decode task in `trace`, if given.
    pub fn with_trace(self, trace: Option<Trace>) -> Self {
        Self { trace, ..self }
    }

    /// A stream of `num_rows` rows in batches of `batch_size` rows (the last may be shorter),
    /// each one step.
    pub fn uniform(
        schema: SchemaRef,
        fields: Vec<Box<dyn FieldDecoder>>,
        num_rows: u64,
        batch_size: NonZeroUsize,
        metrics: Arc<ReadMetrics>,
    ) -> Self {
        Self::new(schema, fields, BatchPlan::uniform(num_rows, batch_size.get() as u64), metrics)
    }

    /// Waits until the rows of the next step are loaded and returns the task that decodes it,
    /// or `None` when all rows have been handed out (or after an error).
    pub async fn next_task(&mut self) -> Option<Result<BatchDecodeTask>> {
        if self.failed {
            return None;
        }
        let step = self.plan.next_step()?;
        let selected = match &self.selected {
            None => None,
            Some(bits) if self.rows_done + step.rows <= bits.len() as u64 => {
                Some(bits.slice(self.rows_done as usize, step.rows as usize))
            }
            Some(bits) => {
                self.failed = true;
                let message = format!("a selection of {} rows for a read of more", bits.len());
                return Some(Err(Error::internal(message)));
            }
        };
        self.rows_done += step.rows;
        // The rows the step's batch holds.
        let rows = selected.as_ref().map_or(step.rows, |bits| bits.count_set_bits() as u64);
        // All fields wait together, so that every page the step needs leaves the I/O budget
        // as soon as it is loaded (see `IoScheduler`: this is what makes the bypass sufficient).
        let started = Instant::now();
        let traced = self.trace.as_ref().map(|trace| (trace, trace.now()));
        let number = self.steps;
        self.steps += 1;
        let steps_left = self.plan.num_steps() + 1;
        let eager = self.eager.as_ref().filter(|(_, parallelism)| steps_left < parallelism.get() as u64);
        let result = match eager {
            None => {
                let waits = self.fields.iter_mut().map(|f| next_batch(f.as_mut(), step.rows, &selected));
                futures::future::try_join_all(waits).await.map(StepTasks::Deferred)
            }
            Some((runtime, _)) => {
                let starts = self.fields.iter_mut().map(|f| {
                    let wait = next_batch(f.as_mut(), step.rows, &selected);
                    let (runtime, metrics) = (runtime.clone(), self.metrics.clone());
                    let trace = self.trace.clone().map(|trace| (trace, number));
                    async move {
                        let task = wait.await?;
                        Ok(runtime.spawn(async move { decode_fields(vec![task], rows, &metrics, trace) }))
                    }
                });
                futures::future::try_join_all(starts).await.map(StepTasks::Started)
            }
        };
        self.metrics.add_waiting(started.elapsed());
        if let Some((trace, start)) = traced {
            trace.span(SpanKind::WaitForPages { step: number, rows: step.rows }, start);
        }
        match result {
            Ok(tasks) => Some(Ok(BatchDecodeTask {
                schema: self.schema.clone(),
                num_rows: rows,
                ends_batch: step.ends_batch,
                steps_left,
                tasks,
                metrics: self.metrics.clone(),
                trace: self.trace.clone().map(|trace| (trace, number)),
            })),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// The decoded steps, up to [`steps_in_flight`] of them at once on `runtime` (the last ones
    /// split by fields, see [`BatchDecodeTask::run_on`]), in order: each step's batch,
    /// and whether it completes an output batch.
    pub fn into_steps(
        self,
        parallelism: NonZeroUsize,
        runtime: tokio::runtime::Handle,
    ) -> BoxStream<'static, Result<(RecordBatch, bool)>> {
        let stream = Self { eager: Some((runtime.clone(), parallelism)), ..self };
        futures::stream::unfold(stream, |mut stream| async move { stream.next_task().await.map(|task| (task, stream)) })
            .map(move |task| {
                let runtime = runtime.clone();
                async move {
                    let task = task?;
                    let ends_batch = task.ends_batch;
                    let batch = task.run_on(&runtime, parallelism).await?;
                    Ok((batch, ends_batch))
                }
            })
            .buffered(steps_in_flight(parallelism))
            .boxed()
    }

    /// The batches, decoded by `parallelism` threads ([`steps_in_flight`] steps at once) on
    /// `runtime`, in order: the steps of each batch put back together.
    pub fn into_stream(
        self,
        parallelism: NonZeroUsize,
        runtime: tokio::runtime::Handle,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        let schema = self.schema.clone();
        let steps = self.into_steps(parallelism, runtime);
        futures::stream::unfold((steps, Vec::new()), move |(mut steps, mut pending)| {
            let schema = schema.clone();
            async move {
                loop {
                    let (batch, ends_batch) = match steps.next().await? {
                        Ok(step) => step,
                        Err(e) => return Some((Err(e), (steps, Vec::new()))),
                    };
                    if !ends_batch {
                        // Held until the batch's last step is decoded: copied, so that it does
                        // not keep the pages it was cut from alive meanwhile.
                        match compact(&batch) {
                            Ok(batch) => pending.push(batch),
                            Err(e) => return Some((Err(e), (steps, Vec::new()))),
                        }
                        continue;
                    }
                    if pending.is_empty() {
                        return Some((Ok(batch), (steps, pending)));
                    }
                    pending.push(batch);
                    let joined = concat_steps(&schema, &pending);
                    pending.clear();
                    return Some((joined, (steps, pending)));
                }
            }
        })
        .boxed()
    }
}

/// The task of `field`'s next `num_rows` rows, only those `selected` if given.
fn next_batch<'a>(
    field: &'a mut dyn FieldDecoder,
    num_rows: u64,
    selected: &Option<BooleanBuffer>,
) -> futures::future::BoxFuture<'a, Result<DecodeTask>> {
    match selected {
        Some(bits) => field.next_selected(num_rows, bits.clone()),
        None => field.next_batch(num_rows),
    }
}

/// How many consecutive steps a stream of `parallelism` decode threads decodes at once: one
/// more than the threads, so that a thread finishing its step before the oldest one is
/// consumed starts on the next (nested and string projections 3-6% faster than with one per
/// thread). A read's steps are sized so that this many, and the one waited for, fit in its
/// I/O buffer (see [`BatchPlan`]).
pub fn steps_in_flight(parallelism: NonZeroUsize) -> usize {
    parallelism.get().saturating_add(1)
}

/// `batch` with every column that holds much more memory than its rows copied into buffers of
/// its own. A decoded batch may share the memory of the pages it was cut from (a slice of a
/// page needs no copy); one that is kept while more pages are read (a step waiting for the
/// rest of its batch, the rows of a `take`) is copied, so that its pages are freed when their
/// reservation of the I/O buffer ends. Columns decoded into buffers of their own (bit-packed,
/// ALP-RD, FSST...) are kept as they are: copying them bought nothing and cost a pass over
/// fresh memory. (Dictionary values stay shared: a page's dictionary is small next to its
/// keys, and serves every step of the page.)
///
/// # Errors
/// Arrow's, which it has no reason to give for arrays the reader made.
pub fn compact(batch: &RecordBatch) -> Result<RecordBatch> {
    let to_copy: Vec<bool> = batch.columns().iter().map(|c| holds_more_than_its_rows(c.as_ref())).collect();
    if !to_copy.contains(&true) {
        return Ok(batch.clone());
    }
    let all = UInt32Array::from_iter_values(0..u32::try_from(batch.num_rows()).unwrap_or(u32::MAX));
    if all.len() < batch.num_rows() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(to_copy)
        .map(|(c, copy)| match copy {
            true => Ok(arrow_select::take::take(c.as_ref(), &all, None)?),
            false => Ok(c.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(batch.schema(), columns, &options)?)
}

/// Whether `array`'s buffers hold more than twice the memory its rows use (and 64 KiB more):
/// it is a slice of something larger, a page. Arrays of types whose rows Arrow cannot size
/// apart from their buffers (lists and maps count their whole children, views their whole
/// data buffers) are taken to.
fn holds_more_than_its_rows(array: &dyn Array) -> bool {
    if !sized_by_rows(array.data_type()) {
        return true;
    }
    let held = array.get_buffer_memory_size();
    match array.to_data().get_slice_memory_size() {
        Ok(used) => held > used.saturating_mul(2).saturating_add(64 * 1024),
        Err(_) => true,
    }
}

/// Whether Arrow's slice size of an array of type `kind` counts only the memory of its rows.
fn sized_by_rows(kind: &DataType) -> bool {
    match kind {
        DataType::Utf8View
        | DataType::BinaryView
        | DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::Map(..)
        | DataType::Union(..)
        | DataType::RunEndEncoded(..) => false,
        DataType::Struct(fields) => fields.iter().all(|f| sized_by_rows(f.data_type())),
        DataType::FixedSizeList(item, _) => sized_by_rows(item.data_type()),
        _ => true,
    }
}

/// Concatenates the steps of one read of `schema`: dictionary columns keep one copy of each
/// value their rows use (steps of different pages carry different dictionaries, and Arrow's
/// concatenation would keep all their values, past what the keys chosen for the read index).
///
/// # Errors
/// Arrow's, as for [`compact`].
pub fn concat_steps(schema: &SchemaRef, steps: &[RecordBatch]) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let arrays: Vec<ArrayRef> = steps.iter().map(|step| step.column(i).clone()).collect();
            match field.data_type() {
                DataType::Dictionary(..) if arrays.len() > 1 => concat_dictionaries(&arrays, field.data_type()),
                _ => {
                    let arrays: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                    match arrays.as_slice() {
                        [] => Ok(arrow_array::new_empty_array(field.data_type())),
                        _ => Ok(arrow_select::concat::concat(&arrays)?),
                    }
                }
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let rows = steps.iter().map(|s| s.num_rows()).sum();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema.clone(), columns, &options)?)
}

/// The fields of a step, in field order: to decode, or decoding on the runtime already.
enum StepTasks {
    Deferred(Vec<DecodeTask>),
    Started(Vec<JoinHandle<Result<Vec<ArrayRef>>>>),
}

/// Rows `rows` (each a step and a row within it) of `steps`, a read of `schema`, in that
/// order: gathered from the steps in one pass (`interleave`), not concatenated and then taken.
/// Dictionary columns are concatenated as by [`concat_steps`] and then taken, so that they
/// keep one copy of the values their rows use.
///
/// # Errors
/// Arrow's, as for [`compact`]; an internal error if a row is not in its step.
pub fn gather_rows(schema: &SchemaRef, steps: &[RecordBatch], rows: &[(usize, usize)]) -> Result<RecordBatch> {
    for (step, row) in rows {
        if steps.get(*step).is_none_or(|s| *row >= s.num_rows()) {
            return Err(Error::internal(format!("row {row} of step {step} was gathered but not read")));
        }
    }
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let arrays: Vec<ArrayRef> = steps.iter().map(|step| step.column(i).clone()).collect();
            match field.data_type() {
                _ if arrays.is_empty() => Ok(arrow_array::new_empty_array(field.data_type())),
                DataType::Dictionary(..) => {
                    let joined = match arrays.as_slice() {
                        [only] => only.clone(),
                        _ => concat_dictionaries(&arrays, field.data_type())?,
                    };
                    let mut starts = Vec::with_capacity(steps.len());
                    let mut start = 0u64;
                    for step in steps {
                        starts.push(start);
                        start += step.num_rows() as u64;
                    }
                    let positions: UInt64Array =
                        rows.iter().map(|(step, row)| starts[*step] + *row as u64).collect::<Vec<_>>().into();
                    Ok(arrow_select::take::take(joined.as_ref(), &positions, None)?)
                }
                _ => {
                    let arrays: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                    Ok(arrow_select::interleave::interleave(&arrays, rows)?)
                }
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(schema.clone(), columns, &options)?)
}

/// Decodes the fields of one step.
pub struct BatchDecodeTask {
    schema: SchemaRef,
    num_rows: u64,
    ends_batch: bool,
    /// Steps of the read from this one on, this one included.
    steps_left: u64,
    tasks: StepTasks,
    metrics: Arc<ReadMetrics>,
    /// The read's trace and the step's number, if the read is traced.
    trace: Option<(Trace, u64)>,
}

impl BatchDecodeTask {
    /// Runs the field tasks on `runtime` and assembles the step's batch: in one task if
    /// `parallelism` steps or more are left, else in up to `2 * parallelism` tasks of
    /// consecutive fields. Fields that started decoding as their pages arrived (the last steps
    /// of [`DecodeBatchStream::into_steps`]) are only awaited.
    ///
    /// A step's fields are independent, so a read of fewer steps than threads (a `take`, a
    /// small file, the last steps of a scan) still keeps every thread busy; more groups than
    /// threads even out fields of unequal cost. Steps are not split otherwise: they already
    /// keep the threads busy, and split ones measured 10% slower on lineitem scans.
    ///
    /// # Errors
    /// A field's decoding error, the first in field order; [`Error::Internal`] if a task panicked.
    pub async fn run_on(self, runtime: &tokio::runtime::Handle, parallelism: NonZeroUsize) -> Result<RecordBatch> {
        let Self { schema, num_rows, steps_left, tasks, metrics, trace, .. } = self;
        let groups = match tasks {
            StepTasks::Started(fields) => fields,
            StepTasks::Deferred(tasks) => {
                let num_fields = tasks.len();
                let groups = if steps_left < parallelism.get() as u64 { 2 * parallelism.get() } else { 1 };
                let per_group = num_fields.div_ceil(groups).max(1);
                let mut tasks = tasks.into_iter();
                let mut groups = Vec::with_capacity(num_fields.div_ceil(per_group));
                loop {
                    let group: Vec<DecodeTask> = tasks.by_ref().take(per_group).collect();
                    if group.is_empty() {
                        break;
                    }
                    let (metrics, trace) = (metrics.clone(), trace.clone());
                    groups.push(runtime.spawn(async move { decode_fields(group, num_rows, &metrics, trace) }));
                }
                groups
            }
        };
        let mut columns = Vec::with_capacity(schema.fields().len());
        for group in groups {
            let decoded = group.await.map_err(|e| Error::internal(format!("a decode task failed: {e}")))?;
            columns.extend(decoded?);
        }
        metrics.add_batch();
        assemble(schema, num_rows, columns)
    }
}

/// Runs `tasks` (fields of a step of `num_rows` rows) in order, recording the time in
/// `metrics` and, if traced, a decode span in the read's trace.
fn decode_fields(
    tasks: Vec<DecodeTask>,
    num_rows: u64,
    metrics: &ReadMetrics,
    trace: Option<(Trace, u64)>,
) -> Result<Vec<ArrayRef>> {
    let started = Instant::now();
    let traced = trace.map(|(trace, step)| {
        let start = trace.now();
        (trace, step, start)
    });
    let columns = tasks.into_iter().map(|task| task()).collect::<Result<Vec<_>>>();
    metrics.add_decoding(started.elapsed());
    if let Some((trace, step, start)) = traced {
        trace.span(SpanKind::Decode { step, rows: num_rows }, start);
    }
    columns
}

/// The batch of `schema` made of a step's decoded `columns`.
fn assemble(schema: SchemaRef, num_rows: u64, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(num_rows as usize));
    Ok(RecordBatch::try_new_with_options(schema, columns, &options)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, Int64Array, ListArray, StringArray, StructArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn step(schema: &SchemaRef, rows: std::ops::Range<i64>) -> RecordBatch {
        let ids = Int64Array::from_iter((rows.clone()).map(|i| (i % 7 != 3).then_some(i)));
        let names = StringArray::from_iter(rows.clone().map(|i| (i % 5 != 1).then(|| format!("name {i}"))));
        let tags: DictionaryArray<Int32Type> = rows.clone().map(|i| ["a", "b", "c"][(i % 3) as usize]).collect();
        let lists = ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(
            rows.clone().map(|i| (i % 4 != 0).then(move || (0..i % 3).map(move |j| Some(i * 10 + j)))),
        );
        let pair = StructArray::from(vec![
            (Arc::new(Field::new("x", DataType::Int64, true)), Arc::new(ids.clone()) as ArrayRef),
            (Arc::new(Field::new("s", DataType::Utf8, true)), Arc::new(names.clone()) as ArrayRef),
        ]);
        let columns: Vec<ArrayRef> =
            vec![Arc::new(ids), Arc::new(names), Arc::new(tags), Arc::new(lists), Arc::new(pair)];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    }

    fn schema() -> SchemaRef {
        let pair = DataType::Struct(
            vec![Field::new("x", DataType::Int64, true), Field::new("s", DataType::Utf8, true)].into(),
        );
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("tag", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), true),
            Field::new("list", DataType::new_list(DataType::Int64, true), true),
            Field::new("pair", pair, true),
        ]))
    }

    #[test]
    fn gathered_rows_are_the_rows_of_the_concatenated_steps_taken() {
        let schema = schema();
        let steps = vec![step(&schema, 0..40), step(&schema, 40..41), step(&schema, 41..100)];
        let starts = [0usize, 40, 41];
        let joined = concat_steps(&schema, &steps).unwrap();
        let mut state = 17u64;
        for len in [0usize, 1, 5, 100, 250] {
            let positions: Vec<usize> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 33) as usize % 100
                })
                .collect();
            let rows: Vec<(usize, usize)> = positions
                .iter()
                .map(|p| {
                    let step = starts.partition_point(|s| s <= p) - 1;
                    (step, p - starts[step])
                })
                .collect();
            let gathered = gather_rows(&schema, &steps, &rows).unwrap();
            let indices = UInt64Array::from_iter_values(positions.iter().map(|p| *p as u64));
            let expected = arrow_select::take::take_record_batch(&joined, &indices).unwrap();
            assert_eq!(gathered.num_rows(), len);
            for (got, want) in gathered.columns().iter().zip(expected.columns()) {
                // Dictionaries may differ in their values, not in what their rows say.
                let unpack = |a: &ArrayRef| match a.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
                    Some(d) => arrow_select::take::take(d.values().as_ref(), d.keys(), None).unwrap(),
                    None => a.clone(),
                };
                assert_eq!(&unpack(got), &unpack(want));
            }
        }
        assert!(gather_rows(&schema, &steps, &[(1, 1)]).is_err(), "step 1 has one row");
    }

    #[test]
    fn compact_copies_only_columns_cut_from_larger_buffers() {
        let schema = schema();
        let big = step(&schema, 0..100_000);
        let fresh = step(&schema, 0..1_000);
        let sliced = big.slice(500, 1_000);
        let compacted = compact(&sliced).unwrap();
        let kept = compact(&fresh).unwrap();
        for i in 0..schema.fields().len() {
            assert_eq!(compacted.column(i).as_ref(), sliced.column(i).as_ref());
            // Fresh columns are the same arrays (but lists, which Arrow cannot size by their
            // rows); slices of 100,000 rows hold their 1,000 rows only (the dictionary keeps
            // its three values).
            let pointers = |a: &ArrayRef| a.to_data().buffers().iter().map(|b| b.as_ptr()).collect::<Vec<_>>();
            if sized_by_rows(schema.field(i).data_type()) {
                assert_eq!(pointers(kept.column(i)), pointers(fresh.column(i)), "column {i} was copied");
            }
            let held = compacted.column(i).get_buffer_memory_size();
            assert!(held < sliced.column(i).get_buffer_memory_size() / 10, "column {i} holds {held} bytes");
        }
    }
}
