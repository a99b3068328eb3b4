//! A newcomer's first hour, from the binary a newcomer runs: `refund-agent demo`
//! with no configuration seeds the demo world and staff, an admin among them, prints the
//! sign-in details naming the address it listens on, and keeps customers coming. In
//! Chromium the admin signs in with the printed password and finds rollout, staff and
//! policies; the queue fills and keeps filling without anyone touching it; the printed
//! customer link opens that customer's tickets on a phone.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::browser::Browser;

/// The running `demo` process and the lines it printed; killed when dropped.
struct Demo {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    /// `refund-agent demo` on `addr` in a fresh data dir, 120 customer actions a minute.
    fn start(data: &std::path::Path, addr: &str) -> Demo {
        let mut child = Command::new(env!("CARGO_BIN_EXE_refund-agent"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
            .arg("--data-dir")
            .arg(data)
            .args(["demo", "--addr", addr, "--rate", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the refund-agent binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().expect("the lines").push(line);
            }
        });
        Demo { child, lines }
    }

    /// The first printed line `pick` finds something in, waiting up to 60 s.
    async fn printed<T>(&self, pick: impl Fn(&str) -> Option<T>) -> T {
        for _ in 0..240 {
            let found = self
                .lines
                .lock()
                .expect("the lines")
                .iter()
                .find_map(|l| pick(l));
            if let Some(found) = found {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("not printed: {:?}", self.lines.lock().expect("the lines"))
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Waits until `base` answers HTTP.
async fn wait_for_server(base: &str) {
    let http = reqwest::Client::new();
    for _ in 0..240 {
        if http
            .get(format!("{base}/console/login"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{base} never answered");
}

/// How many cases the queue's "All" tab counts now.
async fn all_cases(browser: &Browser, base: &str) -> i64 {
    browser.goto(&format!("{base}/console?status=all")).await;
    browser.wait_until_loaded().await;
    let count = browser
        .attribute("#queue-tabs a[data-tab=all] .count", "data-count")
        .await;
    count.and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_runs_demo_signs_in_as_the_printed_admin_and_watches_the_desk_fill() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let addr = format!("127.0.0.1:{}", free_port());
    let base = format!("http://{addr}");
    let demo = Demo::start(&dir.path().join("data"), &addr);
    // `admin  admin@…  password P  bearer T`: an admin is among the demo staff.
    let (email, password) = demo
        .printed(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["admin", email, "password", password, ..] => {
                    Some((email.to_string(), password.to_string()))
                }
                _ => None,
            }
        })
        .await;
    // The customer's link names the address demo listens on, whatever it is.
    let link = demo
        .printed(|line| {
            line.contains("sign-in link")
                .then(|| line.split_whitespace().last().map(String::from))
                .flatten()
        })
        .await;
    assert!(link.starts_with(&format!("{base}/sign-in?link=")), "{link}");
    wait_for_server(&base).await;

    let admin = Browser::start().await;
    admin.set_window_size(1280, 800).await;
    admin.goto(&format!("{base}/console/login")).await;
    admin.type_into("input[name=email]", &email).await;
    admin.type_into("input[name=password]", &password).await;
    admin.click("button[type=submit]").await;
    admin.wait_for_url_ending("/console").await;
    let nav = admin.text("#console-nav").await;
    for page in ["Queue", "Policies", "Rollout", "Staff"] {
        assert!(nav.contains(page), "the admin finds {page}: {nav}");
    }
    // Customers keep coming: the desk fills, then fills some more, untouched.
    let mut first = 0;
    for _ in 0..60 {
        first = all_cases(&admin, &base).await;
        if first > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(first > 0, "the demo's customers opened tickets");
    let mut later = first;
    for _ in 0..60 {
        later = all_cases(&admin, &base).await;
        if later > first {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(later > first, "more came: {first} then {later}");

    // The printed link signs the first customer in, on a phone.
    let customer = Browser::start().await;
    customer.set_window_size(390, 844).await;
    let path = link.trim_start_matches(&base).to_string();
    customer.goto(&format!("{base}{path}")).await;
    customer.click("#sign-in").await;
    let landed = customer.wait_for_url_ending("/tickets").await;
    assert_eq!(landed, format!("{base}/tickets"));
    let (content, window) = customer.widths().await;
    assert!(content <= window, "the tickets page fits 390 px");
    admin.close().await;
    customer.close().await;
    drop(demo);
}
