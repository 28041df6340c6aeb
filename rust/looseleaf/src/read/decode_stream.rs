//! The decode loop: [`DecodeBatchStream`] waits for the rows of each step of the read's
//! [`BatchPlan`], then hands out the task that decodes it; [`DecodeBatchStream::into_stream`]
//! runs those tasks in parallel and yields the batches in row order.
//!
//! # Invariants
//! - Batches come out in row order whatever the decode parallelism (`buffered`, not
//!   `buffer_unordered`).
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

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
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
/// [`DecodeBatchStream::into_stream`] runs the tasks of up to `parallelism` consecutive steps
/// at once on the runtime and yields their batches in row order.
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
        Self { schema, fields, plan, failed: false, metrics, trace: None, steps: 0, eager: None }
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
                let waits = self.fields.iter_mut().map(|f| f.next_batch(step.rows));
                futures::future::try_join_all(waits).await.map(StepTasks::Deferred)
            }
            Some((runtime, _)) => {
                let starts = self.fields.iter_mut().map(|f| {
                    let wait = f.next_batch(step.rows);
                    let (runtime, metrics) = (runtime.clone(), self.metrics.clone());
                    let trace = self.trace.clone().map(|trace| (trace, number));
                    async move {
                        let task = wait.await?;
                        Ok(runtime.spawn(async move { decode_fields(vec![task], step.rows, &metrics, trace) }))
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
                num_rows: step.rows,
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

    /// The decoded steps, up to `parallelism` of them at once on `runtime` (the last ones
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
            .buffered(parallelism.get())
            .boxed()
    }

    /// The batches, decoded by up to `parallelism` tasks at once on `runtime`, in order: the
    /// steps of each batch put back together.
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

/// A copy of `batch` in buffers of its own. A decoded batch may share the memory of the pages
/// it was cut from (a slice of a page needs no copy); one that is kept while more pages are
/// read (a step waiting for the rest of its batch, the rows of a `take`) is copied, so that
/// its pages are freed when their reservation of the I/O buffer ends. (Dictionary values stay
/// shared: a page's dictionary is small next to its keys, and serves every step of the page.)
///
/// # Errors
/// Arrow's, which it has no reason to give for arrays the reader made.
pub fn compact(batch: &RecordBatch) -> Result<RecordBatch> {
    let all = UInt32Array::from_iter_values(0..u32::try_from(batch.num_rows()).unwrap_or(u32::MAX));
    if all.len() < batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(arrow_select::take::take_record_batch(batch, &all)?)
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
