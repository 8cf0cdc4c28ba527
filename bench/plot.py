"""Draw bench/results.png from bench/results.json (make bench-peer)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

IMPLS = [("idemlambda", "idemlambda (Go)", "#1f77b4"), ("powertools", "Powertools (TS)", "#ff7f0e")]
STEPS = [
    ("seq", "run", "1. 1k keys\nsequential"),
    ("dup", "run", "2a. 200×8 dup\none process"),
    ("dupp", "run", "2b. 200×8 dup\n8 processes"),
    ("crash", "crash", "3a. crash\n(abandoned)"),
    ("crash", "retry", "3b. retry\nafter lease"),
]
OPS = [("PutItem", "///"), ("GetItem", "..."), ("TransactWriteItems", ""), ("UpdateItem", "xx"), ("DeleteItem", "--")]


def main(src, dst):
    with open(src) as f:
        res = json.load(f)
    phases = {(p["impl"], p["workload"], p["step"]): p for p in res["phases"]}
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    width = 0.38
    xs = range(len(STEPS))

    def bars(ax, value, title, ylabel, steps=STEPS, fmt="{:.2f}", log=False):
        for i, (impl, label, color) in enumerate(IMPLS):
            vals = [value(phases.get((impl, w, s))) for w, s, _ in steps]
            pos = [x + (i - 0.5) * width for x in range(len(steps))]
            b = ax.bar(pos, [v or 0 for v in vals], width, label=label, color=color)
            for rect, v in zip(b, vals):
                if v is not None:
                    ax.annotate(fmt.format(v), (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                                ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(steps)), [s[2] for s in steps], fontsize=8)
        ax.set_title(title, fontsize=11)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=8)

    # 1. DynamoDB calls per request, stacked by operation, at the endpoint.
    ax = axes[0][0]
    for i, (impl, label, color) in enumerate(IMPLS):
        bottom = [0.0] * len(STEPS)
        pos = [x + (i - 0.5) * width for x in xs]
        for op, hatch in OPS:
            vals = [(phases.get((impl, w, s)) or {}).get("calls_per_request", {}).get(op, 0) for w, s, _ in STEPS]
            if not any(vals):
                continue
            ax.bar(pos, vals, width, bottom=bottom, color=color, hatch=hatch, edgecolor="white",
                   label=f"{label}: {op}")
            bottom = [b + v for b, v in zip(bottom, vals)]
        aws = [(phases.get((impl, w, s)) or {}).get("expected_calls_per_request_on_aws") for w, s, _ in STEPS]
        ax.scatter(pos, aws, marker="_", s=500, color="black", zorder=3,
                   label="expected on AWS (no GetItem fallback)" if i == 0 else None)
        for p, t in zip(pos, bottom):
            ax.annotate(f"{t:.2f}", (p, t), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), [s[2] for s in STEPS], fontsize=8)
    ax.set_title("DynamoDB calls per request (counted at the endpoint)", fontsize=11)
    ax.set_ylabel("calls / request")
    ax.set_ylim(0, 4.9)
    ax.legend(fontsize=7, ncol=3, loc="upper center")

    # 2. Business executions per key (products per key, from a table scan).
    bars(axes[0][1], lambda p: p and p.get("keys") and p["keys"]["products"] / p["keys"]["keys"],
         "Business executions per key (products written per key, table scan)", "products / key")
    axes[0][1].axhline(1, color="grey", lw=0.8, ls="--")

    # 3. Latency p50 and p99, client side.
    lat_steps = [s for s in STEPS if s[1] != "crash"]
    ax = axes[1][0]
    for i, (impl, label, color) in enumerate(IMPLS):
        pos = [x + (i - 0.5) * width for x in range(len(lat_steps))]
        p50 = [(phases.get((impl, w, s)) or {}).get("p50_ms", 0) for w, s, _ in lat_steps]
        p99 = [(phases.get((impl, w, s)) or {}).get("p99_ms", 0) for w, s, _ in lat_steps]
        ax.bar(pos, p99, width, color=color, alpha=0.35, label=f"{label} p99")
        ax.bar(pos, p50, width, color=color, label=f"{label} p50")
        own = [(phases.get((impl, w, s)) or {}).get("mean_ms_outside_store", 0) for w, s, _ in lat_steps]
        ax.scatter(pos, own, marker="_", s=500, color="black", zorder=3,
                   label="mean minus store time (own ms)" if i == 0 else None)
        for x, a, b in zip(pos, p50, p99):
            ax.annotate(f"{a:.1f}", (x, a), ha="center", va="bottom", fontsize=8)
            ax.annotate(f"{b:.1f}", (x, b), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(lat_steps)), [s[2] for s in lat_steps], fontsize=8)
    ax.set_title("Latency per request, ms (p50 solid, p99 light)", fontsize=11)
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)

    # 4. CPU time per request in the implementation's process.
    bars(axes[1][1], lambda p: p and p.get("cpu_us_per_request"),
         "CPU time per request in the implementation's process, µs", "µs / request", fmt="{:.0f}")

    m, v = res["machine"], res["versions"]
    fig.suptitle(
        f"make bench-peer, {res['date']}: {m.get('cpu', '?')}, {m.get('nproc')} CPUs, load {m.get('loadavg_start')}\n"
        f"{v.get('go')} + aws-sdk-go-v2 dynamodb {v.get('github.com/aws/aws-sdk-go-v2/service/dynamodb')}  vs  "
        f"Node {v.get('node')} + @aws-lambda-powertools/idempotency {v.get('@aws-lambda-powertools/idempotency')}; "
        f"embedded store (minidyn {v.get('minidyn (embedded store)')})",
        fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
