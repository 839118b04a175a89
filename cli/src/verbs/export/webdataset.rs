//! `wshard export webdataset`: the WebDataset export's arguments and run (the work is
//! `wshard_export::webdataset`; layout and decisions in docs/EXPORT.md, "WebDataset").

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use wshard::align::Policy;
use wshard_export::webdataset::{
    export, options as defaults, parse_resize, LowdimClock, Progress, WebdatasetError,
    WebdatasetOptions,
};

use wshard_publish::{BlobSender, Credentials, PublishError, Store};

use super::failure::failed;
use crate::exit_status::Status;
use crate::store::args::StoreArgs;

/// Arguments of `wshard export webdataset`.
#[derive(Debug, clap::Args)]
pub struct WebdatasetArgs {
    /// Episode directories (not one still recording), or data directories holding them
    /// (their finished episodes).
    #[arg(required = true, value_name = "EPISODE_OR_DATA_DIR")]
    pub inputs: Vec<PathBuf>,
    /// The output directory (must be empty or absent, unless --overwrite); gets
    /// .wshard-export.json, the list of the files written.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// Everything else (boxed: the subcommand enum stays small).
    #[command(flatten)]
    pub flags: Box<WebdatasetFlags>,
}

/// The options of `wshard export webdataset`.
#[derive(Debug, clap::Args)]
pub struct WebdatasetFlags {
    /// The picture channel whose frames anchor the samples [default: the first colour
    /// channel in stream order].
    #[arg(long, value_name = "STREAM/CHANNEL")]
    pub image: Option<String>,
    /// Picture offsets from the anchor frame, in raw frames of the anchor's stream.
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "-1,0"
    )]
    pub image_offsets: Vec<i64>,
    /// Low-dimensional steps before the anchor.
    #[arg(long, default_value_t = defaults::DEFAULT_PAST_STEPS)]
    pub past_lowdim_steps: usize,
    /// Low-dimensional steps after the anchor.
    #[arg(long, default_value_t = defaults::DEFAULT_FUTURE_STEPS)]
    pub future_lowdim_steps: usize,
    /// Rows of the low-dimensional clock between window steps: by default raw frames of the
    /// anchor's stream (3 frames of a 30 Hz camera: 10 Hz).
    #[arg(long, default_value_t = defaults::DEFAULT_STRIDE)]
    pub stride: usize,
    /// Most window steps clamped at an episode's start; samples needing more are dropped.
    #[arg(long, default_value_t = defaults::DEFAULT_MAX_PADDING_LEFT)]
    pub max_padding_left: usize,
    /// Most window steps clamped at an episode's end; samples needing more are dropped.
    #[arg(long, default_value_t = defaults::DEFAULT_MAX_PADDING_RIGHT)]
    pub max_padding_right: usize,
    /// Samples per tar shard.
    #[arg(long, default_value_t = defaults::DEFAULT_SAMPLES_PER_SHARD)]
    pub samples_per_shard: usize,
    /// Resize pictures to WIDTHxHEIGHT (colour and mono Lanczos, as Pillow; depth nearest),
    /// or `none` to keep their recorded size.
    #[arg(long, value_name = "WxH|none", default_value = "384x384")]
    pub resize: String,
    /// The low-dimensional clock: this stream's timestamps [default: the anchor picture's
    /// stream, so --stride counts its raw frames].
    #[arg(long, value_name = "STREAM", conflicts_with = "lowdim_hz")]
    pub lowdim_clock: Option<String>,
    /// The low-dimensional clock: a fixed rate over the episode.
    #[arg(long, value_name = "HZ")]
    pub lowdim_hz: Option<f64>,
    /// How low-dimensional values are taken at clock rows: hold, nearest or linear.
    #[arg(long, default_value = "hold")]
    pub policy: String,
    /// A NaN or infinite low-dimensional value is an error (the default; kept for scripts).
    #[arg(long, conflicts_with = "drop_non_finite")]
    pub fail_on_nan: bool,
    /// Drop (and count) the samples whose window holds a NaN or infinite low-dimensional
    /// value, instead of failing.
    #[arg(long)]
    pub drop_non_finite: bool,
    /// Drop samples whose action channels (all channels if there are none) stay within
    /// --still-threshold of the anchor's value over the window.
    #[arg(long)]
    pub filter_still_samples: bool,
    /// Largest movement of a still sample.
    #[arg(long, default_value_t = defaults::DEFAULT_STILL_THRESHOLD)]
    pub still_threshold: f64,
    /// Export at most this many episodes (the first by id).
    #[arg(long)]
    pub max_episodes: Option<usize>,
    /// Encoding threads [default: every core].
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Leave out the channels matching PATTERN (STREAM/CHANNEL, `*` any characters:
    /// '*/receive_t_ns'); repeat or comma-separate. A pattern matching no channel is refused.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Labels of the text events written to language_instructions.json.
    #[arg(long = "instruction-label", default_value = defaults::DEFAULT_INSTRUCTION_LABEL)]
    pub instruction_labels: Vec<String>,
    /// Replace an earlier export's output in the output directory (the files its
    /// .wshard-export.json lists); a directory holding any other file is refused.
    #[arg(long)]
    pub overwrite: bool,
    /// No progress output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// After the export, upload every file of the output directory to this object-store
    /// URL (s3://BUCKET/PREFIX, gs://..., az://CONTAINER/PREFIX): shards first,
    /// manifest.jsonl last. Credentials as for `wshard publish` (docs/PUBLISH.md).
    #[arg(long, value_name = "URL")]
    pub upload: Option<String>,
    /// Object-store endpoint of --upload, http(s)://host:port (else $WSHARD_S3_ENDPOINT).
    #[arg(long, value_name = "URL", requires = "upload")]
    pub endpoint: Option<String>,
    /// Region of --upload (else $WSHARD_S3_REGION; default us-east-1).
    #[arg(long, value_name = "R", requires = "upload")]
    pub region: Option<String>,
    /// Allow an http:// endpoint for --upload (else $WSHARD_S3_ALLOW_HTTP=1).
    #[arg(long, requires = "upload")]
    pub allow_http: bool,
}

/// Why the upload of an export failed.
#[derive(Debug, thiserror::Error)]
enum UploadError {
    #[error("{0}")]
    Store(#[from] PublishError),
    #[error("--upload {url:?}: {reason}")]
    BadUrl { url: String, reason: &'static str },
    #[error("list {path}: {source}")]
    List {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Upload the files of `dir` to `url`; the number of objects written.
fn upload(args: &WebdatasetArgs, url: &str, dir: &Path) -> Result<usize, UploadError> {
    let bad = |reason| UploadError::BadUrl {
        url: url.to_owned(),
        reason,
    };
    let list = |path: &Path, source| UploadError::List {
        path: path.to_path_buf(),
        source,
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("not SCHEME://BUCKET/PREFIX"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("names no bucket"));
    }
    let store_args = StoreArgs {
        endpoint: args.flags.endpoint.clone(),
        bucket: Some(format!("{scheme}://{bucket}")),
        prefix: Some(prefix.trim_matches('/').to_owned()),
        region: args.flags.region.clone(),
        allow_http: args.flags.allow_http,
        ..StoreArgs::default()
    };
    let config = store_args.config()?;
    config.validate()?;
    let key_prefix = config.key_prefix();
    let credentials = Credentials::load_for(config.provider)?;
    let store = Store::new(config, &credentials, store_args.transfer())?;
    let mut files: Vec<(String, PathBuf, u64)> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| list(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| list(dir, e))?;
        let path = entry.path();
        let size = entry.metadata().map_err(|e| list(&path, e))?.len();
        files.push((entry.file_name().to_string_lossy().into_owned(), path, size));
    }
    // Shards, then the other files, manifest.jsonl last: a reader that finds the manifest
    // finds every shard it lists.
    files.sort_by_key(|(name, _, _)| {
        (
            !name.ends_with(".tar"),
            name == "manifest.jsonl",
            name.clone(),
        )
    });
    let sender = BlobSender::new(&store);
    for (name, path, size) in &files {
        sender.put_file(&format!("{key_prefix}{name}"), path, *size)?;
    }
    Ok(files.len())
}

fn options(args: &WebdatasetArgs) -> Result<WebdatasetOptions, WebdatasetError> {
    let policy = Policy::parse(&args.flags.policy).ok_or_else(|| WebdatasetError::BadOption {
        option: "policy",
        message: format!("{:?}: hold, nearest or linear", args.flags.policy),
    })?;
    let lowdim_clock = match (&args.flags.lowdim_clock, args.flags.lowdim_hz) {
        (Some(s), _) => LowdimClock::Stream(s.clone()),
        (None, Some(hz)) => LowdimClock::Rate(hz),
        (None, None) => LowdimClock::Anchor,
    };
    Ok(WebdatasetOptions {
        image: args.flags.image.clone(),
        image_offsets: args.flags.image_offsets.clone(),
        past_steps: args.flags.past_lowdim_steps,
        future_steps: args.flags.future_lowdim_steps,
        stride: args.flags.stride,
        max_padding_left: args.flags.max_padding_left,
        max_padding_right: args.flags.max_padding_right,
        samples_per_shard: args.flags.samples_per_shard,
        resize: parse_resize(&args.flags.resize)?,
        lowdim_clock,
        policy,
        fail_on_nan: !args.flags.drop_non_finite,
        filter_still_samples: args.flags.filter_still_samples,
        still_threshold: args.flags.still_threshold,
        max_episodes: args.flags.max_episodes,
        workers: args.flags.workers,
        overwrite: args.flags.overwrite,
        instruction_labels: args.flags.instruction_labels.clone(),
        exclude: args.flags.exclude.clone(),
    })
}

/// Progress: a bar on a terminal, plain lines per episode otherwise, nothing with --quiet.
struct Reporter<'w, W: Write> {
    err: &'w mut W,
    quiet: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl<W: Write> Reporter<'_, W> {
    fn report(&mut self, p: Progress<'_>) {
        if self.quiet {
            return;
        }
        match p {
            Progress::LeftOut { path, reason } => {
                let line = format!("left out {}: {reason}", path.display());
                match &self.bar {
                    Some(bar) => bar.println(line),
                    None => {
                        let _ = writeln!(self.err, "{line}");
                    }
                }
            }
            Progress::Episodes { count } => {
                if std::io::stderr().is_terminal() {
                    let bar = indicatif::ProgressBar::new(0);
                    if let Ok(style) = indicatif::ProgressStyle::with_template(
                        "{msg} [{bar:30}] {pos}/{len} samples {per_sec} eta {eta}",
                    ) {
                        bar.set_style(style.progress_chars("=> "));
                    }
                    bar.set_message(format!("{count} episodes"));
                    self.bar = Some(bar);
                }
            }
            Progress::EpisodeStarted {
                index,
                episode,
                samples,
            } => {
                if let Some(bar) = &self.bar {
                    bar.inc_length(samples as u64);
                    bar.set_message(format!("episode {} {episode}", index + 1));
                }
            }
            Progress::SamplesWritten { count } => {
                if let Some(bar) = &self.bar {
                    bar.inc(count as u64);
                }
            }
            Progress::EpisodeDone {
                index,
                episode,
                counts,
            } => {
                let line = format!(
                    "episode {} {episode}: {} samples of {} anchor frames (dropped: {} padding, {} before the low-dimensional clock, {} non-finite, {} still)",
                    index + 1,
                    counts.samples,
                    counts.anchors,
                    counts.dropped_padding,
                    counts.dropped_before_lowdim,
                    counts.dropped_non_finite,
                    counts.dropped_still
                );
                match &self.bar {
                    Some(bar) => bar.println(line),
                    None => {
                        let _ = writeln!(self.err, "{line}");
                    }
                }
            }
        }
    }
}

/// Run the export; the exit code: 0 done, 1 an episode could not be read or holds bad
/// values, 2 usage or I/O error (inputs naming nothing to export, the output directory).
pub fn run(args: &WebdatasetArgs, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let result = options(args).and_then(|opts| {
        let mut reporter = Reporter {
            err: &mut *err,
            quiet: args.flags.quiet,
            bar: None,
        };
        let r = export(&args.inputs, &args.output, &opts, &mut |p| {
            reporter.report(p)
        });
        if let Some(bar) = reporter.bar.take() {
            bar.finish_and_clear();
        }
        r
    });
    match result {
        Ok(summary) => {
            let _ = writeln!(
                out,
                "wrote {} samples from {} episodes in {} shards to {}",
                summary.samples,
                summary.episodes.len(),
                summary.shards.len(),
                args.output.display()
            );
            let Some(url) = &args.flags.upload else {
                return Status::Ok.code();
            };
            match upload(args, url, &args.output) {
                Ok(n) => {
                    let _ = writeln!(out, "uploaded {n} files to {url}");
                    Status::Ok.code()
                }
                Err(e) => {
                    let _ = writeln!(
                        err,
                        "wshard export webdataset: upload to {url}: {e} (the export is complete in {})",
                        args.output.display()
                    );
                    Status::Error.code()
                }
            }
        }
        Err(e) => failed(err, "webdataset", &e, e.is_bad_input()),
    }
}
