//! Files that cross between the bridge's machine and the browser's.
//!
//! With a relay, the MCP host (and the bridge beside it) and the browser are often on
//! different machines, so a path means something only where the bridge runs. Uploads
//! therefore read the files here and carry their bytes to the page inside the request
//! (base64 in JSON), which the relay caps at its `--max-message-bytes`; the bridge checks the
//! same budget first, so an upload too large is refused with a sentence naming the sizes
//! rather than by the relay closing the socket. PDFs and downloads go the other way and are
//! written here, never over an existing file; so is an answer a model asked to have saved
//! (`filename`), which may replace only a file this session itself wrote.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine;
use serde_json::{json, Value};

/// Room in the request for everything but the files' base64: the JSON-RPC envelope, the
/// relay's routing fields, names and MIME types.
const ENVELOPE_BYTES: usize = 4096;

/// Reads `paths` and returns the extension's `files` param (`{name, mimeType, data}`), or
/// a sentence saying why not: a path that cannot be read, or bytes beyond `max_message_bytes`
/// (0 = no limit).
pub(crate) fn read_upload(
    paths: &[String],
    max_message_bytes: usize,
) -> Result<Vec<Value>, String> {
    let mut sizes = Vec::with_capacity(paths.len());
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("cannot read {path} on the bridge's machine: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{path} is not a file"));
        }
        sizes.push(meta.len() as usize);
    }
    let encoded: usize = sizes.iter().map(|&n| base64_len(n)).sum();
    let names: usize = paths.iter().map(|p| p.len() + 64).sum();
    let needed = encoded + names + ENVELOPE_BYTES;
    if max_message_bytes != 0 && needed > max_message_bytes {
        let on_disk: usize = sizes.iter().sum();
        return Err(format!(
            "the files are too large to carry to the browser: {on_disk} bytes ({needed} bytes \
             as base64 in one message), above the {max_message_bytes}-byte message limit \
             (--max-message-bytes). Upload fewer or smaller files, or raise --max-message-bytes \
             on both the bridge and the relay"
        ));
    }
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path)
                .map_err(|e| format!("cannot read {path} on the bridge's machine: {e}"))?;
            let name = Path::new(path)
                .file_name()
                .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
            Ok(json!({
                "name": name,
                "mimeType": mime_type(&name),
                "data": base64::engine::general_purpose::STANDARD.encode(&bytes),
            }))
        })
        .collect()
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// The page sees this as `File.type`; unknown extensions are plain bytes, as a browser's own
/// file chooser would leave them.
fn mime_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("txt") => "text/plain",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("zip") => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Writes the extension's base64 PDF where the bridge runs: at `filename` when given, else a
/// new file in the system's temporary directory (see [`Written::save`] for both).
pub(crate) fn save_pdf(
    data: &str,
    filename: Option<&str>,
    written: &Written,
) -> Result<(PathBuf, usize), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("the extension's PDF was not base64: {e}"))?;
    let path = match filename {
        Some(name) => written.save(name, &bytes)?,
        None => written.save_at(
            std::env::temp_dir().join(format!(
                "mcp-relay-page-{}.pdf",
                chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
            )),
            &bytes,
        )?,
    };
    Ok((path, bytes.len()))
}

/// The files a model named (`filename`) that this session wrote.
///
/// Playwright MCP writes over whatever is at the name it is given; here a model's file name
/// may replace only a file this session wrote itself, so a model that saves `snapshot.md`
/// after every step keeps working while the person's own files are never touched.
#[derive(Default)]
pub(crate) struct Written(Mutex<HashSet<PathBuf>>);

impl Written {
    /// Writes `bytes` at `name` (a relative name under the bridge's working directory, as for
    /// any program the host starts), creating its directory, and answers the absolute path.
    pub(crate) fn save(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
        if name.trim().is_empty() {
            return Err(
                "\"filename\" is empty: give a file name, or leave it out to have the \
                        answer returned"
                    .into(),
            );
        }
        let path = std::path::absolute(name)
            .map_err(|e| format!("cannot use {name:?} as a file name here: {e}"))?;
        self.save_at(path, bytes)
    }

    /// Writes `bytes` at the absolute `path` by the same rules as [`Written::save`].
    pub(crate) fn save_at(&self, path: PathBuf, bytes: &[u8]) -> Result<PathBuf, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "cannot create {} on the bridge's machine: {e}",
                    dir.display()
                )
            })?;
        }
        let ours = self.0.lock().unwrap().contains(&path);
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        if ours {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let mut file = options.open(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                format!(
                    "{} already exists on the machine where the bridge runs, and the bridge \
                     writes over no file it did not write in this session: choose another \
                     filename",
                    path.display()
                )
            } else {
                format!(
                    "cannot create {} on the bridge's machine: {e}",
                    path.display()
                )
            }
        })?;
        std::io::Write::write_all(&mut file, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        self.0.lock().unwrap().insert(path.clone());
        Ok(path)
    }
}

/// The page's name for a download, made safe as one file name here: no directories, no
/// leading dots, no control characters.
pub(crate) fn safe_file_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_control() || ":*?\"<>|".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').to_owned();
    if cleaned.is_empty() {
        "download".into()
    } else {
        cleaned
    }
}

/// Writes a download's base64 bytes in `dir` (created if needed) under its own name, or
/// `name (1).ext`, `name (2).ext`, … when that exists: an existing file is never replaced.
pub(crate) fn save_download(
    dir: &Path,
    name: &str,
    data: &str,
) -> Result<(PathBuf, usize), String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("the extension's download was not base64: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "cannot create {} on the bridge's machine: {e}",
            dir.display()
        )
    })?;
    let name = safe_file_name(name);
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
        _ => (name.clone(), String::new()),
    };
    for n in 0..10_000 {
        let candidate = if n == 0 {
            dir.join(&name)
        } else {
            dir.join(format!("{stem} ({n}){extension}"))
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut file) => {
                std::io::Write::write_all(&mut file, &bytes)
                    .map_err(|e| format!("cannot write {}: {e}", candidate.display()))?;
                return Ok((candidate, bytes.len()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create {} on the bridge's machine: {e}",
                    candidate.display()
                ))
            }
        }
    }
    Err(format!(
        "{} holds too many files named {name}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn downloads_are_saved_under_their_name_and_never_over_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let (first, size) = save_download(dir.path(), "report.csv", "YSxiCg==").unwrap();
        assert_eq!((first.clone(), size), (dir.path().join("report.csv"), 4));
        assert_eq!(std::fs::read(&first).unwrap(), b"a,b\n");
        let (second, _) = save_download(dir.path(), "report.csv", "eA==").unwrap();
        assert_eq!(second, dir.path().join("report (1).csv"));
        assert_eq!(std::fs::read(&first).unwrap(), b"a,b\n");
        let (odd, _) = save_download(dir.path(), "../../etc/.passwd", "eA==").unwrap();
        assert_eq!(odd, dir.path().join("passwd"));
        let (bare, _) = save_download(dir.path(), "", "eA==").unwrap();
        assert_eq!(bare, dir.path().join("download"));
    }

    use super::*;

    #[test]
    fn uploads_carry_names_types_and_exact_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"\x00\xffhello").unwrap();
        let files = read_upload(&[path.to_string_lossy().into_owned()], 0).unwrap();
        assert_eq!(files[0]["name"], "notes.txt");
        assert_eq!(files[0]["mimeType"], "text/plain");
        assert_eq!(files[0]["data"], "AP9oZWxsbw==");
    }

    #[test]
    fn uploads_above_the_message_limit_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        std::fs::write(&path, vec![7u8; 30_000]).unwrap();
        let err = read_upload(&[path.to_string_lossy().into_owned()], 20_000).unwrap_err();
        assert!(
            err.contains("30000 bytes") && err.contains("--max-message-bytes"),
            "{err}"
        );
        let missing = read_upload(&["/nonexistent/x".into()], 0).unwrap_err();
        assert!(missing.contains("bridge's machine"), "{missing}");
    }

    #[test]
    fn pdfs_are_saved_without_overwriting_a_file_this_session_did_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page.pdf");
        let name = path.to_string_lossy().into_owned();
        let written = Written::default();
        let (saved, size) = save_pdf("JVBERi0=", Some(&name), &written).unwrap();
        assert_eq!((saved, size), (path.clone(), 5));
        assert_eq!(std::fs::read(&path).unwrap(), b"%PDF-");
        // Its own file again: replaced.
        save_pdf("JVBERi0x", Some(&name), &written).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"%PDF-1");
        // Another session's (or the person's) file: refused, and left as it was.
        let err = save_pdf("JVBERi0=", Some(&name), &Written::default()).unwrap_err();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"%PDF-1");
        // Without a name: a new file in the temporary directory.
        let (temp, _) = save_pdf("JVBERi0=", None, &written).unwrap();
        assert_eq!(temp.parent(), Some(std::env::temp_dir().as_path()));
        assert!(temp
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("mcp-relay-page-"));
        assert_eq!(std::fs::read(&temp).unwrap(), b"%PDF-");
        std::fs::remove_file(temp).unwrap();
    }

    #[test]
    fn a_named_answer_is_saved_in_new_directories_and_never_over_the_persons_file() {
        let dir = tempfile::tempdir().unwrap();
        let written = Written::default();
        let nested = dir.path().join("out/pages/snapshot.md");
        let saved = written
            .save(&nested.to_string_lossy(), b"- heading \"A\"\n")
            .unwrap();
        assert_eq!(saved, nested);
        assert_eq!(std::fs::read(&nested).unwrap(), b"- heading \"A\"\n");
        written.save(&nested.to_string_lossy(), b"second").unwrap();
        assert_eq!(std::fs::read(&nested).unwrap(), b"second");

        let persons = dir.path().join("notes.txt");
        std::fs::write(&persons, b"mine").unwrap();
        let err = written
            .save(&persons.to_string_lossy(), b"theirs")
            .unwrap_err();
        assert!(
            err.contains("already exists") && err.contains("another filename"),
            "{err}"
        );
        assert_eq!(std::fs::read(&persons).unwrap(), b"mine");
        assert!(written.save("  ", b"x").unwrap_err().contains("empty"));
    }
}
