//! The crate's one error type.
//!
//! Every failure a caller may want to tell apart has its own variant: storage failures keep the
//! storage error as their `source()`, a corrupt or unfinished file says where it found the
//! problem (the file, and the byte offset where known), and bad arguments say which argument.
//! Errors found deep inside an encoding know what is wrong but not which file they were reading:
//! they are built without a location, and [`Error::with_location`] adds it where the file is
//! known (the reader's entry points do so for every error they return). Errors are cheap to
//! clone (sources are shared) because one failed read may have to be reported to several
//! waiting decoders.

use std::fmt;
use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A shared, type-erased source error.
pub type SourceError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Errors reported by looseleaf.
///
/// The `Display` form names the file (when known) and the problem, followed by the source
/// error's own message, so that one line says everything; [`std::error::Error::source`] gives
/// the source itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The storage layer failed (file missing, permission denied, network error...).
    Io {
        /// The file or object the failed operation was about.
        location: String,
        /// What kind of storage failure it was.
        kind: IoErrorKind,
        /// The storage error.
        source: SourceError,
    },

    /// The file is not a valid looseleaf file, or was damaged or truncated.
    Corrupt {
        /// The file, once known (see [`Error::with_location`]).
        location: Option<String>,
        /// The byte offset of the damaged structure in the file, where known.
        offset: Option<u64>,
        /// What is wrong.
        message: String,
        /// The error that revealed the damage (Arrow rejecting decoded data, say), if any.
        source: Option<SourceError>,
    },

    /// The file (or the data given to the writer) uses a feature this build does not support.
    Unsupported {
        /// The file, once known.
        location: Option<String>,
        /// What is not supported.
        message: String,
    },

    /// A caller passed an argument that cannot be honoured (out-of-range row, unknown column...).
    /// The message names the argument.
    InvalidArgument {
        /// The file the argument was about, once known.
        location: Option<String>,
        /// What is wrong, naming the argument.
        message: String,
    },

    /// Data given to the writer does not match its schema.
    Schema(String),

    /// A read's result, or a piece of it, needs more memory than the process can get: refused
    /// before allocating it (an allocation that fails aborts a Rust process). The message says
    /// how much was needed and what to do instead.
    OutOfMemory {
        /// The file, once known.
        location: Option<String>,
        /// What needed how much.
        message: String,
    },

    /// Arrow rejected data it was asked to build, where no file is involved yet (a reader adds
    /// the file with [`Error::with_location`], which makes this a [`Error::Corrupt`]).
    Arrow(Arc<arrow_schema::ArrowError>),

    /// A background task (scheduling, I/O or decoding) ended abnormally: a bug.
    Internal(String),
}

/// What kind of storage failure an [`Error::Io`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoErrorKind {
    /// The file, object or bucket does not exist.
    NotFound,
    /// Access was denied (missing or wrong credentials, file permissions).
    PermissionDenied,
    /// The file or object changed since it was opened (overwritten, rewritten in place,
    /// truncated): reading on would mix bytes of two versions.
    Changed,
    /// Anything else: a network failure, a store's error, a disk's.
    Other,
}

/// What kind of failure an [`Error`] is, for front ends that tell callers apart by class (a
/// Python exception class, a Java exception class): one classification for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file or object that does not exist.
    NotFound,
    /// Access denied.
    PermissionDenied,
    /// The file or object changed since it was opened.
    Changed,
    /// Another storage failure.
    Io,
    /// A damaged, truncated or unfinished file.
    Corrupt,
    /// A feature this build does not support.
    Unsupported,
    /// A bad argument.
    InvalidArgument,
    /// Data that does not match the writer's schema.
    Schema,
    /// More memory than the process can get.
    OutOfMemory,
    /// A bug.
    Internal,
}

impl Error {
    /// An I/O error about `location`; its kind is found from `source` (an `std::io::Error` or an
    /// `object_store::Error` that says the file is missing or access denied).
    pub fn io(location: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        let kind = io_kind(&source);
        Self::Io { location: location.into(), kind, source: Arc::new(source) }
    }

    /// An I/O error about `location` whose kind the caller knows (a store's classified error).
    pub fn io_of_kind(
        location: impl Into<String>,
        kind: IoErrorKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Io { location: location.into(), kind, source: Arc::new(source) }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Io { kind: IoErrorKind::NotFound, .. } => ErrorKind::NotFound,
            Self::Io { kind: IoErrorKind::PermissionDenied, .. } => ErrorKind::PermissionDenied,
            Self::Io { kind: IoErrorKind::Changed, .. } => ErrorKind::Changed,
            Self::Io { .. } => ErrorKind::Io,
            Self::Corrupt { .. } => ErrorKind::Corrupt,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Self::Schema(_) => ErrorKind::Schema,
            Self::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            // An Arrow error no reader placed in a file (see `with_location`): not a file's fault.
            Self::Internal(_) | Self::Arrow(_) => ErrorKind::Internal,
        }
    }

    /// A corrupt-file error whose file is not known yet.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::Corrupt { location: None, offset: None, message: message.into(), source: None }
    }

    /// A corrupt-file error about the structure at byte `offset` of a file not known yet.
    pub fn corrupt_at(offset: u64, message: impl Into<String>) -> Self {
        Self::Corrupt { location: None, offset: Some(offset), message: message.into(), source: None }
    }

    /// An unsupported-feature error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::Unsupported { location: None, message: message.into() }
    }

    /// An invalid-argument error; `message` names the argument.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::InvalidArgument { location: None, message: message.into() }
    }

    /// An out-of-memory error about a file not known yet.
    pub fn out_of_memory(message: impl Into<String>) -> Self {
        Self::OutOfMemory { location: None, message: message.into() }
    }

    /// An internal error (a bug).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

    /// Attaches the file's location to an error that does not carry one yet. An Arrow error
    /// found while reading a file becomes a [`Error::Corrupt`] about it, keeping the Arrow error
    /// as its source. Errors that name their file already are returned unchanged.
    pub fn with_location(self, location: &str) -> Self {
        let known = || Some(location.to_string());
        match self {
            Self::Corrupt { location: None, offset, message, source } => {
                Self::Corrupt { location: known(), offset, message, source }
            }
            Self::Arrow(e) => Self::Corrupt {
                location: known(),
                offset: None,
                message: "its data does not form valid Arrow arrays".into(),
                source: Some(e),
            },
            Self::Unsupported { location: None, message } => Self::Unsupported { location: known(), message },
            Self::InvalidArgument { location: None, message } => Self::InvalidArgument { location: known(), message },
            Self::OutOfMemory { location: None, message } => Self::OutOfMemory { location: known(), message },
            other => other,
        }
    }

    /// The file the error is about, if known.
    pub fn location(&self) -> Option<&str> {
        match self {
            Self::Io { location, .. } => Some(location),
            Self::Corrupt { location, .. }
            | Self::Unsupported { location, .. }
            | Self::InvalidArgument { location, .. }
            | Self::OutOfMemory { location, .. } => location.as_deref(),
            Self::Schema(_) | Self::Arrow(_) | Self::Internal(_) => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { location, source, .. } => write!(f, "I/O error on {location}: {source}"),
            Self::Corrupt { location, offset, message, source } => {
                f.write_str("corrupt file")?;
                if let Some(location) = location {
                    write!(f, " {location}")?;
                }
                if let Some(offset) = offset {
                    write!(f, " (at byte {offset})")?;
                }
                write!(f, ": {message}")?;
                if let Some(source) = source {
                    write!(f, ": {source}")?;
                }
                Ok(())
            }
            Self::Unsupported { location, message } => match location {
                Some(location) => write!(f, "unsupported: {location}: {message}"),
                None => write!(f, "unsupported: {message}"),
            },
            Self::InvalidArgument { location, message } => match location {
                Some(location) => write!(f, "invalid argument: {location}: {message}"),
                None => write!(f, "invalid argument: {message}"),
            },
            Self::Schema(message) => write!(f, "schema mismatch: {message}"),
            Self::OutOfMemory { location, message } => match location {
                Some(location) => write!(f, "out of memory: {location}: {message}"),
                None => write!(f, "out of memory: {message}"),
            },
            Self::Arrow(e) => write!(f, "arrow error: {e}"),
            Self::Internal(message) => write!(f, "internal error: {message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Corrupt { source: Some(source), .. } => Some(source.as_ref()),
            Self::Arrow(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// The kind of a storage error from its type: a local file's (`std::io::Error`) or a store's
/// (`object_store::Error`).
fn io_kind(source: &(dyn std::error::Error + 'static)) -> IoErrorKind {
    if let Some(e) = source.downcast_ref::<std::io::Error>() {
        return match e.kind() {
            std::io::ErrorKind::NotFound => IoErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
            _ => IoErrorKind::Other,
        };
    }
    match source.downcast_ref::<object_store::Error>() {
        Some(object_store::Error::NotFound { .. }) => IoErrorKind::NotFound,
        Some(object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }) => {
            IoErrorKind::PermissionDenied
        }
        _ => IoErrorKind::Other,
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Arrow(Arc::new(e))
    }
}

/// Returns early with an error built from a format string.
///
/// `bail!(corrupt, "...")` gives an [`Error::Corrupt`] without a location (filled in by
/// [`Error::with_location`] higher up); `bail!(invalid, "...")` an [`Error::InvalidArgument`];
/// `bail!(unsupported, "...")`, `bail!(schema, "...")` and `bail!(internal, "...")` the others.
macro_rules! bail {
    (corrupt, $($arg:tt)*) => {
        return Err($crate::error::Error::corrupt(format!($($arg)*)))
    };
    (invalid, $($arg:tt)*) => {
        return Err($crate::error::Error::invalid_argument(format!($($arg)*)))
    };
    (unsupported, $($arg:tt)*) => {
        return Err($crate::error::Error::unsupported(format!($($arg)*)))
    };
    (schema, $($arg:tt)*) => {
        return Err($crate::error::Error::Schema(format!($($arg)*)))
    };
    (internal, $($arg:tt)*) => {
        return Err($crate::error::Error::Internal(format!($($arg)*)))
    };
}

/// Returns early with an error (see [`bail!`]) unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $kind:ident, $($arg:tt)*) => {
        if !$cond {
            $crate::error::bail!($kind, $($arg)*);
        }
    };
}

pub(crate) use bail;
pub(crate) use ensure;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_is_added_once_and_sources_are_kept() {
        let e = Error::corrupt_at(12, "bad magic").with_location("a.leaf").with_location("b.leaf");
        assert_eq!(e.to_string(), "corrupt file a.leaf (at byte 12): bad magic");
        assert_eq!(e.location(), Some("a.leaf"));

        let arrow = Error::from(arrow_schema::ArrowError::InvalidArgumentError("nulls in a non-nullable".into()));
        let e = arrow.with_location("c.leaf");
        assert!(matches!(e, Error::Corrupt { .. }));
        let source = std::error::Error::source(&e).map(|s| s.to_string());
        assert_eq!(source.as_deref(), Some("Invalid argument error: nulls in a non-nullable"));

        let missing = Error::io("e.leaf", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let denied = Error::io("e.leaf", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
        assert_eq!(Error::io("e.leaf", std::io::Error::other("disk")).kind(), ErrorKind::Io);
        assert_eq!(arrow_error_kind(), ErrorKind::Internal);

        let e = Error::invalid_argument("batch_size must be at least 1, got 0").with_location("d.leaf");
        assert_eq!(e.to_string(), "invalid argument: d.leaf: batch_size must be at least 1, got 0");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    fn arrow_error_kind() -> ErrorKind {
        Error::from(arrow_schema::ArrowError::ComputeError("x".into())).kind()
    }
}
