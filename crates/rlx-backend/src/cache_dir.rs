//! Where rlx keeps its caches on disk: one rule for every crate (the calibration cache, the
//! GPU pipeline caches, downloaded models).
//!
//! `$XDG_CACHE_HOME/rlx` when that variable holds an absolute path (the XDG spec says a
//! relative one is ignored), else the platform's cache folder from the `dirs` crate joined
//! with `rlx` (`~/.cache/rlx` on Linux, `~/Library/Caches/rlx` on macOS, `%LOCALAPPDATA%\rlx`
//! on Windows); `None` when neither is known.

use std::ffi::OsStr;
use std::path::PathBuf;

/// rlx's cache folder, by the rule of the module doc. Nothing is created.
pub fn rlx_cache_dir() -> Option<PathBuf> {
    Some(user_cache_dir()?.join("rlx"))
}

/// The user's cache folder that rlx's is in: `$XDG_CACHE_HOME` when absolute, else the
/// platform's. Other tools' caches that rlx reads (the Hugging Face hub's) default under it.
pub fn user_cache_dir() -> Option<PathBuf> {
    Some(
        rlx_cache_dir_from(std::env::var_os("XDG_CACHE_HOME").as_deref(), dirs::cache_dir())?
            .parent()?
            .to_path_buf(),
    )
}

/// The rule over explicit values: `xdg` is `$XDG_CACHE_HOME` (`None` = unset) and
/// `platform` the platform's cache folder.
pub fn rlx_cache_dir_from(xdg: Option<&OsStr>, platform: Option<PathBuf>) -> Option<PathBuf> {
    let base = match xdg.map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => platform.filter(|p| !p.as_os_str().is_empty())?,
    };
    Some(base.join("rlx"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_wins_when_absolute_else_the_platform_folder() {
        let platform = Some(PathBuf::from("/home/u/.cache"));
        let got = |xdg: Option<&str>, p: Option<PathBuf>| rlx_cache_dir_from(xdg.map(OsStr::new), p);
        assert_eq!(got(Some("/x/cache"), platform.clone()), Some(PathBuf::from("/x/cache/rlx")));
        assert_eq!(got(None, platform.clone()), Some(PathBuf::from("/home/u/.cache/rlx")));
        assert_eq!(got(Some("relative"), platform.clone()), Some(PathBuf::from("/home/u/.cache/rlx")));
        assert_eq!(got(Some(""), platform), Some(PathBuf::from("/home/u/.cache/rlx")));
        assert_eq!(got(None, None), None);
        assert_eq!(got(Some("rel"), Some(PathBuf::new())), None);
    }
}
