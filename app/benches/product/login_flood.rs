//! `/healthz` during a login flood (`login_flood`).

use super::*;

pub(crate) async fn phase_login_flood(
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("[SQLite] /healthz during a login flood against `refund-agent serve`");
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir)?;
    let db_url = Db::sqlite_url(&data_dir);
    let seed = cli(&data_dir, &db_url).arg("seed").output().await?;
    if !seed.status.success() {
        bail!(
            "refund-agent seed failed: {}",
            String::from_utf8_lossy(&seed.stderr)
        );
    }
    let server = start_serve(
        SERVE_BIN,
        &data_dir,
        &db_url,
        &dir.path().join("serve.log"),
        &[],
    )?;
    let result = login_flood(&server, settings, report).await;
    server.stop().await;
    result
}

pub(crate) async fn login_flood(
    server: &Server,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    wait_for_healthz(&reqwest::Client::new(), server).await?;
    let healthz = Arc::new(vec![(format!("{}/healthz", server.base), vec![])]);
    let quiet = drive(2, settings.http_secs, healthz.clone()).await?;
    let deadline = Instant::now() + Duration::from_secs(settings.http_secs + 1);
    let mut flood = tokio::task::JoinSet::new();
    for task in 0..32u32 {
        let url = format!("{}/console/login", server.base);
        flood.spawn(async move {
            let (mut checked, mut throttled, mut n) = (0usize, 0usize, 0u32);
            while Instant::now() < deadline {
                n += 1;
                // A new peer address every five guesses: under the per-address limit.
                let host = task * 1000 + n / 5;
                let local = std::net::Ipv4Addr::new(
                    127,
                    1,
                    (host / 250 % 250) as u8,
                    (host % 250 + 1) as u8,
                );
                let client = reqwest::Client::builder()
                    .local_address(std::net::IpAddr::V4(local))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()?;
                let form = [
                    ("email", format!("flood{task}.{n}@example.test")),
                    ("password", "guess guess".into()),
                ];
                match client
                    .post(&url)
                    .form(&form)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                {
                    Ok(401) => checked += 1,
                    Ok(429) => throttled += 1,
                    _ => {}
                }
            }
            anyhow::Ok((checked, throttled))
        });
    }
    let busy = drive(2, settings.http_secs, healthz).await?;
    let (mut checked, mut throttled) = (0, 0);
    while let Some(done) = flood.join_next().await {
        let (c, t) = done??;
        checked += c;
        throttled += t;
    }
    report.add(
        "SQLite: `/healthz` p99 during a login flood (32 connections, many addresses)",
        fmt_us(busy.p99_us),
        format!("{} without the flood", fmt_us(quiet.p99_us)),
        format!("{:.2}", busy.p99_us / quiet.p99_us.max(1.0)),
        "",
        None,
    );
    report.note(format!(
        "login flood: {} guesses reached the password hash ({}), {} were throttled; `/healthz` {} during it, {} without",
        checked,
        fmt_rate(rate(checked, Duration::from_secs(settings.http_secs + 1)), "hashes/s"),
        throttled,
        fmt_rate(busy.per_second(), "req/s"),
        fmt_rate(quiet.per_second(), "req/s")
    ));
    Ok(())
}
