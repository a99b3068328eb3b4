//! What the process logs at info and above, captured per test. One global subscriber for
//! the whole test binary (JSON, with each line's spans), writing to the buffer of the
//! thread that logged, if that thread's test asked for it. A subscriber of its own per test
//! (`set_default`) loses lines now and then when tests run side by side: a call site's
//! interest, cached while another test's thread had no subscriber, can read "never"
//! (tokio-rs/tracing#2874). A `#[tokio::test]` runs the app on its own thread, so the
//! thread tells the tests' lines apart.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

/// The bytes one test's thread logged since `capture()`.
#[derive(Clone, Default)]
pub struct CapturedLogs(pub Arc<Mutex<Vec<u8>>>);

thread_local! {
    static CURRENT: RefCell<Option<CapturedLogs>> = const { RefCell::new(None) };
}

/// Starts capturing this thread's log lines; they stop when the guard drops.
pub fn capture() -> (CapturedLogs, CaptureGuard) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(|| ThreadWriter)
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in this test binary");
        tracing::callsite::rebuild_interest_cache();
    });
    let logs = CapturedLogs::default();
    CURRENT.with(|c| *c.borrow_mut() = Some(logs.clone()));
    (logs, CaptureGuard)
}

/// Ends this thread's capture when dropped.
pub struct CaptureGuard;

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// Appends to the logging thread's capture, or drops the line.
struct ThreadWriter;

impl std::io::Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CURRENT.with(|c| {
            if let Some(logs) = c.borrow().as_ref() {
                if let Ok(mut bytes) = logs.0.lock() {
                    bytes.extend_from_slice(buf);
                }
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
