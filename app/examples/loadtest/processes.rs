//! The load test's processes: a fresh database on the PostgreSQL server, the payments
//! mock and the `serve` instances as children on loopback ports, each instance capped
//! to a share of a CPU when asked, and every child killed on every exit path.
//!
//! What it does not do: seed the world (`seed`) or send them any work (`drive`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::process::{Child, Command};

/// The two binaries the test runs, from `--bin-dir`.
pub struct Binaries {
    pub agent: PathBuf,
    pub mock: PathBuf,
}

impl Binaries {
    pub fn found(bin_dir: &Path) -> anyhow::Result<Binaries> {
        let found = Binaries {
            agent: bin_dir.join("refund-agent"),
            mock: bin_dir.join("payments-mock"),
        };
        for bin in [&found.agent, &found.mock] {
            if !bin.is_file() {
                bail!(
                    "{} is missing: cargo build --release -p app -p payments-mock",
                    bin.display()
                );
            }
        }
        Ok(found)
    }
}

/// Every child of the run. Fields drop in order: the children are killed before their
/// cgroups are removed.
#[derive(Default)]
pub struct Running {
    pub processes: Processes,
    caps: CpuCaps,
}

/// The `cpu` cgroups (v1) the instances run in, one each, removed when dropped.
#[derive(Default)]
struct CpuCaps(Vec<PathBuf>);

impl CpuCaps {
    const ROOT: &'static str = "/sys/fs/cgroup/cpu";
    const PERIOD_US: u64 = 100_000;

    /// Puts the process `pid` in a new cgroup allowed `share` of one CPU.
    fn cap(&mut self, pid: u32, share: f64) -> anyhow::Result<()> {
        anyhow::ensure!(share > 0.0, "--cpu-quota must be above 0");
        let dir = PathBuf::from(Self::ROOT).join(format!("refund-loadtest-{pid}"));
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "creating {} (cgroup v1 cpu controller; needs root)",
                dir.display()
            )
        })?;
        self.0.push(dir.clone());
        let quota = (share * Self::PERIOD_US as f64).round().max(1_000.0) as u64;
        std::fs::write(dir.join("cpu.cfs_period_us"), Self::PERIOD_US.to_string())?;
        std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
        // `cgroup.procs` moves every thread of the process.
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        eprintln!("serve {pid} capped at {share} of a CPU ({})", dir.display());
        Ok(())
    }
}

impl Drop for CpuCaps {
    fn drop(&mut self) {
        // A cgroup is removed once its processes have gone; the instances are killed
        // before this runs (`Running` drops them first), a moment's wait covers the
        // reaping.
        for dir in &self.0 {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Children are SIGKILLed when dropped, so every exit path cleans up.
#[derive(Default)]
pub struct Processes(pub Vec<(String, Child)>);

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.start_kill();
        }
    }
}

/// One `serve` instance, and whether it still runs (one is killed on purpose).
pub struct Instance {
    pub url: String,
    pub alive: bool,
}

/// The instances still running, to spread work over.
pub fn live_urls(instances: &Mutex<Vec<Instance>>) -> Vec<String> {
    instances
        .lock()
        .expect("not poisoned")
        .iter()
        .filter(|i| i.alive)
        .map(|i| i.url.clone())
        .collect()
}

pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A new database on the server `server` names; its URL.
pub async fn fresh_database(server: &str) -> anyhow::Result<String> {
    sqlx::any::install_default_drivers();
    let name = format!("rd_load_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::AnyPool::connect(server)
        .await
        .context("connecting to PostgreSQL")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await?;
    admin.close().await;
    let (prefix, _) = server
        .rsplit_once('/')
        .context("a postgres url ends with /database")?;
    Ok(format!("{prefix}/{name}"))
}

/// Starts the payments mock on `port`, its webhooks going to `webhook_url`; its URL once
/// it answers.
pub async fn start_mock(
    running: &mut Running,
    http: &reqwest::Client,
    bin: &Path,
    data_dir: PathBuf,
    port: u16,
    webhook_url: &str,
) -> anyhow::Result<String> {
    let payments_url = format!("http://127.0.0.1:{port}");
    let mut mock = Command::new(bin)
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--webhook-url", webhook_url])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting payments-mock")?;
    wait_until_up(http, &format!("{payments_url}/__mock/ledger"), &mut mock).await?;
    running.processes.0.push(("payments-mock".into(), mock));
    Ok(payments_url)
}

/// Starts one `serve` instance per port (own data directory under `dir`, the same
/// `env`), each capped at `cpu_quota` of a CPU when set; they answer when this returns.
pub async fn start_instances(
    running: &mut Running,
    http: &reqwest::Client,
    bin: &Path,
    dir: &Path,
    env: &[(&str, &str)],
    ports: &[u16],
    cpu_quota: Option<f64>,
) -> anyhow::Result<Vec<Instance>> {
    let mut instances = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let mut child = Command::new(bin)
            .arg("--data-dir")
            .arg(dir.join(format!("instance-{i}")))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting refund-agent serve")?;
        if let Some(share) = cpu_quota {
            let pid = child.id().context("a running child has a pid")?;
            running.caps.cap(pid, share)?;
        }
        let url = format!("http://127.0.0.1:{port}");
        wait_until_up(http, &format!("{url}/api/v1/healthz"), &mut child).await?;
        running.processes.0.push((format!("instance-{i}"), child));
        instances.push(Instance { url, alive: true });
    }
    Ok(instances)
}

async fn wait_until_up(http: &reqwest::Client, url: &str, child: &mut Child) -> anyhow::Result<()> {
    for _ in 0..600 {
        if let Ok(resp) = http.get(url).send().await {
            if resp.status().is_success() {
                return Ok(());
            }
        }
        if let Some(status) = child.try_wait()? {
            bail!("{url}: the process exited ({status}) before it was up");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{url} did not come up within 60 s")
}
