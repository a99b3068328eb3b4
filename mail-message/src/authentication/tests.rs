//! The field forms real servers write and senders forge, each with what it proves.

use super::*;

const TRUSTED: Option<&str> = Some("mx.shop.test");
const FROM: &str = "li.wei@example.cn";

fn proof(fields: &[&str]) -> SenderProof {
    let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
    sender_proof(&fields, TRUSTED, FROM)
}

#[test]
fn each_form_of_the_trusted_field_proves_exactly_what_it_says() {
    let cases: &[(&str, Option<&str>)] = &[
        ("mx.shop.test; dmarc=pass header.from=example.cn", Some("dmarc")),
        ("mx.shop.test; dmarc=pass (p=reject dis=none) header.from=Example.CN", Some("dmarc")),
        ("mx.shop.test 1; spf=pass smtp.mailfrom=li.wei@example.cn", Some("spf")),
        ("mx.shop.test; spf = pass smtp . mailfrom = example.cn", Some("spf")),
        ("mx.shop.test; dkim=pass (good signature) header.d=example.cn header.s=s1 header.b=Ab/+1=", Some("dkim")),
        ("mx.shop.test; dkim=pass header.i=@mail.example.cn", None),
        ("mx.shop.test; dkim=pass header.i=@example.cn", Some("dkim")),
        ("mx.shop.test; dkim=fail header.d=example.cn; dkim=pass header.d=example.cn", Some("dkim")),
        ("mx.shop.test; dmarc=none header.from=example.cn; spf=pass smtp.mailfrom=example.cn", Some("spf")),
        ("\"mx.shop.test\"; dmarc=pass header.from=example.cn", Some("dmarc")),
        // Nothing proves the sender.
        ("mx.shop.test; none", None),
        ("mx.shop.test; spf=fail smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf=fail (sender IP is not authorized) smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf = fail smtp.mailfrom = example.cn", None),
        ("mx.shop.test; spf=softfail smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf=neutral smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf=none smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf=temperror smtp.mailfrom=example.cn", None),
        ("mx.shop.test; spf=permerror smtp.mailfrom=example.cn", None),
        ("mx.shop.test; dmarc=fail,p=reject header.from=example.cn", None),
        ("mx.shop.test; dmarc=temperror header.from=example.cn", None),
        ("mx.shop.test; spf=pass smtp.mailfrom=example.cn; dmarc=fail header.from=example.cn", None),
        // A pass for another domain, a subdomain of the From domain, a public suffix.
        ("mx.shop.test; spf=pass smtp.mailfrom=attacker.test", None),
        ("mx.shop.test; spf=pass smtp.mailfrom=bounces.example.cn", None),
        ("mx.shop.test; dkim=pass header.d=cn", None),
        ("mx.shop.test; dmarc=pass header.from=attacker.test", None),
        ("mx.shop.test; dmarc=pass", None),
        ("mx.shop.test; spf=pass", None),
        // Another server, a version we do not know, a field we cannot read.
        ("mx.attacker.test; dmarc=pass header.from=example.cn", None),
        ("mx.shop.test 2; dmarc=pass header.from=example.cn", None),
        ("mx.shop.test; dmarc=pass (unclosed header.from=example.cn", None),
        ("", None),
    ];
    for (field, proven) in cases {
        let got = proof(&[field]);
        match proven {
            Some(by) => assert_eq!(got, SenderProof::Proven(by), "{field}"),
            None => assert!(!got.is_proven(), "{field} proved {got:?}"),
        }
    }
}

#[test]
fn only_the_topmost_field_of_the_trusted_server_is_read_and_nothing_below_it() {
    // The server's own verdict on top; a sender's forged pass below it.
    assert!(!proof(&[
        "mx.shop.test; spf=fail smtp.mailfrom=example.cn",
        "mx.shop.test; dmarc=pass header.from=example.cn",
    ])
    .is_proven());
    // Another server's field above is skipped, never believed.
    assert_eq!(
        proof(&[
            "filter.internal; dmarc=fail",
            "mx.shop.test; dmarc=pass header.from=example.cn",
        ]),
        SenderProof::Proven("dmarc")
    );
    assert!(!proof(&["filter.internal; dmarc=pass header.from=example.cn"]).is_proven());
    // An unreadable field that may be the trusted server's stops the search.
    assert!(!proof(&[
        "mx.shop.test; dmarc=pass (oops",
        "mx.shop.test; dmarc=pass header.from=example.cn",
    ])
    .is_proven());
}

#[test]
fn with_no_trusted_server_or_no_field_nothing_is_proven() {
    let field = vec!["mx.shop.test; dmarc=pass header.from=example.cn".to_string()];
    assert!(!sender_proof(&field, None, FROM).is_proven());
    assert!(!sender_proof(&field, Some(" "), FROM).is_proven());
    assert!(!sender_proof(&[], TRUSTED, FROM).is_proven());
    assert!(!sender_proof(&field, TRUSTED, "no-domain").is_proven());
}

#[test]
fn a_field_is_read_into_its_id_results_and_properties() {
    let field = read_field(
        " mx.shop.test (Postfix) 1 ; dkim/1 = pass reason=\"good; sig\" header.d=example.cn (ok) ;\r\n\tspf=fail smtp.mailfrom=x@example.cn",
    )
    .unwrap();
    assert_eq!(field.authserv_id, "mx.shop.test");
    assert_eq!(field.results.len(), 2);
    assert_eq!(field.results[0].method, "dkim");
    assert_eq!(field.results[0].result, "pass");
    assert_eq!(
        field.results[0].properties,
        vec![
            ("reason".to_string(), "good; sig".to_string()),
            ("header.d".to_string(), "example.cn".to_string())
        ]
    );
    assert_eq!(
        field.results[1].property("smtp.mailfrom"),
        Some("x@example.cn")
    );
}
