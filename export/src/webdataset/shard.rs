//! Tar shards: `shard_NNNNNN.tar` of [`super::WebdatasetOptions::samples_per_shard`]
//! samples each (the last one may hold fewer), every member `{sample id}.{extension}`, and
//! the `manifest.jsonl` line of each.
//!
//! Headers are fixed so the same samples give the same bytes: GNU format, mode 0644, uid
//! and gid 0, no user or group name, mtime 0, regular files only.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::error::WebdatasetError;
use super::sample::SampleFiles;

/// Mode of every member.
const MEMBER_MODE: u32 = 0o644;
/// Write buffer of a shard file.
const SHARD_BUFFER: usize = 1 << 20;

/// The name (without `.tar`) of shard `index`.
#[must_use]
pub fn shard_name(index: usize) -> String {
    format!("shard_{index:06}")
}

/// One shard written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    pub name: String,
    pub samples: usize,
}

impl ShardInfo {
    /// Its `manifest.jsonl` line (without the newline).
    #[must_use]
    pub fn manifest_line(&self) -> String {
        json!({"shard": self.name, "num_sequences": self.samples}).to_string()
    }
}

/// Writes samples into consecutive shards of a directory.
pub struct ShardWriter {
    dir: PathBuf,
    per_shard: usize,
    current: Option<(tar::Builder<BufWriter<File>>, PathBuf)>,
    in_current: usize,
    shards: Vec<ShardInfo>,
}

impl ShardWriter {
    #[must_use]
    pub fn new(dir: &Path, per_shard: usize) -> Self {
        Self {
            dir: dir.to_path_buf(),
            per_shard: per_shard.max(1),
            current: None,
            in_current: 0,
            shards: Vec::new(),
        }
    }

    fn finish_current(&mut self) -> Result<(), WebdatasetError> {
        if let Some((builder, path)) = self.current.take() {
            let mut inner = builder
                .into_inner()
                .map_err(|e| WebdatasetError::io("write", &path, e))?;
            inner
                .flush()
                .map_err(|e| WebdatasetError::io("write", &path, e))?;
            self.shards.push(ShardInfo {
                name: shard_name(self.shards.len()),
                samples: self.in_current,
            });
            self.in_current = 0;
        }
        Ok(())
    }

    /// Append one sample, starting a new shard when the current one is full.
    ///
    /// # Errors
    /// [`WebdatasetError::Io`] naming the shard file.
    pub fn append(&mut self, sample: &SampleFiles) -> Result<(), WebdatasetError> {
        if self.in_current == self.per_shard {
            self.finish_current()?;
        }
        if self.current.is_none() {
            let path = self
                .dir
                .join(format!("{}.tar", shard_name(self.shards.len())));
            let file = File::create(&path).map_err(|e| WebdatasetError::io("create", &path, e))?;
            let mut builder = tar::Builder::new(BufWriter::with_capacity(SHARD_BUFFER, file));
            builder.mode(tar::HeaderMode::Deterministic);
            self.current = Some((builder, path));
        }
        let Some((builder, path)) = self.current.as_mut() else {
            return Ok(());
        };
        for (ext, bytes) in &sample.files {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(bytes.len() as u64);
            header.set_mode(MEMBER_MODE);
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            let name = format!("{}.{ext}", sample.id);
            builder
                .append_data(&mut header, &name, bytes.as_slice())
                .map_err(|e| WebdatasetError::io("write", path.as_path(), e))?;
        }
        self.in_current += 1;
        Ok(())
    }

    /// Close the last shard; the shards written.
    ///
    /// # Errors
    /// [`WebdatasetError::Io`] naming the shard file.
    pub fn finish(mut self) -> Result<Vec<ShardInfo>, WebdatasetError> {
        self.finish_current()?;
        Ok(self.shards)
    }
}
