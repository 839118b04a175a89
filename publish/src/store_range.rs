//! Range reads of stored objects through [`Store`], and [`Store::read_stats`]: the count
//! of read requests and bytes every read method keeps ([`crate::read_stats`]), with which
//! the remote-read tests and the benchmark check what a read cost.

use std::io::Write;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use sha2::{Digest, Sha256};

use crate::error::PublishError;
use crate::hash::hex;
pub use crate::read_stats::{ReadCounter, ReadStats};
use crate::store::Store;

/// A range of an object and the object's whole size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeFetched {
    pub bytes: Bytes,
    /// The object's size (from `Content-Range`).
    pub object_size: u64,
}

impl Store {
    /// Read requests and bytes so far (every GET, range GET and HEAD of this store).
    #[must_use]
    pub fn read_stats(&self) -> ReadStats {
        self.reads.snapshot()
    }

    /// The bytes `offset .. offset + len` of `key` (fewer when the object ends first), in one
    /// range request, with the object's size.
    ///
    /// # Errors
    /// A missing key is [`PublishError::Store`] `not found`, or
    /// [`PublishError::BucketNotFound`] when the bucket is what is missing
    /// ([`Store::explain_missing`]); typed store errors.
    pub fn get_range(
        &self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<RangeFetched, PublishError> {
        let path = Path::from(key);
        let end = offset.saturating_add(len.max(1));
        let opts = GetOptions {
            range: Some(GetRange::Bounded(offset..end)),
            ..GetOptions::default()
        };
        self.reads.request();
        let res = self.rt.block_on(async {
            let got = self.objects.get_opts(&path, opts).await?;
            let object_size = got.meta.size;
            let bytes = got.bytes().await?;
            Ok::<_, object_store::Error>(RangeFetched { bytes, object_size })
        });
        match res {
            Ok(f) => {
                self.reads.bytes(f.bytes.len() as u64);
                Ok(f)
            }
            Err(e @ object_store::Error::NotFound { .. }) => {
                Err(self.bucket_missing_in(&e).unwrap_or_else(|| {
                    self.explain_missing(PublishError::Store {
                        op: "get range",
                        key: key.to_owned(),
                        detail: "not found".into(),
                    })
                }))
            }
            Err(e) => Err(self.classify("get range", key, e)),
        }
    }

    /// Stream `key` into `out` (never held whole); returns its SHA-256 (hex) and size.
    ///
    /// # Errors
    /// Typed store errors; `Io` (naming `what`) when writing fails.
    pub fn download_to(
        &self,
        key: &str,
        out: &mut dyn Write,
        what: &std::path::Path,
    ) -> Result<(String, u64), PublishError> {
        let path = Path::from(key);
        self.reads.request();
        self.rt.block_on(async {
            let mut stream = self
                .objects
                .get(&path)
                .await
                .map_err(|e| self.classify("get", key, e))?
                .into_stream();
            let mut h = Sha256::new();
            let mut size = 0_u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| self.classify("get", key, e))?;
                size += chunk.len() as u64;
                self.reads.bytes(chunk.len() as u64);
                h.update(&chunk);
                out.write_all(&chunk)
                    .map_err(|e| PublishError::io(what, e))?;
            }
            Ok((hex(&h.finalize()), size))
        })
    }
}
