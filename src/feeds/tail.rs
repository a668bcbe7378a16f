//! Reading only what was appended to a JSON-lines file, with a bounded memory.
//!
//! Transcripts and rollouts grow to many megabytes and there are thousands of them; trackers that
//! re-read them on every change have leaked gigabytes. A [`TailReader`] keeps one offset per file
//! and reads only the bytes after it, so a line appended costs about its own length to read.
//!
//! - **A partial last line** (the writer is mid-`write`) is kept until its newline arrives, and the
//!   kept part is bounded by [`MAX_LINE`]: a line longer than that is skipped whole (counted), by
//!   discarding bytes until its newline — it is never buffered, so a 5 MB tool result cannot
//!   balloon the process.
//! - **A file that shrank or was replaced** (size below the offset, or another inode at the path)
//!   is reported as [`Appended::Reset`]; the caller then re-reads only the file's last window (see
//!   [`read_last_lines`]) rather than all of it from 0: these files are append-only, so a shrink
//!   means someone rewrote or rotated it, its old lines were already seen or are history, and
//!   replaying a rewritten file from the start could cost hundreds of MB for nothing. The last
//!   window gives the newest state, which is all a tracker needs.
//! - **First sight of an old big file** reads only its last window too, never the whole file.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// The longest line kept. Longer lines (a huge tool result, an image in base64) are skipped and
/// counted; they carry no state a tracker needs that the next line does not also carry.
pub const MAX_LINE: usize = 1024 * 1024;

/// How much of a file's end first sight reads.
pub const DISCOVERY_WINDOW: u64 = 64 * 1024;

/// How far first sight widens its window when the last 64 KiB hold no complete useful line (one
/// huge last line).
pub const MAX_DISCOVERY_WINDOW: u64 = 1024 * 1024;

/// The size of one read.
const CHUNK: usize = 64 * 1024;

/// Where a file stands, for telling growth from a rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
}

impl FileIdentity {
    /// The identity of `file`, whose metadata `meta` the caller already read (on unix it is all
    /// that is needed; Windows asks the open file).
    pub fn of(file: &File, meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let id = {
            let _ = file;
            crate::os_fs::FileId::of_unix_metadata(meta)
        };
        #[cfg(not(unix))]
        let id = {
            let _ = meta;
            crate::os_fs::FileId::of_file(file).unwrap_or(crate::os_fs::FileId {
                volume: u64::MAX,
                index: u64::MAX,
            })
        };
        FileIdentity {
            dev: id.volume,
            ino: id.index,
        }
    }
}

/// What [`TailReader::read_appended`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Appended {
    /// Bytes read from the file.
    pub bytes_read: u64,
    /// Complete lines handed to the callback.
    pub lines: u64,
    /// Lines skipped for being longer than [`MAX_LINE`].
    pub oversized: u64,
    /// The file shrank or was replaced: nothing was read, the caller should rediscover it.
    pub reset: bool,
}

/// One file's read position and its unfinished last line.
#[derive(Debug, Clone)]
pub struct TailReader {
    offset: u64,
    identity: Option<FileIdentity>,
    partial: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`]: discard until its newline.
    skipping: bool,
}

impl TailReader {
    /// A reader that will start at `offset` (the end of the last complete line already seen).
    pub fn at(offset: u64, identity: Option<FileIdentity>) -> Self {
        TailReader {
            offset,
            identity,
            partial: Vec::new(),
            skipping: false,
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes held for an unfinished line (bounded by [`MAX_LINE`]).
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Reads what was appended since the last call, handing each complete line (without its
    /// newline) to `on_line`. Reads to the end of the file as it is now.
    pub fn read_appended(
        &mut self,
        file: &mut File,
        meta: &std::fs::Metadata,
        on_line: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Appended> {
        let identity = FileIdentity::of(file, meta);
        let mut out = Appended::default();
        if self.identity.is_some_and(|id| id != identity) || meta.len() < self.offset {
            out.reset = true;
            return Ok(out);
        }
        self.identity = Some(identity);
        if meta.len() == self.offset {
            return Ok(out);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            out.bytes_read += n as u64;
            self.offset += n as u64;
            self.feed(&buf[..n], &mut out, on_line);
        }
        Ok(out)
    }

    /// Splits a chunk into lines, carrying the unfinished end over to the next chunk.
    fn feed(&mut self, mut chunk: &[u8], out: &mut Appended, on_line: &mut dyn FnMut(&[u8])) {
        while let Some(pos) = chunk.iter().position(|b| *b == b'\n') {
            let (head, rest) = (&chunk[..pos], &chunk[pos + 1..]);
            chunk = rest;
            if self.skipping {
                self.skipping = false;
                out.oversized += 1;
                continue;
            }
            if self.partial.is_empty() {
                if head.len() > MAX_LINE {
                    out.oversized += 1;
                } else {
                    out.lines += 1;
                    on_line(head);
                }
            } else if self.partial.len() + head.len() > MAX_LINE {
                self.partial.clear();
                out.oversized += 1;
            } else {
                self.partial.extend_from_slice(head);
                let line = std::mem::take(&mut self.partial);
                out.lines += 1;
                on_line(&line);
            }
        }
        if chunk.is_empty() || self.skipping {
            return;
        }
        if self.partial.len() + chunk.len() > MAX_LINE {
            // Never buffer an oversized line: drop what we hold and skip to its newline.
            self.partial = Vec::new();
            self.skipping = true;
        } else {
            self.partial.extend_from_slice(chunk);
        }
    }
}

/// What first sight of a file read from its end.
#[derive(Debug)]
pub struct LastLines {
    /// Complete lines, oldest first.
    pub lines: Vec<Vec<u8>>,
    /// Where a [`TailReader`] should go on from: the end of the last complete line.
    pub resume_at: u64,
    pub bytes_read: u64,
    pub identity: FileIdentity,
}

/// Reads the complete lines in the last `window` bytes of `file` (the first, cut line dropped).
pub fn read_last_lines(
    file: &mut File,
    meta: &std::fs::Metadata,
    window: u64,
) -> io::Result<LastLines> {
    let size = meta.len();
    let start = size.saturating_sub(window);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(usize::try_from(size - start).unwrap_or(0));
    file.take(size - start).read_to_end(&mut buf)?;
    let bytes_read = buf.len() as u64;
    let mut body: &[u8] = &buf;
    if start > 0 {
        // The window began inside a line: that line is not whole.
        match body.iter().position(|b| *b == b'\n') {
            Some(pos) => body = &body[pos + 1..],
            None => body = &[],
        }
    }
    let last_newline = body.iter().rposition(|b| *b == b'\n');
    let complete = match last_newline {
        Some(pos) => &body[..pos],
        None => &[][..],
    };
    let resume_at = match last_newline {
        Some(pos) => size - (body.len() - pos - 1) as u64,
        // No complete line in the window: go on from where the window's lines begin, or from the
        // end if even that is unknown (a single line longer than the window is being written).
        None => size - body.len() as u64,
    };
    let lines = if last_newline.is_some() {
        complete
            .split(|b| *b == b'\n')
            .filter(|l| l.len() <= MAX_LINE)
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        Vec::new()
    };
    Ok(LastLines {
        lines,
        resume_at,
        bytes_read,
        identity: FileIdentity::of(file, meta),
    })
}

/// Reads the first line of a file (a Codex rollout's `session_meta`), up to [`MAX_LINE`].
pub fn read_first_line(file: &mut File) -> io::Result<Option<(Vec<u8>, u64)>> {
    file.seek(SeekFrom::Start(0))?;
    let mut line = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut read = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        read += n as u64;
        if let Some(pos) = buf[..n].iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&buf[..pos]);
            return Ok(Some((line, read)));
        }
        line.extend_from_slice(&buf[..n]);
        if line.len() > MAX_LINE {
            return Ok(None);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &std::path::Path, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    fn read(reader: &mut TailReader, path: &std::path::Path) -> (Vec<String>, Appended) {
        let mut f = File::open(path).unwrap();
        let meta = f.metadata().unwrap();
        let mut lines = Vec::new();
        let out = reader
            .read_appended(&mut f, &meta, &mut |l| {
                lines.push(String::from_utf8_lossy(l).into_owned())
            })
            .unwrap();
        (lines, out)
    }

    #[test]
    fn only_appended_bytes_are_read_and_a_partial_line_waits_for_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        append(&p, b"one\ntw");
        let mut r = TailReader::at(0, None);
        let (lines, out) = read(&mut r, &p);
        assert_eq!(lines, ["one"]);
        assert_eq!(out.bytes_read, 6);
        append(&p, b"o\nthree\n");
        let (lines, out) = read(&mut r, &p);
        assert_eq!(lines, ["two", "three"]);
        assert_eq!(out.bytes_read, 8, "only the appended bytes were read");
        let (lines, out) = read(&mut r, &p);
        assert!(lines.is_empty());
        assert_eq!(out.bytes_read, 0);
    }

    #[test]
    fn a_line_of_five_megabytes_is_skipped_without_being_buffered_and_the_rest_is_read() {
        // A tool result holding a whole file, written in pieces across several reads.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        append(&p, b"before\n");
        let big = vec![b'x'; 5 * 1024 * 1024];
        append(&p, &big[..3 * 1024 * 1024]);
        let mut r = TailReader::at(0, None);
        let (lines, _) = read(&mut r, &p);
        assert_eq!(lines, ["before"]);
        assert!(r.buffered() <= MAX_LINE, "never buffers past the cap");
        append(&p, &big[3 * 1024 * 1024..]);
        append(&p, b"\nafter\n");
        let (lines, out) = read(&mut r, &p);
        assert_eq!(lines, ["after"]);
        assert_eq!(out.oversized, 1);
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn a_file_that_shrank_or_was_replaced_asks_to_be_rediscovered() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        append(&p, b"one\ntwo\n");
        let mut r = TailReader::at(0, None);
        read(&mut r, &p);
        std::fs::write(&p, b"x\n").unwrap();
        let (lines, out) = read(&mut r, &p);
        assert!(out.reset && lines.is_empty());
        // Rotation: a new file at the same path, even a longer one.
        let mut r = TailReader::at(0, None);
        read(&mut r, &p);
        let q = dir.path().join("new.jsonl");
        std::fs::write(&q, b"aaaaaaaaaaaaaaaa\n").unwrap();
        std::fs::rename(&q, &p).unwrap();
        let (_, out) = read(&mut r, &p);
        assert!(out.reset);
    }

    #[test]
    fn first_sight_reads_only_the_last_window_and_drops_the_cut_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut text = String::new();
        for i in 0..10_000 {
            text.push_str(&format!("line {i:05}\n"));
        }
        text.push_str("unfinished");
        std::fs::write(&p, &text).unwrap();
        let mut f = File::open(&p).unwrap();
        let meta = f.metadata().unwrap();
        let last = read_last_lines(&mut f, &meta, 1000).unwrap();
        assert_eq!(last.bytes_read, 1000);
        assert_eq!(last.lines.last().unwrap(), b"line 09999");
        assert!(last.lines.iter().all(|l| l.starts_with(b"line ")));
        assert_eq!(last.resume_at, meta.len() - "unfinished".len() as u64);
        // Going on from there picks up the unfinished line once it is done.
        let mut r = TailReader::at(last.resume_at, Some(last.identity));
        append(&p, b" now\n");
        let (lines, _) = read(&mut r, &p);
        assert_eq!(lines, ["unfinished now"]);
    }

    #[test]
    fn the_first_line_is_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let mut f = File::open(&p).unwrap();
        let (line, _) = read_first_line(&mut f).unwrap().unwrap();
        assert_eq!(line, b"{\"a\":1}");
        std::fs::write(&p, b"no newline yet").unwrap();
        let mut f = File::open(&p).unwrap();
        assert!(read_first_line(&mut f).unwrap().is_none());
    }
}
