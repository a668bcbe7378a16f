//! Lines read from a stream another program writes, each bounded: never more than a limit of one
//! line is held; past it, the rest of the line is read and dropped, and the reader says so.
//!
//! Why it exists: the control server (a line from any local client, bounded to the control
//! protocol's `MAX_LINE`) and each remote link (a line from a remote's `watch`, bounded to the
//! wire's `MAX_REMOTE_LINE`) read the same way and once had a copy of this loop each. One copy
//! means one place where a bound can be got wrong.
//!
//! [`BoundedLine::read`] is cancel-safe (a link reads inside `select!` beside its timers, the
//! server beside its deadlines): what it has read of a line stays in the [`BoundedLine`] until the
//! line is whole. A caller that wants a cancelled read forgotten says so
//! ([`BoundedLine::start_over`]). A caller may also gate long lines ([`BoundedLine::with_gate`]):
//! a line that grows past a size is read on only while holding a permit of a semaphore it gives,
//! so many readers each sending a long line cost one such line's memory at a time.
//!
//! A leaf: std and tokio only.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{Semaphore, SemaphorePermit};

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A whole line (with its newline, unless the input ended first): [`BoundedLine::bytes`].
    Line,
    /// A line longer than the limit, read to its end and dropped.
    TooLong,
    /// The input ended with no line begun.
    Eof,
}

/// A held buffer larger than this is given back when the next line starts.
const KEEP_CAPACITY: usize = 1 << 20;

/// A line that grows past `from` bytes is read on only while holding one of `permits`.
#[derive(Debug, Clone, Copy)]
struct LongLineGate {
    from: usize,
    permits: &'static Semaphore,
}

/// One line at a time from a buffered reader, never more than `limit` bytes of it held.
#[derive(Debug)]
pub struct BoundedLine {
    limit: usize,
    /// The line so far; whole once `read` returned `Line`.
    buf: Vec<u8>,
    too_long: bool,
    /// The last `read` finished a line: the next call starts a new one.
    done: bool,
    gate: Option<LongLineGate>,
    permit: Option<SemaphorePermit<'static>>,
}

impl BoundedLine {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            buf: Vec::new(),
            too_long: false,
            done: false,
            gate: None,
            permit: None,
        }
    }

    /// Reads on past `from` bytes of a line only while holding one of `permits`; the permit goes
    /// with the line ([`BoundedLine::take_permit`]) until the next one starts.
    pub fn with_gate(mut self, from: usize, permits: &'static Semaphore) -> Self {
        self.gate = Some(LongLineGate { from, permits });
        self
    }

    /// Forgets what was read of the current line: the next `read` starts a new one where the
    /// reader is.
    pub fn start_over(&mut self) {
        self.done = true;
    }

    /// Reads from `reader` until the line is whole, too long (and read to its end), or the
    /// input ends. Cancel-safe.
    pub async fn read<R: AsyncBufRead + Unpin>(&mut self, reader: &mut R) -> io::Result<LineRead> {
        if self.done {
            self.done = false;
            self.too_long = false;
            self.buf.clear();
            if self.buf.capacity() > KEEP_CAPACITY {
                self.buf = Vec::new();
            }
            self.permit = None;
        }
        loop {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                self.done = true;
                return Ok(match (self.too_long, self.buf.is_empty()) {
                    (true, _) => LineRead::TooLong,
                    (false, true) => LineRead::Eof,
                    (false, false) => LineRead::Line,
                });
            }
            let (used, newline) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            let grown = self.buf.len() + used;
            if let Some(gate) = self.gate {
                if !self.too_long
                    && grown > gate.from
                    && grown <= self.limit
                    && self.permit.is_none()
                {
                    // Nothing of this chunk is taken until the permit is held: cancelled here,
                    // the next call reads the same bytes again.
                    match gate.permits.acquire().await {
                        Ok(permit) => self.permit = Some(permit),
                        Err(_) => return Err(io::Error::other("long-line permits closed")),
                    }
                    continue;
                }
            }
            if !self.too_long {
                if grown > self.limit {
                    self.too_long = true;
                    self.buf = Vec::new();
                    self.permit = None;
                } else {
                    self.buf.extend_from_slice(&available[..used]);
                }
            }
            reader.consume(used);
            if newline {
                self.done = true;
                return Ok(if self.too_long {
                    LineRead::TooLong
                } else {
                    LineRead::Line
                });
            }
        }
    }

    /// The line so far: the whole line once `read` returned `Line`.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The whole line `read` just returned, its buffer given up (a long line is not kept).
    pub fn take(&mut self) -> Vec<u8> {
        self.done = true;
        std::mem::take(&mut self.buf)
    }

    /// The gate's permit that came with the line just read, if it needed one: the caller holds
    /// it while it works on the line.
    pub fn take_permit(&mut self) -> Option<SemaphorePermit<'static>> {
        self.permit.take()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::BufReader;

    // The link reads lines inside `select!` beside timers that fire mid-line (publication,
    // linger, the read budget): a read cut short must lose nothing of the line it was in.
    #[tokio::test]
    async fn a_line_read_across_cancelled_reads_arrives_whole() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let sent: Vec<String> = (0..20)
            .map(|i| format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "y".repeat(300 + i * 37)))
            .collect();
        let to_send = sent.clone();
        let feeder = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for line in to_send {
                for piece in line.as_bytes().chunks(50) {
                    writer.write_all(piece).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        });
        let mut reader = BufReader::with_capacity(16, reader);
        let mut line = BoundedLine::new(4096);
        let mut got = Vec::new();
        let mut cut_short = 0;
        loop {
            tokio::select! {
                read = line.read(&mut reader) => match read.unwrap() {
                    LineRead::Line => got.push(String::from_utf8(line.take()).unwrap()),
                    LineRead::TooLong => panic!("no line here is too long"),
                    LineRead::Eof => break,
                },
                () = tokio::time::sleep(Duration::from_micros(300)) => cut_short += 1,
            }
        }
        feeder.await.unwrap();
        assert!(
            cut_short > 10,
            "reads were cut short mid-line ({cut_short})"
        );
        assert_eq!(got, sent);
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_skipped_and_the_next_one_read() {
        let text = format!("{}\nshort\n", "x".repeat(5000));
        let mut reader = BufReader::with_capacity(64, text.as_bytes());
        let mut line = BoundedLine::new(1024);
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::TooLong);
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Line);
        assert_eq!(line.take(), b"short\n");
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Eof);
    }

    #[tokio::test]
    async fn a_long_line_is_read_on_only_with_a_permit_and_keeps_it_until_the_next() {
        static PERMITS: Semaphore = Semaphore::const_new(1);
        let text = format!("{}\nshort\n", "x".repeat(300));
        let mut reader = BufReader::with_capacity(64, text.as_bytes());
        let mut line = BoundedLine::new(1024).with_gate(100, &PERMITS);
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Line);
        assert_eq!(
            PERMITS.available_permits(),
            0,
            "the long line holds the permit"
        );
        let permit = line.take_permit();
        assert!(permit.is_some());
        assert_eq!(line.take().len(), 301);
        drop(permit);
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Line);
        assert!(line.take_permit().is_none(), "a short line needs none");
        assert_eq!(PERMITS.available_permits(), 1);
    }

    #[tokio::test]
    async fn a_cancelled_read_is_forgotten_after_start_over() {
        let mut reader = BufReader::with_capacity(4, &b"half"[..]);
        let mut line = BoundedLine::new(1024);
        // Reads "half", then the input ends: a line without its newline.
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Line);
        line.start_over();
        assert_eq!(line.read(&mut reader).await.unwrap(), LineRead::Eof);
        assert!(line.bytes().is_empty());
    }
}
