//! A minimal W3C WebDriver client (over reqwest) driving Debian's headless Chromium
//! through chromedriver, and a helper that serves the app's router on a loopback port.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    http: reqwest::Client,
    base: String,
    session: String,
    driver: Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session. Panics with the install
    /// command when the Debian packages are missing (scripts/test installs them).
    pub async fn start() -> Browser {
        Browser::start_with(None).await
    }

    /// A browser set to `accept` (e.g. `en-US,en`): its user interface (`--lang`) and the
    /// `Accept-Language` every page request carries, as a browser installed in that
    /// language would send.
    #[allow(dead_code)] // Used by the customer-language journeys.
    pub async fn start_in_language(accept: &str) -> Browser {
        Browser::start_with(Some(accept)).await
    }

    async fn start_with(accept: Option<&str>) -> Browser {
        for bin in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            assert!(std::path::Path::new(bin).exists(), "{bin} is missing: run scripts/browser-up (apt-get install chromium chromium-driver)");
        }
        let port = free_port();
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{base}/status")).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap().keep();
        let mut args = vec![
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1400",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        args.push(format!("--user-data-dir={}", profile.display()));
        let mut options = json!({ "binary": "/usr/bin/chromium" });
        if let Some(accept) = accept {
            let first = accept.split(',').next().unwrap_or(accept);
            args.push(format!("--lang={first}"));
            args.push(format!("--accept-lang={accept}"));
            options["prefs"] = json!({ "intl": { "accept_languages": accept } });
        }
        options["args"] = json!(args);
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options
        }}});
        let resp: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {resp}"))
            .to_string();
        Browser {
            http,
            base,
            session,
            driver,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp: Value = req.send().await.unwrap().json().await.unwrap();
        resp["value"].clone()
    }

    /// Makes the pages see `zone` (an IANA name) as the viewer's time zone, through the
    /// DevTools protocol (`Emulation.setTimezoneOverride`), for this tab from now on.
    pub async fn set_time_zone(&self, zone: &str) {
        let answer = self
            .call(
                reqwest::Method::POST,
                "/goog/cdp/execute",
                Some(json!({ "cmd": "Emulation.setTimezoneOverride", "params": { "timezoneId": zone } })),
            )
            .await;
        assert!(answer.get("error").is_none(), "{answer}");
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// Logs `email` in on the console with the test password and waits for the queue.
    pub async fn console_login(&self, base: &str, email: &str) {
        self.console_login_to(base, email, "/console").await;
    }

    /// Logs `email` in and waits for the page their role lands on (`landing`).
    pub async fn console_login_to(&self, base: &str, email: &str, landing: &str) {
        self.goto(&format!("{base}/console/login")).await;
        self.type_into("input[name=email]", email).await;
        self.type_into("input[name=password]", "correct horse battery")
            .await;
        self.click("button[type=submit]").await;
        let at = self.wait_for_url_ending(landing).await;
        assert!(at.ends_with(landing), "logged in: {at}");
    }

    /// Opens a sign-in link (`{base}{link}`) and presses its button, as a customer
    /// does; waits until it lands on `next` and returns the address.
    pub async fn sign_in(&self, base: &str, link: &str, next: &str) -> String {
        self.goto(&format!("{base}{link}")).await;
        self.click("#sign-in").await;
        // The link's own address (`/sign-in?link=…&next=/tickets/…`) ends with `next`
        // too, so only the whole address says the browser has left it: waiting for a
        // suffix returned at once whenever the POST was slower than the first look.
        let landed = format!("{base}{next}");
        let url = self.wait_for_url_to_be(&landed).await;
        assert_eq!(url, landed, "signed in and sent on to {next}");
        // The address changes when the navigation commits, before the page has loaded:
        // a step that reads or marks the page must wait for the loaded document, or it
        // works on one that is about to be replaced.
        self.wait_until_loaded().await;
        url
    }

    /// Waits (up to 20 s) until `script` answers true; whether it did.
    pub async fn wait_until(&self, script: &str) -> bool {
        for _ in 0..80 {
            if self.execute(script).await.as_bool() == Some(true) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }

    /// Waits (up to 10 s) until the current document has finished loading.
    pub async fn wait_until_loaded(&self) {
        for _ in 0..100 {
            if self.execute("return document.readyState").await == "complete" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The element matching `css`, or `None`.
    pub async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await;
        v[ELEMENT_KEY].as_str().map(String::from)
    }

    /// Waits (up to 10 s) for an element matching `css`; returns it.
    pub async fn wait_for(&self, css: &str) -> String {
        for _ in 0..100 {
            if let Some(found) = self.find(css).await {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no element {css} within 10 s at {}", self.url().await)
    }

    pub async fn element(&self, css: &str) -> String {
        self.find(css)
            .await
            .unwrap_or_else(|| panic!("no element {css}"))
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Presses and releases `key` on whatever has the focus, as a person at the keyboard
    /// does (W3C WebDriver key actions), e.g. `"a"` or `"?"`.
    pub async fn press_key(&self, key: &str) {
        let keys = json!([{ "type": "keyDown", "value": key }, { "type": "keyUp", "value": key }]);
        let actions = json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": keys }] });
        self.call(reqwest::Method::POST, "/actions", Some(actions))
            .await;
    }

    pub async fn text(&self, css: &str) -> String {
        let id = self.element(css).await;
        self.call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn attribute(&self, css: &str, name: &str) -> Option<String> {
        let id = self.element(css).await;
        self.call(
            reqwest::Method::GET,
            &format!("/element/{id}/attribute/{name}"),
            None,
        )
        .await
        .as_str()
        .map(String::from)
    }

    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits (up to 10 s) until the address contains `part`; returns the address.
    pub async fn wait_for_url(&self, part: &str) -> String {
        let mut url = String::new();
        for _ in 0..100 {
            url = self.url().await;
            if url.contains(part) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        url
    }

    /// Waits (up to 10 s) until the address is exactly `address`; returns the last seen.
    pub async fn wait_for_url_to_be(&self, address: &str) -> String {
        let mut url = String::new();
        for _ in 0..100 {
            url = self.url().await;
            if url == address {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        url
    }

    /// Waits (up to 10 s) until the address ends with `suffix`; returns the address.
    pub async fn wait_for_url_ending(&self, suffix: &str) -> String {
        let mut url = String::new();
        for _ in 0..100 {
            url = self.url().await;
            if url.ends_with(suffix) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        url
    }

    /// Waits (up to 15 s) until `css` has `name` = `value`; returns the last value seen.
    /// Reads the attribute of the element it found, not a second lookup: a page that
    /// navigates between the two (a form just submitted) would lose it; a stale element
    /// answers an error, read as "not yet", and the next round looks again.
    pub async fn wait_for_attribute(&self, css: &str, name: &str, value: &str) -> String {
        let mut seen = String::new();
        for _ in 0..150 {
            if let Some(id) = self.find(css).await {
                let path = format!("/element/{id}/attribute/{name}");
                let answer = self.call(reqwest::Method::GET, &path, None).await;
                seen = answer.as_str().unwrap_or_default().to_string();
                if seen == value {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        seen
    }

    /// Sets the window's outer size, as a phone (390x844) or a desktop (1280x900) would.
    pub async fn set_window_size(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        )
        .await;
    }

    /// Runs `script` (a function body that `return`s) in the page; returns its value.
    pub async fn execute(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// `[document.documentElement.scrollWidth, window.innerWidth]`: the page scrolls
    /// sideways exactly when the first is larger.
    pub async fn widths(&self) -> (i64, i64) {
        let v = self
            .execute("return [document.documentElement.scrollWidth, window.innerWidth];")
            .await;
        (v[0].as_i64().unwrap_or(-1), v[1].as_i64().unwrap_or(-1))
    }

    pub async fn url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Saves a PNG screenshot.
    pub async fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine;
        let data = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .unwrap();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }

    pub async fn close(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Serves `router` on a loopback port; returns its base URL.
pub async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    format!("http://{addr}")
}
