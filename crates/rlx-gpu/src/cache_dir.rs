//! Where both GPU drivers keep their pipeline cache files: one rule, so that `RLX_PIPELINE_CACHE`
//! means the same thing to rlx-vulkan and rlx-wgpu.
//!
//! `$RLX_PIPELINE_CACHE` when it names a folder; off when it is `0` or `off`; otherwise
//! `$XDG_CACHE_HOME/rlx/pipelines/`, else `$HOME/.cache/rlx/pipelines/`; no cache when none of
//! them is known. The folder is created on the first save.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The environment variable that moves (`RLX_PIPELINE_CACHE=/some/dir`) or turns off
/// (`RLX_PIPELINE_CACHE=0` or `off`) the pipeline cache.
pub const PIPELINE_CACHE_ENV: &str = "RLX_PIPELINE_CACHE";

/// Where a driver keeps its pipeline cache. Tests pass [`PipelineCacheDir::At`] or
/// [`PipelineCacheDir::Off`] instead of changing the process environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PipelineCacheDir {
    /// [`PIPELINE_CACHE_ENV`], else the user's cache folder (see the module doc).
    #[default]
    FromEnv,
    /// No cache: nothing is read or written.
    Off,
    /// This folder, whatever the environment says.
    At(PathBuf),
}

impl PipelineCacheDir {
    /// The folder to use, or `None` for no cache.
    pub fn resolve(&self) -> Option<PathBuf> {
        match self {
            PipelineCacheDir::FromEnv => cache_dir_from(
                std::env::var_os(PIPELINE_CACHE_ENV).as_deref(),
                std::env::var_os("XDG_CACHE_HOME").as_deref(),
                std::env::var_os("HOME").as_deref(),
            ),
            PipelineCacheDir::Off => None,
            PipelineCacheDir::At(dir) => Some(dir.clone()),
        }
    }
}

/// The rule of the module doc over explicit values of `RLX_PIPELINE_CACHE`, `XDG_CACHE_HOME`
/// and `HOME` (`None` = unset). A blank `RLX_PIPELINE_CACHE` counts as unset, and so do `1` and
/// `on` (the default place); a relative `XDG_CACHE_HOME` is ignored, as the XDG spec asks.
pub fn cache_dir_from(setting: Option<&OsStr>, xdg: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(value) = setting {
        let text = value.to_string_lossy();
        match text.trim().to_ascii_lowercase().as_str() {
            "0" | "off" => return None,
            "" | "1" | "on" => {}
            _ => return Some(PathBuf::from(value)),
        }
    }
    let base = match xdg.map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => PathBuf::from(home.filter(|h| !h.is_empty()).map(OsString::from)?).join(".cache"),
    };
    Some(base.join("rlx").join("pipelines"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(setting: Option<&str>, xdg: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
        cache_dir_from(setting.map(OsStr::new), xdg.map(OsStr::new), home.map(OsStr::new))
    }

    #[test]
    fn default_place_follows_xdg_then_home() {
        let p = Some(PathBuf::from("/x/cache/rlx/pipelines"));
        assert_eq!(dir(None, Some("/x/cache"), Some("/home/u")), p);
        let home = Some(PathBuf::from("/home/u/.cache/rlx/pipelines"));
        assert_eq!(dir(None, None, Some("/home/u")), home);
        assert_eq!(dir(None, Some("relative"), Some("/home/u")), home);
        assert_eq!(dir(None, Some(""), Some("/home/u")), home);
        assert_eq!(dir(None, None, None), None);
        assert_eq!(dir(None, None, Some("")), None);
    }

    #[test]
    fn the_variable_turns_off_or_moves_the_cache() {
        for off in ["0", "off", "OFF", " off "] {
            assert_eq!(dir(Some(off), Some("/x"), Some("/home/u")), None, "{off:?}");
        }
        assert_eq!(dir(Some("/tmp/pc"), None, None), Some(PathBuf::from("/tmp/pc")));
        assert_eq!(dir(Some("/tmp/pc"), Some("/x"), Some("/h")), Some(PathBuf::from("/tmp/pc")));
        for default in ["", "  ", "1", "on"] {
            let want = Some(PathBuf::from("/x/rlx/pipelines"));
            assert_eq!(dir(Some(default), Some("/x"), None), want, "{default:?}");
        }
    }

    #[test]
    fn explicit_choices_ignore_the_environment() {
        assert_eq!(PipelineCacheDir::Off.resolve(), None);
        let at = PathBuf::from("/somewhere/else");
        assert_eq!(PipelineCacheDir::At(at.clone()).resolve(), Some(at));
    }
}
