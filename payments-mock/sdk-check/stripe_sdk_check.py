"""Drive payments-mock with Stripe's own Python library, as a client would.

The base URL points at the mock; everything else is stock `stripe`: charges read,
refunds created with idempotency keys (and replayed), and errors mapped to the
library's error types. Exits non-zero on the first broken expectation.
Usage: python stripe_sdk_check.py http://127.0.0.1:PORT
"""

import sys
import uuid

import stripe


def main(base: str) -> None:
    client = stripe.StripeClient("sk_test_sdk_check", base_addresses={"api": base}, max_network_retries=0)
    checks = 0

    def check(cond, what):
        nonlocal checks
        if not cond:
            raise SystemExit(f"FAILED: {what}")
        checks += 1

    charge = client.v1.charges.retrieve("ch_1001b")
    check(charge.id == "ch_1001b" and charge.amount == 19800 and charge.currency == "cny", "charge read")
    check(charge.captured is True and charge.metadata["order_id"] == "O-1001", "charge fields")

    charges = client.v1.charges.list(params={"customer": "C-100", "limit": 10})
    check({c.id for c in charges.data} == {"ch_1001a", "ch_1001b"}, "charges listed by customer")

    key = f"sdk-check-{uuid.uuid4()}"
    params = {"charge": "ch_1001b", "amount": 5000, "metadata": {"refund_intent_id": "ri_sdk"}}
    first = client.v1.refunds.create(params=params, options={"idempotency_key": key})
    check(first.status == "succeeded" and first.amount == 5000 and first.metadata["refund_intent_id"] == "ri_sdk", "refund created")
    again = client.v1.refunds.create(params=params, options={"idempotency_key": key})
    check(again.id == first.id, "same key, same parameters: the first refund replayed")
    check(again.last_response.headers.get("Idempotent-Replayed") == "true", "Idempotent-Replayed header")

    try:
        client.v1.refunds.create(params={"charge": "ch_1001b", "amount": 6000}, options={"idempotency_key": key})
        check(False, "same key with other parameters must fail")
    except stripe.IdempotencyError as e:
        check(e.http_status == 400, "IdempotencyError is a 400")

    try:
        client.v1.refunds.create(params={"charge": "ch_1001b", "amount": 1000000}, options={"idempotency_key": f"k-{uuid.uuid4()}"})
        check(False, "over-refund must fail")
    except stripe.InvalidRequestError as e:
        check(e.http_status == 400 and e.param == "amount", "over-refund is InvalidRequestError on amount")

    try:
        client.v1.charges.retrieve("ch_missing")
        check(False, "unknown charge must fail")
    except stripe.InvalidRequestError as e:
        check(e.http_status == 404 and e.code == "resource_missing", "unknown charge is resource_missing")

    try:
        client.v1.refunds.create(params={"charge": "ch_6001b"}, options={"idempotency_key": f"k-{uuid.uuid4()}"})
        check(False, "refund of a disputed charge must fail")
    except stripe.InvalidRequestError as e:
        check(e.code == "charge_disputed", "disputed charge refused with charge_disputed")

    bad = stripe.StripeClient("not_a_key", base_addresses={"api": base}, max_network_retries=0)
    try:
        bad.v1.charges.retrieve("ch_1001b")
        check(False, "a bad key must fail")
    except stripe.AuthenticationError as e:
        check(e.http_status == 401, "bad key is AuthenticationError")

    listed = client.v1.refunds.list(params={"charge": "ch_1001b"})
    check([r.id for r in listed.data] == [first.id], "exactly one refund on the charge after the replay")

    print(f"{checks} passed, 0 failed")


if __name__ == "__main__":
    main(sys.argv[1])
