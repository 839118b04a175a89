//! The catalog table: one row per episode stream of a dataset version, in Parquet
//! (docs/PUBLISH.md, "The catalog"). Built from the local episode directories at publish
//! time ([`rows`]) and written with the `parquet` crate's column writer ([`to_parquet`]);
//! the bytes depend on the rows only (no time, no host), so the same content gives the
//! same catalog blob.
//!
//! The version hash is not a column: the dataset version names the catalog's hash, so the
//! catalog cannot hold the version's. The version is in the catalog's key
//! (`catalog/<version>.parquet`) and `wshard query` adds it as the column `version`.

use std::path::Path;
use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use serde_json::{Map, Value};
use wshard::episode::meta::parse_object;
use wshard::episode::{names, Timebase};
use wshard::episode_dir::annotations::Annotations;
use wshard::episode_dir::names::annotations_file_name;
use wshard::episode_dir::{EpisodeDir, Layout};
use wshard::manifest::Manifest;
use wshard::read::ShardReader;

mod read;
pub use read::{read_rows, CatalogReadError};

use crate::episodes::LocalEpisode;
use crate::error::PublishError;

/// The stream name of a single-stream episode.
pub const MAIN_STREAM: &str = "main";
/// `created_by` in the Parquet footer: constant, so the bytes depend on the rows only.
pub const CREATED_BY: &str = "wshard-publish catalog v1";
/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;
/// The key of the producer's metadata object (manifest, `meta/episode`).
const METADATA_KEY: &str = "metadata";

/// The Parquet schema, column by column (docs/PUBLISH.md has the table).
pub const SCHEMA: &str = "message wshard_catalog {
  required binary dataset (STRING);
  optional binary robot (STRING);
  optional binary host (STRING);
  required binary episode (STRING);
  required binary episode_id (STRING);
  required binary env_id (STRING);
  required binary stream (STRING);
  optional binary clock (STRING);
  optional double tick_hz;
  optional int64 start_ns;
  optional int64 end_ns;
  optional double duration_s;
  required int64 steps;
  required group channels (LIST) { repeated group list { required binary element (STRING); } }
  required int64 bytes;
  required binary status (STRING);
  required group tags (LIST) { repeated group list { required binary element (STRING); } }
  required group labels (LIST) { repeated group list { required binary element (STRING); } }
  required group blobs (LIST) { repeated group list { required binary element (STRING); } }
}";

/// One row: one stream of one episode.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogRow {
    pub dataset: String,
    pub robot: Option<String>,
    pub host: Option<String>,
    /// The episode's key in the version (its directory name).
    pub episode: String,
    /// The id inside the episode's files.
    pub episode_id: String,
    pub env_id: String,
    pub stream: String,
    /// `ticks` or `timestamps_ns`.
    pub clock: Option<String>,
    pub tick_hz: Option<f64>,
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
    pub duration_s: Option<f64>,
    pub steps: i64,
    pub channels: Vec<String>,
    /// Bytes of the stream's files (its manifest and chunks; every file of a
    /// single-stream episode).
    pub bytes: i64,
    pub status: String,
    pub tags: Vec<String>,
    pub labels: Vec<String>,
    /// SHA-256 of the stream's files, sorted by file name.
    pub blobs: Vec<String>,
}

fn meta_str(meta: &Map<String, Value>, key: &str) -> Option<String> {
    meta.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn tags_of(meta: &Map<String, Value>) -> Vec<String> {
    match meta.get("tags").and_then(Value::as_array) {
        Some(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn clock_of(tb: Option<&Timebase>) -> (Option<String>, Option<f64>) {
    match tb {
        Some(Timebase::Ticks { tick_hz }) => (Some("ticks".into()), Some(*tick_hz)),
        Some(Timebase::TimestampsNs { dt_ns }) => (
            Some("timestamps_ns".into()),
            (*dt_ns > 0).then(|| NS_PER_S / *dt_ns as f64),
        ),
        None => (None, None),
    }
}

/// The episode metadata, what its producer sent with the episode's `OPEN`: the index
/// `metadata` of a multi-stream episode; for a single-stream one the manifest's top-level
/// `metadata` object when it has one, else the `metadata` of its first chunk's
/// `meta/episode` (where the daemon keeps it: every chunk carries the same); else empty.
fn metadata_of(dir: &EpisodeDir, ep: &LocalEpisode) -> Result<Map<String, Value>, PublishError> {
    if let Some(index) = dir.index() {
        return Ok(index.metadata.clone());
    }
    let Some(stream) = dir.streams().first() else {
        return Ok(Map::new());
    };
    let read_err = |source| PublishError::ManifestRead {
        episode: ep.id.clone(),
        source,
    };
    let manifest = Manifest::read_file(&stream.manifest_path).map_err(read_err)?;
    if let Some(m) = manifest.extra.get(METADATA_KEY).and_then(Value::as_object) {
        return Ok(m.clone());
    }
    let Some(first) = manifest.chunks.first() else {
        return Ok(Map::new());
    };
    let chunk = stream
        .manifest_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(&first.uri);
    let bytes = ShardReader::open(&chunk)
        .and_then(|r| r.read_block(names::META_EPISODE))
        .map_err(read_err)?;
    let episode_meta = parse_object(names::META_EPISODE, &bytes).map_err(read_err)?;
    Ok(episode_meta
        .get(METADATA_KEY)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default())
}

fn labels_of(dir: &EpisodeDir, episode: &str) -> Result<Vec<String>, PublishError> {
    let path = dir.path().join(annotations_file_name(dir.episode_id()));
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let bytes = std::fs::read(&path).map_err(|e| PublishError::io(&path, e))?;
    let ann =
        Annotations::from_json_bytes(&bytes, &path).map_err(|e| PublishError::AnnotationsRead {
            episode: episode.to_owned(),
            path: path.clone(),
            detail: e.to_string(),
        })?;
    let mut labels: Vec<String> = ann.annotations.into_iter().map(|a| a.label).collect();
    labels.sort();
    labels.dedup();
    Ok(labels)
}

/// The catalog rows of the episodes, in order of episode then stream.
///
/// # Errors
/// [`PublishError::EpisodeRead`], [`PublishError::ManifestRead`], I/O (annotations).
pub fn rows(dataset: &str, episodes: &[LocalEpisode]) -> Result<Vec<CatalogRow>, PublishError> {
    let mut out = Vec::new();
    for ep in episodes {
        let Some(first) = ep.files.first() else {
            continue;
        };
        let root = first
            .path
            .ancestors()
            .nth(first.rel.split('/').count())
            .unwrap_or_else(|| Path::new("."));
        let dir = EpisodeDir::open(root).map_err(|source| PublishError::EpisodeRead {
            episode: ep.id.clone(),
            source,
        })?;
        let meta = metadata_of(&dir, ep)?;
        let labels = labels_of(&dir, &ep.id)?;
        let env_id = dir.index().map_or_else(
            || {
                dir.streams()
                    .first()
                    .and_then(|s| Manifest::read_file(&s.manifest_path).ok())
                    .map(|m| m.env_id)
                    .unwrap_or_default()
            },
            |i| i.env_id.clone(),
        );
        let multi = dir.layout() == Layout::MultiStream;
        for s in dir.streams() {
            let (stream, under) = if multi {
                (s.name.clone(), format!("streams/{}/", s.name))
            } else {
                (MAIN_STREAM.to_owned(), String::new())
            };
            let files: Vec<_> = ep
                .files
                .iter()
                .filter(|f| f.rel.starts_with(&under))
                .collect();
            let (clock, tick_hz) = clock_of(s.timebase.as_ref());
            let duration_s = match (s.first_t_ns, s.last_t_ns, tick_hz) {
                (Some(a), Some(b), _) => Some((b - a) as f64 / NS_PER_S),
                (_, _, Some(hz)) if hz > 0.0 => Some(s.steps as f64 / hz),
                _ => None,
            };
            out.push(CatalogRow {
                dataset: dataset.to_owned(),
                robot: meta_str(&meta, "robot"),
                host: meta_str(&meta, "host"),
                episode: ep.id.clone(),
                episode_id: dir.episode_id().to_owned(),
                env_id: env_id.clone(),
                stream,
                clock,
                tick_hz,
                start_ns: s.first_t_ns,
                end_ns: s.last_t_ns,
                duration_s,
                steps: i64::try_from(s.steps).unwrap_or(i64::MAX),
                channels: s.channels.iter().map(|c| c.name.clone()).collect(),
                bytes: i64::try_from(files.iter().map(|f| f.size).sum::<u64>()).unwrap_or(i64::MAX),
                status: s.status.unwrap_or(ep.status).as_str().to_owned(),
                tags: tags_of(&meta),
                labels: labels.clone(),
                blobs: files.iter().map(|f| f.sha256.clone()).collect(),
            });
        }
    }
    Ok(out)
}

/// Definition and repetition levels and values of a `required` list of strings column.
fn list_levels(lists: &[&Vec<String>]) -> (Vec<ByteArray>, Vec<i16>, Vec<i16>) {
    let mut values = Vec::new();
    let mut def = Vec::new();
    let mut rep = Vec::new();
    for list in lists {
        if list.is_empty() {
            def.push(0);
            rep.push(0);
        }
        for (i, v) in list.iter().enumerate() {
            values.push(ByteArray::from(v.as_str()));
            def.push(1);
            rep.push(i16::from(i > 0));
        }
    }
    (values, def, rep)
}

fn opt_levels<T: Clone>(items: &[Option<T>]) -> (Vec<T>, Vec<i16>) {
    let values = items.iter().flatten().cloned().collect();
    let def = items.iter().map(|v| i16::from(v.is_some())).collect();
    (values, def)
}

fn strs(items: &[&str]) -> Vec<ByteArray> {
    items.iter().map(|s| ByteArray::from(*s)).collect()
}

fn opt_strs(items: &[Option<&str>]) -> (Vec<ByteArray>, Vec<i16>) {
    let (v, d) = opt_levels(items);
    (strs(&v), d)
}

/// The catalog as Parquet bytes (one row group, uncompressed).
///
/// # Errors
/// [`ParquetError`] from the writer (not expected for these rows).
pub fn to_parquet(rows: &[CatalogRow]) -> Result<Vec<u8>, ParquetError> {
    let schema = Arc::new(parse_message_type(SCHEMA)?);
    let props = Arc::new(
        WriterProperties::builder()
            .set_created_by(CREATED_BY.into())
            .build(),
    );
    let mut buf = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut buf, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut column = 0_usize;
    while let Some(mut col) = group.next_column()? {
        let s = |f: fn(&CatalogRow) -> &str| strs(&rows.iter().map(f).collect::<Vec<_>>());
        let os =
            |f: fn(&CatalogRow) -> Option<&str>| opt_strs(&rows.iter().map(f).collect::<Vec<_>>());
        let l = |f: fn(&CatalogRow) -> &Vec<String>| {
            list_levels(&rows.iter().map(f).collect::<Vec<_>>())
        };
        match column {
            0 | 3 | 4 | 5 | 6 | 15 => {
                let v = match column {
                    0 => s(|r| &r.dataset),
                    3 => s(|r| &r.episode),
                    4 => s(|r| &r.episode_id),
                    5 => s(|r| &r.env_id),
                    6 => s(|r| &r.stream),
                    _ => s(|r| &r.status),
                };
                col.typed::<ByteArrayType>().write_batch(&v, None, None)?;
            }
            1 | 2 | 7 => {
                let (v, d) = match column {
                    1 => os(|r| r.robot.as_deref()),
                    2 => os(|r| r.host.as_deref()),
                    _ => os(|r| r.clock.as_deref()),
                };
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&d), None)?;
            }
            8 | 11 => {
                let items: Vec<Option<f64>> = rows
                    .iter()
                    .map(|r| if column == 8 { r.tick_hz } else { r.duration_s })
                    .collect();
                let (v, d) = opt_levels(&items);
                col.typed::<DoubleType>().write_batch(&v, Some(&d), None)?;
            }
            9 | 10 => {
                let items: Vec<Option<i64>> = rows
                    .iter()
                    .map(|r| if column == 9 { r.start_ns } else { r.end_ns })
                    .collect();
                let (v, d) = opt_levels(&items);
                col.typed::<Int64Type>().write_batch(&v, Some(&d), None)?;
            }
            12 | 14 => {
                let v: Vec<i64> = rows
                    .iter()
                    .map(|r| if column == 12 { r.steps } else { r.bytes })
                    .collect();
                col.typed::<Int64Type>().write_batch(&v, None, None)?;
            }
            _ => {
                let (v, d, r) = match column {
                    13 => l(|r| &r.channels),
                    16 => l(|r| &r.tags),
                    17 => l(|r| &r.labels),
                    _ => l(|r| &r.blobs),
                };
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&d), Some(&r))?;
            }
        }
        col.close()?;
        column += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(buf)
}
