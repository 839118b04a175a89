//! The files frames go to: the data Parquet files and one MP4 per video key, each a
//! sequence of `chunk-C/file-F` files holding many episodes, the next file begun (at an
//! episode boundary) once one holds LeRobot's default size (100 MB data, 200 MB video).

use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;

use super::error::LerobotError;
use super::meta::{data_file, next_file, video_file, BYTES_PER_MB};
use super::options::VideoCodec;
use super::output::create_dir;
use super::tables::{DataFile, DataRows, VideoSpan};
use super::video::VideoEncoder;

fn create_parent(root: &Path, rel: &str) -> Result<PathBuf, LerobotError> {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        create_dir(parent)?;
    }
    Ok(path)
}

/// The data files.
pub struct DataSink {
    root: PathBuf,
    schema: SchemaRef,
    chunk: u64,
    file: u64,
    current: Option<DataFile>,
    limit_bytes: u64,
}

impl DataSink {
    /// Data files under `root`, each closed once it holds `limit_mb` MB.
    #[must_use]
    pub fn new(root: &Path, schema: SchemaRef, limit_mb: u64) -> Self {
        Self {
            root: root.to_path_buf(),
            schema,
            chunk: 0,
            file: 0,
            current: None,
            limit_bytes: limit_mb.saturating_mul(BYTES_PER_MB),
        }
    }

    /// Write one episode's rows; the `(chunk, file)` they are in.
    ///
    /// # Errors
    /// I/O, Arrow and Parquet errors.
    pub fn write(&mut self, rows: &DataRows<'_>) -> Result<(u64, u64), LerobotError> {
        let at = (self.chunk, self.file);
        let current = match self.current.as_mut() {
            Some(c) => c,
            None => {
                let path = create_parent(&self.root, &data_file(self.chunk, self.file))?;
                self.current
                    .insert(DataFile::create(&path, self.schema.clone())?)
            }
        };
        current.write(rows)?;
        if current.bytes_written() as u64 >= self.limit_bytes {
            self.roll()?;
        }
        Ok(at)
    }

    fn roll(&mut self) -> Result<(), LerobotError> {
        if let Some(c) = self.current.take() {
            c.close()?;
            (self.chunk, self.file) = next_file(self.chunk, self.file);
        }
        Ok(())
    }

    /// Close the last file.
    ///
    /// # Errors
    /// Parquet errors.
    pub fn finish(mut self) -> Result<(), LerobotError> {
        self.roll()
    }
}

/// How a video key is encoded.
#[derive(Clone, Debug)]
pub struct VideoSettings {
    pub key: String,
    pub ffmpeg: PathBuf,
    pub codec: VideoCodec,
    pub pix_fmt: &'static str,
    pub width: u64,
    pub height: u64,
    pub fps: u32,
    /// A file is closed once it holds this many MB.
    pub limit_mb: u64,
}

/// The MP4 files of one video key.
pub struct VideoSink {
    root: PathBuf,
    settings: VideoSettings,
    chunk: u64,
    file: u64,
    current: Option<VideoEncoder>,
    /// The episode being written: where it starts.
    episode_start: Option<(u64, u64, u64)>,
}

impl VideoSink {
    #[must_use]
    pub fn new(root: &Path, settings: VideoSettings) -> Self {
        Self {
            root: root.to_path_buf(),
            settings,
            chunk: 0,
            file: 0,
            current: None,
            episode_start: None,
        }
    }

    /// Begin an episode (starting ffmpeg for a new file when needed).
    ///
    /// # Errors
    /// [`LerobotError::FfmpegMissing`], I/O errors.
    pub fn begin_episode(&mut self) -> Result<(), LerobotError> {
        let encoder = match self.current.as_mut() {
            Some(e) => e,
            None => {
                let s = &self.settings;
                let path = create_parent(&self.root, &video_file(&s.key, self.chunk, self.file))?;
                self.current.insert(VideoEncoder::start(
                    &s.ffmpeg,
                    s.codec,
                    s.pix_fmt,
                    (s.width, s.height),
                    s.fps,
                    &path,
                )?)
            }
        };
        self.episode_start = Some((self.chunk, self.file, encoder.frames()));
        Ok(())
    }

    /// Write one RGB frame of the episode.
    ///
    /// # Errors
    /// [`LerobotError::Ffmpeg`].
    pub fn push(&mut self, rgb: &[u8]) -> Result<(), LerobotError> {
        match self.current.as_mut() {
            Some(e) => e.push(rgb),
            None => Ok(()),
        }
    }

    /// End the episode: where its frames are in the file; the next file is begun when this
    /// one has reached the size limit.
    ///
    /// # Errors
    /// [`LerobotError::Ffmpeg`], I/O errors.
    pub fn end_episode(&mut self) -> Result<VideoSpan, LerobotError> {
        let (chunk, file, start) = self.episode_start.take().unwrap_or_default();
        let (end, path) = self.current.as_ref().map_or((start, None), |e| {
            (e.frames(), Some(e.file().to_path_buf()))
        });
        let fps = f64::from(self.settings.fps);
        #[allow(clippy::cast_precision_loss)]
        let span = VideoSpan {
            chunk_index: i64::try_from(chunk).unwrap_or(i64::MAX),
            file_index: i64::try_from(file).unwrap_or(i64::MAX),
            from_timestamp: start as f64 / fps,
            to_timestamp: end as f64 / fps,
        };
        let size = path
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        if size >= self.settings.limit_mb.saturating_mul(BYTES_PER_MB) {
            self.roll()?;
        }
        Ok(span)
    }

    fn roll(&mut self) -> Result<(), LerobotError> {
        if let Some(e) = self.current.take() {
            e.finish()?;
            (self.chunk, self.file) = next_file(self.chunk, self.file);
        }
        Ok(())
    }

    /// Finish the last file.
    ///
    /// # Errors
    /// [`LerobotError::Ffmpeg`].
    pub fn finish(mut self) -> Result<(), LerobotError> {
        self.roll()
    }
}
