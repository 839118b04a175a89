//! Split episodes (`wshard split`, `[rolling]`): reading their parts back and checking them
//! against what the producer sent ([`crate::data`]'s generator), following the manifests'
//! `split` links; and running the CLI against a daemon's control socket.

use std::path::Path;

use wshard::manifest::{read_episode_chunked, Manifest};
use wshard_client::ChannelSpec;

use crate::check::{manifest_path, read_manifest};
use crate::data;

pub use crate::control_cli::{control_socket, wshard};

/// The id of part `n` of episode `ep` (`ep`, `ep.0001`, ...).
#[must_use]
pub fn part_id(ep: &str, n: u64) -> String {
    if n == 0 {
        ep.to_owned()
    } else {
        format!("{ep}.{n:04}")
    }
}

/// Check that part `id` holds exactly the generator's timesteps from producer seq
/// `first_seq` on (channels, reward, done, t_ns, bit for bit); returns its manifest.
///
/// # Panics
/// At the first difference (a test helper).
pub fn check_part(data_dir: &Path, id: &str, ch: &[ChannelSpec], first_seq: u64) -> Manifest {
    let m = read_manifest(data_dir, id).unwrap_or_else(|e| panic!("{id}: {e}"));
    m.validate_continuity()
        .unwrap_or_else(|e| panic!("{id}: manifest not continuous: {e}"));
    assert_eq!(m.episode_id, id);
    if m.chunks.is_empty() {
        return m;
    }
    let ep = read_episode_chunked(&manifest_path(data_dir, id))
        .unwrap_or_else(|e| panic!("{id}: reading the chunks back: {e}"));
    assert_eq!(ep.length, m.total_timesteps, "{id}");
    let ts = ep
        .timestamps_ns
        .as_ref()
        .unwrap_or_else(|| panic!("{id}: no time/timestamps_ns block"));
    for (i, (got, spec)) in ep.channels.iter().zip(ch).enumerate() {
        let n = data::elements(&spec.shape);
        let sz = n * spec.dtype.size();
        assert_eq!(got.data.len() as u64, sz as u64 * ep.length, "{id}");
        for (k, chunk) in (0u64..).zip(got.data.chunks_exact(sz)) {
            let seq = first_seq + k;
            assert!(
                chunk == data::channel_payload(seq, i, spec.dtype, n).as_slice(),
                "{id}: channel {} differs at producer seq {seq}",
                got.id
            );
        }
    }
    for k in 0..ep.length {
        let seq = first_seq + k;
        let i = usize::try_from(k).expect("a timestep index fits usize");
        assert_eq!(
            ep.reward[i].to_bits(),
            data::reward(seq).to_bits(),
            "{id} seq {seq}"
        );
        assert_eq!(ep.done[i], data::done(seq), "{id} seq {seq}");
        assert_eq!(ts[i], data::t_ns(seq), "{id} seq {seq}");
    }
    m
}

/// The parts of `ep` in order, following the manifests' `split` links from `ep`; checks
/// each part against the generator and the links both ways; returns the part ids and
/// the timesteps they hold together.
///
/// # Panics
/// At the first difference (a test helper).
pub fn check_parts(data_dir: &Path, ep: &str, ch: &[ChannelSpec]) -> (Vec<String>, u64) {
    let mut ids = vec![ep.to_owned()];
    let mut first_seq = 0;
    let mut previous: Option<String> = None;
    loop {
        let id = ids.last().expect("at least the episode itself").clone();
        let m = check_part(data_dir, &id, ch, first_seq);
        let links = m.extra.get("split").cloned();
        let Some(links) = links else {
            // Never split: only the episode itself.
            assert_eq!(ids.len(), 1, "part {id} has no split links");
            return (ids, m.total_timesteps);
        };
        assert_eq!(links["episode"], ep, "{id}: {links}");
        assert_eq!(links["part"], ids.len() as u64 - 1, "{id}: {links}");
        assert_eq!(links["first_seq"], first_seq, "{id}: {links}");
        assert_eq!(
            links["previous"].as_str(),
            previous.as_deref(),
            "{id}: {links}"
        );
        first_seq += m.total_timesteps;
        match links["next"].as_str() {
            Some(next) => {
                assert_eq!(m.status.as_deref(), Some("complete"), "{id}");
                previous = Some(id);
                ids.push(next.to_owned());
            }
            None => return (ids, first_seq),
        }
    }
}
