#!/usr/bin/env python3
"""Mail as customers' own software writes and reads it, for the email tests (issue 37).

Every message here is built by Python's `email` package and sent by `smtplib`, and what
the product sent is read back with `imaplib`: clients nobody on this project wrote.

  mailtool.py corpus OUT_DIR FROM TO
      writes one .eml per charset and form (UTF-8, ISO-2022-JP, Shift_JIS, GB18030, GBK,
      Big5, ISO-8859-1/2/15, Windows-1250/1251/1252; quoted-printable and base64;
      multipart/alternative, HTML only, a forwarded message, an attachment) and
      OUT_DIR/manifest.json ([{file, charset, form, expect}]: a phrase the ticket must
      show); prints the counts.
  mailtool.py build FROM TO SUBJECT BODY [--header 'Name: value']... [--charset C]
      one plain message on stdout (bytes).
  mailtool.py bounce TO FAILED_ADDRESS [--status X.Y.Z] [--message-id ID]
      a delivery status notification (RFC 3464, multipart/report) from MAILER-DAEMON
      saying FAILED_ADDRESS could not be delivered (Status 5.1.1 unless given), as a mail
      server writes one (stdout); with --message-id, the returned message's headers
      (text/rfc822-headers) carry that Message-ID, as the bounce of a mail of ours does.
  mailtool.py history JSONL OUT_DIR TO [EVERY]
      turns every EVERY-th history ticket (default 1: all) into raw mails as its
      customer's client would send them: one .eml per customer message (the first line
      as the subject, later messages as replies to the first: In-Reply-To and
      References), OUT_DIR/world.json (their worlds merged) and OUT_DIR/manifest.json
      ([{ticket, customer_id, from, files, texts}]); prints the counts.
  mailtool.py send HOST PORT FROM TO FILE...
      sends each file as it is (smtplib), prints how many.
  mailtool.py unflag HOST PORT USER FLAG
      removes FLAG from every message of the user's INBOX (a flag store that never
      reached the server); prints how many messages.
  mailtool.py read HOST PORT USER [PASSWORD]
      prints the user's INBOX as JSON: message_id, subject, from, to, in_reply_to,
      references, auto_submitted, text, html (read-only, nothing marked).
"""
import email
import email.policy
import imaplib
import json
import os
import smtplib
import sys
from email.message import EmailMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.mime.application import MIMEApplication
from email.mime.message import MIMEMessage
from email.utils import formatdate, make_msgid

# (charset, form, text): each text is what the customer wrote, in a language that
# charset carries; `expect` is a phrase of it the ticket must show decoded.
TEXTS = [
    ("utf-8", "qp", "我的年度会员被扣了两次款，订单 O-1001。", "被扣了两次款"),
    ("utf-8", "base64", "年間プランの料金が二重に請求されました。", "二重に請求されました"),
    ("iso-2022-jp", "7bit", "年間プランの料金が二重に請求されました。返金をお願いします。", "返金をお願いします"),
    ("shift_jis", "base64", "注文の代金が二回引き落とされています。", "二回引き落とされています"),
    ("gb18030", "qp", "我被重复扣款了，请退款。", "重复扣款"),
    ("gbk", "base64", "年度会员被扣了两次款。", "扣了两次款"),
    ("big5", "base64", "我的年度會員被扣了兩次款。", "扣了兩次款"),
    ("iso-8859-1", "qp", "Bonjour, j'ai été débité deux fois pour ma commande.", "débité deux fois"),
    ("iso-8859-2", "qp", "Dzień dobry, zostałem obciążony dwukrotnie.", "obciążony dwukrotnie"),
    ("iso-8859-15", "qp", "Zweimal abgebucht: 198,00 € für mein Jahresabo.", "198,00 €"),
    ("windows-1250", "base64", "Byl jsem zatížen dvakrát za předplatné.", "zatížen dvakrát"),
    ("windows-1251", "base64", "С меня дважды списали деньги за подписку.", "дважды списали"),
    ("windows-1252", "qp", "I was charged twice – “annual plan” – please refund.", "“annual plan”"),
]


def header(msg, sender, to, subject):
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain=sender.split("@")[-1].strip(">"))
    return msg


def text_part(text, charset, form):
    part = MIMEText(text, "plain", charset)
    if form in ("qp", "base64"):
        del part["Content-Transfer-Encoding"]
        payload = text.encode(charset)
        if form == "qp":
            import quopri
            part.set_payload(quopri.encodestring(payload).decode("ascii"))
            part["Content-Transfer-Encoding"] = "quoted-printable"
        else:
            import base64
            part.set_payload(base64.encodebytes(payload).decode("ascii"))
            part["Content-Transfer-Encoding"] = "base64"
        # The payload is in `charset` itself: Python would label some (Shift_JIS) with
        # the charset it converts to for 7-bit output (ISO-2022-JP) instead.
        part.set_param("charset", charset)
    return part


def corpus(out_dir, sender, to):
    os.makedirs(out_dir, exist_ok=True)
    manifest = []
    for n, (charset, form, text, expect) in enumerate(TEXTS):
        msg = header(text_part(text, charset, form), sender, to, f"Refund {charset}")
        name = f"{n:02d}-{charset}-{form}.eml"
        manifest.append({"file": name, "charset": charset, "form": form, "expect": expect})
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(msg.as_bytes())
    # multipart/alternative: the plain part is preferred over the HTML one.
    alt = MIMEMultipart("alternative")
    alt.attach(MIMEText("Plain words: charged twice for O-1001.", "plain", "utf-8"))
    alt.attach(MIMEText("<p>HTML words that must not win</p>", "html", "utf-8"))
    manifest.append(write(out_dir, "20-alternative.eml", header(alt, sender, to, "Alternative"),
                          "utf-8", "multipart/alternative", "Plain words: charged twice"))
    # HTML only: turned into text, no tags, no style.
    html = MIMEText("<html><head><style>p{color:red}</style></head><body><p>Bitte <b>erstatten</b> Sie den doppelten Betrag.</p></body></html>", "html", "iso-8859-1")
    manifest.append(write(out_dir, "21-html-only.eml", header(html, sender, to, "HTML"),
                          "iso-8859-1", "html only", "erstatten Sie den doppelten Betrag"))
    # A forwarded receipt (message/rfc822 attached).
    receipt = EmailMessage()
    receipt["From"] = "receipts@shop.test"
    receipt["Subject"] = "Your receipt"
    receipt.set_content("Receipt: annual plan 198.00 CNY, charge ch_1001a.", charset="utf-8")
    fwd = MIMEMultipart("mixed")
    fwd.attach(MIMEText("Forwarding the receipt: I paid twice.", "plain", "utf-8"))
    fwd.attach(MIMEMessage(receipt))
    manifest.append(write(out_dir, "22-forwarded.eml", header(fwd, sender, to, "Fwd: receipt"),
                          "utf-8", "forwarded", "Receipt: annual plan 198.00 CNY"))
    # An attachment (a PDF's bytes, base64).
    att = MIMEMultipart("mixed")
    att.attach(MIMEText("Bank statement attached.", "plain", "utf-8"))
    pdf = MIMEApplication(b"%PDF-1.4 statement 198.00 twice", "pdf")
    pdf.add_header("Content-Disposition", "attachment", filename="statement.pdf")
    att.attach(pdf)
    manifest.append(write(out_dir, "23-attachment.eml", header(att, sender, to, "Statement"),
                          "utf-8", "attachment", "Bank statement attached."))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, ensure_ascii=False)
    charsets = sorted({m["charset"] for m in manifest})
    print(f"{len(manifest)} mails, {len(charsets)} charsets: {', '.join(charsets)}")


def write(out_dir, name, msg, charset, form, expect):
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(msg.as_bytes())
    return {"file": name, "charset": charset, "form": form, "expect": expect}


def build(args):
    sender, to, subject, body = args[:4]
    charset = "utf-8"
    headers = []
    rest = args[4:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--header":
            headers.append(value)
        elif flag == "--charset":
            charset = value
    msg = header(MIMEText(body, "plain", charset), sender, to, subject)
    for line in headers:
        name, _, value = line.partition(":")
        if name.strip() in msg:
            del msg[name.strip()]
        msg[name.strip()] = value.strip()
    sys.stdout.buffer.write(msg.as_bytes())


def bounce(to, failed, *rest):
    from email.message import Message
    options = dict(zip(rest[0::2], rest[1::2]))
    m = MIMEMultipart("report", report_type="delivery-status")
    header(m, "Mail Delivery System <MAILER-DAEMON@mx.example.cn>", to,
           "Undelivered Mail Returned to Sender")
    m.attach(MIMEText("This is the mail system. Your message could not be delivered."))
    status = Message()
    status.set_type("message/delivery-status")
    per_message = Message()
    per_message["Reporting-MTA"] = "dns; mx.example.cn"
    per_recipient = Message()
    per_recipient["Final-Recipient"] = f"rfc822; {failed}"
    per_recipient["Action"] = "failed"
    per_recipient["Status"] = options.get("--status", "5.1.1")
    status.set_payload([per_message, per_recipient])
    m.attach(status)
    if "--message-id" in options:
        returned = MIMEText(f"From: {to}\nTo: {failed}\nMessage-ID: <{options['--message-id']}>\nSubject: Your refund\n", "rfc822-headers")
        m.attach(returned)
    sys.stdout.buffer.write(m.as_bytes())


def history_mail(ticket, to):
    """One history ticket as the raw mails its customer would send: [(name, bytes, text)]."""
    customer = next(c for c in ticket["world"]["customers"] if c["id"] == ticket["customer_id"])
    sender = customer["email"]
    texts = [m["text"] for m in ticket["messages"] if m["from"] == "customer"]
    first_line = texts[0].strip().splitlines()[0] if texts[0].strip() else ""
    subject = first_line[:78]
    mails = []
    first_id = None
    for n, text in enumerate(texts):
        msg = header(EmailMessage(), sender, to, subject if n == 0 else f"Re: {subject}")
        msg.set_content(text)
        if first_id is None:
            first_id = msg["Message-ID"]
        else:
            msg["In-Reply-To"] = first_id
            msg["References"] = first_id
        mails.append((f"{ticket['id']}-{n}.eml", msg.as_bytes(), text))
    return sender, mails


def history(jsonl, out_dir, to, every="1"):
    os.makedirs(out_dir, exist_ok=True)
    with open(jsonl, encoding="utf-8") as f:
        tickets = [json.loads(line) for line in f if line.strip()]
    tickets = tickets[::int(every)]
    world = {}
    manifest = []
    for ticket in tickets:
        for key, rows in ticket["world"].items():
            world.setdefault(key, []).extend(rows)
        sender, mails = history_mail(ticket, to)
        for name, raw, _ in mails:
            with open(os.path.join(out_dir, name), "wb") as out:
                out.write(raw)
        manifest.append({
            "ticket": ticket["id"],
            "customer_id": ticket["customer_id"],
            "from": sender,
            "files": [name for name, _, _ in mails],
            "texts": [text for _, _, text in mails],
        })
    with open(os.path.join(out_dir, "world.json"), "w", encoding="utf-8") as out:
        json.dump(world, out, ensure_ascii=False)
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as out:
        json.dump(manifest, out, ensure_ascii=False)
    mails = sum(len(m["files"]) for m in manifest)
    print(f"{len(manifest)} history tickets, {mails} mails")


def send(host, port, sender, to, files):
    with smtplib.SMTP(host, int(port), timeout=30) as smtp:
        for path in files:
            with open(path, "rb") as f:
                smtp.sendmail(sender, [to], f.read())
    print(f"sent {len(files)}")


def unflag(host, port, user, flag, password="test-pass"):
    with imaplib.IMAP4(host, int(port)) as imap:
        imap.login(user, password)
        imap.select("INBOX")
        _, data = imap.search(None, "ALL")
        numbers = data[0].split()
        for n in numbers:
            imap.store(n, "-FLAGS", f"({flag} \\Seen)")
    print(f"unflagged {len(numbers)}")


def read(host, port, user, password="test-pass"):
    found = []
    with imaplib.IMAP4(host, int(port)) as imap:
        imap.login(user, password)
        imap.select("INBOX", readonly=True)
        _, data = imap.search(None, "ALL")
        for n in data[0].split():
            _, parts = imap.fetch(n, "(BODY.PEEK[])")
            m = email.message_from_bytes(parts[0][1], policy=email.policy.default)
            plain = m.get_body(("plain",))
            html = m.get_body(("html",))
            found.append({
                "message_id": (m["Message-ID"] or "").strip().strip("<>"),
                "subject": str(m["Subject"] or ""),
                "from": str(m["From"] or ""),
                "to": str(m["To"] or ""),
                "in_reply_to": (m["In-Reply-To"] or "").strip(),
                "references": str(m["References"] or ""),
                "auto_submitted": str(m["Auto-Submitted"] or ""),
                "text": plain.get_content() if plain else "",
                "html": html.get_content() if html else "",
            })
    print(json.dumps(found, ensure_ascii=False))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "corpus":
        corpus(*args)
    elif command == "build":
        build(args)
    elif command == "bounce":
        bounce(*args)
    elif command == "history":
        history(*args)
    elif command == "send":
        send(args[0], args[1], args[2], args[3], args[4:])
    elif command == "unflag":
        unflag(*args)
    elif command == "read":
        read(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
