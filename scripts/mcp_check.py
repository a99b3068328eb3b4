"""Drives the refund desk's investigation tools with the official MCP Python SDK.

Run by scripts/mcp-check, which seeds a world, starts `refund-agent serve` and passes
its URL, the binary, and a staff and a customer token. Opens a ticket through the HTTP
API, then over streamable HTTP (`POST /mcp`) and over stdio (`refund-agent mcp`): lists
the tools (all read-only, none writes), calls each on the seeded world, and checks that
an unauthenticated call, a customer token and an unknown ticket are each refused with a
clear error. Prints `N passed, M failed` last and exits non-zero on any failure.
"""

import argparse
import asyncio
import json
import os
import tempfile
import time
import urllib.request

import httpx2

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

EXPECTED_TOOLS = [
    "get_customer",
    "list_orders",
    "list_charges",
    "list_refunds",
    "list_customer_history",
    "search_policy",
    "get_case",
    "get_run",
]
WRITE_WORDS = ("approve", "reject", "create", "update", "delete", "submit", "execute", "refund_now", "close", "assign")
CURRENT_REVISION = "2026-07-28"

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        results["passed"] += 1
        print(f"ok    {name}")
    else:
        results["failed"] += 1
        print(f"FAIL  {name}: {detail}")


def api(base, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method="POST" if body is not None else "GET")
    request.add_header("authorization", f"Bearer {token}")
    request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def open_ticket(base, customer_token):
    """A customer opens a ticket; returns (ticket id, case id) once the agent has investigated."""
    ticket = api(base, "/api/v1/tickets", customer_token, {"message": "I was charged twice for my annual plan"})
    deadline = time.time() + 30
    while time.time() < deadline:
        view = api(base, f"/api/v1/tickets/{ticket['id']}", customer_token)
        if view["case"] and view["case"]["status"] not in ("open", "investigating"):
            return ticket["id"], view["case"]["id"]
        time.sleep(0.2)
    raise RuntimeError(f"ticket {ticket['id']} was not investigated within 30 s")


def http_transport(url, token):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    # The SDK's documented way to send headers: an HTTP client of our own.
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))


def arguments_for(tool, ticket_id, case_id):
    scope = {"case_id": case_id} if tool in ("get_case", "get_run", "list_orders") else {"ticket_id": ticket_id}
    extra = {
        "list_charges": {"order_id": "O-1001"},
        "list_refunds": {"charge_id": "ch_1001b"},
        "search_policy": {"query": "charged twice for the same order"},
    }.get(tool, {})
    return {**scope, **extra}


def expected_content(tool, content, case_id):
    """Whether a tool's structured result shows the seeded world (customer C-100, order O-1001)."""
    if tool == "get_customer":
        return content["customer"]["id"] == "C-100"
    if tool == "list_orders":
        return [o["id"] for o in content["orders"]] == ["O-1001"]
    if tool == "list_charges":
        return sorted(c["id"] for c in content["charges"]) == ["ch_1001a", "ch_1001b"]
    if tool == "list_refunds":
        return content["charge_id"] == "ch_1001b" and isinstance(content["refunds"], list)
    if tool == "list_customer_history":
        # The ticket's own customer only; the seeded world's refunds are on other customers.
        return (
            content["customer_id"] == "C-100"
            and isinstance(content["tickets"], list)
            and content["tickets_total"] == len(content["tickets"])
            and all(not r["charge"].startswith(("ch_3", "ch_9")) for r in content["refunds"])
        )
    if tool == "search_policy":
        return bool(content["passages"]) and "@" in content["passages"][0]["citation"]
    if tool == "get_case":
        return content["case"]["id"] == case_id and content["case"]["status"] == "awaiting_approval"
    if tool == "get_run":
        return any(e["kind"] == "tool_result" for e in content["events"])
    return False


async def measure(surface, client, ticket_id, calls=20):
    """Prints the median and slowest latency of a bounded number of list_charges calls."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call_tool("list_charges", {"ticket_id": ticket_id, "order_id": "O-1001"})
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"      {surface}: list_charges over {calls} calls: median {times[calls // 2]:.1f} ms, max {times[-1]:.1f} ms")


async def exercise(surface, client, ticket_id, case_id):
    """Lists and calls every tool over one connected client."""
    check(f"{surface}: the current stable revision", client.protocol_version == CURRENT_REVISION, client.protocol_version)
    listed = (await client.list_tools()).tools
    names = [t.name for t in listed]
    check(f"{surface}: lists the investigation tools", names == EXPECTED_TOOLS, names)
    check(
        f"{surface}: every tool is read-only and none destructive",
        all(t.annotations and t.annotations.read_only_hint is True and t.annotations.destructive_hint is False for t in listed),
        [(t.name, t.annotations) for t in listed],
    )
    check(
        f"{surface}: no tool writes",
        not [n for n in names if any(w in n for w in WRITE_WORDS)],
        names,
    )
    check(
        f"{surface}: every tool takes a ticket_id or case_id",
        all({"ticket_id", "case_id"} <= set(t.input_schema.get("properties", {})) for t in listed),
        [t.input_schema for t in listed],
    )
    for tool in names:
        result = await client.call_tool(tool, arguments_for(tool, ticket_id, case_id))
        content = result.structured_content or {}
        try:
            good = not result.is_error and expected_content(tool, content, case_id)
        except (KeyError, IndexError, TypeError) as e:
            good = False
            content = {"unexpected": repr(e), "content": content}
        check(f"{surface}: {tool} reads the seeded world", good, json.dumps(content)[:400])
    await measure(surface, client, ticket_id)
    unknown = await client.call_tool("get_customer", {"ticket_id": "tkt_no_such_ticket"})
    error = unknown.structured_content or {}
    check(
        f"{surface}: an unknown ticket is a tool error with a hint",
        unknown.is_error and error.get("error") == "not_found" and "tkt_no_such_ticket" in error.get("hint", ""),
        error,
    )
    try:
        await client.call_tool("approve", {"ticket_id": ticket_id})
        check(f"{surface}: a write action is no tool", False, "approve was answered")
    except Exception as e:  # the SDK raises MCPError for a protocol error
        check(f"{surface}: a write action is no tool", "available tools" in str(e), repr(e))


def leaves(error):
    """The errors inside (nested) exception groups, as the SDK's task groups raise them."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def refused_over_http(url, token, code, expected):
    """Whether a connection with `token` is refused by a JSON-RPC error `code` saying `expected`."""
    try:
        async with Client(http_transport(url, token)) as client:
            await client.list_tools()
        return False, "the call was answered"
    except Exception as e:
        errors = [x for x in leaves(e) if isinstance(x, MCPError)]
        return any(x.code == code and expected in x.message for x in errors), repr(leaves(e))


def stdio_params(args, token):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "DATABASE_URL", "PAYMENTS_URL",
                                                         "PAYMENTS_API_KEY", "PAYMENTS_WEBHOOK_SECRET", "FIXTURES_DIR")}
    env["RUST_LOG"] = "warn"
    if token is not None:
        env["REFUND_DESK_TOKEN"] = token
    return StdioServerParameters(command=args.bin, args=["--data-dir", args.stdio_data_dir, "mcp"], env=env)


async def refused_over_stdio(args, token, expected):
    with tempfile.TemporaryFile(mode="w+") as errlog:
        try:
            async with Client(stdio_client(stdio_params(args, token), errlog=errlog), read_timeout_seconds=20) as client:
                await client.list_tools()
            return False, "the call was answered"
        except Exception as e:
            errlog.seek(0)
            stderr = errlog.read()
            return expected in stderr, f"{e!r}; stderr: {stderr[-400:]}"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the serve instance, e.g. http://127.0.0.1:8080")
    parser.add_argument("--bin", required=True, help="the refund-agent binary")
    parser.add_argument("--stdio-data-dir", required=True)
    parser.add_argument("--staff-token", required=True)
    parser.add_argument("--customer-token", required=True)
    args = parser.parse_args()
    url = args.base + "/mcp"

    ticket_id, case_id = open_ticket(args.base, args.customer_token)
    print(f"seeded ticket {ticket_id}, case {case_id}")

    async with Client(http_transport(url, args.staff_token)) as client:
        await exercise("http", client, ticket_id, case_id)
    async with Client(http_transport(url, args.staff_token), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        check("http (initialize handshake): a host on an older revision connects", len(tools) == len(EXPECTED_TOOLS),
              client.protocol_version)

    ok, detail = await refused_over_http(url, None, -32001, "a staff bearer token is required")
    check("http: an unauthenticated call is refused with a clear error", ok, detail)
    ok, detail = await refused_over_http(url, "not-a-token", -32001, "unknown, revoked or expired")
    check("http: an unknown token is refused with a clear error", ok, detail)
    ok, detail = await refused_over_http(url, args.customer_token, -32003, "customer tokens are refused")
    check("http: a customer token is refused with a clear error", ok, detail)

    async with Client(stdio_params(args, args.staff_token), read_timeout_seconds=30) as client:
        await exercise("stdio", client, ticket_id, case_id)
    ok, detail = await refused_over_stdio(args, None, "REFUND_DESK_TOKEN")
    check("stdio: no token is refused with a clear error", ok, detail)
    ok, detail = await refused_over_stdio(args, args.customer_token, "customer tokens are refused")
    check("stdio: a customer token is refused with a clear error", ok, detail)

    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
