//! The baseline: the same files put with the same object-store client (object_store 0.12
//! `AmazonS3`, the same client and retry settings as `wshard_publish::Store`), plain:
//! `put_multipart` with parts of the same size sent one after the other, `complete`; a
//! single `put` for a file smaller than one part. No hashing, no HEAD, no read-back.

use std::fs::File;
use std::io::Read;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, PutPayload, RetryConfig};
use tokio::runtime::Runtime;
use wshard_publish::TransferOptions;

use super::data::DataFile;
use crate::error::{io_ctx, Result};
use crate::s3s_fs::{ACCESS_KEY, BUCKET, SECRET_KEY};

/// A plain client on the bench bucket, with its own one-thread runtime (as `Store` has).
pub struct Plain {
    rt: Runtime,
    s3: AmazonS3,
    part: usize,
}

impl Plain {
    pub fn new(endpoint: &str, opts: &TransferOptions) -> Result<Self> {
        let client = ClientOptions::new()
            .with_allow_http(true)
            .with_connect_timeout(opts.connect_timeout);
        let retry = RetryConfig {
            max_retries: opts.max_retries,
            retry_timeout: opts.retry_timeout,
            ..RetryConfig::default()
        };
        let s3 = AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_client_options(client)
            .with_retry(retry)
            .build()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            rt,
            s3,
            part: opts.part_size,
        })
    }

    /// Put every file under `prefix` + its index.
    pub fn put_all(&self, prefix: &str, files: &[DataFile]) -> Result<u64> {
        let mut sent = 0;
        for (i, f) in files.iter().enumerate() {
            let key = Path::from(format!("{prefix}{i:06}"));
            let mut file = File::open(&f.path).map_err(|e| io_ctx("open", &f.path, e))?;
            if f.size < self.part as u64 {
                let mut buf = Vec::new();
                file.read_to_end(&mut buf)
                    .map_err(|e| io_ctx("read", &f.path, e))?;
                self.rt.block_on(self.s3.put(&key, PutPayload::from(buf)))?;
            } else {
                self.rt.block_on(async {
                    let mut upload = self.s3.put_multipart(&key).await?;
                    loop {
                        let mut part = Vec::with_capacity(self.part);
                        (&mut file)
                            .take(self.part as u64)
                            .read_to_end(&mut part)
                            .map_err(|e| io_ctx("read", &f.path, e))?;
                        if part.is_empty() {
                            break;
                        }
                        upload.put_part(PutPayload::from(part)).await?;
                    }
                    upload.complete().await?;
                    Ok::<_, crate::error::Error>(())
                })?;
            }
            sent += f.size;
        }
        Ok(sent)
    }
}
