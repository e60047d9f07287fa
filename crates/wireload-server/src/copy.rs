//! COPY over the connection: the client's CopyData streamed into the loader as a reader
//! (`FROM STDIN`), and the unloader's CSV pieces streamed out as CopyData (`TO STDOUT`).

use std::io::Write;

use bytes::Bytes;
use tokio::sync::mpsc;
use wireload_load::{Block, Feed, Filler, Recycler};

/// What travels from the connection to the loader.
#[derive(Debug)]
pub enum Piece {
    /// A block of data, in order.
    Data(Block),
    /// CopyDone: the input is complete.
    End,
}

/// The loader's side of COPY FROM STDIN: the blocks the connection fills. The input ends
/// only at [`Piece::End`]; a channel closed without it (the client sent CopyFail or went
/// away) is a read error, so the load fails and publishes nothing.
pub struct CopyFeed {
    rx: mpsc::Receiver<Piece>,
}

impl CopyFeed {
    /// The blocks `rx` receives.
    pub fn new(rx: mpsc::Receiver<Piece>) -> Self {
        CopyFeed { rx }
    }
}

impl Feed for CopyFeed {
    fn next_block(&mut self) -> std::io::Result<Option<Block>> {
        match self.rx.blocking_recv() {
            Some(Piece::Data(block)) => Ok(Some(block)),
            Some(Piece::End) => Ok(None),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the client stopped sending COPY data (CopyFail or lost connection)",
            )),
        }
    }
}

/// The connection's side of COPY FROM STDIN: copies CopyData into blocks (reusing the
/// buffers the loader hands back) and sends each as it fills, waiting while the loader is
/// behind (the channel is bounded).
pub struct CopySender {
    tx: Option<mpsc::Sender<Piece>>,
    filler: Filler,
}

impl CopySender {
    /// A sender into `tx` of blocks of `block` bytes, and the recycler for the loader.
    pub fn new(tx: mpsc::Sender<Piece>, block: usize) -> (Self, Recycler) {
        let (filler, recycler) = Filler::new(block);
        (
            CopySender {
                tx: Some(tx),
                filler,
            },
            recycler,
        )
    }

    /// Adds `data`, sending the blocks it fills. Data after the loader has stopped (it
    /// failed) is dropped: the error is reported at CopyDone.
    pub async fn push(&mut self, data: &[u8]) {
        if self.tx.is_none() {
            return;
        }
        let mut full = Vec::new();
        self.filler.write(data, |b| full.push(b));
        for block in full {
            self.send(Piece::Data(block)).await;
        }
    }

    /// Sends what is pending and the end of the input.
    pub async fn finish(&mut self) {
        if let Some(last) = self.filler.finish() {
            self.send(Piece::Data(last)).await;
        }
        self.send(Piece::End).await;
        self.tx = None;
    }

    /// Stops without the end of the input: the reader fails (CopyFail).
    pub fn abandon(&mut self) {
        self.tx = None;
        self.filler.finish();
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

    /// Everything `feed` hands over, or its error.
    fn drain(mut feed: CopyFeed) -> std::io::Result<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(block) = feed.next_block()? {
            all.extend_from_slice(block.bytes());
        }
        Ok(all)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pieces_arrive_in_order_and_end_only_at_end() {
        let (tx, rx) = mpsc::channel(2);
        let (mut s, recycler) = CopySender::new(tx, 1000);
        let reader = tokio::task::spawn_blocking(move || {
            let mut feed = CopyFeed::new(rx);
            let mut all = Vec::new();
            while let Some(block) = feed.next_block()? {
                assert!(block.bytes().len() <= 1000);
                all.extend_from_slice(block.bytes());
                recycler.recycle(block);
            }
            Ok::<_, std::io::Error>(all)
        });
        let mut want = Vec::new();
        for i in 0..5000u32 {
            // pieces smaller and larger than a block
            let line = format!("{i},row {i}\n").repeat(1 + (i % 7 == 0) as usize * 200);
            want.extend_from_slice(line.as_bytes());
            s.push(line.as_bytes()).await;
        }
        s.finish().await;
        assert_eq!(reader.await.unwrap().unwrap(), want);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_channel_closed_without_end_is_an_error() {
        let (tx, rx) = mpsc::channel(2);
        let reader = tokio::task::spawn_blocking(move || drain(CopyFeed::new(rx)));
        let (mut s, _recycler) = CopySender::new(tx, 1000);
        s.push(&[b'x'; 2500]).await;
        s.abandon();
        drop(s);
        let err = reader.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
