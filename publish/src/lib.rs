//! Publishing finished episodes of a wshardd data directory to S3-compatible object
//! storage as immutable, content-addressed dataset versions (docs/PUBLISH.md).
//!
//! - [`config`]: where the store is, the credentials (environment or the shared
//!   credentials file: [`credentials_file`]; never printed),
//!   how blobs are sent.
//! - [`provider`]: S3, GCS or Azure, and where each one's credentials come from.
//! - [`layout`]: the keys of the store and the checked dataset name.
//! - [`canonical`]: canonical JSON. [`version`]: the dataset version and latest pointer.
//!   [`hash`]: the hex SHA-256 that names blobs and versions.
//! - [`episodes`]: which local files make up the finished episodes, with their hashes.
//! - [`store`]: a blocking handle on the bucket (a tokio runtime inside) and error mapping.
//! - [`blob`]: sending one blob (HEAD, one put or a resumable multipart upload,
//!   verification): the one sender of [`publish`], the exports and the daemon's uploader,
//!   with hooks for the caller to save the upload and pace the sends.
//! - [`catalog`]: the catalog table (Parquet, one row per episode stream).
//! - [`append`]: add episodes already on the store to a dataset's latest version (CAS,
//!   retried).
//! - [`publish`]: blobs (through [`blob`]), then the dataset version (create-only), then
//!   `latest.json` (CAS).
//! - [`query`]: the catalogs `wshard query` runs DuckDB on, and the script it runs.
//! - [`doctor`]: checks of the storage setup, one line each.
//! - [`error`]: the typed errors.
//! - [`store_range`]: range reads and the read counters; [`remote`]: stored shards read
//!   block by block; [`cache`]: the local content-hash blob cache; [`url`]: the `s3://`
//!   URLs; [`dataset`]: list, show and pull dataset versions.
//!
//! The API is blocking; depends on the format library `wshard` only, never on the daemon
//! (the daemon's uploader and the CLI depend on it).

pub mod append;
pub mod blob;
pub mod cache;
pub mod canonical;
pub mod catalog;
pub mod config;
pub mod credentials_file;
pub mod dataset;
pub mod doctor;
pub mod episodes;
pub mod error;
pub mod hash;
pub mod layout;
pub mod provider;
pub mod publish;
pub mod query;
pub mod read_stats;
pub mod remote;
pub mod store;
pub mod store_range;
pub mod url;
pub mod version;

pub use append::{episode_key, AppendPlan, AppendReport};
pub use blob::{BlobSender, SendError, SendHooks};
/// The byte buffer `Store::put_part` takes (the `bytes` crate, re-exported).
pub use bytes::Bytes;
pub use config::{Credentials, StoreConfig, TransferOptions};
pub use error::PublishError;
pub use layout::DatasetId;
pub use provider::Provider;
pub use publish::{PublishReport, Publisher};
pub use store::Store;
