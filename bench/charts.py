#!/usr/bin/python3
"""charts.py -- comparison charts of rlxc against PyTorch (matplotlib).

Library use (the torch scripts' --chart PATH):

    import charts
    recs = [charts.record("forward", 1, rlx=1.576, torch=1.892,
                          rlx_span=(1.485, 1.576)), ...]
    charts.draw(recs, "mlp.svg", "MLP 784-512-512-10", unit="ms",
                machine=charts.machine(), date=charts.now())

draws grouped bars (rlxc, PyTorch) per measurement, one panel per
thread count, with the speed-up of rlxc written over each group
(PyTorch / rlxc for times, rlxc / PyTorch for GFLOP/s: above 1, rlxc
is faster), a whisker from the median to the minimum (or over a range
of runs), a log scale when the values span more than 20x, and for
GFLOP/s an optional horizontal line at the GEMM peak.  The format
follows the file name (.svg, .png, .pdf); SVG text stays text
(svg.fonttype none) and carries no date, so the files are small and
diffable.

Command line:

    /usr/bin/python3 bench/charts.py --from-md docs/performance.md \\
        --out docs/charts/

finds the Markdown tables of rlxc against PyTorch in the file by their
header rows (columns "rlxc ..." and "PyTorch ...", optional "threads",
"GFLOP/s" and ratio columns; the ratio is recomputed from the medians),
takes machine, date, thread count and GEMM peak from the text above
each table, and writes one SVG per table, named after its "##" section
(models.svg, models-2.svg, ...).  Tables it does not understand (other
columns naming rlxc, no PyTorch column, cells that are not numbers) are
skipped with a note on stderr.  Needs only the standard library and
matplotlib (Debian: python3-matplotlib); not part of CI.
"""
import argparse
import datetime
import os
import platform
import re
import sys

RLX_COLOR = "#1f77b4"
TORCH_COLOR = "#ee7733"
PEAK_COLOR = "#555555"


def record(measurement, threads, rlx, torch, rlx_span=None, torch_span=None):
    """One measurement: rlx / torch are medians (ms or GFLOP/s, None if
    not measured); *_span = (low, high) drawn as a whisker (median to
    minimum, or the range over runs)."""
    return {"measurement": measurement, "threads": threads, "rlx": rlx,
            "torch": torch, "rlx_span": rlx_span, "torch_span": torch_span}


def require():
    """Exit with a hint unless matplotlib imports (call it before a long
    benchmark run whose numbers are to be charted)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("--chart needs matplotlib: apt-get install "
                 "python3-matplotlib")


def timings(results, order=None):
    """Records from {(measurement, threads): (median_ms, min_ms)} of
    rlxc and of PyTorch: results = (rlx_dict, torch_dict)."""
    rlx, tor = results
    keys = order or sorted(set(rlx) | set(tor),
                           key=lambda k: (k[1], str(k[0])))
    out = []
    for k in keys:
        r, p = rlx.get(k), tor.get(k)
        if r or p:
            out.append(record(k[0], k[1], r and r[0], p and p[0],
                              r and (r[1], r[0]), p and (p[1], p[0])))
    return out


def machine():
    """CPU model and logical CPU count of this machine, for titles."""
    name = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "%s, %d logical CPUs" % (clean_cpu(name), os.cpu_count() or 0)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")


def clean_cpu(name):
    name = re.sub(r"\((?:R|TM)\)", "", name)
    return re.sub(r"\s+", " ", name).strip()


def speedup(r, unit):
    if not r["rlx"] or not r["torch"]:
        return None
    return r["torch"] / r["rlx"] if unit == "ms" else r["rlx"] / r["torch"]


def _fmt(v):
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def draw(records, path, title, unit="ms", machine=None, date=None,
         peak=None, peak_label=None, log=None, note=None):
    """Draw records (see record()) into path.  unit: "ms" (lower is
    better) or "GFLOP/s" (higher is better).  peak: a GFLOP/s value
    drawn as a horizontal line (panels of 1 thread, or all panels when
    the records carry no thread count).  log: force the y scale (None:
    log when max / min > 20)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "rlxc",
                         "font.size": 9, "axes.titlesize": 10,
                         "font.sans-serif": ["DejaVu Sans", "Arial"],
                         "path.simplify": True})
    records = [r for r in records if r["rlx"] or r["torch"]]
    if not records:
        raise ValueError("no records to draw")
    threads = []
    for r in records:
        if r["threads"] not in threads:
            threads.append(r["threads"])
    panels = [[r for r in records if r["threads"] == t] for t in threads]
    vals = [v for r in records for v in (r["rlx"], r["torch"]) if v]
    for r in records:
        for s in (r["rlx_span"], r["torch_span"]):
            if s:
                vals += [v for v in s if v and v > 0]
    lo, hi = min(vals), max(vals)
    if log is None:
        log = hi / lo > 20
    if peak:
        hi = max(hi, peak)
    groups = max(len(p) for p in panels)
    labels = {id(r): wrap(r["measurement"]) for r in records}
    widest = max(len(part) for v in labels.values() for part in v.split("\n"))
    # inches per group: room for the two bars and the widest label line
    per = max(0.62, 0.075 * widest + 0.1)
    rotate = per * groups > 14.5
    if rotate:
        per = 0.62
    width = min(max(6.5 if peak else 5.0, per * groups + 1.4), 16.0)
    lines = max(v.count("\n") + 1 for v in labels.values())
    panel_h = 2.6 + (0.14 * widest * 0.5 if rotate else 0.16 * lines)
    head = 0.7
    height = panel_h * len(panels) + 0.35 + head
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, height),
                             squeeze=False)
    bw = 0.38
    for ax, t, recs in zip(axes[:, 0], threads, panels):
        xs = range(len(recs))
        for side, off, color, name in (("rlx", -bw / 2, RLX_COLOR, "rlxc"),
                                       ("torch", bw / 2, TORCH_COLOR,
                                        "PyTorch")):
            pos = [x + off for x, r in zip(xs, recs) if r[side]]
            hs = [r[side] for r in recs if r[side]]
            err = [[], []]
            for r in recs:
                if not r[side]:
                    continue
                a, b = r[side + "_span"] or (r[side], r[side])
                err[0].append(max(r[side] - min(a, b), 0))
                err[1].append(max(max(a, b) - r[side], 0))
            ax.bar(pos, hs, bw, color=color, label=name, zorder=2)
            if any(e for e in err[0] + err[1]):
                ax.errorbar(pos, hs, yerr=err, fmt="none", ecolor="#222222",
                            elinewidth=0.8, capsize=2, zorder=3)
        if log:
            ax.set_yscale("log")
        top = hi * (2.2 if log else 1.16)
        bottom = lo / 1.6 if log else 0
        ax.set_ylim(bottom, top)
        for x, r in zip(xs, recs):
            ys = [v for v in (r["rlx"], r["torch"]) if v]
            for s in (r["rlx_span"], r["torch_span"]):
                if s:
                    ys += list(s)
            y = max(ys) * (1.12 if log else 1) + (0 if log else hi * 0.02)
            s = speedup(r, unit)
            if s:
                ax.text(x, y, ("%.1f\u00d7" if s >= 10 else "%.2f\u00d7") % s,
                        ha="center", va="bottom", fontsize=7.5,
                        fontweight="bold" if s >= 1 else "normal",
                        color="#222222")
            else:  # one side not measured: say so where its bar would be
                ax.text(x + (bw / 2 if not r["torch"] else -bw / 2),
                        bottom * 1.15 if log else hi * 0.02,
                        "%s not run" % ("PyTorch" if not r["torch"]
                                        else "rlxc"),
                        rotation=90, ha="center", va="bottom", fontsize=7,
                        color="#777777")
        if peak and (t is None or t == 1):
            ax.axhline(peak, color=PEAK_COLOR, linestyle="--",
                       linewidth=0.9, zorder=1,
                       label=peak_label or "GEMM peak %s GFLOP/s"
                       % _fmt(peak))
        ax.set_xticks(list(xs))
        ax.set_xticklabels([labels[id(r)] for r in recs],
                           rotation=35 if rotate else 0,
                           ha="right" if rotate else "center",
                           fontsize=8)
        ax.set_xlim(-0.6, max(groups, 2) - 0.4)
        ax.set_ylabel("median time (ms), lower is better" if unit == "ms"
                      else "%s (median), higher is better" % unit)
        if log:
            ax.yaxis.set_major_formatter(
                FuncFormatter(lambda v, _: "%g" % v if v > 0 else ""))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(axis="y", color="#dddddd", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
        for sp in ("top", "right"):
            ax.spines[sp].set_visible(False)
        if t is not None:
            ax.set_title("%d thread%s" % (t, "" if t == 1 else "s"),
                         loc="left", fontsize=9)
    axes[-1, 0].set_xlabel("measurement")
    sub = ", ".join(s for s in (machine, date) if s)
    how = ("bar labels: PyTorch / rlxc median time" if unit == "ms"
           else "bar labels: rlxc / PyTorch median %s" % unit) + \
        " (above 1: rlxc faster); whiskers: " + \
        ("minimum to median" if unit == "ms" else "range or best call")
    fig.text(0.01, 1 - 0.08 / height, "rlxc vs PyTorch: %s" % title,
             fontsize=11, ha="left", va="top")
    fig.text(0.01, 1 - 0.33 / height, "\n".join(
        s for s in (sub, note or how) if s), fontsize=7.5, color="#444444",
        ha="left", va="top", linespacing=1.4)
    handles, names = axes[0, 0].get_legend_handles_labels()
    for ax in axes[1:, 0]:
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in names:
                handles.append(h)
                names.append(n)
    axes[0, 0].legend(handles, names, loc="lower right", fontsize=8,
                      frameon=False, ncol=len(names), borderaxespad=0.2,
                      bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 1 - head / height), h_pad=1.2)
    svg = str(path).endswith(".svg")
    fig.savefig(path, metadata={"Date": None, "Creator": None} if svg
                else None)
    plt.close(fig)


# ---- Markdown tables -----------------------------------------------------

NUM = r"-?\d+(?:\.\d+)?"
DATE = re.compile(r"\b(\d{4}-\d\d-\d\d),?\s+(\d\d:\d\d(?:\s*[–-]\s*\d\d:\d\d)?)"
                  r"\s+UTC")
CPU = re.compile(r"`?((?:Intel\(R\) Xeon\(R\)|AMD EPYC|Intel|AMD)"
                 r"[^`,;\n]*?)`?(?=[`,;)]|\s+with\b|\s*\(|$)")
NCPU = re.compile(r"(\d+)(?:\s+logical)?\s+(?:vCPUs|CPUs)\b|(\d+)-core")
PEAK = (re.compile(r"GEMM 512³:\s*(" + NUM + r")(?:\s*[–-]\s*(" + NUM +
                   r"))?\s*GF(?:LOP)?/s"),
        re.compile(r"(" + NUM + r")\s*GF(?:LOP)?/s at 512³"))


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def wrap(label, width=11):
    """Put each word (split at spaces and after dots) of a tick label
    longer than width on its own line."""
    if len(label) <= width:
        return label
    return "\n".join(w for w in re.split(r"(?<=\.)|\s+", label) if w)


def parse_cell(s):
    """'1.576 (1.485)' -> (1.576, (1.485, 1.576)); '117–122' ->
    (119.5, (117, 122)); '55' -> (55, None); '', '—', '?' -> None."""
    s = s.replace("*", "").strip()
    if s in ("", "—", "-", "?", "–"):
        return None
    m = re.fullmatch(r"(%s)\s*\((%s)\)" % (NUM, NUM), s)
    if m:
        med, mn = float(m.group(1)), float(m.group(2))
        return med, (mn, med)
    m = re.fullmatch(r"(%s)\s*[–-]\s*(%s)" % (NUM, NUM), s)
    if m:
        a, b = float(m.group(1)), float(m.group(2))
        return (a + b) / 2, (a, b)
    m = re.fullmatch(NUM, s)
    if m:
        return float(s), None
    raise ValueError("cell %r is not a number" % s)


def understand(header):
    """Column plan of a header row, or raise ValueError saying why not."""
    keys, sides, threads = [], [], None
    for i, h in enumerate(header):
        low = h.lower()
        if low == "threads":
            threads = i
        elif "/" in h and "rlxc" in low and "pytorch" in low:
            continue  # ratio: recomputed from the medians
        elif low.startswith("rlxc ") or low.startswith("pytorch "):
            sides.append({"side": "rlx" if low.startswith("rlxc") else
                          "torch", "col": i, "label": h.split(" ", 1)[1],
                          "gflops": None})
        elif "rlxc" in low or "pytorch" in low:
            raise ValueError("column %r" % h)
        elif low in ("gflop/s", "gf/s"):
            if not sides:
                raise ValueError("GFLOP/s column before rlxc/PyTorch")
            sides[-1]["gflops"] = i
        elif low.startswith("vs "):
            continue
        elif sides:
            raise ValueError("column %r after the timings" % h)
        else:
            keys.append(i)
    rl = [s for s in sides if s["side"] == "rlx"]
    to = [s for s in sides if s["side"] == "torch"]
    if not rl or not to:
        raise ValueError("no rlxc and PyTorch columns")
    if len(rl) != len(to):
        raise ValueError("%d rlxc columns against %d PyTorch" %
                         (len(rl), len(to)))
    pairs = []
    for a, b in zip(rl, to):
        la, lb = (re.sub(r"\s*median \(min\)\s*|\bms\b", " ", x["label"])
                  .strip() for x in (a, b))
        if la != lb:
            raise ValueError("rlxc %r against PyTorch %r" % (a["label"],
                                                            b["label"]))
        unit = ("GFLOP/s" if a["gflops"] is not None and
                b["gflops"] is not None else
                "ms" if re.search(r"\bms\b", a["label"]) else None)
        pairs.append((la, a, b, unit))
    units = {p[3] for p in pairs}
    if len(units) != 1:
        raise ValueError("mixed units")
    return keys, threads, pairs, units.pop()


def section_name(h2):
    m = re.search(r"bench/bench_(\w+)\.", h2) or \
        re.search(r"runtime/([a-z]+)", h2)
    if m:
        return m.group(1)
    h = re.sub(r"\([^)]*\)", "", h2).strip()
    if ":" in h:
        h = h.split(":", 1)[0]
    return "-".join(re.findall(r"[a-z0-9]+", h.lower())[:2]) or "table"


def title_of(h2):
    h = re.sub(r"\s*\([^)]*\)", "", h2)
    return re.sub(r"\s+against PyTorch$", "", h).strip()


def context(text, want_peak):
    """Machine, date, thread count and GEMM peak from the text above a
    table (the last mention before the table wins)."""
    t = re.sub(r"\s+", " ", text)
    info = {"machine": None, "date": None, "threads": None, "peak": None,
            "peak_label": None}
    ds = list(DATE.finditer(t))
    if ds:
        info["date"] = "%s %s UTC" % (ds[-1].group(1),
                                      re.sub(r"\s", "", ds[-1].group(2)))
    cs = list(CPU.finditer(t))
    if cs:
        c = cs[-1]
        name = clean_cpu(c.group(1))
        after = t[c.end():c.end() + 160]
        arch = re.match(r"`?\s*\((Zen \d|[^,)]*Lake[^,)]*)", after)
        if arch:
            name += " (%s)" % arch.group(1)
        n = NCPU.search(t[c.start():c.end() + 160])
        if n:
            name += ", %s %s" % ((n.group(1), "CPUs") if n.group(1) else
                                 (n.group(2), "cores"))
            if "vCPU" in n.group(0):
                name = name[:-4] + "vCPUs"
        info["machine"] = name
    th = list(re.finditer(r"\b(\d+) thread\b", t))
    if th:
        info["threads"] = int(th[-1].group(1))
    if want_peak:
        for pat in PEAK:
            ms = list(pat.finditer(t))
            if ms:
                m = ms[-1]
                a = float(m.group(1))
                b = float(m.group(2)) if m.lastindex >= 2 and m.group(2) \
                    else a
                info["peak"] = (a + b) / 2
                info["peak_label"] = "rlx_gemm 512³, 1 thread: %s GFLOP/s" % (
                    _fmt(a) if a == b else "%s–%s" % (_fmt(a), _fmt(b)))
                break
    return info


def tables(lines):
    """Yield (start, end, h2, h3, text of the section above) per table."""
    h2 = h3 = ""
    s2 = s3 = 0
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("## "):
            h2, h3, s2, s3 = ln[3:].strip(), "", i, i
        elif ln.startswith("### "):
            h3, s3 = ln[4:].strip(), i
        elif (ln.startswith("|") and i + 1 < len(lines)
              and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1])):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield i, j, h2, h3, lines[s3:i], lines[s2:i]
            i = j
            continue
        i += 1


def from_markdown(path, out, log=sys.stderr, fmt="svg"):
    """Chart every understood rlxc-vs-PyTorch table of path into out/.
    Returns [(table line number, svg path)]."""
    lines = open(path, encoding="utf-8").read().split("\n")
    os.makedirs(out, exist_ok=True)
    done, used = [], {}
    for start, end, h2, h3, near, sect in tables(lines):
        where = "%s:%d (%s)" % (path, start + 1, h3 or h2)
        try:
            keys, tcol, pairs, unit = understand(cells(lines[start]))
            if unit is None:
                txt = " ".join(near)
                unit = "GFLOP/s" if re.search(r"GFLOP/s", txt) else None
                if unit is None:
                    raise ValueError("no unit for %r" % pairs[0][0])
            header = cells(lines[start])
            info = context("\n".join(sect), unit == "GFLOP/s")
            near_info = context("\n".join(near), unit == "GFLOP/s")
            for k, v in near_info.items():
                if v is not None:
                    info[k] = v
            recs = []
            for row in lines[start + 2:end]:
                c = cells(row)
                if len(c) != len(header):
                    raise ValueError("row %r" % row)
                label = " ".join(
                    ("%s=%s" % (header[k], c[k]))
                    if re.fullmatch(NUM, c[k]) else c[k] for k in keys).replace("`", "")
                th = int(c[tcol]) if tcol is not None else info["threads"]
                for name, a, b, _ in pairs:
                    v = []
                    for s in (a, b):
                        if unit == "GFLOP/s" and s["gflops"] is not None:
                            g = parse_cell(c[s["gflops"]])
                            t = parse_cell(c[s["col"]])
                            if g and t and t[1]:
                                g = (g[0], (g[0], g[0] * t[0] / t[1][0]))
                            v.append(g)
                        else:
                            v.append(parse_cell(c[s["col"]]))
                    if not v[0] and not v[1]:
                        continue
                    if not v[0] and unit == "ms":
                        continue
                    if not v[1] and unit == "ms":
                        continue  # rlxc-only rows (e.g. "GEMMs only")
                    recs.append(record(
                        (label + " " + name).strip(), th,
                        v[0] and v[0][0], v[1] and v[1][0],
                        v[0] and v[0][1], v[1] and v[1][1]))
            if not recs:
                raise ValueError("no rows with both sides")
        except ValueError as e:
            print("skip %s: %s" % (where, e), file=log)
            continue
        base = section_name(h2)
        used[base] = used.get(base, 0) + 1
        name = base + ("" if used[base] == 1 else "-%d" % used[base])
        svg = os.path.join(out, name + "." + fmt)
        draw(recs, svg, title_of(h2), unit=unit, machine=info["machine"],
             date=info["date"], peak=info["peak"],
             peak_label=info["peak_label"])
        print("chart %s: %s (%d bar groups, %s)" % (where, svg, len(recs),
                                                     unit), file=log)
        done.append((start + 1, end, svg))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from-md", required=True,
                    help="Markdown file with rlxc vs PyTorch tables")
    ap.add_argument("--out", required=True, help="folder for the SVGs")
    ap.add_argument("--format", default="svg",
                    help="svg (default), or png to preview")
    a = ap.parse_args()
    if not from_markdown(a.from_md, a.out, fmt=a.format):
        sys.exit("no table charted")


if __name__ == "__main__":
    main()
