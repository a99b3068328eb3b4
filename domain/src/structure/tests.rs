//! The places of real mail layouts, one per client and language.

use super::*;

fn places(text: &str) -> Vec<(Place, String)> {
    split(text)
        .blocks()
        .iter()
        .map(|b| (b.place, b.text.clone()))
        .collect()
}

#[test]
fn a_top_posted_reply_keeps_the_new_words_apart_from_the_thread_in_every_language() {
    let headers = [
        "On Mon, 3 Mar 2026 at 10:00, Refund Desk <help@shop.example> wrote:",
        "Am Mo., 3. März 2026 um 10:00 Uhr schrieb Refund Desk <help@shop.example>:",
        "Le lun. 3 mars 2026 à 10:00, Refund Desk <help@shop.example> a écrit :",
        "El lun, 3 mar 2026 a las 10:00, Refund Desk (<help@shop.example>) escribió:",
        "Il giorno lun 3 mar 2026 alle ore 10:00 Refund Desk <help@shop.example> ha scritto:",
        "Op ma 3 mrt 2026 om 10:00 schreef Refund Desk <help@shop.example>:",
        "Em seg., 3 de mar. de 2026 às 10:00, Refund Desk <help@shop.example> escreveu:",
        "2026년 3월 3일 (월) 오전 10:00, Refund Desk <help@shop.example>님이 작성:",
        "在 2026年3月3日 10:00，Refund Desk <help@shop.example> 写道：",
        "2026年3月3日(月) 10:00 Refund Desk <help@shop.example>:",
        "-----Original Message-----",
        "----- Ursprüngliche Nachricht -----",
        "-------- Message d'origine --------",
        "-----Mensaje original-----",
        "-----原始邮件-----",
        "-----원본 메시지-----",
        // Without the sender's address, the verb before the name.
        "Op 31-03-2026 om 04:31 schreef Example Shop:",
        "Am 10.04.2026 um 08:59 schrieb Example Shop:",
    ];
    for header in headers {
        let mail = format!("Order 65169 please.\n\n{header}\nYour order 51110 was shipped.\n");
        let parts = split(&mail);
        assert_eq!(parts.new_text(), "Order 65169 please.", "{header}");
        let quoted = parts.text_of(&[Place::Quoted]);
        assert!(quoted.contains("51110"), "{header}: {parts:?}");
    }
}

#[test]
fn an_outlook_header_block_is_quoted_or_forwarded_by_its_subject() {
    let reply = "Still not refunded.\n\n________________________________\nVon: Refund Desk \
                 <help@shop.example>\nGesendet: Montag, 3. März 2026 10:00\nAn: anna@example.de\n\
                 Betreff: AW: Bestellung 51110\n\nIhre Bestellung 51110 wurde versandt.";
    let parts = split(reply);
    assert_eq!(parts.new_text(), "Still not refunded.");
    assert!(parts.text_of(&[Place::Quoted]).contains("wurde versandt"));
    let forward = "See the receipt below.\n\n发件人: Shop <orders@shop.example>\n发送时间: \
                   2026年3月3日 10:00\n收件人: li@example.cn\n主题: 转发: 订单确认 65169\n\n订单 65169 已付款";
    let parts = split(forward);
    assert_eq!(parts.new_text(), "See the receipt below.");
    assert!(parts.text_of(&[Place::Forwarded]).contains("已付款"));
    assert!(parts.text_of(&[Place::Quoted]).is_empty(), "{parts:?}");
    let japanese = "返金をお願いします。\n\n差出人: Shop <orders@shop.example>\n送信日時: 2026年3月3日 \
                    10:00\n宛先: sato@example.jp\n件名: RE: ご注文 51110\n\nご注文ありがとうございます。";
    assert_eq!(split(japanese).new_text(), "返金をお願いします。");
}

#[test]
fn a_forwarded_receipt_is_forwarded_not_new() {
    for banner in [
        "---------- Forwarded message ---------",
        "Begin forwarded message:",
        "-------- Weitergeleitete Nachricht --------",
        "-------- Message transféré --------",
        "---------- Mensaje reenviado ----------",
        "---------- Messaggio inoltrato ----------",
        "---------- Doorgestuurd bericht ---------",
        "---------- Mensagem encaminhada ---------",
        "---------- 전달된 메시지 ---------",
        "---------- 転送メッセージ ----------",
    ] {
        let mail = format!(
            "charged twice, see below\n\n{banner}\nFrom: Shop\nOrder: 65169\nTotal: $12.00"
        );
        let parts = split(&mail);
        assert_eq!(parts.new_text(), "charged twice, see below", "{banner}");
        assert!(
            parts.text_of(&[Place::Forwarded]).contains("65169"),
            "{banner}"
        );
    }
}

#[test]
fn quoted_lines_anywhere_are_quoted_and_the_answers_between_them_are_new() {
    let mail = "> Which order is it about?\n65169\n> > Older: order 51110\nthanks";
    assert_eq!(
        places(mail),
        [
            (Place::Quoted, "Which order is it about?".to_string()),
            (Place::New, "65169".to_string()),
            (Place::Quoted, "Older: order 51110".to_string()),
            (Place::New, "thanks".to_string()),
        ]
    );
}

#[test]
fn a_signature_is_found_after_a_delimiter_a_sign_off_or_a_phone_client_line() {
    let mail =
        "Order 65169 was charged twice.\n\nMit freundlichen Grüßen\nAnna Weber\nMusterstr. 12, \
                10115 Berlin\nTel. +49 30 1234567\nUSt-IdNr. DE123456789";
    let parts = split(mail);
    assert_eq!(parts.new_text(), "Order 65169 was charged twice.");
    assert!(parts.text_of(&[Place::Signature]).contains("DE123456789"));
    let dashed = "cancel please\n-- \nJean Dupont\n+33 1 23 45 67 89";
    assert_eq!(split(dashed).new_text(), "cancel please");
    let phone = "refund order 65169\n\nSent from my iPhone";
    assert_eq!(split(phone).new_text(), "refund order 65169");
    let korean = "두 번 결제되었습니다.\n\n감사합니다\n김민준\n010-1234-5678";
    assert_eq!(split(korean).new_text(), "두 번 결제되었습니다.");
}

#[test]
fn a_sign_off_followed_by_a_long_text_or_a_postscript_is_no_signature() {
    let long = format!(
        "Thanks,\n{}",
        "I was charged twice for my order.\n".repeat(12)
    );
    assert!(split(&long).text_of(&[Place::Signature]).is_empty());
    let ps = "Refund please.\nBest regards,\nAnna\nP.S. the order is 65169";
    assert!(split(ps).new_text().contains("65169"));
    let opening = "Thanks,\nplease cancel order 65169";
    assert!(split(opening).new_text().contains("65169"));
}

#[test]
fn pasted_statement_lines_are_set_apart_from_the_sentences_around_them() {
    let mail =
        "I was charged twice, here is my statement:\n03/12/2026  TRADER JOE'S #552  -45.12\n\
                03/12/2026  SHOP.EXAMPLE  -12.00\n03/12/2026  SHOP.EXAMPLE  -12.00\nPlease fix it.";
    let parts = split(mail);
    assert_eq!(
        parts.new_text(),
        "I was charged twice, here is my statement:\nPlease fix it."
    );
    assert!(parts.text_of(&[Place::Pasted]).contains("#552"));
}

#[test]
fn html_remnants_are_cleaned_before_the_split() {
    let mail = "<div>Bitte erstatten: Bestellung 65169</div><div><br></div><blockquote>Ihre \
                Bestellung 51110</blockquote>";
    let parts = split(mail);
    assert_eq!(parts.new_text(), "Bitte erstatten: Bestellung 65169");
    assert!(parts.text_of(&[Place::Quoted]).contains("51110"));
}

#[test]
fn a_plain_message_is_all_new_and_an_empty_one_has_no_blocks() {
    let text = "I was charged twice for order O-1001.\nPlease refund the second charge.";
    assert_eq!(places(text), [(Place::New, text.to_string())]);
    assert!(split("").blocks().is_empty());
    assert!(split("\n\n  \n").blocks().is_empty());
}

#[test]
fn weights_order_the_places_from_deciding_to_ignored() {
    assert!(Place::New.weight() > Place::Forwarded.weight());
    assert_eq!(Place::Forwarded.weight(), Place::Pasted.weight());
    assert!(Place::Pasted.weight() > Place::Quoted.weight());
    assert!(Place::Quoted.weight() > Place::Signature.weight());
    assert_eq!(Place::Instruction.weight(), Weight::Ignored);
    let parts = split("new 65169\n> old 51110\n\n-- \nTel 0301234567");
    assert_eq!(parts.text_weighing(Weight::Supports), "new 65169");
    assert!(parts.text_weighing(Weight::Noted).contains("51110"));
}

#[test]
fn fold_words_reads_accents_width_and_case_alike() {
    assert_eq!(fold_words("Rétractation"), "retractation");
    assert_eq!(fold_words("ＷＩＤＥＲＲＵＦ"), "widerruf");
    assert_eq!(fold_words("がキャンセル"), "がキャンセル");
    assert_eq!(fold_words("청약철회"), "청약철회");
    assert_eq!(fold_words("R‑670ー394"), "r-670-394");
}

#[test]
fn a_large_mail_is_split_in_one_pass_and_the_same_way_every_time() {
    let line = "03/12/2026  SHOP.EXAMPLE REF 88123456 TEL 030 1234567  -12.00\n";
    let mail = format!(
        "Order 65169 charged twice\n{}\nOn Mon, 3 Mar 2026, Shop <a@b.example> wrote:\n{}",
        line.repeat(2_500),
        "> older 51110\n".repeat(2_500)
    );
    assert!(mail.len() > 150_000);
    let a = split(&mail);
    assert_eq!(a, split(&mail));
    assert_eq!(a.new_text(), "Order 65169 charged twice");
}
