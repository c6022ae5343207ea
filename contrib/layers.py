#!/usr/bin/env python3
#
# The layers of srqud's and sucg's sources, from the code: which file
# includes which, and which calls a function another one defines, file to
# file (a .c and its .h are one module). Checked against the layer list in
# contrib/layers.txt, where a module may use only modules of lower layers
# and of its own, and no modules may use each other in a circle.
#
#   contrib/layers.py             check (CI): exit 1 on an upward edge, a
#                                 circle, a module the list does not place,
#                                 or a table in docs/design.md that is not
#                                 the code's
#   contrib/layers.py --write     rewrite the tables in docs/design.md and
#                                 the pictures docs/<name>-layers.svg
#   contrib/layers.py --edges     print every edge and why (file:line)
#
# Prints "RESULT layers PASS|FAIL".
#
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
LAYERS = os.path.join(ROOT, 'contrib', 'layers.txt')
DESIGN = os.path.join(ROOT, 'docs', 'design.md')

WORD = re.compile(r'[A-Za-z_]\w*')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
KEYWORDS = {'if', 'for', 'while', 'switch', 'return', 'sizeof', 'do',
            'else', 'case', 'defined', '__attribute__', 'typeof',
            'ucs_offsetof', 'offsetof', 'ucs_container_of', 'ucs_derived_of'}


def strip(text):
    """Comments, strings and characters out (kept as blanks, lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def module_of(path, base):
    """a file's node: its path below base (srqud_ep.c, srqud_ep.h)"""
    return os.path.relpath(path, base)


def layer_key(node):
    """the name the layer list gives a node: its path without .c / .h"""
    return os.path.splitext(node)[0]


def scan(base):
    """modules, definitions (name -> module), uses (module -> {module: (file, line, why)})"""
    files = []
    for d, _, names in os.walk(base):
        for name in sorted(names):
            if name.endswith(('.c', '.h')):
                files.append(os.path.join(d, name))
    files.sort()
    texts = {f: strip(open(f, encoding='utf-8', errors='replace').read()) for f in files}
    raw = {f: open(f, encoding='utf-8', errors='replace').read() for f in files}
    modules = sorted({module_of(f, base) for f in files})
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), module_of(f, base))
    # a file and its own header are one module: their uses of each other
    # (a header's inline calling its .c) are no edge

    # top-level definitions: the name before the parameter list of a body
    # that starts at brace depth 0 (functions, static inline ones too)
    defs, bodies = {}, {}
    for f, t in texts.items():
        m = module_of(f, base)
        depth, i, spans = 0, 0, []
        start = None
        for i, c in enumerate(t):
            if c == '{':
                if depth == 0:
                    start = i
                depth += 1
            elif c == '}':
                depth -= 1
                if depth == 0 and start is not None:
                    spans.append((start, i))
        for (s, e) in spans:
            head = t[max(0, s - 400):s]
            mm = re.search(r'\b([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*$', head)
            if mm and mm.group(1) not in KEYWORDS:
                defs.setdefault(mm.group(1), m)
                bodies.setdefault(f, []).append((s, e))

    uses = {m: {} for m in modules}
    for f, t in texts.items():
        m = module_of(f, base)
        for mm in INCLUDE.finditer(raw[f]):
            target = by_name.get(os.path.basename(mm.group(1)))
            if target and layer_key(target) != layer_key(m):
                line = raw[f].count('\n', 0, mm.start()) + 1
                uses[m].setdefault(target, (f, line, 'includes ' + mm.group(1)))
        for (s, e) in bodies.get(f, []):
            for mm in re.finditer(r'\b([A-Za-z_]\w*)\s*\(', t[s:e]):
                target = defs.get(mm.group(1))
                if target and layer_key(target) != layer_key(m):
                    line = t.count('\n', 0, s + mm.start()) + 1
                    uses[m].setdefault(target, (f, line, 'calls ' + mm.group(1)))
    return modules, uses


def read_layers():
    """sections: [(dir, name, [(layer name, [modules])])], lowest layer first"""
    sections, cur = [], None
    for raw in open(LAYERS, encoding='utf-8'):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        m = re.match(r'^\[(\S+)\s+(\S+)\]$', line)
        if m:
            cur = (m.group(1), m.group(2), [])
            sections.append(cur)
            continue
        name, _, mods = line.partition(':')
        cur[2].append((name.strip(), mods.split()))
    return sections


def cycles(modules, uses):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in uses[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in modules:
        if v not in index:
            visit(v)
    return out


def short(m, prefix):
    d, b = os.path.split(m)
    return os.path.join(d, b[len(prefix):] if b.startswith(prefix) else b)


def entry_of(node, named):
    return node if node in named else layer_key(node)


def purpose(base, entry):
    """the first sentence of the file's own comment, which follows the
    copyright line at its top (the .c's, else the .h's)"""
    paths = [entry] if entry.endswith(('.c', '.h')) else [entry + '.c', entry + '.h']
    for p in paths:
        path = os.path.join(base, p)
        if not os.path.exists(path):
            continue
        text = open(path, encoding='utf-8', errors='replace').read()
        m = re.match(r'\s*/\*\*?(.*?)\*/', text, re.S)
        if m is None:
            continue
        body = ' '.join(l.strip().lstrip('*').strip()
                        for l in m.group(1).splitlines())
        body = re.sub(r'\s+', ' ', body).strip()
        body = re.sub(r'^Copyright .*? information\.\s*', '', body)
        if body:
            return re.split(r'(?<=[.:;])\s', body, 1)[0].rstrip('.:;').replace('|', '/')
    return ''


def grouped(layers, modules, uses, named):
    """per layer entry: the entries it uses"""
    out = {}
    for m in modules:
        e = entry_of(m, named)
        out.setdefault(e, set())
        for t in uses[m]:
            te = entry_of(t, named)
            if te != e:
                out[e].add(te)
    return out


def table(name, base, layers, modules, uses, named, prefix):
    g = grouped(layers, modules, uses, named)
    lines = ['<!-- %s layers: written by contrib/layers.py --write -->' % name,
             '| layer | file | what it is (its own comment) | uses |',
             '|---|---|---|---|']
    for lname, mods in reversed(layers):
        for m in mods:
            used = sorted(short(t, prefix) for t in g.get(m, ()))
            lines.append('| %s | `%s` | %s | %s |' % (lname, short(m, prefix),
                         purpose(base, m), ', '.join(used) or '—'))
    lines.append('<!-- end of %s layers -->' % name)
    return '\n'.join(lines)


def svg(name, layers, modules, uses, named, prefix):
    g = grouped(layers, modules, uses, named)
    bw, bh, gx, gy, margin = 118, 26, 8, 46, 12
    rows = list(reversed(layers))
    width = max(len(mods) for _, mods in rows) * (bw + gx) + 90 + 2 * margin
    pos = {}
    for r, (lname, mods) in enumerate(rows):
        for k, m in enumerate(mods):
            pos[m] = (90 + margin + k * (bw + gx), margin + r * (bh + gy))
    height = margin * 2 + len(rows) * (bh + gy)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" '
           'refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#999"/>'
           '</marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>']
    for m, targets in sorted(g.items()):
        for t in sorted(targets):
            if (m not in pos) or (t not in pos):
                continue
            (x1, y1), (x2, y2) = pos[m], pos[t]
            if y1 == y2:   # within a layer: an arc above the boxes
                out.append('<path d="M%d,%d Q%d,%d %d,%d" fill="none" '
                           'stroke="#ccc" marker-end="url(#a)"/>'
                           % (x1 + bw // 2, y1, (x1 + x2) // 2 + bw // 2,
                              y1 - 18, x2 + bw // 2, y2))
            else:
                out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc" '
                           'marker-end="url(#a)"/>' % (x1 + bw // 2, y1 + bh,
                                                       x2 + bw // 2, y2))
    for r, (lname, mods) in enumerate(rows):
        y = margin + r * (bh + gy)
        out.append('<text x="%d" y="%d" font-weight="bold">%s</text>'
                   % (margin, y + 17, lname))
        for m in mods:
            x, y = pos[m]
            out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="4" '
                       'fill="#eef4fb" stroke="#4a76a8"/>' % (x, y, bw, bh))
            out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
                       % (x + bw // 2, y + 17, short(m, prefix)))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def main():
    write = '--write' in sys.argv
    edges = '--edges' in sys.argv
    failed = []
    design = open(DESIGN, encoding='utf-8').read()
    for (d, name, layers) in read_layers():
        base = os.path.join(ROOT, d)
        modules, uses = scan(base)
        prefix = name + '_'
        named = {}
        for k, (_, mods) in enumerate(layers):
            for m in mods:
                named[m] = k
        # a file's layer: its own entry (srqud_compat.h), else its
        # module's (srqud_compat: the .c and the .h)
        level = {m: named.get(m, named.get(layer_key(m))) for m in modules}
        for m in modules:
            if level[m] is None:
                failed.append('%s: %s is in no layer of contrib/layers.txt' % (name, m))
        for m in modules:
            for t, (f, line, why) in sorted(uses[m].items()):
                if edges:
                    print('%s -> %s  (%s:%d %s)' % (m, t, os.path.relpath(f, ROOT), line, why))
                if (level[m] is not None) and (level[t] is not None) and \
                   (level[t] > level[m]):
                    failed.append('%s: %s uses %s of a higher layer (%s:%d %s)'
                                  % (name, m, t, os.path.relpath(f, ROOT), line, why))
        for c in cycles(modules, uses):
            failed.append('%s: a circle: %s' % (name, ' <-> '.join(c)))
        tab = table(name, base, layers, modules, uses, named, prefix)
        pat = re.compile(r'<!-- %s layers: written by contrib/layers.py --write -->.*?'
                         r'<!-- end of %s layers -->' % (name, name), re.S)
        if write:
            if pat.search(design):
                design = pat.sub(lambda _: tab, design)
            else:
                failed.append('%s: docs/design.md has no table to rewrite' % name)
            open(os.path.join(ROOT, 'docs', '%s-layers.svg' % name), 'w').write(
                svg(name, layers, modules, uses, named, prefix))
        else:
            m = pat.search(design)
            if m is None or m.group(0) != tab:
                failed.append('%s: the table in docs/design.md is not the code\'s '
                              '(contrib/layers.py --write)' % name)
            pic = os.path.join(ROOT, 'docs', '%s-layers.svg' % name)
            if not os.path.exists(pic) or \
               open(pic).read() != svg(name, layers, modules, uses, named, prefix):
                failed.append('%s: docs/%s-layers.svg is not the code\'s '
                              '(contrib/layers.py --write)' % (name, name))
        n_edges = sum(len(v) for v in uses.values())
        print('%s: %d modules, %d edges, %d layers' % (name, len(modules), n_edges, len(layers)))
    if write:
        open(DESIGN, 'w', encoding='utf-8').write(design)
    for f in failed:
        print('layers: ' + f)
    print('RESULT layers %s' % ('FAIL' if failed else 'PASS'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
