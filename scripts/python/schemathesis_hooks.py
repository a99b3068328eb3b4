"""Loaded by scripts/schemathesis-check (SCHEMATHESIS_HOOKS): guards the tool, and teaches it
the one request body that is not JSON (a raw mail).

CPython 3.11.7, the machine's one Python, has an `ast` bug ("AST constructor recursion
depth mismatch", gh-106905, fixed in 3.11.8). Hypothesis meets it when it names a
lambda for a strategy's repr: it parses the lambda's source file, and that parse can
raise SystemError deep in a draw. The name is only cosmetic, so a failed parse gives
the name Hypothesis itself uses when it cannot find the source.
"""

import hypothesis.internal.lambda_sources as lambda_sources

_describe = lambda_sources._lambda_description


def _described_or_unknown(f, *args, **kwargs):
    try:
        return _describe(f, *args, **kwargs)
    except SystemError:
        return "lambda: <unknown>"


lambda_sources._lambda_description = _described_or_unknown


# A raw mail (`POST /api/v1/inbound/email` takes `message/rfc822`): the bytes of
# whatever was generated, so the route is exercised with arbitrary bodies like any other.
import schemathesis


@schemathesis.serializer("message/rfc822")
def _rfc822(ctx, value):
    if isinstance(value, bytes):
        return value
    if value is None:
        return b""
    return str(value).encode("utf-8", "surrogatepass")
