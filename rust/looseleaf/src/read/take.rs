//! `take` of a file read: rows at indices, in the order asked.
//!
//! The sorted, distinct rows are read once, in steps of at most the read's batch size whose
//! pages fit in a share of the I/O buffer (so that a take, too, keeps to the buffer however many
//! rows and columns it reads; see [`BatchPlan`](super::batch_plan::BatchPlan)), then put together
//! and reordered in one pass.

use arrow_array::RecordBatch;
use futures::StreamExt;

use super::decode_stream::{compact, concat_steps, gather_rows};
use super::file_reader::FileReader;
use super::read_builder::ReadBuilder;
use crate::error::Result;
use crate::selection::RowSelection;
use crate::trace::SpanKind;

impl ReadBuilder<FileReader> {
    /// Reads the rows at `indices` (any order, repeats allowed) and returns them in that order,
    /// as one batch; with a filter, those of them it keeps, still in that order.
    ///
    /// # Errors
    /// As [`stream`](Self::stream); an index out of range is an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming it; a result that cannot
    /// fit in memory an [`Error::OutOfMemory`](crate::Error::OutOfMemory), before anything is
    /// read (see [`check_result_fits`](Self::check_result_fits)).
    pub async fn take(self, indices: &[u64]) -> Result<RecordBatch> {
        let location = self.source.location().to_string();
        let (_, schema) = self.output_fields().await.map_err(|e| e.with_location(&location))?;
        let types = schema.fields().iter().map(|f| f.data_type());
        crate::encodings::limits::check_result_fits(indices.len() as u64, types, "a take")
            .map_err(|e| e.with_location(&location))?;
        let traced = self.trace.clone().map(|trace| {
            let start = trace.now();
            (trace, start)
        });
        let batch = self.take_part(indices).await?;
        if let Some((trace, start)) = traced {
            let (rows, bytes) = (batch.num_rows() as u64, batch.get_array_memory_size() as u64);
            trace.span(SpanKind::Batch { index: 0, rows, bytes }, start);
        }
        Ok(batch)
    }

    /// [`take`](Self::take) as a part of a larger read (a dataset's), which records the batch
    /// it hands out itself.
    pub(crate) async fn take_part(self, indices: &[u64]) -> Result<RecordBatch> {
        if self.filter.is_some() {
            let location = self.source.location().to_string();
            Box::pin(super::filtered_read::filtered_take(self, indices)).await.map_err(|e| e.with_location(&location))
        } else {
            self.take_unfiltered(indices).await
        }
    }

    /// [`take`](Self::take) without the filter.
    pub(crate) async fn take_unfiltered(self, indices: &[u64]) -> Result<RecordBatch> {
        let location = self.source.location().to_string();
        let selection =
            RowSelection::try_from_indices(indices, self.source.num_rows()).map_err(|e| e.with_location(&location))?;
        let mut stream = self.with_selection(selection).launch(false).await?;
        let schema = stream.schema().clone();
        // Every step but the last is compacted as the next comes (see `compact`): kept until
        // the end, a step cut from its pages would keep them alive past their reservation of
        // the I/O buffer. The last is compacted only if nothing below copies it anyway
        // (concatenating or gathering), so that a take touches its rows' memory as few times
        // as it can (a process's first read pays a page fault for every fresh 4 KiB).
        let mut steps = Vec::new();
        let mut last: Option<RecordBatch> = None;
        while let Some(step) = stream.next().await {
            if let Some(previous) = last.replace(step?) {
                steps.push(compact(&previous)?);
            }
        }
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.as_slice() == indices {
            return match (steps.is_empty(), last) {
                (true, Some(only)) => compact(&only),
                (_, last) => {
                    steps.extend(last);
                    concat_steps(&schema, &steps)
                }
            };
        }
        steps.extend(last);
        gather_rows(&schema, &steps, &positions(indices, &sorted, &steps))
    }
}

/// Where each of `indices` is, as (step, row within it), given the steps that hold the rows of
/// `sorted` (the distinct indices, ascending) in order: the rows are gathered from the steps in
/// one pass, without concatenating them first.
fn positions(indices: &[u64], sorted: &[u64], steps: &[RecordBatch]) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = steps
        .iter()
        .scan(0, |start, step| {
            let at = *start;
            *start += step.num_rows();
            Some(at)
        })
        .collect();
    indices
        .iter()
        .map(|i| {
            let position = sorted.partition_point(|s| s < i);
            let step = starts.partition_point(|s| *s <= position).saturating_sub(1);
            (step, position - starts.get(step).copied().unwrap_or(0))
        })
        .collect()
}
