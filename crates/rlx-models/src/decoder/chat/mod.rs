//! Chat templates: the Jinja template a chat model ships to turn a conversation into its prompt
//! text, rendered as transformers' `apply_chat_template` renders it.
//!
//! Contract:
//! - [`ChatTemplate::from_dir`] reads a Hugging Face checkpoint's template: `chat_template.jinja`
//!   when present (newer transformers write it), else `tokenizer_config.json`'s `chat_template`,
//!   a string or a list of `{name, template}` of which the one named `default` is used. The
//!   special tokens come from `tokenizer_config.json`'s `bos_token` / `eos_token` (a string or
//!   an AddedToken object `{"content": …}`).
//! - [`ChatTemplate::from_gguf`] reads a GGUF file's `tokenizer.chat_template`, and the bos/eos
//!   tokens as the strings that `tokenizer.ggml.bos_token_id` / `eos_token_id` index in
//!   `tokenizer.ggml.tokens`.
//! - The template is compiled when it is read, so a syntax error surfaces there:
//!   [`ModelError::ChatTemplateSyntax`] with the file, the line within the template and
//!   minijinja's message. No template at all is [`ModelError::NoChatTemplate`], listing where
//!   it looked.
//! - [`ChatTemplate::render`] renders `messages`, `add_generation_prompt`, `tools` and
//!   `documents` (none) and the special tokens that are known (an unknown one is undefined, as
//!   in transformers). The environment is transformers': `trim_blocks` and `lstrip_blocks`,
//!   loop controls, `tojson`, Python's string/dict/list methods (`.strip()`, `.items()`, …),
//!   `raise_exception(msg)` (a [`ModelError::ChatTemplateRender`] carrying `msg`) and
//!   `strftime_now(fmt)` (UTC). The text it returns already holds the template's special
//!   tokens: tokenize it without adding them again.

use crate::common::gguf::{is_gguf, GgufError, GgufFile};
use crate::error::{ModelError, Result};
use minijinja::{Environment, Error as JinjaError, ErrorKind, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The tokenizer settings file of a Hugging Face checkpoint.
pub const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
/// The separate template file newer transformers save beside it.
pub const TEMPLATE_FILE: &str = "chat_template.jinja";
/// The GGUF metadata key of the template.
pub const GGUF_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// The name the template is compiled under.
const NAME: &str = "chat_template";

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant` (templates may know others).
    pub role: String,
    /// The message's text.
    pub content: String,
}

impl Message {
    /// A message of any role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Message {
        Message { role: role.into(), content: content.into() }
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::new("system", content)
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::new("user", content)
    }
}

/// A compiled chat template and the special tokens it may use.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// Where the template was read (named in every error).
    origin: PathBuf,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .field("bos_token", &self.bos_token)
            .field("eos_token", &self.eos_token)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles `source`; `origin` is the file it came from, named in errors.
    pub fn new(
        source: &str,
        origin: impl Into<PathBuf>,
        bos_token: Option<String>,
        eos_token: Option<String>,
    ) -> Result<ChatTemplate> {
        let origin = origin.into();
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(NAME, source.to_string()).map_err(|e| ModelError::ChatTemplateSyntax {
            path: origin.clone(),
            line: e.line(),
            reason: describe(&e),
        })?;
        Ok(ChatTemplate { env, origin, bos_token, eos_token })
    }

    /// The template of the checkpoint directory `dir` (see the module doc).
    pub fn from_dir(dir: &Path) -> Result<ChatTemplate> {
        let config_path = dir.join(TOKENIZER_CONFIG);
        let config = match std::fs::read_to_string(&config_path) {
            Ok(text) => Some(
                serde_json::from_str::<Json>(&text)
                    .map_err(|source| ModelError::Json { path: config_path.clone(), source })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ModelError::io(&config_path, e)),
        };
        let token = |key: &str| match &config {
            Some(c) => special_token(c, key, &config_path),
            None => Ok(None),
        };
        let (bos, eos) = (token("bos_token")?, token("eos_token")?);
        let file = dir.join(TEMPLATE_FILE);
        match std::fs::read_to_string(&file) {
            Ok(source) => return ChatTemplate::new(&source, file, bos, eos),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ModelError::io(&file, e)),
        }
        let source = match &config {
            Some(c) => config_template(c, &config_path)?,
            None => None,
        };
        match source {
            Some(source) => ChatTemplate::new(&source, config_path, bos, eos),
            None => Err(ModelError::NoChatTemplate {
                path: dir.to_path_buf(),
                looked: format!("{TEMPLATE_FILE} and \"chat_template\" in {TOKENIZER_CONFIG}"),
            }),
        }
    }

    /// The template of the model at `model`: a GGUF file's metadata ([`is_gguf`]), else the
    /// checkpoint directory's files.
    pub fn for_model(model: &Path) -> Result<ChatTemplate> {
        if is_gguf(model) {
            return ChatTemplate::from_gguf(&GgufFile::open(model)?);
        }
        ChatTemplate::from_dir(model)
    }

    /// The template in `file`'s metadata (see the module doc).
    pub fn from_gguf(file: &GgufFile) -> Result<ChatTemplate> {
        if file.metadata(GGUF_TEMPLATE_KEY).is_none() {
            return Err(ModelError::NoChatTemplate {
                path: file.path().to_path_buf(),
                looked: format!("the metadata key {GGUF_TEMPLATE_KEY}"),
            });
        }
        let source = file.get_str(GGUF_TEMPLATE_KEY)?;
        let bos = gguf_token(file, "tokenizer.ggml.bos_token_id")?;
        let eos = gguf_token(file, "tokenizer.ggml.eos_token_id")?;
        ChatTemplate::new(source, file.path(), bos, eos)
    }

    /// Where the template was read.
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    /// The bos token the template sees, if the model names one.
    pub fn bos_token(&self) -> Option<&str> {
        self.bos_token.as_deref()
    }

    /// The eos token the template sees, if the model names one.
    pub fn eos_token(&self) -> Option<&str> {
        self.eos_token.as_deref()
    }

    /// The prompt text of `messages`; with `add_generation_prompt` it ends with the opening
    /// of the assistant's turn.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        let mut ctx: BTreeMap<&str, Value> = BTreeMap::new();
        ctx.insert("messages", Value::from_serialize(messages));
        ctx.insert("add_generation_prompt", Value::from(add_generation_prompt));
        ctx.insert("tools", Value::from(()));
        ctx.insert("documents", Value::from(()));
        if let Some(bos) = &self.bos_token {
            ctx.insert("bos_token", Value::from(bos.as_str()));
        }
        if let Some(eos) = &self.eos_token {
            ctx.insert("eos_token", Value::from(eos.as_str()));
        }
        let failed = |e: JinjaError| ModelError::ChatTemplateRender {
            path: self.origin.clone(),
            reason: describe(&e),
        };
        self.env.get_template(NAME).and_then(|t| t.render(ctx)).map_err(failed)
    }
}

/// minijinja's finding without its "(in template:line)" suffix (the callers name the file),
/// with the line within the template and the causes it chains.
fn describe(e: &JinjaError) -> String {
    let mut what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    if let Some(line) = e.line() {
        what.push_str(&format!(" (template line {line})"));
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        what.push_str(&format!(": {c}"));
        cause = c.source();
    }
    what
}

/// `raise_exception(msg)`: the template refuses the conversation.
fn raise_exception(msg: String) -> std::result::Result<Value, JinjaError> {
    Err(JinjaError::new(ErrorKind::InvalidOperation, format!("the template raised an exception: {msg}")))
}

/// `strftime_now(fmt)`: the current UTC time, formatted.
fn strftime_now(format: String) -> std::result::Result<String, JinjaError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    strftime(now, &format).map_err(|e| JinjaError::new(ErrorKind::InvalidOperation, e))
}

/// The `time` format-description (version 2) component of each strftime directive a chat
/// template may use.
fn directive(c: char) -> Option<&'static str> {
    Some(match c {
        'Y' => "[year]",
        'y' => "[year repr:last_two]",
        'm' => "[month]",
        'd' => "[day]",
        'j' => "[ordinal]",
        'B' => "[month repr:long]",
        'b' => "[month repr:short]",
        'A' => "[weekday repr:long]",
        'a' => "[weekday repr:short]",
        'H' => "[hour]",
        'I' => "[hour repr:12]",
        'M' => "[minute]",
        'S' => "[second]",
        'p' => "[period]",
        _ => return None,
    })
}

/// `secs` after the Unix epoch (UTC) through Python's `strftime` directives %Y %y %m %d %j
/// %B %b %A %a %H %I %M %S %p %%, formatted by minijinja-contrib's `datetimeformat` (the
/// directives are translated to its format description); another directive is an error
/// naming it.
pub fn strftime(secs: u64, format: &str) -> std::result::Result<String, String> {
    let mut description = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some('%') => description.push('%'),
                Some(d) => match directive(d) {
                    Some(component) => description.push_str(component),
                    None => return Err(format!("strftime_now: the directive %{d} is not supported")),
                },
                None => return Err("strftime_now: the format ends with a lone %".to_string()),
            },
            // Literal text: brackets and backslashes are escaped in a version 2 description.
            '[' | ']' | '\\' => {
                description.push('\\');
                description.push(c);
            }
            _ => description.push(c),
        }
    }
    let mut env = Environment::new();
    env.add_filter("datetimeformat", minijinja_contrib::filters::datetimeformat);
    let ctx = minijinja::context! { t => secs, f => description };
    env.render_str("{{ t | datetimeformat(format=f) }}", ctx)
        .map_err(|e| format!("strftime_now({format:?}): {e}"))
}

/// `tokenizer_config.json`'s `chat_template`: a string, or the `default` of a named list.
fn config_template(config: &Json, path: &Path) -> Result<Option<String>> {
    let bad = |reason: String| ModelError::Config { path: path.to_path_buf(), reason };
    match config.get("chat_template") {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(Json::Array(list)) => {
            let mut names = Vec::new();
            for (i, entry) in list.iter().enumerate() {
                let name = entry.get("name").and_then(Json::as_str);
                let template = entry.get("template").and_then(Json::as_str);
                let (Some(name), Some(template)) = (name, template) else {
                    return Err(bad(format!(
                        "chat_template[{i}] is not an object with string fields \"name\" and \"template\""
                    )));
                };
                if name == "default" {
                    return Ok(Some(template.to_string()));
                }
                names.push(name);
            }
            Err(bad(format!(
                "chat_template lists templates named [{}] but none named \"default\", the one a plain chat uses",
                names.join(", ")
            )))
        }
        Some(other) => Err(bad(format!(
            "chat_template is {other}; expected a string or a list of {{\"name\", \"template\"}} objects"
        ))),
    }
}

/// A special token of `tokenizer_config.json`: a string, or an AddedToken `{"content": …}`.
fn special_token(config: &Json, key: &str, path: &Path) -> Result<Option<String>> {
    match config.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(v @ Json::Object(o)) => match o.get("content") {
            Some(Json::String(s)) => Ok(Some(s.clone())),
            _ => Err(ModelError::Config {
                path: path.to_path_buf(),
                reason: format!("{key} is {v}, an object without a string \"content\""),
            }),
        },
        Some(other) => Err(ModelError::Config {
            path: path.to_path_buf(),
            reason: format!("{key} is {other}; expected a string or an object with \"content\""),
        }),
    }
}

/// The token string that the id at `key` names in `tokenizer.ggml.tokens`, if the key is there.
fn gguf_token(file: &GgufFile, key: &str) -> Result<Option<String>> {
    if file.metadata(key).is_none() {
        return Ok(None);
    }
    let id = file.get_usize(key)?;
    let tokens = file.get_str_array("tokenizer.ggml.tokens")?;
    match tokens.get(id) {
        Some(t) => Ok(Some(t.clone())),
        None => Err(file.error(GgufError::BadValue {
            key: key.to_string(),
            value: id.to_string(),
            reason: format!("is not below the {} tokens of tokenizer.ggml.tokens", tokens.len()),
        })),
    }
}

#[cfg(test)]
mod tests;
