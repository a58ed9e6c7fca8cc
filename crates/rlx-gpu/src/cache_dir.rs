//! Where both GPU drivers keep their pipeline cache files: one rule, so that `RLX_PIPELINE_CACHE`
//! means the same thing to rlx-vulkan and rlx-wgpu.
//!
//! `$RLX_PIPELINE_CACHE` when it names a folder; off when it is `0` or `off`; otherwise
//! `pipelines/` in rlx's cache folder ([`rlx_backend::rlx_cache_dir`]: `$XDG_CACHE_HOME/rlx`,
//! else `~/.cache/rlx` on Linux); no cache when none of them is known. The folder is created on
//! the first save.

use std::ffi::OsStr;
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
            PipelineCacheDir::FromEnv => {
                cache_dir_from(std::env::var_os(PIPELINE_CACHE_ENV).as_deref(), rlx_backend::rlx_cache_dir())
            }
            PipelineCacheDir::Off => None,
            PipelineCacheDir::At(dir) => Some(dir.clone()),
        }
    }
}

/// The rule of the module doc over explicit values of `RLX_PIPELINE_CACHE` (`None` = unset)
/// and rlx's cache folder. A blank `RLX_PIPELINE_CACHE` counts as unset, and so do `1` and
/// `on` (the default place).
pub fn cache_dir_from(setting: Option<&OsStr>, rlx_cache: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(value) = setting {
        let text = value.to_string_lossy();
        match text.trim().to_ascii_lowercase().as_str() {
            "0" | "off" => return None,
            "" | "1" | "on" => {}
            _ => return Some(PathBuf::from(value)),
        }
    }
    Some(rlx_cache?.join("pipelines"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `xdg` stands for rlx's cache folder's parent (`None`: no cache folder is known).
    fn dir(setting: Option<&str>, xdg: Option<&str>, _home: Option<&str>) -> Option<PathBuf> {
        cache_dir_from(setting.map(OsStr::new), xdg.map(|x| PathBuf::from(x).join("rlx")))
    }

    #[test]
    fn default_place_is_in_the_rlx_cache_folder() {
        let p = Some(PathBuf::from("/x/cache/rlx/pipelines"));
        assert_eq!(dir(None, Some("/x/cache"), Some("/home/u")), p);
        assert_eq!(dir(None, None, None), None);
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
