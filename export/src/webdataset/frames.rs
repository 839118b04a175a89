//! Encoded pictures of a batch of samples: each `(picture channel, frame)` a batch needs is
//! encoded once (a frame is shared by neighbouring samples: with offsets `-1,0` every frame
//! is in two samples), in parallel, then copied into the samples that hold it.

use std::collections::{BTreeSet, HashMap};

use rayon::prelude::*;

use super::episode::LoadedEpisode;
use super::error::WebdatasetError;
use super::image::{encode_picture, Encoded};
use super::options::WebdatasetOptions;
use super::plan::Planned;
use super::window::image_frames;

/// `(index into LoadedEpisode::pictures, frame of that picture's stream)`.
pub type FrameKey = (usize, usize);

/// The encoded pictures of a batch.
#[derive(Debug, Default)]
pub struct EncodedFrames {
    map: HashMap<FrameKey, Encoded>,
}

impl EncodedFrames {
    #[must_use]
    pub fn get(&self, key: FrameKey) -> Option<&Encoded> {
        self.map.get(&key)
    }
}

/// The frames of every picture channel that `p` holds, per picture: `(frame, offset)`.
#[must_use]
pub fn sample_frames(ep: &LoadedEpisode, p: &Planned, opts: &WebdatasetOptions) -> Vec<Vec<usize>> {
    let (frames, _, _) = image_frames(p.frame, ep.anchor_t_ns.len(), &opts.image_offsets);
    ep.pictures
        .iter()
        .map(|pic| {
            frames
                .iter()
                .map(|&f| pic.frame_of_anchor.get(f).copied().unwrap_or(0))
                .collect()
        })
        .collect()
}

fn encode_one(
    ep: &LoadedEpisode,
    (pi, frame): FrameKey,
    opts: &WebdatasetOptions,
) -> Result<Encoded, WebdatasetError> {
    let pic = &ep.pictures[pi];
    let bytes = ep.picture_streams[pic.stream]
        .channel(&pic.channel)
        .and_then(|c| c.step(frame as u64))
        .unwrap_or(&[]);
    encode_picture(pic.kind, bytes, opts.resize).map_err(|e| WebdatasetError::Encode {
        episode: ep.id.clone(),
        channel: pic.key.clone(),
        frame,
        what: e.what,
        message: e.message,
    })
}

/// Encode every picture frame the samples of `batch` hold, in parallel (call inside the
/// export's thread pool).
///
/// # Errors
/// [`WebdatasetError::Encode`] for the first frame (in key order) the encoder refuses.
pub fn encode_batch(
    ep: &LoadedEpisode,
    batch: &[Planned],
    opts: &WebdatasetOptions,
) -> Result<EncodedFrames, WebdatasetError> {
    let mut keys = BTreeSet::new();
    for p in batch {
        for (pi, frames) in sample_frames(ep, p, opts).into_iter().enumerate() {
            keys.extend(frames.into_iter().map(|f| (pi, f)));
        }
    }
    let keys: Vec<FrameKey> = keys.into_iter().collect();
    let encoded: Vec<Result<Encoded, WebdatasetError>> =
        keys.par_iter().map(|&k| encode_one(ep, k, opts)).collect();
    let mut map = HashMap::with_capacity(keys.len());
    for (k, e) in keys.into_iter().zip(encoded) {
        map.insert(k, e?);
    }
    Ok(EncodedFrames { map })
}
