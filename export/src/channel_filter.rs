//! `--exclude PATTERN`: channels an export leaves out, the same rule for the WebDataset and
//! LeRobot exports.
//!
//! A pattern is matched against `STREAM/CHANNEL`; `*` matches any run of characters (a `/`
//! too), every other character itself: `arm/receive_t_ns`, `*/receive_t_ns` (every
//! stream's, also `camera/rgb/receive_t_ns`), `gripper/*` (a whole stream). A pattern that
//! matches no channel of any exported episode is refused (a misspelt name would otherwise
//! leave the channel in without a word).

use wshard::episode_dir::EpisodeDir;

/// The wildcard of a pattern.
const WILDCARD: char = '*';

/// Why `--exclude` cannot be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExcludeError {
    /// An empty pattern.
    #[error("--exclude: an empty pattern (write STREAM/CHANNEL, `*` for any characters)")]
    Empty,
    /// A pattern that matches no channel of any exported episode.
    #[error("--exclude {pattern}: matches no channel (channels: {available})")]
    NoMatch { pattern: String, available: String },
}

/// The channels to leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelFilter {
    patterns: Vec<String>,
}

/// Whether `text` matches `pattern` (`*`: any run of characters).
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == WILDCARD {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == WILDCARD)
}

impl ChannelFilter {
    /// The filter of `patterns`.
    ///
    /// # Errors
    /// [`ExcludeError::Empty`] for an empty pattern.
    pub fn new(patterns: &[String]) -> Result<Self, ExcludeError> {
        if patterns.iter().any(String::is_empty) {
            return Err(ExcludeError::Empty);
        }
        Ok(Self {
            patterns: patterns.to_vec(),
        })
    }

    /// Whether channel `channel` of `stream` is left out.
    #[must_use]
    pub fn excludes(&self, stream: &str, channel: &str) -> bool {
        let key = format!("{stream}/{channel}");
        self.patterns.iter().any(|p| glob_match(p, &key))
    }

    /// Check that every pattern matches a channel of one of `episodes`.
    ///
    /// # Errors
    /// [`ExcludeError::NoMatch`] naming the first pattern that matches nothing, with the
    /// channels of the first episode.
    pub fn check_used(&self, episodes: &[EpisodeDir]) -> Result<(), ExcludeError> {
        let keys: Vec<Vec<String>> = episodes
            .iter()
            .map(|e| {
                e.streams()
                    .iter()
                    .flat_map(|s| s.channels.iter().map(|c| format!("{}/{}", s.name, c.name)))
                    .collect()
            })
            .collect();
        for p in &self.patterns {
            if !keys.iter().flatten().any(|k| glob_match(p, k)) {
                return Err(ExcludeError::NoMatch {
                    pattern: p.clone(),
                    available: keys.first().map_or_else(String::new, |k| k.join(", ")),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn patterns() {
        assert!(glob_match("arm/q", "arm/q"));
        assert!(!glob_match("arm/q", "arm/qd"));
        assert!(glob_match("*/receive_t_ns", "arm/receive_t_ns"));
        assert!(glob_match("*/receive_t_ns", "camera/rgb/receive_t_ns"));
        assert!(!glob_match("*/receive_t_ns", "arm/header_t_ns"));
        assert!(glob_match("gripper/*", "gripper/position"));
        assert!(!glob_match("gripper/*", "arm/position"));
        assert!(glob_match("*", "a/b"));
        assert!(glob_match("a*b*c", "a/xxb/yyc"));
        assert!(!glob_match("a*b*c", "a/xxb/yy"));
    }
}
