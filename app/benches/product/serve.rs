//! A release `serve` as a second process, and the load generators that drive it (`wrk`, or in-process clients).

use super::*;

pub(crate) const SERVE_BIN: &str = env!("CARGO_BIN_EXE_refund-agent");

pub(crate) struct Server {
    pub(crate) child: tokio::process::Child,
    pub(crate) pid: String,
    pub(crate) base: String,
}

impl Server {
    pub(crate) async fn stop(mut self) {
        // Our own child, by its id: SIGINT is `serve`'s graceful shutdown.
        let _ = std::process::Command::new("kill")
            .args(["-INT", &self.pid])
            .status();
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// `refund-agent serve` on a free loopback port, its log in `log` (warnings only).
pub(crate) fn start_serve(
    bin: &str,
    data_dir: &Path,
    db_url: &str,
    log: &Path,
    env: &[(&str, String)],
) -> anyhow::Result<Server> {
    let mut cmd = cli_of(bin, data_dir, db_url);
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    spawn_serve(cmd, log)
}

/// `refund-agent serve` logging as it ships (no `RUST_LOG`: its default filter, `info`),
/// to the file `log`: what a user runs, every line its log writes included.
pub(crate) fn start_serve_as_shipped(
    bin: &str,
    data_dir: &Path,
    db_url: &str,
    log: &Path,
) -> anyhow::Result<Server> {
    let mut cmd = cli_of(bin, data_dir, db_url);
    cmd.env_remove("RUST_LOG");
    spawn_serve(cmd, log)
}

fn spawn_serve(mut cmd: tokio::process::Command, log: &Path) -> anyhow::Result<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = cmd
        .arg("serve")
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    let pid = child.id().context("a running child has a pid")?.to_string();
    Ok(Server {
        child,
        pid,
        base: format!("http://127.0.0.1:{port}"),
    })
}

/// The last 3,000 bytes of a `serve` log, printed when a phase failed (cut at a character).
pub(crate) fn print_log_tail(path: &Path) {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let mut start = log.len().saturating_sub(3_000);
    while !log.is_char_boundary(start) {
        start += 1;
    }
    eprintln!("serve log (tail): {}", &log[start..]);
}

pub(crate) async fn wait_for_healthz(
    client: &reqwest::Client,
    server: &Server,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{}/healthz", server.base)).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("serve did not answer /healthz within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn cli(data_dir: &Path, db_url: &str) -> tokio::process::Command {
    cli_of(SERVE_BIN, data_dir, db_url)
}

pub(crate) fn cli_of(bin: &str, data_dir: &Path, db_url: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.arg("--data-dir")
        .arg(data_dir)
        .env("DATABASE_URL", db_url)
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .env("RUST_LOG", "warn")
        .env_remove("PAYMENTS_URL")
        .env_remove("LLM_BASE_URL")
        .kill_on_drop(true);
    cmd
}

pub(crate) struct Load {
    pub(crate) requests: usize,
    pub(crate) errors: usize,
    pub(crate) elapsed: Duration,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

impl Load {
    pub(crate) fn per_second(&self) -> f64 {
        rate(self.requests, self.elapsed)
    }
}

/// Whether `wrk` (the external load generator) is on PATH.
pub(crate) fn wrk_available() -> bool {
    std::process::Command::new("wrk")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// A Lua string literal (Rust's debug escaping is Lua's for the ASCII we send).
pub(crate) fn lua_string(s: &str) -> String {
    format!("{s:?}")
}

/// The load from outside this process: `wrk` with `conns` connections on two threads
/// for `secs`, each request the next of `requests` (path and headers, through a Lua
/// script), p50/p99 from wrk's own latency histogram. Non-2xx answers count as errors.
pub(crate) async fn wrk_load(
    conns: usize,
    secs: u64,
    requests: &[(String, Vec<(String, String)>)],
) -> anyhow::Result<Load> {
    let base = requests
        .first()
        .context("at least one request")?
        .0
        .split('/')
        .take(3)
        .collect::<Vec<_>>()
        .join("/");
    let mut lua = String::from("local reqs = {\n");
    for (url, headers) in requests {
        let path = url.strip_prefix(&base).unwrap_or(url);
        let headers: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("[{}] = {}", lua_string(k), lua_string(v)))
            .collect();
        lua.push_str(&format!(
            "  {{ {}, {{ {} }} }},\n",
            lua_string(path),
            headers.join(", ")
        ));
    }
    lua.push_str(WRK_SCRIPT);
    let script = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::fs::write(script.path(), lua)?;
    let output = tokio::process::Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{conns}"),
            &format!("-d{secs}s"),
            "--timeout",
            "10s",
            "-s",
        ])
        .arg(script.path())
        .arg(&base)
        .output()
        .await
        .context("running wrk")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("WRK_RESULT "))
        .with_context(|| {
            format!(
                "wrk printed no result: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    let f: Vec<f64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let [requests, micros, errors, p50_us, p99_us] = f[..] else {
        bail!("wrk result line has 5 figures: {line}");
    };
    Ok(Load {
        requests: requests as usize,
        errors: errors as usize,
        elapsed: Duration::from_micros(micros as u64),
        p50_us,
        p99_us,
    })
}

/// The request cycle and the machine-readable summary of [`wrk_load`]'s script.
pub(crate) const WRK_SCRIPT: &str = r#"}
local i = 0
init = function(args) i = math.random(#reqs) end
request = function()
  i = i % #reqs + 1
  return wrk.format("GET", reqs[i][1], reqs[i][2])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK_RESULT %d %d %d %.1f %.1f\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"#;

/// The load: `wrk` when it is installed, else `conns` tasks in this process.
pub(crate) async fn generate_load(
    conns: usize,
    secs: u64,
    requests: &[(String, Vec<(String, String)>)],
) -> anyhow::Result<Load> {
    if wrk_available() {
        wrk_load(conns, secs, requests).await
    } else {
        drive(conns, secs, Arc::new(requests.to_vec())).await
    }
}

/// `conns` tasks, each with its own connection, request after request for `secs`.
pub(crate) async fn drive(
    conns: usize,
    secs: u64,
    requests: Arc<Vec<(String, Vec<(String, String)>)>>,
) -> anyhow::Result<Load> {
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..conns {
        let requests = requests.clone();
        let next = next.clone();
        tasks.spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(10))
                .build()?;
            let mut timings = Vec::new();
            let mut errors = 0usize;
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed) % requests.len();
                let (url, headers) = &requests[i];
                let mut request = client.get(url);
                for (k, v) in headers {
                    request = request.header(k, v);
                }
                let t = Instant::now();
                match request.send().await {
                    Ok(resp) => {
                        let ok = resp.status() == reqwest::StatusCode::OK;
                        let body = resp.bytes().await;
                        timings.push(t.elapsed());
                        if !ok || body.is_err() {
                            errors += 1;
                        }
                    }
                    Err(_) => {
                        timings.push(t.elapsed());
                        errors += 1;
                    }
                }
            }
            anyhow::Ok((timings, errors))
        });
    }
    let mut sorted = Vec::new();
    let mut errors = 0;
    while let Some(done) = tasks.join_next().await {
        let (timings, e) = done??;
        sorted.extend(timings);
        errors += e;
    }
    let elapsed = started.elapsed();
    sorted.sort_unstable();
    Ok(Load {
        requests: sorted.len(),
        errors,
        elapsed,
        p50_us: percentile_us(&sorted, 50.0),
        p99_us: percentile_us(&sorted, 99.0),
    })
}
