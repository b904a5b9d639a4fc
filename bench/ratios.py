"""Reads the JSON lines of one `make bench` run and prints, for every line that
has a peer measured in the same run (same workload, shape, variant, threads,
L, mask), the ratio of our speed to the peer's: > 1 means we are faster; rss_ratio is
our peak memory over the peer's (< 1: we use less), and same_params says the
two models have the same number of parameters. Our training workloads also
carry gemm_share (the part of our step inside the matrix products, from the
profiler), and at 2 threads our_2t_speedup (our 2-thread speed over our own
1-thread speed in this run)."""
import json
import sys

KEYS = ("workload", "shape", "variant", "threads", "L", "causal", "impl")

def key(r):
    return tuple(r.get(k) for k in KEYS)

ours, peers = {}, {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    if "skipped" in r or "median_ms" not in r:
        continue
    (peers if "peer" in r else ours)[key(r)] = r
for k, r in ours.items():
    p = peers.get(k)
    if not p:
        continue
    out = {kk: r[kk] for kk in KEYS if kk in r}
    out["peer"] = p["peer"]
    out["speed_ratio"] = round(p["median_ms"] / r["median_ms"], 3)
    if "peak_rss_mb" in r and "peak_rss_mb" in p and r["peak_rss_mb"]:
        out["rss_ratio"] = round(r["peak_rss_mb"] / p["peak_rss_mb"], 3)
    if "profile" in r:
        out["gemm_share"] = r["profile"]["gemm_share"]
    if r.get("threads") == 2:
        one = ours.get(tuple(1 if kk == "threads" else v for kk, v in zip(KEYS, k)))
        if one:
            out["our_2t_speedup"] = round(one["median_ms"] / r["median_ms"], 3)
    if "params" in r and "params" in p:
        out["same_params"] = r["params"] == p["params"]
    print(json.dumps(out, separators=(",", ":")))
