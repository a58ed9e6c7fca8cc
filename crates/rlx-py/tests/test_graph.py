"""Custom graphs: an MLP built in Python, compiled and run against numpy, on every device; the
numpy boundary (dtype, shape, layout, None, names) and closed objects raise the right classes."""

import threading

import numpy as np
import pytest

import rlx


def gelu(x):
    from math import erf, sqrt

    return x * 0.5 * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


def mlp(device="cpu", precision="f32"):
    g = rlx.Graph("mlp")
    x = g.input("x", [3, 5])
    w1 = g.param("w1", [5, 7])
    b1 = g.param("b1", [7])
    w2 = g.param("w2", [7, 4])
    h = g.gelu(g.add(g.matmul(x, w1), b1))
    y = g.softmax(g.matmul(g.relu(h), w2), axis=-1)
    g.set_outputs({"probs": y, "hidden": h})
    exe = rlx.compile(g, device=device, precision=precision)
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((5, 7)).astype(np.float32),
        "b1": rng.standard_normal(7).astype(np.float32),
        "w2": rng.standard_normal((7, 4)).astype(np.float32),
    }
    for k, v in params.items():
        exe.set_param(k, v)
    return exe, params


def reference(x, p):
    h = gelu(x.astype(np.float64) @ p["w1"] + p["b1"])
    z = np.maximum(h, 0) @ p["w2"]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), h


def test_devices_lists_the_cpu():
    all_devices = {d["device"]: d for d in rlx.devices()}
    assert set(all_devices) == {"cpu", "gpu", "vulkan"}
    assert all_devices["cpu"]["available"] is True
    for d in all_devices.values():
        assert d["available"] or d["reason"], d


def test_mlp_matches_numpy(device):
    exe, p = mlp(device)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    out = exe.run({"x": x})
    assert set(out) == {"probs", "hidden"}
    probs, hidden = reference(x, p)
    assert out["probs"].dtype == np.float32 and out["probs"].shape == (3, 4)
    np.testing.assert_allclose(out["probs"], probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["hidden"], hidden, rtol=1e-4, atol=1e-5)
    # The output's buffer is the Rust one handed over: numpy does not own a copy.
    assert out["probs"].base is not None
    assert exe.outputs == ["probs", "hidden"]
    assert exe.inputs == [("x", [3, 5], "f32")]


def test_list_and_single_outputs_and_int_inputs():
    g = rlx.Graph()
    a = g.input("a", [4], "int32")
    b = g.input("b", [4], "i32")
    g.set_outputs([g.add(a, b), g.mul(a, b)])
    exe = rlx.Session("cpu").compile(g)
    a_v, b_v = np.arange(4, dtype=np.int32), np.full(4, 3, np.int32)
    out = exe.run({"a": a_v, "b": b_v})
    assert list(out) == ["output_0", "output_1"]
    assert out["output_0"].dtype == np.int32
    np.testing.assert_array_equal(out["output_0"], a_v + b_v)
    np.testing.assert_array_equal(out["output_1"], a_v * b_v)
    g = rlx.Graph()
    g.set_outputs(g.tanh(g.input("x", [2, 2])))
    out = rlx.compile(g, device="cpu").run({"x": np.zeros((2, 2), np.float32)})
    assert list(out) == ["output"]


def test_wrong_dtype_is_a_dtype_error():
    exe, _ = mlp()
    with pytest.raises(rlx.DTypeError, match=r"input 'x' is declared f32.*float64.*astype"):
        exe.run({"x": np.zeros((3, 5))})
    with pytest.raises(rlx.DTypeError, match="param 'w1'"):
        exe.set_param("w1", np.zeros((5, 7), np.int32))


def test_wrong_shape_is_a_shape_error():
    exe, _ = mlp()
    with pytest.raises(rlx.ShapeError, match=r"input 'x' is declared f32\[3, 5\] but the array has shape \[5, 3\]"):
        exe.run({"x": np.zeros((5, 3), np.float32)})
    with pytest.raises(rlx.ShapeError, match="param 'b1'"):
        exe.set_param("b1", np.zeros(8, np.float32))


def test_non_contiguous_is_a_layout_error():
    exe, _ = mlp()
    x = np.zeros((5, 3), np.float32).T
    assert x.shape == (3, 5) and not x.flags["C_CONTIGUOUS"]
    with pytest.raises(rlx.LayoutError, match="ascontiguousarray"):
        exe.run({"x": x})
    # The same values made contiguous run.
    assert exe.run({"x": np.ascontiguousarray(x)})["probs"].shape == (3, 4)


def test_none_and_non_arrays_are_type_errors():
    exe, _ = mlp()
    with pytest.raises(TypeError, match="must be a numpy array"):
        exe.run({"x": None})
    with pytest.raises(TypeError, match="must be a numpy array"):
        exe.run({"x": [[0.0] * 5] * 3})
    with pytest.raises(TypeError):
        exe.run(None)


def test_names_missing_and_unset():
    exe, _ = mlp()
    with pytest.raises(rlx.InvalidInput, match="unknown input 'y'.*x"):
        exe.run({"y": np.zeros((3, 5), np.float32)})
    with pytest.raises(rlx.InvalidInput, match="missing input"):
        exe.run({})
    g = rlx.Graph()
    g.set_outputs(g.matmul(g.input("x", [1, 2]), g.param("w", [2, 2])))
    fresh = rlx.compile(g, device="cpu")
    with pytest.raises(rlx.InvalidInput, match="params not set: 'w'"):
        fresh.run({"x": np.zeros((1, 2), np.float32)})


def test_graph_building_errors():
    g = rlx.Graph()
    a = g.input("a", [2, 3])
    b = g.input("b", [4, 5])
    with pytest.raises(rlx.ShapeError, match="matmul"):
        g.matmul(a, b)
    with pytest.raises(rlx.DTypeError, match="unknown dtype 'f64'"):
        g.input("c", [1], "f64")
    other = rlx.Graph().input("z", [2, 3])
    with pytest.raises(rlx.GraphError, match="another rlx.Graph"):
        g.add(a, other)
    with pytest.raises(rlx.GraphError):
        g.input("a", [1])  # a duplicate name
    with pytest.raises(rlx.GraphError):
        rlx.compile(rlx.Graph(), device="cpu")  # no outputs


def test_unknown_device_and_precision():
    with pytest.raises(rlx.DeviceUnavailable, match="unknown device 'tpu'"):
        rlx.Session("tpu")
    g = rlx.Graph()
    g.set_outputs(g.relu(g.input("x", [2])))
    with pytest.raises(rlx.InvalidInput, match="precision"):
        rlx.compile(g, device="cpu", precision="f64")


def test_closed_objects_raise_closed_error():
    g = rlx.Graph()
    g.set_outputs(g.relu(g.input("x", [2])))
    with rlx.Session("cpu") as s:
        exe = s.compile(g)
    with pytest.raises(rlx.ClosedError, match="Session is closed"):
        s.compile(g)
    # An executable outlives its session.
    np.testing.assert_array_equal(exe.run({"x": np.array([-1, 2], np.float32)})["output"], [0, 2])
    exe.close()
    with pytest.raises(rlx.ClosedError, match="Executable is closed"):
        exe.run({"x": np.zeros(2, np.float32)})
    assert issubclass(rlx.ClosedError, rlx.RlxError)


def test_threads_share_one_executable():
    exe, p = mlp()
    xs = [np.random.default_rng(i).standard_normal((3, 5)).astype(np.float32) for i in range(8)]
    results = [None] * len(xs)

    def work(i):
        for _ in range(5):
            results[i] = exe.run({"x": xs[i]})["probs"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, got in zip(xs, results):
        np.testing.assert_allclose(got, reference(x, p)[0], rtol=1e-4, atol=1e-5)


def test_f16_arrays_cross():
    g = rlx.Graph()
    x = g.input("x", [4], "f16")
    g.set_outputs(g.cast(x, "f32"))
    v = np.array([0.5, -1.0, 2.0, 65504.0], np.float16)
    out = rlx.compile(g, device="cpu").run({"x": v})["output"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, v.astype(np.float32))
