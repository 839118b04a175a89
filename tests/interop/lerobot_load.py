"""Run by test_export_lerobot_loader.py with the interpreter that has the real ``lerobot``
package: load a dataset directory with ``LeRobotDataset`` (local root, no hub) and print what
every item holds as JSON on stdout.

    python lerobot_load.py DATASET_DIR VIDEO_KEY
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    root, video_key = sys.argv[1], sys.argv[2]
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    plain = LeRobotDataset("local/wshard-export", root=root)
    # A window over the previous frame too: the video is decoded at two timestamps per item,
    # each within LeRobot's tolerance (1e-4 s) of a frame of the file.
    windowed = LeRobotDataset(
        "local/wshard-export",
        root=root,
        delta_timestamps={video_key: [-1 / plain.fps, 0.0], "observation.state": [-1 / plain.fps, 0.0]},
    )
    items = []
    for i in range(len(plain)):
        it = plain[i]
        w = windowed[i]
        img = it[video_key]
        items.append(
            {
                "index": int(it["index"]),
                "episode_index": int(it["episode_index"]),
                "frame_index": int(it["frame_index"]),
                "timestamp": float(it["timestamp"]),
                "task_index": int(it["task_index"]),
                "task": it["task"],
                "state": [float(x) for x in it["observation.state"]],
                "action": [float(x) for x in it["action"]],
                "image_shape": list(img.shape),
                "image": (img * 255.0).round().to(dtype=__import__("torch").uint8).permute(1, 2, 0).flatten().tolist(),
                "window_image_shape": list(w[video_key].shape),
                "window_pad": [bool(x) for x in w[f"{video_key}_is_pad"]],
                "window_state_prev": [float(x) for x in w["observation.state"][0]],
            }
        )
    print(
        json.dumps(
            {
                "fps": plain.fps,
                "num_episodes": plain.num_episodes,
                "num_frames": plain.num_frames,
                "video_keys": plain.meta.video_keys,
                "camera_keys": plain.meta.camera_keys,
                "stats_keys": sorted(plain.meta.stats),
                "items": items,
            }
        )
    )


if __name__ == "__main__":
    main()
