//! Whole objects at a [`Location`]: listing a directory (or prefix), reading, writing and
//! deleting small objects. What a dataset layer (the Spark data source's listing and commit
//! protocol) needs of any storage, local directories included, through the same stores reads
//! use.

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::location::Location;
use super::retry::{Retry, retrying};
use super::stores::{StorageOptions, StorePurpose};
use super::{StoreError, StoreErrorKind};
use crate::error::{Error, Result};

/// An object found by [`Location::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Where it is, in the form of the listed location (a local path, or a URL).
    pub location: String,
    /// Its path below the listed location, as stored (`k=a%2Fb/part-0.leaf`: never decoded,
    /// unlike a slice of a URL's `location`); `listed.child(relative)` is `location`.
    pub relative: String,
    /// Its size in bytes.
    pub size: u64,
}

impl Location {
    /// The location of `name` inside this one, taken as a directory (`name` may hold `/`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `name` is not a valid relative path.
    pub fn child(&self, name: &str) -> Result<Location> {
        let bad = || Error::invalid_argument(format!("{name:?} is not a valid name inside {self}"));
        if name.is_empty() || name.starts_with('/') || name.split('/').any(|part| part == "..") {
            return Err(bad());
        }
        Ok(match self {
            Self::Local(path) => Self::Local(path.join(name)),
            Self::Memory(path) => Self::Memory(join(path, name).ok_or_else(bad)?),
            Self::Remote { url, .. } => {
                let mut base = url.clone();
                if !base.path().ends_with('/') {
                    base.set_path(&format!("{}/", base.path()));
                }
                // `name` is part of a key as it is stored, not of a URL: characters a URL
                // reads otherwise are escaped, `%` first (partition directories hold escapes
                // such as `k=a%2Fb`, which must stay three characters, not become a `/`).
                let escaped = name.replace('%', "%25").replace('#', "%23").replace('?', "%3F");
                Location::parse(base.join(&escaped).map_err(|_| bad())?.as_str())?
            }
        })
    }

    /// The objects under this location taken as a directory (or prefix): directly under it, or
    /// at any depth when `recursive`, sorted by location. Nothing there is an empty list. A
    /// failure that may pass (throttling, HTTP 500, a connection lost) is tried again, at most
    /// five times (about 3 s of backoff in all).
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn list(&self, options: &StorageOptions, recursive: bool) -> Result<Vec<ObjectInfo>> {
        let (store, prefix) = self.object_store(options, StorePurpose::Read)?;
        let secrets = options.secrets();
        // The whole listing is tried again, not its failed request (a store built for reading
        // does not retry): a failure part way through the pages of a recursive listing would
        // otherwise have to resume from a page token.
        let metas = retrying(&secrets, Retry::Retryable, || async {
            if recursive {
                store.list(Some(&prefix)).try_collect::<Vec<_>>().await
            } else {
                store.list_with_delimiter(Some(&prefix)).await.map(|listed| listed.objects)
            }
        })
        .await
        .map_err(|e| e.at(self.to_string()))?;
        let base = prefix.as_ref().len();
        let mut out = Vec::with_capacity(metas.len());
        for meta in metas {
            let relative = meta.location.as_ref().get(base..).unwrap_or_default().trim_start_matches('/');
            if relative.is_empty() {
                continue;
            }
            out.push(ObjectInfo {
                location: self.child(relative)?.to_string(),
                relative: relative.to_string(),
                size: meta.size,
            });
        }
        out.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(out)
    }

    /// Whether an object exists at this location.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails for another reason than the object's absence.
    pub async fn exists(&self, options: &StorageOptions) -> Result<bool> {
        let (store, path) = self.object_store(options, StorePurpose::Write)?;
        match store.head(&path).await {
            Ok(_) => Ok(true),
            Err(e) => {
                let error = StoreError::new(&e, &options.secrets());
                match error.kind() {
                    StoreErrorKind::NotFound => Ok(false),
                    _ => Err(error.at(self.to_string())),
                }
            }
        }
    }

    /// The whole object at this location (for small objects: it is read into memory).
    ///
    /// # Errors
    /// [`Error::Io`] if it is missing or the store fails.
    pub async fn read_all(&self, options: &StorageOptions) -> Result<Bytes> {
        let (store, path) = self.object_store(options, StorePurpose::Write)?;
        let secrets = options.secrets();
        let io = |e: object_store::Error| StoreError::new(&e, &secrets).at(self.to_string());
        store.get(&path).await.map_err(io)?.bytes().await.map_err(io)
    }

    /// Writes `bytes` as the whole object, replacing any: a reader sees the old object or the
    /// new one, never a part (one `PUT` on an object store; a temporary file renamed into place
    /// on a local disk).
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn write_all(&self, bytes: Bytes, options: &StorageOptions) -> Result<()> {
        let (store, path) = self.object_store(options, StorePurpose::Write)?;
        store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| StoreError::new(&e, &options.secrets()).at(self.to_string()))?;
        Ok(())
    }

    /// Deletes the object at this location; a missing object is not an error.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn delete(&self, options: &StorageOptions) -> Result<()> {
        let (store, path) = self.object_store(options, StorePurpose::Write)?;
        // S3 stores delete with a multi-object `POST`, which they do not try again when its
        // answer is lost; deleting twice is harmless.
        match retrying(&options.secrets(), Retry::LostAnswers, || store.delete(&path)).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == StoreErrorKind::NotFound => Ok(()),
            Err(error) => Err(error.at(self.to_string())),
        }
    }
}

/// `path/name` as an object path.
fn join(path: &ObjectPath, name: &str) -> Option<ObjectPath> {
    let joined = if path.as_ref().is_empty() { name.to_string() } else { format!("{}/{name}", path.as_ref()) };
    ObjectPath::parse(joined.trim_end_matches('/')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_of_every_kind_of_location() {
        let child = |base: &str, name: &str| Location::parse(base).unwrap().child(name).unwrap().to_string();
        assert_eq!(child("/data/ds", "part-0.leaf"), "/data/ds/part-0.leaf");
        assert_eq!(child("memory://ds", "a/b.leaf"), "memory://ds/a/b.leaf");
        assert_eq!(child("s3://bucket/ds", "part 0.leaf"), "s3://bucket/ds/part%200.leaf");
        assert_eq!(child("s3://bucket/ds/", "x.leaf"), "s3://bucket/ds/x.leaf");
        let parsed = Location::parse("s3://bucket/ds").unwrap().child("part 0.leaf").unwrap();
        assert!(matches!(parsed, Location::Remote { path, .. } if path.as_ref() == "ds/part 0.leaf"));
        // Keys hold what URLs would read otherwise: they stay as they are.
        for name in ["k=a%2Fb/x.leaf", "a#b?c.leaf", "100%.leaf"] {
            let location = Location::parse("s3://bucket/ds").unwrap().child(name).unwrap();
            assert!(matches!(&location, Location::Remote { path, .. } if path.as_ref() == format!("ds/{name}")));
            let again = Location::parse(&location.to_string()).unwrap();
            assert_eq!(again, location, "a child's location parses back to the same key");
        }
        for bad in ["", "/abs", "../up"] {
            assert!(Location::parse("s3://bucket/ds").unwrap().child(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn list_write_read_delete_on_a_local_directory() {
        let dir = tempfile::tempdir().unwrap();
        let options = StorageOptions::new();
        let root = Location::Local(dir.path().to_path_buf());
        for name in ["b.leaf", "a.leaf", "sub/c.leaf"] {
            root.child(name).unwrap().write_all(Bytes::from_static(b"abc"), &options).await.unwrap();
        }
        let names = |list: Vec<ObjectInfo>| list.into_iter().map(|o| (o.location, o.size)).collect::<Vec<_>>();
        let shallow = names(root.list(&options, false).await.unwrap());
        let path = |name: &str| dir.path().join(name).display().to_string();
        assert_eq!(shallow, vec![(path("a.leaf"), 3), (path("b.leaf"), 3)]);
        assert_eq!(root.list(&options, true).await.unwrap().len(), 3);
        let a = root.child("a.leaf").unwrap();
        assert_eq!(&a.read_all(&options).await.unwrap()[..], b"abc");
        assert!(a.exists(&options).await.unwrap());
        a.delete(&options).await.unwrap();
        a.delete(&options).await.unwrap();
        assert!(!a.exists(&options).await.unwrap());
        let missing = Location::Local(dir.path().join("nothing"));
        assert!(missing.list(&options, false).await.unwrap().is_empty());
    }
}
