"""Teacher throughput at scale: N requests to a local OpenAI-compatible fake server
through the distill step's teacher path (the httpx client, the teacher cache, the
ordered stream, candidates appended to a file as they arrive).

The server (tests/distill/teacher_server.py, in its own process) answers after
LATENCY seconds (+-50%), and a FLAKY share of requests answer 429 on their first
attempt and as many again 500 on their first two, so every answer needs retries to
come. Printed: requests/s, the client's peak RSS (and its RSS at 10%, 50% and 100% of
the requests: flat when nothing grows with the number of requests), retries, failures,
and the server's count of requests answered more than once. Then a rerun over the same
cache, which must send nothing.

With --kill-at F the first run is a child process killed with SIGKILL once the server
has answered F of the requests; the rerun resumes from the cache and the server counts
the answers paid twice (at most the requests in flight at the kill).

Usage: .venv/bin/python benchmarks/teacher_scale.py [--requests 100000] [--concurrency 64]
       [--latency 0.02] [--flaky 0.02] [--candidates 8] [--kill-at 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SERVER = ROOT / "tests" / "distill" / "teacher_server.py"
SYSTEM = ("You are a data analyst's coding assistant. Answer with THINK, PLAN and CODE blocks; the code queries "
          "the warehouse through `api` and assigns `result`. " * 12)


def _requests(n_requests: int, candidates: int):
    from runtime.distill.teachers import TeacherRequest

    count = -(-n_requests // candidates)
    return [TeacherRequest(SYSTEM, ({"role": "user", "content": f"Question {k}: which {k % 7 + 3} campaigns of "
                                     f"advertiser {k % 101} spent the most in the last {k % 30 + 1} days?"},),
                           candidates, k, {"workflow": f"workflow_{k % 6}"}) for k in range(count)]


def distil(url: str, cache_dir: Path, out: Path, args) -> dict:
    """One distillation through the teacher path; returns its figures."""
    import psutil

    from craftc.ir import Teacher
    from runtime.distill.teacher_cache import AnswerCache
    from runtime.distill.teacher_stream import TeacherStream
    from runtime.distill.teachers import make_teacher

    spec = Teacher(kind="openai", model="teacher-model", base_url=url, concurrency=args.concurrency,
                   max_retries=4, timeout_s=30, max_failed=0.01)
    requests = _requests(args.requests, args.candidates)
    total = sum(r.n for r in requests)
    teacher = make_teacher(spec, None, None)
    cache = AnswerCache(cache_dir)
    stream = TeacherStream(teacher, spec, cache, total)
    process = psutil.Process()
    marks, rss = {int(total * f): f for f in (0.1, 0.5)}, {}
    started = time.monotonic()
    with out.open("w", encoding="utf-8") as sink:
        for done, answer in enumerate(stream.run(requests), 1):
            if answer.candidate is not None:
                sink.write(json.dumps({"request": answer.request_index, "candidate": answer.candidate_index,
                                       "text": answer.candidate.text, "metadata": answer.candidate.metadata},
                                      sort_keys=True) + "\n")
            if done in marks:
                rss[f"{marks[done]:.0%}"] = round(process.memory_info().rss / 2**20)
            if args.child and done % 1000 == 0:
                print(f"{done}/{total}", file=sys.stderr, flush=True)
    wall = time.monotonic() - started
    rss["100%"] = round(process.memory_info().rss / 2**20)
    teacher.close()
    cache.close()
    s = stream.stats
    return {"requests": total, "wall_s": round(wall, 1), "sent": s.sent, "reused": s.reused,
            "requests_per_s": round(s.sent / wall, 1) if wall else None, "retries": s.retries, "failed": s.failed,
            "tokens": s.prompt_tokens + s.completion_tokens, "rss_mib": rss,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _server_stats(url: str) -> dict:
    return json.loads(urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10).read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--flaky", type=float, default=0.02)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--kill-at", type=float, default=None)
    parser.add_argument("--child", nargs=2, metavar=("URL", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, work = args.child
        print(json.dumps(distil(url, Path(work) / "teacher_cache", Path(work) / "candidates.jsonl", args)))
        return

    work = Path(tempfile.mkdtemp(prefix="teacher-scale-"))
    server = subprocess.Popen([sys.executable, str(SERVER), "--latency", str(args.latency), "--flaky",
                               str(args.flaky)], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    print(f"fake server {url}: latency {args.latency}s +-50%, {args.flaky:.0%} of requests 429 once and "
          f"{args.flaky:.0%} 500 twice; {args.requests} requests ({args.candidates} candidates per prompt), "
          f"concurrency {args.concurrency}; work dir {work}")
    try:
        if args.kill_at is not None:
            child = subprocess.Popen([sys.executable, __file__, "--requests", str(args.requests), "--concurrency",
                                      str(args.concurrency), "--candidates", str(args.candidates),
                                      "--child", url, str(work)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            while _server_stats(url)["answered"] < args.kill_at * args.requests:
                if child.poll() is not None:
                    raise SystemExit("the child finished before the kill")
                time.sleep(0.05)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            while _server_stats(url)["in_flight"]:
                time.sleep(0.05)
            at_kill = _server_stats(url)
            print(f"killed (SIGKILL) with {at_kill['answered']} answers sent by the server")
        first = distil(url, work / "teacher_cache", work / "candidates.jsonl", args)
        stats = _server_stats(url)
        print(f"{'resumed' if args.kill_at is not None else 'first'} run: {json.dumps(first)}")
        print(f"server: {json.dumps(stats)}")
        again = distil(url, work / "teacher_cache", work / "candidates-rerun.jsonl", args)
        after = _server_stats(url)
        print(f"rerun over the cache: {json.dumps(again)}; server posts during it: {after['posts'] - stats['posts']}")
        same = (work / "candidates.jsonl").read_bytes() == (work / "candidates-rerun.jsonl").read_bytes()
        print(f"\nrequests/s {first['requests_per_s']}  peak RSS {first['peak_rss_mib']} MiB (RSS at 10/50/100%: "
              f"{first['rss_mib']})  retries {first['retries']}  failed {first['failed']}  "
              f"requests answered more than once {after['answered_more_than_once']}  "
              f"rerun sent {again['sent']} (candidates identical: {same})")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
