//! What page statistics answer without reading data: the rows whose zones (zone maps, or
//! pages) a filter does not rule out, for front ends that plan row ranges themselves (the JVM
//! connector skips pages this way before a task starts), and a column's smallest and largest
//! values (`MIN`/`MAX`).
//!
//! Both ask the statistics only what they bound exactly; ruling zones out is stage 1 of every
//! filtered read ([`candidate_rows`](crate::filter::prune::candidate_rows)), the same code here.

use crate::encodings::statistics::StatValue;
use crate::error::Result;
use crate::filter::{BoundPredicate, Predicate, ZoneCounts, prune::candidate_rows};
use crate::read::FileReader;
use crate::read::summary::describe_columns;
use crate::selection::RowSelection;

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

    /// The rows of `within` whose zones (zone maps, or pages in files without them) `filter`
    /// does not rule out by their statistics: a selection to read, and to filter again (the
    /// rows may hold no match), with how many zones of `within` were looked at and ruled out.
    /// Reads the filter's columns' metadata and zone maps, no data.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] if the filter does not bind to the file's schema;
    /// [`crate::Error::Io`] or [`crate::Error::Corrupt`] if the columns' metadata or zone maps
    /// cannot be read.
    pub async fn rows_matching_statistics(
        &self,
        filter: &Predicate,
        within: &RowSelection,
    ) -> Result<(RowSelection, ZoneCounts)> {
        let bound =
            BoundPredicate::bind(filter, self.schema().fields()).map_err(|e| e.with_location(self.location()))?;
        let zones = self.column_zones(&bound.fields()).await?;
        within.check_bounds(self.num_rows()).map_err(|e| e.with_location(self.location()))?;
        Ok(candidate_rows(&bound, &zones, within))
    }
}
