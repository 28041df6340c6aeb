//! [`ReadOptions`]: how a read is made (batch size, I/O depth and buffer, dictionary columns),
//! from every front end down to the I/O scheduler, and [`ByteCount`], the unit of sizes.
//!
//! Options are validated once, where they are built: the typed fields only hold valid values
//! (non-zero counts), and [`ReadOptions::set`] is the one place where options given by name —
//! Python keywords, Spark options, command-line flags — are parsed and checked, so every front
//! end reports a bad value with the same error, naming the option.
//!
//! Each field is optional: a read's options fall back on the reader's
//! ([`FileReader::with_options`](crate::FileReader::with_options)), and those on the defaults the
//! core owns ([`DEFAULT_BATCH_SIZE`], [`DEFAULT_BATCH_BYTES`], [`DEFAULT_BATCH_MAX_BYTES`], and the storage's own
//! [`IoOptions`](crate::IoOptions)).

use std::fmt;
use std::num::NonZeroUsize;

use crate::error::{Error, Result, bail};
use crate::io::{IoBudget, IoDepth, IoOptions};
use crate::units::ByteCount;

/// Default (and most) rows per output batch when the read does not set a batch size.
///
/// As Vortex's and Parquet's `iter_batches`: a batch costs a decode task, wake-ups and a trip
/// through the consumer (Python, Spark) whatever its size, which at 8,192 rows was half of a
/// narrow projection (lineitem's `l_shipdate, l_extendedprice`: 33 ms, 13–16 ms at 65,536).
pub const DEFAULT_BATCH_SIZE: NonZeroUsize = NonZeroUsize::MIN.saturating_add(65535);

/// Default (and most) rows per output batch of a read returning dictionary columns: the most
/// values `Int16` keys index, so that such reads keep 2-byte keys by default (keys must index a
/// whole batch of distinct values, see `ReadBuilder::with_dictionary_columns`).
pub const DEFAULT_DICTIONARY_BATCH_SIZE: NonZeroUsize = NonZeroUsize::MIN.saturating_add(32767);

/// Stored bytes of any one column a default batch aims at: a column wider than
/// `DEFAULT_BATCH_BYTES / DEFAULT_BATCH_SIZE` bytes a row (embeddings, say) gets fewer rows per
/// batch, so that a batch stays well within each of its pages and rarely has to be copied
/// together from two.
pub const DEFAULT_BATCH_BYTES: ByteCount = ByteCount::mib(2);

/// Stored bytes of all its columns a default batch holds at most, so that a batch of a table of
/// thousands of columns stays bounded. The bound is per column above, not per row, because a
/// batch of a few hundred rows decodes every column's blocks of 1,024 values several times and
/// pays a batch's fixed costs once per column: a 2,000-column table scanned 1.9–3.6× slower in
/// batches of 2 MiB (428 rows) than in batches of 8,192 rows, the 300-column table 1.25×.
pub const DEFAULT_BATCH_MAX_BYTES: ByteCount = ByteCount::mib(64);

/// A value of an option given by name (see [`ReadOptions::set`]), as a front end received it.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// A whole number, possibly negative (a front end passes what the user typed).
    Int(i128),
    /// Text: a number or size to parse (Spark options and command-line flags are text), or one
    /// name.
    Text(String),
    /// A list of names.
    List(Vec<String>),
    /// A boolean.
    Bool(bool),
    /// A shared budget (the only valid value of `io_budget`; a front end passes the handle
    /// its user made).
    Budget(IoBudget),
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Text(s) => write!(f, "{s:?}"),
            Self::List(names) => write!(f, "{names:?}"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::Budget(budget) => write!(f, "{budget:?}"),
        }
    }
}

/// How a read is made. `None` fields take the reader's value, then the core's default.
///
/// This type deliberately says nothing about *what* is read (columns, rows): that is the
/// [`ReadBuilder`](crate::ReadBuilder)'s business.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Rows per output batch (the last batch may be shorter). Default: [`DEFAULT_BATCH_SIZE`]
    /// rows, or fewer when a projected column or the whole row is wide: as many as fit in
    /// [`DEFAULT_BATCH_BYTES`] of the widest column's stored data and in
    /// [`DEFAULT_BATCH_MAX_BYTES`] of the row's (at least one); and for short reads, few enough
    /// that each decode thread gets four batches (down to 8,192 rows).
    pub batch_size: Option<NonZeroUsize>,
    /// Reads in flight at once: a fixed number, or adaptive within bounds. Default: the
    /// storage's ([`IoOptions`](crate::IoOptions): fixed for local files, adaptive for object
    /// stores).
    pub io_depth: Option<IoDepth>,
    /// The I/O buffer: bytes read ahead of the consumer before reading pauses (see
    /// [`IoScheduler`](crate::io::IoScheduler) for when it may be exceeded). Default: the
    /// storage's. Never zero.
    pub io_buffer: Option<ByteCount>,
    /// Top-level columns returned as dictionary arrays (see
    /// [`ReadBuilder::with_dictionary_columns`](crate::ReadBuilder::with_dictionary_columns)).
    pub dictionary_columns: Option<Vec<String>>,
    /// Decode threads a read keeps busy: one batch more than this is decoded at once (see
    /// [`steps_in_flight`](crate::read::decode_stream::steps_in_flight)). Default: the number
    /// of CPUs.
    pub decode_parallelism: Option<NonZeroUsize>,
    /// Whether page buffers read whole are verified against their checksums (see
    /// [`BufferChecks`](crate::io::BufferChecks)). Default: yes; turning it off saves about
    /// 50 ms per GB read on one core, at the price of damage going unnoticed.
    pub verify_checksums: Option<bool>,
    /// A byte budget and I/O depth shared with other reads (see [`IoBudget`]), on top of the
    /// read's own buffer and depth. Default: the process's
    /// ([`IoBudget::set_process_default`]), if it has one.
    pub io_budget: Option<IoBudget>,
    /// Whether strings and binaries (at any depth) come back as `Utf8View`/`BinaryView`
    /// instead of the types they were written as: a view per value over the bytes as decoded
    /// (the loaded page for plain pages, the dictionary for dictionary-encoded ones), without
    /// copying them. Default: no. Dictionary columns keep their value type.
    pub string_view: Option<bool>,
}

/// The names [`ReadOptions::set`] knows, in the order the documentation lists them.
pub const READ_OPTION_NAMES: [&str; 10] = [
    "batch_size",
    "io_depth",
    "io_depth_min",
    "io_depth_max",
    "io_buffer_bytes",
    "io_budget",
    "dictionary_columns",
    "decode_parallelism",
    "verify_checksums",
    "string_view",
];

/// The read option `spelling` names, as front ends that take options as text receive them:
/// `batch_size`, `batchSize` or `batchsize` (Spark passes option names lower-cased) all name
/// `batch_size`. `None` for a name that is no read option.
pub fn read_option_name(spelling: &str) -> Option<&'static str> {
    let key: String = spelling.chars().filter(|c| *c != '_').flat_map(char::to_lowercase).collect();
    READ_OPTION_NAMES.iter().find(|name| name.replace('_', "") == key).copied()
}

/// The bounds of an adaptive depth asked for as `io_depth="auto"` without bounds.
const AUTO_DEPTH: (NonZeroUsize, NonZeroUsize) =
    (NonZeroUsize::MIN.saturating_add(7), NonZeroUsize::MIN.saturating_add(255));

impl ReadOptions {
    /// The most rows of a batch when the read sets no batch size: [`DEFAULT_BATCH_SIZE`], or
    /// [`DEFAULT_DICTIONARY_BATCH_SIZE`] if it returns dictionary columns.
    pub fn default_batch_size(&self) -> NonZeroUsize {
        match &self.dictionary_columns {
            Some(columns) if !columns.is_empty() => DEFAULT_DICTIONARY_BATCH_SIZE,
            _ => DEFAULT_BATCH_SIZE,
        }
    }

    /// Sets the option called `name` from a value a front end received.
    ///
    /// Names: `batch_size`, `decode_parallelism` (whole numbers of at least 1), `io_depth` (a
    /// whole number for a fixed depth, or `"auto"` for an adaptive one), `io_depth_min` and
    /// `io_depth_max` (the bounds of an adaptive depth; setting either makes the depth
    /// adaptive), `io_buffer_bytes` (a size of at least 1 byte: a number, or text such as
    /// `"64 MiB"`), `io_budget` (an [`IoBudget`] handle, given as [`OptionValue::Budget`]),
    /// `dictionary_columns` (a list of column names, or one name), `verify_checksums` and
    /// `string_view` (booleans, or `true`/`false` as text).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option, for an unknown name or a value out of range.
    pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
        match name {
            "batch_size" => self.batch_size = Some(count(name, &value)?),
            "io_depth" => {
                self.io_depth = Some(match &value {
                    OptionValue::Text(text) if text.trim().eq_ignore_ascii_case("auto") => {
                        IoDepth::Adaptive { min: AUTO_DEPTH.0, max: AUTO_DEPTH.1 }
                    }
                    _ => IoDepth::Fixed(count(name, &value)?),
                })
            }
            "io_depth_min" | "io_depth_max" => {
                let bound = count(name, &value)?;
                let (min, max) = match self.io_depth {
                    Some(IoDepth::Adaptive { min, max }) => (min, max),
                    _ => AUTO_DEPTH,
                };
                let (min, max) = if name == "io_depth_min" { (bound, max) } else { (min, bound) };
                if min > max {
                    bail!(invalid, "{name}: the adaptive depth's minimum {min} is above its maximum {max}");
                }
                self.io_depth = Some(IoDepth::Adaptive { min, max });
            }
            "decode_parallelism" => self.decode_parallelism = Some(count(name, &value)?),
            "io_buffer_bytes" => self.io_buffer = Some(size(name, &value)?),
            "io_budget" => match value {
                OptionValue::Budget(budget) => self.io_budget = Some(budget),
                other => bail!(invalid, "{name} must be an IoBudget (a budget shared by reads), got {other}"),
            },
            "dictionary_columns" => {
                self.dictionary_columns = Some(match value {
                    OptionValue::List(names) => names,
                    OptionValue::Text(one) => vec![one],
                    other => bail!(invalid, "{name} must be a list of column names, got {other}"),
                })
            }
            "verify_checksums" => self.verify_checksums = Some(boolean(name, &value)?),
            "string_view" => self.string_view = Some(boolean(name, &value)?),
            other => bail!(invalid, "unknown read option {other:?} (the options are {})", READ_OPTION_NAMES.join(", ")),
        }
        Ok(())
    }

    /// Read options given as text by name, in any spelling [`read_option_name`] knows (the
    /// options of the Spark data sources, the JVM connector's among them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option, for an unknown name or a bad value.
    pub fn from_text<'a>(options: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<ReadOptions> {
        let mut out = ReadOptions::default();
        for (spelling, value) in options {
            let Some(name) = read_option_name(spelling) else {
                bail!(invalid, "unknown read option {spelling:?} (the options are {})", READ_OPTION_NAMES.join(", "));
            };
            out.set(name, OptionValue::Text(value.to_owned())).map_err(|e| match read_option_name(spelling) {
                Some(name) if name != spelling => named(spelling, e),
                _ => e,
            })?;
        }
        Ok(out)
    }

    /// These options by name as text, the form [`from_text`](Self::from_text) reads (unset
    /// options and a shared budget, which has no text form, left out).
    pub fn to_text(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(n) = self.batch_size {
            out.push(("batch_size", n.to_string()));
        }
        match self.io_depth {
            Some(IoDepth::Fixed(n)) => out.push(("io_depth", n.to_string())),
            Some(IoDepth::Adaptive { min, max }) => {
                out.push(("io_depth_min", min.to_string()));
                out.push(("io_depth_max", max.to_string()));
            }
            None => {}
        }
        if let Some(bytes) = self.io_buffer {
            out.push(("io_buffer_bytes", bytes.get().to_string()));
        }
        if let Some(n) = self.decode_parallelism {
            out.push(("decode_parallelism", n.to_string()));
        }
        if let Some(verify) = self.verify_checksums {
            out.push(("verify_checksums", verify.to_string()));
        }
        if let Some(views) = self.string_view {
            out.push(("string_view", views.to_string()));
        }
        if let Some(columns) = &self.dictionary_columns {
            // One name each: the text form has no list.
            out.extend(columns.iter().map(|c| ("dictionary_columns", c.clone())));
        }
        out
    }

    /// These options, with every unset field taken from `defaults`.
    pub fn or(&self, defaults: &ReadOptions) -> ReadOptions {
        ReadOptions {
            batch_size: self.batch_size.or(defaults.batch_size),
            io_depth: self.io_depth.or(defaults.io_depth),
            io_buffer: self.io_buffer.or(defaults.io_buffer),
            dictionary_columns: self.dictionary_columns.clone().or_else(|| defaults.dictionary_columns.clone()),
            decode_parallelism: self.decode_parallelism.or(defaults.decode_parallelism),
            verify_checksums: self.verify_checksums.or(defaults.verify_checksums),
            io_budget: self.io_budget.clone().or_else(|| defaults.io_budget.clone()),
            string_view: self.string_view.or(defaults.string_view),
        }
    }

    /// The shared budget of a read with these options: its own, else the process's.
    pub fn shared_budget(&self) -> Option<IoBudget> {
        self.io_budget.clone().or_else(IoBudget::process_default)
    }

    /// The I/O settings of a read with these options from a storage whose defaults are `storage`.
    pub fn io_options(&self, storage: IoOptions) -> IoOptions {
        IoOptions {
            depth: self.io_depth.unwrap_or(storage.depth),
            buffer: self.io_buffer.unwrap_or(storage.buffer),
            ..storage
        }
    }
}

impl IoBudget {
    /// A shared budget from values a front end received, checked as [`ReadOptions::set`]
    /// checks options: `bytes`, a size of at least 1 byte (a number, or text such as
    /// `"1 GiB"`, as `io_buffer_bytes`), and `depth`, the most reads in flight at once over
    /// every read sharing it (a whole number of at least 1), or none.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `bytes` or `depth`.
    pub fn from_values(bytes: &OptionValue, depth: Option<&OptionValue>) -> Result<IoBudget> {
        let bytes = size("bytes", bytes)?;
        let depth = depth.map(|depth| count("depth", depth)).transpose()?;
        Ok(IoBudget::new(bytes, depth))
    }
}

/// A size of at least 1 byte from a value given for option `name`.
fn size(name: &str, value: &OptionValue) -> Result<ByteCount> {
    let bytes = match value {
        OptionValue::Text(text) => text.parse::<ByteCount>().map_err(|e| named(name, e))?,
        _ => ByteCount(count(name, value)?.get() as u64),
    };
    if bytes.0 == 0 {
        bail!(invalid, "{name} must be at least 1 byte, got {value}");
    }
    Ok(bytes)
}

/// A boolean (or `true`/`false` as text, any case) from a value given for option `name`.
fn boolean(name: &str, value: &OptionValue) -> Result<bool> {
    match value {
        OptionValue::Bool(b) => Ok(*b),
        OptionValue::Text(text) if text.trim().eq_ignore_ascii_case("true") => Ok(true),
        OptionValue::Text(text) if text.trim().eq_ignore_ascii_case("false") => Ok(false),
        other => bail!(invalid, "{name} must be true or false, got {other}"),
    }
}

/// A whole number of at least 1 from a value given for option `name`.
fn count(name: &str, value: &OptionValue) -> Result<NonZeroUsize> {
    let number = match value {
        OptionValue::Int(n) => Some(*n),
        OptionValue::Text(text) => text.trim().parse::<i128>().ok(),
        OptionValue::List(_) | OptionValue::Bool(_) | OptionValue::Budget(_) => None,
    };
    let Some(number) = number else { bail!(invalid, "{name} must be a whole number, got {value}") };
    usize::try_from(number)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| Error::invalid_argument(format!("{name} must be at least 1, got {number}")))
}

/// `error` (about a value) as an error about option `name`.
fn named(name: &str, error: Error) -> Error {
    match error {
        Error::InvalidArgument { message, .. } => Error::invalid_argument(format!("{name}: {message}")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_by_name_are_checked_and_name_the_option() {
        let mut options = ReadOptions::default();
        options.set("batch_size", OptionValue::Int(100)).unwrap();
        options.set("io_buffer_bytes", OptionValue::Text("1 MiB".into())).unwrap();
        options.set("io_depth", OptionValue::Text("4".into())).unwrap();
        assert_eq!(options.batch_size.map(NonZeroUsize::get), Some(100));
        assert_eq!(options.io_buffer, Some(ByteCount::mib(1)));
        assert_eq!(options.io_depth, Some(IoDepth::Fixed(NonZeroUsize::new(4).unwrap())));
        options.set("io_depth", OptionValue::Text("Auto".into())).unwrap();
        options.set("io_depth_max", OptionValue::Int(32)).unwrap();
        let min = NonZeroUsize::new(8).unwrap();
        assert_eq!(options.io_depth, Some(IoDepth::Adaptive { min, max: NonZeroUsize::new(32).unwrap() }));
        assert!(options.clone().set("io_depth_min", OptionValue::Int(64)).is_err());
        options.set("verify_checksums", OptionValue::Bool(false)).unwrap();
        assert_eq!(options.verify_checksums, Some(false));
        options.set("verify_checksums", OptionValue::Text("True".into())).unwrap();
        assert_eq!(options.verify_checksums, Some(true));
        options.set("string_view", OptionValue::Text("true".into())).unwrap();
        assert_eq!(options.string_view, Some(true));
        for (name, value) in [
            ("batch_size", OptionValue::Int(0)),
            ("io_depth", OptionValue::Int(-3)),
            ("io_depth", OptionValue::Text("automatic".into())),
            ("io_buffer_bytes", OptionValue::Int(0)),
            ("io_buffer_bytes", OptionValue::Text("lots".into())),
            ("decode_parallelism", OptionValue::Bool(true)),
            ("dictionary_columns", OptionValue::Int(1)),
            ("verify_checksums", OptionValue::Int(1)),
            ("verify_checksums", OptionValue::Text("yes".into())),
            ("string_view", OptionValue::Int(1)),
        ] {
            let e = options.clone().set(name, value).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains(name), "{e}");
        }
        let shared = IoBudget::new(ByteCount::mib(64), NonZeroUsize::new(16));
        options.set("io_budget", OptionValue::Budget(shared.clone())).unwrap();
        assert_eq!(options.io_budget, Some(shared.clone()));
        assert_eq!(options.or(&ReadOptions::default()).shared_budget(), Some(shared));
        let e = options.clone().set("io_budget", OptionValue::Int(1 << 20)).unwrap_err();
        assert!(e.to_string().contains("io_budget must be an IoBudget"), "{e}");
        let budget = IoBudget::from_values(&OptionValue::Text("1 GiB".into()), Some(&OptionValue::Int(32))).unwrap();
        assert_eq!((budget.bytes(), budget.depth()), (ByteCount::gib(1), NonZeroUsize::new(32)));
        assert_eq!(IoBudget::from_values(&OptionValue::Int(5), None).unwrap().depth(), None);
        for (bytes, depth) in [(OptionValue::Int(0), None), (OptionValue::Int(1), Some(OptionValue::Int(0)))] {
            let e = IoBudget::from_values(&bytes, depth.as_ref()).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        }
        let e = options.set("batchsize", OptionValue::Int(1)).unwrap_err();
        assert!(e.to_string().contains("unknown read option \"batchsize\""), "{e}");
    }

    #[test]
    fn options_as_text_in_every_spelling() {
        assert_eq!(read_option_name("batchsize"), Some("batch_size"));
        assert_eq!(read_option_name("ioBufferBytes"), Some("io_buffer_bytes"));
        assert_eq!(read_option_name("io_depth"), Some("io_depth"));
        assert_eq!(read_option_name("maxPartitionBytes"), None);
        let options = ReadOptions::from_text([
            ("batchSize", "1000"),
            ("iobufferbytes", "64 MiB"),
            ("verifyChecksums", "false"),
            ("ioDepthMax", "64"),
            ("decodeparallelism", "3"),
        ])
        .unwrap();
        assert_eq!(options.batch_size, NonZeroUsize::new(1000));
        assert_eq!(options.io_buffer, Some(ByteCount::mib(64)));
        assert_eq!(options.verify_checksums, Some(false));
        let text = options.to_text();
        let again = ReadOptions::from_text(text.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(again, options);
        let e = ReadOptions::from_text([("batchSize", "0")]).unwrap_err();
        assert!(e.to_string().contains("batchSize: batch_size must be at least 1, got 0"), "{e}");
        let e = ReadOptions::from_text([("batchsizes", "10")]).unwrap_err();
        assert!(e.to_string().contains("unknown read option \"batchsizes\""), "{e}");
    }

    #[test]
    fn unset_options_fall_back_on_defaults() {
        let two = IoDepth::Fixed(NonZeroUsize::new(2).unwrap());
        let reader = ReadOptions { batch_size: NonZeroUsize::new(10), io_depth: Some(two), ..Default::default() };
        let read = ReadOptions { batch_size: NonZeroUsize::new(5), ..Default::default() };
        let merged = read.or(&reader);
        assert_eq!(merged.batch_size, NonZeroUsize::new(5));
        assert_eq!(merged.io_depth, Some(two));
        assert_eq!(merged.io_buffer, None);
    }
}
