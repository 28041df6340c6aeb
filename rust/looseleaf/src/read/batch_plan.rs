//! [`BatchPlan`]: how many rows each decode step of a read takes, so that the pages one step
//! needs fit in its share of the I/O buffer.
//!
//! The decode loop waits for every page holding the rows of a step at once, and each of those
//! pages is then *awaited*: its reads go past the byte budget if they must (see
//! [`Urgency`](crate::io::Urgency)). A step of a scan spans a page or two of each column, but a
//! step of scattered rows (a `take`) can span a page of each column *per row*: a thousand rows
//! over a file of small pages would await the whole file, far past the budget. So steps are
//! cut by what their pages cost: walking the selected rows in order, a step ends before a row
//! whose pages (those the step does not hold yet) would take its cost past the *allowance*,
//! the buffer's share of one step (the buffer divided among the steps decoded at once and the
//! one being waited for). A step holds at least the rows of one stretch of rows that share
//! their pages, so a read always advances — at worst by the pages of one row of each column,
//! the least any reader of the file needs.
//!
//! Steps never cross the boundary of an output batch: a stream puts the steps of one batch
//! back together ([`Step::ends_batch`]), so its batches keep the size asked for.
//!
//! A page's cost is what its reservation counts: its stored bytes, plus its decompressed bytes
//! for a compressed page. Pages of list items are placed on top-level rows by the same
//! interpolation as their priorities ([`RowPriority::Interpolated`]), an estimate: reads of
//! the items a step needs are never held back by it (the urgency arm), only the step's size
//! is estimated.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::num::NonZeroUsize;
use std::sync::Arc;

use super::field_scheduler::{ColumnPages, RowPriority};
use super::file_reader::RowBytes;
use crate::format::schema::{FieldColumns, Layout};
use crate::options::{DEFAULT_BATCH_BYTES, DEFAULT_BATCH_MAX_BYTES};
use crate::selection::RowSelection;

/// One decode step: `rows` rows, the last of an output batch if `ends_batch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Rows of the step (at least one).
    pub rows: u64,
    /// Whether the step completes an output batch.
    pub ends_batch: bool,
}

/// The steps of a read, in order (run-length encoded: a scan is a few runs however long).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchPlan {
    runs: VecDeque<(Step, u64)>,
    /// The steps of `runs`, summed: asked before every step (see `DecodeBatchStream`).
    steps: u64,
}

impl BatchPlan {
    /// Steps of whole batches of `batch_size` rows (the last shorter) over `num_rows` rows.
    pub fn uniform(num_rows: u64, batch_size: u64) -> Self {
        let batch_size = batch_size.max(1);
        let mut plan = Self::default();
        plan.push_many(Step { rows: batch_size, ends_batch: true }, num_rows / batch_size);
        plan.push_many(Step { rows: num_rows % batch_size, ends_batch: true }, 1);
        plan
    }

    /// Steps over the rows of `selection` in batches of `batch_size` rows, each step cut so
    /// that the pages of `columns` it needs cost at most `allowance` bytes, or hold the rows of
    /// one stretch that shares its pages (see the module documentation).
    pub fn cut(selection: &RowSelection, columns: &[ColumnSpan], batch_size: u64, allowance: u64) -> Self {
        let mut sweep = Sweep::new(columns, batch_size.max(1), allowance);
        for range in selection.ranges() {
            let mut row = range.start;
            while row < range.end {
                sweep.advance_to(row);
                let stretch_end = sweep.next_boundary().map_or(range.end, |b| b.min(range.end));
                sweep.add_rows(row, stretch_end - row);
                row = stretch_end;
            }
        }
        sweep.finish()
    }

    /// The next step, if any.
    pub fn next_step(&mut self) -> Option<Step> {
        let (step, count) = self.runs.front_mut()?;
        let step = *step;
        *count -= 1;
        self.steps -= 1;
        if *count == 0 {
            self.runs.pop_front();
        }
        Some(step)
    }

    /// Number of steps left.
    pub fn num_steps(&self) -> u64 {
        self.steps
    }

    /// Rows left.
    pub fn num_rows(&self) -> u64 {
        self.runs.iter().map(|(step, count)| step.rows * count).sum()
    }

    fn push_many(&mut self, step: Step, count: u64) {
        if count == 0 || step.rows == 0 {
            return;
        }
        self.steps += count;
        match self.runs.back_mut() {
            Some((last, n)) if *last == step => *n += count,
            _ => self.runs.push_back((step, count)),
        }
    }
}

/// The pages of one column as the top-level rows they serve, and what each costs.
pub struct ColumnSpan {
    pages: Arc<ColumnPages>,
    rows: Arc<RowPriority>,
}

impl ColumnSpan {
    fn len(&self) -> usize {
        self.pages.pages.len()
    }

    /// The top-level row at which page `index` starts.
    fn start(&self, index: usize) -> u64 {
        self.rows.priority(self.pages.page_rows(index).start).0
    }

    /// The bytes page `index` takes in the I/O buffer once read.
    fn cost(&self, index: usize) -> u64 {
        let page = &self.pages.pages[index];
        let stored = page.buffers.iter().map(|b| b.size).fold(0u64, u64::saturating_add);
        let decompressed = if page.compression != 0 {
            page.buffers.iter().map(|b| b.uncompressed_size).fold(0u64, u64::saturating_add)
        } else {
            0
        };
        stored.saturating_add(decompressed)
    }
}

/// The columns of the projected `fields` (whose metadata is in `columns`), each placed on the
/// top-level rows of a file of `num_rows` rows.
pub fn column_spans(fields: &[FieldColumns], columns: &HashMap<u32, Arc<ColumnPages>>) -> Vec<ColumnSpan> {
    let mut out = Vec::new();
    let top_level = Arc::new(RowPriority::TopLevel);
    for field in fields {
        spans_of(field, columns, &top_level, &mut out);
    }
    out
}

fn spans_of(
    tree: &FieldColumns,
    columns: &HashMap<u32, Arc<ColumnPages>>,
    rows: &Arc<RowPriority>,
    out: &mut Vec<ColumnSpan>,
) {
    // A field the reader cannot read fails when its scheduler is built; it costs nothing here.
    let Ok(layout) = Layout::of(tree.field.data_type()) else { return };
    let own = tree.column.and_then(|c| columns.get(&c));
    if let Some(pages) = own {
        out.push(ColumnSpan { pages: pages.clone(), rows: rows.clone() });
    }
    let child_rows = match layout {
        Layout::Leaf | Layout::Struct => rows.clone(),
        Layout::FixedSizeList => {
            let dimension = match tree.field.data_type() {
                arrow_schema::DataType::FixedSizeList(_, n) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            Arc::new(RowPriority::Fixed { dimension, parent: rows.clone() })
        }
        Layout::List => {
            let Some(offsets) = own else { return };
            let num_rows = offsets.num_rows();
            if num_rows == 0 {
                return;
            }
            let num_pages = offsets.pages.len();
            let mut items: Vec<u64> = (0..num_pages).map(|i| offsets.page_items(i).start).collect();
            let mut tops: Vec<u64> = (0..num_pages).map(|i| rows.priority(offsets.page_rows(i).start).0).collect();
            items.push(offsets.num_items());
            tops.push(rows.priority(num_rows - 1).0);
            Arc::new(RowPriority::Interpolated { items: items.into(), rows: tops.into() })
        }
    };
    for child in &tree.children {
        spans_of(child, columns, &child_rows, out);
    }
}

/// The walk of [`BatchPlan::cut`]: the current page(s) of every column, which of them the step
/// being built holds, and what it costs.
struct Sweep<'a> {
    columns: &'a [ColumnSpan],
    batch_size: u64,
    allowance: u64,
    /// Per column: the next page not yet current, the cost of the current pages (all those
    /// starting at one row), and that row.
    next_page: Vec<usize>,
    current_cost: Vec<u64>,
    current_start: Vec<u64>,
    /// Columns by the top-level row at which their next page starts.
    boundaries: BinaryHeap<Reverse<(u64, usize)>>,
    /// Cost of every column's current pages, and of those the step does not hold yet.
    total: u64,
    not_held: u64,
    /// The step being built: its rows, its cost, and its last row (a column's current pages
    /// are held by the step when that row is at or past where they start).
    rows: u64,
    cost: u64,
    last_row: Option<u64>,
    /// Rows until the end of the output batch.
    batch_left: u64,
    plan: BatchPlan,
}

impl<'a> Sweep<'a> {
    fn new(columns: &'a [ColumnSpan], batch_size: u64, allowance: u64) -> Self {
        let boundaries =
            columns.iter().enumerate().filter(|(_, c)| c.len() > 0).map(|(i, c)| Reverse((c.start(0), i))).collect();
        Self {
            columns,
            batch_size,
            allowance,
            next_page: vec![0; columns.len()],
            current_cost: vec![0; columns.len()],
            current_start: vec![0; columns.len()],
            boundaries,
            total: 0,
            not_held: 0,
            rows: 0,
            cost: 0,
            last_row: None,
            batch_left: batch_size,
            plan: BatchPlan::default(),
        }
    }

    /// The next row at which some column's page changes.
    fn next_boundary(&self) -> Option<u64> {
        self.boundaries.peek().map(|Reverse((row, _))| *row)
    }

    /// Makes current the pages of every column that start at or before `row`.
    fn advance_to(&mut self, row: u64) {
        while let Some(&Reverse((start, column))) = self.boundaries.peek() {
            if start > row {
                break;
            }
            self.boundaries.pop();
            let span = &self.columns[column];
            let mut cost = 0u64;
            let mut next = self.next_page[column];
            while next < span.len() && span.start(next) <= start {
                cost = cost.saturating_add(span.cost(next));
                next += 1;
            }
            self.next_page[column] = next;
            if next < span.len() {
                self.boundaries.push(Reverse((span.start(next), column)));
            }
            let old = self.current_cost[column];
            let held = self.last_row.is_some_and(|last| last >= self.current_start[column]);
            self.total = self.total.saturating_sub(old).saturating_add(cost);
            self.not_held = if held { self.not_held } else { self.not_held.saturating_sub(old) }.saturating_add(cost);
            self.current_cost[column] = cost;
            self.current_start[column] = start;
        }
    }

    /// Adds `count` selected rows from `row` on, all within one stretch of shared pages.
    fn add_rows(&mut self, mut row: u64, mut count: u64) {
        while count > 0 {
            if self.rows == 0 && self.batch_left == self.batch_size && count >= self.batch_size {
                // Whole batches within the stretch: each is one step whatever its pages cost
                // (a step holds at least its stretch), all alike, counted at once.
                let batches = count / self.batch_size;
                self.plan.push_many(Step { rows: self.batch_size, ends_batch: true }, batches);
                row += batches * self.batch_size;
                count -= batches * self.batch_size;
                continue;
            }
            let added = self.not_held;
            if self.rows > 0 && added > 0 && self.cost.saturating_add(added) > self.allowance {
                self.end_step(false);
                continue;
            }
            let taken = count.min(self.batch_left);
            self.rows += taken;
            self.cost = self.cost.saturating_add(added);
            self.not_held = 0;
            self.last_row = Some(row + taken - 1);
            row += taken;
            count -= taken;
            self.batch_left -= taken;
            if self.batch_left == 0 {
                self.end_step(true);
                self.batch_left = self.batch_size;
            }
        }
    }

    fn end_step(&mut self, ends_batch: bool) {
        self.plan.push_many(Step { rows: self.rows, ends_batch }, 1);
        self.rows = 0;
        self.cost = 0;
        self.last_row = None;
        self.not_held = self.total;
    }

    fn finish(mut self) -> BatchPlan {
        if self.rows > 0 {
            self.end_step(true);
        }
        self.plan
    }
}

/// Batches each decode thread gets at least, when the read is large enough (see
/// [`default_batch_size`]).
const MIN_BATCHES_PER_THREAD: u64 = 4;

/// Rows below which a default batch is not split further for parallelism.
const MIN_SPLIT_ROWS: u64 = 8192;

/// The default batch size of a read of `rows` rows of `row_bytes` stored bytes, decoded
/// `parallelism` batches at once: as many rows as fit in [`DEFAULT_BATCH_BYTES`] of the widest
/// column and in [`DEFAULT_BATCH_MAX_BYTES`] of the whole row, at most `most`, and few enough
/// that every decode thread gets [`MIN_BATCHES_PER_THREAD`] batches (down to
/// [`MIN_SPLIT_ROWS`] rows). A short read in large batches leaves threads idle: the
/// embeddings projection (`id, caption`, 100,000 rows) made three batches for two threads, the
/// third decoded alone (4.3–4.6 ms against 3.7–3.9 ms in eight batches).
pub(crate) fn default_batch_size(
    row_bytes: RowBytes,
    rows: u64,
    parallelism: NonZeroUsize,
    most: NonZeroUsize,
) -> NonZeroUsize {
    let share = rows.div_ceil(MIN_BATCHES_PER_THREAD * parallelism.get() as u64).max(MIN_SPLIT_ROWS);
    let by_column = DEFAULT_BATCH_BYTES.get() / row_bytes.widest_column.max(1);
    let by_row = DEFAULT_BATCH_MAX_BYTES.get() / row_bytes.total.max(1);
    let rows = by_column.min(by_row).min(most.get() as u64).min(share);
    NonZeroUsize::new(rows as usize).unwrap_or(NonZeroUsize::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::proto::{BufferLocation, ColumnMetadata, PageMetadata};

    /// A column of pages of `rows[i]` rows and `bytes[i]` bytes each.
    fn column(rows: &[u64], bytes: &[u64]) -> ColumnSpan {
        let pages = rows
            .iter()
            .zip(bytes)
            .map(|(&num_rows, &size)| PageMetadata {
                num_rows,
                buffers: vec![BufferLocation { offset: 0, size, uncompressed_size: 0, crc32: None }],
                ..Default::default()
            })
            .collect();
        let pages = ColumnPages::try_new(0, "x", ColumnMetadata { pages, zone_map: None }, u64::MAX).unwrap();
        ColumnSpan { pages: Arc::new(pages), rows: Arc::new(RowPriority::TopLevel) }
    }

    fn steps(mut plan: BatchPlan) -> Vec<(u64, bool)> {
        std::iter::from_fn(|| plan.next_step()).map(|s| (s.rows, s.ends_batch)).collect()
    }

    #[test]
    fn uniform_plans_are_batches() {
        assert_eq!(steps(BatchPlan::uniform(10, 4)), vec![(4, true), (4, true), (2, true)]);
        assert_eq!(steps(BatchPlan::uniform(8, 4)), vec![(4, true), (4, true)]);
        assert_eq!(BatchPlan::uniform(1_000_000_000, 1000).runs.len(), 1);
        assert!(steps(BatchPlan::uniform(0, 4)).is_empty());
    }

    #[test]
    fn a_scan_within_the_allowance_is_cut_in_batches_only() {
        let columns = [column(&[100; 10], &[1000; 10]), column(&[250; 4], &[500; 4])];
        let plan = BatchPlan::cut(&RowSelection::all(1000), &columns, 64, 10_000);
        assert_eq!(plan, BatchPlan::uniform(1000, 64));
    }

    #[test]
    fn scattered_rows_are_cut_where_their_pages_pass_the_allowance() {
        // Pages of 100 rows and 1000 bytes: one row from each of 10 pages.
        let columns = [column(&[100; 10], &[1000; 10])];
        let rows: Vec<u64> = (0..10).map(|i| i * 100 + 5).collect();
        let selection = RowSelection::from_sorted_indices(&rows);
        assert_eq!(
            steps(BatchPlan::cut(&selection, &columns, 1024, 3000)),
            vec![(3, false), (3, false), (3, false), (1, true)]
        );
        // Rows sharing a page cost it once.
        let rows: Vec<u64> = (0..40).map(|i| i * 10).collect();
        let selection = RowSelection::from_sorted_indices(&rows);
        assert_eq!(steps(BatchPlan::cut(&selection, &columns, 1024, 2000)), vec![(20, false), (20, true)]);
        // Batch boundaries still apply, and the cost starts again after them.
        assert_eq!(steps(BatchPlan::cut(&selection, &columns, 15, 2000)), vec![(15, true), (15, true), (10, true)]);
        assert_eq!(
            steps(BatchPlan::cut(&selection, &columns, 15, 1000)),
            vec![(10, false), (5, true), (5, false), (10, true), (10, true)]
        );
    }

    #[test]
    fn a_step_holds_at_least_one_stretch_of_shared_pages() {
        // Two columns whose pages are each over the allowance: steps stop at every boundary.
        let columns = [column(&[100; 4], &[5000; 4]), column(&[50; 8], &[5000; 8])];
        let plan = BatchPlan::cut(&RowSelection::all(400), &columns, 1000, 1);
        assert_eq!(
            steps(plan),
            vec![(50, false), (50, false), (50, false), (50, false), (50, false), (50, false), (50, false), (50, true)]
        );
        // An allowance of a page of each column lets a step run to the next boundary of either.
        let plan = BatchPlan::cut(&RowSelection::all(400), &columns, 1000, 10_000);
        assert_eq!(
            steps(plan),
            vec![(50, false), (50, false), (50, false), (50, false), (50, false), (50, false), (50, false), (50, true)]
        );
        let plan = BatchPlan::cut(&RowSelection::all(400), &columns, 1000, 15_000);
        assert_eq!(steps(plan), vec![(100, false), (100, false), (100, false), (100, true)]);
    }

    #[test]
    fn plans_cost_pages_and_ranges_not_rows() {
        // 2^40 rows in one page of a column: a few runs, at once.
        let columns = [column(&[1 << 40], &[100])];
        let plan = BatchPlan::cut(&RowSelection::all(1 << 40), &columns, 8192, 0);
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.num_rows(), 1 << 40);
        let selection = RowSelection::from_sorted_ranges(vec![5..(1 << 39), (1 << 39) + 3..(1 << 40)]);
        let plan = BatchPlan::cut(&selection, &columns, 8192, 0);
        assert!(plan.runs.len() <= 6, "{plan:?}");
        assert_eq!(plan.num_rows(), selection.num_rows());
    }

    #[test]
    fn empty_selections_and_columns() {
        assert!(steps(BatchPlan::cut(&RowSelection::default(), &[column(&[10], &[10])], 4, 0)).is_empty());
        assert_eq!(steps(BatchPlan::cut(&RowSelection::all(10), &[], 4, 0)), vec![(4, true), (4, true), (2, true)]);
    }

    #[test]
    fn default_batches_fit_their_bytes_and_give_every_thread_work() {
        let two = NonZeroUsize::new(2).unwrap();
        let most = crate::options::DEFAULT_BATCH_SIZE;
        let one_column = |bytes| RowBytes { total: bytes, widest_column: bytes };
        let size = |row_bytes, rows| default_batch_size(row_bytes, rows, two, most).get();
        // A long read of narrow rows: the most rows a batch takes.
        assert_eq!(size(one_column(8), 10_000_000), most.get());
        // A wide column: as many rows as fit in a column's batch bytes.
        assert_eq!(size(one_column(3_000), 10_000_000), (DEFAULT_BATCH_BYTES.get() / 3_000) as usize);
        let embeddings = RowBytes { total: 3_010, widest_column: 3_000 };
        assert_eq!(size(embeddings, 10_000_000), (DEFAULT_BATCH_BYTES.get() / 3_000) as usize);
        // Many narrow columns: bounded by the row's bytes only, not by a column's.
        let wide = RowBytes { total: 3_000, widest_column: 8 };
        assert_eq!(size(wide, 10_000_000), (DEFAULT_BATCH_MAX_BYTES.get() / 3_000) as usize);
        let wider = RowBytes { total: 60_000, widest_column: 8 };
        assert_eq!(size(wider, 10_000_000), (DEFAULT_BATCH_MAX_BYTES.get() / 60_000) as usize);
        // A short read: four batches per thread, not fewer than the split floor.
        assert_eq!(size(one_column(62), 100_000), 12_500);
        assert_eq!(size(wide, 100_000), 12_500);
        assert_eq!(size(one_column(62), 20_000), MIN_SPLIT_ROWS as usize);
        assert_eq!(size(one_column(1), 1), MIN_SPLIT_ROWS as usize);
        assert_eq!(default_batch_size(one_column(u64::MAX), 5, two, most).get(), 1);
    }
}
