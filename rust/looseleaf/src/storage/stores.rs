//! [`StorageOptions`] and the object stores built from them, once per process and
//! configuration.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock, Mutex, Once};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};

use super::location::StoreKind;
use crate::error::{Error, Result};

/// Configuration of an object store: `object_store`'s own keys (`aws_endpoint`, `aws_region`,
/// `aws_access_key_id`, `google_service_account`, `azure_storage_account_name`, `allow_http`,
/// `timeout`...), applied on top of what the environment configures.
///
/// Local files take one key, `memory_map` (`true` maps large reads, `false` copies; by default
/// only files on a read-only file system are mapped; see
/// [`LocalFileReader::with_memory_map`](crate::io::LocalFileReader::with_memory_map)).
///
/// Keys are case-insensitive. A key the store does not know is an error when the store is
/// built, so a typo does not silently fall back on the environment. The `Debug` form shows the
/// keys and redacts every value but those known to be harmless (endpoints, regions, buckets,
/// flags).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StorageOptions(BTreeMap<String, String>);

impl StorageOptions {
    /// No options: the environment's configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` (lower-cased) to `value`.
    pub fn insert(&mut self, key: impl AsRef<str>, value: impl Into<String>) {
        self.0.insert(key.as_ref().to_ascii_lowercase(), value.into());
    }

    /// The options, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether large reads of a local file map it (the `memory_map` key; `None` if unset: the
    /// reader's default).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value other than `true` or `false`.
    pub(crate) fn memory_map(&self) -> Result<Option<bool>> {
        match self.0.get("memory_map").map(|v| v.to_ascii_lowercase()).as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(other) => Err(Error::invalid_argument(format!(
                "storage_options: memory_map must be true or false, not {other:?}"
            ))),
        }
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values that must never be shown (see [`StoreError`](super::StoreError)).
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.0.iter().filter(|(k, v)| !is_harmless(k) && v.len() >= 4).map(|(_, v)| v.clone()).collect()
    }
}

impl<K: AsRef<str>, V: Into<String>> FromIterator<(K, V)> for StorageOptions {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut out = Self::new();
        for (k, v) in iter {
            out.insert(k, v);
        }
        out
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (key, value) in &self.0 {
            if is_harmless(key) {
                map.entry(key, value);
            } else {
                map.entry(key, &"<redacted>");
            }
        }
        map.finish()
    }
}

/// Keys whose values are not secrets (everything else is treated as one).
fn is_harmless(key: &str) -> bool {
    const HARMLESS: [&str; 15] = [
        "memory_map",
        "endpoint",
        "region",
        "bucket",
        "allow_http",
        "allow_invalid_certificates",
        "timeout",
        "account_name",
        "container_name",
        "use_emulator",
        "skip_signature",
        "virtual_hosted_style_request",
        "base_url",
        "unsigned_payload",
        "imdsv1_fallback",
    ];
    let key = key.strip_prefix("aws_").or_else(|| key.strip_prefix("google_")).unwrap_or(key);
    let key = key.strip_prefix("azure_").or_else(|| key.strip_prefix("storage_")).unwrap_or(key);
    let key = key.strip_prefix("storage_").unwrap_or(key);
    HARMLESS.iter().any(|h| key == *h || key.ends_with(&format!("_{h}")) || key.starts_with(&format!("{h}_")))
}

/// What a store is built for: reads retry in the reader itself (which sees throttling and
/// adapts its I/O depth), writes let the store retry its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StorePurpose {
    /// `get` requests, retried by [`ObjectStoreReader`](crate::io::ObjectStoreReader).
    Read,
    /// Uploads, retried by the store (a bounded number of times).
    Write,
}

impl StorePurpose {
    fn retry(self) -> RetryConfig {
        match self {
            Self::Read => RetryConfig { max_retries: 0, retry_timeout: Duration::from_secs(30), ..Default::default() },
            // Six retries, each after at least 200 ms (object_store's backoff is jittered
            // between that and twice the last): throttling of a second is always waited out,
            // a stalled store costs about seven timeouts, and 60 s bounds the whole.
            Self::Write => RetryConfig {
                backoff: BackoffConfig { init_backoff: Duration::from_millis(200), ..Default::default() },
                max_retries: 6,
                retry_timeout: Duration::from_secs(60),
            },
        }
    }
}

/// Stores kept at most (the least recently used is dropped first).
pub(crate) const MAX_STORES: usize = 32;

/// How long a store is kept after it was built: long enough to share its connection pool among
/// the files of a job, short enough that credentials given in the options or the environment
/// at build time (a session token) do not outlive their validity in the cache.
pub(crate) const STORE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// A store and when it was built and last handed out.
struct CachedStore {
    store: Arc<dyn ObjectStore>,
    built: Instant,
    used: Instant,
}

/// What a store is built from: its kind and bucket (or host), the options, its purpose, and a
/// fingerprint of the environment variables its builder reads (so that new credentials in the
/// environment build a new store).
type StoreKey = (StoreKind, String, StorageOptions, StorePurpose, u64);

/// Stores built: building one sets up an HTTP client (connection pool, TLS), which every file
/// of the same bucket and configuration shares. Bounded in size and age (see the module
/// documentation of `storage`).
static STORES: LazyLock<Mutex<HashMap<StoreKey, CachedStore>>> = LazyLock::new(Mutex::default);

/// The key of `STORES`' hash of the environment: random per process, fixed within it.
static ENVIRONMENT_HASHER: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// The object store of `kind` for the bucket (or host) at `root` (a URL without a path),
/// configured by `options` on top of the environment.
///
/// # Errors
/// [`Error::InvalidArgument`] for an option the store does not know or a configuration it
/// refuses (naming the key, never a value).
pub(crate) fn object_store_for(
    kind: StoreKind,
    root: &str,
    options: &StorageOptions,
    purpose: StorePurpose,
) -> Result<Arc<dyn ObjectStore>> {
    let environment = ENVIRONMENT_HASHER.hash_one(store_environment(kind));
    let key = (kind, root.to_string(), options.clone(), purpose, environment);
    let now = Instant::now();
    let mut stores = STORES.lock().unwrap_or_else(|p| p.into_inner());
    stores.retain(|_, cached| now.duration_since(cached.built) < STORE_LIFETIME);
    if let Some(cached) = stores.get_mut(&key) {
        cached.used = now;
        return Ok(cached.store.clone());
    }
    install_tls_provider();
    let store = build(kind, root, options, purpose)?;
    if stores.len() >= MAX_STORES
        && let Some(oldest) = stores.iter().min_by_key(|(_, cached)| cached.used).map(|(key, _)| key.clone())
    {
        stores.remove(&oldest);
    }
    stores.insert(key, CachedStore { store: store.clone(), built: now, used: now });
    Ok(store)
}

/// The environment variables the builder of a `kind` store reads (`from_env`), sorted.
fn store_environment(kind: StoreKind) -> Vec<(String, String)> {
    let prefix = match kind {
        StoreKind::S3 => "AWS_",
        StoreKind::Gcs => "GOOGLE_",
        StoreKind::Azure => "AZURE_",
        StoreKind::Http => return Vec::new(),
    };
    let mut vars: Vec<(String, String)> = unicode_environment().filter(|(k, _)| k.starts_with(prefix)).collect();
    vars.sort();
    vars
}

/// The environment's variables whose names and values are text (`std::env::vars` panics on
/// others; the stores' builders skip them too).
fn unicode_environment() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// The values of the environment's credentials for the stores (`AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `GOOGLE_SERVICE_ACCOUNT_KEY`, `AZURE_STORAGE_SAS_KEY`, ...): variables of
/// the stores' prefixes whose names say they hold a key, token, secret or password.
pub(crate) fn environment_secrets() -> Vec<String> {
    const SECRET_WORDS: [&str; 7] = ["SECRET", "TOKEN", "KEY", "PASSWORD", "SAS", "SIGNATURE", "CREDENTIAL"];
    unicode_environment()
        .filter(|(name, value)| {
            ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| name.starts_with(p))
                && SECRET_WORDS.iter().any(|w| name.contains(w))
                && value.len() >= 8
        })
        .map(|(_, value)| value)
        .collect()
}

/// rustls needs a process-wide crypto provider; `ring` is the one compiled in.
fn install_tls_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another library of the process may have installed one already: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn build(kind: StoreKind, root: &str, options: &StorageOptions, purpose: StorePurpose) -> Result<Arc<dyn ObjectStore>> {
    let unknown = |key: &str| {
        Error::invalid_argument(format!(
            "storage_options: {key:?} is not an option of {} stores (see object_store's {} for the keys)",
            kind.name(),
            kind.config_type()
        ))
    };
    let refused = |e: object_store::Error| {
        Error::invalid_argument(format!("storage_options: the {} store cannot be configured: {e}", kind.name()))
    };
    let store: Arc<dyn ObjectStore> = match kind {
        StoreKind::S3 => {
            let mut builder = AmazonS3Builder::from_env().with_url(root);
            for (key, value) in options.iter() {
                let key: AmazonS3ConfigKey = key.parse().map_err(|_| unknown(key))?;
                builder = builder.with_config(key, value);
            }
            Arc::new(builder.with_retry(purpose.retry()).build().map_err(refused)?)
        }
        StoreKind::Gcs => {
            let mut builder = GoogleCloudStorageBuilder::from_env().with_url(root);
            for (key, value) in options.iter() {
                let key: GoogleConfigKey = key.parse().map_err(|_| unknown(key))?;
                builder = builder.with_config(key, value);
            }
            Arc::new(builder.with_retry(purpose.retry()).build().map_err(refused)?)
        }
        StoreKind::Azure => {
            let mut builder = MicrosoftAzureBuilder::from_env().with_url(root);
            for (key, value) in options.iter() {
                let key: AzureConfigKey = key.parse().map_err(|_| unknown(key))?;
                builder = builder.with_config(key, value);
            }
            Arc::new(builder.with_retry(purpose.retry()).build().map_err(refused)?)
        }
        StoreKind::Http => {
            let mut builder = HttpBuilder::new().with_url(root);
            for (key, value) in options.iter() {
                let key: ClientConfigKey = key.parse().map_err(|_| unknown(key))?;
                builder = builder.with_config(key, value);
            }
            Arc::new(builder.with_retry(purpose.retry()).build().map_err(refused)?)
        }
    };
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_known() {
        let options: StorageOptions = [
            ("AWS_ENDPOINT", "http://127.0.0.1:9000"),
            ("aws_region", "us-east-1"),
            ("aws_secret_access_key", "hunter2-very-secret"),
            ("aws_access_key_id", "AKIAEXAMPLE"),
            ("azure_storage_sas_token", "sv=2020&sig=abc"),
            ("memory_map", "false"),
        ]
        .into_iter()
        .collect();
        let shown = format!("{options:?}");
        assert!(shown.contains("http://127.0.0.1:9000") && shown.contains("us-east-1"), "{shown}");
        assert!(shown.contains(r#""memory_map": "false""#), "{shown}");
        assert!(!options.secrets().contains(&"false".to_string()));
        assert!(!shown.contains("hunter2") && !shown.contains("AKIA") && !shown.contains("sig=abc"), "{shown}");
        let secrets = options.secrets();
        assert!(secrets.contains(&"hunter2-very-secret".to_string()));
        assert!(!secrets.contains(&"us-east-1".to_string()));
    }

    #[test]
    fn stores_are_shared_and_their_cache_is_bounded() {
        let options = StorageOptions::new();
        let store = |i: usize| {
            object_store_for(StoreKind::Http, &format!("http://host-{i}.test"), &options, StorePurpose::Read).unwrap()
        };
        let first = store(0);
        assert!(Arc::ptr_eq(&first, &store(0)), "one store per configuration");
        for i in 1..MAX_STORES * 2 {
            store(i);
        }
        assert!(STORES.lock().unwrap().len() <= MAX_STORES);
        assert!(!Arc::ptr_eq(&first, &store(0)), "the least recently used was dropped");
    }

    #[test]
    fn memory_map_is_a_flag() {
        let with = |value: &str| [("Memory_Map", value)].into_iter().collect::<StorageOptions>().memory_map();
        assert_eq!(StorageOptions::new().memory_map().unwrap(), None);
        assert_eq!((with("TRUE").unwrap(), with("false").unwrap()), (Some(true), Some(false)));
        let e = with("sometimes").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("sometimes"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let options: StorageOptions = [("aws_endpont", "http://x")].into_iter().collect();
        let e =
            object_store_for(StoreKind::S3, "s3://bucket", &options, StorePurpose::Read).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|e| e.contains("\"aws_endpont\"") && e.contains("s3")), "{e:?}");
    }
}
