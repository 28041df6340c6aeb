//! The byte reader of a [`Location`]: a local file read by [`LocalFileReader`], any other
//! location by an [`ObjectStoreReader`] over the store [`StorageOptions`] configure, each with
//! the I/O settings of its kind of storage.

use std::sync::Arc;

use super::{IoOptions, LocalFileReader, ObjectStoreReader, RangeReader};
use crate::error::Result;
use crate::storage::{Location, StorageOptions, StorePurpose};

/// A reader of the file at `location`.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) if a local file cannot be opened;
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the store refuses `options`.
pub fn range_reader(location: &Location, options: &StorageOptions) -> Result<Arc<dyn RangeReader>> {
    Ok(match location {
        Location::Local(path) => {
            let reader = LocalFileReader::open(path)?;
            Arc::new(match options.memory_map()? {
                Some(map) => reader.with_memory_map(map),
                None => reader,
            })
        }
        Location::Memory(_) => {
            let (store, path) = location.object_store(options, StorePurpose::Read)?;
            // An in-process store answers as fast as a local disk: local I/O settings.
            Arc::new(ObjectStoreReader::new(store, path, location.to_string()).with_io_defaults(IoOptions::LOCAL))
        }
        Location::Remote { .. } => {
            let (store, path) = location.object_store(options, StorePurpose::Read)?;
            Arc::new(ObjectStoreReader::new(store, path, location.to_string()).with_secrets(options.secrets()))
        }
    })
}
