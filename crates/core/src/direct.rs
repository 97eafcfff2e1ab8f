//! Files read and written past the page cache (`O_DIRECT`, on Linux).
//!
//! Import reads a large bill once and writes the ledger's part files and the id index's runs
//! once. Through the page cache the kernel copies every byte between its pages and the
//! program's buffer: on the 2-core machines that copy was the largest single cost of a 1 GB
//! import. Past the cache, the disk moves the bytes itself. Such reads and writes need
//! buffers at a multiple of [`ALIGN`] in memory, and offsets and lengths in whole blocks;
//! [`Reader`] (with the buffer of `import::split::Splitter`) and [`Writer`] keep to that, and
//! go on through the page cache where the system refuses (another system, a file system
//! without `O_DIRECT` such as tmpfs) or a transfer comes back short.
//!
//! The cost: what was written is not left in the page cache, so the next command reads the
//! ledger from the disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

/// The alignment, in memory and in the file, of a transfer past the page cache.
pub(crate) const ALIGN: usize = 4096;

/// Bytes whose first one sits at a multiple of [`ALIGN`] in memory, where a transfer past
/// the page cache may start.
pub(crate) struct Aligned {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    pub(crate) fn new(len: usize) -> Self {
        let raw = vec![0; len + ALIGN];
        // Should `align_offset` decline (it may), the buffer is merely unaligned: a direct
        // transfer then fails and goes through the page cache.
        let start = raw.as_ptr().align_offset(ALIGN).min(ALIGN);
        Aligned { raw, start, len }
    }

    /// A buffer of `len` bytes that begins with this one's bytes.
    pub(crate) fn grown(&self, len: usize) -> Self {
        let mut grown = Aligned::new(len.max(self.len));
        grown[..self.len].copy_from_slice(self);
        grown
    }
}

impl Deref for Aligned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

impl DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

/// Bytes moved per read or write past the page cache: large, as each is one request to the
/// disk.
pub(crate) const TRANSFER_BYTES: usize = 1 << 20;

/// A file read from start to end, past the page cache when it has `threshold` bytes or more.
/// The caller reads whole, aligned blocks into an aligned buffer.
pub(crate) struct Reader {
    file: File,
    path: PathBuf,
    /// Bytes read so far.
    offset: u64,
    direct: bool,
}

impl Reader {
    pub(crate) fn open(path: &Path, threshold: u64) -> io::Result<Self> {
        let reader = |file, direct| Reader { file, path: path.to_owned(), offset: 0, direct };
        #[cfg(target_os = "linux")]
        if std::fs::metadata(path)?.len() >= threshold {
            use std::os::unix::fs::OpenOptionsExt;
            let direct = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path);
            if let Ok(file) = direct {
                return Ok(reader(file, true));
            }
        }
        let _ = threshold;
        Ok(reader(File::open(path)?, false))
    }

    /// Whether reads go past the page cache (so far).
    pub(crate) fn is_direct(&self) -> bool {
        self.direct
    }
}

impl Read for Reader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.file.read(buf) {
            Ok(n) => {
                self.offset += n as u64;
                Ok(n)
            }
            Err(e) if self.direct && e.kind() == io::ErrorKind::InvalidInput => {
                // A buffer or an offset out of alignment, or no direct reads here.
                (self.file, self.direct) = (through_cache(&self.path, self.offset, false)?, false);
                self.read(buf)
            }
            Err(e) => Err(e),
        }
    }
}

/// A new file, written past the page cache in whole blocks; the last, partial block goes
/// through the page cache. Buffered: small writes are gathered. Call [`Writer::finish`].
pub(crate) struct Writer {
    file: File,
    path: PathBuf,
    buf: Aligned,
    /// Bytes gathered in `buf`.
    len: usize,
    /// Bytes written to the file.
    written: u64,
    direct: bool,
}

impl Writer {
    /// Creates the file at `path`, which must not exist.
    pub(crate) fn create_new(path: &Path) -> io::Result<Self> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        let buffered = |file| Writer {
            file,
            path: path.to_owned(),
            buf: Aligned::new(TRANSFER_BYTES),
            len: 0,
            written: 0,
            direct: false,
        };
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut direct = options.clone();
            match direct.custom_flags(libc::O_DIRECT).open(path) {
                Ok(file) => return Ok(Writer { direct: true, ..buffered(file) }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
                // Created, then refused (tmpfs does so): take the file as it is.
                Err(_) if path.exists() => {
                    return Ok(buffered(OpenOptions::new().read(true).write(true).open(path)?));
                }
                Err(_) => {}
            }
        }
        Ok(buffered(options.open(path)?))
    }

    /// Writes what is gathered and returns the file, for the caller to sync.
    pub(crate) fn finish(mut self) -> io::Result<File> {
        self.drain(self.len / ALIGN * ALIGN)?;
        if self.len > 0 {
            self.through_cache()?;
            self.drain(self.len)?;
        }
        Ok(self.file)
    }

    /// Writes the first `n` bytes gathered, and moves the rest to the front.
    fn drain(&mut self, n: usize) -> io::Result<()> {
        let mut done = 0;
        while done < n {
            match self.file.write(&self.buf[done..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(wrote) => {
                    done += wrote;
                    self.written += wrote as u64;
                }
                Err(e) if self.direct && e.kind() == io::ErrorKind::InvalidInput => {
                    self.through_cache()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
        Ok(())
    }

    /// Goes on writing through the page cache, from where writing got.
    fn through_cache(&mut self) -> io::Result<()> {
        if self.direct {
            (self.file, self.direct) = (through_cache(&self.path, self.written, true)?, false);
        }
        Ok(())
    }
}

/// The file at `path` opened again through the page cache (for writing too when `write`: a
/// bill may be read-only), at `offset`.
fn through_cache(path: &Path, offset: u64, write: bool) -> io::Result<File> {
    let mut file = OpenOptions::new().read(true).write(write).open(path)?;
    file.seek(io::SeekFrom::Start(offset))?;
    Ok(file)
}

impl Write for Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&data[..n]);
        self.len += n;
        if self.len == self.buf.len() {
            self.drain(self.len)?;
        }
        Ok(n)
    }

    /// Nothing: the bytes gathered reach the file in whole blocks, and at [`Writer::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_past_the_cache_holds_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // Sizes around the block and the buffer, written in pieces of every size.
        for size in [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, TRANSFER_BYTES, 3 * TRANSFER_BYTES + 4097] {
            let path = dir.path().join(format!("f{size}"));
            let want: Vec<u8> = (0..size).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut writer = Writer::create_new(&path).unwrap();
            let mut at = 0;
            for piece in 1.. {
                if at == want.len() {
                    break;
                }
                let end = (at + piece % 5000).min(want.len());
                writer.write_all(&want[at..end]).unwrap();
                at = end;
            }
            writer.finish().unwrap().sync_all().unwrap();
            assert!(std::fs::read(&path).unwrap() == want, "{size} bytes");
        }
        assert!(Writer::create_new(&dir.path().join("f1")).is_err(), "the file exists");
    }

    #[test]
    fn a_write_the_disk_refuses_goes_on_through_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut writer = Writer::create_new(&path).unwrap();
        // A buffer one byte off alignment: a direct write of it is refused.
        let mut off = Aligned::new(TRANSFER_BYTES + 1);
        off.start += 1;
        off.len = TRANSFER_BYTES;
        writer.buf = off;
        let want: Vec<u8> = (0..2 * TRANSFER_BYTES + 100).map(|i| (i % 253) as u8).collect();
        writer.write_all(&want).unwrap();
        assert!(!writer.direct, "writing went on through the page cache");
        writer.finish().unwrap();
        assert!(std::fs::read(&path).unwrap() == want);
    }
}
