"""--plot PATH.png of `python -m metalcall bench`: bandwidth against size (metalcall's kernels on
each device, and the peers' curves) beside the dispatch-latency bars. Needs matplotlib.
"""

from __future__ import annotations

from typing import Any


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def write_plot(report: dict[str, Any], path: str) -> None:
    with open(path, "wb") as f:
        f.write(plot_png(report))


def plot_png(report: dict[str, Any]) -> bytes:
    """The plot as PNG bytes (--plot writes them to a file, --html inlines them)."""
    import io

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'metalcall[bench]' (or pip install matplotlib)") from None

    fig, (bw, lat) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    styles = {"copy": "-", "mul": "--"}
    for entry in report["devices"]:
        label = entry["device"]["backend"]
        for op in ("copy", "mul"):
            points = entry["bandwidth"][op]
            bw.plot([p["elements"] for p in points], [p["gbps"] for p in points], styles[op], marker="o",
                    markersize=3, label=f"metalcall {label} {'copy' if op == 'copy' else 'c = a * b'} (device clock)")
        points = entry["bandwidth"]["mul"]
        bw.plot([p["elements"] for p in points], [p["bytes"] / p["result"]["host_median"] / 1e9 for p in points],
                "-.", marker="s", markersize=3, label=f"metalcall {label} c = a * b (host clock, call + wait)")
    for peer in report.get("peers", {}).get("results", []):
        points = peer["mul"]
        bw.plot([p["elements"] for p in points], [p["gbps"] for p in points], ":", marker=".",
                label=f"{peer['name']} c = a * b (host clock)")
    bw.set_xscale("log", base=2)
    bw.set_yscale("log")
    bw.set_xlabel("elements (float32)")
    bw.set_ylabel("GB/s (median call; higher is better)")
    bw.set_title("Bandwidth against size")
    bw.grid(True, which="both", alpha=0.3)
    bw.legend(fontsize=7)

    names, values = [], []
    for entry in report["devices"]:
        for row in entry["latency"]:
            if row["seconds"] is not None:
                names.append(f"{entry['device']['backend']}: {row['name'].split(' (')[0]}")
                values.append(row["seconds"] * 1e6)
    for peer in report.get("peers", {}).get("results", []):
        names.append(peer["name"])
        values.append(peer["latency"] * 1e6)
    lat.barh(names, values, color="tab:blue")
    lat.invert_yaxis()
    lat.set_xlabel("µs per 1-element call (lower is better)")
    lat.set_title("1-element call, host time")
    lat.tick_params(axis="y", labelsize=7)
    for y, v in enumerate(values):
        lat.text(v, y, f" {v:.2f}", va="center", fontsize=7)
    fig.suptitle(f"python -m metalcall bench — {report['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=90)
    plt.close(fig)
    return out.getvalue()
