//! What `wshard query` runs DuckDB on: the catalogs of the latest versions of one dataset
//! or of every dataset under the prefix ([`catalog_targets`]), and the Python script that
//! queries them in place ([`QUERY_SCRIPT`], `publish/python/wshard_query.py`).

use crate::error::PublishError;
use crate::layout::{DatasetId, DATASETS_DIR};
use crate::publish::Publisher;

/// The query script, run with `python3 -c` (see its docstring for the arguments).
pub const QUERY_SCRIPT: &str = include_str!("../python/wshard_query.py");

/// One catalog to query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogTarget {
    pub dataset: DatasetId,
    pub version: String,
    /// The key (with the prefix) of `catalog/<version>.parquet`.
    pub key: String,
}

/// The catalog of a dataset's latest version, `None` when the dataset has no `latest.json`
/// or its version has no catalog (published before the catalog existed).
///
/// # Errors
/// Typed store errors, [`PublishError::BadLatest`].
fn latest_catalog(
    p: &Publisher,
    dataset: &DatasetId,
) -> Result<Option<CatalogTarget>, PublishError> {
    let Some(version) = p.read_latest(dataset)? else {
        return Ok(None);
    };
    let key = p.keys().catalog(dataset, &version);
    if p.store().head_size(&key)?.is_none() {
        return Ok(None);
    }
    Ok(Some(CatalogTarget {
        dataset: dataset.clone(),
        version,
        key,
    }))
}

/// The catalogs to query: the latest version's of `dataset`, or with `None` the latest
/// version's of every dataset under the prefix (sorted by dataset).
///
/// # Errors
/// [`PublishError::CatalogNotFound`] when there is none; typed store errors.
pub fn catalog_targets(
    p: &Publisher,
    dataset: Option<&DatasetId>,
) -> Result<Vec<CatalogTarget>, PublishError> {
    let prefix = p.keys().prefix();
    if let Some(ds) = dataset {
        return latest_catalog(p, ds)?.map(|t| vec![t]).ok_or_else(|| {
            PublishError::CatalogNotFound {
                what: format!("dataset {ds}"),
                key: p.keys().latest(ds),
            }
        });
    }
    let root = format!("{prefix}{DATASETS_DIR}/");
    let mut out = Vec::new();
    for ws in p.store().list_dirs(&root)? {
        for name in p.store().list_dirs(&format!("{root}{ws}/"))? {
            // Directories that are not dataset names are not ours: skipped.
            if let Ok(ds) = DatasetId::parse(&format!("{ws}/{name}")) {
                out.extend(latest_catalog(p, &ds)?);
            }
        }
    }
    if out.is_empty() {
        return Err(PublishError::CatalogNotFound {
            what: "any dataset".into(),
            key: root,
        });
    }
    Ok(out)
}
