//! A part file's text columns read as their dictionaries' keys.
//!
//! The part files keep their repeated texts (platform, account, currency, period, category,
//! kind, pricing, resource, instance, model, item, file) dictionary-encoded: a dictionary of
//! the distinct texts once per row group, then a small key per row. polars' reader turns
//! such a column into a text per row (a 16-byte view each, gathered from the dictionary),
//! which the reader of a window's rows then told apart again by hashing the views. Read
//! here instead as the keys and the dictionary (polars-parquet's own decoder for
//! dictionary-encoded columns, the one it uses for categoricals), each distinct text of a
//! row group is mapped once and each row takes its key's value: `waste --format csv` at
//! 2 M charges, 3.53 → 3.34 G instructions under callgrind, the same CSV.
//!
//! Decisions:
//! - Only what the reader of rows maps is read so; every other column, and any text column
//!   this reader cannot take (a row group of it written plain, as a writer may when its
//!   dictionary grows too large, or a column chunk it fails on), is read by polars as
//!   before, so a damaged file is refused with the same message as before.
//! - Only the bytes of the columns read here are read (not the whole file): the `id` column,
//!   most of a part file's bytes, is read by polars.
//! - A column read here must hold as many values as the file has rows, and each key must
//!   name an entry of its dictionary; anything else is an error, as polars' would be.
//! - The decoder makes room for what a page header claims before it reads the page: a chunk
//!   whose range passes the file's end, or whose headers claim more values than it holds, a
//!   negative size or more than a thousand times its bytes decompressed, is left to polars'
//!   reader ([`plausible`]), as is any chunk the decoder fails or panics on.
//! - A ledger on object storage is read the same way: its part files are local copies by
//!   the time they are read (`Backend::local`).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use polars_arrow::array::{Array, DictionaryArray, Utf8ViewArray};
use polars_arrow::datatypes::{ArrowDataType, Field, IntegerType, Metadata};
use polars_parquet::read::{BasicDecompressor, PageReader, PhysicalType, column_iter_to_arrays};

/// Text columns read as keys into their dictionaries, by name.
#[derive(Default)]
pub(crate) struct Keyed {
    columns: Vec<(String, Vec<DictionaryArray<u32>>)>,
}

impl Keyed {
    /// The chunks of column `name`, if it was read here.
    pub(super) fn get(&self, name: &str) -> Option<&[DictionaryArray<u32>]> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, chunks)| chunks.as_slice())
    }
}

/// Reads of the part file at `path` those of the text columns `names` it can read as
/// dictionary keys; returns them, and the names of the others (for polars to read).
pub(super) fn read(path: &Path, names: Vec<String>) -> (Keyed, Vec<String>) {
    let mut keyed = Keyed::default();
    let Ok(mut file) = std::fs::File::open(path) else { return (keyed, names) };
    let Ok(Ok(metadata)) = crate::error::catch(|| polars_parquet::read::read_metadata(&mut file))
    else {
        return (keyed, names);
    };
    let mut rest = Vec::new();
    for name in names {
        match crate::error::catch(|| column(&mut file, &metadata, &name)) {
            Ok(Some(chunks)) => keyed.columns.push((name, chunks)),
            _ => rest.push(name),
        }
    }
    (keyed, rest)
}

/// Column `name` of every row group of `metadata`, read from `file` as dictionary keys;
/// `None` when one of its row groups cannot be read so.
fn column<R: Read + Seek>(
    file: &mut R,
    metadata: &polars_parquet::read::FileMetadata,
    name: &str,
) -> Option<Vec<DictionaryArray<u32>>> {
    let mut chunks = Vec::new();
    let mut rows = 0;
    // A damaged footer may claim any range: none past the file's end is read (or made room for).
    let length = file.seek(SeekFrom::End(0)).ok()?;
    for group in &metadata.row_groups {
        let mut under = group.columns_under_root_iter(name)?;
        let (meta, None) = (under.next()?, under.next()) else { return None };
        if meta.physical_type() != PhysicalType::ByteArray
            || meta.descriptor().path_in_schema.len() != 1
        {
            return None;
        }
        let range = meta.byte_range();
        if range.end > length {
            return None;
        }
        let mut bytes = vec![0; usize::try_from(range.end.checked_sub(range.start)?).ok()?];
        file.seek(SeekFrom::Start(range.start)).ok()?;
        file.read_exact(&mut bytes).ok()?;
        if !plausible(&bytes, meta.num_values()) {
            return None;
        }
        let pages = PageReader::new(
            std::io::Cursor::new(polars_buffer::Buffer::from(bytes)),
            meta,
            Vec::new(),
            usize::MAX,
        );
        let pages = BasicDecompressor::new(pages, Vec::new());
        let types = vec![&meta.descriptor().descriptor.primitive_type];
        let (arrays, _) = column_iter_to_arrays(vec![pages], types, field(name), None).ok()?;
        for array in arrays {
            let keys = array.as_any().downcast_ref::<DictionaryArray<u32>>()?.clone();
            keys.values().as_any().downcast_ref::<Utf8ViewArray>()?;
            rows += keys.len();
            chunks.push(keys);
        }
    }
    (rows == metadata.num_rows).then_some(chunks)
}

/// Whether the page headers of a column chunk's `bytes` claim no more values than its
/// `values` and no page larger than a decompression of the chunk could make: the decoder
/// makes room for what a page claims before it reads it (the check a Parquet bill gets,
/// [`crate::import::pages_claim`]). A chunk that fails is left to polars' reader, which
/// refuses it as before.
fn plausible(bytes: &[u8], values: i64) -> bool {
    let (Ok(total), size) = (u64::try_from(values), bytes.len() as u64) else { return false };
    let bound = size.saturating_mul(1000).max(1 << 20);
    let claims = crate::import::pages_claim(&mut std::io::Cursor::new(bytes), total, size, bound);
    matches!(claims, crate::import::Claims::Fit)
}

/// The field of a text column read as keys (marked a categorical: polars-parquet reads
/// only those straight into keys, and only when every page is dictionary-encoded).
fn field(name: &str) -> Field {
    let dtype =
        ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(ArrowDataType::Utf8View), false);
    let mut metadata = Metadata::new();
    metadata.insert(polars_arrow::datatypes::DTYPE_CATEGORICAL_NEW.into(), "".into());
    Field::new(name.into(), dtype, true).with_metadata(metadata)
}

/// Column `name`'s values mapped by `f`, which sees each distinct text of a chunk at most
/// once (`mapped` for a column read as keys).
pub(super) fn mapped<T: Copy>(
    chunks: &[DictionaryArray<u32>],
    name: &str,
    mut f: impl FnMut(&str) -> Result<T, String>,
) -> Result<Vec<Option<T>>, String> {
    let mut out = Vec::with_capacity(chunks.iter().map(Array::len).sum());
    for chunk in chunks {
        let Some(texts) = chunk.values().as_any().downcast_ref::<Utf8ViewArray>() else {
            return Err(format!("column {name}: a dictionary of no texts"));
        };
        let mut memo: Vec<Option<T>> = vec![None; texts.len()];
        let keys = chunk.keys();
        let nulls = Array::null_count(keys) > 0;
        for (i, &key) in keys.values().iter().enumerate() {
            if nulls && !Array::is_valid(keys, i) {
                out.push(None);
                continue;
            }
            let key = key as usize;
            let value = match memo.get(key) {
                Some(&Some(v)) => v,
                Some(None) if Array::is_valid(texts, key) => {
                    let v = f(texts.value(key))?;
                    memo[key] = Some(v);
                    v
                }
                Some(None) => {
                    out.push(None);
                    continue;
                }
                None => return Err(format!("column {name}: a key past its dictionary")),
            };
            out.push(Some(value));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use polars::prelude::*;

    use super::*;

    /// A file polars' own writer makes (as a look-back file or an older part file is made):
    /// a column of few texts (dictionary-encoded, with nulls), one of a distinct text per row
    /// (written plain: polars keeps no dictionary for it), several row groups.
    #[test]
    fn texts_read_as_keys_are_the_texts_polars_reads_and_a_plain_column_is_left_to_it() {
        let n = 5_000;
        let few: Vec<Option<String>> =
            (0..n).map(|i| (i % 7 != 3).then(|| format!("region-{}", i % 5))).collect();
        let distinct: Vec<String> = (0..n).map(|i| format!("{:032x}", i * 7_919)).collect();
        let mut frame = df!("few" => few.clone(), "distinct" => distinct.clone()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.parquet");
        let file = std::fs::File::create(&path).unwrap();
        ParquetWriter::new(file).with_row_group_size(Some(1_024)).finish(&mut frame).unwrap();

        let names = vec!["few".to_owned(), "distinct".to_owned(), "absent".to_owned()];
        let (keyed, rest) = read(&path, names);
        assert_eq!(rest, ["distinct", "absent"]);
        let chunks = keyed.get("few").expect("the dictionary-encoded column is read as keys");
        assert!(chunks.len() > 1, "a chunk per row group");
        assert!(keyed.get("distinct").is_none());

        let mut seen = Vec::new();
        let texts = mapped(chunks, "few", |t| {
            seen.push(t.to_owned());
            Ok(seen.len())
        })
        .unwrap();
        let back: Vec<Option<String>> =
            texts.iter().map(|k| k.map(|k| seen[k - 1].clone())).collect();
        assert_eq!(back, few);
        // Each distinct text is mapped about once a row group, not once a row.
        assert!(seen.len() <= 5 * chunks.len(), "{} texts mapped", seen.len());
        // A value refused by `f` is the error, naming nothing else.
        let refused = mapped(chunks, "few", |t| Err::<u8, _>(format!("{t} refused")));
        assert_eq!(refused.unwrap_err(), "region-0 refused");
    }

    /// The bytes of a data page's header claiming `values` values in `compressed` bytes,
    /// `unpacked` once decompressed, followed by `compressed` bytes of nothing.
    fn page(values: i32, compressed: i32, unpacked: i32) -> Vec<u8> {
        use polars_parquet_format::thrift::protocol::TCompactOutputProtocol;
        use polars_parquet_format::{DataPageHeader, Encoding, PageHeader, PageType};
        let data = DataPageHeader::new(
            values,
            Encoding::RLE_DICTIONARY,
            Encoding::RLE,
            Encoding::RLE,
            None,
        );
        let header = PageHeader::new(
            PageType::DATA_PAGE,
            unpacked,
            compressed,
            None,
            data,
            None,
            None,
            None,
        );
        let mut out = Vec::new();
        header.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut out)).unwrap();
        out.extend(std::iter::repeat_n(0, usize::try_from(compressed.max(0)).unwrap().min(64)));
        out
    }

    /// Pages whose headers claim more values than their chunk, more bytes than it has, or
    /// more than a decompression of it could make, are not decoded here (polars' reader
    /// refuses them as before); pages that claim what they hold are.
    #[test]
    fn a_chunk_whose_pages_claim_the_impossible_is_left_to_polars() {
        let two = [page(10, 8, 40), page(6, 8, 40)].concat();
        assert!(plausible(&two, 16));
        assert!(!plausible(&two, 15), "more values than the chunk");
        assert!(!plausible(&two, 17), "fewer values than the chunk: the headers run out");
        assert!(!plausible(&page(10, 1 << 30, 40), 10), "a page past the chunk's end");
        assert!(!plausible(&page(10, 8, i32::MAX), 10), "2 GiB out of 8 bytes");
        assert!(!plausible(&page(10, -8, 40), 10), "a negative size");
        assert!(!plausible(&page(-10, 8, 40), 10), "negative values");
        assert!(!plausible(&two[..3], 16), "a header cut short");
        assert!(plausible(&[], 0), "an empty chunk claims nothing");
        assert!(!plausible(&two, -1));
    }

    /// A file that is no Parquet, or is missing, leaves every column to polars (which refuses
    /// it with its own message).
    #[test]
    fn a_file_that_cannot_be_read_leaves_every_column_to_polars() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.parquet");
        std::fs::write(&path, b"PAR1 not a parquet file at all PAR1").unwrap();
        let names = vec!["platform".to_owned()];
        assert_eq!(read(&path, names.clone()).1, names);
        assert_eq!(read(&dir.path().join("missing.parquet"), names.clone()).1, names);
    }
}
