// Selective scan, phase 2 of 3 (design in ssm_scan_chunk.wgsl): one invocation per (b, d, n)
// walks the chunks in order. hend[b, d, c, n] holds chunk c's end state from a zero start; it
// is replaced by the state entering chunk c:
//   carry_0 = 0,   carry_{c+1} = exp(A[d, n] · dtsum[b, d, c]) · carry_c + hend[c].
// The state after the last chunk goes to last [B, D, N] (the op's last-state output, or a
// scratch buffer when only y is wanted).
//
// Bindings: A, dtsum (read), hend (read and written), last (written).

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> dtsum: array<f32>;
@group(0) @binding(2) var<storage, read_write> hend: array<f32>;
@group(0) @binding(3) var<storage, read_write> last: array<f32>;
// p: ScanParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// One invocation (its id below p.threads); the entry point is include/flat_main.wgsl.
fn element(id: u32) {
    let n = id % p.n;
    let bd = id / p.n;
    let av = a[(bd % p.d) * p.n + n];
    var carry = 0.0;
    for (var c = 0u; c < p.chunks; c++) {
        let i = (bd * p.chunks + c) * p.n + n;
        let end = hend[i];
        hend[i] = carry;
        carry = exp(av * dtsum[bd * p.chunks + c]) * carry + end;
    }
    last[id] = carry;
}
