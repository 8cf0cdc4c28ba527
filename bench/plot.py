"""Draw bench/results.png from bench/results.json (make bench-peer)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# The implementations, in the results' order: (impl in results.json, label, colour).
IMPLS = [
    ("idemlambda", "idemlambda reserve (Go)", "#1f77b4"),
    ("idemlambda-transact", "idemlambda transact (Go)", "#2ca02c"),
    ("powertools", "Powertools (TS)", "#ff7f0e"),
]
STEPS = [
    ("seq", "run", "1. 1k keys\nsequential"),
    ("dup", "run", "2a. 200×8 dup\none process"),
    ("dupp", "run", "2b. 200×8 dup\n8 processes"),
    ("crash", "crash", "3a. crash\n(abandoned)"),
    ("crash", "retry", "3b. retry\nafter lease"),
]
OPS = [("PutItem", "///"), ("GetItem", "..."), ("TransactWriteItems", ""), ("UpdateItem", "xx"), ("DeleteItem", "--")]
WIDTH = 0.8 / len(IMPLS)


def store_label(versions):
    """The embedded store: minidyn's version for a run recorded while it held the store's items."""
    if versions.get("minidyn (embedded store)"):
        return f"minidyn {versions['minidyn (embedded store)']}"
    return "pkg/idem/idemtest"


def offsets(n):
    """Bar positions of implementation i for n groups."""
    return [[x + (i - (len(IMPLS) - 1) / 2) * WIDTH for x in range(n)] for i in range(len(IMPLS))]


def impl_handles():
    return [Patch(facecolor=color, label=label) for _, label, color in IMPLS]


# The consumer implementations (workload 4): (impl in results.json, label, colour).
CONSUMERS = [
    ("idemlambda-sellerstats", "idemlambda sellerstats (Go)", "#2ca02c"),
    ("powertools-batch", "Powertools batch + makeIdempotent (TS)", "#ff7f0e"),
]


def consumer(axes, phases):
    """Workload 4: calls and CPU per event, by sellers and concurrent invocations."""
    groups = sorted({(p["sellers"], p["concurrent_invocations"]) for p in phases})
    by = {(p["impl"], p["sellers"], p["concurrent_invocations"]): p for p in phases}
    labels = [f"{s} seller{'s' if s > 1 else ''}\n{c} at once" for s, c in groups]
    width = 0.8 / len(CONSUMERS)
    for ax, key, title, ylabel, fmt in [
        (axes[0], "calls_per_event", "4. Consumer: DynamoDB calls per event", "calls / event", "{:.2f}"),
        (axes[1], "cpu_us_per_event", "4. Consumer: CPU time per event in the consumer's processes, µs", "µs / event", "{:.0f}"),
    ]:
        for i, (impl, label, color) in enumerate(CONSUMERS):
            pos = [x + (i - (len(CONSUMERS) - 1) / 2) * width for x in range(len(groups))]
            vals = [(by.get((impl, s, c)) or {}).get(key) for s, c in groups]
            bars = ax.bar(pos, [v or 0 for v in vals], width, label=label, color=color)
            for rect, v, (s, c) in zip(bars, vals, groups):
                if v is None:
                    continue
                p = by[(impl, s, c)]
                note = "" if p.get("truth_held") else " (truth broken)"
                ax.annotate(fmt.format(v) + note, (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)), labels, fontsize=8)
        ax.set_title(title, fontsize=11)
        ax.set_ylabel(ylabel)
        ax.margins(y=0.12)
        ax.legend(fontsize=8)


def cost_bars(ax, groups, value_of, colors, labels, title, unit):
    """Cost per million: DynamoDB (solid) + Lambda at the smallest size
    (hatched), a tick at the total with the largest; WRU/RRU above."""
    width = 0.8 / max(1, len(colors))
    sizes = None
    highest = 0
    for i, (color, label) in enumerate(zip(colors, labels)):
        pos = [x + (i - (len(colors) - 1) / 2) * width for x in range(len(groups))]
        costs = [value_of(i, g) for g in groups]
        ddb = [(c or {}).get("dynamodb_usd_per_million", 0) for c in costs]
        lam = [(c or {}).get("lambda_usd_per_million") or {} for c in costs]
        if sizes is None:
            for l in lam:
                if l:
                    sizes = sorted(int(k) for k in l)
                    break
        small = [l.get(str(sizes[0]), 0) if sizes and l else 0 for l in lam]
        ax.bar(pos, ddb, width, color=color, label=label)
        ax.bar(pos, small, width, bottom=ddb, color=color, alpha=0.45, hatch="//", edgecolor="white")
        for x, c, d, sm, l in zip(pos, costs, ddb, small, lam):
            if c is None:
                continue
            top = d + sm
            if sizes and l:
                big = d + l.get(str(sizes[-1]), 0)
                ax.scatter([x], [big], marker="_", s=250, color="black", zorder=3)
                top = max(top, big)
            highest = max(highest, top)
            ax.annotate(f"${top:.2f}\n{c['wru_per_unit']:.2f} W\n{c['rru_per_unit']:.2f} R", (x, top),
                        xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(groups)), [g[-1] for g in groups], fontsize=8)
    ax.set_title(title, fontsize=11)
    ax.set_ylabel(unit)
    ax.set_ylim(0, highest * 1.55 or 1)
    handles = [Patch(facecolor=c, label=l) for c, l in zip(colors, labels)]
    if sizes:
        handles += [
            Patch(facecolor="#888888", label="DynamoDB (write + read request units)"),
            Patch(facecolor="#888888", alpha=0.45, hatch="//", edgecolor="white", label=f"+ Lambda arm64 {sizes[0]} MB"),
            Line2D([], [], marker="_", markersize=14, color="black", ls="", label=f"total with Lambda {sizes[-1]} MB ($ above it)"),
            Patch(facecolor="white", label="W, R: write, read request units per request or event"),
        ]
    ax.legend(handles=handles, fontsize=7, ncol=2, loc="upper right")


def costs(axes, res, phases):
    """The bill: $ per million requests (workloads 1-3b) and per million events (4), on-demand us-east-1."""
    pr = res.get("prices") or {}
    when = f"us-east-1, prices read {pr.get('read', '?')}"
    steps = [s for s in STEPS if s[1] != "crash"]
    groups = [(w, s, label) for w, s, label in steps]
    cost_bars(axes[0], groups, lambda i, g: (phases.get((IMPLS[i][0], g[0], g[1])) or {}).get("cost"),
              [c for _, _, c in IMPLS], [l for _, l, _ in IMPLS],
              f"Cost per million requests, $ ({when}; Lambda duration as measured here)", "$ / million requests")
    cons = res.get("consumer") or []
    by = {(p["impl"], p["sellers"], p["concurrent_invocations"]): p for p in cons}
    cgroups = sorted({(p["sellers"], p["concurrent_invocations"]) for p in cons})
    cgroups = [(s, c, f"{s} seller{'s' if s > 1 else ''}\n{c} at once") for s, c in cgroups]
    cost_bars(axes[1], cgroups, lambda i, g: (by.get((CONSUMERS[i][0], g[0], g[1])) or {}).get("cost"),
              [c for _, _, c in CONSUMERS], [l for _, l, _ in CONSUMERS],
              "4. Consumer: cost per million events, $ (same prices)", "$ / million events")


def main(src, dst):
    with open(src) as f:
        res = json.load(f)
    phases = {(p["impl"], p["workload"], p["step"]): p for p in res["phases"]}
    impls = [i for i in IMPLS if any(k[0] == i[0] for k in phases)]
    fig, axes = plt.subplots(4, 2, figsize=(17, 21))

    def bars(ax, value, title, ylabel, steps=STEPS, fmt="{:.2f}"):
        pos_all = offsets(len(steps))
        for i, (impl, label, color) in enumerate(IMPLS):
            if (impl, label, color) not in impls:
                continue
            vals = [value(phases.get((impl, w, s))) for w, s, _ in steps]
            b = ax.bar(pos_all[i], [v or 0 for v in vals], WIDTH, label=label, color=color)
            for rect, v in zip(b, vals):
                if v is not None:
                    ax.annotate(fmt.format(v), (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                                ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(steps)), [s[2] for s in steps], fontsize=8)
        ax.set_title(title, fontsize=11)
        ax.set_ylabel(ylabel)
        ax.margins(y=0.12)
        ax.legend(fontsize=8)

    # 1. DynamoDB calls per request, stacked by operation, at the endpoint.
    ax = axes[0][0]
    pos_all = offsets(len(STEPS))
    used_ops = set()
    for i, (impl, label, color) in enumerate(IMPLS):
        if (impl, label, color) not in impls:
            continue
        pos = pos_all[i]
        bottom = [0.0] * len(STEPS)
        for op, hatch in OPS:
            vals = [(phases.get((impl, w, s)) or {}).get("calls_per_request", {}).get(op, 0) for w, s, _ in STEPS]
            if not any(vals):
                continue
            used_ops.add(op)
            ax.bar(pos, vals, WIDTH, bottom=bottom, color=color, hatch=hatch, edgecolor="white")
            bottom = [b + v for b, v in zip(bottom, vals)]
        for p, t in zip(pos, bottom):
            ax.annotate(f"{t:.2f}", (p, t), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(STEPS)), [s[2] for s in STEPS], fontsize=8)
    ax.set_title("DynamoDB calls per request (counted at the endpoint, stacked by operation)", fontsize=11)
    ax.set_ylabel("calls / request")
    ax.set_ylim(0, 4.4)
    handles = impl_handles() + [
        Patch(facecolor="#888888", edgecolor="white", hatch=hatch, label=op) for op, hatch in OPS if op in used_ops
    ]
    ax.legend(handles=handles, fontsize=7, ncol=3, loc="upper center")

    # 2. Business executions per key (products per key, from a table scan).
    bars(axes[0][1], lambda p: p and p.get("keys") and p["keys"]["products"] / p["keys"]["keys"],
         "Business executions per key (products written per key, table scan)", "products / key")
    axes[0][1].axhline(1, color="grey", lw=0.8, ls="--")

    # 3. Latency p50 and p99, client side.
    lat_steps = [s for s in STEPS if s[1] != "crash"]
    ax = axes[1][0]
    pos_all = offsets(len(lat_steps))
    for i, (impl, label, color) in enumerate(IMPLS):
        if (impl, label, color) not in impls:
            continue
        pos = pos_all[i]
        p50 = [(phases.get((impl, w, s)) or {}).get("p50_ms", 0) for w, s, _ in lat_steps]
        p99 = [(phases.get((impl, w, s)) or {}).get("p99_ms", 0) for w, s, _ in lat_steps]
        ax.bar(pos, p99, WIDTH, color=color, alpha=0.35)
        ax.bar(pos, p50, WIDTH, color=color)
        own = [(phases.get((impl, w, s)) or {}).get("mean_ms_outside_store", 0) for w, s, _ in lat_steps]
        ax.scatter(pos, own, marker="_", s=300, color="black", zorder=3)
        for x, a, b in zip(pos, p50, p99):
            ax.annotate(f"{a:.1f}", (x, a), ha="center", va="bottom", fontsize=7)
            ax.annotate(f"{b:.1f}", (x, b), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(lat_steps)), [s[2] for s in lat_steps], fontsize=8)
    ax.set_title("Latency per request, ms (p50 solid, p99 light)", fontsize=11)
    ax.set_ylabel("ms")
    ax.margins(y=0.1)
    ax.legend(handles=impl_handles() + [
        Patch(facecolor="#888888", label="p50"), Patch(facecolor="#888888", alpha=0.35, label="p99"),
        Line2D([], [], marker="_", markersize=14, color="black", ls="", label="mean minus store time (own ms)"),
    ], fontsize=8)

    # 4. CPU time per request in the implementation's process.
    bars(axes[1][1], lambda p: p and p.get("cpu_us_per_request"),
         "CPU time per request in the implementation's process, µs", "µs / request", fmt="{:.0f}")

    consumer(axes[2], res.get("consumer") or [])
    costs(axes[3], res, phases)

    m, v = res["machine"], res["versions"]
    fig.suptitle(
        f"make bench-peer, {res['date']}: {m.get('cpu', '?')}, {m.get('nproc')} CPUs, load {m.get('loadavg_start')}\n"
        f"{v.get('go')} + aws-sdk-go-v2 dynamodb {v.get('github.com/aws/aws-sdk-go-v2/service/dynamodb')} "
        f"(idem modes reserve and transact)  vs  "
        f"Node {v.get('node')} + @aws-lambda-powertools/idempotency {v.get('@aws-lambda-powertools/idempotency')}; "
        f"embedded store ({store_label(v)})",
        fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
