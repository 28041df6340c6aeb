//! Loading the zone statistics of columns for a filtered read: each column's zone map, or its
//! pages' statistics for a column without one (files written before format 2.1, or with zone
//! maps turned off), so that older files are filtered by pages.

use std::collections::HashMap;
use std::sync::Arc;

use super::FileReader;
use super::field_scheduler::ColumnPages;
use crate::error::{Result, ensure};
use crate::filter::ColumnZones;
use crate::format::proto::{ZoneMap, ZoneMapLocation};
use crate::format::{self, VERIFY_CHECKSUMS};

impl FileReader {
    /// The zones of the flat top-level `fields` (indices in the schema); fields of other types
    /// are left out (nothing rules their rows out).
    ///
    /// # Errors
    /// [`crate::Error::Io`] if a zone map cannot be read, [`crate::Error::Corrupt`] if one does
    /// not match its column (checksum, zone count).
    pub(crate) async fn column_zones(&self, fields: &[usize]) -> Result<HashMap<usize, Arc<ColumnZones>>> {
        self.column_zones_inner(fields).await.map_err(|e| e.with_location(self.location()))
    }

    async fn column_zones_inner(&self, fields: &[usize]) -> Result<HashMap<usize, Arc<ColumnZones>>> {
        let columns: Vec<(usize, u32)> = fields
            .iter()
            .filter_map(|&f| self.field_columns().get(f).map(|tree| (f, tree)))
            .filter(|(_, tree)| tree.children.is_empty())
            .filter_map(|(f, tree)| Some((f, tree.column?)))
            .collect();
        let numbers: Vec<u32> = columns.iter().map(|(_, c)| *c).collect();
        let pages = self.load_columns(&numbers).await?;
        let loads = columns.iter().filter_map(|(field, column)| {
            let pages = pages.get(column)?.clone();
            Some(async move { Ok::<_, crate::Error>((*field, self.zones_of(&pages).await?)) })
        });
        let zones = futures::future::try_join_all(loads).await?;
        Ok(zones.into_iter().filter_map(|(field, zones)| Some((field, zones?))).collect())
    }

    /// The zones of one column: its zone map if it has one, else its pages (`None` if its
    /// values are not the file's rows).
    async fn zones_of(&self, pages: &Arc<ColumnPages>) -> Result<Option<Arc<ColumnZones>>> {
        if pages.num_rows() != self.num_rows() {
            return Ok(None);
        }
        // The finer of the two: a column of small pages skips by its pages.
        if let Some(location) = pages.zone_map.filter(|z| z.num_zones >= pages.pages.len() as u64) {
            if let Some(zones) = self.cached_zones(pages.column) {
                return Ok(Some(zones));
            }
            let zones = Arc::new(self.read_zone_map(pages, location).await?);
            self.cache_zones(pages.column, zones.clone());
            return Ok(Some(zones));
        }
        let starts = (0..pages.pages.len()).map(|i| pages.page_rows(i).start).chain([pages.num_rows()]).collect();
        let stats = pages.pages.iter().map(|p| p.statistics.clone()).collect();
        Ok(Some(Arc::new(ColumnZones { starts, stats })))
    }

    async fn read_zone_map(&self, pages: &ColumnPages, location: ZoneMapLocation) -> Result<ColumnZones> {
        let label = &pages.label;
        let buffer = location.buffer.unwrap_or_default();
        let end = buffer.offset.checked_add(buffer.size);
        ensure!(
            end.is_some_and(|end| end <= pages.data_end),
            corrupt,
            "the zone map of column {label} lies outside the file's data"
        );
        let expected = self.num_rows().div_ceil(location.rows_per_zone.max(1));
        ensure!(
            location.rows_per_zone > 0 && location.num_zones == expected,
            corrupt,
            "the zone map of column {label} has {} zones of {} rows for {} rows",
            location.num_zones,
            location.rows_per_zone,
            self.num_rows()
        );
        let bytes = self.range_reader().get_range(buffer.offset..buffer.offset + buffer.size).await?;
        let crc = match buffer.crc32 {
            Some(crc) if VERIFY_CHECKSUMS => crc,
            _ => crc32fast::hash(&bytes),
        };
        let zone_map: ZoneMap = format::decode_checked(&bytes, crc, &format!("zone map of column {label}"))?;
        ensure!(
            zone_map.zones.len() as u64 == location.num_zones,
            corrupt,
            "the zone map of column {label} holds {} zones, its metadata says {}",
            zone_map.zones.len(),
            location.num_zones
        );
        Ok(ColumnZones::uniform(location.rows_per_zone, self.num_rows(), zone_map.zones))
    }
}
