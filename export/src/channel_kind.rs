//! Which channels of an episode are pictures and which are vectors.
//!
//! One rule for every export, decided by dtype and per-step shape only (the shapes the ROS
//! bridge writes for `sensor_msgs/Image`, docs in ingest-adapters/ros/README.md):
//!
//! | dtype | shape | kind |
//! |---|---|---|
//! | u8 | `[h, w, 3]` | [`ChannelKind::Color`] (RGB order as recorded) |
//! | u8 | `[h, w]` or `[h, w, 1]` | [`ChannelKind::Mono`] |
//! | u16 | `[h, w]` or `[h, w, 1]` | [`ChannelKind::Depth`], millimetres ([`DepthUnit::Millimetres`]) |
//! | f32 | `[h, w]` or `[h, w, 1]`, named `depth` or ending in `/depth` or `_depth` | [`ChannelKind::Depth`], metres ([`DepthUnit::Metres`]) |
//! | anything else | | [`ChannelKind::LowDim`] |
//!
//! A picture needs both sides at least [`MIN_IMAGE_SIDE`] pixels, so a small matrix (a 3x3
//! rotation, a 4x4 pose) stays a vector.

use wshard::episode::DType;

/// The smallest height and width a picture channel has.
pub const MIN_IMAGE_SIDE: u64 = 8;

/// The unit a depth channel is recorded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthUnit {
    /// u16 millimetres (ROS `16UC1` / `mono16` depth).
    Millimetres,
    /// f32 metres (ROS `32FC1`).
    Metres,
}

/// What a channel is, for an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelKind {
    /// A colour picture, u8 `[height, width, 3]`.
    Color { height: u64, width: u64 },
    /// A one-channel 8-bit picture, u8 `[height, width]` (or `[.., 1]`).
    Mono { height: u64, width: u64 },
    /// A depth picture.
    Depth {
        height: u64,
        width: u64,
        unit: DepthUnit,
    },
    /// A vector (or a small matrix, flattened by the exports that need a vector).
    LowDim,
}

impl ChannelKind {
    /// The kind of channel `name` with `dtype` and per-step `shape`.
    #[must_use]
    pub fn of(name: &str, dtype: DType, shape: &[u64]) -> Self {
        let Some((height, width)) = picture_sides(shape) else {
            return Self::LowDim;
        };
        let channels = shape.get(2).copied().unwrap_or(1);
        match (dtype, channels) {
            (DType::U8, 3) => Self::Color { height, width },
            (DType::U8, 1) => Self::Mono { height, width },
            (DType::U16, 1) => Self::Depth {
                height,
                width,
                unit: DepthUnit::Millimetres,
            },
            (DType::F32, 1) if is_depth_name(name) => Self::Depth {
                height,
                width,
                unit: DepthUnit::Metres,
            },
            _ => Self::LowDim,
        }
    }

    /// Whether this is a picture of any kind.
    #[must_use]
    pub fn is_picture(self) -> bool {
        !matches!(self, Self::LowDim)
    }
}

/// `(height, width)` of a `[h, w]` or `[h, w, c]` shape with both sides large enough.
fn picture_sides(shape: &[u64]) -> Option<(u64, u64)> {
    match shape {
        [h, w] | [h, w, _] if *h >= MIN_IMAGE_SIDE && *w >= MIN_IMAGE_SIDE => Some((*h, *w)),
        _ => None,
    }
}

/// Whether a channel name says it is depth: `depth`, `.../depth`, `..._depth`.
fn is_depth_name(name: &str) -> bool {
    name == "depth" || name.ends_with("/depth") || name.ends_with("_depth")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_and_vectors() {
        assert_eq!(
            ChannelKind::of("image", DType::U8, &[480, 640, 3]),
            ChannelKind::Color {
                height: 480,
                width: 640
            }
        );
        assert_eq!(
            ChannelKind::of("image", DType::U8, &[480, 640]),
            ChannelKind::Mono {
                height: 480,
                width: 640
            }
        );
        assert_eq!(
            ChannelKind::of("image", DType::U16, &[480, 640, 1]),
            ChannelKind::Depth {
                height: 480,
                width: 640,
                unit: DepthUnit::Millimetres
            }
        );
        assert_eq!(
            ChannelKind::of("wrist_depth", DType::F32, &[48, 64]),
            ChannelKind::Depth {
                height: 48,
                width: 64,
                unit: DepthUnit::Metres
            }
        );
        // An f32 picture not named depth, a rotation matrix, a vector, 4 channels.
        assert_eq!(
            ChannelKind::of("heat", DType::F32, &[48, 64]),
            ChannelKind::LowDim
        );
        assert_eq!(
            ChannelKind::of("rot", DType::F64, &[3, 3]),
            ChannelKind::LowDim
        );
        assert_eq!(
            ChannelKind::of("rot", DType::U8, &[3, 3]),
            ChannelKind::LowDim
        );
        assert_eq!(ChannelKind::of("q", DType::F32, &[7]), ChannelKind::LowDim);
        assert_eq!(
            ChannelKind::of("rgba", DType::U8, &[48, 64, 4]),
            ChannelKind::LowDim
        );
        assert!(!ChannelKind::LowDim.is_picture());
    }
}
