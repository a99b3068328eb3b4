//! Chinese → English query translation through a fixed bilingual glossary.
//!
//! The policy text is English; customers and staff also ask in Chinese. Before a query
//! is parsed, every Chinese phrase found in [`GLOSSARY`] (longest match first) is
//! replaced by its English terms, Chinese quotation marks become ASCII quotes (so a
//! quoted Chinese phrase becomes an English phrase query), and any other CJK text is
//! dropped. English words pass through unchanged, so mixed queries work.
//!
//! This is a glossary, not a translator or a Chinese tokenizer: a Chinese word that is
//! not in the table contributes nothing to the query. Extend the table when the eval
//! set (`evals/policy_search/queries.jsonl`) shows a miss.

/// Chinese phrase → English terms, as they appear in the policy text.
///
/// Order does not matter: matching always takes the longest key at each position.
pub const GLOSSARY: &[(&str, &str)] = &[
    // RP-001 duplicate and erroneous charges
    ("重复扣款", "duplicate charge"),
    ("重复扣费", "duplicate charge"),
    ("重复收费", "duplicate charge"),
    ("重复付款", "duplicate charge"),
    ("重复支付", "duplicate charge"),
    ("扣了两次", "duplicate charge charged twice"),
    ("扣两次", "duplicate charge charged twice"),
    ("收了两次", "duplicate charge charged twice"),
    ("两次扣款", "duplicate charge charged twice"),
    ("多扣", "overcharge"),
    ("多收", "overcharge"),
    ("多收费", "overcharge"),
    ("超额扣款", "overcharge"),
    ("扣多了", "overcharge"),
    ("重复购买", "accidental repeat purchase"),
    ("重复下单", "accidental repeat purchase"),
    ("买了两次", "accidental repeat purchase"),
    ("误购", "accidental repeat purchase"),
    ("不小心", "accidental"),
    ("分钟", "minutes"),
    ("不同订单", "different orders"),
    ("同一订单", "same order"),
    ("订单", "order"),
    ("扣款", "charge"),
    ("收费", "charge"),
    ("定义", "definitions"),
    ("什么是", "definition"),
    ("不算", "not"),
    ("不是", "not"),
    ("时限", "reporting window days"),
    ("期限", "reporting window days"),
    ("报告期限", "reporting window days"),
    ("申报期限", "reporting window days"),
    ("多少天内", "within days reporting window"),
    ("多久", "days"),
    ("天内", "within days"),
    ("超过", "after exceed"),
    ("原支付方式", "original payment method"),
    ("支付方式", "payment method"),
    ("币种", "currency"),
    ("货币", "currency"),
    ("换汇", "converted currency"),
    ("已退款", "already refunded"),
    ("部分退款", "partial refund already refunded"),
    ("全额退款", "refund in full"),
    ("全额", "full"),
    ("差额", "difference"),
    ("上限", "never exceed amount captured"),
    ("怎么退款", "refund remedy"),
    ("如何退款", "refund remedy"),
    ("退款", "refund"),
    ("退钱", "refund"),
    ("退费", "refund"),
    ("失败", "failed"),
    // RP-002 cooling-off and cancellation
    ("冷静期", "cooling-off period"),
    ("犹豫期", "cooling-off period"),
    ("取消", "cancel cancellation"),
    ("退订", "cancel cancellation"),
    ("年度套餐", "annual plan"),
    ("年费", "annual plan"),
    ("年付", "annual plan"),
    ("年度", "annual"),
    ("月度套餐", "monthly plan"),
    ("月费", "monthly plan"),
    ("包月", "monthly plan"),
    ("月付", "monthly plan"),
    ("附加组件", "add-ons"),
    ("附加服务", "add-ons"),
    ("增值服务", "add-ons"),
    ("加购", "add-ons"),
    ("插件", "add-ons"),
    ("哪个订单", "which order"),
    ("多个订单", "several orders"),
    // RP-003 authorization holds
    ("预授权", "authorization hold"),
    ("授权冻结", "authorization hold"),
    ("冻结", "hold"),
    ("预扣", "authorization hold"),
    ("未扣款", "not captured"),
    ("释放", "released"),
    ("解冻", "hold released"),
    ("发卡行", "card issuer"),
    ("银行卡", "card"),
    ("信用卡", "card"),
    ("支付团队", "payments team"),
    ("工作日", "business days"),
    // RP-004 approval authority
    ("审批", "approval approve"),
    ("批准", "approval approve"),
    ("审核", "approval"),
    ("谁能", "who may"),
    ("谁可以", "who may"),
    ("主管", "supervisor"),
    ("客服", "support agent"),
    ("阈值", "threshold"),
    ("额度", "threshold"),
    ("限额", "threshold"),
    ("权限", "approval authority"),
    ("自己提出", "proposed themselves"),
    ("自己", "themselves"),
    // RP-005 communication
    ("告知客户", "customer communication"),
    ("回复客户", "customer communication"),
    ("沟通", "communication"),
    ("客户", "customer"),
    ("到账", "arrived business days bank"),
    ("已提交", "submitted"),
    ("提交", "submitted"),
    ("已完成", "completed"),
    ("完成", "completed"),
    ("超时", "timeout unknown verified"),
    ("核实", "verified"),
    ("确认", "verified"),
    ("状态", "status states"),
    ("员工姓名", "names of staff"),
    // RP-006 disputes
    ("争议", "dispute chargeback"),
    ("拒付", "dispute chargeback"),
    ("退单", "chargeback"),
    ("银行", "bank"),
    ("发起", "opened"),
    ("争议团队", "disputes team"),
    // RP-007 account verification
    ("账户验证", "account verification"),
    ("身份验证", "account verification authenticated"),
    ("验证", "verification"),
    ("别人的订单", "order belongs different customer"),
    ("他人", "another customer"),
    ("其他客户", "other customers"),
    ("数据", "data"),
    ("访问", "access"),
    ("安全团队", "security team"),
    ("忽略规则", "ignore the rules"),
    ("经理已经批准", "manager already approved"),
    ("经理", "manager"),
    // shared
    ("升级", "escalate escalated"),
    ("上报", "escalate escalated"),
    ("转交", "escalate"),
    ("草案", "draft"),
    ("草稿", "draft"),
    ("政策", "policy"),
    ("规则", "rules"),
    ("金额", "amount"),
    ("天", "days"),
];

/// The glossary entry with the longest key that `rest` starts with.
fn longest_match(rest: &str) -> Option<(&'static str, &'static str)> {
    GLOSSARY
        .iter()
        .filter(|(chinese, _)| rest.starts_with(chinese))
        .max_by_key(|(chinese, _)| chinese.len())
        .copied()
}

/// True for characters of the CJK scripts and their punctuation blocks.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FFF      // radicals, Kangxi
        | 0x3000..=0x303F    // CJK punctuation
        | 0x3040..=0x30FF    // kana
        | 0x3400..=0x4DBF    // extension A
        | 0x4E00..=0x9FFF    // unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0xFF00..=0xFFEF    // full-width forms
        | 0x20000..=0x2FA1F) // extensions B–F
}

/// Rewrites the Chinese parts of `query` into English terms; see the module docs.
pub fn translate(query: &str) -> String {
    let mut out = String::with_capacity(query.len() + 16);
    let mut rest = query;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii() {
            out.push(c);
        } else if let Some((chinese, english)) = longest_match(rest) {
            out.push(' ');
            out.push_str(english);
            out.push(' ');
            rest = &rest[chinese.len()..];
            continue;
        } else if matches!(c, '“' | '”' | '「' | '」' | '『' | '』' | '＂') {
            out.push('"');
        } else if is_cjk(c) {
            // Unknown Chinese text or punctuation: a separator, never a search term.
            out.push(' ');
        } else {
            // Other scripts (accented Latin…) pass through to the English analyzer.
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_queries_pass_through_unchanged() {
        assert_eq!(
            translate("reporting window \"180 days\""),
            "reporting window \"180 days\""
        );
    }

    #[test]
    fn chinese_phrases_become_english_terms() {
        let t = translate("重复扣款怎么退款？");
        assert!(t.contains("duplicate charge"), "{t}");
        assert!(t.contains("refund"), "{t}");
        assert!(!t.chars().any(is_cjk), "{t}");
    }

    #[test]
    fn the_longest_key_wins() {
        // "争议团队" is the disputes team, not "争议" + "团队"; "重复购买" is not "重复扣款".
        assert_eq!(translate("重复购买").trim(), "accidental repeat purchase");
        assert_eq!(translate("争议团队").trim(), "disputes team");
    }

    #[test]
    fn chinese_quotes_make_an_english_phrase() {
        let t = translate("“预授权”");
        assert_eq!(
            t.split_whitespace().collect::<Vec<_>>(),
            ["\"", "authorization", "hold", "\""]
        );
    }

    #[test]
    fn mixed_queries_keep_english_words() {
        let t = translate("RP-001 的时限");
        assert!(t.starts_with("RP-001"), "{t}");
        assert!(t.contains("reporting window"), "{t}");
    }

    #[test]
    fn every_glossary_key_is_chinese_and_every_value_is_plain_english() {
        for (chinese, english) in GLOSSARY {
            assert!(chinese.chars().all(is_cjk), "{chinese}");
            assert!(english.is_ascii() && !english.contains('"'), "{english}");
        }
    }

    #[test]
    fn glossary_keys_are_unique() {
        let mut keys: Vec<_> = GLOSSARY.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        assert_eq!(before, keys.len());
    }
}
