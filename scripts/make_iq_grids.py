#!/usr/bin/env python3
"""The codebooks of ggml's IQ1/IQ2/IQ3 formats, written for rlx from gguf-py's copies.

Usage (from the repository root, with the venv of make_quant_fixtures.py):
    /tmp/gguf-venv/bin/python scripts/make_iq_grids.py

Made with gguf 0.19.0. Each format's grid maps an index to 8 (IQ1, IQ2) or 4 (IQ3) small values.
rlx stores every entry as codes into the format's value list (2 bits per value for IQ1/IQ2, whose
values are 3: {8, 25, 43} and {-1, 0, 1}; 3 bits for IQ3's 8), value j at bits `bits·j`, so an
entry fits 16 bits, and two entries share a u32 word (entry e in bits `16·(e mod 2)`).

Writes:
- crates/rlx-ir/src/quant_grids.rs: the tables as Rust constants (the CPU reference reads them);
- crates/rlx-gpu/kernels/include/quant_grid_<name>.wgsl: the same words as WGSL constants (each
  IQ decoder takes its file); an rlx-gpu test checks the two agree word for word.
The script checks every entry against gguf-py's grid before writing.
"""
from pathlib import Path

import numpy as np
from gguf import quants as q

ROOT = Path(__file__).resolve().parent.parent
RUST = ROOT / "crates/rlx-ir/src/quant_grids.rs"
CHUNK = 128  # words per WGSL array (see the comment written into each grid file)
WGSL_DIR = ROOT / "crates/rlx-gpu/kernels/include"

# (constant name, gguf-py class, value list, bits per code, formats using it)
GRIDS = [
    ("IQ2XXS_GRID", q.IQ2_XXS, [8, 25, 43], 2, "IQ2_XXS"),
    ("IQ2XS_GRID", q.IQ2_XS, [8, 25, 43], 2, "IQ2_XS"),
    ("IQ2S_GRID", q.IQ2_S, [8, 25, 43], 2, "IQ2_S"),
    ("IQ3XXS_GRID", q.IQ3_XXS, [4, 12, 20, 28, 36, 44, 52, 62], 3, "IQ3_XXS"),
    ("IQ3S_GRID", q.IQ3_S, [1, 3, 5, 7, 9, 11, 13, 15], 3, "IQ3_S"),
    ("IQ1S_GRID", q.IQ1_S, [-1, 0, 1], 2, "IQ1_S and IQ1_M"),
]


def words(cls, values, bits):
    cls.init_grid()
    grid = cls.grid.reshape(cls.grid_shape)
    lookup = {v: c for c, v in enumerate(values)}
    entries = []
    for row in grid:
        e = 0
        for j, v in enumerate(row.tolist()):
            e |= lookup[int(v)] << (bits * j)
        assert e < 1 << 16
        entries.append(e)
    # Check the packing round-trips to gguf-py's values.
    for idx, row in enumerate(grid):
        e = entries[idx]
        got = [values[(e >> (bits * j)) & ((1 << bits) - 1)] for j in range(len(row))]
        assert got == [int(v) for v in row.tolist()], (cls.__name__, idx)
    assert len(entries) % 2 == 0
    return [entries[i] | entries[i + 1] << 16 for i in range(0, len(entries), 2)]


def rows(ws, per_line, fmt):
    out = []
    for i in range(0, len(ws), per_line):
        out.append("    " + " ".join(fmt(w) + "," for w in ws[i:i + per_line]))
    return "\n".join(out)


def main():
    rust = [
        "//! The codebooks of ggml's IQ1, IQ2 and IQ3 formats, written by `scripts/make_iq_grids.py`",
        "//! from gguf-py 0.19.0's copies (do not edit by hand). Entry `e` of a grid is the 16 bits at",
        "//! `16·(e mod 2)` of word `e / 2`; value `j` of an entry is the code at bits `bits·j`",
        "//! ([`grid_code`]), an index into the format's value list (see each constant).",
        "",
    ]
    for name, cls, values, bits, users in GRIDS:
        ws = words(cls, values, bits)
        n_entries, n_values = cls.grid_shape
        rust.append(
            f"/// {users}: {n_entries} entries of {n_values} values, {bits}-bit codes into {values}."
        )
        rust.append(f"pub const {name}: [u32; {len(ws)}] = [")
        rust.append(rows(ws, 8, lambda w: f"0x{w:08x}"))
        rust.append("];")
        rust.append("")
        wgsl = [
            f"// {users}'s codebook, written by scripts/make_iq_grids.py from gguf-py 0.19.0 (do not",
            f"// edit by hand): {n_entries} entries of {n_values} values, two 16-bit entries per word",
            f"// (entry e at bits 16·(e % 2) of word e / 2), value j the {bits}-bit code at bits {bits}·j,",
            f"// an index into {values}. rlx-ir's quant_grids.rs holds the same words.",
            f"// Stored in parts of {CHUNK} words: a compiler copies a dynamically indexed constant",
            "// array into local memory, and Mesa's lavapipe took 35 s per kernel on IQ1's 1024 words",
            f"// in one array, against about a second on {CHUNK}.",
        ]
        parts = [ws[i:i + CHUNK] for i in range(0, len(ws), CHUNK)]
        for k, part in enumerate(parts):
            wgsl += [f"const {name}_{k} = array<u32, {len(part)}>(", rows(part, 8, lambda w: f"0x{w:08x}u"), ");"]
        fn = name[:-5].lower()
        wgsl += ["", f"// Word w of {name}.", f"fn {fn}_word(w: u32) -> u32 {{"]
        if len(parts) == 1:
            wgsl += [f"    return {name}_0[w];", "}", ""]
        else:
            wgsl += [f"    let i = w % {CHUNK}u;", f"    switch (w / {CHUNK}u) {{"]
            for k in range(len(parts) - 1):
                wgsl += [f"        case {k}u: {{", f"            return {name}_{k}[i];", "        }"]
            wgsl += ["        default: {", f"            return {name}_{len(parts) - 1}[i];", "        }", "    }", "}", ""]
        (WGSL_DIR / f"quant_grid_{name[:-5].lower()}.wgsl").write_text("\n".join(wgsl))
    rust += [
        "/// Code `j` of entry `entry` of `grid` (`bits` per code).",
        "pub fn grid_code(grid: &[u32], entry: usize, j: usize, bits: u32) -> u32 {",
        "    let word = grid.get(entry / 2).copied().unwrap_or(0);",
        "    let e = (word >> (16 * (entry % 2) as u32)) & 0xffff;",
        "    (e >> (bits * j as u32)) & ((1 << bits) - 1)",
        "}",
        "",
    ]
    RUST.write_text("\n".join(rust))
    print(f"wrote {RUST} and {len(GRIDS)} WGSL grids")


if __name__ == "__main__":
    main()
