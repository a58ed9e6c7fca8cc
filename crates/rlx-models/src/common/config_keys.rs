//! Typed reading of a model's config.json: [`Keys`] over one JSON object, whose errors name the
//! file, the key and its value, and [`parse_config`], which reads the text as one object. The
//! decoder and Mamba configs both parse through them.

use crate::error::{ModelError, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Reads the config file at `path` and parses it with [`parse_config`].
pub(crate) fn read_config<T>(path: &Path, parse: impl FnOnce(&Keys<'_>) -> Result<T>) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
    parse_config(&text, path, parse)
}

/// Parses a config file's text, which must be one JSON object, with `parse`; `path` only names
/// the file in errors.
pub(crate) fn parse_config<T>(
    text: &str,
    path: &Path,
    parse: impl FnOnce(&Keys<'_>) -> Result<T>,
) -> Result<T> {
    let value: Value =
        serde_json::from_str(text).map_err(|source| ModelError::Json { path: path.to_path_buf(), source })?;
    let Some(map) = value.as_object() else {
        return Err(ModelError::Config { path: path.to_path_buf(), reason: "not a JSON object".into() });
    };
    parse(&Keys { path, map, scope: "" })
}

/// The keys of one JSON object of a config file, with typed getters whose errors name the file,
/// the key (under `scope`) and its value. A `null` value counts as absent, as transformers
/// treats it.
pub(crate) struct Keys<'a> {
    pub(crate) path: &'a Path,
    pub(crate) map: &'a Map<String, Value>,
    pub(crate) scope: &'a str,
}

impl<'a> Keys<'a> {
    pub(crate) fn err(&self, reason: String) -> ModelError {
        ModelError::Config { path: PathBuf::from(self.path), reason }
    }

    pub(crate) fn name(&self, key: &str) -> String {
        format!("{}{key}", self.scope)
    }

    /// `key = value: why` as a config error.
    pub(crate) fn bad(&self, key: &str, why: impl std::fmt::Display) -> ModelError {
        let value = self.get(key).map_or("null".to_string(), Value::to_string);
        self.err(format!("{} = {value}: {why}", self.name(key)))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn opt_usize(&self, key: &str) -> Result<Option<usize>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => Err(self.bad(key, "expected a non-negative integer")),
        }
    }

    /// A required size, at least 1.
    pub(crate) fn size(&self, key: &str) -> Result<usize> {
        match self.opt_usize(key)? {
            None => Err(self.err(format!("key '{}' is missing; a decoder config needs it", self.name(key)))),
            Some(0) => Err(self.bad(key, "must be at least 1")),
            Some(n) => Ok(n),
        }
    }

    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        match v.as_f64().filter(|x| x.is_finite()) {
            Some(x) => Ok(Some(x)),
            None => Err(self.bad(key, "expected a finite number")),
        }
    }

    /// A required number > 0.
    pub(crate) fn positive(&self, key: &str) -> Result<f64> {
        match self.opt_f64(key)? {
            None => Err(self.err(format!("key '{}' is missing; this rope type needs it", self.name(key)))),
            Some(x) if x <= 0.0 => Err(self.bad(key, "must be > 0")),
            Some(x) => Ok(x),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        v.as_bool().map(Some).ok_or_else(|| self.bad(key, "expected true or false"))
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        v.as_str().map(Some).ok_or_else(|| self.bad(key, "expected a string"))
    }

    /// The object under `key`, its keys named with the prefix `scope` in errors.
    pub(crate) fn opt_object(&self, key: &str, scope: &'a str) -> Result<Option<Keys<'a>>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        let map = v.as_object().ok_or_else(|| self.bad(key, "expected an object"))?;
        Ok(Some(Keys { path: self.path, map, scope }))
    }
}
