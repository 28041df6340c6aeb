//! What page statistics answer without reading data: the rows whose pages may satisfy a
//! conjunction of simple predicates (page skipping, for a read to select before it schedules
//! anything), and a column's smallest and largest values (`MIN`/`MAX`).
//!
//! Statistics bound a page's values (minimum, maximum, null count), so a page can be ruled out,
//! never ruled in: the rows returned may hold no match, and a reader still filters them. Only
//! what the statistics bound exactly is used: integers and the types ordered as integers
//! (dates, timestamps, decimals, in their stored units) for comparisons, and null counts for
//! null tests. Floats (NaN orders differently across engines), strings (a stored minimum may
//! be a truncated prefix) and columns inside nested fields (their pages count items, not rows)
//! rule nothing out.

use std::collections::HashMap;

use crate::encodings::statistics::{StatValue, decode_bound};
use crate::error::Result;
use crate::format::proto::Compression;
use crate::read::summary::describe_columns;
use crate::read::{FileReader, PageSummary};
use crate::selection::RowSelection;

/// A comparison of a column with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `column = value`
    Eq,
    /// `column < value`
    Lt,
    /// `column <= value`
    LtEq,
    /// `column > value`
    Gt,
    /// `column >= value`
    GtEq,
}

/// A predicate on one top-level column that page statistics can rule out.
#[derive(Debug, Clone, PartialEq)]
pub enum PagePredicate {
    /// `column <op> value`, `value` in the column's stored units (see [`StatValue`]).
    Compare {
        /// A top-level column.
        column: String,
        /// How it compares.
        op: Comparison,
        /// The constant.
        value: StatValue,
    },
    /// `column IS NULL`
    IsNull(String),
    /// `column IS NOT NULL`
    IsNotNull(String),
}

impl PagePredicate {
    fn column(&self) -> &str {
        match self {
            Self::Compare { column, .. } | Self::IsNull(column) | Self::IsNotNull(column) => column,
        }
    }

    /// Whether some row of `page` may satisfy the predicate.
    fn may_match(&self, page: &PageSummary) -> bool {
        match self {
            Self::IsNull(_) => page.null_count.is_none_or(|nulls| nulls > 0),
            Self::IsNotNull(_) => page.null_count.is_none_or(|nulls| nulls < page.num_rows),
            Self::Compare { op, value: StatValue::Int(value), .. } => {
                let (Some(StatValue::Int(min)), Some(StatValue::Int(max))) = (&page.min, &page.max) else {
                    // No bounds: unknown, or every value null (then only a null test matches).
                    return page.min.is_some() || page.null_count.is_none_or(|nulls| nulls < page.num_rows);
                };
                match op {
                    Comparison::Eq => min <= value && value <= max,
                    Comparison::Lt => min < value,
                    Comparison::LtEq => min <= value,
                    Comparison::Gt => max > value,
                    Comparison::GtEq => max >= value,
                }
            }
            Self::Compare { .. } => true,
        }
    }
}

/// The smallest and largest non-null values of a column, in stored units; both `None` when
/// every value is null or there are no rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnBounds {
    /// The smallest value.
    pub min: Option<i128>,
    /// The largest value.
    pub max: Option<i128>,
}

impl FileReader {
    /// The smallest and largest values of the flat top-level `column` of an integer-ordered type
    /// (in stored units, see [`StatValue`]), from its pages' statistics; `None` when the
    /// statistics cannot tell (a page without statistics, a column of another type, nested, or unknown).
    ///
    /// # Errors
    /// [`crate::Error::Io`] or [`crate::Error::Corrupt`] if the column's metadata cannot be read.
    pub async fn column_bounds(&self, column: &str) -> Result<Option<ColumnBounds>> {
        let Some(tree) = self.field_columns().iter().find(|t| t.field.name() == column && t.children.is_empty()) else {
            return Ok(None);
        };
        let Some(number) = tree.column else { return Ok(None) };
        let pages = self.load_columns(&[number]).await?;
        let summaries = describe_columns(self.field_columns(), &pages);
        let Some(summary) = summaries.iter().find(|s| s.field == column) else { return Ok(None) };
        let (mut min, mut max) = (None::<i128>, None::<i128>);
        for page in &summary.pages {
            let Some(nulls) = page.null_count else { return Ok(None) };
            match (&page.min, &page.max) {
                (Some(StatValue::Int(lo)), Some(StatValue::Int(hi))) => {
                    min = Some(min.map_or(*lo, |m| m.min(*lo)));
                    max = Some(max.map_or(*hi, |m| m.max(*hi)));
                }
                (None, None) if nulls == page.num_rows => {}
                _ => return Ok(None),
            }
        }
        Ok(Some(ColumnBounds { min, max }))
    }

    /// The rows whose zones (zone maps, or pages in files without them) may satisfy every
    /// predicate (see the module documentation): a selection to read, and to filter again.
    /// Reads the predicates' columns' metadata and zone maps; predicates on unknown or nested
    /// columns rule nothing out.
    ///
    /// # Errors
    /// [`crate::Error::Io`] or [`crate::Error::Corrupt`] if the columns' metadata or zone maps
    /// cannot be read.
    pub async fn rows_matching_statistics(&self, predicates: &[PagePredicate]) -> Result<RowSelection> {
        let mut selection = RowSelection::all(self.num_rows());
        // Flat top-level fields only: their one column holds one value per row.
        let flat: HashMap<&str, (usize, &arrow_schema::DataType)> = self
            .field_columns()
            .iter()
            .enumerate()
            .filter(|(_, tree)| tree.children.is_empty())
            .map(|(i, tree)| (tree.field.name().as_str(), (i, tree.field.data_type())))
            .collect();
        let fields: Vec<usize> = predicates.iter().filter_map(|p| flat.get(p.column()).map(|(i, _)| *i)).collect();
        if fields.is_empty() {
            return Ok(selection);
        }
        let zones = self.column_zones(&fields).await?;
        for predicate in predicates {
            let Some((field, data_type)) = flat.get(predicate.column()) else { continue };
            let Some(column) = zones.get(field) else { continue };
            let mut ranges = Vec::new();
            for (i, zone) in column.starts.windows(2).zip(&column.stats) {
                let rows = i[0]..i[1];
                let bound = |b: Option<&[u8]>| b.and_then(|b| decode_bound(b, data_type));
                let summary = PageSummary {
                    num_rows: rows.end - rows.start,
                    encoding: String::new(),
                    buffer_sizes: Vec::new(),
                    compression: Compression::None,
                    null_count: zone.as_ref().map(|z| z.null_count),
                    min: bound(zone.as_ref().and_then(|z| z.min.as_deref())),
                    max: bound(zone.as_ref().and_then(|z| z.max.as_deref())),
                };
                if predicate.may_match(&summary) {
                    ranges.push(rows);
                }
            }
            selection = selection.intersect(&RowSelection::from_sorted_ranges(ranges));
        }
        Ok(selection)
    }
}
