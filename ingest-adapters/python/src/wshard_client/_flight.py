"""Flight mode at open: the daemon's flight keys merged into an ``OPEN``,
``EPISODE_OPEN`` or ``STREAM_OPEN``'s metadata.

``flight=True`` (the daemon's ``[flight]`` ring) or ``flight={"ring_seconds": S,
"ring_bytes": B}`` keeps only the stream's most recent chunks, a ring that triggers
persist windows of; ``latched=True`` puts the stream's last value into every window.
"""

import json
from typing import Any, Mapping, Union

from .errors import SchemaError

FLIGHT_KEY = "wshard.flight"
LATCHED_KEY = "wshard.latched"

Flight = Union[bool, Mapping[str, int], None]


def with_flight(metadata_json: str, flight: Flight = None, latched: bool = False) -> str:
    """``metadata_json`` with the flight keys added (unchanged when neither is asked)."""
    if flight is None and not latched:
        return metadata_json
    try:
        meta: Any = json.loads(metadata_json) if metadata_json.strip() else {}
    except ValueError as e:
        raise SchemaError(f"metadata_json is not valid JSON: {e}") from None
    if not isinstance(meta, dict):
        raise SchemaError("metadata_json is not a JSON object")
    if flight is not None:
        if isinstance(flight, bool):
            meta[FLIGHT_KEY] = flight
        else:
            unknown = set(flight) - {"ring_seconds", "ring_bytes"}
            if unknown:
                raise SchemaError(f"flight: unknown keys {sorted(unknown)} (ring_seconds, ring_bytes)")
            meta[FLIGHT_KEY] = dict(flight)
    if latched:
        meta[LATCHED_KEY] = True
    return json.dumps(meta, separators=(",", ":"))
