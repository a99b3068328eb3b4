//! Policy search against the real fixture policies: required rankings, filters, lenient
//! syntax, Chinese queries, index lifecycle (rebuild, atomic swap, corruption) and the
//! labelled eval set. Every test builds its own index in a fresh temporary directory.
//!
//! Long because it is the crate's one integration-test binary and its tests
//! share the fixture index and query helpers at the top; each test is short.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use policy_engine::{PolicyDocument, PolicyStatus, Product, Region};
use rag_index::{eval, generate, IndexError, PolicyIndex, SearchQuery, MAX_LIMIT};
use time::macros::date;
use time::Date;

const POLICIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/policies");
const EVAL_QUERIES: &str = include_str!("../../evals/policy_search/queries.jsonl");

fn fixture_documents() -> Vec<PolicyDocument> {
    let mut paths: Vec<_> = fs::read_dir(POLICIES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| PolicyDocument::parse(&fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

fn fixture_index() -> (tempfile::TempDir, PolicyIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &fixture_documents()).unwrap();
    (dir, index)
}

fn query(text: &str, as_of: Option<Date>) -> SearchQuery {
    SearchQuery {
        as_of,
        ..SearchQuery::new(text)
    }
}

fn citations(index: &PolicyIndex, q: &SearchQuery) -> Vec<String> {
    index
        .search(q)
        .unwrap()
        .iter()
        .map(|p| p.citation())
        .collect()
}

fn first(index: &PolicyIndex, q: &SearchQuery) -> String {
    citations(index, q).into_iter().next().unwrap_or_default()
}

fn current_generation(dir: &Path) -> String {
    fs::read_to_string(dir.join("CURRENT"))
        .unwrap()
        .trim()
        .to_string()
}

fn generation_dirs(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("gen-"))
        .collect()
}

fn index_finds(index: &PolicyIndex, text: &str) -> Vec<String> {
    citations(index, &query(text, Some(date!(2026 - 08 - 01))))
}

// ---- required behaviours -------------------------------------------------------------

#[test]
fn authorization_hold_released_in_the_us_ranks_rp003_first() {
    let (_dir, index) = fixture_index();
    let q = SearchQuery {
        region: Some(Region::US),
        ..query("authorization hold released", Some(date!(2026 - 08 - 01)))
    };
    let results = index.search(&q).unwrap();
    assert_eq!(
        (results[0].doc_id.as_str(), results[0].version),
        ("RP-003", 1)
    );
}

#[test]
fn the_reporting_window_follows_the_version_in_force() {
    let (_dir, index) = fixture_index();
    let text = "reporting window for a duplicate charge";
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 03 - 01)))),
        "RP-001@1#3"
    );
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 09 - 01)))),
        "RP-001@2#3"
    );
    // effective_to is the inclusive last day.
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 06 - 30)))),
        "RP-001@1#3"
    );
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 07 - 01)))),
        "RP-001@2#3"
    );
}

#[test]
fn a_chinese_reporting_window_query_follows_the_version_in_force() {
    let (_dir, index) = fixture_index();
    let text = "重复扣款的时限";
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 03 - 01)))),
        "RP-001@1#3"
    );
    assert_eq!(
        first(&index, &query(text, Some(date!(2026 - 09 - 01)))),
        "RP-001@2#3"
    );
}

#[test]
fn the_draft_never_appears_unless_drafts_are_included() {
    let (_dir, index) = fixture_index();
    let mut texts: Vec<String> = eval::load_queries(EVAL_QUERIES)
        .unwrap()
        .into_iter()
        .map(|q| q.query)
        .collect();
    texts.push("draft proposal 365 days without human approval".into());
    for text in &texts {
        for as_of in [
            None,
            Some(date!(2027 - 06 - 01)),
            Some(date!(2026 - 08 - 01)),
        ] {
            let q = SearchQuery {
                limit: MAX_LIMIT,
                ..query(text, as_of)
            };
            for passage in index.search(&q).unwrap() {
                assert_ne!(
                    passage.status,
                    PolicyStatus::Draft,
                    "{text}: {}",
                    passage.citation()
                );
                assert_ne!(passage.citation(), "RP-001@3#1", "{text}");
            }
        }
    }
    let with_drafts = SearchQuery {
        include_drafts: true,
        ..query(
            "draft proposal 365 days without human approval",
            Some(date!(2027 - 06 - 01)),
        )
    };
    let results = index.search(&with_drafts).unwrap();
    assert_eq!(results[0].citation(), "RP-001@3#1");
    assert_eq!(results[0].status, PolicyStatus::Draft);
}

// ---- filters, phrases, syntax --------------------------------------------------------

#[test]
fn passages_carry_their_version_metadata() {
    let (_dir, index) = fixture_index();
    let results = index
        .search(&query("reporting window", Some(date!(2026 - 01 - 01))))
        .unwrap();
    let p = results
        .iter()
        .find(|p| p.citation() == "RP-001@1#3")
        .unwrap();
    assert_eq!(p.title, "Reporting window");
    assert!(p.text.contains("180 days"));
    assert_eq!(p.status, PolicyStatus::Published);
    assert_eq!(p.effective_from, date!(2025 - 01 - 01));
    assert_eq!(p.effective_to, Some(date!(2026 - 06 - 30)));
    assert!(p.score > 0.0);
    assert!(results.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn without_a_date_every_published_version_is_searched() {
    let (_dir, index) = fixture_index();
    let found = citations(
        &index,
        &SearchQuery {
            limit: 20,
            ..query("reporting window duplicate", None)
        },
    );
    assert!(found.contains(&"RP-001@1#3".to_string()) && found.contains(&"RP-001@2#3".to_string()));
}

#[test]
fn before_any_policy_took_effect_nothing_is_found() {
    let (_dir, index) = fixture_index();
    assert!(index
        .search(&query("refund", Some(date!(2024 - 12 - 31))))
        .unwrap()
        .is_empty());
}

#[test]
fn quoted_text_is_a_phrase() {
    let (_dir, index) = fixture_index();
    let found = citations(&index, &query("\"180 days\"", None));
    assert_eq!(found, ["RP-001@1#3"]);
    // The same words in another order are not the phrase.
    assert!(citations(&index, &query("\"days 180\"", None)).is_empty());
    // Unquoted, the words are matched separately (RP-001@2#3 has "days" too).
    assert!(citations(&index, &query("180 days", None)).len() > 1);
}

#[test]
fn region_and_product_filters_exclude_other_versions() {
    let eu_addon = PolicyDocument::parse(
        "+++\nid = \"RP-900\"\nversion = 1\ntitle = \"Addon refunds in Europe\"\nstatus = \"published\"\n\
         effective_from = \"2025-01-01\"\nregions = [\"EU\"]\nproducts = [\"addon\"]\n+++\n\
         ## 1. Zebra clause\n\nZebra addons are refunded in the EU only.\n",
    )
    .unwrap();
    let mut documents = fixture_documents();
    documents.push(eu_addon);
    let dir = tempfile::tempdir().unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    let zebra = |region, product| {
        citations(
            &index,
            &SearchQuery {
                region,
                product,
                ..query("zebra", None)
            },
        )
    };
    assert_eq!(zebra(None, None), ["RP-900@1#1"]);
    assert_eq!(
        zebra(Some(Region::EU), Some(Product::Addon)),
        ["RP-900@1#1"]
    );
    assert!(zebra(Some(Region::US), None).is_empty());
    assert!(zebra(None, Some(Product::AnnualPlan)).is_empty());
}

#[test]
fn bad_query_syntax_never_errors() {
    let (_dir, index) = fixture_index();
    let nasty = [
        "refund AND (",
        "\"unclosed phrase",
        "title:",
        "[1 TO",
        "***",
        "+-",
        ":",
        ")))",
        "doc_id:",
        "effective_from:abc",
        "version:>x",
        "\\",
        "\"",
        "",
        "   ",
        "，。？",
        "status:draft",
        "regions:",
        "NOT",
        "refund OR OR OR",
        "a^",
        "hold^abc",
        "{ TO }",
        "text:\"open",
        "IN [",
        "日元",
        "∑∫√",
        "refund~2",
        "*refund*",
    ];
    for text in nasty {
        let result = index.search(&query(text, Some(date!(2026 - 08 - 01))));
        assert!(result.is_ok(), "{text:?}: {result:?}");
    }
    // Lenient parsing still finds what it can read.
    assert!(!citations(&index, &query("authorization hold AND (", None)).is_empty());
    // Field syntax cannot reach drafts.
    for passage in index
        .search(&SearchQuery {
            limit: MAX_LIMIT,
            ..query("status:draft", None)
        })
        .unwrap()
    {
        assert_eq!(passage.status, PolicyStatus::Published);
    }
}

#[test]
fn limit_caps_the_number_of_passages() {
    let (_dir, index) = fixture_index();
    let with = |limit| {
        index
            .search(&SearchQuery {
                limit,
                ..query("refund", None)
            })
            .unwrap()
            .len()
    };
    assert_eq!(with(0), 0);
    assert_eq!(with(2), 2);
    assert!(with(usize::MAX) <= MAX_LIMIT);
}

#[test]
fn chinese_queries_find_english_policy() {
    let (_dir, index) = fixture_index();
    let august = Some(date!(2026 - 08 - 01));
    assert_eq!(
        first(
            &index,
            &SearchQuery {
                region: Some(Region::US),
                ..query("预授权 冻结 释放", august)
            }
        ),
        "RP-003@1#1"
    );
    assert_eq!(first(&index, &query("争议 拒付", august)), "RP-006@1#1");
    assert!(first(&index, &query("冷静期 取消 年费", august)).starts_with("RP-002@1"));
    // Chinese the glossary does not know finds nothing rather than everything.
    assert!(index
        .search(&query("你好，世界", august))
        .unwrap()
        .is_empty());
}

#[test]
fn filters_hold_on_generated_documents() {
    let documents = generate::documents(11, 600);
    let dir = tempfile::tempdir().unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    assert_eq!(index.section_count(), 600);
    let meta_of = |id: &str, version: u32| {
        documents
            .iter()
            .find(|d| d.meta.id == id && d.meta.version == version)
            .map(|d| d.meta.clone())
            .unwrap()
    };
    let mut checked = 0;
    for q in generate::queries(11, 300) {
        let q = SearchQuery { limit: 20, ..q };
        for passage in index.search(&q).unwrap() {
            let meta = meta_of(&passage.doc_id, passage.version);
            assert_eq!(passage.status, PolicyStatus::Published);
            if let Some(as_of) = q.as_of {
                assert!(
                    meta.in_force_on(as_of),
                    "{} not in force on {as_of}",
                    passage.citation()
                );
            }
            if let Some(region) = q.region {
                assert!(meta.regions.contains(&region));
            }
            if let Some(product) = q.product {
                assert!(meta.products.contains(&product));
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} passages checked");
}

// ---- the pruning path -------------------------------------------------------

/// The same passages in the same order with the same scores, bit for bit: pruning only
/// finds the candidates, which are then scored as filtering every match scores them.
fn assert_same_answers(index: &PolicyIndex, q: &SearchQuery) -> usize {
    let ours = index.search(q).unwrap();
    let every = index.search_filtering_every_match(q).unwrap();
    let ranked = |passages: &[rag_index::Passage]| {
        passages
            .iter()
            .map(|p| (p.citation(), p.score.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ranked(&ours), ranked(&every), "{q:?}");
    assert_eq!(ours, every, "{q:?}");
    ours.len()
}

#[test]
fn search_answers_what_filtering_every_match_answers_on_generated_corpora() {
    const CHINESE: &[&str] = &[
        "重复扣款 退款",
        "预授权 冻结 释放",
        "冷静期 取消 年费",
        "争议 拒付",
    ];
    for (seed, sections) in [(11, 600), (29, 3_000)] {
        let documents = generate::documents(seed, sections);
        let dir = tempfile::tempdir().unwrap();
        let index = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
        let (mut queries, mut passages) = (0, 0);
        for (i, q) in generate::queries(seed, 400).into_iter().enumerate() {
            // Drafts in a quarter of the queries, limits from 1 to the cap, and some
            // Chinese text (the glossary's expansions are the longest unions).
            let q = SearchQuery {
                include_drafts: i % 4 == 0,
                limit: [5, 1, 10, 20, MAX_LIMIT][i % 5],
                text: if i % 7 == 0 {
                    CHINESE[i % CHINESE.len()].to_string()
                } else {
                    q.text
                },
                ..q
            };
            passages += assert_same_answers(&index, &q);
            queries += 1;
        }
        assert!(
            passages > queries * 3,
            "{passages} passages in {queries} queries"
        );
    }
}

#[test]
fn search_answers_what_filtering_every_match_answers_at_every_cut_off() {
    // Sections whose scores tie, or differ only in their last bits, are where a cut-off
    // at k could keep the wrong one: every limit from 1 to 100 puts the cut between each
    // pair of the top 100. The last query has such a pair at 92-93: equal when every
    // match is scored, one part in ten million apart in pruning's order.
    let documents = generate::documents(29, 3_000);
    let dir = tempfile::tempdir().unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    let mut queries = generate::queries(29, 12);
    queries.push(SearchQuery {
        as_of: Some(date!(2026 - 06 - 13)),
        ..SearchQuery::new("冷静期 取消 年费")
    });
    for q in queries {
        for limit in 1..=MAX_LIMIT {
            assert_same_answers(&index, &SearchQuery { limit, ..q.clone() });
        }
    }
}

#[test]
fn search_answers_what_filtering_every_match_answers_on_the_eval_set() {
    let (_dir, index) = fixture_index();
    for labelled in eval::load_queries(EVAL_QUERIES).unwrap() {
        for include_drafts in [false, true] {
            let q = SearchQuery {
                region: labelled.region,
                product: labelled.product,
                include_drafts,
                limit: MAX_LIMIT,
                ..query(&labelled.query, labelled.as_of)
            };
            assert_same_answers(&index, &q);
        }
    }
}

// ---- lifecycle ------------------------------------------------------------------------

#[test]
fn reopening_with_the_same_policies_reuses_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let documents = fixture_documents();
    let first_hash = PolicyIndex::open_or_build(dir.path(), &documents)
        .unwrap()
        .policy_hash();
    let generation = current_generation(dir.path());
    let mut reordered = documents.clone();
    reordered.reverse();
    let index = PolicyIndex::open_or_build(dir.path(), &reordered).unwrap();
    assert_eq!(current_generation(dir.path()), generation);
    assert_eq!(index.policy_hash(), first_hash);
    assert_eq!(
        index.section_count(),
        documents.iter().map(|d| d.sections.len()).sum::<usize>()
    );
}

#[test]
fn a_policy_change_triggers_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let documents = fixture_documents();
    let older: Vec<_> = documents
        .iter()
        .filter(|d| d.meta.id != "RP-006")
        .cloned()
        .collect();
    let before = PolicyIndex::open_or_build(dir.path(), &older).unwrap();
    let generation = current_generation(dir.path());
    assert!(index_finds(&before, "chargeback").is_empty());
    let after = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    assert_ne!(current_generation(dir.path()), generation);
    assert_ne!(after.policy_hash(), before.policy_hash());
    assert_eq!(after.section_count(), before.section_count() + 1);
    assert_eq!(index_finds(&after, "chargeback"), ["RP-006@1#1"]);
    // The index opened before the rebuild still answers from its own generation.
    assert!(index_finds(&before, "chargeback").is_empty());
}

#[test]
fn a_schema_version_change_triggers_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let documents = fixture_documents();
    PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    let generation = current_generation(dir.path());
    let meta_path = dir.path().join(&generation).join("rag-index.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    meta["schema_version"] = serde_json::json!(rag_index::SCHEMA_VERSION + 1);
    fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
    assert_ne!(current_generation(dir.path()), generation);
    assert_eq!(index_finds(&index, "chargeback"), ["RP-006@1#1"]);
}

#[test]
fn corrupted_or_foreign_directories_are_rebuilt() {
    let documents = fixture_documents();
    type Corruption = (&'static str, fn(&Path));
    let corruptions: [Corruption; 5] = [
        ("garbage pointer", |dir| {
            fs::write(dir.join("CURRENT"), "\u{0}\u{1}junk").unwrap()
        }),
        ("pointer to a missing generation", |dir| {
            fs::write(dir.join("CURRENT"), "gen-999999\n").unwrap()
        }),
        ("garbage meta", |dir| {
            let generation = current_generation(dir);
            fs::write(dir.join(generation).join("rag-index.json"), "{not json").unwrap();
        }),
        ("tantivy files deleted", |dir| {
            let generation = dir.join(current_generation(dir));
            for entry in fs::read_dir(&generation).unwrap() {
                let path = entry.unwrap().path();
                if path.file_name().unwrap() != "rag-index.json" {
                    fs::remove_file(path).unwrap();
                }
            }
        }),
        ("segment files truncated", |dir| {
            let generation = dir.join(current_generation(dir));
            for entry in fs::read_dir(&generation).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                if name.ends_with(".idx") || name.ends_with(".store") || name == "meta.json" {
                    fs::write(&path, b"x").unwrap();
                }
            }
        }),
    ];
    for (what, corrupt) in corruptions {
        let dir = tempfile::tempdir().unwrap();
        PolicyIndex::open_or_build(dir.path(), &documents).unwrap();
        corrupt(dir.path());
        let index = PolicyIndex::open_or_build(dir.path(), &documents)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(index_finds(&index, "chargeback"), ["RP-006@1#1"], "{what}");
    }
}

#[test]
fn a_foreign_directory_is_rebuilt_and_its_files_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("meta.json"), "{\"someone\":\"else\"}").unwrap();
    fs::write(dir.path().join("CURRENT"), "gen-000001\n").unwrap();
    fs::create_dir(dir.path().join("gen-000001")).unwrap();
    fs::write(
        dir.path().join("gen-000001").join("rag-index.json"),
        "{\"format\":\"other\"}",
    )
    .unwrap();
    let index = PolicyIndex::open_or_build(dir.path(), &fixture_documents()).unwrap();
    assert_eq!(index_finds(&index, "chargeback"), ["RP-006@1#1"]);
    assert!(dir.path().join("meta.json").exists());
    assert_ne!(current_generation(dir.path()), "gen-000001");
}

#[test]
fn searches_keep_working_while_another_thread_rebuilds() {
    let (dir, index) = fixture_index();
    let documents = fixture_documents();
    let without_rp006: Vec<_> = documents
        .iter()
        .filter(|d| d.meta.id != "RP-006")
        .cloned()
        .collect();
    let done = AtomicBool::new(false);
    let searches = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let q = SearchQuery {
                    region: Some(Region::US),
                    ..query("authorization hold released", Some(date!(2026 - 08 - 01)))
                };
                while !done.load(Ordering::Acquire) {
                    let results = index.search(&q).expect("search during rebuild");
                    assert_eq!(results[0].doc_id, "RP-003");
                    searches.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for round in 0..6 {
            let set = if round % 2 == 0 {
                &without_rp006
            } else {
                &documents
            };
            index.rebuild(set).unwrap();
            assert_eq!(
                index.section_count(),
                set.iter().map(|d| d.sections.len()).sum::<usize>()
            );
        }
        done.store(true, Ordering::Release);
    });
    assert!(searches.load(Ordering::Relaxed) > 0);
    // After six swaps only the current and the previous generation remain on disk.
    assert_eq!(generation_dirs(dir.path()).len(), 2);
    assert_eq!(index_finds(&index, "chargeback"), ["RP-006@1#1"]);
}

#[test]
fn a_rebuild_reports_its_progress_once_per_section() {
    let (_dir, index) = fixture_index();
    let documents = fixture_documents();
    let total: usize = documents.iter().map(|d| d.sections.len()).sum();
    let mut calls = Vec::new();
    index
        .rebuild_with_progress(&documents, |done, of| calls.push((done, of)))
        .unwrap();
    let expected: Vec<_> = (0..=total).map(|done| (done, total)).collect();
    assert_eq!(calls, expected);
    assert_eq!(index.section_count(), total);
}

#[test]
fn a_rebuilt_index_is_what_the_next_process_opens() {
    let (dir, index) = fixture_index();
    let documents = fixture_documents();
    let fewer: Vec<_> = documents
        .iter()
        .filter(|d| d.meta.id != "RP-006")
        .cloned()
        .collect();
    index.rebuild(&fewer).unwrap();
    let generation = current_generation(dir.path());
    let reopened = PolicyIndex::open_or_build(dir.path(), &fewer).unwrap();
    assert_eq!(current_generation(dir.path()), generation);
    assert_eq!(reopened.policy_hash(), index.policy_hash());
}

#[test]
fn duplicate_policy_versions_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut documents = fixture_documents();
    documents.push(documents[0].clone());
    let err = PolicyIndex::open_or_build(dir.path(), &documents).unwrap_err();
    assert!(
        matches!(err, IndexError::DuplicateDocument(ref v) if v == "RP-001@1"),
        "{err}"
    );
}

#[test]
fn the_index_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PolicyIndex>();
}

// ---- eval -----------------------------------------------------------------------------

#[test]
fn the_eval_set_covers_every_version_in_english_and_chinese() {
    let queries = eval::load_queries(EVAL_QUERIES).unwrap();
    assert!(queries.len() >= 50, "{}", queries.len());
    let is_chinese = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let chinese = queries
        .iter()
        .filter(|q| q.query.chars().any(is_chinese))
        .count();
    assert!(chinese >= 20, "{chinese} Chinese queries");
    let expected: BTreeSet<String> = queries
        .iter()
        .map(|q| q.expected.split('#').next().unwrap().to_string())
        .collect();
    for document in fixture_documents() {
        let version = document.meta.version_ref();
        assert!(expected.contains(&version), "{version} not covered");
    }
    let sections: BTreeSet<(String, String)> = fixture_documents()
        .iter()
        .flat_map(|d| {
            d.sections
                .iter()
                .map(move |s| (d.meta.version_ref(), s.anchor.clone()))
        })
        .collect();
    for q in &queries {
        let (version, anchor) = q.expected.split_once('#').unwrap();
        assert!(
            sections.contains(&(version.to_string(), anchor.to_string())),
            "{} is not a section",
            q.expected
        );
    }
}

#[test]
fn recall_at_3_on_the_eval_set_is_at_least_95_percent() {
    let (_dir, index) = fixture_index();
    let queries = eval::load_queries(EVAL_QUERIES).unwrap();
    let report = eval::run(&index, &queries);
    println!(
        "policy search eval: total {} recall@1 {:.3} recall@3 {:.3} mrr {:.3}",
        report.total, report.recall_at_1, report.recall_at_3, report.mrr
    );
    for miss in &report.misses {
        println!(
            "  miss: {:?} expected {} rank {:?} got {:?}",
            miss.query, miss.expected, miss.rank, miss.got
        );
    }
    assert_eq!(report.total, queries.len());
    assert!(report.recall_at_3 >= 0.95, "{report:#?}");
}

#[test]
fn a_generation_remembers_its_answers_by_what_decides_them_and_a_rebuild_forgets() {
    let (_dir, index) = fixture_index();
    let q = SearchQuery {
        region: Some(Region::US),
        limit: 3,
        ..query("authorization hold released", Some(date!(2026 - 11 - 20)))
    };
    assert!(index.remembered(&q).is_none(), "nothing asked yet");
    let answer = index.search(&q).unwrap();
    assert!(!answer.is_empty());
    assert_eq!(index.remembered(&q), Some(answer.clone()));
    // Another day with the same versions in force is the same answer; the oracle agrees.
    let next_day = SearchQuery {
        as_of: Some(date!(2026 - 11 - 21)),
        ..q.clone()
    };
    assert_eq!(index.remembered(&next_day), Some(answer.clone()));
    assert_eq!(
        index.search_filtering_every_match(&next_day).unwrap(),
        answer
    );
    // Other words or another limit are other questions.
    for other in [
        SearchQuery {
            limit: 2,
            ..q.clone()
        },
        SearchQuery {
            text: "duplicate charge".into(),
            ..q.clone()
        },
    ] {
        assert!(index.remembered(&other).is_none());
    }
    // Another region is remembered only where the same versions are in scope, and then
    // it is the answer the oracle gives.
    for region in [Region::CN, Region::JP, Region::EU] {
        let there = SearchQuery {
            region: Some(region),
            ..q.clone()
        };
        if let Some(known) = index.remembered(&there) {
            assert_eq!(known, index.search_filtering_every_match(&there).unwrap());
        }
    }
    // A day on which another version is in force is another question too.
    let years_ago = SearchQuery {
        as_of: Some(date!(2020 - 01 - 01)),
        ..q.clone()
    };
    assert!(index.remembered(&years_ago).is_none());
    index.rebuild(&fixture_documents()).unwrap();
    assert!(
        index.remembered(&q).is_none(),
        "a new generation starts empty"
    );
}
