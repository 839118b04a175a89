//! The verbs of `wshard`: one module per top-level command, named for it, holding the
//! command's arguments (whose doc comment is its help: a one-line summary, then the
//! details `wshard CMD --help` shows) and its run; [`Command`] lists them for `main.rs`
//! and runs the one parsed.
//!
//! Each may call the rooms below it ([`crate::control_socket`], [`crate::store`],
//! [`crate::shard_view`], [`crate::output`], [`crate::python`], [`crate::exit_status`]) and
//! the workspace's libraries; no verb imports another, and none imports this module.

pub mod abort;
pub mod annotate;
pub mod bridge;
pub mod cache;
pub mod cat;
pub mod close;
pub mod dataset;
pub mod doctor;
pub mod episodes;
pub mod export;
pub mod import;
pub mod inspect;
pub mod keep;
pub mod metrics;
pub mod publish;
pub mod query;
pub mod recover;
pub mod split;
pub mod status;
pub mod stop;
pub mod trigger;
pub mod upload;
pub mod verify;

use std::io::Write;

/// The top-level commands, in the order `wshard --help` lists them. Each one's help is the
/// doc comment of its arguments, in its module.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Status(status::StatusArgs),
    Episodes(episodes::EpisodesArgs),
    Close(close::CloseArgs),
    Stop(stop::StopArgs),
    Abort(abort::AbortArgs),
    Keep(keep::KeepArgs),
    Split(split::SplitArgs),
    Trigger(trigger::TriggerArgs),
    Upload(upload::UploadArgs),
    Metrics(metrics::MetricsArgs),
    Annotate(annotate::AnnotateArgs),
    Bridge(bridge::BridgeArgs),
    Export(export::ExportArgs),
    Import(import::ImportArgs),
    Publish(publish::PublishArgs),
    Query(query::QueryArgs),
    Cache(cache::CacheArgs),
    Dataset(dataset::DatasetArgs),
    Doctor(doctor::DoctorArgs),
    Inspect(inspect::InspectArgs),
    Verify(verify::VerifyArgs),
    Recover(recover::RecoverArgs),
    Cat(cat::CatArgs),
}

impl Command {
    /// Run the command: its output to `out`, its failures to `err`; returns the process's
    /// exit code. `stdout_is_terminal` keeps `cat`'s binary formats off a terminal.
    pub fn run(
        self,
        stdout_is_terminal: bool,
        mut out: &mut dyn Write,
        mut err: &mut dyn Write,
    ) -> u8 {
        match self {
            Self::Status(args) => status::run(args, out, err),
            Self::Episodes(args) => episodes::run(args, out, err),
            Self::Close(args) => close::run(args, out, err),
            Self::Stop(args) => stop::run(args, out, err),
            Self::Abort(args) => abort::run(args, out, err),
            Self::Keep(args) => keep::run(args, out, err),
            Self::Split(args) => split::run(args, out, err),
            Self::Trigger(args) => trigger::run(args, out, err),
            Self::Upload(args) => upload::run(args, out, err),
            Self::Metrics(args) => metrics::run(args, out, err),
            Self::Annotate(args) => annotate::run(args, out, err),
            Self::Bridge(args) => bridge::run(&args.verb, &args.options, out, err),
            Self::Export(args) => export::run(&args.verb, &mut out, &mut err),
            // The bag importer writes to the terminal itself (its progress bar).
            Self::Import(args) => import::run(&args.args, out, err),
            Self::Publish(args) => publish::run(&args, out, err),
            Self::Query(args) => query::run(&args, out, err),
            Self::Cache(args) => cache::run(&args.verb, out, err).code(),
            Self::Dataset(args) => dataset::run(&args.verb, out, err),
            Self::Doctor(args) => doctor::run(&args, out),
            Self::Inspect(args) => inspect::run(args, out, err).code(),
            Self::Verify(args) => verify::run(
                &args.paths,
                verify::VerifyOptions {
                    json: args.json,
                    deep: args.deep,
                },
                out,
                err,
            )
            .code(),
            Self::Recover(args) => recover::run(
                &args.dir,
                recover::RecoverOptions {
                    apply: args.apply,
                    json: args.json,
                },
                out,
                err,
            )
            .code(),
            Self::Cat(args) => cat::run(args, stdout_is_terminal, out, err).code(),
        }
    }
}
