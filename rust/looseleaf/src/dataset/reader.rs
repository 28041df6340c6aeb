//! [`Dataset`]: many looseleaf files read as one table, with Hive-style partition columns.
//!
//! Opening finds the files (see [`DatasetSource`]), opens every one of them (each reads its
//! tail: one request per file, [`OPEN_CONCURRENCY`] at a time) and checks that they share one
//! schema, naming the first file that does not. Rows are numbered across files in the order
//! of [`Dataset::files`]: `take` by those numbers reads only the files that hold them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Fields, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use super::DatasetSource;
use super::discovery::{FoundFile, find_files};
use super::partitioning::HivePartitioning;
use crate::error::{Error, Result, bail};
use crate::options::ReadOptions;
use crate::read::{FileReader, ReadBuilder};
use crate::storage::{Location, StorageOptions};

/// Files opened at once by [`Dataset::open`].
pub const OPEN_CONCURRENCY: usize = 32;

/// How a dataset's partition directories are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Partitioning {
    /// `key=value` directories, with types discovered from the values (see
    /// [`HivePartitioning::discover`]).
    #[default]
    Hive,
    /// `key=value` directories of these columns and types, in this order.
    HiveWith(Fields),
    /// Directories are not read as columns.
    None,
}

/// How a dataset is opened.
#[derive(Debug, Clone, Default)]
pub struct DatasetOptions {
    /// The stores' settings.
    pub storage: StorageOptions,
    /// The default options of the dataset's reads.
    pub read: ReadOptions,
    /// How partition directories are read.
    pub partitioning: Partitioning,
}

/// One file of a dataset.
#[derive(Debug, Clone)]
pub struct DatasetFile {
    /// The open file.
    pub reader: FileReader,
    /// Its path below the dataset's root.
    pub relative_path: String,
    /// Its partition values, one one-element array per partition column.
    pub partition_values: Vec<ArrayRef>,
    /// The number of the file's first row in the dataset.
    pub first_row: u64,
}

/// Many looseleaf files read as one table (see the module documentation). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Dataset {
    inner: Arc<DatasetInner>,
}

#[derive(Debug)]
struct DatasetInner {
    name: String,
    files: Vec<DatasetFile>,
    schema: SchemaRef,
    file_schema: SchemaRef,
    partitioning: HivePartitioning,
    num_rows: u64,
    options: DatasetOptions,
}

impl Dataset {
    /// Opens the dataset `source` names.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if it names no file, if partition directories disagree or a
    /// partition column has the name of a file's column; [`Error::Schema`] naming the first
    /// file whose schema differs from the first file's; errors of opening a file, naming it.
    pub async fn open(source: DatasetSource, options: DatasetOptions) -> Result<Self> {
        let name = match &source {
            DatasetSource::Uri(uri) => uri.clone(),
            DatasetSource::Files(files) => format!("{} files", files.len()),
        };
        let (found, schema_file) = find_files(&source, &options.storage).await?;
        let partitioning = match (&options.partitioning, &source) {
            (Partitioning::None, _) | (_, DatasetSource::Files(_)) => HivePartitioning::default(),
            (Partitioning::Hive, _) => HivePartitioning::discover(found.iter().map(|f| f.relative.as_str()))
                .map_err(|e| e.with_location(&name))?,
            (Partitioning::HiveWith(fields), _) => HivePartitioning::try_new(fields.clone())?,
        };
        let readers = open_all(&found, &options).await?;
        let file_schema = match (readers.first(), schema_file) {
            (Some(first), _) => first.schema().clone(),
            (None, Some(schema_file)) => {
                let location = Location::parse(&schema_file)?;
                FileReader::open_location(&location, &options.storage).await?.schema().clone()
            }
            (None, None) => bail!(invalid, "{name}: no looseleaf files there"),
        };
        let file_schema = common_schema(&file_schema, &readers)?;
        for field in partitioning.fields() {
            if file_schema.field_with_name(field.name()).is_ok() {
                bail!(
                    invalid,
                    "{name}: partition column {:?} is also a column of the files (give partitioning=None to \
                     read the directories' names as they are)",
                    field.name()
                );
            }
        }
        let mut files = Vec::with_capacity(readers.len());
        let mut first_row = 0u64;
        for (reader, found) in readers.into_iter().zip(found) {
            let partition_values =
                partitioning.values(&found.relative).map_err(|e| e.with_location(&found.location))?;
            let rows = reader.num_rows();
            files.push(DatasetFile { reader, relative_path: found.relative, partition_values, first_row });
            first_row = first_row
                .checked_add(rows)
                .ok_or_else(|| Error::invalid_argument(format!("{name}: more than 2^64 rows")))?;
        }
        let mut fields: Vec<Arc<Field>> = file_schema.fields().iter().cloned().collect();
        fields.extend(partitioning.fields().iter().cloned());
        let schema = Arc::new(Schema::new_with_metadata(fields, file_schema.metadata().clone()));
        Ok(Self {
            inner: Arc::new(DatasetInner {
                name,
                files,
                schema,
                file_schema,
                partitioning,
                num_rows: first_row,
                options,
            }),
        })
    }

    /// What the dataset was opened from (a path, or a number of files).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The schema of its rows: the files' columns, then the partition columns.
    pub fn schema(&self) -> &SchemaRef {
        &self.inner.schema
    }

    /// The schema of its files (no partition columns).
    pub fn file_schema(&self) -> &SchemaRef {
        &self.inner.file_schema
    }

    /// The partition columns (empty without partition directories).
    pub fn partitioning(&self) -> &HivePartitioning {
        &self.inner.partitioning
    }

    /// Its files, in row order.
    pub fn files(&self) -> &[DatasetFile] {
        &self.inner.files
    }

    /// The partition values of every file: a batch of the partition columns, one row per file
    /// in the order of [`files`](Self::files).
    ///
    /// # Errors
    /// Only errors of Arrow's assembling the batch.
    pub fn file_partitions(&self) -> Result<RecordBatch> {
        let fields = self.inner.partitioning.fields().clone();
        let files = &self.inner.files;
        let mut columns = Vec::with_capacity(fields.len());
        for (i, field) in fields.iter().enumerate() {
            let values: Vec<&dyn Array> = files.iter().map(|f| f.partition_values[i].as_ref()).collect();
            columns.push(if values.is_empty() {
                arrow_array::new_empty_array(field.data_type())
            } else {
                arrow_select::concat::concat(&values)?
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(files.len()));
        Ok(RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?)
    }

    /// Rows in all files.
    pub fn num_rows(&self) -> u64 {
        self.inner.num_rows
    }

    /// The options it was opened with.
    pub fn options(&self) -> &DatasetOptions {
        &self.inner.options
    }

    /// A read of the dataset, to narrow down with the builder's methods (every row and column
    /// unless narrowed; rows numbered across the files, in order).
    pub fn read(&self) -> ReadBuilder<Dataset> {
        ReadBuilder::new(self.clone())
    }

    /// The file holding dataset row `row`, and the row's number in it.
    pub(crate) fn locate(&self, row: u64) -> Option<(usize, u64)> {
        if row >= self.inner.num_rows {
            return None;
        }
        let files = &self.inner.files;
        // The last file starting at or before `row` (empty files share a start with the next).
        let index = files.partition_point(|f| f.first_row <= row).checked_sub(1)?;
        let file = &files[index];
        Some((index, row - file.first_row))
    }
}

/// Opens `found`, [`OPEN_CONCURRENCY`] at a time, in order.
async fn open_all(found: &[FoundFile], options: &DatasetOptions) -> Result<Vec<FileReader>> {
    // Owned values in each future: the futures are `Send` for any caller's runtime.
    let opens = found.iter().map(|file| {
        let (location, storage, read) = (file.location.clone(), options.storage.clone(), options.read.clone());
        async move {
            let reader = FileReader::open_location(&Location::parse(&location)?, &storage).await?;
            Ok::<_, Error>(reader.with_options(read))
        }
    });
    futures::stream::iter(opens.collect::<Vec<_>>()).buffered(OPEN_CONCURRENCY).try_collect().await
}

/// The schema every file has: `first`'s, nullable where any file's field is.
///
/// # Errors
/// [`Error::Schema`] naming the first file whose columns differ (names, order or
/// types) and the first difference.
fn common_schema(first: &SchemaRef, readers: &[FileReader]) -> Result<SchemaRef> {
    let mut fields: Vec<Field> = first.fields().iter().map(|f| f.as_ref().clone()).collect();
    let first_name = readers.first().map_or("the dataset's schema file", |r| r.location());
    for reader in readers {
        let theirs = reader.schema().fields();
        if let Some(difference) = difference(&fields, theirs) {
            return Err(Error::Schema(format!(
                "{}: its schema differs from {first_name}'s: {difference}",
                reader.location()
            )));
        }
        for (ours, theirs) in fields.iter_mut().zip(theirs) {
            if theirs.is_nullable() && !ours.is_nullable() {
                *ours = ours.clone().with_nullable(true);
            }
        }
    }
    Ok(Arc::new(Schema::new_with_metadata(fields, first.metadata().clone())))
}

/// The first way `theirs` differs from `ours`, nullability aside.
pub(crate) fn difference(ours: &[Field], theirs: &Fields) -> Option<String> {
    for (i, ours) in ours.iter().enumerate() {
        let Some(theirs) = theirs.get(i) else {
            return Some(format!("column {:?} is missing", ours.name()));
        };
        if ours.name() != theirs.name() {
            return Some(format!("column {i} is {:?} there, {:?} here", ours.name(), theirs.name()));
        }
        if !same_type(ours.data_type(), theirs.data_type()) {
            return Some(format!(
                "column {:?} is {} there, {} here",
                ours.name(),
                ours.data_type(),
                theirs.data_type()
            ));
        }
    }
    theirs.get(ours.len()).map(|extra| format!("it has one more column, {:?}", extra.name()))
}

/// Types equal but for the nullability of nested fields.
fn same_type(a: &arrow_schema::DataType, b: &arrow_schema::DataType) -> bool {
    a.equals_datatype(b)
}
