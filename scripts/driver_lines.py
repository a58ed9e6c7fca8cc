#!/usr/bin/env python3
"""Non-test lines of a crate's src/: every line (blank and comment lines included) of every .rs
file under src/, minus `#[cfg(test)]` items (the attribute and the item after it, to its closing
brace or semicolon) and the files of `#[cfg(test)] mod x;` declarations."""
import os, re, sys
root = sys.argv[1]
files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, 'src')) for f in fs if f.endswith('.rs')]
test_files = set()
for p in files:
    lines = open(p).read().split('\n')
    owner_dir = os.path.dirname(p) if os.path.basename(p) in ('lib.rs', 'mod.rs', 'main.rs') else p[:-3]
    for i, l in enumerate(lines):
        if l.strip() != '#[cfg(test)]':
            continue
        k, path = i + 1, None
        while k < len(lines) and lines[k].strip().startswith('#['):
            pm = re.match(r'#\[path = "([^"]+)"\]', lines[k].strip())
            if pm: path = pm.group(1)
            k += 1
        m = re.match(r'(pub(\(crate\))? )?mod (\w+);', lines[k].strip()) if k < len(lines) else None
        if not m: continue
        if path: test_files.add(os.path.normpath(os.path.join(os.path.dirname(p), path)))
        else:
            test_files.add(os.path.join(owner_dir, m.group(3) + '.rs'))
            test_files.add(os.path.join(owner_dir, m.group(3), 'mod.rs'))
tot = code = 0
per = {}
for p in sorted(files):
    if p in test_files: continue
    lines = open(p).read().split('\n')
    if lines and lines[-1] == '': lines.pop()
    keep, i = [], 0
    while i < len(lines):
        if lines[i].strip() == '#[cfg(test)]':
            depth, started, j = 0, False, i + 1
            while j < len(lines):
                s = lines[j]
                depth += s.count('{') - s.count('}')
                if '{' in s: started = True
                if (started and depth <= 0) or (not started and s.rstrip().endswith(';')): break
                j += 1
            i = j + 1; continue
        keep.append(lines[i]); i += 1
    n = len(keep); c = sum(1 for l in keep if l.strip() and not l.strip().startswith('//'))
    per[os.path.relpath(p, root)] = (n, c)
    tot += n; code += c
if '-v' in sys.argv:
    for k, (n, c) in sorted(per.items()): print(f'{n:5} {c:5} {k}')
print(f'{root}: {tot} non-test lines, {code} code lines (no blanks/comments)')
