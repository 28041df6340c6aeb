//! The crate's one error type.
//!
//! Every failure a caller may want to tell apart has its own variant: storage failures keep the
//! storage error as their `source()`, a corrupt or unfinished file says where it found the
//! problem, and bad arguments say which argument. Errors are cheap to clone (sources are shared)
//! because one failed read may have to be reported to several waiting decoders.

use std::sync::Arc;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A shared, type-erased source error.
pub type SourceError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Errors reported by looseleaf.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage layer failed (file missing, permission denied, network error...).
    #[error("I/O error on {location}: {source}")]
    Io {
        /// The file or object the failed operation was about.
        location: String,
        /// The storage error.
        #[source]
        source: SourceError,
    },

    /// The file is not a valid looseleaf file, or was damaged or truncated.
    #[error("corrupt file {location}: {message}")]
    Corrupt {
        /// The file.
        location: String,
        /// What is wrong, with the byte offset where known.
        message: String,
    },

    /// The file (or the data given to the writer) uses a feature this build does not support.
    #[error("unsupported: {0}")]
    Unsupported(String),

    /// A caller passed an argument that cannot be honoured (out-of-range row, unknown column...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Data given to the writer does not match its schema.
    #[error("schema mismatch: {0}")]
    Schema(String),

    /// Arrow rejected the data it was asked to build.
    #[error("arrow error: {0}")]
    Arrow(#[source] Arc<arrow_schema::ArrowError>),

    /// A background task (scheduling, I/O or decoding) ended abnormally.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// An I/O error about `location`.
    pub fn io(location: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Io { location: location.into(), source: Arc::new(source) }
    }

    /// A corrupt-file error about `location`.
    pub fn corrupt(location: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Corrupt { location: location.into(), message: message.into() }
    }

    /// Attaches a file location to errors that do not carry one yet (decode errors found deep
    /// inside an encoding know what is wrong but not which file they were reading; so do the
    /// checks of a file's version and types, and of a read's rows). An unsupported feature or an
    /// invalid argument gets the location at the front of its message, unless the message names
    /// it already; I/O errors always carry theirs.
    pub fn with_location(self, location: &str) -> Self {
        match self {
            Self::Corrupt { location: l, message } if l.is_empty() => {
                Self::Corrupt { location: location.to_string(), message }
            }
            Self::Arrow(e) => Self::Corrupt { location: location.to_string(), message: e.to_string() },
            Self::Unsupported(message) if !message.contains(location) => {
                Self::Unsupported(format!("{location}: {message}"))
            }
            Self::InvalidArgument(message) if !message.contains(location) => {
                Self::InvalidArgument(format!("{location}: {message}"))
            }
            other => other,
        }
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Arrow(Arc::new(e))
    }
}

/// Returns early with an error built by `$make` from a format string.
///
/// `bail!(corrupt, "...")` gives a [`Error::Corrupt`] with an empty location (filled in by
/// [`Error::with_location`] higher up); `bail!(invalid, "...")` an [`Error::InvalidArgument`];
/// `bail!(unsupported, "...")` an [`Error::Unsupported`].
macro_rules! bail {
    (corrupt, $($arg:tt)*) => {
        return Err($crate::error::Error::corrupt("", format!($($arg)*)))
    };
    (invalid, $($arg:tt)*) => {
        return Err($crate::error::Error::InvalidArgument(format!($($arg)*)))
    };
    (unsupported, $($arg:tt)*) => {
        return Err($crate::error::Error::Unsupported(format!($($arg)*)))
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
