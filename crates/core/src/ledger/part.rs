//! Writing one part file: polars' Parquet encoder, with each column's encoding chosen from
//! what the ledger knows of it (the `encoding` of each column in [`super::schema::SCHEMA`]).
//!
//! polars' `ParquetWriter` tries a dictionary for every column: it estimates each column's
//! number of distinct values (a HyperLogLog pass hashing every value), then, when that is
//! low, builds the dictionary by hashing every value again. On a 1 GB import this was a
//! tenth of the CPU time, most of it spent on columns whose answer the ledger knows:
//! - `id` is unique and `source_line` nearly so; amounts rarely repeat (and polars cannot
//!   dictionary-encode decimals anyway): plain encoding, nothing estimated.
//! - A text column holding one value for the whole part file (the platform, the source file,
//!   the month, usually the currency and account): a one-entry dictionary made directly, and
//!   its keys, all zero, take no space.
//! - `category`, `kind` and `pricing` come as codes (their values are a closed set): a
//!   dictionary of the texts present, made directly.
//! - Every other column: polars' own choice, as before.
//!
//! A part file is one row group (a part holds at most a few flushes' worth of rows). Readers
//! see the same file as from `ParquetWriter`: the same Parquet schema and Arrow schema
//! metadata and statistics.
//!
//! The codec is SNAPPY, which every engine the ledger is meant for reads: DuckDB, polars,
//! Spark, Trino, Presto and Athena (ZSTD too). `LZ4_RAW`, which earlier ledgers used, is
//! read by DuckDB, polars and Spark ≥ 3.5, but Trino's reader does not map it to a codec it
//! has and Athena does not list it. Measured on the 1 GB FOCUS export (`RUNS=6 python
//! benches/object_store.py`, medians, each codec first in turn): SNAPPY 3.83 s and 227 MB of
//! ledger, `LZ4_RAW` 3.88 s and 224 MB, ZSTD (level 1) 3.93 s and 189 MB (4.13 s against
//! 3.75 s in a first run of 3): SNAPPY keeps the import's speed and the fastest decoding for
//! the read side; ZSTD would make files a sixth smaller for a few per cent of the import. Older part files stay as they were: every reader of the
//! ledger reads all three. The environment variable `GPUAUDIT_PARQUET_CODEC` (`snappy`,
//! `zstd`, `lz4_raw`) chooses another, for that benchmark.

use std::io::Write;

use polars::prelude::{ArrayRef, CompatLevel, DataFrame, PolarsError, PolarsResult, SchemaExt};
use polars_arrow::array::{Array, DictionaryArray, PrimitiveArray, Utf8ViewArray};
use polars_arrow::datatypes::{ArrowDataType, IntegerType};
use polars_parquet::read::ParquetError;

use super::schema::{self, enum_text};
use polars_parquet::write::{
    CompressionOptions, Compressor, DynIter, DynStreamingIterator, Encoding,
    FallibleStreamingIterator, FileWriter, StatisticsOptions, Version, WriteOptions,
    array_to_columns, to_parquet_schema,
};

/// The writer's options: polars' defaults (statistics on, version 1 pages); each column's
/// codec is [`compression`]'s.
const OPTIONS: WriteOptions = WriteOptions {
    statistics: StatisticsOptions {
        min_value: true,
        max_value: true,
        distinct_count: false,
        null_count: true,
        binary_statistics_truncate_length: None,
    },
    version: Version::V1,
    compression: CompressionOptions::Uncompressed,
    data_page_size: None,
};

/// Writes `frame` as a Parquet file to `out`.
pub(crate) fn write(out: impl Write, frame: &mut DataFrame) -> PolarsResult<()> {
    let mut stream = Stream::new(out, frame)?;
    stream.write(frame)?;
    stream.end().map(drop)
}

/// A Parquet file written a frame at a time, each frame a row group (a batch's look-back
/// file, see `look_back`), every frame of the schema of the first.
pub(crate) struct Stream<W: Write> {
    writer: FileWriter<W>,
    fields: Vec<polars_parquet::write::ParquetType>,
}

impl<W: Write> Stream<W> {
    /// A file to `out` of the schema of `frame`.
    pub(crate) fn new(out: W, frame: &DataFrame) -> PolarsResult<Self> {
        let mut schema = frame.schema().to_arrow(CompatLevel::newest());
        for field in schema.iter_values_mut() {
            if encoding_of(&field.name) == Some(schema::Encoding::Codes) {
                // Written as text, from codes: see `encoding`.
                field.dtype = ArrowDataType::Utf8View;
            }
        }
        let parquet_schema = to_parquet_schema(&schema)?;
        let fields = parquet_schema.fields().to_vec();
        let writer = FileWriter::new_with_parquet_schema(out, schema, parquet_schema, OPTIONS);
        Ok(Stream { writer, fields })
    }

    /// Writes `frame`'s rows (none for an empty frame).
    pub(crate) fn write(&mut self, frame: &mut DataFrame) -> PolarsResult<()> {
        frame.rechunk_mut();
        for batch in frame.iter_chunks(CompatLevel::newest(), false) {
            if batch.is_empty() {
                continue;
            }
            let mut columns = Vec::with_capacity(self.fields.len());
            for ((array, type_), name) in
                batch.columns().iter().zip(&self.fields).zip(frame.get_column_names())
            {
                let (array, encoding) = encoding(name, array);
                for pages in array_to_columns(array, type_.clone(), OPTIONS, &[encoding])? {
                    let pages = pages.map(|page| {
                        page.map_err(|e| ParquetError::FeatureNotSupported(format!("polars: {e}")))
                    });
                    let compressed = Compressor::new_from_vec(pages, compression(name), vec![])
                        .map_err(PolarsError::from);
                    columns.push(Ok(DynStreamingIterator::new(compressed)));
                }
            }
            self.writer.write(batch.len() as u64, DynIter::new(columns.into_iter()))?;
        }
        Ok(())
    }

    /// Ends the file.
    pub(crate) fn end(mut self) -> PolarsResult<W> {
        self.writer.end(None)?;
        Ok(self.writer.into_inner())
    }
}

/// The encoding [`schema::SCHEMA`] gives column `name`; `None` for a column it does not
/// name.
fn encoding_of(name: &str) -> Option<schema::Encoding> {
    schema::column_named(name).map(|c| c.encoding)
}

/// The array to encode for column `name`, and how.
fn encoding(name: &str, array: &ArrayRef) -> (ArrayRef, Encoding) {
    match encoding_of(name) {
        Some(schema::Encoding::Plain | schema::Encoding::PlainUncompressed) => {
            return (array.clone(), Encoding::Plain);
        }
        Some(schema::Encoding::Codes) => {
            if let Some(codes) = array.as_any().downcast_ref::<PrimitiveArray<i32>>()
                && let Some(texts) = enum_dictionary(name, codes)
            {
                return (texts, Encoding::RleDictionary);
            }
        }
        Some(schema::Encoding::Dictionary) | None => {}
    }
    if matches!(array.dtype(), ArrowDataType::Decimal(..)) {
        // polars cannot dictionary-encode decimals.
        return (array.clone(), Encoding::Plain);
    }
    let one = array.as_any().downcast_ref::<Utf8ViewArray>().and_then(one_value);
    (one.unwrap_or_else(|| array.clone()), Encoding::RleDictionary)
}

/// How column `name` is compressed: with [`codec`], but for a column the schema says no
/// codec shrinks.
fn compression(name: &str) -> CompressionOptions {
    match encoding_of(name) {
        Some(schema::Encoding::PlainUncompressed) => CompressionOptions::Uncompressed,
        _ => codec(),
    }
}

/// The codec of part files (see the module docs).
fn codec() -> CompressionOptions {
    static CODEC: std::sync::OnceLock<CompressionOptions> = std::sync::OnceLock::new();
    *CODEC.get_or_init(|| match std::env::var("GPUAUDIT_PARQUET_CODEC").as_deref() {
        Ok("zstd") => CompressionOptions::Zstd(polars_parquet::write::ZstdLevel::try_new(1).ok()),
        Ok("lz4_raw") => CompressionOptions::Lz4Raw,
        _ => CompressionOptions::Snappy,
    })
}

/// The texts of the codes of enum column `name`, as a dictionary of the values present
/// (so that the column's statistics are those of its texts); `None` for another column.
fn enum_dictionary(name: &str, codes: &PrimitiveArray<i32>) -> Option<ArrayRef> {
    // The key of each code met so far: codes are indexes into a type's short `ALL`.
    let mut keys_of: Vec<Option<u8>> = Vec::new();
    let mut texts = Vec::new();
    let mut keys = Vec::with_capacity(codes.len());
    for &code in codes.values().iter() {
        let at = usize::try_from(code).ok()?;
        if at >= keys_of.len() {
            keys_of.resize(at + 1, None);
        }
        let key = match keys_of[at] {
            Some(key) => key,
            None => {
                texts.push(enum_text(name, code)?);
                *keys_of[at].insert(u8::try_from(texts.len() - 1).ok()?)
            }
        };
        keys.push(key);
    }
    let keys =
        PrimitiveArray::<u8>::new(ArrowDataType::UInt8, keys.into(), codes.validity().cloned());
    let values = Utf8ViewArray::from_slice_values(texts).boxed();
    let dtype =
        ArrowDataType::Dictionary(IntegerType::UInt8, Box::new(ArrowDataType::Utf8View), false);
    DictionaryArray::try_new(dtype, keys, values).ok().map(|d| d.boxed())
}

/// `texts` as a dictionary of one entry, when every row holds the same text.
fn one_value(texts: &Utf8ViewArray) -> Option<ArrayRef> {
    if texts.is_empty() || texts.null_count() > 0 {
        return None;
    }
    let views = texts.views();
    let first = texts.value(0);
    // Rows of one batch share a view; rows of other batches hold the same text elsewhere.
    let same = (0..texts.len())
        .all(|i| views[i].as_u128() == views[0].as_u128() || texts.value(i) == first);
    if !same {
        return None;
    }
    let keys = PrimitiveArray::<u8>::from_vec(vec![0; texts.len()]);
    let values = Utf8ViewArray::from_slice_values([first]).boxed();
    let dtype =
        ArrowDataType::Dictionary(IntegerType::UInt8, Box::new(ArrowDataType::Utf8View), false);
    DictionaryArray::try_new(dtype, keys, values).ok().map(|d| d.boxed())
}

#[cfg(test)]
mod tests {
    use polars::prelude::*;

    use super::*;

    /// Two batches stacked, as a flush stacks them: a long text the same in every row but
    /// stored once per batch, one that differs in its last row only, ids, nulls and decimals.
    fn frame() -> DataFrame {
        let batch = |rows: std::ops::Range<i64>, last: &str| -> DataFrame {
            let n = rows.end - rows.start;
            let ids: Vec<String> = rows.clone().map(|i| format!("{i:032x}")).collect();
            let mut almost: Vec<&str> = vec!["same-until-the-last-row"; n as usize];
            almost[n as usize - 1] = last;
            let with_nulls: Vec<Option<&str>> =
                rows.clone().map(|i| (i % 3 != 0).then_some("i-abc")).collect();
            let cost = Int128Chunked::from_vec(
                "billed_cost".into(),
                rows.clone().map(|i| i128::from(i) * 10_000).collect(),
            )
            .into_decimal_unchecked(38, 12);
            DataFrame::new_infer_height(vec![
                Column::new("id".into(), ids),
                StringChunked::full(
                    "source_file".into(),
                    "/bills/a-long-export-name.csv",
                    n as usize,
                )
                .into_column(),
                Column::new("unit".into(), almost),
                Column::new("instance_id".into(), with_nulls),
                cost.into_column(),
                Column::new("source_line".into(), rows.collect::<Vec<i64>>()),
            ])
            .unwrap()
        };
        let mut frame = batch(0..1000, "same-until-the-last-row");
        frame.vstack_mut_owned(batch(1000..2500, "different")).unwrap();
        frame
    }

    #[test]
    fn a_part_file_reads_back_as_written_with_the_chosen_encodings() {
        let want = frame();
        let mut bytes = Vec::new();
        write(&mut bytes, &mut want.clone()).unwrap();

        let read = ParquetReader::new(std::io::Cursor::new(bytes.clone())).finish().unwrap();
        assert_eq!(read.schema(), want.schema());
        assert!(read.equals_missing(&want), "{read:?}\n{want:?}");

        let metadata =
            polars_parquet::read::read_metadata(&mut std::io::Cursor::new(bytes)).unwrap();
        assert_eq!(metadata.row_groups.len(), 1);
        let dictionary: Vec<(String, bool)> = metadata.row_groups[0]
            .parquet_columns()
            .iter()
            .map(|c| {
                (c.descriptor().path_in_schema[0].to_string(), c.dictionary_page_offset().is_some())
            })
            .collect();
        let expected = [
            ("id", false),
            ("source_file", true),
            ("unit", true),
            ("instance_id", true),
            ("billed_cost", false),
            ("source_line", false),
        ];
        let expected: Vec<(String, bool)> =
            expected.iter().map(|(n, d)| (n.to_string(), *d)).collect();
        assert_eq!(dictionary, expected);
    }

    #[test]
    fn enum_codes_are_written_as_their_texts() {
        use crate::charge::{Category, Kind};
        let categories = [Category::Traffic, Category::Compute, Category::Traffic, Category::Other];
        let mut frame = DataFrame::new_infer_height(vec![
            Column::new("category".into(), categories.map(|c| c as i32).to_vec()),
            Column::new("kind".into(), vec![Kind::Refund as i32; 4]),
        ])
        .unwrap();
        let mut bytes = Vec::new();
        write(&mut bytes, &mut frame).unwrap();
        let read = ParquetReader::new(std::io::Cursor::new(bytes)).finish().unwrap();
        let texts = |name: &str| -> Vec<String> {
            let column = read.column(name).unwrap().str().unwrap();
            column.iter().map(|v| v.unwrap().to_owned()).collect()
        };
        assert_eq!(texts("category"), categories.map(|c| c.as_str().to_owned()));
        assert_eq!(texts("kind"), vec!["refund"; 4]);
    }

    #[test]
    fn only_a_text_held_by_every_row_becomes_a_one_entry_dictionary() {
        let frame = frame();
        let array = |name: &str| {
            let column = frame.column(name).unwrap().as_materialized_series().rechunk();
            column.to_arrow(0, CompatLevel::newest())
        };
        let one = |name: &str| {
            let array = array(name);
            let texts = array.as_any().downcast_ref::<Utf8ViewArray>().unwrap();
            one_value(texts).map(|d| d.len())
        };
        assert_eq!(one("source_file"), Some(2500));
        assert_eq!(one("unit"), None, "differs in the last row");
        assert_eq!(one("instance_id"), None, "has nulls");
        assert!(matches!(encoding("id", &array("id")).1, Encoding::Plain));
        assert!(matches!(encoding("billed_cost", &array("billed_cost")).1, Encoding::Plain));
        assert!(matches!(encoding("unit", &array("unit")).1, Encoding::RleDictionary));
    }
}
