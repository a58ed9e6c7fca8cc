// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::common::stop::stop_tokens;

/// Qwen2.5-Instruct's template, as on the Hub less its tool-call branches: a default system
/// prompt when the conversation has none, ChatML turns.
const QWEN25: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '<|im_end|>\n' }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant") %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// Plain ChatML (OpenHermes, SmolLM): no default system prompt.
const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// Llama-3-Instruct's template, as on the Hub.
const LLAMA3: &str = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/// Mistral-Instruct-style: Python string methods, bos/eos, and a refusal of turns that do not
/// alternate.
const MISTRAL: &str = r#"{{- bos_token }}
{%- for message in messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if message['content'].startswith('/') %}
            {{- raise_exception('commands are not messages') }}
        {%- endif %}
        {{- '[INST] ' + message['content'].strip() + ' [/INST]' }}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'].strip() + eos_token }}
    {%- endif %}
{%- endfor %}
"#;

/// Llama-3.1's date header: `strftime_now` when the caller gives no `date_string`.
const LLAMA31_DATE: &str = r#"{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{{- "Today Date: " + date_string + "\n" }}
{%- for w in messages[0]['content'].split(' ') %}[{{ w }}]{% endfor %}"#;

fn user(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

fn template(source: &str, bos: Option<&str>, eos: Option<&str>) -> ChatTemplate {
    ChatTemplate::new(source, "test.jinja", bos.map(String::from), eos.map(String::from)).unwrap()
}

/// A fresh directory holding `files`.
fn dir_with(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-chat-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn tokenizer_config(template: &str, extra: &str) -> String {
    format!(r#"{{"chat_template": {}{extra}}}"#, serde_json::to_string(template).unwrap())
}

#[test]
fn qwen25_adds_its_default_system_prompt() {
    let t = template(QWEN25, None, Some("<|im_end|>"));
    assert_eq!(
        t.render(&user("hi"), true).unwrap(),
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n\
         <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
    let with_system = [Message::system("Be brief."), Message::user("hi")];
    assert_eq!(
        t.render(&with_system, false).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    );
}

#[test]
fn chatml_renders_the_user_turn_and_opens_the_assistants() {
    let t = template(CHATML, None, None);
    assert_eq!(
        t.render(&user("hi"), true).unwrap(),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(t.render(&user("hi"), false).unwrap(), "<|im_start|>user\nhi<|im_end|>\n");
}

#[test]
fn llama3_puts_bos_first_and_trims_content() {
    let t = template(LLAMA3, Some("<|begin_of_text|>"), Some("<|eot_id|>"));
    let messages = [Message::system("be brief"), Message::user("  hi \n")];
    assert_eq!(
        t.render(&messages, true).unwrap(),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nbe brief<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    // A model that names no bos token: the template sees it undefined, which prints empty but
    // cannot be concatenated (as in jinja2, which transformers uses).
    assert_eq!(
        template("{{ bos_token }}[{{ eos_token }}]", None, None).render(&user("hi"), true).unwrap(),
        "[]"
    );
    let msg = template(LLAMA3, None, None).render(&user("hi"), true).unwrap_err().to_string();
    assert!(msg.contains("undefined and string"), "{msg}");
}

#[test]
fn python_methods_and_raise_exception() {
    let t = template(MISTRAL, Some("<s>"), Some("</s>"));
    let turns = [Message::user(" a "), Message::new("assistant", "b\n"), Message::user("c")];
    assert_eq!(t.render(&turns, true).unwrap(), "<s>[INST] a [/INST] b</s>[INST] c [/INST]");
    let err = t.render(&[Message::new("assistant", "b")], true).unwrap_err();
    assert!(matches!(err, ModelError::ChatTemplateRender { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("test.jinja: rendering the chat template:"), "{msg}");
    assert!(msg.contains("Conversation roles must alternate user/assistant"), "{msg}");
    assert!(msg.contains("template line 4"), "{msg}");
    let msg = t.render(&user("/quit"), true).unwrap_err().to_string();
    assert!(msg.contains("commands are not messages"), "{msg}");
}

#[test]
fn strftime_now_gives_todays_date() {
    let secs = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let before = strftime(secs(), "%d %b %Y").unwrap();
    let text = template(LLAMA31_DATE, None, None).render(&user("a b  c"), true).unwrap();
    let after = strftime(secs(), "%d %b %Y").unwrap();
    let dates = [format!("Today Date: {before}\n"), format!("Today Date: {after}\n")];
    assert!(dates.iter().any(|d| text.starts_with(d.as_str())), "{text}");
    assert!(text.ends_with("[a][b][][c]"), "Python's split(' ') keeps empty fields: {text}");
}

#[test]
fn strftime_directives() {
    let all = "%Y %y %m %d %j %B %b %A %a %H %I %M %S %p %%";
    assert_eq!(strftime(0, "%Y-%m-%d %H:%M:%S %a").unwrap(), "1970-01-01 00:00:00 Thu");
    assert_eq!(
        strftime(1_709_211_845, all).unwrap(),
        "2024 24 02 29 060 February Feb Thursday Thu 13 01 04 05 PM %"
    );
    assert_eq!(strftime(946_684_799, "%d %b %Y %j %I%p %A").unwrap(), "31 Dec 1999 365 11PM Friday");
    assert!(strftime(0, "%Q").unwrap_err().contains("%Q"));
    // Literal text, brackets and backslashes included, passes through the format description.
    assert_eq!(strftime(0, r"[%Y] \ 100%%").unwrap(), r"[1970] \ 100%");
    let msg =
        template("{{ strftime_now('%e') }}", None, None).render(&user("x"), true).unwrap_err().to_string();
    assert!(msg.contains("%e is not supported"), "{msg}");
}

#[test]
fn from_dir_reads_tokenizer_config_with_added_token_objects() {
    let added = |s: &str| {
        format!(r#"{{"__type": "AddedToken", "content": "{s}", "lstrip": false, "special": true}}"#)
    };
    let extra = format!(r#", "bos_token": {}, "eos_token": {}"#, added("<s>"), added("</s>"));
    let dir = dir_with("added", &[(TOKENIZER_CONFIG, &tokenizer_config(MISTRAL, &extra))]);
    let t = ChatTemplate::from_dir(&dir).unwrap();
    assert_eq!((t.bos_token(), t.eos_token()), (Some("<s>"), Some("</s>")));
    assert_eq!(t.origin(), dir.join(TOKENIZER_CONFIG));
    let turns = [Message::user("a"), Message::new("assistant", "b")];
    assert_eq!(t.render(&turns, false).unwrap(), "<s>[INST] a [/INST] b</s>");
    // Plain strings, as most configs have them.
    let extra = r#", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>""#;
    let dir = dir_with("strings", &[(TOKENIZER_CONFIG, &tokenizer_config(LLAMA3, extra))]);
    let text = ChatTemplate::from_dir(&dir).unwrap().render(&user("hi"), true).unwrap();
    assert!(text.starts_with("<|begin_of_text|><|start_header_id|>user"), "{text}");
    // A token of another shape is refused, naming the key.
    let dir = dir_with("badtoken", &[(TOKENIZER_CONFIG, &tokenizer_config(CHATML, r#", "eos_token": 7"#))]);
    let msg = ChatTemplate::from_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("tokenizer_config.json") && msg.contains("eos_token is 7"), "{msg}");
}

#[test]
fn chat_template_jinja_wins_over_tokenizer_config() {
    let dir = dir_with(
        "jinja",
        &[
            (TOKENIZER_CONFIG, &tokenizer_config(LLAMA3, r#", "eos_token": "<|im_end|>""#)),
            (TEMPLATE_FILE, CHATML),
        ],
    );
    let t = ChatTemplate::from_dir(&dir).unwrap();
    assert_eq!(t.origin(), dir.join(TEMPLATE_FILE));
    assert_eq!(t.eos_token(), Some("<|im_end|>"), "the tokens still come from tokenizer_config.json");
    assert_eq!(
        t.render(&user("hi"), true).unwrap(),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
    // The file alone, no tokenizer_config.json.
    let dir = dir_with("jinja-alone", &[(TEMPLATE_FILE, CHATML)]);
    assert!(ChatTemplate::from_dir(&dir).unwrap().render(&user("hi"), true).is_ok());
}

#[test]
fn a_list_of_templates_uses_the_default() {
    let list = serde_json::json!({"chat_template": [
        {"name": "tool_use", "template": "TOOLS {{ tools }}"},
        {"name": "default", "template": CHATML},
    ]});
    let dir = dir_with("list", &[(TOKENIZER_CONFIG, &list.to_string())]);
    let text = ChatTemplate::from_dir(&dir).unwrap().render(&user("hi"), true).unwrap();
    assert_eq!(text, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    let list = serde_json::json!({"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "rag", "template": "y"}]});
    let dir = dir_with("nodefault", &[(TOKENIZER_CONFIG, &list.to_string())]);
    let err = ChatTemplate::from_dir(&dir).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ModelError::Config { .. }), "{err:?}");
    assert!(msg.contains("[tool_use, rag]") && msg.contains("\"default\""), "{msg}");
    let dir = dir_with("badlist", &[(TOKENIZER_CONFIG, r#"{"chat_template": [{"name": "default"}]}"#)]);
    let msg = ChatTemplate::from_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("chat_template[0]"), "{msg}");
    let dir = dir_with("number", &[(TOKENIZER_CONFIG, r#"{"chat_template": 3}"#)]);
    let msg = ChatTemplate::from_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("chat_template is 3"), "{msg}");
}

#[test]
fn no_template_says_to_drop_chat() {
    for (test, files) in [
        ("notemplate", vec![(TOKENIZER_CONFIG, r#"{"bos_token": "<s>", "chat_template": null}"#)]),
        ("empty", vec![]),
    ] {
        let dir = dir_with(test, &files);
        let err = ChatTemplate::from_dir(&dir).unwrap_err();
        assert!(matches!(&err, ModelError::NoChatTemplate { path, .. } if *path == dir), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("chat_template.jinja") && msg.contains("drop --chat"), "{msg}");
    }
    let dir = dir_with("badjson", &[(TOKENIZER_CONFIG, "{")]);
    assert!(matches!(ChatTemplate::from_dir(&dir), Err(ModelError::Json { .. })));
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let broken = "{% for message in messages %}\n{{ message.content }}\n{% if %}\n{% endfor %}";
    let dir = dir_with("syntax", &[(TOKENIZER_CONFIG, &tokenizer_config(broken, ""))]);
    let err = ChatTemplate::from_dir(&dir).unwrap_err();
    assert!(matches!(err, ModelError::ChatTemplateSyntax { line: Some(3), .. }), "{err:?}");
    let msg = err.to_string();
    let prefix = format!("{}: chat template line 3: syntax error", dir.join(TOKENIZER_CONFIG).display());
    assert!(msg.starts_with(&prefix), "{msg}");
    let dir = dir_with("syntax-file", &[(TEMPLATE_FILE, "{{ messages[0].content ")]);
    let msg = ChatTemplate::from_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("chat_template.jinja: chat template line 1: syntax error"), "{msg}");
}

/// A GGUF file of metadata only: `tokens`, and then each key with a u32 or string value.
fn gguf_file(test: &str, tokens: &[&str], ints: &[(&str, u32)], strs: &[(&str, &str)]) -> PathBuf {
    fn string(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&(s.len() as u64).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&((1 + ints.len() + strs.len()) as u64).to_le_bytes());
    string(&mut b, "tokenizer.ggml.tokens");
    b.extend_from_slice(&9u32.to_le_bytes()); // array
    b.extend_from_slice(&8u32.to_le_bytes()); // of strings
    b.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
    for t in tokens {
        string(&mut b, t);
    }
    for (k, v) in ints {
        string(&mut b, k);
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&v.to_le_bytes());
    }
    for (k, v) in strs {
        string(&mut b, k);
        b.extend_from_slice(&8u32.to_le_bytes());
        string(&mut b, v);
    }
    let path = std::env::temp_dir().join(format!("rlx-chat-{test}-{}.gguf", std::process::id()));
    std::fs::write(&path, b).unwrap();
    path
}

const QWEN_TOKENS: [&str; 4] = ["hi", "<|endoftext|>", "<|im_start|>", "<|im_end|>"];

#[test]
fn gguf_metadata_gives_the_template_and_its_tokens() {
    let ints = [("tokenizer.ggml.bos_token_id", 1), ("tokenizer.ggml.eos_token_id", 3)];
    let path = gguf_file("gguf", &QWEN_TOKENS, &ints, &[(GGUF_TEMPLATE_KEY, QWEN25)]);
    let t = ChatTemplate::from_gguf(&GgufFile::open(&path).unwrap()).unwrap();
    assert_eq!((t.bos_token(), t.eos_token()), (Some("<|endoftext|>"), Some("<|im_end|>")));
    assert_eq!(t.origin(), path);
    assert!(t
        .render(&user("hi"), true)
        .unwrap()
        .ends_with("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    // llama.cpp ends a generation at eos and at eot.
    assert_eq!(stop_tokens(&path).unwrap(), [3]);
    let ints = [("tokenizer.ggml.eos_token_id", 1), ("tokenizer.ggml.eot_token_id", 3)];
    let path = gguf_file("gguf-eot", &QWEN_TOKENS, &ints, &[(GGUF_TEMPLATE_KEY, CHATML)]);
    assert_eq!(stop_tokens(&path).unwrap(), [1, 3]);
}

#[test]
fn gguf_findings() {
    let ints = [("tokenizer.ggml.eos_token_id", 3)];
    let path = gguf_file("gguf-none", &QWEN_TOKENS, &ints, &[]);
    let err = ChatTemplate::from_gguf(&GgufFile::open(&path).unwrap()).unwrap_err();
    assert!(matches!(&err, ModelError::NoChatTemplate { path: p, .. } if *p == path), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(GGUF_TEMPLATE_KEY) && msg.contains("drop --chat"), "{msg}");
    let ints = [("tokenizer.ggml.eos_token_id", 9)];
    let path = gguf_file("gguf-range", &QWEN_TOKENS, &ints, &[(GGUF_TEMPLATE_KEY, CHATML)]);
    let msg = ChatTemplate::from_gguf(&GgufFile::open(&path).unwrap()).unwrap_err().to_string();
    assert!(msg.contains("tokenizer.ggml.eos_token_id") && msg.contains("not below the 4 tokens"), "{msg}");
    let path = gguf_file("gguf-syntax", &QWEN_TOKENS, &[], &[(GGUF_TEMPLATE_KEY, "{% if %}")]);
    let err = ChatTemplate::from_gguf(&GgufFile::open(&path).unwrap()).unwrap_err();
    assert!(matches!(err, ModelError::ChatTemplateSyntax { line: Some(1), .. }), "{err:?}");
}
