//! The rig every in-process phase runs on: a fresh database per backend, the desk's services, a world of duplicate charges loaded into the provider, and the raw-commit baseline.

use super::*;

#[derive(Clone)]
pub(crate) enum Backend {
    Sqlite,
    Postgres(String),
}

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres(_) => "PostgreSQL",
        }
    }
}

/// A fresh database: a new file under `dir`, or a new database on the server.
pub(crate) struct FreshDb {
    pub(crate) url: String,
    pub(crate) drop_on: Option<(String, String)>,
}

impl FreshDb {
    pub(crate) async fn new(backend: &Backend, dir: &Path) -> anyhow::Result<FreshDb> {
        match backend {
            Backend::Sqlite => Ok(FreshDb {
                url: Db::sqlite_url(dir),
                drop_on: None,
            }),
            Backend::Postgres(base) => {
                sqlx::any::install_default_drivers();
                let name = format!("rd_bench_{}", uuid::Uuid::new_v4().simple());
                let admin = sqlx::AnyPool::connect(base)
                    .await
                    .context("BENCH_DATABASE_URL must be reachable")?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&admin)
                    .await?;
                admin.close().await;
                let (prefix, _) = base
                    .rsplit_once('/')
                    .context("a postgres url ends with /database")?;
                Ok(FreshDb {
                    url: format!("{prefix}/{name}"),
                    drop_on: Some((base.clone(), name)),
                })
            }
        }
    }

    pub(crate) async fn drop_database(self) {
        if let Some((base, name)) = self.drop_on {
            if let Ok(admin) = sqlx::AnyPool::connect(&base).await {
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&admin)
                .await;
                admin.close().await;
            }
        }
    }
}

/// The clock of in-process runs; worlds are built relative to it.
pub(crate) fn bench_now() -> OffsetDateTime {
    time::macros::datetime!(2026-11-29 10:00 UTC)
}

/// An app assembled in-process as `app/tests/it/support` does: the real payments mock on a
/// loopback port (real HTTP), the store, the fixture policies and index, the built-in
/// investigator, a manual clock.
pub(crate) struct Rig {
    pub(crate) state: Services,
    pub(crate) mock: payments_mock::RunningMock,
    pub(crate) db: FreshDb,
    pub(crate) _dir: tempfile::TempDir,
}

impl Rig {
    pub(crate) async fn start(backend: &Backend) -> anyhow::Result<Rig> {
        let dir = tempfile::tempdir()?;
        let mock = payments_mock::start(
            payments_mock::MockConfig::new(dir.path().join("payments")),
            "127.0.0.1:0".parse().expect("a literal address"),
        )
        .await
        .map_err(|e| anyhow::anyhow!("starting the payments mock: {e}"))?;
        let db = FreshDb::new(backend, dir.path()).await?;
        let mut config = settings::config_from_env(dir.path());
        config.database_url = db.url.clone();
        config.payments_url = Some(mock.base_url());
        config.fixtures_dir = desk::config::default_fixtures_dir();
        config.provider_backoff = Duration::from_millis(5);
        config.provider_timeout = Duration::from_secs(10);
        let clock = Arc::new(ManualClock::new(bench_now()));
        let state =
            desk::build_state(&config, &mock.base_url(), clock, Arc::new(Investigator)).await?;
        Ok(Rig {
            state,
            mock,
            db,
            _dir: dir,
        })
    }

    /// Loads a world into the app's store and (in chunks: the mock takes bodies of up to
    /// 2 MB) into the payments mock.
    pub(crate) async fn load(&self, world: &World) -> anyhow::Result<()> {
        world.load_into(&self.state.db).await?;
        load_into_provider(&self.mock.base_url(), world).await
    }

    pub(crate) async fn stop(self) {
        self.state.db.close().await;
        self.mock.shutdown().await;
        self.db.drop_database().await;
    }
}

pub(crate) async fn load_into_provider(base_url: &str, world: &World) -> anyhow::Result<()> {
    const CHUNK: usize = 2_000;
    for chunk in 0..world.charges.len().div_ceil(CHUNK).max(1) {
        let part = World {
            customers: vec![],
            orders: vec![],
            charges: world
                .charges
                .iter()
                .skip(chunk * CHUNK)
                .take(CHUNK)
                .cloned()
                .collect(),
            refunds: if chunk == 0 {
                world.refunds.clone()
            } else {
                vec![]
            },
        };
        desk::world::load_into_provider(base_url, &serde_json::to_string(&part)?).await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// A large world for live tickets: every customer has a duplicate charge to report.
// ---------------------------------------------------------------------------------------

/// `n` customers over all regions, each with an older add-on order and an annual plan
/// charged twice three days before `now`; and the message each one sends (naming the
/// order, English or Chinese). Every ticket should end `awaiting_approval`.
pub(crate) fn duplicate_world(n: usize, now: OffsetDateTime) -> (World, Vec<(String, String)>) {
    let mut world = World {
        customers: vec![],
        orders: vec![],
        charges: vec![],
        refunds: vec![],
    };
    let mut messages = Vec::with_capacity(n);
    for i in 0..n {
        let region = Region::ALL[i % 4];
        let (currency, annual, addon) = match region {
            Region::CN => (Currency::CNY, 19_800, 3_000),
            Region::US => (Currency::USD, 9_900, 499),
            Region::EU => (Currency::EUR, 12_000, 500),
            Region::JP => (Currency::JPY, 9_800, 1_200),
        };
        let money = |minor: i64| {
            Money::from_minor(minor, currency)
                .expect("literal amounts")
                .amount_string()
        };
        let customer = format!("C-B{i}");
        world.customers.push(WorldCustomer {
            id: customer.clone(),
            name: format!("Bench Customer {i}"),
            email: format!("bench{i}@example.com"),
            region,
        });
        let old = now - time::Duration::days(40);
        let recent = now - time::Duration::days(3);
        let addon_order = format!("O-{}", 800_000_000 + i * 2);
        let annual_order = format!("O-{}", 800_000_001 + i * 2);
        for (order, product, minor, at) in [
            (&addon_order, Product::Addon, addon, old),
            (&annual_order, Product::AnnualPlan, annual, recent),
        ] {
            world.orders.push(WorldOrder {
                id: order.clone(),
                customer_id: customer.clone(),
                product,
                amount: money(minor),
                currency,
                created_at: at,
            });
        }
        let charge = |id: String, order: &str, minor: i64, at: OffsetDateTime| WorldCharge {
            id,
            order_id: order.to_string(),
            customer_id: customer.clone(),
            amount: money(minor),
            currency,
            captured: true,
            status: "succeeded".into(),
            disputed: false,
            created_at: at,
            payment_method: "pm_card_visa".into(),
            amount_refunded: None,
        };
        world.charges.push(charge(
            format!("ch_b{i}_1"),
            &addon_order,
            addon,
            old + time::Duration::seconds(2),
        ));
        world.charges.push(charge(
            format!("ch_b{i}_2"),
            &annual_order,
            annual,
            recent + time::Duration::seconds(2),
        ));
        world.charges.push(charge(
            format!("ch_b{i}_3"),
            &annual_order,
            annual,
            recent + time::Duration::seconds(50),
        ));
        let text = if region == Region::CN && i % 8 == 0 {
            format!("订单{annual_order}重复扣款了，请退还多扣的那一笔。")
        } else {
            format!("Order {annual_order} was charged twice, please refund the duplicate.")
        };
        messages.push((customer, text));
    }
    (world, messages)
}

pub(crate) async fn case_statuses(db: &Db) -> anyhow::Result<BTreeMap<String, i64>> {
    let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM cases GROUP BY status")
        .fetch_all(db.pool())
        .await?;
    let mut out = BTreeMap::new();
    for r in rows {
        out.insert(r.try_get::<String, _>("status")?, r.try_get::<i64, _>("n")?);
    }
    Ok(out)
}

pub(crate) async fn count(db: &Db, sql: &'static str) -> anyhow::Result<i64> {
    Ok(sqlx::query(sql).fetch_one(db.pool()).await?.try_get(0)?)
}

// ---------------------------------------------------------------------------------------
// The baselines: raw commits, and durable steps on a real run.
// ---------------------------------------------------------------------------------------

/// A typical event payload: a tool result with two charges (~400 bytes).
pub(crate) fn event_payload() -> Value {
    json!({ "ok": true, "content": { "charges": [
        { "id": "ch_b0_2", "order_id": "O-800000001", "amount": "99.00", "currency": "USD", "captured": true,
          "status": "succeeded", "disputed": false, "amount_refunded": "0.00", "created_at": "2026-11-26T10:00:02Z" },
        { "id": "ch_b0_3", "order_id": "O-800000001", "amount": "99.00", "currency": "USD", "captured": true,
          "status": "succeeded", "disputed": false, "amount_refunded": "0.00", "created_at": "2026-11-26T10:00:50Z" }
    ]}})
}

/// Raw commits/s: one `INSERT` of one row per transaction, nothing else.
pub(crate) async fn raw_commits(db: &Db, n: usize) -> anyhow::Result<f64> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS bench_commits (id BIGINT PRIMARY KEY, payload TEXT NOT NULL, created_at BIGINT NOT NULL)",
    )
    .execute(db.pool())
    .await?;
    let start_id = count(
        db,
        "SELECT CAST(COALESCE(MAX(id), 0) AS BIGINT) FROM bench_commits",
    )
    .await?;
    let payload = event_payload().to_string();
    let started = Instant::now();
    for i in 0..n {
        let mut tx = db.begin().await?;
        sqlx::query("INSERT INTO bench_commits (id, payload, created_at) VALUES ($1, $2, $3)")
            .bind(start_id + 1 + i as i64)
            .bind(&payload)
            .bind(i as i64)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    }
    Ok(rate(n, started.elapsed()))
}

/// Durable agent steps/s: `runs::append_event` (read the last seq, insert) in its own
/// transaction, as the harness records an intent or a result.
pub(crate) async fn durable_steps(state: &Services, run_id: &str, n: usize) -> anyhow::Result<f64> {
    let payload = event_payload();
    let now = state.clock.now_ms();
    let started = Instant::now();
    for i in 0..n {
        let mut tx = state.db.begin().await?;
        desk::runs::append_event(
            &mut tx,
            run_id,
            desk::runs::EventKind::Harness(harness::Kind::ToolResult),
            Some(&format!("bench{i}")),
            &payload,
            now,
        )
        .await?;
        tx.commit().await?;
    }
    Ok(rate(n, started.elapsed()))
}
