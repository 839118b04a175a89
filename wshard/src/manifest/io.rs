//! The manifest shard (role 0x04, one uncompressed `meta/manifest` entry) and chunk hashing.

use std::io::{Cursor, Seek, Write};
use std::path::Path;

use super::model::{ChunkRef, Manifest, MANIFEST_BLOCK};
use crate::consts::role;
use crate::digest::sha256_file;
use crate::entry::content_type;
use crate::episode::go_json::to_indented;
use crate::error::{FormatError, Result};
use crate::read::{ReadAt, ShardReader};
use crate::write::{BlockOptions, Reserve, ShardOptions, ShardWriter};

/// What checking one listed chunk against the directory found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkFileCheck {
    pub chunk_index: u64,
    pub uri: String,
    /// `None` when the file could not be read.
    pub computed_sha256: Option<String>,
    /// `None` when the chunk file is present and its hash matches.
    pub error: Option<String>,
}

impl Manifest {
    /// Write the manifest shard to `out` and return it, flushed, not synced.
    ///
    /// # Errors
    /// Writer and I/O errors.
    pub fn write_to<W: Write + Seek>(&self, out: W) -> Result<W> {
        let json = to_indented(&self.to_json());
        let mut w = ShardWriter::new(
            out,
            ShardOptions::manifest(),
            &Reserve::names([MANIFEST_BLOCK]),
        )?;
        w.write_block(
            MANIFEST_BLOCK,
            json.as_bytes(),
            BlockOptions::raw(content_type::JSON),
        )?;
        Ok(w.finish()?.0)
    }

    /// The manifest shard's bytes.
    ///
    /// # Errors
    /// As [`Manifest::write_to`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        Ok(self.write_to(Cursor::new(Vec::new()))?.into_inner())
    }

    /// Read a manifest from an open shard (role 4, `meta/manifest` CRC-checked).
    ///
    /// # Errors
    /// [`FormatError::WrongRole`], block errors, [`FormatError::BadJson`], [`FormatError::BadManifest`].
    pub fn read<R: ReadAt>(r: &ShardReader<R>) -> Result<Self> {
        r.expect_role(role::MANIFEST)?;
        let bytes = r.read_block(MANIFEST_BLOCK)?;
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| FormatError::BadJson {
                block: MANIFEST_BLOCK.into(),
                message: e.to_string(),
            })?;
        Self::from_json(&v)
    }

    /// Read a manifest file.
    ///
    /// # Errors
    /// As [`Manifest::read`], I/O errors with the path.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self> {
        Self::read(&ShardReader::open(path)?)
    }

    /// Hash every listed chunk in `dir` and compare with the manifest. Reports every chunk;
    /// never stops at the first bad one.
    #[must_use]
    pub fn check_chunk_files(&self, dir: &Path) -> Vec<ChunkFileCheck> {
        self.chunks
            .iter()
            .map(|c| {
                let (computed, error) = match super::model::validate_uri(&c.uri) {
                    Err(e) => (None, Some(e.to_string())),
                    Ok(()) => match sha256_file(&dir.join(&c.uri)) {
                        Err(e) => (None, Some(e.to_string())),
                        Ok(h) if h == c.sha256 => (Some(h), None),
                        Ok(h) => {
                            let e = FormatError::ChunkSha256 {
                                index: c.chunk_index,
                                uri: c.uri.clone(),
                                stored: c.sha256.clone(),
                                computed: h.clone(),
                            };
                            (Some(h), Some(e.to_string()))
                        }
                    },
                };
                ChunkFileCheck {
                    chunk_index: c.chunk_index,
                    uri: c.uri.clone(),
                    computed_sha256: computed,
                    error,
                }
            })
            .collect()
    }
}

impl ChunkRef {
    /// Describe a finished chunk file: its name, hash and inclusive global range.
    ///
    /// # Errors
    /// I/O errors with the path.
    pub fn for_file(
        path: &Path,
        chunk_index: u64,
        global_start: u64,
        length_t: u64,
    ) -> Result<Self> {
        let uri = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| FormatError::BadManifest {
                message: format!("chunk path {} has no UTF-8 file name", path.display()),
            })?
            .to_owned();
        Ok(Self {
            chunk_index,
            uri,
            sha256: sha256_file(path)?,
            timestep_range: [global_start, (global_start + length_t).saturating_sub(1)],
            length_t,
            extra: serde_json::Map::new(),
        })
    }
}
