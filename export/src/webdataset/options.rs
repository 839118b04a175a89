//! What a WebDataset export is asked for, with the defaults of the documented layout
//! (docs/EXPORT.md, "WebDataset"): those of `rd shardify`, the exporter the layout comes
//! from (window steps `stride` raw frames of the anchor's stream apart, pictures resized to
//! 384x384 with Lanczos, a non-finite value fails the export).

use wshard::align::Policy;

use super::error::WebdatasetError;

/// Default steps before the anchor in the low-dimensional window.
pub const DEFAULT_PAST_STEPS: usize = 1;
/// Default steps after the anchor in the low-dimensional window.
pub const DEFAULT_FUTURE_STEPS: usize = 19;
/// Default spacing of window steps, in rows of the low-dimensional clock (by default the
/// anchor stream's frames: 3 frames of a 30 Hz camera, 10 Hz).
pub const DEFAULT_STRIDE: usize = 3;
/// Default most window steps clamped at the episode's start.
pub const DEFAULT_MAX_PADDING_LEFT: usize = 3;
/// Default most window steps clamped at the episode's end.
pub const DEFAULT_MAX_PADDING_RIGHT: usize = 15;
/// Default samples per tar shard.
pub const DEFAULT_SAMPLES_PER_SHARD: usize = 100;
/// Default image offsets from the anchor frame, in raw frames of the image stream.
pub const DEFAULT_IMAGE_OFFSETS: [i64; 2] = [-1, 0];
/// Default largest movement (any element of an action channel, from the anchor's value)
/// for a sample to count as still.
pub const DEFAULT_STILL_THRESHOLD: f64 = 0.05;
/// Default label of the text events that are language instructions.
pub const DEFAULT_INSTRUCTION_LABEL: &str = "instruction";
/// JPEG quality of colour and mono pictures.
pub const JPEG_QUALITY: u8 = 95;
/// Largest side a `--resize` may ask for.
pub const MAX_RESIZE_SIDE: u32 = 16_384;
/// Default picture size `(width, height)`.
pub const DEFAULT_RESIZE: (u32, u32) = (384, 384);
/// The `--resize` value that keeps pictures at their recorded size.
pub const NO_RESIZE: &str = "none";

/// The clock the low-dimensional channels are aligned on.
#[derive(Clone, Debug, PartialEq)]
pub enum LowdimClock {
    /// The frames of the anchor picture's stream: window steps count raw frames.
    Anchor,
    /// The timestamps of this stream.
    Stream(String),
    /// A fixed rate over the episode's span.
    Rate(f64),
}

/// Options of [`super::export`].
#[derive(Clone, Debug, PartialEq)]
pub struct WebdatasetOptions {
    /// `STREAM/CHANNEL` of the picture channel whose frames anchor the samples; `None`: the
    /// first colour channel in stream order (else the first picture of any kind).
    pub image: Option<String>,
    /// Offsets of the pictures stored per sample, in raw frames of the anchor stream.
    pub image_offsets: Vec<i64>,
    pub past_steps: usize,
    pub future_steps: usize,
    /// Rows of the low-dimensional clock between window steps (>= 1).
    pub stride: usize,
    pub max_padding_left: usize,
    pub max_padding_right: usize,
    pub samples_per_shard: usize,
    /// Resize colour and mono pictures (Lanczos, as Pillow) and depth (nearest) to
    /// `(width, height)`; `None` keeps the recorded size.
    pub resize: Option<(u32, u32)>,
    pub lowdim_clock: LowdimClock,
    /// How low-dimensional values are taken at clock times (hold is causal).
    pub policy: Policy,
    /// A non-finite low-dimensional value in a sample's window is an error (else the sample
    /// is dropped and counted).
    pub fail_on_nan: bool,
    /// Drop samples whose action channels do not move more than `still_threshold`.
    pub filter_still_samples: bool,
    pub still_threshold: f64,
    /// Export at most this many episodes (the first ones by id).
    pub max_episodes: Option<usize>,
    /// Encoding threads; 0: every available core.
    pub workers: usize,
    /// Replace a non-empty output directory.
    pub overwrite: bool,
    /// Labels of the text events that are language instructions.
    pub instruction_labels: Vec<String>,
    /// Channels left out of every sample (`crate::channel_filter` patterns over
    /// `STREAM/CHANNEL`).
    pub exclude: Vec<String>,
}

impl Default for WebdatasetOptions {
    fn default() -> Self {
        Self {
            image: None,
            image_offsets: DEFAULT_IMAGE_OFFSETS.to_vec(),
            past_steps: DEFAULT_PAST_STEPS,
            future_steps: DEFAULT_FUTURE_STEPS,
            stride: DEFAULT_STRIDE,
            max_padding_left: DEFAULT_MAX_PADDING_LEFT,
            max_padding_right: DEFAULT_MAX_PADDING_RIGHT,
            samples_per_shard: DEFAULT_SAMPLES_PER_SHARD,
            resize: Some(DEFAULT_RESIZE),
            lowdim_clock: LowdimClock::Anchor,
            policy: Policy::Hold,
            fail_on_nan: true,
            filter_still_samples: false,
            still_threshold: DEFAULT_STILL_THRESHOLD,
            max_episodes: None,
            workers: 0,
            overwrite: false,
            instruction_labels: vec![DEFAULT_INSTRUCTION_LABEL.to_owned()],
            exclude: Vec::new(),
        }
    }
}

fn bad(option: &'static str, message: impl Into<String>) -> WebdatasetError {
    WebdatasetError::BadOption {
        option,
        message: message.into(),
    }
}

impl WebdatasetOptions {
    /// Window length `past + 1 + future`.
    #[must_use]
    pub fn window_len(&self) -> usize {
        self.past_steps + 1 + self.future_steps
    }

    /// Check the options that do not depend on an episode.
    ///
    /// # Errors
    /// [`WebdatasetError::BadOption`] naming the option.
    pub fn validate(&self) -> Result<(), WebdatasetError> {
        if self.stride == 0 {
            return Err(bad("stride", "must be at least 1"));
        }
        if self.samples_per_shard == 0 {
            return Err(bad("samples-per-shard", "must be at least 1"));
        }
        if self.image_offsets.is_empty() {
            return Err(bad("image-offsets", "needs at least one offset"));
        }
        let mut seen = self.image_offsets.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != self.image_offsets.len() {
            return Err(bad("image-offsets", "an offset is given twice"));
        }
        if let Some(spec) = &self.image {
            if spec
                .split_once('/')
                .map_or(true, |(s, c)| s.is_empty() || c.is_empty())
            {
                return Err(bad("image", format!("{spec:?} is not STREAM/CHANNEL")));
            }
        }
        if let Some((w, h)) = self.resize {
            if w == 0 || h == 0 || w > MAX_RESIZE_SIDE || h > MAX_RESIZE_SIDE {
                return Err(bad(
                    "resize",
                    format!("{w}x{h}: each side must be 1..={MAX_RESIZE_SIDE}"),
                ));
            }
        }
        if let LowdimClock::Rate(hz) = self.lowdim_clock {
            if !(hz.is_finite() && hz > 0.0) {
                return Err(bad("lowdim-hz", format!("{hz} must be finite and > 0")));
            }
        }
        if !(self.still_threshold.is_finite() && self.still_threshold >= 0.0) {
            return Err(bad(
                "still-threshold",
                format!("{} must be finite and >= 0", self.still_threshold),
            ));
        }
        if self.max_episodes == Some(0) {
            return Err(bad("max-episodes", "must be at least 1"));
        }
        Ok(())
    }
}

/// Parse `WxH`, or [`NO_RESIZE`] (as `--resize` takes them).
///
/// # Errors
/// [`WebdatasetError::BadOption`] for anything else.
pub fn parse_resize(s: &str) -> Result<Option<(u32, u32)>, WebdatasetError> {
    if s.trim() == NO_RESIZE {
        return Ok(None);
    }
    let parsed = s
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
    parsed.map(Some).ok_or_else(|| {
        bad(
            "resize",
            format!("{s:?} is not WIDTHxHEIGHT or {NO_RESIZE}"),
        )
    })
}
