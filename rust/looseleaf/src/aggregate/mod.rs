//! Aggregates computed where the data lies: `COUNT`, `SUM`, `MIN` and `MAX` of columns and of
//! exact arithmetic on them, grouped by columns, over the rows of (filtered) reads, handed out
//! as *partial* results that a query engine merges (Spark's partial aggregate pushdown) or as
//! *final* results ([`AggregateResults::Final`]: Spark's complete pushdown, where one
//! aggregation covers every row).
//!
//! An [`Aggregation`] names the grouping columns, the functions, a filter and the
//! [`Arithmetic`] rules; bound to a schema ([`Aggregation::bind`]) it knows its result
//! schema and the columns it reads ([`BoundAggregation::prepare`] sets them, with the filter, on
//! a read), and [`BoundAggregation::aggregate`] consumes the read's batches. Results are exact:
//! integers and decimals are summed as integers, never as floats, and arithmetic follows
//! Spark's types, rounding and overflow rules (see [`expression`]).
//!
//! The result has the grouping columns then one column per function, one row per group (one
//! row for an aggregation without grouping, even of no rows). Partial results add a row for each
//! further piece of a sum that leaves its type's limits (see `accumulate.rs`): a merge must *add*
//! counts and sums and take the least and greatest of minimums and maximums, as partial results
//! are merged. Final results are one row per group, each sum exact, in Spark's result type of a
//! sum (`decimal(p + 10, s)` capped at 38 digits, `bigint`), checked once against that type.

mod accumulate;
pub mod expression;
mod groups;
mod json;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DECIMAL128_MAX_PRECISION, DataType, Field, Schema, SchemaRef};
use futures::{Stream, StreamExt};

use self::accumulate::Accumulator;
pub use self::expression::{Arithmetic, BoundExpr, NumberKind, ValueExpr};
use self::groups::{Groups, MAX_GROUP_COLUMNS, groupable};
use crate::error::{Error, Result};
use crate::filter::Predicate;
use crate::read::ReadBuilder;

/// The digits Spark adds to a decimal sum's type: `SUM` of `decimal(p, s)` is `decimal(p + 10, s)`.
const SUM_EXTRA_DIGITS: u8 = 10;

/// One aggregate function.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateFunction {
    /// `COUNT(*)`: the rows.
    CountRows,
    /// `COUNT(x)`: the rows where `x` is not null (`x` a column of any type, or arithmetic).
    Count(ValueExpr),
    /// `SUM(x)`: null for a group without a value.
    Sum(ValueExpr),
    /// `MIN(x)`.
    Min(ValueExpr),
    /// `MAX(x)`.
    Max(ValueExpr),
}

/// Whether an aggregation's results are partial (merged by the caller) or final.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AggregateResults {
    /// Results a caller merges with the results of other rows: sums in pieces within their
    /// values' type, on extra rows (see the module documentation).
    #[default]
    Partial,
    /// The results of every row: one row per group, each sum in Spark's result type of a sum,
    /// null where it leaves that type (an error in ANSI mode; integers wrap without it).
    Final,
}

/// An aggregation of a read's rows.
#[derive(Debug, Clone, Default)]
pub struct Aggregation {
    /// Top-level columns to group by (none: one group).
    pub group_by: Vec<String>,
    /// The functions, in the order of the result's columns.
    pub functions: Vec<AggregateFunction>,
    /// Only the rows where this is true.
    pub filter: Option<Predicate>,
    /// How arithmetic treats what does not fit.
    pub arithmetic: Arithmetic,
    /// Partial or final results.
    pub results: AggregateResults,
}

/// What a function reads, bound.
#[derive(Debug, Clone)]
enum Argument {
    Rows,
    /// A column whose nulls are counted, whatever its type.
    Nulls(String),
    Numbers(BoundExpr),
}

/// An [`Aggregation`] bound to a schema.
#[derive(Debug, Clone)]
pub struct BoundAggregation {
    aggregation: Aggregation,
    arguments: Vec<Argument>,
    /// The types of the partial results, a function each.
    result_types: Vec<DataType>,
    /// The value types of the grouping columns.
    group_types: Vec<DataType>,
    schema: SchemaRef,
    /// The schema of the rows it reads (what it was bound to).
    input: SchemaRef,
}

impl Aggregation {
    /// Binds the aggregation to the schema of the rows it reads.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a column the schema does not have; [`Error::Unsupported`]
    /// for what is outside the functions, types and arithmetic above (a caller may then leave
    /// the aggregation to its own engine).
    pub fn bind(&self, schema: &Schema) -> Result<BoundAggregation> {
        if self.group_by.len() > MAX_GROUP_COLUMNS {
            return Err(Error::unsupported(format!("aggregate: more than {MAX_GROUP_COLUMNS} grouping columns")));
        }
        let mut fields = Vec::new();
        let mut group_types = Vec::new();
        for name in &self.group_by {
            let field = schema
                .field_with_name(name)
                .map_err(|_| Error::invalid_argument(format!("aggregate: no column {name:?} to group by")))?;
            if !groupable(field.data_type()) {
                return Err(Error::unsupported(format!(
                    "aggregate: grouping by a column of type {}",
                    field.data_type()
                )));
            }
            let value_type = match field.data_type() {
                DataType::Dictionary(_, values) => values.as_ref().clone(),
                other => other.clone(),
            };
            fields.push(Field::new(name, value_type.clone(), true));
            group_types.push(value_type);
        }
        let mut arguments = Vec::new();
        let mut result_types = Vec::new();
        for (i, function) in self.functions.iter().enumerate() {
            let (argument, data_type) = match function {
                AggregateFunction::CountRows => (Argument::Rows, DataType::Int64),
                AggregateFunction::Count(ValueExpr::Column(name)) => {
                    schema
                        .field_with_name(name)
                        .map_err(|_| Error::invalid_argument(format!("aggregate: no column {name:?}")))?;
                    (Argument::Nulls(name.clone()), DataType::Int64)
                }
                AggregateFunction::Count(value) => {
                    (Argument::Numbers(value.bind(schema, self.arithmetic)?), DataType::Int64)
                }
                AggregateFunction::Sum(value) => {
                    let bound = value.bind(schema, self.arithmetic)?;
                    let data_type = match bound.kind() {
                        // A partial sum is a piece within its values' type (see `accumulate`).
                        NumberKind::Decimal { .. } if self.results == AggregateResults::Partial => {
                            bound.data_type().clone()
                        }
                        NumberKind::Decimal { precision, scale } => {
                            DataType::Decimal128((precision + SUM_EXTRA_DIGITS).min(DECIMAL128_MAX_PRECISION), scale)
                        }
                        NumberKind::Integer { arithmetic: true, .. } => DataType::Int64,
                        NumberKind::Integer { arithmetic: false, .. } => {
                            return Err(Error::unsupported(format!(
                                "aggregate: a sum of {} values",
                                bound.data_type()
                            )));
                        }
                    };
                    (Argument::Numbers(bound), data_type)
                }
                AggregateFunction::Min(value) | AggregateFunction::Max(value) => {
                    let bound = value.bind(schema, self.arithmetic)?;
                    let data_type = bound.data_type().clone();
                    (Argument::Numbers(bound), data_type)
                }
            };
            let counted = matches!(function, AggregateFunction::CountRows | AggregateFunction::Count(_));
            fields.push(Field::new(format!("agg_{i}"), data_type.clone(), !counted));
            arguments.push(argument);
            result_types.push(data_type);
        }
        Ok(BoundAggregation {
            aggregation: self.clone(),
            arguments,
            result_types,
            group_types,
            schema: Arc::new(Schema::new(fields)),
            input: Arc::new(schema.clone()),
        })
    }
}

impl BoundAggregation {
    /// The schema of the partial results: the grouping columns, then `agg_0`, `agg_1`, ...
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Partial or final results.
    pub fn results(&self) -> AggregateResults {
        self.aggregation.results
    }

    /// The top-level columns the aggregation reads (grouping columns first), each once.
    pub fn columns(&self) -> Vec<String> {
        let mut columns = self.aggregation.group_by.clone();
        for argument in &self.arguments {
            match argument {
                Argument::Rows => {}
                Argument::Nulls(name) => {
                    if !columns.contains(name) {
                        columns.push(name.clone());
                    }
                }
                Argument::Numbers(expr) => expr.columns(&mut columns),
            }
        }
        columns
    }

    /// `read` set to read what the aggregation needs: its columns (grouping columns of
    /// strings as dictionaries, numbered once a dictionary), only the rows its filter keeps.
    pub fn prepare<S>(&self, read: ReadBuilder<S>) -> ReadBuilder<S> {
        let strings: Vec<String> = self
            .aggregation
            .group_by
            .iter()
            .zip(&self.group_types)
            .filter(|(_, t)| {
                matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary)
            })
            .map(|(name, _)| name.clone())
            .collect();
        let mut read = read.with_columns(self.columns());
        if !strings.is_empty() {
            read = read.with_dictionary_columns(strings);
        }
        match &self.aggregation.filter {
            Some(filter) => read.with_filter(filter.clone()),
            None => read,
        }
    }

    /// Aggregates several reads [`prepare`](Self::prepare)d for it (files of one schema, or
    /// row ranges of them). For final results, each read's partial results are computed on a
    /// task of its own, concurrently, then merged; partial results are computed from the reads'
    /// batches as they come, on this task. The reads' order does not matter.
    ///
    /// Must run on a tokio runtime. Dropping the future aborts the reads' tasks.
    ///
    /// # Errors
    /// The reads' errors; an overflow in ANSI mode.
    pub async fn aggregate_concurrently<S>(&self, reads: Vec<S>) -> Result<RecordBatch>
    where
        S: Stream<Item = Result<RecordBatch>> + Unpin + Send + 'static,
    {
        if reads.len() == 1 || self.aggregation.results == AggregateResults::Partial {
            return self.aggregate(futures::stream::select_all(reads)).await;
        }
        let partial =
            Aggregation { results: AggregateResults::Partial, ..self.aggregation.clone() }.bind(&self.input)?;
        // A set, not bare handles: dropping this future (a cancelled query) aborts the reads.
        let mut tasks = tokio::task::JoinSet::new();
        for read in reads {
            let partial = partial.clone();
            tasks.spawn(async move { partial.aggregate(read).await });
        }
        let mut pieces = Vec::with_capacity(tasks.len());
        while let Some(piece) = tasks.join_next().await {
            pieces.push(piece.map_err(|e| Error::internal(format!("aggregate: a read's task failed: {e}")))??);
        }
        let merge = self.merge_of(&partial)?;
        let merged = merge.aggregate(futures::stream::iter(pieces.into_iter().map(Ok))).await?;
        // The merge's columns are this aggregation's (its counts are sums of counts: never null).
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            merged.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(merged.num_rows())),
        )
        .map_err(|e| Error::internal(format!("aggregate: merged results: {e}")))
    }

    /// The aggregation that merges `partial`'s results into this one's (final) results: counts
    /// and sums added, extremes kept, grouped by the same columns.
    fn merge_of(&self, partial: &BoundAggregation) -> Result<BoundAggregation> {
        let functions = self
            .aggregation
            .functions
            .iter()
            .enumerate()
            .map(|(i, function)| {
                let column = ValueExpr::Column(format!("agg_{i}"));
                match function {
                    AggregateFunction::CountRows | AggregateFunction::Count(_) | AggregateFunction::Sum(_) => {
                        AggregateFunction::Sum(column)
                    }
                    AggregateFunction::Min(_) => AggregateFunction::Min(column),
                    AggregateFunction::Max(_) => AggregateFunction::Max(column),
                }
            })
            .collect();
        Aggregation {
            group_by: self.aggregation.group_by.clone(),
            functions,
            filter: None,
            arithmetic: self.aggregation.arithmetic,
            results: self.aggregation.results,
        }
        .bind(partial.schema())
    }

    /// Aggregates the batches of reads [`prepare`](Self::prepare)d for it: of one read, or of
    /// several (files of one schema, merged into one stream in any order).
    ///
    /// # Errors
    /// The reads' errors; an overflow in ANSI mode.
    pub async fn aggregate<S>(&self, mut batches: S) -> Result<RecordBatch>
    where
        S: Stream<Item = Result<RecordBatch>> + Unpin,
    {
        let mut groups = Groups::new(&self.group_types);
        let mut accumulators: Vec<Accumulator> = self
            .aggregation
            .functions
            .iter()
            .zip(&self.arguments)
            .map(|(function, argument)| match (function, argument) {
                (AggregateFunction::Sum(_), Argument::Numbers(expr)) => match self.aggregation.results {
                    AggregateResults::Partial => Accumulator::sum(expr.kind()),
                    // One piece as wide as an `i128`; `finish_final` adds the pieces exactly.
                    AggregateResults::Final => {
                        Accumulator::Sum { limits: (i128::MIN, i128::MAX), current: Vec::new(), finished: Vec::new() }
                    }
                },
                (AggregateFunction::Min(_), _) => Accumulator::Extreme { least: true, best: Vec::new() },
                (AggregateFunction::Max(_), _) => Accumulator::Extreme { least: false, best: Vec::new() },
                _ => Accumulator::Count(Vec::new()),
            })
            .collect();
        let arithmetic = self.aggregation.arithmetic;
        while let Some(batch) = batches.next().await {
            let batch = batch?;
            let rows = batch.num_rows();
            if rows == 0 {
                continue;
            }
            let keys: Vec<ArrayRef> = self
                .aggregation
                .group_by
                .iter()
                .map(|name| {
                    batch
                        .column_by_name(name)
                        .cloned()
                        .ok_or_else(|| Error::internal(format!("aggregate: batch without column {name:?}")))
                })
                .collect::<Result<_>>()?;
            let row_groups = groups.assign(&keys, rows)?;
            for (accumulator, argument) in accumulators.iter_mut().zip(&self.arguments) {
                accumulator.grow(groups.count());
                match argument {
                    Argument::Rows => accumulator.count(&row_groups, None),
                    Argument::Nulls(name) => {
                        let column = batch
                            .column_by_name(name)
                            .ok_or_else(|| Error::internal(format!("aggregate: batch without column {name:?}")))?;
                        let nulls = column.logical_nulls();
                        accumulator.count(&row_groups, nulls.as_ref());
                    }
                    Argument::Numbers(expr) => accumulator.update(&row_groups, &expr.evaluate(&batch, arithmetic)?),
                }
            }
        }
        groups.ensure_one_without_columns();
        if self.aggregation.results == AggregateResults::Final {
            let mut columns = groups.values(&(0..groups.count() as u32).collect::<Vec<_>>())?;
            for (accumulator, data_type) in accumulators.iter_mut().zip(&self.result_types) {
                accumulator.grow(groups.count());
                columns.push(accumulator.finish_final(data_type, arithmetic.ansi)?);
            }
            return RecordBatch::try_new_with_options(
                self.schema.clone(),
                columns,
                &RecordBatchOptions::new().with_row_count(Some(groups.count())),
            )
            .map_err(|e| Error::internal(format!("aggregate: results: {e}")));
        }
        let mut extra = Vec::new();
        let mut offsets = Vec::new();
        for accumulator in &mut accumulators {
            accumulator.grow(groups.count());
            offsets.push(extra.len());
            extra.extend(accumulator.extra_rows());
        }
        let mut group_of_row: Vec<u32> = (0..groups.count() as u32).collect();
        group_of_row.extend(&extra);
        let mut columns = groups.values(&group_of_row)?;
        for ((accumulator, data_type), own) in accumulators.iter().zip(&self.result_types).zip(offsets) {
            columns.push(accumulator.finish(data_type, &extra, own)?);
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(group_of_row.len())),
        )
        .map_err(|e| Error::internal(format!("aggregate: results: {e}")))
    }
}
