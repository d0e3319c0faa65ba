"""Line plots as plain SVG, written by hand so the benchmarks draw their figures without a plotting library.

A figure is a grid of panels; a panel is a title, axis labels and series, each series a label, a colour, solid
or dashed, and (x, y) points. The x axis is logarithmic (ticks at the data's x values); the y axis linear from
0 (or from a given floor), or logarithmic. x ticks are the data's x values unless given; markers can be left off
for long series such as loss curves.
"""
import math

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]
PANEL_W, PANEL_H, MARGIN_L, MARGIN_R, MARGIN_B, MARGIN_T, GAP = 340, 230, 66, 30, 42, 34, 36


def _linear_ticks(top, count=5):
    """Round tick values from 0 to at least top."""
    top = top if top > 0 else 1
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * step:
            step *= m
            break
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _log_ticks(lo, hi):
    """Powers of ten covering [lo, hi], with 2 and 5 between them when the range is short."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mantissas = (1, 2, 5) if b - a <= 3 else (1,)
    ticks = [m * 10 ** e for e in range(a, b + 1) for m in mantissas]
    return [t for t in ticks if lo / 1.001 <= t <= hi * 1.001] or [lo, hi]


def _number(v):
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}"


class Panel:
    def __init__(self, title, x_label, y_label, log_y=False, x_ticks=None, y_floor=0.0, markers=True):
        self.title, self.x_label, self.y_label, self.log_y = title, x_label, y_label, log_y
        self.x_ticks, self.y_floor, self.markers = x_ticks, y_floor, markers
        self.series = []  # (label, colour, dashed, [(x, y)])

    def add(self, label, colour, dashed, points):
        points = sorted(p for p in points if p[1] is not None)
        if points:
            self.series.append((label, colour, dashed, points))

    def draw(self, out, x0, y0):
        xs = sorted({x for *_, pts in self.series for x, _ in pts})
        ys = [y for *_, pts in self.series for _, y in pts]
        lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1])
        if lx1 <= lx0:
            lx0, lx1 = lx0 - 0.5, lx0 + 0.5
        if self.log_y:
            lo, hi = min(y for y in ys if y > 0), max(ys)
            ticks = _log_ticks(lo, hi)
            ly0, ly1 = math.log10(min(lo, ticks[0])), math.log10(max(hi, ticks[-1]))
            if ly1 <= ly0:
                ly0, ly1 = ly0 - 0.5, ly0 + 0.5
            fy = lambda v: (math.log10(max(v, 10 ** ly0)) - ly0) / (ly1 - ly0)  # noqa: E731
        else:
            floor = self.y_floor
            ticks = [floor + t for t in _linear_ticks((max(ys) - floor) * 1.05)]
            fy = lambda v: (v - floor) / (ticks[-1] - floor)  # noqa: E731
        left, right = x0 + MARGIN_L, x0 + PANEL_W - MARGIN_R
        top, bottom = y0 + MARGIN_T, y0 + PANEL_H - MARGIN_B

        def px(x):
            return left + (math.log10(x) - lx0) / (lx1 - lx0) * (right - left)

        def py(v):
            return bottom - fy(v) * (bottom - top)

        out.append(f'<text x="{x0 + PANEL_W / 2:.0f}" y="{y0 + 18}" text-anchor="middle" '
                   f'font-weight="bold">{self.title}</text>')
        for t in ticks:
            y = py(t)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(t)}</text>')
        for x in self.x_ticks or xs:
            out.append(f'<line x1="{px(x):.1f}" y1="{bottom}" x2="{px(x):.1f}" y2="{bottom + 4}" stroke="#444"/>')
            out.append(f'<text x="{px(x):.1f}" y="{bottom + 16}" text-anchor="middle">{_number(x)}</text>')
        out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="none" '
                   f'stroke="#444"/>')
        out.append(f'<text x="{(left + right) / 2:.0f}" y="{y0 + PANEL_H - 8}" text-anchor="middle">'
                   f'{self.x_label}</text>')
        out.append(f'<text transform="translate({x0 + 13},{(top + bottom) / 2:.0f}) rotate(-90)" '
                   f'text-anchor="middle">{self.y_label}</text>')
        for _, colour, dashed, pts in self.series:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            dash = ' stroke-dasharray="6,4"' if dashed else ""
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for x, y in pts if self.markers else []:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')


def write(path, rows_of_panels, legend):
    """rows_of_panels: [[Panel, ...], ...]; legend: [(text, colour or None, dashed)] drawn under the grid."""
    columns = max(len(r) for r in rows_of_panels)
    width = columns * PANEL_W + (columns - 1) * GAP
    legend_h = 18 * ((len(legend) + 2) // 3) + 12
    height = len(rows_of_panels) * (PANEL_H + GAP) + legend_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">', f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, row in enumerate(rows_of_panels):
        for j, p in enumerate(row):
            p.draw(out, j * (PANEL_W + GAP), i * (PANEL_H + GAP))
    base = len(rows_of_panels) * (PANEL_H + GAP)
    for k, (text, colour, dashed) in enumerate(legend):
        x, y = MARGIN_L + (k % 3) * (width - MARGIN_L) / 3, base + 10 + 18 * (k // 3)
        if colour:
            dash = ' stroke-dasharray="6,4"' if dashed else ""
            out.append(f'<line x1="{x:.0f}" y1="{y}" x2="{x + 24:.0f}" y2="{y}" stroke="{colour}" '
                       f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{x + (30 if colour else 0):.0f}" y="{y + 4}">{text}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
