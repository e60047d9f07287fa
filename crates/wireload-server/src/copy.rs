//! COPY over the connection: the client's CopyData streamed into the loader as a reader
//! (`FROM STDIN`), and the unloader's CSV pieces streamed out as CopyData (`TO STDOUT`).

use std::io::{Read, Write};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

/// Incoming data is passed to the loader in pieces of at least this many bytes (CopyData
/// messages are often a few KiB: psql sends 8 KiB).
pub const PIECE_BYTES: usize = 256 << 10;

/// What travels from the connection to the loader.
#[derive(Debug)]
pub enum Piece {
    /// Data, in order.
    Data(Bytes),
    /// CopyDone: the input is complete.
    End,
}

/// The loader's side of COPY FROM STDIN: reads the pieces the connection sends. The input
/// ends only at [`Piece::End`]; a channel closed without it (the client sent CopyFail or
/// went away) is a read error, so the load fails and publishes nothing.
pub struct PieceReader {
    rx: mpsc::Receiver<Piece>,
    current: Bytes,
    ended: bool,
}

impl PieceReader {
    /// A reader of what `rx` receives.
    pub fn new(rx: mpsc::Receiver<Piece>) -> Self {
        PieceReader {
            rx,
            current: Bytes::new(),
            ended: false,
        }
    }
}

impl Read for PieceReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            if self.ended {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Piece::Data(b)) => self.current = b,
                Some(Piece::End) => self.ended = true,
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the client stopped sending COPY data (CopyFail or lost connection)",
                    ));
                }
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// The connection's side of COPY FROM STDIN: gathers CopyData into pieces and sends them,
/// waiting while the loader is behind (the channel is bounded).
pub struct PieceSender {
    tx: Option<mpsc::Sender<Piece>>,
    pending: BytesMut,
}

impl PieceSender {
    /// A sender into `tx`.
    pub fn new(tx: mpsc::Sender<Piece>) -> Self {
        PieceSender {
            tx: Some(tx),
            pending: BytesMut::new(),
        }
    }

    /// Adds `data`; sends a piece when enough has gathered (a large CopyData goes as it is,
    /// uncopied). Data after the loader has stopped (it failed) is dropped: the error is
    /// reported at CopyDone.
    pub async fn push(&mut self, data: Bytes) {
        if self.pending.is_empty() && data.len() >= PIECE_BYTES / 2 {
            self.send(Piece::Data(data)).await;
            return;
        }
        self.pending.extend_from_slice(&data);
        if self.pending.len() >= PIECE_BYTES {
            let piece = self.pending.split().freeze();
            self.send(Piece::Data(piece)).await;
        }
    }

    /// Sends what is pending and the end of the input.
    pub async fn finish(&mut self) {
        if !self.pending.is_empty() {
            let piece = self.pending.split().freeze();
            self.send(Piece::Data(piece)).await;
        }
        self.send(Piece::End).await;
        self.tx = None;
    }

    /// Stops without the end of the input: the reader fails (CopyFail).
    pub fn abandon(&mut self) {
        self.tx = None;
        self.pending.clear();
    }

    async fn send(&mut self, piece: Piece) {
        if let Some(tx) = &self.tx
            && tx.send(piece).await.is_err()
        {
            // the loader is gone (failed): drop the rest
            self.tx = None;
        }
    }
}

/// The unloader's side of COPY TO STDOUT: each write (a piece of about a MiB of CSV) is sent
/// to the connection, waiting while the client is behind.
pub struct ChannelWriter {
    tx: mpsc::Sender<Bytes>,
}

impl ChannelWriter {
    /// A writer into `tx`.
    pub fn new(tx: mpsc::Sender<Bytes>) -> Self {
        ChannelWriter { tx }
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tx
            .blocking_send(Bytes::copy_from_slice(buf))
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the client is no longer reading the COPY output",
                )
            })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pieces_arrive_in_order_and_end_only_at_end() {
        let (tx, rx) = mpsc::channel(2);
        let reader = tokio::task::spawn_blocking(move || {
            let mut r = PieceReader::new(rx);
            let mut all = Vec::new();
            r.read_to_end(&mut all).map(|_| all)
        });
        let mut s = PieceSender::new(tx);
        let mut want = Vec::new();
        for i in 0..5000u32 {
            let line = format!("{i},row {i}\n");
            want.extend_from_slice(line.as_bytes());
            s.push(Bytes::from(line)).await;
        }
        s.finish().await;
        assert_eq!(reader.await.unwrap().unwrap(), want);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_channel_closed_without_end_is_an_error() {
        let (tx, rx) = mpsc::channel(2);
        let reader = tokio::task::spawn_blocking(move || {
            let mut r = PieceReader::new(rx);
            let mut all = Vec::new();
            r.read_to_end(&mut all)
        });
        let mut s = PieceSender::new(tx);
        s.push(Bytes::from(vec![b'x'; PIECE_BYTES + 1])).await;
        drop(s);
        let err = reader.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
