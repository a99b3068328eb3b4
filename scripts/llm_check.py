"""Drives `refund-agent serve` backed by a real model server and checks what must hold
whatever the model says (issue 20, "A real model server in CI").

Run by scripts/llm-check, which serves SmolLM2 with llama-cpp-python, seeds the demo
world and starts `serve` pointed at the model. Opens one ticket per demo customer
through the customer API, waits (bounded) until every case is at rest, then checks:
every case at rest (an escalation is what a 135M-parameter model earns), no refund
without an approval (in the app's database and at the provider), `serve` alive and
answering, and the runs really called the model and it answered
(`refund_desk_model_calls_total` and `refund_desk_model_tokens_total` on `/metrics`).
Prints one summary line last and exits non-zero on any failed check.

Standard library only: urllib for HTTP, sqlite3 for the app's database.
"""

import argparse
import collections
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

# docs/spec/lifecycle.md: where a case stops moving without a human (approve, answer, reopen).
AT_REST = {
    "awaiting_customer", "awaiting_approval", "denied", "escalated", "refund_succeeded",
    "refund_failed", "replied", "closed", "cancelled", "rejected",
}


def request(method, url, token=None, body=None, timeout=30):
    """One HTTP call; returns (status, parsed JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read().decode()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def cli(args, *command):
    out = subprocess.run(
        [args.bin, "--data-dir", args.data_dir, *command],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return out.stdout.strip()


def open_tickets(args):
    """One ticket per demo customer (the first `--customers` of them, when given), about
    that customer's first order."""
    world = json.load(open(args.world))
    first_order = {}
    for order in world["orders"]:
        first_order.setdefault(order["customer_id"], order["id"])
    cases = {}
    for customer in world["customers"][: args.customers or None]:
        token = cli(args, "customer", "token", customer["id"])
        order = first_order.get(customer["id"], "my last order")
        message = f"Hello, I would like a refund for {order}; I think I was charged wrongly."
        status, ticket = request("POST", f"{args.base}/api/v1/tickets", token,
                                 {"message": message})
        if status != 201:
            sys.exit(f"llm-check: opening a ticket for {customer['id']}: {status} {ticket}")
        cases[customer["id"]] = ticket["case"]["id"]
    return cases


def wait_at_rest(args, staff, case_ids):
    """Polls every case until all are at rest or the limit passes; fails if serve stops
    answering. Returns {case_id: status}."""
    deadline = time.monotonic() + args.limit_secs
    statuses = {}
    while True:
        status, _ = request("GET", f"{args.base}/healthz", timeout=10)
        if status != 200:
            sys.exit(f"llm-check: FAIL serve stopped answering /healthz ({status})")
        for case_id in case_ids:
            _, case = request("GET", f"{args.base}/api/v1/cases/{case_id}", staff)
            statuses[case_id] = case.get("status", "?") if isinstance(case, dict) else "?"
        if all(s in AT_REST for s in statuses.values()) or time.monotonic() > deadline:
            return statuses
        time.sleep(2)


def model_calls(args):
    """Calls to the model server as `/metrics` counts them: ({outcome: calls}, completion
    tokens). Only the `llm:` series: the built-in investigator counts as a model too."""
    _, text = request("GET", f"{args.base}/metrics")
    calls, tokens = collections.Counter(), 0
    for line in str(text).splitlines():
        series, _, value = line.rpartition(" ")
        if 'name="llm:' in series and series.startswith("refund_desk_model_calls_total"):
            outcome = series.split('outcome="', 1)[1].split('"', 1)[0]
            calls[outcome] += int(float(value))
        if ('model="llm:' in series and 'kind="completion"' in series
                and series.startswith("refund_desk_model_tokens_total")):
            tokens += int(float(value))
    return calls, tokens


def refunds(args):
    """(refund intents, intents without an approved approval, provider refunds, provider
    refunds whose idempotency key no approved intent holds)."""
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    approved = {
        key for (key,) in db.execute(
            "SELECT r.idempotency_key FROM refund_intents r JOIN approvals a ON a.id = r.approval_id"
            " WHERE a.verdict = 'approved' AND a.case_id = r.case_id")
    }
    (intents,) = db.execute("SELECT COUNT(*) FROM refund_intents").fetchone()
    db.close()
    _, ledger = request("GET", f"{args.provider}/__mock/ledger")
    at_provider = [r for r in ledger["refunds"] if r.get("origin") == "api"]
    unapproved = [r for r in at_provider if r.get("idempotency_key") not in approved]
    return intents, intents - len(approved), len(at_provider), len(unapproved)


def model_errors(args):
    """The model errors the runs recorded, most common first: [(message, count)]. A 135M
    model fails often; what it fails with says whether the wire or the model is at fault."""
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    errors = collections.Counter()
    for (payload,) in db.execute("SELECT payload FROM run_events WHERE kind = 'model_error'"):
        try:
            error = json.loads(payload).get("error", payload)
        except ValueError:
            error = payload
        errors[str(error)[:90]] += 1
    db.close()
    return errors.most_common(3)


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--base", "--bin", "--data-dir", "--db", "--world", "--provider"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--limit-secs", type=int, default=1500)
    parser.add_argument("--customers", type=int, default=0, help="the first N only (0: all)")
    args = parser.parse_args()
    started = time.monotonic()
    staff = cli(args, "staff", "token", "--email", "agent@refund-desk.test")
    cases = open_tickets(args)
    statuses = wait_at_rest(args, staff, list(cases.values()))
    calls, tokens = model_calls(args)
    intents, intents_unapproved, provider_refunds, provider_unapproved = refunds(args)
    by_status = collections.Counter(statuses.values())
    for message, count in model_errors(args):
        print(f"llm-check: model error x{count}: {message}")
    failures = []
    if any(s not in AT_REST for s in statuses.values()):
        failures.append(f"not at rest after {args.limit_secs} s")
    if intents_unapproved or provider_unapproved:
        failures.append("a refund without an approval")
    # A call the app rejects (SmolLM2 mostly answers prose, no tool call) or that timed
    # out counts as `error` and records no tokens; it was still a call to the server.
    if sum(calls.values()) == 0:
        failures.append("the model server was never called")
    # Calls that all failed to reach it (the server crashed or never listened) leave no
    # tokens: the run then checked the harness's fallbacks, not a model.
    elif tokens == 0:
        failures.append("the model server never answered (0 completion tokens)")
    print(
        f"llm-check: {len(cases)} tickets; cases "
        + ", ".join(f"{s}={n}" for s, n in sorted(by_status.items()))
        + f"; model calls {sum(calls.values())} ({calls.get('error', 0)} failed),"
        f" {tokens} completion tokens; refunds {intents} in the app ({intents_unapproved} unapproved),"
        f" {provider_refunds} at the provider ({provider_unapproved} unapproved);"
        f" {time.monotonic() - started:.0f} s; "
        + ("PASS" if not failures else "FAIL: " + "; ".join(failures))
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
