//! A shop's export read one row at a time, with its line number: CSV with a header row
//! (RFC 4180 quoting; columns by name, in any order, extra ones ignored) or JSON lines
//! (one object a line). Only the row being read is in memory, whatever the file's size.
//!
//! Every CSV cell is read as text — `"007"` stays `"007"`, `"198.00"` keeps its scale —
//! and the row type decides what a cell means (`desk::onboarding::records`). What it
//! deliberately does not do: guess a delimiter or an encoding (UTF-8, comma), or skip a
//! bad row silently: a row that cannot be read is an error with its line, like one that
//! fails its checks.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::DeserializeOwned;

/// The two shapes a file may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// Every name `--format` takes.
    pub const NAMES: [&'static str; 2] = ["csv", "jsonl"];
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "jsonl" => Ok(Format::Jsonl),
            other => Err(format!("unknown format '{other}': csv or jsonl")),
        }
    }
}

impl Format {
    /// By extension (`.csv`; `.jsonl`, `.ndjson`, `.json`), else by the first character
    /// that is not white space: `{` is JSON lines, anything else CSV.
    pub fn detect(path: &Path) -> std::io::Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("csv") => return Ok(Format::Csv),
            Some("jsonl" | "ndjson" | "json") => return Ok(Format::Jsonl),
            _ => {}
        }
        let mut head = Vec::new();
        File::open(path)?.take(4096).read_to_end(&mut head)?;
        let first = head
            .iter()
            .find(|b| !b.is_ascii_whitespace() && **b != 0xEF && **b != 0xBB && **b != 0xBF);
        Ok(if first == Some(&b'{') {
            Format::Jsonl
        } else {
            Format::Csv
        })
    }
}

/// A row that could not be used: where, which record if known, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RowError {
    /// 1-based line of the file (a CSV record that spans lines: its first).
    pub line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub message: String,
}

/// Counts the bytes read, for a progress bar over the file's size.
struct Counting<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

enum Source {
    Csv {
        reader: csv::Reader<Counting<File>>,
        headers: Vec<String>,
        record: csv::StringRecord,
        /// The file's size, and whether its last byte is a line break.
        end: (u64, bool),
    },
    Jsonl {
        reader: BufReader<Counting<File>>,
        line: u64,
        buffer: String,
    },
}

/// The rows of one file, in order.
pub struct Rows<T> {
    source: Source,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    total: u64,
    _row: std::marker::PhantomData<T>,
}

impl<T: DeserializeOwned> Rows<T> {
    /// Opens `path` as `format`. A CSV file's header row is read here: a file without
    /// one (or with an unreadable one) is refused before any row.
    pub fn open(path: &Path, format: Format) -> Result<Rows<T>, RowError> {
        let io_error = |e: std::io::Error| RowError {
            line: 0,
            id: None,
            message: format!("cannot read {}: {e}", path.display()),
        };
        let mut file = File::open(path).map_err(io_error)?;
        let total = file.metadata().map_err(io_error)?.len();
        let end = (
            total,
            last_byte(&mut file).map_err(io_error)? == Some(b'\n'),
        );
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counting = Counting {
            inner: file,
            read: read.clone(),
        };
        let source = match format {
            Format::Csv => {
                let mut reader = csv::ReaderBuilder::new()
                    .trim(csv::Trim::Headers)
                    .from_reader(counting);
                let headers = reader
                    .headers()
                    .map_err(|e| RowError {
                        line: 1,
                        id: None,
                        message: format!("the header row cannot be read: {e}"),
                    })?
                    .iter()
                    .map(|h| h.trim_start_matches('\u{feff}').to_ascii_lowercase())
                    .collect();
                Source::Csv {
                    reader,
                    headers,
                    record: csv::StringRecord::new(),
                    end,
                }
            }
            Format::Jsonl => Source::Jsonl {
                reader: BufReader::new(counting),
                line: 0,
                buffer: String::new(),
            },
        };
        Ok(Rows {
            source,
            read,
            total,
            _row: std::marker::PhantomData,
        })
    }

    /// The CSV header's column names (lower case); empty for JSON lines.
    pub fn columns(&self) -> &[String] {
        match &self.source {
            Source::Csv { headers, .. } => headers,
            Source::Jsonl { .. } => &[],
        }
    }

    /// Bytes read so far and the file's size.
    pub fn progress(&self) -> (u64, u64) {
        (
            self.read.load(std::sync::atomic::Ordering::Relaxed),
            self.total,
        )
    }

    /// The next row: its line and the row, or the error that stops this row (the next
    /// call goes on with the following one). `None` at the end of the file.
    pub fn next_row(&mut self) -> Option<(u64, Result<T, String>)> {
        match &mut self.source {
            Source::Csv {
                reader,
                headers,
                record,
                end,
            } => next_csv(reader, headers, record, *end),
            Source::Jsonl {
                reader,
                line,
                buffer,
            } => next_json(reader, line, buffer),
        }
    }
}

fn next_csv<T: DeserializeOwned>(
    reader: &mut csv::Reader<Counting<File>>,
    headers: &[String],
    record: &mut csv::StringRecord,
    (size, newline_end): (u64, bool),
) -> Option<(u64, Result<T, String>)> {
    loop {
        let result = reader.read_record(record);
        // A record that runs to the end of the file has no line break of its own when
        // the file has none at its end, or when a quote never closed swallowed it.
        let at_end = reader.position().byte() == size;
        let unclosed =
            at_end && newline_end && record.iter().next_back().is_some_and(|c| c.ends_with('\n'));
        let ended = u64::from(!(at_end && (!newline_end || unclosed)));
        let line = record_line(reader.position().line(), ended, record);
        match result {
            Ok(false) => return None,
            Ok(true) | Err(_) if unclosed => {
                return Some((
                    line,
                    Err("a quote opened on this line is never closed".into()),
                ))
            }
            Ok(true) if record.iter().all(|c| c.trim().is_empty()) => continue,
            Ok(true) => {
                let cells: serde_json::Map<String, serde_json::Value> = headers
                    .iter()
                    .zip(record.iter())
                    .map(|(h, v)| (h.clone(), serde_json::Value::String(v.trim().to_string())))
                    .collect();
                let row = serde_json::from_value(serde_json::Value::Object(cells))
                    .map_err(|e| e.to_string());
                return Some((line, row));
            }
            Err(e) => {
                let message = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("{len} cells where the header has {expected_len}"),
                    _ => e.to_string(),
                };
                return Some((line, Err(message)));
            }
        }
    }
}

/// The file's last byte (`None` when it is empty); the file is left at its start.
fn last_byte(file: &mut File) -> std::io::Result<Option<u8>> {
    use std::io::{Seek, SeekFrom};
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut byte = [0u8];
    file.read_exact(&mut byte)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(Some(byte[0]))
}

/// The line a record starts on. csv's own record position counts from before the blank
/// lines it skipped, so it is taken from the end instead: the reader stands on the line
/// after the record (`ended` is 1 when the record's line break was read), less the line
/// breaks quoted inside its cells (read untrimmed).
fn record_line(next_line: u64, ended: u64, record: &csv::StringRecord) -> u64 {
    let inside: u64 = record.iter().map(|c| c.matches('\n').count() as u64).sum();
    next_line.saturating_sub(ended + inside).max(1)
}

fn next_json<T: DeserializeOwned>(
    reader: &mut BufReader<Counting<File>>,
    line: &mut u64,
    buffer: &mut String,
) -> Option<(u64, Result<T, String>)> {
    loop {
        buffer.clear();
        *line += 1;
        match reader.read_line(buffer) {
            Ok(0) => return None,
            Ok(_) if buffer.trim().is_empty() => continue,
            Ok(_) => {
                let text = buffer.trim_start_matches('\u{feff}');
                return Some((
                    *line,
                    serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}")),
                ));
            }
            Err(e) => return Some((*line, Err(format!("unreadable line: {e}")))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use desk::onboarding::records::OrderRow;

    fn rows(name: &str, text: &str) -> Vec<(u64, Result<OrderRow, String>)> {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("the file");
        let format = Format::detect(&path).expect("detected");
        let mut rows = Rows::<OrderRow>::open(&path, format).expect("opens");
        let mut out = Vec::new();
        while let Some(row) = rows.next_row() {
            out.push(row);
        }
        out
    }

    #[test]
    fn csv_cells_stay_text_and_lines_count_from_the_header() {
        let got = rows(
            "orders.csv",
            "id,currency,amount,customer_id\n007,JPY,1980,C-1\n\n\"O,2\",CNY,198.00,\"C\n1\"\nO-3,USD,1.00\n",
        );
        assert_eq!(got.len(), 3, "{got:?}");
        let first = got[0].1.as_ref().expect("a row");
        assert_eq!((got[0].0, first.id.as_deref()), (2, Some("007")));
        let second = got[1].1.as_ref().expect("a quoted row");
        assert_eq!(second.id.as_deref(), Some("O,2"));
        assert_eq!(second.amount.as_deref(), Some("198.00"));
        assert_eq!(got[1].0, 4);
        assert_eq!(got[2].0, 6);
        assert_eq!(
            got[2].1.as_ref().unwrap_err(),
            "3 cells where the header has 4"
        );
        let last = rows("orders.csv", "id,currency\n\n\nO-1,USD\n\n\nO-2,\"U\nSD\"");
        let lines: Vec<u64> = last.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [4, 7], "no line break after the last record");
        let unclosed = rows("orders.csv", "id,currency\nO-1,\"USD\nO-2,USD\n");
        assert_eq!(unclosed.len(), 1);
        assert_eq!(unclosed[0].0, 2);
        assert_eq!(
            unclosed[0].1.as_ref().unwrap_err(),
            "a quote opened on this line is never closed"
        );
    }

    #[test]
    fn json_lines_are_detected_and_a_bad_line_is_an_error_of_its_own() {
        let got = rows(
            "orders.export",
            "{\"id\":\"O-1\"}\n\n{not json\n{\"id\":\"O-3\"}\n",
        );
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, 1);
        assert!(got[1].1.is_err() && got[1].0 == 3);
        assert_eq!(got[2].1.as_ref().expect("a row").id.as_deref(), Some("O-3"));
    }
}
