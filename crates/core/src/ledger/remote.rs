//! A ledger on an object store (feature `cloud`): S3 and the stores that speak its API
//! (Alibaba OSS, Tencent COS, MinIO, moto), Google Cloud Storage and Azure Blob Storage,
//! through the `object_store` crate.
//!
//! - Credentials and region come from the usual environment variables of each cloud
//!   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …;
//!   `GOOGLE_SERVICE_ACCOUNT`, …; `AZURE_STORAGE_ACCOUNT_NAME`, …), read by object_store's
//!   builders. An endpoint given to [`super::Store::at`] wins over `AWS_ENDPOINT_URL`; an
//!   `http://` endpoint allows plain HTTP (a store on the same machine).
//! - The commit point is a create-only put (`PutMode::Create`, `If-None-Match: *` on S3).
//! - Objects read are downloaded once into a cache folder (`$GPUAUDIT_CACHE`, else
//!   `$XDG_CACHE_HOME/gpuaudit`, else `~/.cache/gpuaudit`, then `ledgers/<hash of the URL>`):
//!   the files a commit names never change (see `backend`), so a cached copy is the object.
//!   Commit objects are never cached. Files a writer writes are staged in the same folder and
//!   uploaded when written (part files, while parsing goes on) or at commit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::backend::{Listed, make_parent};
use crate::error::{Error, ErrorKind, Result};

/// Files larger than this are uploaded in parts.
const SINGLE_PUT: u64 = 64 << 20;
/// The size of each part of a multipart upload.
const PART: usize = 16 << 20;

/// An object store holding a ledger under a prefix.
pub(crate) struct Remote {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    url: String,
    /// `url` as the ledger's root path ([`super::Store::root`]).
    root: PathBuf,
    cache: PathBuf,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).finish()
    }
}

/// The schemes this build reads ledgers at.
pub(crate) const SCHEMES: [&str; 6] = ["s3", "s3a", "gs", "az", "abfs", "abfss"];

impl Remote {
    /// The ledger at `url` (`scheme://bucket/prefix`), `endpoint` for an S3-compatible store.
    pub(crate) fn open(url: &str, endpoint: Option<&str>) -> Result<Remote> {
        let bad =
            |m: String| Error::from(ErrorKind::Location { location: url.to_owned(), message: m });
        let url = url.trim_end_matches('/').to_owned();
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL".into()))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("names no bucket".into()));
        }
        let built: object_store::Result<Arc<dyn ObjectStore>> = match scheme {
            "s3" | "s3a" => {
                let mut b = object_store::aws::AmazonS3Builder::from_env()
                    .with_url(format!("s3://{bucket}"));
                if let Some(endpoint) = endpoint {
                    b = b.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
                }
                b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
            }
            "gs" => object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(format!("gs://{bucket}"))
                .build()
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            "az" | "abfs" | "abfss" => object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(format!("{scheme}://{bucket}"))
                .build()
                .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            other => return Err(bad(format!("unknown scheme {other}://"))),
        };
        let store = built.map_err(|e| bad(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| bad(format!("cannot start the I/O runtime: {e}")))?;
        let hash = xxhash_rust::xxh3::xxh3_64(url.as_bytes());
        let cache = cache_root().join("ledgers").join(format!("{hash:016x}"));
        let prefix = prefix.trim_matches('/').to_owned();
        let root = PathBuf::from(&url);
        Ok(Remote { store, prefix, url, root, cache, runtime })
    }

    fn path(&self, name: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(name)
        } else {
            ObjectPath::from(format!("{}/{name}", self.prefix))
        }
    }

    fn error(&self, name: &str, e: object_store::Error) -> Error {
        Error::ledger(self.url_of(name), e.to_string())
    }

    pub(crate) fn root(&self) -> &std::path::Path {
        &self.root
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn url_of(&self, name: &str) -> String {
        format!("{}/{name}", self.url)
    }

    pub(crate) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(name);
        let got = self.runtime.block_on(async {
            match self.store.get(&path).await {
                Ok(got) => got.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        got.map(|b| b.map(|b| b.to_vec())).map_err(|e| self.error(name, e))
    }

    pub(crate) fn create(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let path = self.path(name);
        let options = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        let payload = PutPayload::from(bytes.to_vec());
        match self.runtime.block_on(self.store.put_opts(&path, payload, options)) {
            Ok(_) => Ok(true),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(e) => Err(self.error(name, e)),
        }
    }

    pub(crate) fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let path = self.path(name);
        self.runtime
            .block_on(self.store.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| self.error(name, e))
    }

    pub(crate) fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        match self.runtime.block_on(self.store.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(name, e)),
        }
    }

    pub(crate) fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let under = self.path(prefix);
        let skip = if self.prefix.is_empty() { 0 } else { self.prefix.len() + 1 };
        let listed: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(self.store.list(Some(&under)).try_collect())
            .map_err(|e| self.error(prefix, e))?;
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let name = meta.location.as_ref().get(skip..)?.to_owned();
                Some(Listed { name, modified: SystemTime::from(meta.last_modified) })
            })
            .collect())
    }

    pub(crate) fn local(&self, name: &str) -> Result<PathBuf> {
        let cached = self.cache.join(name);
        if cached.is_file() {
            return Ok(cached);
        }
        let Some(bytes) = self.read(name)? else {
            return Err(Error::ledger(self.url_of(name), "is missing"));
        };
        make_parent(&cached)?;
        let tmp = cached.with_extension(format!("download-{}", std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &cached).map_err(|e| Error::io(&cached, e))?;
        Ok(cached)
    }

    /// Forgets the cached copy of `name` (a derived file replaced: `Backend::replace`).
    pub(crate) fn uncache(&self, name: &str) {
        let _ = std::fs::remove_file(self.cache.join(name));
    }

    pub(crate) fn stage(&self, name: &str) -> PathBuf {
        self.cache.join(".staging").join(name)
    }

    pub(crate) fn scratch(&self, batch: &str) -> PathBuf {
        self.cache.join(".scratch").join(batch)
    }

    /// Uploads the staged file of `name`, then keeps it in the cache.
    pub(crate) fn publish(&self, name: &str) -> Result<()> {
        let staged = self.stage(name);
        let size = std::fs::metadata(&staged).map_err(|e| Error::io(&staged, e))?.len();
        let path = self.path(name);
        if size <= SINGLE_PUT {
            let bytes = std::fs::read(&staged).map_err(|e| Error::io(&staged, e))?;
            self.put(name, bytes)?;
        } else {
            self.upload_in_parts(&staged, &path).map_err(|e| self.error(name, e))?;
        }
        let cached = self.cache.join(name);
        make_parent(&cached)?;
        std::fs::rename(&staged, &cached).map_err(|e| Error::io(&cached, e))
    }

    fn upload_in_parts(
        &self,
        staged: &std::path::Path,
        path: &ObjectPath,
    ) -> object_store::Result<()> {
        use std::io::Read;
        let io = |e: std::io::Error| object_store::Error::Generic {
            store: "local",
            source: Box::new(e),
        };
        let mut file = std::fs::File::open(staged).map_err(io)?;
        self.runtime.block_on(async {
            let upload = self.store.put_multipart(path).await?;
            let mut write = object_store::WriteMultipart::new_with_chunk_size(upload, PART);
            let mut buf = vec![0; PART];
            loop {
                let n = file.read(&mut buf).map_err(io)?;
                if n == 0 {
                    break;
                }
                write.wait_for_capacity(2).await?;
                write.write(&buf[..n]);
            }
            write.finish().await.map(|_| ())
        })
    }
}

/// The folder of gpuaudit's caches.
fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("GPUAUDIT_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("gpuaudit");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("gpuaudit"),
        None => std::env::temp_dir().join("gpuaudit-cache"),
    }
}
