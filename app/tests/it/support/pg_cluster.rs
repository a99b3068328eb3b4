//! The PostgreSQL server behind a URL, as Debian's `pg_ctlcluster` names it, stopped and
//! started for the database-restart checks (the `restart` test and the load
//! test's outage phase, which includes this file by path). Needs root; it never guesses
//! a cluster: the one listening on the URL's port, or an error.

use std::process::{Command, Stdio};

pub struct Cluster {
    pub version: String,
    pub name: String,
}

impl Cluster {
    /// The cluster `pg_lsclusters` lists on the URL's port (5432 when it names none).
    pub fn serving(url: &str) -> Result<Cluster, String> {
        let port = reqwest::Url::parse(url)
            .map_err(|e| format!("{url} is not a URL: {e}"))?
            .port()
            .unwrap_or(5432)
            .to_string();
        let out = Command::new("pg_lsclusters")
            .arg("-h")
            .output()
            .map_err(|e| format!("running pg_lsclusters: {e}"))?;
        let listing = String::from_utf8_lossy(&out.stdout);
        let columns = listing
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols.get(2) == Some(&port.as_str()))
            .ok_or_else(|| format!("no cluster on port {port} in pg_lsclusters: {listing}"))?;
        Ok(Cluster {
            version: columns[0].to_string(),
            name: columns[1].to_string(),
        })
    }

    /// `pg_ctlcluster … stop`: the default fast mode, which ends every client's
    /// connection at once, as a crashed or restarted server would.
    pub fn stop(&self) -> Result<(), String> {
        self.control("stop")
    }

    /// `pg_ctlcluster … start`; it returns once the server accepts connections.
    pub fn start(&self) -> Result<(), String> {
        self.control("start")
    }

    fn control(&self, action: &str) -> Result<(), String> {
        let out = Command::new("pg_ctlcluster")
            .args([&self.version, &self.name, action])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running pg_ctlcluster: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctlcluster {} {} {action} failed (it needs root): {}",
                self.version,
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}
