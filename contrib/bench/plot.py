#!/usr/bin/python3
"""Turn a benchmark CSV into a PNG line plot and/or a text table.

Reusable by every benchmark of this project: the CSV needs a header line;
rows are selected with --where, lines are drawn per --series value, and
--facet makes one panel per value of another column.

  plot.py data.csv --x bytes --y lat_us --series impl \\
          --where np=4 --where mode=reuse --logx --logy -o lat.png
  plot.py data.csv --x bytes --y lat_us --series impl --facet np --table

Options:
  --x COL, --y COL      columns for the axes (numeric)
  --series COL[,COL]    one line per distinct value (joined with "/")
  --facet COL           one panel per distinct value of COL, side by side
  --where COL=VAL       keep rows whose COL equals VAL (repeatable; VAL may
                        be a comma-separated list of accepted values)
  --logx, --logy        log-scale axes (base 2 for x, 10 for y)
  --title, --xlabel, --ylabel
  -o FILE.png           write the plot (matplotlib, no display needed)
  --table               print the selection as a table: one row per x
                        value, one column per series (per facet)

Lines starting with "#" are comments. Exit status 2 on bad input (missing
column, nothing selected, non-numeric value).
"""
import argparse
import csv
import sys
from collections import OrderedDict


def die(msg):
    print("plot.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            lines = [l for l in f if l.strip() and not l.startswith("#")]
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    if not lines:
        die("%s: empty" % path)
    return list(csv.DictReader(lines))


def select(rows, wheres):
    for w in wheres:
        if "=" not in w:
            die("--where %r: expected COL=VAL" % w)
        col, val = w.split("=", 1)
        if rows and col not in rows[0]:
            die("--where: no column %r (have %s)" % (col, ", ".join(rows[0])))
        accepted = set(val.split(","))
        rows = [r for r in rows if r[col] in accepted]
    return rows


def number(row, col):
    try:
        return float(row[col])
    except (KeyError, TypeError):
        die("no column %r (have %s)" % (col, ", ".join(row)))
    except ValueError:
        die("column %r: %r is not a number" % (col, row[col]))


def group(rows, args):
    """{facet: {series: [(x, y)]}}, in order of first appearance"""
    out = OrderedDict()
    for r in rows:
        facet = r[args.facet] if args.facet else ""
        series = "/".join(r[c] for c in args.series)
        out.setdefault(facet, OrderedDict()).setdefault(series, []).append(
            (number(r, args.x), number(r, args.y)))
    for fname, facet in out.items():
        for sname, pts in facet.items():
            pts.sort()
            xs = [x for x, _ in pts]
            dup = sorted({x for x in xs if xs.count(x) > 1})
            if dup:
                die("series %r%s has several rows for %s=%s: narrow it with "
                    "--where or add a column to --series" %
                    (sname, " (%s=%s)" % (args.facet, fname) if args.facet else "",
                     args.x, fmt(dup[0])))
    return out


def fmt(v):
    return "%d" % v if v == int(v) else "%.2f" % v


def print_table(groups, args):
    for facet, series in groups.items():
        if args.facet:
            print("%s = %s" % (args.facet, facet))
        xs = sorted({x for pts in series.values() for x, _ in pts})
        names = list(series)
        width = max([12] + [len(n) + 1 for n in names])
        print("%10s" % args.x + "".join("%*s" % (width, n) for n in names))
        for x in xs:
            cells = []
            for n in names:
                ys = [y for px, y in series[n] if px == x]
                cells.append("%*s" % (width, fmt(ys[0]) if ys else "-"))
            print("%10s" % fmt(x) + "".join(cells))
        print()


def plot(groups, args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(groups)
    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 4.2), squeeze=False)
    for ax, (facet, series) in zip(axes[0], groups.items()):
        for name, pts in series.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    markersize=3, label=name)
        if args.logx:
            ax.set_xscale("log", base=2)
        if args.logy:
            ax.set_yscale("log")
        ax.set_xlabel(args.xlabel or args.x)
        ax.set_ylabel(args.ylabel or args.y)
        if args.facet:
            ax.set_title("%s = %s" % (args.facet, facet))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(
        description="CSV -> PNG line plot / text table",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("csv")
    p.add_argument("--x", required=True)
    p.add_argument("--y", required=True)
    p.add_argument("--series", default="")
    p.add_argument("--facet", default="")
    p.add_argument("--where", action="append", default=[])
    p.add_argument("--logx", action="store_true")
    p.add_argument("--logy", action="store_true")
    p.add_argument("--title", default="")
    p.add_argument("--xlabel", default="")
    p.add_argument("--ylabel", default="")
    p.add_argument("-o", "--output", default="")
    p.add_argument("--table", action="store_true")
    args = p.parse_args()
    args.series = [c for c in args.series.split(",") if c]
    if not args.output and not args.table:
        die("nothing to do: give -o FILE.png and/or --table")

    rows = read_rows(args.csv)
    for col in [args.x, args.y, args.facet] + args.series:
        if col and col not in rows[0]:
            die("no column %r (have %s)" % (col, ", ".join(rows[0])))
    rows = select(rows, args.where)
    if not rows:
        die("no rows match %s" % " ".join(args.where))
    groups = group(rows, args)
    if args.table:
        print_table(groups, args)
    if args.output:
        plot(groups, args)


if __name__ == "__main__":
    main()
