//! One sample's files, from its planned anchor ([`super::plan`]): `lowdim.npz`,
//! `metadata.json`, `language_instructions.json`, pictures.

use serde_json::{json, Map, Value};
use wshard::episode::DType;

use super::episode::LoadedEpisode;
use super::error::WebdatasetError;
use super::frames::{sample_frames, EncodedFrames};
use super::ids::sample_id;
use super::npz::{npy, zip_stored};
use super::options::WebdatasetOptions;
use super::plan::Planned;
use super::values::{bf16_as_f32, npz_dtype};
use super::window::{image_frames, masks};

/// One sample's files (`(extension, bytes)`, in tar order) and its windows per key.
#[derive(Debug)]
pub struct SampleFiles {
    pub id: String,
    pub files: Vec<(String, Vec<u8>)>,
    /// Per [`LoadedEpisode::keys`]: `T * width` values.
    pub windows: Vec<Vec<f64>>,
}

fn lowdim_npz(
    ep: &LoadedEpisode,
    p: &Planned,
    opts: &WebdatasetOptions,
) -> Result<Vec<u8>, WebdatasetError> {
    let npz_error = |e: &dyn std::fmt::Display| WebdatasetError::Npz {
        episode: ep.id.clone(),
        message: e.to_string(),
    };
    let t = p.window.rows.len();
    let mut entries = Vec::with_capacity(ep.keys.len() + 2);
    for (key, column) in ep.keys.iter().zip(&ep.lowdim.columns) {
        let data: Vec<u8> = if key.column_dtype == DType::BF16 {
            let vals: Vec<f64> = p
                .window
                .rows
                .iter()
                .flat_map(|&r| {
                    key.values[r * key.width..(r + 1) * key.width]
                        .iter()
                        .copied()
                })
                .collect();
            bf16_as_f32(&vals)
        } else {
            p.window
                .rows
                .iter()
                .flat_map(|&r| column.row(r).unwrap_or(&[]).iter().copied())
                .collect()
        };
        // bf16 columns were converted to f32 above; every other dtype has its own descr.
        let (descr, _) = crate::npy::descr(npz_dtype(key.dtype).code()).unwrap_or(("<f4", false));
        entries.push((
            format!("{}.npy", key.key),
            npy(descr, &[t, key.width], &data).map_err(|e| npz_error(&e))?,
        ));
    }
    let (past, future) = masks(opts.past_steps, opts.future_steps);
    for (name, mask) in [("past_mask", past), ("future_mask", future)] {
        let data: Vec<u8> = mask.iter().map(|&b| u8::from(b)).collect();
        entries.push((
            format!("{name}.npy"),
            npy("|b1", &[t], &data).map_err(|e| npz_error(&e))?,
        ));
    }
    zip_stored(&entries).map_err(|e| npz_error(&e))
}

fn to_bytes(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// Build one sample's files, its pictures taken from `encoded` (its batch's).
///
/// # Errors
/// [`WebdatasetError::Npz`], and [`WebdatasetError::Encode`] for a picture missing from
/// `encoded`.
pub fn assemble(
    ep: &LoadedEpisode,
    p: &Planned,
    opts: &WebdatasetOptions,
    encoded: &EncodedFrames,
) -> Result<SampleFiles, WebdatasetError> {
    let id = sample_id(&ep.id, p.frame as u64);
    let mut files = vec![("lowdim.npz".to_owned(), lowdim_npz(ep, p, opts)?)];
    let (_, img_left, img_right) = image_frames(p.frame, ep.anchor_t_ns.len(), &opts.image_offsets);
    let mut images = Map::new();
    let mut pictures = Vec::new();
    for ((pi, pic), frames) in ep
        .pictures
        .iter()
        .enumerate()
        .zip(sample_frames(ep, p, opts))
    {
        let stream = &ep.picture_streams[pic.stream];
        for (&src, off) in frames.iter().zip(&opts.image_offsets) {
            let enc = encoded
                .get((pi, src))
                .ok_or_else(|| WebdatasetError::Encode {
                    episode: ep.id.clone(),
                    channel: pic.key.clone(),
                    frame: src,
                    what: "picture",
                    message: "not encoded with its batch".to_owned(),
                })?;
            pictures.push((
                format!("{}_t{off}.{}", pic.stem, enc.ext),
                enc.bytes.clone(),
            ));
        }
        let t_ns: Vec<i64> = frames
            .iter()
            .map(|&f| stream.timestamps_ns().get(f).copied().unwrap_or(0))
            .collect();
        images.insert(
            pic.stem.clone(),
            json!({"channel": pic.key, "frames": frames, "t_ns": t_ns}),
        );
    }
    let rows = &p.window.rows;
    let meta = json!({
        "sample_id": id,
        "episode_id": ep.id,
        "env_id": ep.env_id,
        "anchor_channel": ep.anchor_key,
        "anchor_frame": p.frame,
        "anchor_t_ns": ep.anchor_t_ns[p.frame],
        "lowdim_clock": ep.lowdim_clock,
        "lowdim_anchor_row": p.window.anchor_row,
        "lowdim_rows": rows,
        "lowdim_t_ns": rows.iter().map(|&r| ep.lowdim.t_ns[r]).collect::<Vec<_>>(),
        "past_lowdim_steps": opts.past_steps,
        "future_lowdim_steps": opts.future_steps,
        "stride": opts.stride,
        "padding_left": p.window.pad_left,
        "padding_right": p.window.pad_right,
        "image_offsets": opts.image_offsets,
        "image_padding_left": img_left,
        "image_padding_right": img_right,
        "images": images,
    });
    files.push(("metadata.json".to_owned(), to_bytes(&meta)));
    files.push((
        "language_instructions.json".to_owned(),
        to_bytes(&json!({ "original": ep.instructions })),
    ));
    files.extend(pictures);
    let windows = ep
        .keys
        .iter()
        .map(|key| {
            rows.iter()
                .flat_map(|&r| {
                    key.values[r * key.width..(r + 1) * key.width]
                        .iter()
                        .copied()
                })
                .collect()
        })
        .collect();
    Ok(SampleFiles { id, files, windows })
}
