//! Run-length: runs of equal values, stored as the value of each run and the row where each run
//! ends (exclusive), both as child encodings over `num_runs` rows.
//!
//! ```text
//! values [5, 5, 5, 9, 9, 5]   run values [5, 9, 5], run ends [3, 5, 6] (u32)
//! ```
//!
//! Reading any rows reads all the runs (the writer only chooses this encoding when runs are few
//! compared with rows, so they are small) and finds each row's run by binary search.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::BooleanArray;
use arrow_buffer::BooleanBufferBuilder;

use super::PageContext;
use super::integers::values_in_range;
use crate::encodings::range_test::RangeTest;
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler, SelectedRows, limits};
use crate::error::{Result, bail, ensure};
use crate::format::proto::RleEncoding;
use crate::io::PageIo;

/// Schedules the runs of a run-length page.
#[derive(Debug)]
pub struct RleScheduler {
    values: Box<dyn PageScheduler>,
    run_ends: Box<dyn PageScheduler>,
    num_runs: u64,
    num_rows: u64,
}

impl RleScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &RleEncoding, page: &PageContext) -> Result<Self> {
        let (Some(values), Some(run_ends)) = (encoding.values.as_deref(), encoding.run_ends.as_deref()) else {
            bail!(corrupt, "run-length encoding without values or run ends")
        };
        ensure!(
            encoding.num_runs <= page.num_rows && (encoding.num_runs > 0 || page.num_rows == 0),
            corrupt,
            "{} runs for a page of {} rows",
            encoding.num_runs,
            page.num_rows
        );
        // The runs are decoded whole when the page loads.
        let stored = super::stored_bytes(Some(values), page.buffers)
            .saturating_add(super::stored_bytes(Some(run_ends), page.buffers));
        limits::check_whole_load(encoding.num_runs, stored, "a run-length page's runs")?;
        let runs = PageContext { num_rows: encoding.num_runs, ..*page };
        Ok(Self {
            values: super::page_scheduler(Some(values), &runs)?,
            run_ends: super::page_scheduler(Some(run_ends), &runs)?,
            num_runs: encoding.num_runs,
            num_rows: page.num_rows,
        })
    }
}

impl PageScheduler for RleScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let all = [0..self.num_runs];
        let runs: &[Range<u64>] = if self.num_runs == 0 { &[] } else { &all };
        let values = self.values.schedule_ranges(runs, io);
        let run_ends = self.run_ends.schedule_ranges(runs, io);
        let (rows, num_runs, num_rows) = (SelectedRows::new(ranges), self.num_runs, self.num_rows);
        Box::pin(async move {
            let (values, run_ends) = futures::try_join!(values, run_ends)?;
            let DataBlock::FixedWidth(ends) = run_ends.decode(0, num_runs)? else {
                bail!(corrupt, "run ends do not decode to integers")
            };
            ensure!(ends.bits_per_value == 32, corrupt, "run ends of {} bits", ends.bits_per_value);
            let ends: Vec<u64> = ends
                .data
                .as_slice()
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)
                .collect();
            ensure!(
                ends.first().is_none_or(|first| *first > 0)
                    && ends.windows(2).all(|w| w[0] < w[1])
                    && ends.last().copied().unwrap_or(0) == num_rows,
                corrupt,
                "run ends are not increasing up to the page's {num_rows} rows"
            );
            Ok(Box::new(RleDecoder { values, num_runs, ends, rows, decoded: OnceLock::new() }) as Box<dyn PageDecoder>)
        })
    }
}

struct RleDecoder {
    values: Box<dyn PageDecoder>,
    num_runs: u64,
    ends: Vec<u64>,
    rows: SelectedRows,
    decoded: OnceLock<Arc<DataBlock>>,
}

impl RleDecoder {
    /// The runs' values, decoded once for all the batches the page serves.
    fn run_values(&self) -> Result<Arc<DataBlock>> {
        Ok(match self.decoded.get() {
            Some(values) => values.clone(),
            None => {
                let block = Arc::new(self.values.decode(0, self.num_runs)?);
                self.decoded.get_or_init(|| block).clone()
            }
        })
    }
}

impl PageDecoder for RleDecoder {
    fn num_rows(&self) -> u64 {
        self.rows.num_rows()
    }

    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        // Each run's value tested once, then its rows appended in one go.
        let Some(passes) = values_in_range(&*self.run_values()?, test) else { return Ok(None) };
        ensure!(passes.len() == self.ends.len(), corrupt, "run values and run ends differ in number");
        let mut bits = BooleanBufferBuilder::new(num_rows as usize);
        for piece in self.rows.page_rows(rows_to_skip, num_rows)? {
            let mut run = self.ends.partition_point(|end| *end <= piece.start);
            let mut row = piece.start;
            while row < piece.end {
                let (Some(end), Some(pass)) = (self.ends.get(run), passes.get(run)) else {
                    bail!(corrupt, "rows past the page's runs")
                };
                let next = (*end).min(piece.end);
                bits.append_n((next - row) as usize, *pass);
                (row, run) = (next, run + 1);
            }
        }
        ensure!(bits.len() == num_rows as usize, internal, "run-length page tested the wrong number of rows");
        Ok(Some(BooleanArray::new(bits.finish(), None)))
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let values = self.run_values()?;
        let mut positions = limits::try_vec(
            limits::block_bytes(num_rows, size_of::<usize>() as u64, "run-length rows")? / size_of::<usize>(),
            "run-length rows",
        )?;
        for piece in self.rows.page_rows(rows_to_skip, num_rows)? {
            let mut run = self.ends.partition_point(|end| *end <= piece.start);
            for row in piece {
                while self.ends.get(run).is_some_and(|end| *end <= row) {
                    run += 1;
                }
                positions.push(run);
            }
        }
        values.gather(&positions)
    }
}
