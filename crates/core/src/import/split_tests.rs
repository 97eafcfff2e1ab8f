//! Tests of the record splitter against the `csv` crate, and of its limits.

use super::*;

type Fields = Vec<Vec<u8>>;

/// The fields of every record of `text` as the `csv` crate reads them.
fn by_csv(text: &[u8]) -> Vec<Fields> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text);
    let mut out = Vec::new();
    let mut record = csv::ByteRecord::new();
    while reader.read_byte_record(&mut record).unwrap() {
        out.push(record.iter().map(<[u8]>::to_vec).collect());
    }
    out
}

/// Every record of `text` as the splitter reads it `read` bytes at a time, with its
/// position, checked against the text: a record starts at a byte that is no line end and
/// that begins its first field, on the line that byte is on, after the record before.
fn by_splitter(text: &[u8], read: usize) -> Vec<Fields> {
    let mut splitter = Splitter::with_read_size(text, read);
    let mut out = Vec::new();
    let mut record = Record::new();
    let mut last = None;
    while splitter.read(&mut record).unwrap_or_else(|e| panic!("{e:?}")) {
        let fields: Fields = record.iter().map(<[u8]>::to_vec).collect();
        let Position { line, byte } = record.position().unwrap();
        let at = &text[byte as usize..];
        let context = format!("{:?} record {}", String::from_utf8_lossy(text), out.len());
        assert!(!matches!(at[0], b'\r' | b'\n'), "{context}");
        assert!(at[0] == b'"' || at.starts_with(&fields[0]), "{context}");
        let lines_before = memchr::memchr_iter(b'\n', &text[..byte as usize]).count();
        assert_eq!(line, 1 + lines_before as u64, "{context}");
        assert!(last < Some(byte), "{context}");
        last = Some(byte);
        out.push(fields);
    }
    out
}

/// The splitter's records are the csv crate's, or the splitter says a quote is never
/// closed, and the last record the csv crate reads does hold a quote that opened a field
/// and runs to the end (the csv crate takes the rest of the stream into it).
fn check(text: &[u8], read: usize) {
    let context = format!("{:?} read {read} at a time", String::from_utf8_lossy(text));
    let mut splitter = Splitter::with_read_size(text, read);
    let mut record = Record::new();
    loop {
        match splitter.read(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(SplitError::Unclosed { line, at_end: true, .. }) => {
                let quoting = text.iter().fold(Quoting::FieldStart, |q, &b| q.step(b, b','));
                assert_eq!(quoting, Quoting::Quoted, "{context}");
                let lines = 1 + memchr::memchr_iter(b'\n', text).count();
                assert!(line as usize <= lines, "{context}");
                return;
            }
            Err(e) => panic!("{context}: {e:?}"),
        }
    }
    assert_eq!(by_splitter(text, read), by_csv(text), "{context}");
}

#[test]
fn scanning_for_quotes_gives_the_state_of_every_byte_stepped() {
    let pieces: &[&[u8]] = &[b"abc", b",", b";", b"\n", b"\r", b"\"", b"\"\"", b" ", b"x\"y"];
    let mut next = crate::xorshift(0x5851_f42d_4c95_7f2d);
    for _ in 0..5000 {
        let mut text = Vec::new();
        for _ in 0..next() % 30 {
            text.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let start =
            [Quoting::FieldStart, Quoting::Unquoted, Quoting::Quoted, Quoting::QuoteInQuoted]
                [(next() % 4) as usize];
        for delimiter in [b',', b';'] {
            let stepped = text.iter().fold(start, |q, &b| q.step(b, delimiter));
            assert_eq!(
                start.scan(&text, delimiter),
                stepped,
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

#[test]
fn an_unclosed_quote_is_an_error_at_the_line_it_opened() {
    let text = b"id,note,cost\n1,a,2\n2,\"open,3\n3,c,4\n4,d,5\n";
    let mut splitter = Splitter::with_read_size(&text[..], 5);
    let mut record = Record::new();
    assert!(splitter.read(&mut record).unwrap());
    assert!(splitter.read(&mut record).unwrap());
    match splitter.read(&mut record) {
        Err(SplitError::Unclosed { line: 3, field: 1, at_end: true }) => {}
        other => panic!("{other:?}"),
    }
    let mut long = String::from("id,note\n1,\"open\n");
    for i in 0..2000 {
        long.push_str(&format!("{i},row\n"));
    }
    let mut splitter = Splitter::with_read_size(long.as_bytes(), 4096);
    assert!(splitter.read(&mut record).unwrap());
    match splitter.read(&mut record) {
        Err(SplitError::Unclosed { line: 2, field: 1, at_end: false }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_record_past_the_limit_is_an_error_not_a_larger_buffer() {
    let mut text = b"a,b\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', MAX_RECORD_BYTES + 10));
    text.extend_from_slice(b"\n1,2\n");
    let mut splitter = Splitter::with_read_size(&text[..], READ_BYTES);
    let mut record = Record::new();
    assert!(splitter.read(&mut record).unwrap());
    assert!(matches!(splitter.read(&mut record), Err(SplitError::TooLong { line: 2, .. })));
    let quoted = format!("a\n\"{}\"\n", "y".repeat(MAX_RECORD_BYTES + 1));
    let mut splitter = Splitter::with_read_size(quoted.as_bytes(), READ_BYTES);
    assert!(splitter.read(&mut record).unwrap());
    assert!(matches!(splitter.read(&mut record), Err(SplitError::TooLong { line: 2, .. })));
    // A stream without a line end (`/dev/zero`) stops at the limit too.
    let zeros = std::io::repeat(0).take(64 * MAX_RECORD_BYTES as u64);
    let mut splitter = Splitter::with_read_size(zeros, READ_BYTES);
    assert!(matches!(splitter.read(&mut record), Err(SplitError::TooLong { line: 1, .. })));
}

#[test]
fn semicolon_files_split_at_semicolons() {
    let text = b"a;b;c\n1,5;\"x;y\";3\n";
    let mut splitter = Splitter::with_read_size(&text[..], READ_BYTES).with_delimiter(b';');
    let mut record = Record::new();
    assert!(splitter.read(&mut record).unwrap());
    assert_eq!(record.len(), 3);
    assert!(splitter.read(&mut record).unwrap());
    let fields: Vec<&[u8]> = record.iter().collect();
    assert_eq!(fields, [&b"1,5"[..], b"x;y", b"3"]);
}

#[test]
fn records_are_those_of_the_csv_crate_at_their_own_line() {
    let cases: &[&[u8]] = &[
        b"",
        b"\n\n",
        b"a,b,c\n1,2,3\n",
        b"a,b,c\r\n1,2,3\r\n",
        b"a,b\n1,2",
        b"a,b\r\n1,2\r",
        b"a,b\r1,2\r3,4",
        b"a,,\n,,\n,\n",
        b"\n\na,b\n\n\nc\n",
        b"a,\"b,c\",d\n\"x\ny\",2\n3,4\n",
        b"\"quoted \"\"twice\"\"\",plain\n",
        b"\"open,never closed\nmore\n",
        b"a,b\"c,d\n",
        b"\r\n\r\na\r\n",
        "名称,金额\n云服务器,\"1,234.56\"\n".as_bytes(),
    ];
    for text in cases {
        for read in [1, 2, 3, 7, 64 * 1024] {
            check(text, read);
        }
    }
}

#[test]
fn records_after_a_crlf_line_end_or_empty_lines_are_at_the_line_they_are_on() {
    // The csv crate gives such a record the position of the line end or empty lines
    // before it (line 1 for the second record here), which put errors in CRLF files one
    // line too high.
    let mut splitter = Splitter::with_read_size(&b"a,b\r\n1,2\r\n\r\n\n3,4\n"[..], READ_BYTES);
    let mut record = Record::new();
    let mut found = Vec::new();
    while splitter.read(&mut record).unwrap() {
        let p = record.position().unwrap();
        found.push((p.line(), p.byte()));
    }
    assert_eq!(found, [(1, 0), (2, 5), (5, 13)]);
}

#[test]
fn generated_files_split_as_the_csv_crate_splits_them() {
    // Pieces a bill is made of, and the ones that send a record through csv-core.
    let pieces: &[&[u8]] =
        &[b"abc", b"1,234.56", b",", b",", b"\n", b"\r\n", b"\"", b"\"\"", b"\r", b" ", b"x\"y"];
    let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let mut text = Vec::new();
        for _ in 0..next() % 40 {
            text.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let read = 1 + (next() % 9) as usize;
        check(&text, read);
    }
}

#[test]
fn records_longer_than_the_buffer_grow_it() {
    let long = "x".repeat(20_000);
    let text = format!("a,{long}\n\"{long}\n{long}\",b\r\nc,d");
    for read in [7, 4096, READ_BYTES] {
        check(text.as_bytes(), read);
    }
    assert_eq!(by_csv(text.as_bytes())[1][0].len(), 40_001);
}

#[test]
fn a_record_gives_its_fields_by_index_and_as_one_slice() {
    let mut splitter = Splitter::with_read_size(&b"id,\"a,b\",\nx"[..], READ_BYTES);
    let mut record = Record::new();
    assert!(splitter.read(&mut record).unwrap());
    assert_eq!(record.len(), 3);
    assert_eq!(record.get(0), Some(&b"id"[..]));
    assert_eq!(record.get(1), Some(&b"a,b"[..]));
    assert_eq!(record.get(2), Some(&b""[..]));
    assert_eq!(record.get(3), None);
    assert_eq!(&record.as_slice()[record.range(1).unwrap()], b"a,b");
    assert!(splitter.read(&mut record).unwrap());
    assert_eq!((record.len(), record.position().unwrap().line()), (1, 2));
    assert!(!splitter.read(&mut record).unwrap());
}
