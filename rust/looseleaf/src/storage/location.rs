//! [`Location`]: where a file is, parsed once from what a user wrote, for every front end.
//!
//! | written | location |
//! |---|---|
//! | `data/x.leaf`, `/abs/x.leaf`, `C:\x.leaf` | a local file (`~` is not expanded) |
//! | `file:///abs/x%20y.leaf`, `file://localhost/abs/x` | a local file, percent-decoded |
//! | `memory://name` | an object of one in-memory store shared by the process |
//! | `s3://bucket/key`, `s3a://bucket/key` | Amazon S3 (or an S3-compatible endpoint) |
//! | `gs://bucket/key` | Google Cloud Storage |
//! | `az://container/key`, `abfs[s]://container@account.dfs.core.windows.net/key`, `azure://` | Azure Blob Storage |
//! | `http://host/path`, `https://host/path` | a plain HTTP(S) server (reads), S3 or Azure for their own hosts |
//!
//! Credentials belong in [`StorageOptions`] or the environment, never in the URL: a URL with a
//! user name or password is refused, so that the location can be shown in errors as written.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;

use super::stores::{StorageOptions, StorePurpose, object_store_for};
use crate::error::{Error, Result, bail};

/// The store behind `memory://` locations, shared by every reader and writer of the process.
static MEMORY: LazyLock<Arc<InMemory>> = LazyLock::new(|| Arc::new(InMemory::new()));

/// The kinds of object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// Amazon S3 and S3-compatible stores.
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage (and Data Lake Storage Gen2).
    Azure,
    /// A plain HTTP(S) server.
    Http,
}

impl StoreKind {
    /// The scheme users know it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::S3 => "s3",
            Self::Gcs => "gs",
            Self::Azure => "az",
            Self::Http => "http",
        }
    }

    /// The `object_store` type listing its option keys.
    pub(crate) fn config_type(self) -> &'static str {
        match self {
            Self::S3 => "AmazonS3ConfigKey",
            Self::Gcs => "GoogleConfigKey",
            Self::Azure => "AzureConfigKey",
            Self::Http => "ClientConfigKey",
        }
    }
}

/// A parsed location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file of the local file system.
    Local(PathBuf),
    /// An object of the process's in-memory store.
    Memory(ObjectPath),
    /// An object of an object store.
    Remote {
        /// The kind of store.
        kind: StoreKind,
        /// The URL as written (without a query or fragment).
        url: url::Url,
        /// The object's path within its bucket (or host).
        path: ObjectPath,
    },
}

impl Location {
    /// Parses a path or URL (see the module documentation).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for an unknown scheme; [`Error::InvalidArgument`] for a malformed
    /// URL, a `file://` URL naming another host, or credentials in a URL.
    pub fn parse(text: &str) -> Result<Self> {
        if text.is_empty() {
            bail!(invalid, "a location cannot be empty");
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Ok(Self::Local(PathBuf::from(text)));
        };
        // Errors show the URL without its query: it may hold a SAS token or a signature.
        let shown = without_query(text);
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "memory" {
            let path = ObjectPath::parse(rest)
                .map_err(|e| Error::invalid_argument(format!("{shown:?} is not a valid memory:// location: {e}")))?;
            return Ok(Self::Memory(path));
        }
        let url =
            url::Url::parse(text).map_err(|e| Error::invalid_argument(format!("{shown:?} is not a valid URL: {e}")))?;
        // `abfss://container@account.dfs.core.windows.net/...` names the container there.
        let container_in_user = matches!(scheme.as_str(), "abfs" | "abfss" | "az" | "azure" | "adl");
        if url.password().is_some() || (!url.username().is_empty() && !container_in_user) {
            bail!(
                invalid,
                "{scheme}:// URLs must not hold credentials: pass them in storage_options or the environment"
            );
        }
        if scheme == "file" {
            let path = url.to_file_path().map_err(|()| {
                Error::invalid_argument(format!(
                    "{shown:?}: a file:// URL must name a local path (host empty or localhost)"
                ))
            })?;
            return Ok(Self::Local(path));
        }
        let kind = match scheme.as_str() {
            "s3" | "s3a" => StoreKind::S3,
            "gs" => StoreKind::Gcs,
            "az" | "adl" | "azure" | "abfs" | "abfss" => StoreKind::Azure,
            "http" | "https" => match object_store::ObjectStoreScheme::parse(&url) {
                Ok((object_store::ObjectStoreScheme::AmazonS3, _)) => StoreKind::S3,
                Ok((object_store::ObjectStoreScheme::MicrosoftAzure, _)) => StoreKind::Azure,
                _ => StoreKind::Http,
            },
            other => bail!(
                unsupported,
                "storage scheme {other:?} of {shown:?} (local paths, file://, memory://, s3://, s3a://, gs://, az://, abfs[s]://, http[s]:// are supported)"
            ),
        };
        let (_, path) = object_store::ObjectStoreScheme::parse(&url)
            .map_err(|e| Error::invalid_argument(format!("{shown:?} is not a valid {scheme}:// location: {e}")))?;
        if path.as_ref().is_empty() {
            bail!(invalid, "{shown:?} names a bucket or host, not a file");
        }
        let mut url = url;
        url.set_query(None);
        url.set_fragment(None);
        Ok(Self::Remote { kind, url, path })
    }

    /// The store holding the file and the file's path in it.
    pub(crate) fn object_store(
        &self,
        options: &StorageOptions,
        purpose: StorePurpose,
    ) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
        match self {
            Self::Local(path) => {
                let absolute = std::path::absolute(path).map_err(|e| Error::io(self.to_string(), e))?;
                let object = ObjectPath::from_absolute_path(&absolute).map_err(|e| Error::io(self.to_string(), e))?;
                // A write is durable (file and directory entry synced) before it is visible,
                // as on an object store: `finish()` means the file survives a crash.
                let store = object_store::local::LocalFileSystem::new().with_fsync(purpose == StorePurpose::Write);
                Ok((Arc::new(store), object))
            }
            Self::Memory(path) => Ok((MEMORY.clone(), path.clone())),
            Self::Remote { kind, url, path } => {
                let root = &url[..url::Position::BeforePath];
                Ok((object_store_for(*kind, root, options, purpose)?, path.clone()))
            }
        }
    }

    /// The local path, for a local file.
    pub fn local_path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Local(path) => Some(path),
            Self::Memory(_) | Self::Remote { .. } => None,
        }
    }
}

/// `text` as errors may show it: a URL without its query string and fragment (which may hold a
/// SAS token, a presigned URL's signature or another credential), marked as cut; anything else
/// as it is.
pub fn without_query(text: &str) -> std::borrow::Cow<'_, str> {
    match text.split_once("://") {
        Some((_, rest)) if rest.contains(['?', '#']) => {
            let cut = text.len() - rest.len() + rest.find(['?', '#']).unwrap_or(rest.len());
            format!("{}?<redacted>", &text[..cut]).into()
        }
        _ => text.into(),
    }
}

impl fmt::Display for Location {
    /// The location as the user wrote it (a URL without its query string).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(path) => write!(f, "{}", path.display()),
            Self::Memory(path) => write!(f, "memory://{path}"),
            Self::Remote { url, .. } => write!(f, "{url}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(text: &str) -> (StoreKind, String) {
        match Location::parse(text).unwrap() {
            Location::Remote { kind, path, .. } => (kind, path.to_string()),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parses_paths_and_urls() {
        assert_eq!(Location::parse("data/x.leaf").unwrap(), Location::Local("data/x.leaf".into()));
        assert_eq!(Location::parse("/tmp/a b.leaf").unwrap(), Location::Local("/tmp/a b.leaf".into()));
        assert_eq!(Location::parse("file:///tmp/a%20b.leaf").unwrap(), Location::Local("/tmp/a b.leaf".into()));
        assert_eq!(Location::parse("file://localhost/tmp/x").unwrap(), Location::Local("/tmp/x".into()));
        assert_eq!(Location::parse("memory://t/x.leaf").unwrap(), Location::Memory(ObjectPath::from("t/x.leaf")));
        assert_eq!(remote("s3://bucket/a/b.leaf"), (StoreKind::S3, "a/b.leaf".into()));
        assert_eq!(remote("s3a://bucket/a%20b.leaf"), (StoreKind::S3, "a b.leaf".into()));
        assert_eq!(remote("gs://bucket/x.leaf"), (StoreKind::Gcs, "x.leaf".into()));
        assert_eq!(remote("az://container/x.leaf"), (StoreKind::Azure, "x.leaf".into()));
        assert_eq!(remote("abfss://container@acct.dfs.core.windows.net/d/x.leaf").0, StoreKind::Azure);
        assert_eq!(remote("https://host.example/data/x.leaf"), (StoreKind::Http, "data/x.leaf".into()));
        assert_eq!(remote("https://bucket.s3.us-east-1.amazonaws.com/x.leaf").0, StoreKind::S3);
        assert!(matches!(Location::parse("file://elsewhere/x"), Err(Error::InvalidArgument { .. })));
        assert!(matches!(Location::parse("ftp://host/x"), Err(Error::Unsupported { .. })));
        assert!(matches!(Location::parse("s3://bucket"), Err(Error::InvalidArgument { .. })));
        assert!(matches!(Location::parse("s3://key:secret@bucket/x"), Err(Error::InvalidArgument { .. })));
        assert!(matches!(Location::parse(""), Err(Error::InvalidArgument { .. })));
        let shown = Location::parse("https://host/x.leaf?sig=abc").unwrap().to_string();
        assert_eq!(shown, "https://host/x.leaf");
        for bad in ["https://host?sig=s3cr3t", "ftp://host/x?sig=s3cr3t", "s3://[bad/x?X-Amz-Signature=s3cr3t"] {
            let e = Location::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("s3cr3t") && e.contains("?<redacted>"), "{e}");
        }
        assert_eq!(without_query("data/what?.leaf"), "data/what?.leaf", "a local name is not a URL");
    }
}
