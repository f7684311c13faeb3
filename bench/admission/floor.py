"""The floor: a bare aiohttp TLS handler that parses the review and answers allowed.

It does the least any Python webhook must do (TLS, HTTP, JSON in, JSON out),
the straightforward way: default asyncio loop, the standard library's json.
The benchmark reports the real server as a ratio to it, measured in the same
run on the same core. `--fast` is a reference floor on the same fast parts the
real server uses (uvloop, orjson), to show what validation itself costs;
`--no-resume` issues no TLS session tickets, so every new connection is a full
handshake as with kube-apiserver (the real server never issues them).

Run: python bench/admission/floor.py CERT KEY PORT [--fast] [--no-resume]
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
from typing import Any

import orjson
from aiohttp import web


async def validate(request: web.Request) -> web.Response:
    review = await request.json()
    return web.json_response(answer(review))


async def validate_fast(request: web.Request) -> web.Response:
    review = orjson.loads(await request.read())
    return web.Response(body=orjson.dumps(answer(review)), content_type="application/json")


def answer(review: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": review["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("port", type=int)
    parser.add_argument("--fast", action="store_true", help="uvloop and orjson")
    parser.add_argument("--no-resume", action="store_true", help="issue no session tickets")
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    if args.no_resume:
        context.num_tickets = 0
    app = web.Application()
    app.router.add_post("/validate", validate_fast if args.fast else validate)
    loop = None
    if args.fast:
        import uvloop

        loop = uvloop.new_event_loop()
    print(json.dumps({"msg": "serving", "port": args.port}), file=sys.stderr, flush=True)
    web.run_app(app, host="127.0.0.1", port=args.port, ssl_context=context, access_log=None,
                print=None, loop=loop)  # fmt: skip


if __name__ == "__main__":
    main()
