//! A real `refund-agent serve` process, for the tests that SIGKILL it and restart it on
//! the same data (`kill`, `subagents`).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Serve {
    pub child: Child,
    pub base: String,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `serve` with `cmd`'s settings on a free loopback port; returns once
/// `/healthz` answers.
pub async fn start(cmd: &mut Command) -> Serve {
    start_with_log(cmd, Stdio::null()).await
}

/// `start`, with the process's log (stderr) going to `log`.
pub async fn start_with_log(cmd: &mut Command, log: Stdio) -> Serve {
    let port = free_port();
    let mut child = cmd
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..400 {
        if reqwest::get(format!("{base}/healthz"))
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return Serve { child, base };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("serve did not start");
}

/// SIGKILL: no destructor, no graceful shutdown, nothing flushed by the process.
pub fn sigkill(serve: &mut Serve) {
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
}

/// Runs `refund-agent seed` with `cmd`'s settings and returns the bearer tokens it
/// prints (one credential a line, for scripts): the agent's and customer C-100's.
pub fn seed(cmd: &mut Command) -> (String, String) {
    let seed = cmd.arg("seed").output().unwrap();
    let err = String::from_utf8_lossy(&seed.stderr);
    assert!(seed.status.success(), "{err}");
    let out = String::from_utf8_lossy(&seed.stdout).to_string();
    let token_after = |marker: &str| {
        let line = out.lines().find(|l| l.contains(marker)).unwrap();
        line.split_whitespace().last().unwrap().to_string()
    };
    (
        token_after("agent@refund-desk.test"),
        token_after("customer C-100 bearer "),
    )
}
