//! Mail for the email tests: a private Postfix + Dovecot pair per test
//! (`scripts/mail-servers` with a directory and ports of its own, so a test may stop its
//! servers without touching another's), and the Python tool that builds, sends and reads
//! mail with clients nobody here wrote (`scripts/python/mailtool.py`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use desk::config::{Config, MailConfig};
use serde_json::Value;

use super::serve::free_port;

/// The support address the app answers from and reads.
pub const SUPPORT: &str = "support@shop.test";
/// `INBOUND_EMAIL_TOKEN` in the tests.
pub const INBOUND_TOKEN: &str = "inbound-test-token";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `scripts/python/mailtool.py` with `args`; its stdout.
pub fn mailtool(args: &[&str]) -> Vec<u8> {
    let out = Command::new("python3")
        .arg(repo().join("scripts/python/mailtool.py"))
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "mailtool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// One plain message built by Python's `email` package, with extra `headers`, as the
/// trusted receiving server hands it on: with its DMARC pass for the From domain.
pub fn build(from: &str, subject: &str, body: &str, headers: &[&str]) -> Vec<u8> {
    proven(&build_as_written(from, subject, body, headers), from)
}

/// `raw` with the trusted server's DMARC pass for `from`'s domain on top.
pub fn proven(raw: &[u8], from: &str) -> Vec<u8> {
    let domain = from.rsplit('@').next().unwrap_or("").trim_end_matches('>');
    stamped(raw, &format!("dmarc=pass header.from={domain}"))
}

/// [`build`] as the sender wrote it: nothing added on the way.
pub fn build_as_written(from: &str, subject: &str, body: &str, headers: &[&str]) -> Vec<u8> {
    let mut args = vec!["build", from, SUPPORT, subject, body];
    for h in headers {
        args.push("--header");
        args.push(h);
    }
    mailtool(&args)
}

/// The authserv-id of the receiving server the tests' apps trust (`MAIL_AUTHSERV_ID`).
pub const AUTHSERV_ID: &str = "mx.shop.test";

/// `raw` as the trusted receiving server hands it on: its own `Authentication-Results`
/// with `results` prepended above everything the sender wrote (RFC 8601 §5).
pub fn stamped(raw: &[u8], results: &str) -> Vec<u8> {
    let eol = if raw.windows(2).any(|w| w == b"\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut out = format!("Authentication-Results: {AUTHSERV_ID}; {results}{eol}").into_bytes();
    out.extend_from_slice(raw);
    out
}

/// The mail settings of an app that takes mail through the API only (no servers).
pub fn api_only(config: &mut Config) {
    config.channels.mail = MailConfig {
        from: Some(SUPPORT.into()),
        inbound_token: Some(INBOUND_TOKEN.into()),
        authserv_id: Some(AUTHSERV_ID.into()),
        retry: Duration::from_secs(30),
        ..MailConfig::default()
    };
    config.public_url = Some("http://desk.test".into());
}

/// A Postfix + Dovecot pair of this test's own.
pub struct MailServers {
    pub dir: PathBuf,
    pub smtp_port: u16,
    pub imap_port: u16,
    /// Mails the outside clients sent (swaks, smtplib) and read back (imaplib, each
    /// Message-ID once), written to `$TEST_MAIL_COUNTS` when the pair stops (`.ci/run`
    /// prints the totals).
    sent: std::sync::atomic::AtomicUsize,
    read: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl MailServers {
    /// Starts a pair on free ports under a fresh directory (returns once both greet).
    pub fn start() -> MailServers {
        MailServers::start_with_sender_results("")
    }

    /// [`MailServers::start`] with Postfix's verdicts for some envelope senders: lines
    /// of a Postfix regexp table (`/^form-1@relay\.test$/ PREPEND Authentication-Results:
    /// …`), read before the default SPF pass (`scripts/mail-servers`).
    pub fn start_with_sender_results(rules: &str) -> MailServers {
        assert!(
            Path::new("/usr/sbin/postfix").exists(),
            "Postfix is not installed: run scripts/mail-servers install (scripts/test does)"
        );
        let dir = PathBuf::from(format!("/tmp/rd-mail-{}", uuid::Uuid::new_v4().simple()));
        let servers = MailServers {
            dir,
            smtp_port: free_port(),
            imap_port: free_port(),
            sent: Default::default(),
            read: Default::default(),
        };
        std::fs::create_dir_all(&servers.dir).unwrap();
        std::fs::write(servers.dir.join("sender-results"), rules).unwrap();
        servers.run("start");
        servers
    }

    fn run(&self, what: &str) {
        let out = Command::new(repo().join("scripts/mail-servers"))
            .arg(what)
            .env("MAILTEST_DIR", &self.dir)
            .env("SMTP_PORT", self.smtp_port.to_string())
            .env("IMAP_PORT", self.imap_port.to_string())
            .env("MAILTEST_AUTHSERV_ID", AUTHSERV_ID)
            .env("MAILTEST_SENDER_RESULTS", self.dir.join("sender-results"))
            .output()
            .expect("scripts/mail-servers runs");
        assert!(
            out.status.success(),
            "mail-servers {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn stop(&self) {
        self.run("stop");
    }

    pub fn start_again(&self) {
        self.run("start");
    }

    pub fn smtp_url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.smtp_port)
    }

    pub fn imap_url(&self) -> String {
        format!(
            "imap://{}:test-pass@127.0.0.1:{}/INBOX",
            SUPPORT.replace('@', "%40"),
            self.imap_port
        )
    }

    /// The app's mail settings against these servers.
    pub fn configure(&self, config: &mut Config) {
        api_only(config);
        config.channels.mail.smtp_url = Some(self.smtp_url());
        config.channels.mail.imap_url = Some(self.imap_url());
    }

    /// Sends raw bytes with Python's smtplib, as a customer's client would.
    pub fn send(&self, from: &str, raw: &[u8]) {
        let file = self
            .dir
            .join(format!("out-{}.eml", uuid::Uuid::new_v4().simple()));
        std::fs::write(&file, raw).unwrap();
        let port = self.smtp_port.to_string();
        let path = file.to_string_lossy().to_string();
        mailtool(&["send", "127.0.0.1", &port, from, SUPPORT, &path]);
        self.count_sent(1);
    }

    /// Sends every file in one SMTP session with Python's smtplib.
    pub fn send_files(&self, from: &str, files: &[String]) {
        let port = self.smtp_port.to_string();
        let mut args = vec!["send", "127.0.0.1", &port, from, SUPPORT];
        args.extend(files.iter().map(String::as_str));
        mailtool(&args);
        self.count_sent(files.len());
    }

    fn count_sent(&self, n: usize) {
        self.sent.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sends with swaks, as Debian ships it.
    pub fn swaks(&self, from: &str, subject: &str, body: &str) {
        let out = Command::new("swaks")
            .args(["--server", &format!("127.0.0.1:{}", self.smtp_port)])
            .args(["--from", from, "--to", SUPPORT])
            .args(["--header", &format!("Subject: {subject}"), "--body", body])
            .output()
            .expect("swaks runs");
        assert!(
            out.status.success(),
            "swaks: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        self.count_sent(1);
    }

    /// What `user`'s INBOX holds, read with Python's imaplib.
    pub fn read(&self, user: &str) -> Vec<Value> {
        let port = self.imap_port.to_string();
        let out = mailtool(&["read", "127.0.0.1", &port, user]);
        let mails: Vec<Value> = serde_json::from_slice(&out).expect("mailtool read prints JSON");
        if let Ok(mut read) = self.read.lock() {
            read.extend(mails.iter().map(|m| format!("{user} {}", m["message_id"])));
        }
        mails
    }

    /// `user`'s INBOX once it holds at least `count` mails (delivery through Postfix to
    /// Dovecot takes some milliseconds after the SMTP `250`); at most 10 s.
    pub fn wait_for(&self, user: &str, count: usize) -> Vec<Value> {
        for _ in 0..200 {
            let mails = self.read(user);
            if mails.len() >= count {
                return mails;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mails = self.read(user);
        panic!("{user} has {} mails, not {count}: {mails:#?}", mails.len());
    }
}

impl Drop for MailServers {
    fn drop(&mut self) {
        if let Ok(file) = std::env::var("TEST_MAIL_COUNTS") {
            let sent = self.sent.load(std::sync::atomic::Ordering::Relaxed);
            let read = self.read.lock().map(|r| r.len()).unwrap_or(0);
            let line = format!("sent {sent} read {read}\n");
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        }
        let _ = Command::new(repo().join("scripts/mail-servers"))
            .arg("stop")
            .env("MAILTEST_DIR", &self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
