//! Where a ledger's files live: a local folder, or (feature `cloud`) an object store.
//!
//! The ledger needs few operations of its storage, the same on both:
//! - `create`: put an object only if no object has its name (the commit point, see `log`);
//!   on a local folder, a synced temporary file hard-linked to the name (`link` fails when
//!   the name is taken, and the name never shows a half-written file);
//! - `put`, `read`, `delete` and a recursive `list` with each object's modification time;
//! - `stage` and `publish`: a writer writes a file where `stage` says, and `publish` makes it
//!   the object of its name. A local ledger's staged file is already the file (written once,
//!   under a name no other writer uses); an object store's is a local scratch file, uploaded.
//! - `local`: a local file to read an object from. An object store's objects are downloaded
//!   once into a cache folder and read from there afterwards; this is right because every
//!   file a commit names is written once under a unique name and never changed (commit
//!   objects and symlink manifests, which are read fresh each time, are not cached).
//!
//! Names are relative to the ledger's root, `/`-separated (`charges/month=…/…`).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};

/// A file of the ledger, as listed.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// Its name relative to the ledger root.
    pub(crate) name: String,
    /// When it was last written.
    pub(crate) modified: SystemTime,
}

/// The storage of a ledger.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// A local folder.
    Local(PathBuf),
    /// An object store.
    #[cfg(feature = "cloud")]
    Remote(std::sync::Arc<super::remote::Remote>),
}

fn io<T>(path: &Path, r: std::io::Result<T>) -> Result<T> {
    r.map_err(|e| Error::io(path, e))
}

impl Backend {
    /// The ledger's folder, or an object store's URL as a path.
    pub(crate) fn root(&self) -> &Path {
        match self {
            Backend::Local(root) => root,
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.root(),
        }
    }

    /// How to name `name` in messages: a path under the folder, or the object's URL.
    pub(crate) fn shown(&self, name: &str) -> PathBuf {
        match self {
            Backend::Local(root) => root.join(name),
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => PathBuf::from(remote.url_of(name)),
        }
    }

    /// The URL an engine reads the ledger's files under, without a final `/` (`file:///…`
    /// for a local folder): a file's URL is this, `/` and its name.
    pub(crate) fn base_url(&self) -> String {
        match self {
            Backend::Local(root) => {
                let root = fs::canonicalize(root).unwrap_or_else(|_| root.clone());
                format!("file://{}", root.display())
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.url().to_owned(),
        }
    }

    /// The bytes of `name`; `None` when there is no such file.
    pub(crate) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self {
            Backend::Local(root) => {
                let path = root.join(name);
                match fs::read(&path) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(Error::io(path, e)),
                }
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.read(name),
        }
    }

    /// Creates `name` holding `bytes` if no file has that name: `false` when one has.
    pub(crate) fn create(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        match self {
            Backend::Local(root) => create_local(root, name, bytes),
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.create(name, bytes),
        }
    }

    /// Writes `bytes` as `name`, replacing what it held (derived files only).
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Backend::Local(root) => {
                let path = root.join(name);
                let tmp = unique_tmp(&path);
                make_parent(&path)?;
                write_synced(&tmp, bytes)?;
                io(&path, fs::rename(&tmp, &path))
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.put(name, bytes.to_vec()),
        }
    }

    /// [`Backend::put`] of a derived file rebuilt from the part files: an object store's
    /// cached copy of the old one is dropped, so that this process reads the new one.
    pub(crate) fn replace(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.put(name, bytes)?;
        #[cfg(feature = "cloud")]
        if let Backend::Remote(remote) = self {
            remote.uncache(name);
        }
        Ok(())
    }

    /// Removes `name`; a missing file is no error.
    pub(crate) fn delete(&self, name: &str) -> Result<()> {
        match self {
            Backend::Local(root) => {
                let path = root.join(name);
                match fs::remove_file(&path) {
                    Ok(()) => {
                        remove_empty_parents(root, &path);
                        Ok(())
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(Error::io(path, e)),
                }
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.delete(name),
        }
    }

    /// Every file under folder `prefix` (recursively), in no particular order.
    pub(crate) fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        match self {
            Backend::Local(root) => {
                let mut out = Vec::new();
                list_local(&root.join(prefix), prefix, &mut out)?;
                Ok(out)
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.list(prefix),
        }
    }

    /// A local file holding `name`'s bytes, to read it from.
    pub(crate) fn local(&self, name: &str) -> Result<PathBuf> {
        match self {
            Backend::Local(root) => Ok(root.join(name)),
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.local(name),
        }
    }

    /// Where a writer writes the file that becomes `name` at [`Backend::publish`].
    pub(crate) fn stage(&self, name: &str) -> PathBuf {
        match self {
            Backend::Local(root) => root.join(name),
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.stage(name),
        }
    }

    /// Makes the staged file the file `name` (a local file is already there; an object
    /// store's is uploaded, then its scratch copy moved into the cache).
    pub(crate) fn publish(&self, name: &str) -> Result<()> {
        match self {
            Backend::Local(_) => {
                let _ = name;
                Ok(())
            }
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.publish(name),
        }
    }

    /// Makes the published files `names` durable: a local folder's folders are synced, each
    /// once (syncing the same folder after each part file took a millisecond a time).
    pub(crate) fn settle<'a>(&self, names: impl Iterator<Item = &'a str>) -> Result<()> {
        let Some(root) = self.folder() else { return Ok(()) };
        let dirs: std::collections::BTreeSet<PathBuf> =
            names.filter_map(|n| root.join(n).parent().map(Path::to_path_buf)).collect();
        for dir in dirs {
            io(&dir, File::open(&dir).and_then(|d| d.sync_all()))?;
        }
        Ok(())
    }

    /// Removes what [`Backend::stage`] gave for `name` and its published file, if any.
    pub(crate) fn unstage(&self, name: &str) {
        let _ = fs::remove_file(self.stage(name));
        let _ = self.delete(name);
    }

    /// A local folder for a writer's scratch files (spilled ids).
    pub(crate) fn scratch(&self, batch: &str) -> PathBuf {
        match self {
            Backend::Local(root) => root.join(super::TMP).join(batch),
            #[cfg(feature = "cloud")]
            Backend::Remote(remote) => remote.scratch(batch),
        }
    }

    /// The folder of a local ledger.
    pub(crate) fn folder(&self) -> Option<&Path> {
        match self {
            Backend::Local(root) => Some(root),
            #[cfg(feature = "cloud")]
            Backend::Remote(_) => None,
        }
    }

    /// Makes sure the ledger's folder exists (a local ledger; an object store has none).
    pub(crate) fn ensure(&self) -> Result<()> {
        match self {
            Backend::Local(root) => io(root, fs::create_dir_all(root)),
            #[cfg(feature = "cloud")]
            Backend::Remote(_) => Ok(()),
        }
    }
}

/// A temporary name beside `path`, unique to this process and moment.
fn unique_tmp(path: &Path) -> PathBuf {
    let nanos =
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}-{nanos}.tmp", std::process::id()))
}

pub(crate) fn make_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) => io(dir, fs::create_dir_all(dir)),
        None => Ok(()),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = io(path, fs::OpenOptions::new().write(true).create_new(true).open(path))?;
    io(path, file.write_all(bytes).and_then(|()| file.sync_all()))
}

/// [`Backend::create`] on a local folder.
fn create_local(root: &Path, name: &str, bytes: &[u8]) -> Result<bool> {
    let path = root.join(name);
    make_parent(&path)?;
    let tmp = unique_tmp(&path);
    write_synced(&tmp, bytes)?;
    let linked = fs::hard_link(&tmp, &path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            if let Some(dir) = path.parent() {
                io(dir, File::open(dir).and_then(|d| d.sync_all()))?;
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn list_local(dir: &Path, prefix: &str, out: &mut Vec<Listed>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = io(dir, entry)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let meta = io(&entry.path(), entry.metadata())?;
        if meta.is_dir() {
            list_local(&entry.path(), &rel, out)?;
        } else {
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            out.push(Listed { name: rel, modified });
        }
    }
    Ok(())
}

/// Removes the folders above `path` up to `root` that are left empty.
fn remove_empty_parents(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
        if fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}
