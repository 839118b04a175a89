//! Videos: raw RGB frames piped into ffmpeg (`-f rawvideo -pix_fmt rgb24` on stdin), encoded
//! as LeRobot does (GOP 2, CRF 30, yuv420p; libsvtav1 preset 12 for AV1), one MP4 per video
//! key and file holding many episodes back to back.

use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread::JoinHandle;

use super::error::LerobotError;
use super::options::VideoCodec;

/// GOP size (frames between key frames), as LeRobot's encoder.
const GOP: &str = "2";
/// Constant rate factor, as LeRobot's encoder.
const CRF: &str = "30";
/// libsvtav1 preset, as LeRobot's encoder.
const SVTAV1_PRESET: &str = "12";
/// The smallest picture side Debian 12's SVT-AV1 accepts.
const SVTAV1_MIN_SIDE: u64 = 64;
/// Bytes per RGB pixel.
pub const RGB_BYTES: usize = 3;
/// Most bytes of ffmpeg's stderr quoted in an error.
const STDERR_QUOTE: usize = 2000;

fn spawn_error(program: &Path, e: std::io::Error) -> LerobotError {
    if e.kind() == ErrorKind::NotFound {
        LerobotError::FfmpegMissing {
            program: program.to_path_buf(),
        }
    } else {
        LerobotError::io("run", program, e)
    }
}

/// Check that `ffmpeg` runs (`ffmpeg -version`).
///
/// # Errors
/// [`LerobotError::FfmpegMissing`], [`LerobotError::Ffmpeg`] when it fails.
pub fn probe(ffmpeg: &Path) -> Result<(), LerobotError> {
    let out = Command::new(ffmpeg)
        .args(["-hide_banner", "-version"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(ffmpeg, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LerobotError::Ffmpeg {
            file: ffmpeg.to_path_buf(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// The pixel format of `codec` for `width x height` pictures: yuv420p, or yuv444p for odd
/// sides with H.264 (4:2:0 needs even sides).
///
/// # Errors
/// [`LerobotError::BadPictureSize`] for sizes the codec cannot take.
pub fn pix_fmt(
    key: &str,
    codec: VideoCodec,
    width: u64,
    height: u64,
) -> Result<&'static str, LerobotError> {
    let even = width % 2 == 0 && height % 2 == 0;
    let bad = |reason| LerobotError::BadPictureSize {
        key: key.to_owned(),
        width,
        height,
        reason,
    };
    match codec {
        VideoCodec::H264 if even => Ok("yuv420p"),
        VideoCodec::H264 => Ok("yuv444p"),
        VideoCodec::Av1 if width < SVTAV1_MIN_SIDE || height < SVTAV1_MIN_SIDE => Err(bad(
            "libsvtav1 needs both sides at least 64 pixels (use --vcodec h264)",
        )),
        VideoCodec::Av1 if !even => Err(bad("libsvtav1 needs even sides (use --vcodec h264)")),
        VideoCodec::Av1 => Ok("yuv420p"),
    }
}

/// One ffmpeg process writing one MP4.
#[derive(Debug)]
pub struct VideoEncoder {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    file: PathBuf,
    frame_bytes: usize,
    frames: u64,
}

impl VideoEncoder {
    /// Start ffmpeg writing `file` from `width x height` RGB frames at `fps`.
    ///
    /// # Errors
    /// [`LerobotError::FfmpegMissing`], [`LerobotError::Io`].
    pub fn start(
        ffmpeg: &Path,
        codec: VideoCodec,
        pix_fmt: &str,
        (width, height): (u64, u64),
        fps: u32,
        file: &Path,
    ) -> Result<Self, LerobotError> {
        let size = format!("{width}x{height}");
        let rate = fps.to_string();
        let mut cmd = Command::new(ffmpeg);
        cmd.args(["-hide_banner", "-loglevel", "error", "-y"])
            .args([
                "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", &size, "-r", &rate,
            ])
            .args(["-i", "pipe:0", "-an", "-map_metadata", "-1"])
            .args([
                "-c:v",
                codec.encoder(),
                "-pix_fmt",
                pix_fmt,
                "-g",
                GOP,
                "-crf",
                CRF,
            ]);
        if codec == VideoCodec::Av1 {
            cmd.args(["-preset", SVTAV1_PRESET]);
        }
        cmd.args(["-fflags", "+bitexact", "-flags:v", "+bitexact"])
            .args(["-f", "mp4"])
            .arg(file)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| spawn_error(ffmpeg, e))?;
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().map(|mut err| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = err.read_to_end(&mut buf);
                buf
            })
        });
        let frame_bytes = usize::try_from(width.saturating_mul(height))
            .unwrap_or(usize::MAX)
            .saturating_mul(RGB_BYTES);
        Ok(Self {
            child,
            stdin,
            stderr,
            file: file.to_path_buf(),
            frame_bytes,
            frames: 0,
        })
    }

    /// The MP4 being written.
    #[must_use]
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Frames written so far.
    #[must_use]
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes of one RGB frame.
    #[must_use]
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// Write one RGB frame.
    ///
    /// # Errors
    /// [`LerobotError::Ffmpeg`] when ffmpeg stopped taking frames (with its message).
    pub fn push(&mut self, rgb: &[u8]) -> Result<(), LerobotError> {
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(rgb),
            None => Err(std::io::Error::from(ErrorKind::BrokenPipe)),
        };
        match written {
            Ok(()) => {
                self.frames += 1;
                Ok(())
            }
            Err(e) => {
                self.stdin = None;
                let failed = self.wait()?;
                Err(failed.unwrap_or_else(|| {
                    LerobotError::io("write frames to ffmpeg for", self.file.clone(), e)
                }))
            }
        }
    }

    /// Close ffmpeg's stdin and wait; `Some(error)` when it failed.
    fn wait(&mut self) -> Result<Option<LerobotError>, LerobotError> {
        self.stdin = None;
        let status = self
            .child
            .wait()
            .map_err(|e| LerobotError::io("wait for ffmpeg writing", self.file.clone(), e))?;
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        if status.success() {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&stderr);
        let start = text.len().saturating_sub(STDERR_QUOTE);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        Ok(Some(LerobotError::Ffmpeg {
            file: self.file.clone(),
            status: status.to_string(),
            stderr: text[start..].trim().to_owned(),
        }))
    }

    /// Finish the file; the number of frames in it.
    ///
    /// # Errors
    /// [`LerobotError::Ffmpeg`] when ffmpeg failed.
    pub fn finish(mut self) -> Result<u64, LerobotError> {
        match self.wait()? {
            None => Ok(self.frames),
            Some(e) => Err(e),
        }
    }
}

impl Drop for VideoEncoder {
    fn drop(&mut self) {
        // An export that failed elsewhere: stop ffmpeg rather than leave it waiting.
        if self.stderr.is_some() {
            self.stdin = None;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
