"""Provider benchmarks: the normalised stream vs plain httpx, and start-up to first request.

Run: ``.venv/bin/python bench/providers.py [--deltas N] [--rounds R] [--runs K]``. Everything
runs against a local 127.0.0.1 server; all figures are ratios against a baseline measured in
the same run (plain httpx reading the same SSE bytes; ``python -c pass`` for start-up).

1. Per-delta cost: the same body of N text deltas is read (a) with plain ``httpx`` (stream,
   split SSE lines, ``json.loads`` each data line) and (b) through ``ProviderManager.complete``
   with the OpenAI-compatible adapter and the Anthropic adapter (SDK and ``transport: http``).
   The server is a child process, as a real one is: a server thread in this process would
   take the GIL from the reader it serves and charge a reader for its own CPU per chunk. The
   readers take turns within each of R rounds (baseline, then air, per wire format), and K
   runs are repeated. Per wire format: µs per delta (the reader's CPU time and wall time) as the
   least of each run's rounds — other processes only ever add time — with every run's ratio to
   (a) and the median of the runs; beside it the ratio of the rounds' medians (what the load
   made of it); and the time to first event. Goal: <= 1.2x per delta (the median of the runs
   of the least-of-rounds ratio).
2. Start-up: a fresh ``python`` process imports air's provider path and issues one request;
   the server stamps the arrival on the shared monotonic clock. Printed: ms from spawn to the
   first request for both adapters, and the bare ``python -c pass`` time. Goal: <= 250 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from contextlib import aclosing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from air.contracts.provider import (  # noqa: E402
    CanonicalMessage,
    ModelConfig,
    ModelsConfig,
    ProviderCompletionInput,
    ProviderConfig,
    ProviderKind,
    RetryConfig,
    TextBlock,
)
from air.llm.manager import ProviderManager  # noqa: E402

KEY_ENV = "AIR_BENCH_KEY"


def openai_body(n: int) -> bytes:
    parts = []
    for i in range(n):
        chunk = {
            "id": "chatcmpl-b",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}],
        }
        parts.append(f"data: {json.dumps(chunk)}\n\n")
    last = {
        "id": "chatcmpl-b",
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    parts.append(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n")
    return "".join(parts).encode()


def anthropic_body(n: int) -> bytes:
    def ev(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    message: dict[str, Any] = {
        "id": "msg_b",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    parts = [
        ev("message_start", {"type": "message_start", "message": message}),
        ev(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for i in range(n):
        delta = {"type": "text_delta", "text": f"tok{i} "}
        parts.append(
            ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    parts.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
    parts.append(
        ev(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": n},
            },
        )
    )
    parts.append(ev("message_stop", {"type": "message_stop"}))
    return "".join(parts).encode()


class BenchServer:
    """Serves a fixed SSE body for any POST; stamps arrivals with time.monotonic()."""

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.arrivals: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                outer.arrivals.append(time.monotonic())
                self.rfile.read(int(self.headers.get("content-length", "0")))
                body = bodies["anthropic" if self.path.endswith("/messages") else "openai"]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                step = 16384
                for start in range(0, len(body), step):
                    self.wfile.write(body[start : start + step])
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def config(url: str) -> ModelsConfig:
    fast = RetryConfig(max_attempts=1)
    return ModelsConfig(
        retry=fast,
        providers={
            "oai": ProviderConfig(
                kind=ProviderKind.OPENAI_COMPATIBLE,
                base_url=url + "/v1",
                auth_ref=KEY_ENV,
                models={"m": ModelConfig()},
            ),
            "ant": ProviderConfig(
                kind=ProviderKind.ANTHROPIC,
                base_url=url,
                auth_ref=KEY_ENV,
                models={"m": ModelConfig()},
            ),
            "anth": ProviderConfig(
                kind=ProviderKind.ANTHROPIC,
                transport="http",
                base_url=url,
                auth_ref=KEY_ENV,
                models={"m": ModelConfig()},
            ),
        },
    )


def completion(provider_id: str) -> ProviderCompletionInput:
    return ProviderCompletionInput(
        provider_id=provider_id,
        model_id="m",
        messages=[CanonicalMessage(role="user", content=[TextBlock(text="go")])],
    )


Timing = tuple[float, float, float]
"""(wall s, CPU s of this thread, wall s to the first event) of one read."""


async def plain_httpx(client: Any, url: str, n: int) -> Timing:
    """Baseline: stream the same SSE with plain httpx and json-decode every data line.

    ``client`` is one long-lived ``httpx.AsyncClient``, like the adapter's pooled client.
    """
    c0 = time.thread_time()
    t0 = time.perf_counter()
    first = 0.0
    deltas = 0
    async with client.stream("POST", url, json={"stream": True}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                data = json.loads(line[6:])
                if not first:
                    first = time.perf_counter() - t0
                if data.get("choices") or data.get("type") == "content_block_delta":
                    deltas += 1
    total = time.perf_counter() - t0
    cpu = time.thread_time() - c0
    assert deltas >= n, deltas
    return total, cpu, first


async def normalised(manager: ProviderManager, provider_id: str, n: int) -> Timing:
    c0 = time.thread_time()
    t0 = time.perf_counter()
    first = 0.0
    deltas = 0
    async with aclosing(manager.complete(completion(provider_id))) as stream:
        async for event in stream:
            if not first:
                first = time.perf_counter() - t0
            if event.type == "text_delta":
                deltas += 1
            elif event.type == "error":
                raise RuntimeError(event.error.message)
    total = time.perf_counter() - t0
    cpu = time.thread_time() - c0
    assert deltas == n, deltas
    return total, cpu, first


STREAM_KEYS = ("base_oai", "oai", "base_ant", "ant", "anth")
ROWS = (
    ("openai-compatible", "base_oai", "oai"),
    ("anthropic (SDK)", "base_ant", "ant"),
    ("anthropic (http)", "base_ant", "anth"),
)


class ChildServer:
    """A ``BenchServer`` in a child process (``--serve N``); its URL is its first stdout line."""

    def __init__(self, n: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.close()
            raise SystemExit("the bench server did not start")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # end-of-file: the child stops serving and exits
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve(n: int) -> None:
    """``--serve N``: serve the two bodies of N deltas until stdin closes."""
    server = BenchServer({"openai": openai_body(n), "anthropic": anthropic_body(n)})
    print(server.url, flush=True)
    sys.stdin.read()
    server.close()


STATS = ("least", "median")


def _per(values: list[Timing], stat: str) -> Timing:
    pick = min if stat == "least" else statistics.median
    return (pick(v[0] for v in values), pick(v[1] for v in values), pick(v[2] for v in values))


async def stream_run(
    manager: ProviderManager, client: Any, url: str, n: int, rounds: int
) -> dict[tuple[str, str], Timing]:
    """One run: ``rounds`` interleaved rounds; per (reader, statistic) the least and the
    median of each figure over the rounds. Other processes only ever add time, to either
    reader: the least is the reader's own cost, the median what this machine's load made it."""
    oai, ant = url + "/v1/chat/completions", url + "/v1/messages"
    results: dict[str, list[Timing]] = {k: [] for k in STREAM_KEYS}
    for _ in range(rounds):
        results["base_oai"].append(await plain_httpx(client, oai, n))
        results["oai"].append(await normalised(manager, "oai", n))
        results["base_ant"].append(await plain_httpx(client, ant, n))
        results["ant"].append(await normalised(manager, "ant", n))
        results["base_ant"].append(await plain_httpx(client, ant, n))
        results["anth"].append(await normalised(manager, "anth", n))
    return {(key, stat): _per(values, stat) for key, values in results.items() for stat in STATS}


async def stream_bench(n: int, rounds: int, runs: int) -> None:
    load = os.getloadavg()[0]
    server = ChildServer(n)
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    import httpx

    manager = ProviderManager(config(server.url))
    client = httpx.AsyncClient()
    try:
        # warm-up: imports, connection pools
        await normalised(manager, "oai", n)
        await normalised(manager, "ant", n)
        await normalised(manager, "anth", n)
        await plain_httpx(client, server.url + "/v1/chat/completions", n)
        await plain_httpx(client, server.url + "/v1/messages", n)
        figures = [await stream_run(manager, client, server.url, n, rounds) for _ in range(runs)]
    finally:
        await client.aclose()
        await manager.aclose()
        server.close()

    print(
        f"== normalised stream vs plain httpx ({n} deltas; {runs} runs of {rounds} interleaved "
        f"rounds, server in a child process; load average {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after)"
    )
    print(
        "   per run: the least of its rounds (the goal) and their median; then the median of runs"
    )
    for label, base, ours in ROWS:
        for what, i in (("CPU", 1), ("wall", 0)):
            line = []
            for stat in STATS:
                ratios = [f[ours, stat][i] / f[base, stat][i] for f in figures]
                per_base = statistics.median(f[base, stat][i] for f in figures) / n * 1e6
                per_ours = statistics.median(f[ours, stat][i] for f in figures) / n * 1e6
                ratio = statistics.median(ratios)
                if stat == "least":
                    each = ", ".join(f"{r:.2f}" for r in ratios)
                    verdict = "met" if ratio <= 1.2 else "MISSED"
                    line.append(
                        f"plain httpx {per_base:5.2f} us, air {per_ours:5.2f} us, ratio "
                        f"{ratio:4.2f}x (goal <= 1.2x -> {verdict}; runs {each})"
                    )
                else:
                    line.append(f"median of rounds {ratio:4.2f}x")
            print(f"{label:18s} {what:4s} per delta: {'; '.join(line)}")
        ttfe_base = statistics.median(f[base, "median"][2] for f in figures) * 1e3
        ttfe_ours = statistics.median(f[ours, "median"][2] for f in figures) * 1e3
        print(
            f"{label:18s} first event (median): plain httpx {ttfe_base:5.2f} ms, air "
            f"{ttfe_ours:5.2f} ms, ratio {ttfe_ours / ttfe_base:4.2f}x"
        )


CHILD = """
import sys
{prelude}
import trio
sys.path.insert(0, {repo!r})
from contextlib import aclosing
from air.contracts.provider import (  # noqa: E402
    CanonicalMessage, ModelConfig, ModelsConfig, ProviderCompletionInput, ProviderConfig,
    RetryConfig, TextBlock,
)
from air.llm.manager import ProviderManager  # noqa: E402

async def main():
    config = ModelsConfig(retry=RetryConfig(max_attempts=1), providers={{"p": ProviderConfig(
        kind={kind!r}, transport={transport!r}, base_url={url!r}, auth_ref="AIR_BENCH_KEY",
        models={{"m": ModelConfig()}})}})
    manager = ProviderManager(config)
    request = ProviderCompletionInput(provider_id="p", model_id="m",
        messages=[CanonicalMessage(role="user", content=[TextBlock(text="go")])])
    try:
        async with aclosing(manager.complete(request)) as stream:
            async for event in stream:
                pass
    finally:
        await manager.aclose()

trio.run(main)
"""


# httpx imports its command-line client at import time when click, pygments and rich are
# present (~100 ms). In this dev venv pygments and rich come only from pytest/import-linter;
# a user install of air lacks them, which the "user install" rows reproduce by making those
# two imports fail exactly as they would there.
_NO_DEV_ONLY = "sys.modules['pygments'] = None; sys.modules['rich'] = None"
VARIANTS = [
    ("openai_compatible (dev venv)", "openai_compatible", "sdk", ""),
    ("openai_compatible (user install)", "openai_compatible", "sdk", _NO_DEV_ONLY),
    ("anthropic SDK (dev venv)", "anthropic", "sdk", ""),
    ("anthropic SDK (user install)", "anthropic", "sdk", _NO_DEV_ONLY),
    ("anthropic http (dev venv)", "anthropic", "http", ""),
    ("anthropic http (user install)", "anthropic", "http", _NO_DEV_ONLY),
]


def startup_bench(rounds: int) -> None:
    server = BenchServer({"openai": openai_body(3), "anthropic": anthropic_body(3)})
    env = {**os.environ, KEY_ENV: "sk-bench-not-a-real-key"}
    try:
        bare: list[float] = []
        for _ in range(rounds):
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.monotonic() - t0)
        figures: dict[str, list[float]] = {label: [] for label, _k, _t, _p in VARIANTS}
        for _ in range(rounds):
            for label, kind, transport, prelude in VARIANTS:
                url = server.url + ("/v1" if kind == "openai_compatible" else "")
                code = CHILD.format(
                    repo=str(REPO), kind=kind, transport=transport, url=url, prelude=prelude
                )
                before = len(server.arrivals)
                t0 = time.monotonic()
                subprocess.run([sys.executable, "-c", code], check=True, env=env)
                assert len(server.arrivals) == before + 1
                figures[label].append(server.arrivals[-1] - t0)
    finally:
        server.close()
    base = statistics.median(bare) * 1e3
    print(f"== start-up to first request (fresh process, median of {rounds})")
    print(f"python -c pass (baseline)        {base:7.1f} ms")
    for kind, values in figures.items():
        ms = statistics.median(values) * 1e3
        verdict = "meets" if ms <= 250 else "misses"
        print(
            f"{kind:32s} {ms:7.1f} ms  ({ms / base:4.1f}x bare python; {verdict} the 250 ms goal)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5, help="repetitions of the stream bench")
    parser.add_argument("--stream-only", action="store_true", help="skip the start-up part")
    parser.add_argument("--serve", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    trio.run(stream_bench, args.deltas, args.rounds, args.runs)
    if not args.stream_only:
        startup_bench(args.rounds)


if __name__ == "__main__":
    main()
