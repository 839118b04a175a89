//! The Parquet tables of a LeRobot v3 dataset, written with the Arrow writer (snappy, the
//! `ARROW:schema` the Python readers use):
//!
//! - `data/chunk-C/file-F.parquet`: one row per frame; vector features as
//!   `fixed_size_list<float32>[D]`, `timestamp` float32, `frame_index`, `episode_index`,
//!   `index`, `task_index` int64; the Hugging Face `datasets` features in the `huggingface`
//!   schema metadata (datasets 4: `List` with a `length`). One row group per episode.
//! - `meta/episodes/chunk-000/file-000.parquet`: one row per episode (see [`EpisodeRow`]).
//! - `meta/tasks.parquet`: `task_index` and the task text as the pandas index
//!   (`__index_level_0__`, with the `pandas` schema metadata), as `DataFrame.to_parquet`
//!   writes `pd.DataFrame({"task_index": ...}, index=tasks)`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::{json, Map, Value};

use super::error::LerobotError;
use super::select::Plan;
use super::stats::FeatureStats;

/// The element field of a list column, as pyarrow names it.
const ITEM: &str = "item";

fn props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build()
}

fn arrow_err(table: &'static str) -> impl Fn(arrow_schema::ArrowError) -> LerobotError {
    move |source| LerobotError::Arrow { table, source }
}

fn parquet_err(file: &Path) -> impl Fn(parquet::errors::ParquetError) -> LerobotError + '_ {
    move |source| LerobotError::Parquet {
        file: file.to_path_buf(),
        source,
    }
}

/// The Hugging Face `datasets` type of a `Value` column.
fn hf_value(dtype: &str) -> Value {
    json!({"dtype": dtype, "_type": "Value"})
}

fn item(dtype: DataType) -> Arc<Field> {
    Arc::new(Field::new(ITEM, dtype, true))
}

/// The default per-frame columns, `(name, arrow type, datasets dtype)`.
const DEFAULT_COLUMNS: [(&str, DataType, &str); 5] = [
    ("timestamp", DataType::Float32, "float32"),
    ("frame_index", DataType::Int64, "int64"),
    ("episode_index", DataType::Int64, "int64"),
    ("index", DataType::Int64, "int64"),
    ("task_index", DataType::Int64, "int64"),
];

/// The data table's schema for `plan`.
#[must_use]
pub fn data_schema(plan: &Plan) -> SchemaRef {
    let mut fields = Vec::new();
    let mut hf = Map::new();
    for v in plan.vectors() {
        let dim = i32::try_from(v.dim()).unwrap_or(i32::MAX);
        fields.push(Field::new(
            v.key,
            DataType::FixedSizeList(item(DataType::Float32), dim),
            true,
        ));
        hf.insert(
            v.key.to_owned(),
            json!({"feature": hf_value("float32"), "length": dim, "_type": "List"}),
        );
    }
    for (name, dtype, hf_dtype) in DEFAULT_COLUMNS {
        fields.push(Field::new(name, dtype, true));
        hf.insert(name.to_owned(), hf_value(hf_dtype));
    }
    let meta = json!({"info": {"features": hf}}).to_string();
    let metadata = HashMap::from([("huggingface".to_owned(), meta)]);
    Arc::new(Schema::new(fields).with_metadata(metadata))
}

/// The columns of one episode's rows.
#[derive(Debug, Default)]
pub struct DataRows<'a> {
    /// Per vector feature of the plan (state, then action): `rows x dim` values.
    pub vectors: Vec<(&'a [f32], usize)>,
    pub timestamp: Vec<f32>,
    pub frame_index: Vec<i64>,
    pub episode_index: Vec<i64>,
    pub index: Vec<i64>,
    pub task_index: Vec<i64>,
}

/// A data file being written.
pub struct DataFile {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    path: PathBuf,
}

impl DataFile {
    /// Create `path` with `schema`.
    ///
    /// # Errors
    /// I/O and Parquet errors naming the file.
    pub fn create(path: &Path, schema: SchemaRef) -> Result<Self, LerobotError> {
        let file = File::create(path).map_err(|e| LerobotError::io("create", path, e))?;
        let writer =
            ArrowWriter::try_new(file, schema.clone(), Some(props())).map_err(parquet_err(path))?;
        Ok(Self {
            writer,
            schema,
            path: path.to_path_buf(),
        })
    }

    /// Append one episode's rows as one row group.
    ///
    /// # Errors
    /// Arrow and Parquet errors.
    pub fn write(&mut self, rows: &DataRows<'_>) -> Result<(), LerobotError> {
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (values, dim) in &rows.vectors {
            let dim_i32 = i32::try_from(*dim).unwrap_or(i32::MAX);
            let list = FixedSizeListArray::try_new(
                item(DataType::Float32),
                dim_i32,
                Arc::new(Float32Array::from(values.to_vec())),
                None,
            )
            .map_err(arrow_err("data"))?;
            columns.push(Arc::new(list));
        }
        columns.push(Arc::new(Float32Array::from(rows.timestamp.clone())));
        for v in [
            &rows.frame_index,
            &rows.episode_index,
            &rows.index,
            &rows.task_index,
        ] {
            columns.push(Arc::new(Int64Array::from(v.clone())));
        }
        let batch =
            RecordBatch::try_new(self.schema.clone(), columns).map_err(arrow_err("data"))?;
        self.writer.write(&batch).map_err(parquet_err(&self.path))?;
        self.writer.flush().map_err(parquet_err(&self.path))
    }

    /// Bytes written so far.
    #[must_use]
    pub fn bytes_written(&self) -> usize {
        self.writer.bytes_written()
    }

    /// Finish the file.
    ///
    /// # Errors
    /// Parquet errors.
    pub fn close(self) -> Result<(), LerobotError> {
        let path = self.path;
        self.writer.close().map_err(parquet_err(&path))?;
        Ok(())
    }
}

/// Where an episode's video of one key is.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoSpan {
    pub chunk_index: i64,
    pub file_index: i64,
    pub from_timestamp: f64,
    pub to_timestamp: f64,
}

/// One row of the episodes table.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeRow {
    pub episode_index: i64,
    pub tasks: Vec<String>,
    pub length: i64,
    pub data_chunk_index: i64,
    pub data_file_index: i64,
    pub dataset_from_index: i64,
    pub dataset_to_index: i64,
    /// Per video key (plan order).
    pub videos: Vec<VideoSpan>,
    /// `(feature, stats)`, the same features in the same order for every episode.
    pub stats: Vec<(String, FeatureStats)>,
}

fn int_column(rows: &[EpisodeRow], f: impl Fn(&EpisodeRow) -> i64) -> ArrayRef {
    Arc::new(Int64Array::from(rows.iter().map(f).collect::<Vec<_>>()))
}

/// A stat column: `list<int64>` for `count`, `list<double>` per element of a vector,
/// `list<list<list<double>>>` (`(3, 1, 1)`) per colour channel of a video.
fn stat_column(rows: &[EpisodeRow], feature: usize, stat: &str) -> ArrayRef {
    if stat == "count" {
        let mut b = ListBuilder::new(Int64Builder::new());
        for r in rows {
            let count = r.stats.get(feature).map_or(0, |s| s.1.count);
            b.values()
                .append_value(i64::try_from(count).unwrap_or(i64::MAX));
            b.append(true);
        }
        return Arc::new(b.finish());
    }
    let values = |r: &EpisodeRow| {
        r.stats
            .get(feature)
            .map(|s| s.1.get(stat))
            .unwrap_or_default()
    };
    let picture = rows
        .first()
        .and_then(|r| r.stats.get(feature))
        .is_some_and(|s| s.1.picture);
    if picture {
        let mut b = ListBuilder::new(ListBuilder::new(ListBuilder::new(Float64Builder::new())));
        for r in rows {
            for v in values(r) {
                let inner = b.values();
                inner.values().values().append_value(v);
                inner.values().append(true);
                inner.append(true);
            }
            b.append(true);
        }
        return Arc::new(b.finish());
    }
    let mut b = ListBuilder::new(Float64Builder::new());
    for r in rows {
        b.values().append_slice(&values(r));
        b.append(true);
    }
    Arc::new(b.finish())
}

fn write_table(
    path: &Path,
    table: &'static str,
    fields: Vec<Field>,
    columns: Vec<ArrayRef>,
    metadata: HashMap<String, String>,
) -> Result<(), LerobotError> {
    let schema = Arc::new(Schema::new(fields).with_metadata(metadata));
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(arrow_err(table))?;
    let file = File::create(path).map_err(|e| LerobotError::io("create", path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, schema, Some(props())).map_err(parquet_err(path))?;
    writer.write(&batch).map_err(parquet_err(path))?;
    writer.close().map_err(parquet_err(path))?;
    Ok(())
}

/// Columns being gathered.
#[derive(Default)]
struct Columns {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Columns {
    fn push(&mut self, name: impl Into<String>, array: ArrayRef) {
        self.fields
            .push(Field::new(name, array.data_type().clone(), true));
        self.arrays.push(array);
    }

    fn int(
        &mut self,
        name: impl Into<String>,
        rows: &[EpisodeRow],
        f: impl Fn(&EpisodeRow) -> i64,
    ) {
        self.push(name, int_column(rows, f));
    }

    fn float(
        &mut self,
        name: impl Into<String>,
        rows: &[EpisodeRow],
        f: impl Fn(&EpisodeRow) -> f64,
    ) {
        let values: Vec<f64> = rows.iter().map(f).collect();
        self.push(name, Arc::new(Float64Array::from(values)));
    }
}

/// Write the episodes table at `path` (chunk 0, file 0 of `meta/episodes`): per episode
/// `episode_index`, `tasks`, `length`, `data/chunk_index`, `data/file_index`,
/// `dataset_from_index`, `dataset_to_index`, per video key `videos/KEY/chunk_index`,
/// `file_index`, `from_timestamp`, `to_timestamp`, `stats/FEATURE/STAT`,
/// `meta/episodes/chunk_index`, `meta/episodes/file_index`.
///
/// # Errors
/// Arrow, Parquet and I/O errors.
pub fn write_episodes(path: &Path, plan: &Plan, rows: &[EpisodeRow]) -> Result<(), LerobotError> {
    let mut c = Columns::default();
    c.int("episode_index", rows, |r| r.episode_index);
    let mut tasks = ListBuilder::new(StringBuilder::new());
    for r in rows {
        for t in &r.tasks {
            tasks.values().append_value(t);
        }
        tasks.append(true);
    }
    c.push("tasks", Arc::new(tasks.finish()));
    c.int("length", rows, |r| r.length);
    c.int("data/chunk_index", rows, |r| r.data_chunk_index);
    c.int("data/file_index", rows, |r| r.data_file_index);
    c.int("dataset_from_index", rows, |r| r.dataset_from_index);
    c.int("dataset_to_index", rows, |r| r.dataset_to_index);
    for (k, v) in plan.videos.iter().enumerate() {
        let span = |r: &EpisodeRow| r.videos.get(k).cloned();
        let key = &v.key;
        c.int(format!("videos/{key}/chunk_index"), rows, |r| {
            span(r).map_or(0, |s| s.chunk_index)
        });
        c.int(format!("videos/{key}/file_index"), rows, |r| {
            span(r).map_or(0, |s| s.file_index)
        });
        c.float(format!("videos/{key}/from_timestamp"), rows, |r| {
            span(r).map_or(0.0, |s| s.from_timestamp)
        });
        c.float(format!("videos/{key}/to_timestamp"), rows, |r| {
            span(r).map_or(0.0, |s| s.to_timestamp)
        });
    }
    let features: Vec<String> = rows
        .first()
        .map(|r| r.stats.iter().map(|s| s.0.clone()).collect())
        .unwrap_or_default();
    for (i, feature) in features.iter().enumerate() {
        for stat in FeatureStats::names() {
            c.push(
                format!("stats/{feature}/{stat}"),
                stat_column(rows, i, stat),
            );
        }
    }
    c.int("meta/episodes/chunk_index", rows, |_| 0);
    c.int("meta/episodes/file_index", rows, |_| 0);
    write_table(path, "episodes", c.fields, c.arrays, HashMap::new())
}

/// The `pandas` metadata of a frame with column `task_index` and an unnamed string index.
fn pandas_tasks_metadata() -> String {
    json!({
        "index_columns": ["__index_level_0__"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode",
                            "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": null},
            {"name": null, "field_name": "__index_level_0__", "pandas_type": "unicode",
             "numpy_type": "object", "metadata": null}
        ],
        "creator": {"library": "pyarrow", "version": "14.0.2"},
        "pandas_version": "2.2.3"
    })
    .to_string()
}

/// Write `meta/tasks.parquet`: task `i` of `tasks` has `task_index` i.
///
/// # Errors
/// Arrow, Parquet and I/O errors.
pub fn write_tasks(path: &Path, tasks: &[String]) -> Result<(), LerobotError> {
    let n = i64::try_from(tasks.len()).unwrap_or(i64::MAX);
    let fields = vec![
        Field::new("task_index", DataType::Int64, true),
        Field::new("__index_level_0__", DataType::Utf8, true),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())),
        Arc::new(StringArray::from(tasks.to_vec())),
    ];
    let metadata = HashMap::from([("pandas".to_owned(), pandas_tasks_metadata())]);
    write_table(path, "tasks", fields, columns, metadata)
}
