//! A local stand-in for the Hugging Face hub: an HTTP/1.1 server on 127.0.0.1 serving the hub's
//! URL layout for the repos it is given, with faults to order, for the download tests.
//!
//! - `GET /api/models/{owner}/{name}/revision/{rev}` lists the repo (`sha` and `siblings`
//!   with `size`, `blobId` and, for LFS files, `lfs.sha256`/`lfs.size`); an unknown repo or
//!   revision is 404.
//! - `GET /{owner}/{name}/resolve/{rev}/{file}` serves a file with `ETag` (the sha256 of an
//!   LFS file, the git blob sha1 of another), `X-Repo-Commit` and, for a `Range` request,
//!   206 with `Content-Range`; an unknown file is 404.
//!
//! Every connection is answered and closed (`Connection: close`); the accept loop ends after
//! [`MAX_CONNECTIONS`], so a test that forgets the server leaves no endless thread.

use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// Most connections one server answers.
pub const MAX_CONNECTIONS: usize = 2000;

/// One file of a repo.
#[derive(Clone, Debug)]
pub struct HubFile {
    pub path: String,
    pub data: Vec<u8>,
    /// Stored in LFS (listed with `lfs.sha256`, etag = sha256) rather than in git.
    pub lfs: bool,
}

/// A repo at one commit.
#[derive(Clone, Debug)]
pub struct HubRepo {
    pub id: String,
    pub commit: String,
    pub files: Vec<HubFile>,
}

/// Faults the server injects.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Every request without `Authorization: Bearer {token}` gets 401.
    pub require_token: Option<String>,
    /// The first `n` body downloads of this file send half the body, then close.
    pub cut: Option<(String, usize)>,
    /// The first `n` body downloads of this file send half the body as if it were all of it
    /// (a matching `Content-Length`), so only the size check can see it.
    pub short: Option<(String, usize)>,
    /// This file is served with one byte flipped (its listing and etag stay those of the good
    /// bytes).
    pub corrupt: Option<String>,
    /// Listed, but 404 when downloaded.
    pub unserved: Option<String>,
}

/// One request as the server saw it: the path and the `Range` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
}

/// A running server: its root URL and the requests so far.
pub struct HubServer {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of `data`, lowercase hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The git blob id of `data` (sha1 of `blob {len}\0` and the bytes).
pub fn git_blob_id(data: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", data.len()).as_bytes());
    h.update(data);
    hex(&h.finalize())
}

impl HubFile {
    fn etag(&self) -> String {
        if self.lfs {
            sha256_hex(&self.data)
        } else {
            git_blob_id(&self.data)
        }
    }
}

/// Starts a server for `repos` with `faults`.
pub fn serve(repos: Vec<HubRepo>, faults: Faults) -> HubServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("binding 127.0.0.1:0: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut cuts = 0usize;
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(s) = stream else { continue };
            answer(s, &repos, &faults, &log, &mut cuts);
        }
    });
    HubServer { url: format!("http://127.0.0.1:{port}"), seen }
}

fn respond(s: &mut TcpStream, status: &str, headers: &[(String, String)], body: &[u8], send: usize) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(&body[..send.min(body.len())]);
    let _ = s.flush();
}

fn answer(mut s: TcpStream, repos: &[HubRepo], faults: &Faults, log: &Mutex<Vec<Seen>>, cuts: &mut usize) {
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 65536 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&req).into_owned();
    let target = text.split(' ').nth(1).unwrap_or("").to_string();
    let path = target.split('?').next().unwrap_or("").to_string();
    let header = |name: &str| {
        text.lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.trim().to_string())
    };
    let range = header("range");
    if let Ok(mut l) = log.lock() {
        l.push(Seen { path: path.clone(), range: range.clone() });
    }
    let not_found = |s: &mut TcpStream, code: &str| {
        let h = [("X-Error-Code".to_string(), code.to_string())];
        respond(s, "404 Not Found", &h, b"{\"error\":\"not found\"}", usize::MAX);
    };
    if let Some(token) = &faults.require_token {
        if header("authorization").as_deref() != Some(format!("Bearer {token}").as_str()) {
            respond(&mut s, "401 Unauthorized", &[], b"{\"error\":\"Invalid credentials\"}", usize::MAX);
            return;
        }
    }
    if let Some(rest) = path.strip_prefix("/api/models/") {
        let Some((id, rev)) = rest.split_once("/revision/") else { return not_found(&mut s, "RepoNotFound") };
        let Some(repo) = repos.iter().find(|r| r.id == id && (rev == "main" || rev == r.commit)) else {
            return not_found(&mut s, "RepoNotFound");
        };
        let siblings: Vec<String> = repo
            .files
            .iter()
            .map(|f| {
                let lfs = if f.lfs {
                    format!(
                        ",\"lfs\":{{\"sha256\":\"{}\",\"size\":{},\"pointerSize\":134}}",
                        f.etag(),
                        f.data.len()
                    )
                } else {
                    String::new()
                };
                format!(
                    "{{\"rfilename\":\"{}\",\"size\":{},\"blobId\":\"{}\"{lfs}}}",
                    f.path,
                    f.data.len(),
                    git_blob_id(&f.data)
                )
            })
            .collect();
        let doc = format!(
            "{{\"id\":\"{}\",\"sha\":\"{}\",\"siblings\":[{}]}}",
            repo.id,
            repo.commit,
            siblings.join(",")
        );
        return respond(
            &mut s,
            "200 OK",
            &[("Content-Type".into(), "application/json".into())],
            doc.as_bytes(),
            usize::MAX,
        );
    }
    let Some((id, rest)) = path.trim_start_matches('/').split_once("/resolve/") else {
        return not_found(&mut s, "RepoNotFound");
    };
    let Some(repo) = repos.iter().find(|r| r.id == id) else { return not_found(&mut s, "RepoNotFound") };
    let Some((rev, file)) = rest.split_once('/') else { return not_found(&mut s, "EntryNotFound") };
    if rev != "main" && rev != repo.commit {
        return not_found(&mut s, "RevisionNotFound");
    }
    let Some(f) = repo.files.iter().find(|f| f.path == file) else {
        return not_found(&mut s, "EntryNotFound");
    };
    if faults.unserved.as_deref() == Some(file) {
        return not_found(&mut s, "EntryNotFound");
    }
    let mut data = f.data.clone();
    if faults.corrupt.as_deref() == Some(file) {
        if let Some(b) = data.last_mut() {
            *b ^= 0x5a;
        }
    }
    let total = data.len();
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let end = match range.as_deref().and_then(|r| r.rsplit('-').next()).filter(|e| !e.is_empty()) {
        Some(e) => e.parse::<usize>().map(|e| e + 1).unwrap_or(total),
        None => total,
    }
    .min(total);
    let mut headers = vec![
        ("ETag".to_string(), format!("\"{}\"", f.etag())),
        ("X-Repo-Commit".to_string(), repo.commit.clone()),
    ];
    let body = data.get(start..end.max(start)).unwrap_or(&[]).to_vec();
    let metadata_probe = range.as_deref() == Some("bytes=0-0");
    let mut body = body;
    if let Some((short_file, times)) = &faults.short {
        if short_file == file && !metadata_probe && *cuts < *times {
            *cuts += 1;
            body.truncate(body.len() / 2);
        }
    }
    let mut send = body.len();
    if let Some((cut_file, times)) = &faults.cut {
        if cut_file == file && !metadata_probe && *cuts < *times {
            *cuts += 1;
            send = body.len() / 2;
        }
    }
    if range.is_some() {
        headers.push(("Content-Range".to_string(), format!("bytes {start}-{}/{total}", end.max(1) - 1)));
        respond(&mut s, "206 Partial Content", &headers, &body, send);
    } else {
        respond(&mut s, "200 OK", &headers, &body, send);
    }
}
