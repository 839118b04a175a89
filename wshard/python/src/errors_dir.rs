//! The exception class, file, stream and field of the episode-directory and aligned-view
//! errors of the `wshard` crate.

use wshard::align::AlignError;
use wshard::episode_dir::annotations::AnnotationsError;
use wshard::episode_dir::events::EventsError;
use wshard::episode_dir::index::IndexError;
use wshard::episode_dir::{EpisodeDirError, StreamDataError};

use crate::errors::{io_kind, Kind, ReadError};

fn invalid(e: &dyn std::fmt::Display) -> ReadError {
    ReadError::new(Kind::Invalid, e.to_string())
}

fn index(e: &IndexError) -> ReadError {
    match e {
        IndexError::Json { file, .. } => invalid(e).at(file),
        IndexError::Field { file, field, .. } => invalid(e).at(file).field(field.clone()),
        _ => invalid(e),
    }
}

fn events(e: &EventsError) -> ReadError {
    match e {
        EventsError::Json { file, line, .. } => invalid(e).at(file).field(format!("line {line}")),
        EventsError::Field {
            file, line, field, ..
        } => invalid(e).at(file).field(format!("line {line}: {field}")),
        _ => invalid(e),
    }
}

fn annotations(e: &AnnotationsError) -> ReadError {
    match e {
        AnnotationsError::Json { file, .. } => invalid(e).at(file),
        AnnotationsError::Field { file, field, .. } => invalid(e).at(file).field(field.clone()),
        _ => invalid(e),
    }
}

fn stream_data(e: &StreamDataError) -> ReadError {
    match e {
        StreamDataError::Backwards { stream, .. } => invalid(e)
            .stream(stream)
            .field(wshard::episode::names::TIMESTAMPS_NS),
        StreamDataError::Length {
            stream, channel, ..
        } => invalid(e).stream(stream).field(channel.clone()),
        _ => invalid(e),
    }
}

/// An episode-directory error.
pub(crate) fn from_dir(e: &EpisodeDirError) -> ReadError {
    match e {
        EpisodeDirError::Io(io) => ReadError::new(io_kind(&io.source), e.to_string()).at(&io.path),
        EpisodeDirError::NotAnEpisode { dir, .. } => {
            ReadError::new(Kind::NotFound, e.to_string()).at(dir)
        }
        EpisodeDirError::Index(i) => index(i),
        EpisodeDirError::Events(ev) => events(ev),
        EpisodeDirError::Annotations(a) => annotations(a),
        EpisodeDirError::BadStreamName { file, position, .. } => invalid(e)
            .at(file)
            .field(format!("streams[{position}].name")),
        EpisodeDirError::BadManifestPath { file, stream, .. } => {
            invalid(e).at(file).stream(stream).field("manifest")
        }
        EpisodeDirError::UnknownStream { stream, .. } => {
            ReadError::new(Kind::UnknownName, e.to_string()).stream(stream)
        }
        EpisodeDirError::MissingManifest { stream, path, .. } => {
            ReadError::new(Kind::NotFound, e.to_string())
                .at(path)
                .stream(stream)
        }
        EpisodeDirError::Format {
            stream,
            path,
            source,
        } => ReadError::format(source, path).stream(stream),
        EpisodeDirError::Chunk {
            stream, chunk, uri, ..
        } => invalid(e)
            .stream(stream)
            .field(format!("chunk {chunk} `{uri}`")),
        EpisodeDirError::Data(d) => stream_data(d),
        EpisodeDirError::Segment { stream, source, .. } => {
            invalid(e).stream(stream).field(source.channel.clone())
        }
        _ => invalid(e),
    }
}

/// An aligned-view error.
pub(crate) fn from_align(e: &AlignError) -> ReadError {
    let bad = || ReadError::new(Kind::BadArgument, e.to_string());
    match e {
        AlignError::Dir(d) => from_dir(d),
        AlignError::UnknownClockStream { stream, .. } => {
            ReadError::new(Kind::UnknownName, e.to_string())
                .stream(stream)
                .field("clock")
        }
        AlignError::UnknownChannel { key, .. } => {
            ReadError::new(Kind::UnknownName, e.to_string()).field(key.clone())
        }
        AlignError::AmbiguousChannel { key, .. } => bad().field(key.clone()),
        AlignError::NotNumeric { channel, .. } => bad().field(channel.clone()),
        AlignError::BadRate { .. } => bad().field("rate_hz"),
        AlignError::BadRange { .. } => bad().field("start_ns"),
        AlignError::TooManyRows { .. } => bad().field("rate_hz"),
        _ => bad(),
    }
}
