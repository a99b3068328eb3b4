//! `policy check|diff|eval|search`: the policy engine and the policy index from the
//! command line, on the database's policies when it holds them, else the files
//! (`offline::policy_set`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use super::args::PolicyCommand;
use super::offline::{open_index_blocking, read_history};
use desk::config::Config;
use terminal::Progress;

pub(super) async fn policy(config: &Config, command: PolicyCommand) -> anyhow::Result<()> {
    let policies = || super::offline::policy_set(config);
    match command {
        PolicyCommand::Check { facts } => check(&facts, &policies().await?),
        PolicyCommand::Diff { from, to, history } => {
            diff(config, policies().await?, &from, &to, &history).await
        }
        PolicyCommand::Validate { files } => validate_files(&files),
        PolicyCommand::Draft {
            doc,
            from,
            author,
            expected_version,
        } => super::authoring::draft(config, &doc, &from, &author, expected_version).await,
        PolicyCommand::Whatif {
            doc,
            history,
            live_days,
            author,
        } => super::authoring::whatif(config, &doc, history.as_deref(), live_days, &author).await,
        PolicyCommand::Publish { doc, at, publisher } => {
            super::authoring::publish(config, &doc, at.as_deref(), &publisher).await
        }
        PolicyCommand::Export { dir } => super::authoring::export(config, &dir).await,
        PolicyCommand::Eval { queries } => eval_search(config, policies().await?, queries).await,
        PolicyCommand::Search {
            query,
            as_of,
            region,
            product,
            drafts,
            limit,
        } => {
            let mut q = rag_index::SearchQuery::new(query);
            q.as_of = as_of
                .as_deref()
                .map(policy_engine::document::parse_date)
                .transpose()?;
            q.region = region
                .as_deref()
                .map(|r| desk::world::parse_plain(&r.to_uppercase()))
                .transpose()?;
            q.product = product
                .as_deref()
                .map(desk::world::parse_plain)
                .transpose()?;
            q.include_drafts = drafts;
            q.limit = usize::from(limit);
            let policies = policies().await?;
            let dir = config.index_dir();
            let passages = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let index = desk::policies::open_index(&dir, &policies)?;
                index.search(&q).map_err(|e| anyhow::anyhow!("{e}"))
            })
            .await??;
            print_passages(&passages);
            Ok(())
        }
    }
}

/// `policy check FACTS`: the engine's decision on a facts file.
fn check(facts: &std::path::Path, policies: &policy_engine::PolicySet) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(facts).with_context(|| format!("reading {}", facts.display()))?;
    let parsed: policy_engine::Facts = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid facts JSON", facts.display()))?;
    let decision = policy_engine::decide(&parsed, policies);
    println!("{}", serde_json::to_string_pretty(&decision)?);
    Ok(())
}

/// `policy diff FROM TO --history FILE`: the history replayed under two policy versions.
async fn diff(
    config: &Config,
    policies: policy_engine::PolicySet,
    from: &[String],
    to: &[String],
    history: &std::path::Path,
) -> anyhow::Result<()> {
    let index = Arc::new(open_index_blocking(config, policies.clone()).await?);
    let (tickets, _) = read_history(history)?;
    let bar = Progress::bar("policy diff", "tickets");
    let report =
        shadow::replay::policy_diff(&policies, &index, &tickets, from, to, |done, total| {
            bar.set(done, total)
        })
        .await;
    bar.finish();
    let report = report?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// `policy search`'s answer: one line a passage, rank, citation, score, title, snippet.
fn print_passages(passages: &[rag_index::Passage]) {
    for (rank, p) in passages.iter().enumerate() {
        let snippet: String = p
            .text
            .chars()
            .take(160)
            .collect::<String>()
            .replace('\n', " ");
        println!(
            "{}. {}  {:.3}  {} — {}",
            rank + 1,
            p.citation(),
            p.score,
            p.title,
            snippet
        );
    }
    if passages.is_empty() {
        eprintln!("no passages");
    }
}

/// `policy eval`: policy search scored on labelled queries (the repository's
/// `evals/policy_search/queries.jsonl` unless `--queries` names a file).
async fn eval_search(
    config: &Config,
    policies: policy_engine::PolicySet,
    queries: Option<PathBuf>,
) -> anyhow::Result<()> {
    let path = queries.unwrap_or_else(|| {
        config
            .fixtures_dir
            .join("..")
            .join("evals")
            .join("policy_search")
            .join("queries.jsonl")
    });
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let labelled = rag_index::eval::load_queries(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let dir = config.index_dir();
    let report = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let index = desk::policies::open_index(&dir, &policies)?;
        Ok(rag_index::eval::run(&index, &labelled))
    })
    .await??;
    for miss in &report.misses {
        eprintln!(
            "  not first: {:?} expected {} at rank {:?}",
            miss.query, miss.expected, miss.rank
        );
    }
    println!(
        "{}",
        serde_json::json!({ "total": report.total, "recall_at_1": report.recall_at_1,
                            "recall_at_3": report.recall_at_3, "mrr": report.mrr })
    );
    Ok(())
}

/// `policy validate FILE...`: every problem of every file on stdout, exit 1 if any.
/// The date check uses today's date (UTC); a `.rules.toml` named alone is read with
/// the Markdown beside it.
fn validate_files(files: &[PathBuf]) -> anyhow::Result<()> {
    let today = time::OffsetDateTime::now_utc().date();
    let mut problems = Vec::new();
    for file in files {
        let markdown_path = match file.to_str().and_then(|f| f.strip_suffix(".rules.toml")) {
            Some(stem) => PathBuf::from(format!("{stem}.md")),
            None => file.clone(),
        };
        let markdown = std::fs::read_to_string(&markdown_path)
            .with_context(|| format!("reading {}", markdown_path.display()))?;
        let rules_path = markdown_path.with_extension("rules.toml");
        let rules = match rules_path.exists() {
            true => Some(
                std::fs::read_to_string(&rules_path)
                    .with_context(|| format!("reading {}", rules_path.display()))?,
            ),
            false => None,
        };
        let name = markdown_path.display().to_string();
        problems.extend(::authoring::validate(
            ::authoring::VersionText {
                markdown_name: &name,
                markdown: &markdown,
                rules: rules.as_deref(),
            },
            today,
        ));
    }
    if problems.is_empty() {
        println!("ok");
        return Ok(());
    }
    for problem in &problems {
        println!("{problem}");
    }
    anyhow::bail!("{} problem(s) found", problems.len())
}
