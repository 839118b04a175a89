//! The `s3://` URLs `wshard inspect`, `wshard cat` and the readers accept:
//!
//! ```text
//! s3://BUCKET/KEY                                              a stored object (a blob, any key)
//! s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/EPISODE[/FILE]   a file of a dataset's episode
//! ```
//!
//! In the second form `VERSION` (64 hex) pins a version, else the latest is read; `EPISODE`
//! is the episode's key in the version manifest, which may hold one `/`
//! (`robot/episode`), and `FILE` the file's path relative to the episode directory: where
//! the key ends and the file begins is decided against the manifest's keys
//! ([`crate::remote::resolve`]). The keys a dataset stores itself (`latest.json`,
//! `versions/...`, `catalog/...`) are read as plain objects.

use crate::error::PublishError;
use crate::hash::is_sha256_hex;
use crate::layout::{DatasetId, CATALOG_DIR, DATASETS_DIR, LATEST_FILE};

/// The URL scheme.
pub const S3_SCHEME: &str = "s3://";
/// Separates a dataset name from a pinned version.
pub const VERSION_SEP: char = '@';

/// A parsed `s3://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteUrl {
    /// `s3://BUCKET/KEY`: the object at `key`.
    Object { bucket: String, key: String },
    /// `s3://BUCKET/[PREFIX/]datasets/WS/NAME[@VERSION]/REST`.
    Dataset {
        bucket: String,
        /// The key prefix before `datasets/`: empty or ending with `/`.
        prefix: String,
        dataset: DatasetId,
        version: Option<String>,
        /// `EPISODE[/FILE]`, split against the manifest; may be empty.
        rest: String,
    },
}

/// True for an `s3://` URL (anything else is a local path).
#[must_use]
pub fn is_remote(s: &str) -> bool {
    s.starts_with(S3_SCHEME)
}

impl RemoteUrl {
    /// Parse `url`.
    ///
    /// # Errors
    /// [`PublishError::InvalidUrl`] saying what is wrong.
    pub fn parse(url: &str) -> Result<Self, PublishError> {
        let bad = |reason: &str| PublishError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let rest = url
            .strip_prefix(S3_SCHEME)
            .ok_or_else(|| bad("not an s3:// URL"))?;
        let (bucket, key) = rest
            .split_once('/')
            .ok_or_else(|| bad("no key after the bucket"))?;
        if bucket.is_empty() {
            return Err(bad("empty bucket"));
        }
        if key.is_empty() || key.ends_with('/') {
            return Err(bad("empty key or a key ending with `/`"));
        }
        let parts: Vec<&str> = key.split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(bad("empty, `.` or `..` path segment"));
        }
        let bucket = bucket.to_owned();
        let object = || Self::Object {
            bucket: bucket.clone(),
            key: key.to_owned(),
        };
        // The first `datasets/WS/NAME[@V]/...` whose WS/NAME is a dataset name.
        for i in 0..parts.len() {
            if parts[i] != DATASETS_DIR || i + 3 > parts.len() {
                continue;
            }
            let (name, version) = match parts[i + 2].split_once(VERSION_SEP) {
                Some((n, v)) => (n, Some(v)),
                None => (parts[i + 2], None),
            };
            let Ok(dataset) = DatasetId::parse(&format!("{}/{name}", parts[i + 1])) else {
                continue;
            };
            let rest = parts[i + 3..].join("/");
            let own_key = rest == LATEST_FILE
                || rest.starts_with("versions/")
                || rest.starts_with(&format!("{CATALOG_DIR}/"));
            if version.is_none() && own_key {
                return Ok(object());
            }
            if let Some(v) = version {
                if !is_sha256_hex(v) {
                    return Err(bad("the version after `@` is not 64 lower-case hex digits"));
                }
            }
            let prefix = parts[..i].iter().map(|p| format!("{p}/")).collect();
            return Ok(Self::Dataset {
                bucket,
                prefix,
                dataset,
                version: version.map(str::to_owned),
                rest,
            });
        }
        Ok(object())
    }

    /// The bucket.
    #[must_use]
    pub fn bucket(&self) -> &str {
        match self {
            Self::Object { bucket, .. } | Self::Dataset { bucket, .. } => bucket,
        }
    }

    /// The key prefix the URL implies (a dataset URL's; empty for an object).
    #[must_use]
    pub fn prefix(&self) -> &str {
        match self {
            Self::Object { .. } => "",
            Self::Dataset { prefix, .. } => prefix,
        }
    }
}

/// The content hash in a blob key `.../blobs/sha256/<hh>/<hash>`, if it is one.
#[must_use]
pub fn blob_hash(key: &str) -> Option<&str> {
    let mut it = key.rsplit('/');
    let hash = it.next()?;
    let head = it.next()?;
    let algo = it.next()?;
    let blobs = it.next()?;
    (blobs == "blobs" && algo == "sha256" && is_sha256_hex(hash) && hash.get(..2) == Some(head))
        .then_some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_forms_parse() -> Result<(), PublishError> {
        let h = "ab".repeat(32);
        assert_eq!(
            RemoteUrl::parse("s3://fleet/some/key.wshard")?,
            RemoteUrl::Object {
                bucket: "fleet".into(),
                key: "some/key.wshard".into()
            }
        );
        let u = RemoteUrl::parse(&format!(
            "s3://fleet/p/q/datasets/lab/pick@{h}/r1/ep/f.wshard"
        ))?;
        assert_eq!(
            u,
            RemoteUrl::Dataset {
                bucket: "fleet".into(),
                prefix: "p/q/".into(),
                dataset: DatasetId::parse("lab/pick")?,
                version: Some(h.clone()),
                rest: "r1/ep/f.wshard".into(),
            }
        );
        assert!(matches!(
            RemoteUrl::parse("s3://fleet/datasets/lab/pick/latest.json")?,
            RemoteUrl::Object { .. }
        ));
        for bad in [
            "http://x/y",
            "s3://fleet",
            "s3:///k",
            "s3://fleet/a//b",
            "s3://fleet/a/../b",
            "s3://fleet/datasets/lab/pick@zz/ep",
        ] {
            assert!(RemoteUrl::parse(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(
            blob_hash(&format!("x/blobs/sha256/ab/{h}")),
            Some(h.as_str())
        );
        assert_eq!(blob_hash(&format!("x/blobs/sha256/cd/{h}")), None);
        Ok(())
    }
}
