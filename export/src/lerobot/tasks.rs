//! Tasks: each frame's task is the text of the episode's last task event (label
//! `instruction` by default) at or before the frame (the first one for frames before it);
//! an episode without one has the task `env_id` of its index (else its episode id).

use wshard::episode_dir::events::EventData;
use wshard::episode_dir::EpisodeDir;

/// The dataset's tasks, numbered in the order they are first seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskTable {
    tasks: Vec<String>,
}

impl TaskTable {
    /// The index of `task`, adding it when new.
    pub fn index_of(&mut self, task: &str) -> i64 {
        let i = match self.tasks.iter().position(|t| t == task) {
            Some(i) => i,
            None => {
                self.tasks.push(task.to_owned());
                self.tasks.len() - 1
            }
        };
        i64::try_from(i).unwrap_or(i64::MAX)
    }

    /// The tasks, by index.
    #[must_use]
    pub fn tasks(&self) -> &[String] {
        &self.tasks
    }
}

/// The task of each frame at `t_ns`, and the episode's distinct tasks in order of first use.
#[must_use]
pub fn frame_tasks(episode: &EpisodeDir, label: &str, t_ns: &[i64]) -> (Vec<String>, Vec<String>) {
    let events: Vec<(i64, &str)> = episode
        .events()
        .iter()
        .filter(|e| e.label == label)
        .filter_map(|e| match &e.data {
            EventData::Text(s) => Some((e.t_ns, s.as_str())),
            _ => None,
        })
        .collect();
    let fallback = episode
        .index()
        .map(|i| i.env_id.clone())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| episode.episode_id().to_owned());
    let mut per_frame = Vec::with_capacity(t_ns.len());
    let mut distinct: Vec<String> = Vec::new();
    for &t in t_ns {
        let task = events
            .iter()
            .rev()
            .find(|(et, _)| *et <= t)
            .or_else(|| events.first())
            .map_or(fallback.as_str(), |(_, s)| *s);
        if !distinct.iter().any(|d| d == task) {
            distinct.push(task.to_owned());
        }
        per_frame.push(task.to_owned());
    }
    (per_frame, distinct)
}
