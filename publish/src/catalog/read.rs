//! [`read_rows`]: a catalog written by [`super::to_parquet`] read back into
//! [`CatalogRow`]s (appending merges the previous version's catalog with the new rows).
//!
//! Columns are found by name, so a catalog with columns added later still reads; a missing
//! required column or a value of another type is a [`CatalogReadError`] naming the row and
//! the column.

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};

use super::CatalogRow;

/// Why a catalog could not be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CatalogReadError {
    /// Not a Parquet file the reader can open (truncated, another format).
    #[error("not a readable Parquet file: {0}")]
    Parquet(String),
    /// A column is missing or holds a value of another type.
    #[error("row {row}, column {column}: {reason}")]
    Column {
        row: usize,
        column: &'static str,
        reason: String,
    },
}

fn field<'a>(row: &'a Row, n: usize, column: &'static str) -> Result<&'a Field, CatalogReadError> {
    row.get_column_iter()
        .find(|(name, _)| name.as_str() == column)
        .map(|(_, f)| f)
        .ok_or(CatalogReadError::Column {
            row: n,
            column,
            reason: "missing".into(),
        })
}

fn wrong(n: usize, column: &'static str, f: &Field) -> CatalogReadError {
    CatalogReadError::Column {
        row: n,
        column,
        reason: format!("unexpected value {f}"),
    }
}

fn opt_str(row: &Row, n: usize, column: &'static str) -> Result<Option<String>, CatalogReadError> {
    match field(row, n, column)? {
        Field::Str(s) => Ok(Some(s.clone())),
        Field::Null => Ok(None),
        other => Err(wrong(n, column, other)),
    }
}

fn req_str(row: &Row, n: usize, column: &'static str) -> Result<String, CatalogReadError> {
    opt_str(row, n, column)?.ok_or(CatalogReadError::Column {
        row: n,
        column,
        reason: "null in a required column".into(),
    })
}

fn opt_f64(row: &Row, n: usize, column: &'static str) -> Result<Option<f64>, CatalogReadError> {
    match field(row, n, column)? {
        Field::Double(v) => Ok(Some(*v)),
        Field::Null => Ok(None),
        other => Err(wrong(n, column, other)),
    }
}

fn opt_i64(row: &Row, n: usize, column: &'static str) -> Result<Option<i64>, CatalogReadError> {
    match field(row, n, column)? {
        Field::Long(v) => Ok(Some(*v)),
        Field::Null => Ok(None),
        other => Err(wrong(n, column, other)),
    }
}

fn req_i64(row: &Row, n: usize, column: &'static str) -> Result<i64, CatalogReadError> {
    opt_i64(row, n, column)?.ok_or(CatalogReadError::Column {
        row: n,
        column,
        reason: "null in a required column".into(),
    })
}

fn list(row: &Row, n: usize, column: &'static str) -> Result<Vec<String>, CatalogReadError> {
    match field(row, n, column)? {
        Field::ListInternal(l) => l
            .elements()
            .iter()
            .map(|e| match e {
                Field::Str(s) => Ok(s.clone()),
                other => Err(wrong(n, column, other)),
            })
            .collect(),
        Field::Null => Ok(Vec::new()),
        other => Err(wrong(n, column, other)),
    }
}

fn row_of(row: &Row, n: usize) -> Result<CatalogRow, CatalogReadError> {
    Ok(CatalogRow {
        dataset: req_str(row, n, "dataset")?,
        robot: opt_str(row, n, "robot")?,
        host: opt_str(row, n, "host")?,
        episode: req_str(row, n, "episode")?,
        episode_id: req_str(row, n, "episode_id")?,
        env_id: req_str(row, n, "env_id")?,
        stream: req_str(row, n, "stream")?,
        clock: opt_str(row, n, "clock")?,
        tick_hz: opt_f64(row, n, "tick_hz")?,
        start_ns: opt_i64(row, n, "start_ns")?,
        end_ns: opt_i64(row, n, "end_ns")?,
        duration_s: opt_f64(row, n, "duration_s")?,
        steps: req_i64(row, n, "steps")?,
        channels: list(row, n, "channels")?,
        bytes: req_i64(row, n, "bytes")?,
        status: req_str(row, n, "status")?,
        tags: list(row, n, "tags")?,
        labels: list(row, n, "labels")?,
        blobs: list(row, n, "blobs")?,
    })
}

/// The rows of a catalog (Parquet bytes), in file order.
///
/// # Errors
/// [`CatalogReadError`] naming the row and column that does not fit.
pub fn read_rows(bytes: Bytes) -> Result<Vec<CatalogRow>, CatalogReadError> {
    let reader =
        SerializedFileReader::new(bytes).map_err(|e| CatalogReadError::Parquet(e.to_string()))?;
    let iter = reader
        .get_row_iter(None)
        .map_err(|e| CatalogReadError::Parquet(e.to_string()))?;
    let mut out = Vec::new();
    for (n, row) in iter.enumerate() {
        let row = row.map_err(|e| CatalogReadError::Parquet(e.to_string()))?;
        out.push(row_of(&row, n)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::to_parquet;

    fn row(episode: &str, robot: Option<&str>) -> CatalogRow {
        CatalogRow {
            dataset: "lab/pick".into(),
            robot: robot.map(str::to_owned),
            host: None,
            episode: episode.into(),
            episode_id: "ep".into(),
            env_id: "env".into(),
            stream: "main".into(),
            clock: Some("ticks".into()),
            tick_hz: Some(50.0),
            start_ns: None,
            end_ns: Some(7),
            duration_s: Some(0.5),
            steps: 25,
            channels: vec!["q".into(), "cmd".into()],
            bytes: 1234,
            status: "complete".into(),
            tags: Vec::new(),
            labels: vec!["grasp".into()],
            blobs: vec!["a".repeat(64)],
        }
    }

    #[test]
    fn catalog_rows_round_trip_through_parquet() -> Result<(), Box<dyn std::error::Error>> {
        let rows = vec![row("r1/ep", Some("r1")), row("ep2", None)];
        let bytes = to_parquet(&rows)?;
        assert_eq!(read_rows(Bytes::from(bytes.clone()))?, rows);
        // Written again from what was read: the same bytes.
        assert_eq!(to_parquet(&read_rows(Bytes::from(bytes.clone()))?)?, bytes);
        assert!(matches!(
            read_rows(Bytes::from_static(b"not parquet")),
            Err(CatalogReadError::Parquet(_))
        ));
        Ok(())
    }
}
