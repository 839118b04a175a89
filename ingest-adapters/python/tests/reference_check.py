"""Open a multi-stream episode directory written by wshardd with the REFERENCE WShard Python
package (``import wshard``; not on PyPI: a checkout's ``py/`` folder on ``PYTHONPATH``),
for ``test_multirate_reference_readers``. Only the reference's public API is used; nothing
of it is copied here.

    python reference_check.py EPISODE_DIR OUT_DIR

For every stream the index lists: ``ChunkedEpisodeReader(manifest)`` loads the manifest,
``validate_chunk_continuity`` checks it, ``iter_chunks`` reads every chunk (SHA-256
verified against the manifest), ``load_wshard`` reads every chunk file again on its own;
each channel's values over all chunks are saved as ``OUT_DIR/{stream}.{channel}.npy``.
One chunk is re-saved with ``save_wshard``: first as loaded (the reference refuses a chunk
without ``total_chunks``), then with ``total_chunks`` taken from the manifest
(docs/FORMAT-NOTES.md, "total_chunks"), and loaded back. What was seen goes to
``OUT_DIR/summary.json``; any failure is an exception (exit 1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
from wshard import ChunkedEpisodeReader, load_wshard, save_wshard
from wshard.chunked import validate_chunk_continuity


def _channels(ep: Any) -> Dict[str, Any]:
    out = {}
    for lane, chans in (("signal", ep.observations), ("action", ep.actions)):
        for name, ch in chans.items():
            out[name] = (lane, ch)
    return out


def _same(a: Any, b: Any) -> bool:
    return bool(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())


def check_stream(episode_dir: Path, entry: Dict[str, Any], out: Path) -> Dict[str, Any]:
    name = entry["name"]
    manifest_path = episode_dir / entry["manifest"]
    reader = ChunkedEpisodeReader(str(manifest_path))
    manifest = reader.load_manifest()
    validate_chunk_continuity(manifest)
    chunk_infos = sorted(manifest.chunks, key=lambda c: c["chunk_index"])
    chunks = list(reader.iter_chunks())  # SHA-256 of every chunk checked
    per_chunk: List[Dict[str, Any]] = []
    columns: Dict[str, List[Any]] = {}
    lanes: Dict[str, str] = {}
    for info, ep in zip(chunk_infos, chunks):
        alone = load_wshard(manifest_path.parent / info["uri"])
        chans = _channels(ep)
        assert sorted(chans) == sorted(_channels(alone)), f"{name}: chunk {info['chunk_index']}: channels differ"
        for ch_name, (lane, ch) in chans.items():
            assert _same(ch.data, _channels(alone)[ch_name][1].data), f"{name}/{ch_name}: load_wshard differs"
            columns.setdefault(ch_name, []).append(ch.data)
            lanes[ch_name] = lane
        per_chunk.append(
            {
                "chunk_index": ep.chunk_index,
                "total_chunks": ep.total_chunks,
                "timestep_range": ep.timestep_range,
                "length": ep.length,
                "id": ep.id,
                "env_id": ep.env_id,
                "timebase": ep.timebase.type.value,
                "tick_hz": ep.timebase.tick_hz,
                "rewards": int(ep.rewards.data.shape[0]) if ep.rewards is not None else None,
                "done": int(ep.terminations.data.shape[0]) if ep.terminations is not None else None,
            }
        )
    for ch_name, parts in columns.items():
        np.save(out / f"{name}.{ch_name}.npy", np.concatenate(parts))
    return {
        "name": name,
        "manifest": {
            "episode_id": manifest.episode_id,
            "total_timesteps": manifest.total_timesteps,
            "chunks": len(manifest.chunks),
            "num_chunks": reader.num_chunks,
        },
        "chunks": per_chunk,
        "channels": {n: {"lane": lanes[n], "dtype": str(columns[n][0].dtype)} for n in columns},
    }


def resave(episode_dir: Path, entry: Dict[str, Any], out: Path) -> Dict[str, Any]:
    """Re-save chunk 1 of the stream: as loaded (refused), then with the manifest's count."""
    reader = ChunkedEpisodeReader(str(episode_dir / entry["manifest"]))
    reader.load_manifest()
    ep = reader.load_chunk(1)
    target = out / "resaved.wshard"
    try:
        save_wshard(ep, str(target))
        refused = None
    except ValueError as e:
        refused = str(e)
    ep.total_chunks = reader.num_chunks  # the manifest's count
    save_wshard(ep, str(target))
    back = load_wshard(str(target))
    same = sorted(_channels(back)) == sorted(_channels(ep)) and all(
        _same(ch.data, _channels(back)[n][1].data) for n, (_, ch) in _channels(ep).items()
    )
    return {
        "stream": entry["name"],
        "refused_without_total_chunks": refused,
        "path": str(target),
        "chunk_index": back.chunk_index,
        "total_chunks": back.total_chunks,
        "length": back.length,
        "same_values": same,
    }


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print("usage: reference_check.py EPISODE_DIR OUT_DIR", file=sys.stderr)
        return 2
    episode_dir, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    index_files = sorted(episode_dir.glob("*_index.json"))
    assert len(index_files) == 1, f"{episode_dir}: index files {index_files}"
    index = json.loads(index_files[0].read_text())
    streams = [check_stream(episode_dir, e, out) for e in index["streams"]]
    several = next(e for e in index["streams"] if e["chunks"] >= 2)
    summary = {"streams": streams, "resave": resave(episode_dir, several, out)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
