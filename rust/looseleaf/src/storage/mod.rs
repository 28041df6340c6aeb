//! Storage: where files are ([`Location`], parsed once for every front end), how the stores
//! behind them are configured ([`StorageOptions`]) and built (once per process and
//! configuration), and how their failures are reported ([`StoreError`]).
//!
//! Locations are local paths, `file://` URLs, `memory://` (one in-process store) and object
//! stores: `s3://` (and `s3a://`, as Spark users write it), `gs://`, `az://`/`abfs(s)://`,
//! `http(s)://`. Object stores are `object_store`'s, configured the way pylance, delta-rs and
//! polars configure them: a mapping of `object_store` keys (`aws_endpoint`, `aws_region`,
//! `aws_access_key_id`, `google_service_account`, `azure_storage_account_name`, ...) on top of
//! the environment's (`AWS_*`, `GOOGLE_*`, `AZURE_*` variables, read as `object_store` reads
//! them).
//!
//! # Secrets
//! Values of keys that hold credentials never appear in a `Debug` form, an error or a location's
//! display: [`StorageOptions`] redacts them, and [`StoreError`] scrubs them out of the messages
//! of the stores' own errors, reads' and writes' alike, together with the credentials the
//! environment holds (`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, ...) and the query strings
//! of URLs (SAS tokens, presigned signatures; [`without_query`]).
//!
//! # Long-lived processes
//! Stores are built once per configuration and kept for a while (connection pools are worth
//! keeping), but not for ever: at most 32 are kept, none longer than
//! 15 minutes, and a change of the environment's credentials builds a new one,
//! so a process that runs for days does not keep expired credentials alive.

mod errors;
mod location;
mod objects;
mod retry;
mod stores;

pub use errors::{StoreError, StoreErrorKind};
pub use location::{Location, StoreKind, without_query};
pub use objects::ObjectInfo;
pub(crate) use retry::{Retry, retrying};
pub use stores::StorageOptions;
pub(crate) use stores::StorePurpose;
